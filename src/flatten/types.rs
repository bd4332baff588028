//! The static types of expressions where Modelica requires a particular one (Modelica 10.6,
//! 3.7): a Boolean condition, no Real value bound to an Integer, no Boolean argument to a
//! numeric function. Inferred from the syntax and the declared types of the referenced
//! variables; `None` where mocca does not know (arrays of mixed parts, function results).

use super::Flattener;
use super::expr::{Ctx, LoopIndex, Val};
use super::tree::Tree;
use crate::dae::ScalarType;
use crate::diagnostics::Diagnostic;
use crate::expr::{ExprId, Func, Node};
use crate::syntax::ast::{BinOp, Expr, ExprKind, UnOp};

/// What kind of operand an operator takes.
#[derive(Clone, Copy, PartialEq)]
enum Operands {
    /// `+ - * / ^` and their elementwise forms, unary `-` and `+`: numbers.
    Numbers,
    /// `and`, `or`, `not`: Booleans.
    Booleans,
    /// Comparisons: either.
    Any,
}

fn operands(op: BinOp) -> Operands {
    match op {
        BinOp::And | BinOp::Or => Operands::Booleans,
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => Operands::Any,
        _ => Operands::Numbers,
    }
}

impl<'a> Flattener<'a> {
    pub(crate) fn static_type(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> Option<ScalarType> {
        use ScalarType::*;
        match &e.kind {
            ExprKind::Integer(_) => Some(Integer),
            ExprKind::Real(_) => Some(Real),
            ExprKind::Bool(_) => Some(Boolean),
            ExprKind::Str(_) => Some(String),
            ExprKind::Ref(r) if r.parts.len() == 1 && r.parts[0].subscripts.is_empty() => {
                match ctx.loop_index(&r.parts[0].ident.name) {
                    Some(index) if index.boolean => Some(Boolean),
                    Some(index) if index.value.fract() == 0.0 => Some(Integer),
                    Some(_) => Some(Real),
                    None => self.reference_type(e, ctx),
                }
            }
            // Its elements' type, each index bound to a value of its range's type (so that a
            // reduction with no elements still types its body).
            ExprKind::Comprehension { body, indices } => {
                let mut typed = Vec::with_capacity(indices.len());
                for index in indices {
                    let integer = match index.range.as_ref().map(|r| &r.kind) {
                        Some(ExprKind::Range { start, step, stop }) => {
                            let ends = [Some(&**start), step.as_deref(), Some(&**stop)];
                            ends.into_iter()
                                .flatten()
                                .all(|e| self.static_type(e, ctx) == Some(Integer))
                        }
                        _ => false,
                    };
                    typed.push(LoopIndex {
                        name: index.name.name.clone(),
                        value: if integer { 1.0 } else { 0.5 },
                        boolean: false,
                    });
                }
                let mut loops = ctx.loops.to_vec();
                loops.extend(typed);
                let inner = Ctx {
                    loops: &loops,
                    ..*ctx
                };
                self.static_type(body, &inner)
            }
            ExprKind::Ref(_) => self.reference_type(e, ctx),
            ExprKind::Binary { op, lhs, rhs } => match op {
                BinOp::Eq
                | BinOp::Ne
                | BinOp::Lt
                | BinOp::Le
                | BinOp::Gt
                | BinOp::Ge
                | BinOp::And
                | BinOp::Or => Some(Boolean),
                BinOp::Div | BinOp::ElemDiv | BinOp::Pow | BinOp::ElemPow => Some(Real),
                _ => {
                    let (a, b) = (self.static_type(lhs, ctx)?, self.static_type(rhs, ctx)?);
                    match (a, b) {
                        (Integer, Integer) => Some(Integer),
                        (Real | Integer, Real | Integer) => Some(Real),
                        _ => None,
                    }
                }
            },
            ExprKind::Unary { op, operand } => match op {
                UnOp::Not => Some(Boolean),
                UnOp::Plus | UnOp::Neg => self.static_type(operand, ctx),
            },
            ExprKind::Call { func, args } => match func.dotted().as_str() {
                "abs" | "sign" | "min" | "max" => {
                    let types: Option<Vec<ScalarType>> = args
                        .iter()
                        .map(|a| self.static_type(&a.value, ctx))
                        .collect();
                    let types = types?;
                    if types.iter().all(|&t| t == Integer) {
                        Some(Integer)
                    } else {
                        types.iter().all(|&t| t != Boolean).then_some(Real)
                    }
                }
                "der" | "atan2" | "last" | "interval" => Some(Real),
                // An enumeration's ordinal.
                "Integer" => Some(Integer),
                "Clock" => Some(Boolean),
                "sample" if args.len() == 2 && !self.is_clock(&args[1].value, ctx) => Some(Boolean),
                "sample" | "hold" | "previous" | "subSample" | "superSample" | "shiftSample"
                | "backSample" => self.static_type(&args.first()?.value, ctx),
                "noEvent" | "smooth" => self.static_type(&args.last()?.value, ctx),
                name if Func::from_name(name).is_some() => Some(Real),
                _ => None,
            },
            ExprKind::If {
                branches,
                else_branch,
            } => {
                let mut t = self.static_type(else_branch, ctx)?;
                for (_, value) in branches {
                    t = match (t, self.static_type(value, ctx)?) {
                        (x, y) if x == y => x,
                        (Real | Integer, Real | Integer) => Real,
                        _ => return None,
                    };
                }
                Some(t)
            }
            _ => None,
        }
    }

    /// The type an operand visibly has, from its syntax or its flattened value, without
    /// walking it again: an operator's operands are checked at every level of an expression,
    /// so this must cost O(1) per scalar. `None` where it is not plain.
    fn operand_type(&self, e: &Expr, value: &Val) -> Option<ScalarType> {
        match &e.kind {
            ExprKind::Bool(_) => return Some(ScalarType::Boolean),
            ExprKind::Integer(_) => return Some(ScalarType::Integer),
            ExprKind::Real(_) => return Some(ScalarType::Real),
            ExprKind::Binary { op, .. } if operands(*op) != Operands::Numbers => {
                return Some(ScalarType::Boolean);
            }
            ExprKind::Unary { op: UnOp::Not, .. } => return Some(ScalarType::Boolean),
            _ => {}
        }
        match value {
            Tree::Leaf(id) => self.scalar_type(*id),
            Tree::Node(_) => value
                .leaves()
                .into_iter()
                .find_map(|id| self.scalar_type(id)),
        }
    }

    /// The type of a flattened scalar, when its top node shows it.
    fn scalar_type(&self, id: ExprId) -> Option<ScalarType> {
        match self.dae.pool.node(id) {
            Node::Var(v) => Some(self.dae.var(v).ty),
            Node::Cmp(..) | Node::And(..) | Node::Or(..) | Node::Not(_) => {
                Some(ScalarType::Boolean)
            }
            _ => None,
        }
    }

    /// An error when an operand of `symbol` visibly has a type the operator does not take:
    /// arithmetic on a Boolean or a String, `and`/`or`/`not` on a number (Modelica 10.6).
    pub(crate) fn check_operand(
        &self,
        symbol: &str,
        takes_numbers: bool,
        e: &Expr,
        value: &Val,
    ) -> Result<(), Diagnostic> {
        let Some(t) = self.operand_type(e, value) else {
            return Ok(());
        };
        let numeric = matches!(t, ScalarType::Real | ScalarType::Integer);
        if numeric == takes_numbers {
            return Ok(());
        }
        let wanted = if takes_numbers { "numbers" } else { "Booleans" };
        let article = if t == ScalarType::Integer { "an" } else { "a" };
        let what = format!("{article} {}", t.name());
        Err(
            Diagnostic::error(format!("`{symbol}` takes {wanted}, not {what} operand"))
                .at(e.span, what),
        )
    }

    /// An error for a Boolean term of a sum or difference of several terms (an equation side
    /// `true + 1`, split into its terms before each is flattened).
    pub(crate) fn check_additive_term(&self, e: &Expr, value: &Val) -> Result<(), Diagnostic> {
        if self.operand_type(e, value) == Some(ScalarType::Boolean) {
            return self.check_operand("+", true, e, value);
        }
        Ok(())
    }

    /// [`Flattener::check_operand`] on both operands of a binary operator.
    pub(crate) fn check_operands(
        &self,
        op: BinOp,
        (lhs, a): (&Expr, &Val),
        (rhs, b): (&Expr, &Val),
    ) -> Result<(), Diagnostic> {
        let takes_numbers = match operands(op) {
            Operands::Numbers => true,
            Operands::Booleans => false,
            Operands::Any => return Ok(()),
        };
        self.check_operand(op.symbol(), takes_numbers, lhs, a)?;
        self.check_operand(op.symbol(), takes_numbers, rhs, b)
    }

    /// The type of a reference to a variable, from what it flattens to.
    fn reference_type(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> Option<ScalarType> {
        match self.flatten_expr(e, ctx).ok()? {
            Tree::Leaf(id) => match self.dae.pool.node(id) {
                Node::Var(v) => Some(self.dae.var(v).ty),
                Node::Time => Some(ScalarType::Real),
                _ => None,
            },
            Tree::Node(_) => None,
        }
    }

    /// An error unless `e` may be a Boolean condition.
    pub(crate) fn expect_boolean(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> Result<(), Diagnostic> {
        match self.static_type(e, ctx) {
            Some(t) if t != ScalarType::Boolean => Err(Diagnostic::error(format!(
                "a condition must be Boolean, not {}",
                t.name()
            ))
            .at(e.span, "not a Boolean")),
            _ => Ok(()),
        }
    }

    /// An error if a value of `e`'s type cannot be assigned to a variable of type `target`
    /// (Integer to Real is the one implicit conversion).
    /// [`Flattener::static_type`] with parameters kept as names, whatever `ctx`'s mode: their
    /// declared type is what counts.
    pub(crate) fn symbolic_type(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> Option<ScalarType> {
        let symbolic = Ctx {
            mode: super::expr::Mode::Symbolic,
            ..*ctx
        };
        self.static_type(e, &symbolic)
    }

    /// A string is required (`unit = "m"`).
    pub(crate) fn expect_string(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> Result<(), Diagnostic> {
        match self.static_type(e, ctx) {
            Some(ScalarType::String) | None => Ok(()),
            Some(t) => Err(Diagnostic::error(format!(
                "{} {} value cannot be given where a String is required",
                article(t),
                t.name()
            ))
            .at(e.span, format!("a {} expression", t.name()))),
        }
    }

    pub(crate) fn expect_assignable(
        &mut self,
        target: ScalarType,
        e: &'a Expr,
        ctx: &Ctx<'_>,
    ) -> Result<(), Diagnostic> {
        let Some(t) = self.static_type(e, ctx) else {
            return Ok(());
        };
        if t == target || (target == ScalarType::Real && t == ScalarType::Integer) {
            return Ok(());
        }
        Err(Diagnostic::error(format!(
            "{} {} value cannot be given to {} {} variable",
            article(t),
            t.name(),
            article(target),
            target.name()
        ))
        .at(e.span, format!("a {} expression", t.name())))
    }
}

/// Whether `e` may be of another type than a number: a Boolean or String literal, a name,
/// `not`, a relation, `and`, `or`, an `if`. Only those need their type looked up where a
/// number is expected.
pub(crate) fn may_be_other_than_number(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Bool(_) | ExprKind::Str(_) | ExprKind::Ref(_) | ExprKind::If { .. } => true,
        ExprKind::Unary { op, .. } => *op == UnOp::Not,
        ExprKind::Binary { op, .. } => op.gives_boolean(),
        _ => false,
    }
}

/// "a" or "an", as the type's name needs.
fn article(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Integer => "an",
        _ => "a",
    }
}
