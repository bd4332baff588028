//! Symbolic derivatives against central finite differences: random expressions over every
//! operator and function of the subset, and whole-model Jacobians through the causal form.

use mocca::causal::{causal_form, initial_point};
use mocca::expr::{CmpOp, ExprId, ExprPool, Func, Func2, Node, Values, VarId};
use mocca::frontend::flatten_sources;
use mocca::jacobian::ode_jacobian;
use mocca::source::SourceMap;
use mocca::structure;
use proptest::prelude::*;

/// A random expression over x (VarId 0) and y (VarId 1), kept inside every function's domain.
#[derive(Clone, Debug)]
enum Tree {
    X,
    Y,
    Const(f64),
    Add(Box<Tree>, Box<Tree>),
    Sub(Box<Tree>, Box<Tree>),
    Mul(Box<Tree>, Box<Tree>),
    Div(Box<Tree>, Box<Tree>),
    PowConst(Box<Tree>, i32),
    PowVar(Box<Tree>, Box<Tree>),
    Call(usize, Box<Tree>),
    Call2(usize, Box<Tree>, Box<Tree>),
    If(Box<Tree>, Box<Tree>, Box<Tree>),
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = prop_oneof![
        Just(Tree::X),
        Just(Tree::Y),
        (-3.0f64..3.0).prop_map(Tree::Const)
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        let b = |t: Tree| Box::new(t);
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(move |(a, c)| Tree::Add(b(a), b(c))),
            (inner.clone(), inner.clone()).prop_map(move |(a, c)| Tree::Sub(b(a), b(c))),
            (inner.clone(), inner.clone()).prop_map(move |(a, c)| Tree::Mul(b(a), b(c))),
            (inner.clone(), inner.clone()).prop_map(move |(a, c)| Tree::Div(b(a), b(c))),
            (inner.clone(), 0i32..4).prop_map(move |(a, k)| Tree::PowConst(b(a), k)),
            (inner.clone(), inner.clone()).prop_map(move |(a, c)| Tree::PowVar(b(a), b(c))),
            (0usize..15, inner.clone()).prop_map(move |(f, a)| Tree::Call(f, b(a))),
            (0usize..3, inner.clone(), inner.clone()).prop_map(move |(f, a, c)| Tree::Call2(
                f,
                b(a),
                b(c)
            )),
            (inner.clone(), inner.clone(), inner).prop_map(move |(c, a, e)| Tree::If(
                b(c),
                b(a),
                b(e)
            )),
        ]
    })
}

/// Builds the expression; arguments are squashed into each function's domain
/// (`log(1 + a²)`, `sqrt(1 + a²)`, `asin(0.5·tanh a)`, …) so derivatives exist everywhere.
fn build(p: &mut ExprPool, t: &Tree) -> ExprId {
    match t {
        Tree::X => p.var(VarId(0)),
        Tree::Y => p.var(VarId(1)),
        Tree::Const(c) => p.constant(*c),
        Tree::Add(a, b) => bin(p, a, b, |p, x, y| p.add(x, y)),
        Tree::Sub(a, b) => bin(p, a, b, |p, x, y| p.sub(x, y)),
        Tree::Mul(a, b) => bin(p, a, b, |p, x, y| p.mul(x, y)),
        Tree::Div(a, b) => {
            let (x, y) = (build(p, a), build(p, b));
            let den = positive(p, y);
            p.div(x, den)
        }
        Tree::PowConst(a, k) => {
            let x = build(p, a);
            let k = p.constant(*k as f64);
            p.pow(x, k)
        }
        Tree::PowVar(a, b) => {
            let (x, y) = (build(p, a), build(p, b));
            let base = positive(p, x);
            let y = p.call(Func::Tanh, y);
            p.pow(base, y)
        }
        Tree::Call(f, a) => {
            let x = build(p, a);
            let f = Func::ALL[*f];
            let arg = match f {
                Func::Log | Func::Log10 | Func::Sqrt => positive(p, x),
                Func::Asin | Func::Acos => {
                    let half = p.constant(0.5);
                    let t = p.call(Func::Tanh, x);
                    p.mul(half, t)
                }
                Func::Exp | Func::Sinh | Func::Cosh | Func::Tan => p.call(Func::Tanh, x),
                _ => x,
            };
            p.call(f, arg)
        }
        Tree::Call2(f, a, b) => {
            let (x, y) = (build(p, a), build(p, b));
            let f = [Func2::Atan2, Func2::Min, Func2::Max][*f];
            let y = if f == Func2::Atan2 { positive(p, y) } else { y };
            p.call2(f, x, y)
        }
        Tree::If(c, a, b) => {
            let (c, x, y) = (build(p, c), build(p, a), build(p, b));
            let zero = p.zero();
            let cond = p.cmp(CmpOp::Gt, c, zero);
            p.if_then_else(cond, x, y)
        }
    }
}

fn bin(
    p: &mut ExprPool,
    a: &Tree,
    b: &Tree,
    f: fn(&mut ExprPool, ExprId, ExprId) -> ExprId,
) -> ExprId {
    let (x, y) = (build(p, a), build(p, b));
    f(p, x, y)
}

/// `1 + e²`: positive, smooth.
fn positive(p: &mut ExprPool, e: ExprId) -> ExprId {
    let one = p.one();
    let sq = p.mul(e, e);
    p.add(one, sq)
}

