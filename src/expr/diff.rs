//! Symbolic differentiation and solving affine equations.

use super::hash::FxHashMap as HashMap;

use smallvec::SmallVec;

use super::{ExprId, ExprPool, Func, Func2, FunctionId, Node};

impl ExprPool {
    /// ∂e/∂leaf, where `leaf` is a `Var`, `Der`, `Last` or `Time` node; every other leaf is held
    /// constant (a weak read `last(v)` too, unless it is `leaf`: it is not `v`). `if` differentiates branchwise,
    /// `abs`, `sign`, `min`, `max` piecewise.
    pub fn diff(&mut self, e: ExprId, leaf: Node) -> ExprId {
        let mut memo = HashMap::default();
        self.diff_memo(e, leaf, &mut memo)
    }

    fn diff_memo(&mut self, e: ExprId, leaf: Node, memo: &mut HashMap<ExprId, ExprId>) -> ExprId {
        if let Some(&d) = memo.get(&e) {
            return d;
        }
        let d = match self.node(e) {
            n @ (Node::Var(_) | Node::Der(_) | Node::Last(_) | Node::Local(_)) => {
                self.boolean(n == leaf)
            }
            Node::Apply(f, output, list) => self.diff_apply((f, output, list), leaf, memo),
            Node::Args(..) => unreachable!("an argument list is differentiated by its call"),
            Node::Time => self.boolean(leaf == Node::Time),
            Node::Const(_) => self.zero(),
            Node::Cmp(..) | Node::And(..) | Node::Or(..) | Node::Not(_) => self.zero(),
            Node::Add(a, b) => {
                let (da, db) = (self.diff_memo(a, leaf, memo), self.diff_memo(b, leaf, memo));
                self.add(da, db)
            }
            Node::Neg(a) => {
                let da = self.diff_memo(a, leaf, memo);
                self.neg(da)
            }
            Node::Mul(a, b) => {
                let (da, db) = (self.diff_memo(a, leaf, memo), self.diff_memo(b, leaf, memo));
                let (x, y) = (self.mul(da, b), self.mul(a, db));
                self.add(x, y)
            }
            Node::Div(a, b) => {
                // (a/b)' = a'/b − a·b'/b²
                let (da, db) = (self.diff_memo(a, leaf, memo), self.diff_memo(b, leaf, memo));
                let first = self.div(da, b);
                let two = self.constant(2.0);
                let b2 = self.pow(b, two);
                let num = self.mul(a, db);
                let second = self.div(num, b2);
                self.sub(first, second)
            }
            Node::Pow(a, b) => self.diff_pow(a, b, leaf, memo),
            Node::Call(f, a) => {
                let da = self.diff_memo(a, leaf, memo);
                if self.as_const(da) == Some(0.0) {
                    self.zero()
                } else {
                    let outer = self.derivative_of(f, a);
                    self.mul(outer, da)
                }
            }
            Node::Call2(f, a, b) => {
                let (da, db) = (self.diff_memo(a, leaf, memo), self.diff_memo(b, leaf, memo));
                match f {
                    Func2::Atan2 => {
                        // atan2(a, b)' = (b·a' − a·b') / (a² + b²)
                        let (x, y) = (self.mul(b, da), self.mul(a, db));
                        let num = self.sub(x, y);
                        let (aa, bb) = (self.mul(a, a), self.mul(b, b));
                        let den = self.add(aa, bb);
                        self.div(num, den)
                    }
                    Func2::Min => {
                        let c = self.cmp(super::CmpOp::Lt, a, b);
                        self.if_then_else(c, da, db)
                    }
                    Func2::Max => {
                        let c = self.cmp(super::CmpOp::Gt, a, b);
                        self.if_then_else(c, da, db)
                    }
                    // Linear in both operands at every point of the homotopy.
                    Func2::Homotopy => self.call2(Func2::Homotopy, da, db),
                }
            }
            Node::If(c, a, b) => {
                let (da, db) = (self.diff_memo(a, leaf, memo), self.diff_memo(b, leaf, memo));
                self.if_then_else(c, da, db)
            }
        };
        memo.insert(e, d);
        d
    }

