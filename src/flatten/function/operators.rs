//! Operator records (Modelica 14): an expression whose operands are records of an
//! `operator record` class (`Complex`) calls the operator function its class declares for
//! the operator (`'+'`, `'-'`, `'*'`, `'/'`, `'^'`), one of the functions of an `operator`
//! element or an `operator function`, the first whose inputs take the operands: a record
//! input takes a record of that class, a numeric one a number, and a number given for a
//! record input is converted by the class's `'constructor'` (`Complex(2)` for `2`).

use super::records::{Output, RecordValue};
use super::{Flattener, Given, err};
use crate::diagnostics::Diagnostic;
use crate::flatten::classes::{ClassId, TypeRef};
use crate::flatten::expr::{Ctx, Val};
use crate::flatten::instance::strip_quotes;
use crate::source::Span;
use crate::syntax::ast::{BinOp, ClassKind, Expr, ExprKind, UnOp};

/// An operand of an overloaded operator.
enum Operand {
    Record(ClassId, RecordValue),
    Number(Val),
}

impl<'a> Flattener<'a> {
    /// The record class the value of `e` has, as far as its form tells (a record variable
    /// or component, a record constructor or a function returning a record, an operation or
    /// an `if` of such); `None` for a number.
    pub(crate) fn record_class_of(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> Option<ClassId> {
        match &e.kind {
            ExprKind::Ref(cref) => {
                let first = strip_quotes(&cref.parts[0].ident.name);
                let local = ctx
                    .locals
                    .filter(|_| !cref.global)
                    .and_then(|l| l.get(first.as_ref()));
                if let Some(local) = local {
                    return if cref.parts.len() == 1 {
                        local.record
                    } else {
                        None
                    };
                }
                if let Some(class) = self
                    .named_record(cref, ctx)
                    .or_else(|| self.element_record(cref, ctx))
                {
                    return Some(class);
                }
                self.class_record_declaration(cref, ctx).map(|(_, r, _)| r)
            }
            ExprKind::Call { func, .. } => {
                let class = match self.tree.resolve(&func.as_name()?, ctx.class)? {
                    TypeRef::Class(c) => self.long_class(c),
                    _ => return None,
                };
                if self.is_record(class) {
                    return Some(class);
                }
                let function = self.function_class(func, ctx)?;
                let def = self.function_def(function, e.span).ok()?;
                def.outputs().next()?.record
            }
            ExprKind::Binary { op, lhs, rhs } if operator_name(*op).is_some() => self
                .record_class_of(lhs, ctx)
                .or_else(|| self.record_class_of(rhs, ctx)),
            ExprKind::Unary { operand, .. } => self.record_class_of(operand, ctx),
            ExprKind::If {
                branches,
                else_branch,
            } => branches
                .iter()
                .find_map(|(_, b)| self.record_class_of(b, ctx))
                .or_else(|| self.record_class_of(else_branch, ctx)),
            _ => None,
        }
    }

    /// `lhs op rhs` of operator records, by the class's operator function.
    pub(super) fn binary_operation(
        &mut self,
        op: BinOp,
        (lhs, rhs): (&'a Expr, &'a Expr),
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<RecordValue, Diagnostic> {
        let Some(name) = operator_name(op) else {
            return Err(err(
                span,
                format!(
                    "`{}` of records is not an operator mocca overloads",
                    op.symbol()
                ),
                "not overloaded",
            ));
        };
        let operands = vec![self.operand(lhs, ctx)?, self.operand(rhs, ctx)?];
        self.overloaded(name, operands, span, ctx)
    }

    /// `-e` (or `+e`) of an operator record.
    pub(super) fn unary_operation(
        &mut self,
        op: UnOp,
        operand: &'a Expr,
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<RecordValue, Diagnostic> {
        match op {
            UnOp::Plus => self.record_value(operand, None, ctx),
            UnOp::Neg => {
                let operand = self.operand(operand, ctx)?;
                self.overloaded("'-'", vec![operand], span, ctx)
            }
            UnOp::Not => Err(err(span, "`not` of a record", "not a Boolean")),
        }
    }

    fn operand(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> Result<Operand, Diagnostic> {
        match self.record_class_of(e, ctx) {
            Some(class) => Ok(Operand::Record(
                class,
                self.record_value(e, Some(class), ctx)?,
            )),
            None => Ok(Operand::Number(self.flatten_expr(e, ctx)?)),
        }
    }

    /// `lhs op rhs` of operator records by their relational operator (`'=='`, `'<>'`,
    /// `'<'`, …): a Boolean.
    pub(crate) fn record_relation(
        &mut self,
        op: BinOp,
        (lhs, rhs): (&'a Expr, &'a Expr),
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Val, Diagnostic> {
        let name = relation_name(op).expect("a relational operator");
        let operands = vec![self.operand(lhs, ctx)?, self.operand(rhs, ctx)?];
        match self.overloaded_output(name, operands, span, ctx)? {
            Output::Value(value) => Ok(value),
            Output::Record(_) => Err(err(
                span,
                format!("operator {name} returns a record, not a Boolean"),
                "a record",
            )),
        }
    }

    /// The operator `name` of the operands' record class applied to them: a record.
    fn overloaded(
        &mut self,
        name: &str,
        operands: Vec<Operand>,
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<RecordValue, Diagnostic> {
        match self.overloaded_output(name, operands, span, ctx)? {
            Output::Record(value) => Ok(value),
            Output::Value(_) => Err(err(
                span,
                format!("operator {name} does not return a record"),
                "not a record",
            )),
        }
    }

    /// The first output of the operator `name` of the operands' record class applied to
    /// them.
    fn overloaded_output(
        &mut self,
        name: &str,
        operands: Vec<Operand>,
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Output, Diagnostic> {
        let Some(class) = operands.iter().find_map(|o| match o {
            Operand::Record(c, _) => Some(*c),
            Operand::Number(_) => None,
        }) else {
            return Err(err(
                span,
                "an operator of records needs a record operand",
                "no record",
            ));
        };
        for function in self.operator_functions(class, name) {
            let def = self.function_def(function, span)?;
            let inputs: Vec<Option<ClassId>> = def.inputs().map(|p| p.record).collect();
            let required = def.inputs().filter(|p| p.default.is_none()).count();
            if inputs.len() < operands.len() || required > operands.len() {
                continue;
            }
            let takes = operands
                .iter()
                .zip(&inputs)
                .all(|(o, input)| match (o, input) {
                    (Operand::Record(c, _), Some(r)) => c == r,
                    (Operand::Number(v), None) => v.shape().is_empty(),
                    (Operand::Number(v), Some(_)) => v.shape().is_empty(),
                    (Operand::Record(..), None) => false,
                });
            if !takes {
                continue;
            }
            let mut given = Vec::with_capacity(inputs.len());
            for (o, input) in operands.iter().zip(&inputs) {
                given.push(Some(match (o, input) {
                    (Operand::Record(_, v), _) => Given::Record(v.clone()),
                    (Operand::Number(v), Some(record)) => {
                        Given::Record(self.converted(*record, v.clone(), span, ctx)?)
                    }
                    (Operand::Number(v), None) => Given::Value(v.clone()),
                }));
            }
            given.resize_with(inputs.len(), || None);
            let outputs = self.call_with_values(function, given, span, ctx)?;
            return outputs.into_iter().next().ok_or_else(|| {
                err(
                    span,
                    format!(
                        "operator {name} of `{}` has no output",
                        self.tree.node(class).path
                    ),
                    "no output",
                )
            });
        }
        Err(err(
            span,
            format!(
                "`{}` has no operator {name} for these operands",
                self.tree.node(class).path
            ),
            "no such operator",
        ))
    }

    /// The number `v` as a record of `class`, by its `'constructor'` of one number.
    fn converted(
        &mut self,
        class: ClassId,
        v: Val,
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<RecordValue, Diagnostic> {
        for function in self.operator_functions(class, "'constructor'") {
            let def = self.function_def(function, span)?;
            let mut inputs = def.inputs();
            let takes_a_number = inputs.next().is_some_and(|p| p.record.is_none())
                && inputs.all(|p| p.default.is_some());
            if !takes_a_number {
                continue;
            }
            let count = def.inputs().count();
            let mut given = vec![Some(Given::Value(v.clone()))];
            given.resize_with(count, || None);
            if let Some(Output::Record(value)) = self
                .call_with_values(function, given, span, ctx)?
                .into_iter()
                .next()
            {
                return Ok(value);
            }
        }
        Err(err(
            span,
            format!(
                "a number where a `{}` is expected, and it has no constructor from a number",
                self.tree.node(class).path
            ),
            "not a record",
        ))
    }

    /// The functions operator `name` of `class` names: those of an `operator` element, or
    /// an `operator function` itself.
    pub(super) fn operator_functions(&self, class: ClassId, name: &str) -> Vec<ClassId> {
        let Some(op) = self.tree.member_class(class, name) else {
            return Vec::new();
        };
        let op = self.long_class(op);
        match self.tree.node(op).def.map(|d| d.kind) {
            Some(ClassKind::Operator) => (self.tree.node(op).children.values())
                .map(|&c| self.long_class(c))
                .filter(|&c| {
                    self.tree.node(c).def.is_some_and(|d| {
                        matches!(d.kind, ClassKind::Function | ClassKind::OperatorFunction)
                    })
                })
                .collect(),
            Some(ClassKind::OperatorFunction | ClassKind::Function) => vec![op],
            _ => Vec::new(),
        }
    }
}

/// The operator function a binary operator of records calls.
/// The overloaded operator of a relation of records (Modelica 14.3).
pub(crate) fn relation_name(op: BinOp) -> Option<&'static str> {
    Some(match op {
        BinOp::Eq => "'=='",
        BinOp::Ne => "'<>'",
        BinOp::Lt => "'<'",
        BinOp::Le => "'<='",
        BinOp::Gt => "'>'",
        BinOp::Ge => "'>='",
        _ => return None,
    })
}

fn operator_name(op: BinOp) -> Option<&'static str> {
    match op {
        BinOp::Add | BinOp::ElemAdd => Some("'+'"),
        BinOp::Sub | BinOp::ElemSub => Some("'-'"),
        BinOp::Mul | BinOp::ElemMul => Some("'*'"),
        BinOp::Div | BinOp::ElemDiv => Some("'/'"),
        BinOp::Pow | BinOp::ElemPow => Some("'^'"),
        _ => None,
    }
}
