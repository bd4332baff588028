//! The expression IR: a hash-consed arena of nodes addressed by [`ExprId`]. Equal expressions
//! share one id, so comparing and cloning are O(1). Constructors simplify as they build
//! (constant folding, `0·a = 0`, `1·a = a`, `a + 0 = a`, `a − a = 0`, `−(−a) = a`).
//! Constants fold only to finite numbers: an operation whose IEEE result is infinite or NaN
//! (`1/0`, `0/0`, `(-1)^0.5`, `log(0)`, an overflow) stays an operation, so evaluating it
//! still gives IEEE's result and printing it shows what was written.

mod diff;
mod display;
mod eval;
pub mod function;
pub mod hash;
pub(crate) mod table;

pub use display::{Display, Value};
pub use eval::{EvalError, Scaled, Values};
pub use function::{Function, FunctionId, Stmt};

use std::hash::BuildHasher;

use hash::{FxBuild, FxHashMap, FxHashSet};
use smallvec::{SmallVec, smallvec};

/// Index of a flat variable (into `Dae::variables`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

/// Index of an expression node in an [`ExprPool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExprId(u32);

impl ExprId {
    /// No node: a placeholder in tables indexed by something else.
    const NONE: ExprId = ExprId(u32::MAX);

    /// The node's position in its pool, below [`ExprPool::len`]: an index for tables over the
    /// pool's nodes.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Func {
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Exp,
    Log,
    Log10,
    Sqrt,
    Abs,
    Sign,
    /// `noEvent(x)` (and `smooth(p, x)`): `x`, whose relations and event functions do not
    /// make events.
    NoEvent,
    Floor,
    Ceil,
    /// Towards zero: `div(x, y)` is `Trunc(x / y)`.
    Trunc,
}

impl Func {
    /// Whether the result has its operand's type (Integer for an Integer operand).
    pub fn keeps_type(self) -> bool {
        matches!(self, Func::Abs | Func::Sign)
    }

    pub const ALL: [Func; 15] = [
        Func::Sin,
        Func::Cos,
        Func::Tan,
        Func::Asin,
        Func::Acos,
        Func::Atan,
        Func::Sinh,
        Func::Cosh,
        Func::Tanh,
        Func::Exp,
        Func::Log,
        Func::Log10,
        Func::Sqrt,
        Func::Abs,
        Func::Sign,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Func::Sin => "sin",
            Func::Cos => "cos",
            Func::Tan => "tan",
            Func::Asin => "asin",
            Func::Acos => "acos",
            Func::Atan => "atan",
            Func::Sinh => "sinh",
            Func::Cosh => "cosh",
            Func::Tanh => "tanh",
            Func::Exp => "exp",
            Func::Log => "log",
            Func::Log10 => "log10",
            Func::Sqrt => "sqrt",
            Func::Abs => "abs",
            Func::Sign => "sign",
            Func::NoEvent => "noEvent",
            Func::Floor => "floor",
            Func::Ceil => "ceil",
            Func::Trunc => "div",
        }
    }

    pub fn from_name(name: &str) -> Option<Func> {
        Func::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Why `x` lies outside the function's real domain, if it does.
    pub fn domain_error(self, x: f64) -> Option<&'static str> {
        match self {
            Func::Asin | Func::Acos if !(-1.0..=1.0).contains(&x) => {
                Some("is defined only on [-1, 1]")
            }
            Func::Log | Func::Log10 if x <= 0.0 => Some("is defined only for positive arguments"),
            Func::Sqrt if x < 0.0 => Some("is defined only for non-negative arguments"),
            _ => None,
        }
    }

    pub fn apply(self, x: f64) -> f64 {
        match self {
            Func::Sin => x.sin(),
            Func::Cos => x.cos(),
            Func::Tan => x.tan(),
            Func::Asin => x.asin(),
            Func::Acos => x.acos(),
            Func::Atan => x.atan(),
            Func::Sinh => x.sinh(),
            Func::Cosh => x.cosh(),
            Func::Tanh => x.tanh(),
            Func::Exp => x.exp(),
            Func::Log => x.ln(),
            Func::Log10 => x.log10(),
            Func::Sqrt => x.sqrt(),
            Func::Abs => x.abs(),
            Func::Sign => {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }
            Func::NoEvent => x,
            Func::Floor => x.floor(),
            Func::Ceil => x.ceil(),
            Func::Trunc => x.trunc(),
        }
    }

    /// Whether the function is piecewise constant (its derivative is zero where it exists):
    /// `floor`, `ceil`, `div`, whose jumps are events.
    pub fn is_stepwise(self) -> bool {
        matches!(self, Func::Floor | Func::Ceil | Func::Trunc)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Func2 {
    Atan2,
    Min,
    Max,
    /// `homotopy(actual, simplified)`: `actual`, except while initialisation follows the
    /// homotopy from the simplified model to the actual one (Modelica 3.7.4.4).
    Homotopy,
}

impl Func2 {
    /// Whether the result has its operands' type (Integer for Integer operands).
    pub fn keeps_type(self) -> bool {
        matches!(self, Func2::Min | Func2::Max)
    }

    pub fn name(self) -> &'static str {
        match self {
            Func2::Atan2 => "atan2",
            Func2::Min => "min",
            Func2::Max => "max",
            Func2::Homotopy => "homotopy",
        }
    }

    pub fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            Func2::Atan2 => a.atan2(b),
            Func2::Min => a.min(b),
            Func2::Max => a.max(b),
            Func2::Homotopy => a,
        }
    }
}

