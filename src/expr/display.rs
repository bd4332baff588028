//! Printing expressions as Modelica text that mocca's own parser reads back to the same tree.

use std::fmt;

use super::{ExprId, ExprPool, Func, FunctionId, Node, VarId};

/// Writes a variable's printed name (quoted where needed).
pub type NameWriter<'a> = dyn Fn(VarId, &mut fmt::Formatter<'_>) -> fmt::Result + 'a;

/// `format!("{}", Display::new(pool, id, &names))` prints the expression; `names` writes each
/// variable's printed name.
pub struct Display<'a> {
    pool: &'a ExprPool,
    id: ExprId,
    names: &'a NameWriter<'a>,
    value: Value,
}

/// The Modelica type of the value an expression is printed as. The pool holds every value as
/// a double; an Integer or Boolean expression prints its constants as Integer or Boolean
/// literals, so that the text has the type the flattener requires where it is read back
/// (`parameter Integer n = 10`, not `10.0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    Real,
    Integer,
    Boolean,
}

impl<'a> Display<'a> {
    /// `id` printed as a Real expression.
    pub fn new(pool: &'a ExprPool, id: ExprId, names: &'a NameWriter<'a>) -> Self {
        Self::typed(pool, id, names, Value::Real)
    }

    /// `id` printed as an expression of type `value`.
    pub fn typed(pool: &'a ExprPool, id: ExprId, names: &'a NameWriter<'a>, value: Value) -> Self {
        Display {
            pool,
            id,
            names,
            value,
        }
    }
}

// Binding strength, following Modelica's grammar levels.
const IF: u8 = 0;
const OR: u8 = 1;
const AND: u8 = 2;
const NOT: u8 = 3;
const CMP: u8 = 4;
const ARITH: u8 = 5;
const TERM: u8 = 6;
const PRIMARY: u8 = 8;

fn level(node: Node) -> u8 {
    match node {
        Node::If(..) => IF,
        Node::Or(..) => OR,
        Node::And(..) => AND,
        Node::Not(_) => NOT,
        Node::Cmp(..) => CMP,
        Node::Add(..) | Node::Neg(_) => ARITH,
        Node::Mul(..) | Node::Div(..) => TERM,
        Node::Const(bits) if f64::from_bits(bits) < 0.0 => ARITH,
        _ => PRIMARY,
    }
}

impl fmt::Display for Display<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, self.id, self.value)
    }
}

