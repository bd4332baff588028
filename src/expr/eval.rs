//! Numerical evaluation of an expression tree (reference semantics; the fast path is the
//! compiled tape of the simulation stage).

use super::{ExprId, ExprPool, Func2, Node};

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
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EvalError {
    /// A leaf had no value (a variable that is not known at this point).
    Unknown(Node),
}

impl ExprPool {
    pub fn eval(&self, id: ExprId, values: &dyn Values) -> Result<f64, EvalError> {
        let b = |x: bool| if x { 1.0 } else { 0.0 };
        Ok(match self.node(id) {
            Node::Const(bits) => f64::from_bits(bits),
            n @ (Node::Var(v) | Node::Last(v)) => values.var(v).ok_or(EvalError::Unknown(n))?,
            n @ Node::Der(v) => values.der(v).ok_or(EvalError::Unknown(n))?,
            n @ Node::Time => values.time().ok_or(EvalError::Unknown(n))?,
            Node::Add(x, y) => self.eval(x, values)? + self.eval(y, values)?,
            Node::Mul(x, y) => self.eval(x, values)? * self.eval(y, values)?,
            Node::Neg(x) => -self.eval(x, values)?,
            Node::Div(x, y) => self.eval(x, values)? / self.eval(y, values)?,
            Node::Pow(x, y) => self.eval(x, values)?.powf(self.eval(y, values)?),
            Node::Call(f, x) => f.apply(self.eval(x, values)?),
            Node::Call2(Func2::Homotopy, x, y) => super::homotopy(
                values.homotopy(),
                self.eval(x, values)?,
                self.eval(y, values)?,
            ),
            Node::Call2(f, x, y) => f.apply(self.eval(x, values)?, self.eval(y, values)?),
            Node::If(c, x, y) => {
                if self.eval(c, values)? != 0.0 {
                    self.eval(x, values)?
                } else {
                    self.eval(y, values)?
                }
            }
            Node::Cmp(op, x, y) => b(op.apply(self.eval(x, values)?, self.eval(y, values)?)),
            Node::And(x, y) => b(self.eval(x, values)? != 0.0 && self.eval(y, values)? != 0.0),
            Node::Or(x, y) => b(self.eval(x, values)? != 0.0 || self.eval(y, values)? != 0.0),
            Node::Not(x) => b(self.eval(x, values)? == 0.0),
        })
    }
}