/// `homotopy(a, b)` at `λ`: exactly `a` at `λ = 1` and `b` at `λ = 0` (where `a` may not
/// be defined yet).
pub fn homotopy(lambda: f64, a: f64, b: f64) -> f64 {
    if lambda == 1.0 {
        a
    } else if lambda == 0.0 {
        b
    } else {
        lambda * a + (1.0 - lambda) * b
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Eq => "==",
            CmpOp::Ne => "<>",
        }
    }

    pub fn apply(self, a: f64, b: f64) -> bool {
        match self {
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
        }
    }
}

/// One node. Booleans are represented as 0.0/1.0 constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    /// A constant, stored as its bit pattern so nodes can be hashed (`-0.0` is normalised).
    Const(u64),
    Var(VarId),
    /// `der(x)`
    Der(VarId),
    /// A weak read (SPEC §2.1): the variable's last exchanged value, not a structural
    /// dependency.
    Last(VarId),
    Time,
    Add(ExprId, ExprId),
    Mul(ExprId, ExprId),
    Neg(ExprId),
    Div(ExprId, ExprId),
    Pow(ExprId, ExprId),
    Call(Func, ExprId),
    Call2(Func2, ExprId, ExprId),
    /// `if c then a else b` (also `noEvent`/`smooth` are dropped at construction).
    If(ExprId, ExprId, ExprId),
    Cmp(CmpOp, ExprId, ExprId),
    And(ExprId, ExprId),
    Or(ExprId, ExprId),
    Not(ExprId),
    /// A local variable of a function kept as code (its slot): found only in the bodies of
    /// the pool's [`Function`]s.
    Local(u32),
    /// Output `output` of a call of the pool's function `function` on the arguments `args`:
    /// one argument itself, several an [`Node::Args`] list, none a constant 0.
    Apply(FunctionId, u32, ExprId),
    /// The first argument of a call and the list of the rest (the last one itself): not a
    /// value, only the arguments of an [`Node::Apply`].
    Args(ExprId, ExprId),
}

impl Node {
    /// Whether the node is a leaf of the DAG (no children).
    pub fn is_leaf(self) -> bool {
        matches!(
            self,
            Node::Const(_)
                | Node::Var(_)
                | Node::Der(_)
                | Node::Last(_)
                | Node::Time
                | Node::Local(_)
        )
    }
}

/// The children of one node, held inline.
#[derive(Clone, Copy)]
pub struct Kids {
    items: [ExprId; 3],
    len: u8,
}