impl Display<'_> {
    /// Writes `id`, in parentheses unless it binds at least as strongly as `min`.
    fn child(&self, f: &mut fmt::Formatter<'_>, id: ExprId, min: u8, value: Value) -> fmt::Result {
        if level(self.pool.node(id)) >= min {
            self.write(f, id, value)
        } else {
            write!(f, "(")?;
            self.write(f, id, value)?;
            write!(f, ")")
        }
    }

    /// Writes `id` as an expression of type `value`: the operands of arithmetic, `abs`, `sign`,
    /// `min`, `max` and of an `if`'s branches have the type of the whole; conditions and the
    /// operands of `and`, `or` and `not` are Boolean; everything else reads Real operands.
    fn write(&self, f: &mut fmt::Formatter<'_>, id: ExprId, value: Value) -> fmt::Result {
        use Value::{Boolean, Real};
        match self.pool.node(id) {
            Node::Const(bits) => write_constant(f, f64::from_bits(bits), value),
            Node::Var(v) => (self.names)(v, f),
            Node::Der(v) => {
                f.write_str("der(")?;
                (self.names)(v, f)?;
                f.write_str(")")
            }
            Node::Last(v) => {
                f.write_str("last(")?;
                (self.names)(v, f)?;
                f.write_str(")")
            }
            Node::Time => write!(f, "time"),
            Node::Local(k) => write!(f, "_l{k}"),
            Node::Apply(func, output, list) => self.call(f, (func, output, list)),
            Node::Args(..) => unreachable!("an argument list is printed by its call"),
            Node::Add(a, b) => {
                self.child(f, a, ARITH, value)?;
                match self.pool.node(b) {
                    Node::Neg(inner) => {
                        write!(f, " - ")?;
                        self.child(f, inner, TERM, value)
                    }
                    Node::Const(bits) if f64::from_bits(bits) < 0.0 => {
                        write!(f, " - ")?;
                        write_constant(f, -f64::from_bits(bits), value)
                    }
                    _ => {
                        write!(f, " + ")?;
                        self.child(f, b, TERM, value)
                    }
                }
            }
            Node::Neg(a) => {
                write!(f, "-")?;
                self.child(f, a, TERM, value)
            }
            Node::Mul(a, b) => self.infix(f, a, " * ", b, TERM, value),
            Node::Div(a, b) => self.infix(f, a, " / ", b, TERM, Real),
            Node::Pow(a, b) => {
                self.child(f, a, PRIMARY, Real)?;
                write!(f, "^")?;
                self.child(f, b, PRIMARY, Real)
            }
            Node::Call(func, a) => {
                let operand = if func.keeps_type() { value } else { Real };
                write!(f, "{}(", func.name())?;
                self.write(f, a, operand)?;
                // `div(x, 1)` reads back as `Trunc(x)`.
                write!(f, "{})", if func == Func::Trunc { ", 1" } else { "" })
            }
            Node::Call2(func, a, b) => {
                let operands = if func.keeps_type() { value } else { Real };
                write!(f, "{}(", func.name())?;
                self.write(f, a, operands)?;
                write!(f, ", ")?;
                self.write(f, b, operands)?;
                write!(f, ")")
            }
            Node::If(c, a, b) => {
                write!(f, "if ")?;
                self.write(f, c, Boolean)?;
                write!(f, " then ")?;
                self.write(f, a, value)?;
                write!(f, " else ")?;
                self.write(f, b, value)
            }
            Node::Cmp(op, a, b) => {
                self.child(f, a, ARITH, Real)?;
                write!(f, " {} ", op.symbol())?;
                self.child(f, b, ARITH, Real)
            }
            Node::And(a, b) => self.infix(f, a, " and ", b, AND, Boolean),
            Node::Or(a, b) => self.infix(f, a, " or ", b, OR, Boolean),
            Node::Not(a) => {
                write!(f, "not ")?;
                self.child(f, a, CMP, Boolean)
            }
        }
    }

    /// A call of a kept function: `f(a, b)`, and its output k > 1 as `f(a, b)[k]`.
    fn call(
        &self,
        f: &mut fmt::Formatter<'_>,
        (func, output, list): (FunctionId, u32, ExprId),
    ) -> fmt::Result {
        let function = self.pool.function(func);
        write!(f, "{}(", function.name)?;
        for (k, a) in self.pool.arguments(func, list).into_iter().enumerate() {
            if k > 0 {
                write!(f, ", ")?;
            }
            self.write(f, a, Value::Real)?;
        }
        write!(f, ")")?;
        if function.outputs.len() > 1 {
            write!(f, "[{}]", output + 1)?;
        }
        Ok(())
    }

    /// Left-associative infix: the right operand must bind strictly more strongly.
    fn infix(
        &self,
        f: &mut fmt::Formatter<'_>,
        a: ExprId,
        op: &str,
        b: ExprId,
        at: u8,
        operands: Value,
    ) -> fmt::Result {
        self.child(f, a, at, operands)?;
        write!(f, "{op}")?;
        self.child(f, b, at + 1, operands)
    }
}

/// `x` as a literal of type `value` where it is one (a whole number as an Integer, 0 and 1 as
/// `false` and `true`), else as a Real number.
fn write_constant(f: &mut fmt::Formatter<'_>, x: f64, value: Value) -> fmt::Result {
    // Whole numbers below 2⁵³ are exact in a double and fit the parser's 64-bit Integers.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match value {
        Value::Integer if x.fract() == 0.0 && x.abs() < EXACT => write!(f, "{}", x as i64),
        Value::Boolean if x == 0.0 => f.write_str("false"),
        Value::Boolean if x == 1.0 => f.write_str("true"),
        _ => write_number(f, x),
    }
}

/// Shortest text that reads back to the same double.
fn write_number(f: &mut fmt::Formatter<'_>, x: f64) -> fmt::Result {
    if x.is_finite() {
        write!(f, "{x:?}")
    } else if x.is_nan() {
        write!(f, "(0.0/0.0)")
    } else if x > 0.0 {
        write!(f, "1e400")
    } else {
        write!(f, "-1e400")
    }
}
