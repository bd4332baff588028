//! Numerical evaluation of an expression tree (reference semantics; the fast path is the
//! compiled tape of the simulation stage).

use super::{CmpOp, ExprId, ExprPool, Func2, Node};
use crate::numfmt::decimal;

/// Where evaluation gets the values of leaves.
pub trait Values {
    fn var(&self, v: super::VarId) -> Option<f64>;
    fn der(&self, v: super::VarId) -> Option<f64>;
    fn time(&self) -> Option<f64>;
    /// The homotopy parameter `λ` that `homotopy(actual, simplified)` reads: 1 (the actual
    /// model) but while initialisation follows the homotopy.
    fn homotopy(&self) -> f64 {
        1.0
    }
    /// A function's local variable (only a running call of a kept function has them).
    fn local(&self, _slot: u32) -> Option<f64> {
        None
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EvalError {
    /// A leaf had no value (a variable that is not known at this point).
    Unknown(Node),
}

/// Nodes a walk of the expression as a tree visits before it keeps the value of each node
/// it has computed: an expression is a DAG, and one a function's loop built (a root finder
/// inlined with a parameter argument: each turn reads the last turn's values several times)
/// is exponentially larger as a tree than as a DAG.
const TREE_BUDGET: usize = 10_000;

/// Why a walk stopped: the expression's error, or a tree walk's budget spent.
enum Stop {
    Error(EvalError),
    OverBudget,
}

impl From<EvalError> for Stop {
    fn from(e: EvalError) -> Stop {
        Stop::Error(e)
    }
}

/// How an evaluation visits a child node.
trait Walk {
    fn values(&self) -> &dyn Values;
    fn visit(&mut self, pool: &ExprPool, id: ExprId) -> Result<f64, Stop>;
}

/// A walk of the expression as a tree, up to a budget of visits: the fast path.
struct TreeWalk<'v> {
    values: &'v dyn Values,
    budget: usize,
}

impl Walk for TreeWalk<'_> {
    fn values(&self) -> &dyn Values {
        self.values
    }

    fn visit(&mut self, pool: &ExprPool, id: ExprId) -> Result<f64, Stop> {
        self.budget = self.budget.checked_sub(1).ok_or(Stop::OverBudget)?;
        pool.eval_node(id, self)
    }
}

/// A walk that keeps each node's value: linear in the DAG.
struct DagWalk<'v> {
    values: &'v dyn Values,
    done: super::hash::FxHashMap<ExprId, f64>,
}

impl Walk for DagWalk<'_> {
    fn values(&self) -> &dyn Values {
        self.values
    }

    fn visit(&mut self, pool: &ExprPool, id: ExprId) -> Result<f64, Stop> {
        if let Some(&v) = self.done.get(&id) {
            return Ok(v);
        }
        let value = pool.eval_node(id, self)?;
        self.done.insert(id, value);
        Ok(value)
    }
}

/// How many ulps of its magnitude a value may be and still be rounding noise.
const CANCEL_ULPS: f64 = 8.0;

/// A value with the magnitude it was computed at: the sum of the magnitudes of the terms added
/// to make it (through products and quotients). A sum whose terms cancel is left with a value
/// of a few ulps of that magnitude, which is rounding, not a number of the model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scaled {
    pub value: f64,
    pub magnitude: f64,
}

impl Scaled {
    /// A value computed without cancellation: its magnitude is itself.
    pub fn exact(value: f64) -> Scaled {
        Scaled {
            value,
            magnitude: value.abs(),
        }
    }

    /// Whether the value is rounding noise: within a few ulps of its magnitude (and not 0
    /// already).
    pub fn cancels(self) -> bool {
        self.value != 0.0 && self.value.abs() <= CANCEL_ULPS * f64::EPSILON * self.magnitude
    }
}

impl std::ops::Add for Scaled {
    type Output = Scaled;

    fn add(self, other: Scaled) -> Scaled {
        Scaled {
            value: self.value + other.value,
            magnitude: self.magnitude + other.magnitude,
        }
    }
}

impl std::ops::Mul for Scaled {
    type Output = Scaled;

    fn mul(self, other: Scaled) -> Scaled {
        Scaled {
            value: self.value * other.value,
            magnitude: self.magnitude * other.magnitude,
        }
    }
}

/// The quotient, the divisor taken as exact.
impl std::ops::Div<f64> for Scaled {
    type Output = Scaled;

    fn div(self, divisor: f64) -> Scaled {
        Scaled {
            value: self.value / divisor,
            magnitude: self.magnitude / divisor.abs(),
        }
    }
}

impl std::ops::Neg for Scaled {
    type Output = Scaled;

    fn neg(self) -> Scaled {
        Scaled {
            value: -self.value,
            ..self
        }
    }
}