impl Kids {
    /// Two operands (a compiler's view of a node may differ from its children).
    pub fn pair(a: ExprId, b: ExprId) -> Kids {
        Kids {
            items: [a, b, b],
            len: 2,
        }
    }

    pub fn as_slice(&self) -> &[ExprId] {
        &self.items[..self.len as usize]
    }
}

impl IntoIterator for Kids {
    type Item = ExprId;
    type IntoIter = std::iter::Take<std::array::IntoIter<ExprId, 3>>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter().take(self.len as usize)
    }
}

/// Nodes already visited in one walk: most expressions are small, so a short list serves
/// until it fills, then a hash set.
struct Seen {
    few: Vec<ExprId>,
    many: FxHashSet<ExprId>,
}

impl Seen {
    const FEW: usize = 32;

    /// With room for the short list at once: one allocation per walk instead of the three
    /// or four of a list growing from empty, for millions of walks (one per equation and
    /// pass).
    fn new() -> Seen {
        Seen {
            few: Vec::with_capacity(Self::FEW),
            many: FxHashSet::default(),
        }
    }

    /// False when `id` was seen before.
    fn insert(&mut self, id: ExprId) -> bool {
        if self.few.len() < Self::FEW {
            if self.few.contains(&id) {
                return false;
            }
            self.few.push(id);
            return true;
        }
        if self.few.contains(&id) {
            return false;
        }
        self.many.insert(id)
    }
}

/// What [`ExprPool::substitute_with`] has rewritten so far: original → result.
#[derive(Default)]
pub struct Substituted(FxHashMap<ExprId, ExprId>);

impl Substituted {
    /// Entries a cleared map keeps room for; beyond that it starts again empty.
    const KEPT_CAPACITY: usize = 256;

    /// Forgets what was rewritten. A hash map's `clear` writes over all its slots, so after
    /// one large expression (a flow sum over a whole connection set) every later clear, one
    /// per small equation, would cost the large size again.
    pub fn clear(&mut self) {
        if self.0.capacity() > Self::KEPT_CAPACITY {
            self.0 = FxHashMap::default();
        } else {
            self.0.clear();
        }
    }
}

/// The arena. Build expressions only through its constructors.
#[derive(Clone, Debug, Default)]
pub struct ExprPool {
    nodes: Vec<Node>,
    /// Ids with 32 bits of their node's hash, compared through `nodes`: a third of the size of
    /// a map keyed by the nodes themselves, which matters when a model has millions of them.
    /// The stored hash lets the table grow without reading every node again (a cache miss
    /// each, at that size).
    index: table::IdTable,
    /// `Var(v)` at index `v` once interned ([`ExprId::NONE`] before), and the constants 0 and
    /// 1: the leaves built most often (about half of all constructions), found without a
    /// probe of the table.
    vars: Vec<ExprId>,
    zero_and_one: [Option<ExprId>; 2],
    /// The functions kept as calls that [`Node::Apply`] nodes call.
    functions: Vec<Function>,
}

impl ExprPool {
    pub fn new() -> ExprPool {
        ExprPool::default()
    }