struct At(f64, f64);
impl Values for At {
    fn var(&self, v: VarId) -> Option<f64> {
        Some(if v.0 == 0 { self.0 } else { self.1 })
    }
    fn der(&self, _: VarId) -> Option<f64> {
        None
    }
    fn time(&self) -> Option<f64> {
        Some(0.0)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn symbolic_derivative_matches_central_difference(t in tree(), x in -2.0f64..2.0, y in -2.0f64..2.0) {
        let mut p = ExprPool::new();
        let e = build(&mut p, &t);
        let d = p.diff(e, Node::Var(VarId(0)));
        let f = |x: f64| p.eval(e, &At(x, y)).unwrap();
        let h = 1e-6;
        let fd = (f(x + h) - f(x - h)) / (2.0 * h);
        let exact = p.eval(d, &At(x, y)).unwrap();
        // Piecewise functions (abs, sign, min, max, if) have kinks: skip points next to one,
        // where the two one-sided differences disagree.
        let (left, right) = ((f(x) - f(x - h)) / h, (f(x + h) - f(x)) / h);
        prop_assume!((left - right).abs() <= 1e-3 * (1.0 + left.abs()));
        prop_assume!(fd.is_finite() && exact.is_finite() && fd.abs() < 1e6);
        prop_assert!((fd - exact).abs() <= 1e-4 * (1.0 + exact.abs()), "d/dx = {exact}, finite difference {fd}, expr {t:?}");
    }
}

#[test]
fn solve_affine_inverts_and_refuses_nonlinear() {
    let mut p = ExprPool::new();
    let (x, y) = (p.var(VarId(0)), p.var(VarId(1)));
    // 3·x + y − 6 = 0  ⇒  x = (6 − y)/3
    let three = p.constant(3.0);
    let six = p.constant(6.0);
    let tx = p.mul(three, x);
    let s = p.add(tx, y);
    let r = p.sub(s, six);
    let sol = p.solve_affine(r, Node::Var(VarId(0))).unwrap();
    assert!((p.eval(sol, &At(0.0, 1.5)).unwrap() - 1.5).abs() < 1e-12);
    let sx = p.call(Func::Sin, x);
    let nonlinear = p.sub(sx, y);
    assert!(p.solve_affine(nonlinear, Node::Var(VarId(0))).is_none());
}

/// J of a model against central differences of f(x) evaluated through the causal form.
#[allow(clippy::needless_range_loop)] // rows and columns of J are indexed together
fn check_model_jacobian(text: &str) {
    let mut sources = SourceMap::new();
    let id = sources.add("m.mo", text);
    let flat =
        flatten_sources(sources, &[id], None, &[]).unwrap_or_else(|_| panic!("flattens:\n{text}"));
    let mut dae = flat.dae;
    let s = structure::analyse(&dae).expect("regular");
    let causal = causal_form(&mut dae, &s);
    let jac = ode_jacobian(&mut dae, &causal);
    let mut point = initial_point(&dae).unwrap();
    for (k, &x) in causal.states.iter().enumerate() {
        point.vars[x.0 as usize] = 0.3 + 0.1 * k as f64;
    }
    causal.evaluate(&dae.pool, &mut point).unwrap();
    let n = causal.states.len();
    let mut dense = vec![vec![0.0; n]; n];
    for (r, c, v) in jac.values(&dae, &causal, &point) {
        dense[r][c] = v;
    }
    let rhs = |point: &mut mocca::causal::Point| -> Vec<f64> {
        causal.evaluate(&dae.pool, point).unwrap();
        causal
            .states
            .iter()
            .map(|x| point.ders[x.0 as usize])
            .collect()
    };
    for j in 0..n {
        let h = 1e-6;
        let x = causal.states[j].0 as usize;
        let mut plus = point.clone();
        plus.vars[x] += h;
        let mut minus = point.clone();
        minus.vars[x] -= h;
        let (fp, fm) = (rhs(&mut plus), rhs(&mut minus));
        for i in 0..n {
            let fd = (fp[i] - fm[i]) / (2.0 * h);
            assert!(
                (fd - dense[i][j]).abs() <= 1e-5 * (1.0 + fd.abs()),
                "J[{i}][{j}] = {} but finite difference {fd}",
                dense[i][j]
            );
            if dense[i][j] != 0.0 {
                assert!(jac.entries.iter().any(|e| e.row == i && e.col == j));
            }
        }
    }
}

#[test]
fn jacobian_of_a_linear_chain() {
    check_model_jacobian(
        "model M Real a, b, c; Real w;
         equation w = 2*a - b; der(a) = -a + 0.5*b; der(b) = w - 1.5*b + 0.5*c; der(c) = 0.5*b - c;
         end M;",
    );
}

#[test]
fn jacobian_through_an_implicit_scalar_equation() {
    check_model_jacobian(
        "model M Real x(start = 1), y(start = 0.5), z;
         equation z + 0.1*z^3 = x*y; der(x) = -z; der(y) = sin(z) - y;
         end M;",
    );
}

#[test]
fn jacobian_through_an_algebraic_loop() {
    check_model_jacobian(
        "model M Real x, y, u, v;
         equation u + 0.5*v = x; v - 0.25*u*u = y; der(x) = -u*v; der(y) = u - exp(-v);
         end M;",
    );
}

#[test]
fn jacobian_of_a_nonlinear_mechanical_model() {
    check_model_jacobian(
        "model Q parameter Real m = 2, k1 = 10, k3 = 100, d = 0.7; Real x(start = 0.1), v, F;
         equation F = k1*x + k3*x^3 + d*abs(v)*v; der(x) = v; m*der(v) = -F + noEvent(if time < 1 then 0 else 1);
         end Q;",
    );
}
