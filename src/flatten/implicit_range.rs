//! Implicit for-loop ranges (Modelica 8.3.2.2): `for i loop x[i] = 2*y[i]; end for;` takes
//! `i`'s range from the arrays it subscripts: `x` of size n gives `1:n`. Every such use must
//! agree on the size.

use super::Flattener;
use super::expr::Ctx;
use super::instance::{Content, InstId, strip_quotes};
use crate::diagnostics::Diagnostic;
use crate::source::Span;
use crate::syntax::ast::{
    ComponentRef, Equation, EquationKind, Expr, ExprKind, ForIndex, Subscript,
};

/// A reference whose part `part` has the loop index as its whole subscript number `position`.
struct Use<'a> {
    cref: &'a ComponentRef,
    part: usize,
    position: usize,
}

impl<'a> Flattener<'a> {
    /// The values `1..=n` of an index declared without `in`, n read off the arrays it
    /// subscripts in `body`.
    pub(crate) fn implicit_range(
        &mut self,
        index: &'a ForIndex,
        body: &'a [Equation],
        ctx: &Ctx<'_>,
    ) -> Result<(Vec<f64>, bool), Diagnostic> {
        let name = strip_quotes(&index.name.name);
        let mut uses = Vec::new();
        for eq in body {
            equation_uses(eq, &name, &mut uses);
        }
        let mut size: Option<((usize, bool), Span)> = None;
        for u in &uses {
            let Some(n) = ctx.inst.and_then(|inst| self.dimension(inst, u)) else {
                continue;
            };
            match size {
                None => size = Some((n, u.cref.span)),
                Some((m, first)) if m != n => {
                    let ((m, _), (n, _)) = (m, n);
                    return Err(Diagnostic::error(format!(
                        "the range of `{name}` is ambiguous: it subscripts dimensions of size {m} and {n}"
                    ))
                    .at(u.cref.span, format!("size {n}"))
                    .with_secondary(first, format!("size {m}")));
                }
                Some(_) => {}
            }
        }
        let (n, _) = size.ok_or_else(|| {
            Diagnostic::error(format!(
                "cannot deduce the range of `{name}`: it subscripts no array of known size"
            ))
            .at(index.name.span, "give it a range: `in 1:n`")
        })?;
        Ok(match n {
            (_, true) => (vec![0.0, 1.0], true),
            (n, false) => ((1..=n).map(|i| i as f64).collect(), false),
        })
    }

    /// The size of the dimension a use subscripts and whether `false` and `true` index it,
    /// following the reference's parts through instances (elements of an array of instances
    /// share their shapes).
    fn dimension(&self, mut inst: InstId, u: &Use<'_>) -> Option<(usize, bool)> {
        for (k, part) in u.cref.parts.iter().enumerate() {
            let elem = self.insts[inst.0 as usize]
                .elements
                .get(strip_quotes(&part.ident.name).as_ref())?;
            if k == u.part {
                let boolean = elem.boolean_dims.get(u.position).copied().unwrap_or(false);
                return elem.dims.get(u.position).map(|&n| (n, boolean));
            }
            match &elem.content {
                Content::Insts(children) => inst = *children.first()?,
                _ => return None,
            }
        }
        None
    }
}

fn equation_uses<'a>(eq: &'a Equation, index: &str, out: &mut Vec<Use<'a>>) {
    match &eq.kind {
        EquationKind::Simple { lhs, rhs } => {
            expr_uses(lhs, index, out);
            expr_uses(rhs, index, out);
        }
        EquationKind::Connect { a, b } => {
            ref_uses(&a.cref, index, out);
            ref_uses(&b.cref, index, out);
        }
        EquationKind::If {
            branches,
            else_branch,
        } => {
            for (cond, body) in branches {
                expr_uses(cond, index, out);
                body.iter().for_each(|e| equation_uses(e, index, out));
            }
            else_branch
                .iter()
                .for_each(|e| equation_uses(e, index, out));
        }
        EquationKind::When { branches } => {
            for (cond, body) in branches {
                expr_uses(cond, index, out);
                body.iter().for_each(|e| equation_uses(e, index, out));
            }
        }
        // A section of its own, never inside a `for`.
        EquationKind::Algorithm(_) => {}
        // An inner loop declaring the same name hides ours.
        EquationKind::For { indices, body } => {
            if indices.iter().all(|i| strip_quotes(&i.name.name) != index) {
                body.iter().for_each(|e| equation_uses(e, index, out));
            }
        }
        EquationKind::Call { args, .. } => {
            args.iter().for_each(|a| expr_uses(&a.value, index, out))
        }
        EquationKind::Unsupported => {}
    }
}

fn expr_uses<'a>(e: &'a Expr, index: &str, out: &mut Vec<Use<'a>>) {
    match &e.kind {
        ExprKind::Ref(cref) => ref_uses(cref, index, out),
        ExprKind::Call { args, .. } => args.iter().for_each(|a| expr_uses(&a.value, index, out)),
        ExprKind::Binary { lhs, rhs, .. } => {
            expr_uses(lhs, index, out);
            expr_uses(rhs, index, out);
        }
        ExprKind::Unary { operand, .. } => expr_uses(operand, index, out),
        ExprKind::If {
            branches,
            else_branch,
        } => {
            for (c, v) in branches {
                expr_uses(c, index, out);
                expr_uses(v, index, out);
            }
            expr_uses(else_branch, index, out);
        }
        ExprKind::Range { start, step, stop } => {
            expr_uses(start, index, out);
            step.iter().for_each(|s| expr_uses(s, index, out));
            expr_uses(stop, index, out);
        }
        ExprKind::Array(items) => items.iter().for_each(|i| expr_uses(i, index, out)),
        ExprKind::Comprehension { body, indices } => {
            indices
                .iter()
                .filter_map(|i| i.range.as_ref())
                .for_each(|r| expr_uses(r, index, out));
            // An iterator of the same name hides the loop's inside the body.
            if indices.iter().all(|i| strip_quotes(&i.name.name) != index) {
                expr_uses(body, index, out);
            }
        }
        ExprKind::Matrix(rows) => rows.iter().flatten().for_each(|i| expr_uses(i, index, out)),
        ExprKind::Tuple(items) => items
            .iter()
            .flatten()
            .for_each(|i| expr_uses(i, index, out)),
        ExprKind::Integer(_)
        | ExprKind::Real(_)
        | ExprKind::Bool(_)
        | ExprKind::Str(_)
        | ExprKind::End
        | ExprKind::Unsupported => {}
    }
}

fn ref_uses<'a>(cref: &'a ComponentRef, index: &str, out: &mut Vec<Use<'a>>) {
    for (part, p) in cref.parts.iter().enumerate() {
        for (position, s) in p.subscripts.iter().enumerate() {
            let Subscript::Expr(e) = s else { continue };
            if is_the_index(e, index) {
                out.push(Use {
                    cref,
                    part,
                    position,
                });
            } else {
                expr_uses(e, index, out);
            }
        }
    }
}

fn is_the_index(e: &Expr, index: &str) -> bool {
    matches!(&e.kind, ExprKind::Ref(r)
        if r.parts.len() == 1
            && r.parts[0].subscripts.is_empty()
            && strip_quotes(&r.parts[0].ident.name) == index)
}
