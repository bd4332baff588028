//! Printing expressions as Modelica text that mocca's own parser reads back to the same tree.

use std::fmt;

use super::{ExprId, ExprPool, Node, VarId};

/// Writes a variable's printed name (quoted where needed).
pub type NameWriter<'a> = dyn Fn(VarId, &mut fmt::Formatter<'_>) -> fmt::Result + 'a;

/// `format!("{}", Display::new(pool, id, &names))` prints the expression; `names` writes each
/// variable's printed name.
pub struct Display<'a> {
    pool: &'a ExprPool,
    id: ExprId,
    names: &'a NameWriter<'a>,
}

impl<'a> Display<'a> {
    pub fn new(pool: &'a ExprPool, id: ExprId, names: &'a NameWriter<'a>) -> Self {
        Display { pool, id, names }
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
        self.write(f, self.id)
    }
}

impl Display<'_> {
    /// Writes `id`, in parentheses unless it binds at least as strongly as `min`.
    fn child(&self, f: &mut fmt::Formatter<'_>, id: ExprId, min: u8) -> fmt::Result {
        if level(self.pool.node(id)) >= min {
            self.write(f, id)
        } else {
            write!(f, "(")?;
            self.write(f, id)?;
            write!(f, ")")
        }
    }

    fn write(&self, f: &mut fmt::Formatter<'_>, id: ExprId) -> fmt::Result {
        match self.pool.node(id) {
            Node::Const(bits) => write_number(f, f64::from_bits(bits)),
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
            Node::Add(a, b) => {
                self.child(f, a, ARITH)?;
                match self.pool.node(b) {
                    Node::Neg(inner) => {
                        write!(f, " - ")?;
                        self.child(f, inner, TERM)
                    }
                    Node::Const(bits) if f64::from_bits(bits) < 0.0 => {
                        write!(f, " - ")?;
                        write_number(f, -f64::from_bits(bits))
                    }
                    _ => {
                        write!(f, " + ")?;
                        self.child(f, b, TERM)
                    }
                }
            }
            Node::Neg(a) => {
                write!(f, "-")?;
                self.child(f, a, TERM)
            }
            Node::Mul(a, b) => self.infix(f, a, " * ", b, TERM),
            Node::Div(a, b) => self.infix(f, a, " / ", b, TERM),
            Node::Pow(a, b) => {
                self.child(f, a, PRIMARY)?;
                write!(f, "^")?;
                self.child(f, b, PRIMARY)
            }
            Node::Call(func, a) => {
                write!(f, "{}(", func.name())?;
                self.write(f, a)?;
                write!(f, ")")
            }
            Node::Call2(func, a, b) => {
                write!(f, "{}(", func.name())?;
                self.write(f, a)?;
                write!(f, ", ")?;
                self.write(f, b)?;
                write!(f, ")")
            }
            Node::If(c, a, b) => {
                write!(f, "if ")?;
                self.write(f, c)?;
                write!(f, " then ")?;
                self.write(f, a)?;
                write!(f, " else ")?;
                self.write(f, b)
            }
            Node::Cmp(op, a, b) => {
                self.child(f, a, ARITH)?;
                write!(f, " {} ", op.symbol())?;
                self.child(f, b, ARITH)
            }
            Node::And(a, b) => self.infix(f, a, " and ", b, AND),
            Node::Or(a, b) => self.infix(f, a, " or ", b, OR),
            Node::Not(a) => {
                write!(f, "not ")?;
                self.child(f, a, CMP)
            }
        }
    }

    /// Left-associative infix: the right operand must bind strictly more strongly.
    fn infix(
        &self,
        f: &mut fmt::Formatter<'_>,
        a: ExprId,
        op: &str,
        b: ExprId,
        at: u8,
    ) -> fmt::Result {
        self.child(f, a, at)?;
        write!(f, "{op}")?;
        self.child(f, b, at + 1)
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