    /// ∂f_k(a₁ … aₙ)/∂leaf: the tangent function of `f` at the arguments along their
    /// derivatives, exact (no finite differences).
    fn diff_apply(
        &mut self,
        (f, output, list): (FunctionId, u32, ExprId),
        leaf: Node,
        memo: &mut HashMap<ExprId, ExprId>,
    ) -> ExprId {
        let mut args: SmallVec<[ExprId; 16]> = self.arguments(f, list).into_iter().collect();
        let n = args.len();
        for k in 0..n {
            let d = self.diff_memo(args[k], leaf, memo);
            args.push(d);
        }
        if args[n..].iter().all(|&d| self.as_const(d) == Some(0.0)) {
            return self.zero();
        }
        if let Some(d) = self.function(f).derivative.clone() {
            let Some(at) = d.outputs[output as usize] else {
                return self.zero();
            };
            let mut given: SmallVec<[ExprId; 16]> = args[..n].iter().copied().collect();
            given.extend(
                (args[n..].iter().zip(&d.differentiated)).filter_map(|(&a, &k)| k.then_some(a)),
            );
            return self.apply(d.function, at, &given);
        }
        let tangent = self.tangent_function(f);
        self.apply(tangent, output, &args)
    }

    fn diff_pow(
        &mut self,
        a: ExprId,
        b: ExprId,
        leaf: Node,
        memo: &mut HashMap<ExprId, ExprId>,
    ) -> ExprId {
        let (da, db) = (self.diff_memo(a, leaf, memo), self.diff_memo(b, leaf, memo));
        if self.as_const(db) == Some(0.0) {
            // (a^b)' = b·a^(b−1)·a'
            let one = self.one();
            let bm1 = self.sub(b, one);
            let p = self.pow(a, bm1);
            let bp = self.mul(b, p);
            return self.mul(bp, da);
        }
        // (a^b)' = a^b·(b'·log a + b·a'/a)
        let ab = self.pow(a, b);
        let log_a = self.call(Func::Log, a);
        let x = self.mul(db, log_a);
        let bda = self.mul(b, da);
        let y = self.div(bda, a);
        let s = self.add(x, y);
        self.mul(ab, s)
    }

    /// f'(a) for a function of one argument.
    fn derivative_of(&mut self, f: Func, a: ExprId) -> ExprId {
        let one = self.one();
        let two = self.constant(2.0);
        match f {
            Func::Sin => self.call(Func::Cos, a),
            Func::Cos => {
                let s = self.call(Func::Sin, a);
                self.neg(s)
            }
            Func::Tan => {
                let c = self.call(Func::Cos, a);
                let c2 = self.pow(c, two);
                self.div(one, c2)
            }
            Func::Asin | Func::Acos => {
                let a2 = self.pow(a, two);
                let r = self.sub(one, a2);
                let s = self.call(Func::Sqrt, r);
                let d = self.div(one, s);
                if f == Func::Asin { d } else { self.neg(d) }
            }
            Func::Atan => {
                let a2 = self.pow(a, two);
                let den = self.add(one, a2);
                self.div(one, den)
            }
            Func::Sinh => self.call(Func::Cosh, a),
            Func::Cosh => self.call(Func::Sinh, a),
            Func::Tanh => {
                let t = self.call(Func::Tanh, a);
                let t2 = self.pow(t, two);
                self.sub(one, t2)
            }
            Func::Exp => self.call(Func::Exp, a),
            Func::Log => self.div(one, a),
            Func::Log10 => {
                let ln10 = self.constant(std::f64::consts::LN_10);
                let den = self.mul(a, ln10);
                self.div(one, den)
            }
            Func::Sqrt => {
                let s = self.call(Func::Sqrt, a);
                let den = self.mul(two, s);
                self.div(one, den)
            }
            Func::Abs => self.call(Func::Sign, a),
            Func::NoEvent => one,
            Func::Sign | Func::Floor | Func::Ceil | Func::Trunc => self.zero(),
        }
    }

    /// True if `leaf` occurs in `e`.
    pub fn depends_on(&self, e: ExprId, leaf: Node) -> bool {
        let mut found = false;
        self.visit_leaves(e, |n| found |= n == leaf);
        found
    }

    /// Solves `residual = 0` for `leaf` when the residual is affine in it (`a·x + b` with
    /// neither `a` nor `b` depending on `x`): returns `−b/a`. `None` when it is not affine or
    /// the coefficient is structurally zero.
    pub fn solve_affine(&mut self, residual: ExprId, leaf: Node) -> Option<ExprId> {
        let a = self.diff(residual, leaf);
        self.solve_affine_with(residual, leaf, a)
    }

    /// [`ExprPool::solve_affine`] with the coefficient `a = ∂residual/∂leaf` already known.
    pub fn solve_affine_with(&mut self, residual: ExprId, leaf: Node, a: ExprId) -> Option<ExprId> {
        if self.as_const(a) == Some(0.0) || self.depends_on(a, leaf) {
            return None;
        }
        let zero = self.zero();
        let b = self.substitute(residual, &mut |_, n| (n == leaf).then_some(zero));
        if self.depends_on(b, leaf) {
            return None;
        }
        let nb = self.neg(b);
        Some(self.div(nb, a))
    }
}
