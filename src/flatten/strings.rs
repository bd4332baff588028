//! String values, known at translation time: mocca computes no strings while simulating, but
//! a String parameter may choose the structure (`terminalConnection <> "D"` in a conditional
//! component, `C1 == "Y"` in an if-equation), so comparisons of strings are evaluated here to
//! Boolean constants.

use super::Flattener;
use super::expr::{Ctx, Mode};
use super::function::StringResult;
use super::tree::Tree;
use crate::dae::ScalarType;
use crate::diagnostics::Diagnostic;
use crate::expr::Node;
use crate::syntax::ast::{BinOp, Expr, ExprKind};

/// String parameters bound to one another nested this deep are taken for a cycle.
const MAX_DEPTH: usize = 64;

impl<'a> Flattener<'a> {
    /// Whether `e` is a String expression: a literal, a String variable, a concatenation.
    pub(super) fn is_string(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> bool {
        match &e.kind {
            ExprKind::Str(_) => true,
            // A call of a function whose (first) output is a String.
            ExprKind::Call { func, .. } => self
                .function_class(func, ctx)
                .and_then(|c| self.function_def(c, e.span).ok())
                .is_some_and(|def| def.gives_string()),
            ExprKind::Binary {
                op: BinOp::Add,
                lhs,
                ..
            } => self.is_string(lhs, ctx),
            // Symbolic: in a constant context a String's reference would be evaluated as a
            // number.
            ExprKind::Ref(cref)
                if cref.parts.len() == 1
                    && let Some(local) =
                        ctx.locals.and_then(|l| l.get(&cref.parts[0].ident.name)) =>
            {
                local.is_string()
            }
            ExprKind::Ref(_) => {
                let symbolic = Ctx {
                    mode: Mode::Symbolic,
                    ..*ctx
                };
                self.static_type(e, &symbolic) == Some(ScalarType::String)
            }
            _ => false,
        }
    }

    /// `lhs op rhs` of two strings, compared at translation time (lexically, Modelica 10.6.6).
    pub(super) fn string_comparison(
        &mut self,
        op: BinOp,
        (lhs, rhs): (&'a Expr, &'a Expr),
        ctx: &Ctx<'_>,
    ) -> Result<bool, Diagnostic> {
        let a = self.string_value(lhs, ctx, 0)?;
        let b = self.string_value(rhs, ctx, 0)?;
        Ok(match op {
            BinOp::Eq => a == b,
            BinOp::Ne => a != b,
            BinOp::Lt => a < b,
            BinOp::Le => a <= b,
            BinOp::Gt => a > b,
            BinOp::Ge => a >= b,
            _ => {
                return Err(super::expr::err(
                    lhs.span,
                    format!("strings take no `{}`", op.symbol()),
                    "a string",
                ));
            }
        })
    }

    /// The text of a String expression: a literal, a String parameter or constant (its
    /// binding, else its start value), an `if` whose conditions are known, or a concatenation
    /// of such.
    pub(super) fn string_value(
        &mut self,
        e: &'a Expr,
        ctx: &Ctx<'_>,
        depth: usize,
    ) -> Result<String, Diagnostic> {
        let unknown = || {
            super::expr::err(
                e.span,
                "this String is not known at translation time",
                "not a literal or a String parameter",
            )
        };
        if depth > MAX_DEPTH {
            return Err(unknown());
        }
        match &e.kind {
            ExprKind::Str(s) => Ok(s.clone()),
            ExprKind::Binary {
                op: BinOp::Add,
                lhs,
                rhs,
            } => Ok(self.string_value(lhs, ctx, depth + 1)?
                + &self.string_value(rhs, ctx, depth + 1)?),
            ExprKind::If {
                branches,
                else_branch,
            } => {
                for (c, value) in branches {
                    match self.short_circuit(c, ctx) {
                        Some(true) => return self.string_value(value, ctx, depth + 1),
                        Some(false) => {}
                        None => return Err(unknown()),
                    }
                }
                self.string_value(else_branch, ctx, depth + 1)
            }
            ExprKind::Call { func, args } => {
                let class = self.function_class(func, ctx).ok_or_else(unknown)?;
                let def = self.function_def(class, e.span)?;
                match self.string_function(&def, args, e.span, ctx)? {
                    Some(StringResult::Text(text)) => Ok(text),
                    _ => Err(unknown()),
                }
            }
            ExprKind::Ref(cref)
                if cref.parts.len() == 1
                    && let Some(local) =
                        ctx.locals.and_then(|l| l.get(&cref.parts[0].ident.name)) =>
            {
                local.text_known().ok_or_else(unknown)
            }
            ExprKind::Ref(_) => {
                let symbolic = Ctx {
                    mode: Mode::Symbolic,
                    ..*ctx
                };
                let Tree::Leaf(id) = self.flatten_expr(e, &symbolic)? else {
                    return Err(unknown());
                };
                let Node::Var(v) = self.dae.pool.node(id) else {
                    return Err(unknown());
                };
                let m = self.modification_of(v);
                let bound = m
                    .binding
                    .clone()
                    .or_else(|| m.child("start").and_then(|s| s.binding.clone()))
                    .ok_or_else(unknown)?;
                self.string_value(bound.expr, &bound.ctx(), depth + 1)
            }
            _ => Err(unknown()),
        }
    }
}