impl ExprPool {
    /// [`ExprPool::eval`] with the magnitude the value is computed at ([`Scaled`]): sums,
    /// differences, products and quotients carry their operands' magnitudes, any other
    /// node's value is taken as exact.
    pub fn eval_scaled(&self, id: ExprId, values: &dyn Values) -> Result<Scaled, EvalError> {
        Ok(match self.node(id) {
            Node::Add(x, y) => self.eval_scaled(x, values)? + self.eval_scaled(y, values)?,
            Node::Mul(x, y) => self.eval_scaled(x, values)? * self.eval_scaled(y, values)?,
            Node::Neg(x) => -self.eval_scaled(x, values)?,
            Node::Div(x, y) => self.eval_scaled(x, values)? / self.eval(y, values)?,
            _ => Scaled::exact(self.eval(id, values)?),
        })
    }

    /// The value of `id`: walked as a tree, and once that passes [`TREE_BUDGET`] visits,
    /// again with each node's value kept (linear in the size of its DAG, not of its tree).
    pub fn eval(&self, id: ExprId, values: &dyn Values) -> Result<f64, EvalError> {
        let mut tree = TreeWalk {
            values,
            budget: TREE_BUDGET,
        };
        let stop = match tree.visit(self, id) {
            Ok(v) => return Ok(v),
            Err(stop) => stop,
        };
        if let Stop::Error(e) = stop {
            return Err(e);
        }
        let mut dag = DagWalk {
            values,
            done: Default::default(),
        };
        match dag.visit(self, id) {
            Ok(v) => Ok(v),
            Err(Stop::Error(e)) => Err(e),
            Err(Stop::OverBudget) => unreachable!("a DAG walk has no budget"),
        }
    }

    /// `op` on the values `u`, `v` of `x`, `y`. Where time equals the other side (at the 15
    /// digits the run's times are compared at) it is on a breakpoint, and the relation is
    /// taken just past it, as the integrators hold it over the interval that starts there and
    /// as the event there switches it (Modelica 8.5): `time > 0.5` is true at 0.5, so a
    /// `when` on a Boolean it defines fires there.
    fn compare(&self, op: CmpOp, (x, y): (ExprId, ExprId), (u, v): (f64, f64)) -> bool {
        if !matches!(op, CmpOp::Eq | CmpOp::Ne) {
            let on_breakpoint = || decimal(u) == decimal(v);
            if self.node(x) == Node::Time && on_breakpoint() {
                return op.apply(1.0, 0.0);
            }
            if self.node(y) == Node::Time && on_breakpoint() {
                return op.apply(0.0, 1.0);
            }
        }
        op.apply(u, v)
    }

    fn eval_node(&self, id: ExprId, walk: &mut impl Walk) -> Result<f64, Stop> {
        let b = |x: bool| if x { 1.0 } else { 0.0 };
        let values = walk.values();
        Ok(match self.node(id) {
            Node::Const(bits) => f64::from_bits(bits),
            n @ (Node::Var(v) | Node::Last(v)) => values.var(v).ok_or(EvalError::Unknown(n))?,
            n @ Node::Der(v) => values.der(v).ok_or(EvalError::Unknown(n))?,
            n @ Node::Time => values.time().ok_or(EvalError::Unknown(n))?,
            n @ Node::Local(k) => values.local(k).ok_or(EvalError::Unknown(n))?,
            Node::Apply(f, output, list) => {
                let mut args = smallvec::SmallVec::<[f64; 8]>::new();
                for a in self.arguments(f, list) {
                    args.push(walk.visit(self, a)?);
                }
                self.function_output(f, output as usize, &args)
            }
            n @ Node::Args(..) => return Err(EvalError::Unknown(n).into()),
            Node::Add(x, y) => walk.visit(self, x)? + walk.visit(self, y)?,
            Node::Mul(x, y) => walk.visit(self, x)? * walk.visit(self, y)?,
            Node::Neg(x) => -walk.visit(self, x)?,
            Node::Div(x, y) => walk.visit(self, x)? / walk.visit(self, y)?,
            Node::Pow(x, y) => walk.visit(self, x)?.powf(walk.visit(self, y)?),
            Node::Call(f, x) => f.apply(walk.visit(self, x)?),
            Node::Call2(Func2::Homotopy, x, y) => {
                let lambda = walk.values().homotopy();
                super::homotopy(lambda, walk.visit(self, x)?, walk.visit(self, y)?)
            }
            Node::Call2(f, x, y) => f.apply(walk.visit(self, x)?, walk.visit(self, y)?),
            Node::If(c, x, y) => {
                if walk.visit(self, c)? != 0.0 {
                    walk.visit(self, x)?
                } else {
                    walk.visit(self, y)?
                }
            }
            Node::Cmp(op, x, y) => {
                let (u, v) = (walk.visit(self, x)?, walk.visit(self, y)?);
                b(self.compare(op, (x, y), (u, v)))
            }
            Node::And(x, y) => b(walk.visit(self, x)? != 0.0 && walk.visit(self, y)? != 0.0),
            Node::Or(x, y) => b(walk.visit(self, x)? != 0.0 || walk.visit(self, y)? != 0.0),
            Node::Not(x) => b(walk.visit(self, x)? == 0.0),
        })
    }
}