    pub fn node(&self, id: ExprId) -> Node {
        self.nodes[id.0 as usize]
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether some expression reads `last(v)` (one pass over the nodes, no hashing).
    pub fn has_last_reads(&self) -> bool {
        self.any_node(|n| matches!(n, Node::Last(_)))
    }

    /// Whether some node of the pool is one `test` accepts (one pass, no hashing).
    pub fn any_node(&self, test: impl Fn(Node) -> bool) -> bool {
        self.nodes.iter().any(|&n| test(n))
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    fn intern(&mut self, node: Node) -> ExprId {
        // One probe of the table for both the lookup and the insertion.
        let hash = FxBuild::default().hash_one(node) as u32;
        let nodes = &self.nodes;
        let new = ExprId(nodes.len() as u32);
        match self
            .index
            .find_or_insert(hash, |id| nodes[id as usize] == node, new.0)
        {
            Err(found) => ExprId(found),
            Ok(()) => {
                self.nodes.push(node);
                new
            }
        }
    }

    pub fn constant(&mut self, value: f64) -> ExprId {
        let common = if value == 0.0 {
            0
        } else if value == 1.0 {
            1
        } else {
            return self.intern(Node::Const(value.to_bits()));
        };
        if let Some(id) = self.zero_and_one[common] {
            return id;
        }
        let id = self.intern(Node::Const((common as f64).to_bits()));
        self.zero_and_one[common] = Some(id);
        id
    }

    pub fn as_const(&self, id: ExprId) -> Option<f64> {
        match self.node(id) {
            Node::Const(bits) => Some(f64::from_bits(bits)),
            _ => None,
        }
    }

    pub fn zero(&mut self) -> ExprId {
        self.constant(0.0)
    }

    pub fn one(&mut self) -> ExprId {
        self.constant(1.0)
    }

    pub fn var(&mut self, v: VarId) -> ExprId {
        let at = v.0 as usize;
        if let Some(&id) = self.vars.get(at)
            && id != ExprId::NONE
        {
            return id;
        }
        let id = self.intern(Node::Var(v));
        if at >= self.vars.len() {
            self.vars.resize(at + 1, ExprId::NONE);
        }
        self.vars[at] = id;
        id
    }

    pub fn der(&mut self, v: VarId) -> ExprId {
        self.intern(Node::Der(v))
    }

    pub fn last(&mut self, v: VarId) -> ExprId {
        self.intern(Node::Last(v))
    }

    pub fn time(&mut self) -> ExprId {
        self.intern(Node::Time)
    }

    /// A function's local variable in slot `slot` (see [`Node::Local`]).
    pub fn local(&mut self, slot: u32) -> ExprId {
        self.intern(Node::Local(slot))
    }

    /// The constant `value` when it is finite; `None` tells a constructor to keep the
    /// operation that produced it (see the module's documentation).
    fn folded(&mut self, value: f64) -> Option<ExprId> {
        value.is_finite().then(|| self.constant(value))
    }

    pub fn add(&mut self, a: ExprId, b: ExprId) -> ExprId {
        match (self.as_const(a), self.as_const(b)) {
            (Some(x), Some(y)) if let Some(sum) = self.folded(x + y) => return sum,
            (Some(0.0), _) => return b,
            (_, Some(0.0)) => return a,
            _ => {}
        }
        if self.node(b) == Node::Neg(a) || self.node(a) == Node::Neg(b) {
            return self.zero();
        }
        self.intern(Node::Add(a, b))
    }

    pub fn sub(&mut self, a: ExprId, b: ExprId) -> ExprId {
        if a == b {
            return self.zero();
        }
        let nb = self.neg(b);
        self.add(a, nb)
    }

    pub fn neg(&mut self, a: ExprId) -> ExprId {
        match self.node(a) {
            Node::Const(bits) => self.constant(-f64::from_bits(bits)),
            Node::Neg(inner) => inner,
            _ => self.intern(Node::Neg(a)),
        }
    }

    pub fn mul(&mut self, a: ExprId, b: ExprId) -> ExprId {
        match (self.as_const(a), self.as_const(b)) {
            (Some(x), Some(y)) if let Some(product) = self.folded(x * y) => return product,
            (Some(0.0), _) | (_, Some(0.0)) => return self.zero(),
            (Some(1.0), _) => return b,
            (_, Some(1.0)) => return a,
            (Some(-1.0), _) => return self.neg(b),
            (_, Some(-1.0)) => return self.neg(a),
            _ => {}
        }
        self.intern(Node::Mul(a, b))
    }

    pub fn div(&mut self, a: ExprId, b: ExprId) -> ExprId {
        match (self.as_const(a), self.as_const(b)) {
            (Some(x), Some(y)) if let Some(quotient) = self.folded(x / y) => return quotient,
            // `0/a = 0` as `0·a = 0`, but not `0/0`, which is NaN.
            (Some(0.0), None) => return self.zero(),
            (_, Some(1.0)) => return a,
            _ => {}
        }
        if a == b && self.as_const(a).is_none() {
            return self.one();
        }
        self.intern(Node::Div(a, b))
    }

    pub fn pow(&mut self, a: ExprId, b: ExprId) -> ExprId {
        match (self.as_const(a), self.as_const(b)) {
            (Some(x), Some(y)) if let Some(power) = self.folded(x.powf(y)) => return power,
            (_, Some(0.0)) => return self.one(),
            (_, Some(1.0)) => return a,
            _ => {}
        }
        self.intern(Node::Pow(a, b))
    }

    pub fn call(&mut self, f: Func, a: ExprId) -> ExprId {
        match self.as_const(a).and_then(|x| self.folded(f.apply(x))) {
            Some(value) => value,
            None => self.intern(Node::Call(f, a)),
        }
    }

    pub fn call2(&mut self, f: Func2, a: ExprId, b: ExprId) -> ExprId {
        if f == Func2::Homotopy && a == b {
            return a;
        }
        match (self.as_const(a), self.as_const(b)) {
            (Some(x), Some(y))
                if f != Func2::Homotopy
                    && let Some(value) = self.folded(f.apply(x, y)) =>
            {
                value
            }
            _ => self.intern(Node::Call2(f, a, b)),
        }
    }

    pub fn if_then_else(&mut self, c: ExprId, a: ExprId, b: ExprId) -> ExprId {
        match self.as_const(c) {
            Some(x) if x != 0.0 => a,
            Some(_) => b,
            None if a == b => a,
            None => self.intern(Node::If(c, a, b)),
        }
    }

    pub fn cmp(&mut self, op: CmpOp, a: ExprId, b: ExprId) -> ExprId {
        match (self.as_const(a), self.as_const(b)) {
            (Some(x), Some(y)) => self.boolean(op.apply(x, y)),
            _ => self.intern(Node::Cmp(op, a, b)),
        }
    }

    pub fn boolean(&mut self, b: bool) -> ExprId {
        self.constant(if b { 1.0 } else { 0.0 })
    }

    pub fn and(&mut self, a: ExprId, b: ExprId) -> ExprId {
        match (self.as_const(a), self.as_const(b)) {
            (Some(0.0), _) => self.boolean(false),
            (_, Some(0.0)) => self.boolean(false),
            (Some(_), _) => b,
            (_, Some(_)) => a,
            _ => self.intern(Node::And(a, b)),
        }
    }

    pub fn or(&mut self, a: ExprId, b: ExprId) -> ExprId {
        match (self.as_const(a), self.as_const(b)) {
            (Some(x), _) if x != 0.0 => self.boolean(true),
            (_, Some(y)) if y != 0.0 => self.boolean(true),
            (Some(_), _) => b,
            (_, Some(_)) => a,
            _ => self.intern(Node::Or(a, b)),
        }
    }

    pub fn not(&mut self, a: ExprId) -> ExprId {
        match self.as_const(a) {
            Some(x) => self.boolean(x == 0.0),
            None => self.intern(Node::Not(a)),
        }
    }

    /// Children of a node, in order (no allocation: at most three).
    pub fn children(&self, id: ExprId) -> Kids {
        let (items, len) = match self.node(id) {
            Node::Const(_)
            | Node::Var(_)
            | Node::Der(_)
            | Node::Last(_)
            | Node::Time
            | Node::Local(_) => ([id; 3], 0),
            Node::Neg(a) | Node::Call(_, a) | Node::Not(a) | Node::Apply(_, _, a) => ([a; 3], 1),
            Node::Add(a, b)
            | Node::Mul(a, b)
            | Node::Div(a, b)
            | Node::Pow(a, b)
            | Node::Call2(_, a, b)
            | Node::Cmp(_, a, b)
            | Node::And(a, b)
            | Node::Or(a, b)
            | Node::Args(a, b) => ([a, b, b], 2),
            Node::If(c, a, b) => ([c, a, b], 3),
        };
        Kids { items, len }
    }

    /// Calls `visit` on every leaf that is not a literal (`Var`, `Der`, `Last`, `Time`)
    /// reachable from `root`, each node once.
    pub fn visit_leaves(&self, root: ExprId, mut visit: impl FnMut(Node)) {
        let mut seen = Seen::new();
        let mut stack: SmallVec<[ExprId; 16]> = smallvec![root];
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            match self.node(id) {
                leaf @ (Node::Var(_)
                | Node::Der(_)
                | Node::Last(_)
                | Node::Time
                | Node::Local(_)) => visit(leaf),
                _ => stack.extend(self.children(id)),
            }
        }
    }

    /// Rebuilds `root` with every leaf replaced by `map(leaf)` (or kept when it returns None).
    pub fn substitute(
        &mut self,
        root: ExprId,
        map: &mut impl FnMut(&mut ExprPool, Node) -> Option<ExprId>,
    ) -> ExprId {
        self.substitute_with(root, map, &mut Substituted::default())
    }

    /// [`ExprPool::substitute`] remembering what it did in `done`, so expressions sharing
    /// subtrees (an equation's sides, its residual and its terms) are rewritten once. `done` is
    /// valid only for one `map`.
    pub fn substitute_with(
        &mut self,
        id: ExprId,
        map: &mut impl FnMut(&mut ExprPool, Node) -> Option<ExprId>,
        done: &mut Substituted,
    ) -> ExprId {
        if let Some(&result) = done.0.get(&id) {
            return result;
        }
        let node = self.node(id);
        let result = match node {
            Node::Var(_) | Node::Der(_) | Node::Last(_) | Node::Local(_) => {
                map(self, node).unwrap_or(id)
            }
            Node::Const(_) | Node::Time => id,
            _ => {
                let mut kids = self.children(id);
                let mut changed = false;
                for k in kids.items[..kids.len as usize].iter_mut() {
                    let new = self.substitute_with(*k, map, done);
                    changed |= new != *k;
                    *k = new;
                }
                // An untouched subtree is already in simplified form: keep it as it is.
                if changed {
                    self.rebuild(node, kids.as_slice())
                } else {
                    id
                }
            }
        };
        done.0.insert(id, result);
        result
    }

    /// Builds a node of the same kind as `node` over new children (through the simplifying
    /// constructors).
    pub fn rebuild(&mut self, node: Node, kids: &[ExprId]) -> ExprId {
        match node {
            Node::Const(_)
            | Node::Var(_)
            | Node::Der(_)
            | Node::Last(_)
            | Node::Time
            | Node::Local(_) => self.intern(node),
            Node::Apply(f, output, _) => self.applied(f, output, kids[0]),
            Node::Args(..) => self.intern(Node::Args(kids[0], kids[1])),
            Node::Add(..) => self.add(kids[0], kids[1]),
            Node::Mul(..) => self.mul(kids[0], kids[1]),
            Node::Neg(_) => self.neg(kids[0]),
            Node::Div(..) => self.div(kids[0], kids[1]),
            Node::Pow(..) => self.pow(kids[0], kids[1]),
            Node::Call(f, _) => self.call(f, kids[0]),
            Node::Call2(f, ..) => self.call2(f, kids[0], kids[1]),
            Node::If(..) => self.if_then_else(kids[0], kids[1], kids[2]),
            Node::Cmp(op, ..) => self.cmp(op, kids[0], kids[1]),
            Node::And(..) => self.and(kids[0], kids[1]),
            Node::Or(..) => self.or(kids[0], kids[1]),
            Node::Not(_) => self.not(kids[0]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoValues;

    impl Values for NoValues {
        fn var(&self, _: VarId) -> Option<f64> {
            None
        }
        fn der(&self, _: VarId) -> Option<f64> {
            None
        }
        fn time(&self) -> Option<f64> {
            None
        }
    }

    /// An expression whose every level reads the one below twice is a DAG of 2·60 nodes and a
    /// tree of 2⁶⁰: evaluation visits each node once (after a budget of tree visits), as an
    /// inlined root finder's loop needs, and gives the value of the recurrence.
    #[test]
    fn evaluation_is_linear_in_the_dag_not_the_tree() {
        struct At(f64);
        impl Values for At {
            fn var(&self, _: VarId) -> Option<f64> {
                Some(self.0)
            }
            fn der(&self, _: VarId) -> Option<f64> {
                None
            }
            fn time(&self) -> Option<f64> {
                None
            }
        }
        let mut pool = ExprPool::new();
        let mut e = pool.var(VarId(0));
        let mut want = 0.3f64;
        for _ in 0..60 {
            let (s, c) = (pool.call(Func::Sin, e), pool.call(Func::Cos, e));
            e = pool.add(s, c);
            want = want.sin() + want.cos();
        }
        assert_eq!(pool.eval(e, &At(0.3)), Ok(want));
    }

    /// Constants fold to finite results only: the rest stay operations that evaluate to
    /// IEEE's infinity or NaN (`0/0` does not fold to 0 through `0/a = 0`).
    #[test]
    fn constants_fold_only_to_finite_numbers() {
        let mut pool = ExprPool::new();
        let (zero, one, two) = (pool.zero(), pool.one(), pool.constant(2.0));
        let minus_one = pool.constant(-1.0);
        let half = pool.constant(0.5);
        let huge = pool.constant(1e300);
        let largest = pool.constant(f64::MAX);
        let unfolded = [
            pool.div(zero, zero),
            pool.div(one, zero),
            pool.pow(minus_one, half),
            pool.pow(zero, minus_one),
            pool.call(Func::Log, zero),
            pool.call(Func::Sqrt, minus_one),
            pool.mul(huge, huge),
            pool.add(huge, largest),
        ];
        let expected = [
            f64::NAN,
            f64::INFINITY,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for (k, &id) in unfolded.iter().enumerate() {
            assert_eq!(pool.as_const(id), None, "expression {k} stays an operation");
            let value = pool.eval(id, &NoValues).unwrap();
            assert!(!value.is_finite(), "expression {k} evaluates to {value}");
            if let Some(&want) = expected.get(k) {
                assert!(value.to_bits() == want.to_bits() || (want.is_nan() && value.is_nan()));
            }
        }
        // Finite results fold, and `0/a = 0` still holds for a non-constant `a`.
        let quotient = pool.div(one, two);
        assert_eq!(pool.as_const(quotient), Some(0.5));
        let root = pool.pow(two, half);
        assert_eq!(pool.as_const(root), Some(2f64.sqrt()));
        let x = pool.var(VarId(0));
        assert_eq!(pool.div(zero, x), zero);
    }

    /// The leaves served from `vars` and `zero_and_one` are the nodes the table holds: a
    /// rebuild through the table finds the same ids, whichever way a leaf was made first.
    #[test]
    fn cached_leaves_are_the_interned_nodes() {
        let mut pool = ExprPool::new();
        let late = pool.var(VarId(40));
        let through_table = pool.rebuild(Node::Var(VarId(3)), &[]);
        assert_eq!(pool.var(VarId(3)), through_table);
        assert_eq!(pool.var(VarId(40)), late);
        assert_eq!(pool.rebuild(Node::Var(VarId(40)), &[]), late);
        assert_ne!(pool.var(VarId(0)), late);

        let one = pool.rebuild(Node::Const(1f64.to_bits()), &[]);
        assert_eq!(pool.one(), one);
        assert_eq!(pool.constant(1.0), one);
        let zero = pool.zero();
        assert_eq!(pool.constant(-0.0), zero);
        assert_eq!(pool.rebuild(Node::Const(0f64.to_bits()), &[]), zero);
        assert_eq!(pool.as_const(zero), Some(0.0));
        assert_ne!(pool.constant(2.0), one);

        let x = pool.var(VarId(3));
        let sum = pool.add(x, one);
        assert_eq!(pool.add(x, one), sum, "hash-consed");
        let nodes = pool.len();
        pool.var(VarId(40));
        pool.one();
        assert_eq!(pool.len(), nodes, "no node made twice");
    }
}
