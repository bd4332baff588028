//! What a model writes while it runs, through `Modelica.Utilities`: `Streams.print`,
//! `Streams.writeRealMatrix`, `Files.removeFile` and `Streams.close` (the library's
//! functions, or any declared external as their C functions). A call in a `when` statement
//! (directly or in a function it calls) becomes a write the event performs at its solution,
//! under the conditions of the function's paths that reach it; elsewhere it is an error, as
//! a write in the continuous equations would run at no defined instants.
//!
//! Strings a write takes are computed at the event ([`Text`]): literals, String parameters,
//! `String(x)` of a value, `Files.fullPathName`, and the translation-time string functions.
//! File and matrix names must be known at translation time.

use super::{Flattener, FunctionDef, Output, Param, err};
use crate::dae::ScalarType;
use crate::dae::hybrid::{Action, MatFormat, Text, TextPiece, Write};
use crate::diagnostics::Diagnostic;
use crate::expr::hash::FxHashSet;
use crate::expr::{ExprId, Node, VarId};
use crate::flatten::expr::Ctx;
use crate::flatten::tree::Tree;
use crate::source::Span;
use crate::syntax::ast::{Arg, BinOp, Expr, ExprKind};

/// The writing functions, by their name in `Modelica.Utilities` and by their C function.
#[derive(Clone, Copy, PartialEq)]
enum Writer {
    Print,
    Matrix,
    Remove,
    /// `Streams.close`: files are closed after each write, so there is nothing to do.
    Close,
}

const WRITERS: [(&str, &str, Writer); 4] = [
    (
        "Modelica.Utilities.Streams.print",
        "ModelicaInternal_print",
        Writer::Print,
    ),
    (
        "Modelica.Utilities.Streams.writeRealMatrix",
        "ModelicaIO_writeRealMatrix",
        Writer::Matrix,
    ),
    (
        "Modelica.Utilities.Files.removeFile",
        "ModelicaInternal_removeFile",
        Writer::Remove,
    ),
    (
        "Modelica.Utilities.Streams.close",
        "ModelicaStreams_closeFile",
        Writer::Close,
    ),
];

/// Which writing function `def` is.
fn writer(def: &FunctionDef<'_>) -> Option<Writer> {
    let external = (def.external).and_then(|x| x.function.as_deref());
    (WRITERS.iter())
        .find(|(path, c, _)| def.path == *path || external == Some(*c))
        .map(|&(.., w)| w)
}

impl<'a> Flattener<'a> {
    /// A call of a writing function: its write recorded for the `when` statement being
    /// translated, and its outputs (`writeRealMatrix`'s `success` is true: a write that
    /// fails stops the run); `None` when `def` is none of them.
    pub(crate) fn write_call(
        &mut self,
        def: &FunctionDef<'a>,
        args: &'a [Arg],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Option<Vec<Output>>, Diagnostic> {
        let Some(writer) = writer(def) else {
            return Ok(None);
        };
        if self.keeping {
            return Err(err(
                span,
                format!(
                    "`{}` writes while the model runs, inside a function kept as code (its control flow depends on values known only then): mocca does not write from kept functions yet",
                    def.path
                ),
                "in a function kept as code",
            ));
        }
        if self.writes.is_none() {
            return Err(err(
                span,
                format!(
                    "`{}` writes while the model runs: mocca performs it only in a `when` statement, at its events",
                    def.path
                ),
                "outside a `when` statement",
            ));
        }
        let inputs: Vec<&Param<'a>> = def.inputs().collect();
        let bound = self.string_arguments(def, &inputs, args, span)?;
        let at = |k: usize| -> Result<(&'a Expr, Ctx<'_>), Diagnostic> {
            let Some(&(e, caller)) = bound.get(k) else {
                return Err(err(
                    span,
                    format!("`{}` takes more inputs", def.path),
                    "here",
                ));
            };
            Ok((
                e,
                if caller {
                    *ctx
                } else {
                    Ctx::of_class(inputs[k].scope)
                },
            ))
        };
        let write = match writer {
            Writer::Close => None,
            Writer::Print => {
                let (e, c) = at(0)?;
                let text = self.text_value(e, &c)?;
                let (e, c) = at(1)?;
                let file = self.file_name(e, &c)?;
                Some(Write::Print { text, file })
            }
            Writer::Remove => {
                let (e, c) = at(0)?;
                Some(Write::Remove {
                    file: self.file_name(e, &c)?,
                })
            }
            Writer::Matrix => {
                let (e, c) = at(0)?;
                let file = self.file_name(e, &c)?;
                let (e, c) = at(1)?;
                let name = self.file_name(e, &c)?;
                let (e, c) = at(2)?;
                let (rows, cols, values) = self.matrix_values(e, &c)?;
                let (e, c) = at(3)?;
                let append = self.eval_scalar(e, &c)? != 0.0;
                let (e, c) = at(4)?;
                let written = self.file_name(e, &c)?;
                let format = MatFormat::named(&written).ok_or_else(|| {
                    err(
                        e.span,
                        format!(
                            "MAT file format \"{written}\": the formats are \"4\", \"6\" and \"7\""
                        ),
                        "not a format",
                    )
                })?;
                Some(Write::Matrix {
                    file,
                    name,
                    rows,
                    cols,
                    values,
                    append,
                    format,
                })
            }
        };
        if let Some(write) = write {
            let action = Action::Write { write, span };
            let action = match self.write_guard {
                Some(g) if self.dae.pool.as_const(g) != Some(1.0) => Action::If {
                    branches: vec![(g, vec![action])],
                    otherwise: Vec::new(),
                },
                _ => action,
            };
            self.writes
                .as_mut()
                .expect("collecting writes")
                .push(action);
        }
        let success = def.outputs().next().map(|_| {
            let yes = self.dae.pool.one();
            Output::Value(Tree::Leaf(yes))
        });
        Ok(Some(success.into_iter().collect()))
    }

    /// Runs `f` collecting the writes it makes (a `when` statement's call): the writes in
    /// order, then what `f` gives.
    pub(crate) fn collecting_writes<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, Diagnostic>,
    ) -> Result<(Vec<Action>, T), Diagnostic> {
        let outer = self.writes.replace(Vec::new());
        let guard = self.write_guard.take();
        let result = f(self);
        let writes = std::mem::replace(&mut self.writes, outer).unwrap_or_default();
        self.write_guard = guard;
        Ok((writes, result?))
    }

    /// A write reads the event's solution, where every assignment of its `when` has been
    /// made: one that reads a variable a later statement of the branch assigns would see the
    /// later value, not the one the statements before it left. That is an error.
    pub(crate) fn check_write_reads(&self, actions: &[Action]) -> Result<(), Diagnostic> {
        let mut later: FxHashSet<VarId> = FxHashSet::default();
        for action in actions.iter().rev() {
            let mut reads = Vec::new();
            self.write_reads(action, &mut reads);
            if let Some(&(v, span)) = reads.iter().find(|(v, _)| later.contains(v)) {
                return Err(err(
                    span,
                    format!(
                        "this write reads `{}`, which a later statement of its `when` assigns: mocca writes from the values at the end of the event, so move the write after that statement",
                        self.dae.var(v).name
                    ),
                    "reads a value assigned later",
                ));
            }
            if let Action::If {
                branches,
                otherwise,
            } = action
            {
                for body in branches.iter().map(|(_, b)| b).chain([otherwise]) {
                    self.check_write_reads(body)?;
                }
            }
            later.extend(Action::assigned(std::slice::from_ref(action)));
        }
        Ok(())
    }

    /// The variables the writes in `action` read (with the conditions they are made under),
    /// each with its write.
    fn write_reads(&self, action: &Action, reads: &mut Vec<(VarId, Span)>) {
        match action {
            Action::Write { write, span } => {
                for e in write.exprs() {
                    self.dae.pool.visit_leaves(e, |leaf| {
                        if let Node::Var(v) = leaf {
                            reads.push((v, *span));
                        }
                    });
                }
            }
            Action::If {
                branches,
                otherwise,
            } => {
                let mut inner = Vec::new();
                for body in branches.iter().map(|(_, b)| b).chain([otherwise]) {
                    body.iter().for_each(|a| self.write_reads(a, &mut inner));
                }
                if let Some(&(_, span)) = inner.first() {
                    for &(c, _) in branches {
                        self.dae.pool.visit_leaves(c, |leaf| {
                            if let Node::Var(v) = leaf {
                                reads.push((v, span));
                            }
                        });
                    }
                }
                reads.extend(inner);
            }
            _ => {}
        }
    }

    /// A String known at translation time, resolved as the run reads it (escapes applied).
    fn file_name(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> Result<String, Diagnostic> {
        let text = self.text_value(e, ctx)?;
        text.known()
            .map(|s| crate::dae::unescape(&s))
            .ok_or_else(|| {
                err(
                    e.span,
                    "this name must be known at translation time",
                    "computed while the model runs",
                )
            })
    }

    /// A matrix argument: its size and values row by row.
    fn matrix_values(
        &mut self,
        e: &'a Expr,
        ctx: &Ctx<'_>,
    ) -> Result<(usize, usize, Vec<ExprId>), Diagnostic> {
        let value = self.flatten_expr(e, ctx)?;
        match value.shape().as_slice() {
            &[rows, cols] => Ok((rows, cols, value.leaves())),
            _ => Err(err(
                e.span,
                "a matrix (two dimensions) is expected",
                "not a matrix",
            )),
        }
    }

    /// A String as computed while the model runs, its literal pieces as written.
    pub(crate) fn text_value(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> Result<Text, Diagnostic> {
        match &e.kind {
            ExprKind::Str(s) => Ok(Text(vec![TextPiece::Literal(s.clone())])),
            ExprKind::Binary {
                op: BinOp::Add,
                lhs,
                rhs,
            } => {
                let mut text = self.text_value(lhs, ctx)?;
                text.0.extend(self.text_value(rhs, ctx)?.0);
                Ok(text)
            }
            ExprKind::Ref(cref) if cref.parts.len() == 1 && !cref.global => {
                let name = &cref.parts[0].ident.name;
                match ctx.locals.and_then(|l| l.get(name.as_str())) {
                    Some(local) => local.text.clone().ok_or_else(|| {
                        err(
                            e.span,
                            format!("`{name}` is not a String known here"),
                            "not a String",
                        )
                    }),
                    None => Ok(Text(vec![TextPiece::Literal(
                        self.string_value(e, ctx, 0)?,
                    )])),
                }
            }
            ExprKind::Call { func, args } if func.dotted() == "String" => {
                self.string_of(args, e.span, ctx)
            }
            ExprKind::Call { func, args } => {
                let class = self.function_class(func, ctx);
                let def = match class {
                    Some(class) => Some(self.function_def(class, e.span)?),
                    None => None,
                };
                let full_path = def.as_ref().is_some_and(|d| {
                    d.path == "Modelica.Utilities.Files.fullPathName"
                        || (d.external.and_then(|x| x.function.as_deref()))
                            == Some("ModelicaInternal_fullPathName")
                });
                match args.as_slice() {
                    [name] if full_path && name.name.is_none() => {
                        let name = self.file_name(&name.value, ctx)?;
                        Ok(Text(vec![TextPiece::FullPath(name)]))
                    }
                    _ => Ok(Text(vec![TextPiece::Literal(
                        self.string_value(e, ctx, 0)?,
                    )])),
                }
            }
            _ => Ok(Text(vec![TextPiece::Literal(
                self.string_value(e, ctx, 0)?,
            )])),
        }
    }

    /// `String(x, …)` of a Real, Integer or Boolean (Modelica 3.7.2): the options named,
    /// known at translation time.
    fn string_of(
        &mut self,
        args: &'a [Arg],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Text, Diagnostic> {
        let Some((first, options)) = args.split_first().filter(|(f, _)| f.name.is_none()) else {
            return Err(err(span, "`String` takes a value first", "no value"));
        };
        let (mut significant, mut min_length, mut left) = (6usize, 0usize, true);
        for option in options {
            let Some(name) = &option.name else {
                return Err(err(
                    option.value.span,
                    "name the options of `String` (significantDigits = …)",
                    "a positional option",
                ));
            };
            let x = self.eval_scalar(&option.value, ctx)?;
            match name.name.as_str() {
                "significantDigits" => significant = x.max(1.0) as usize,
                "minimumLength" => min_length = x.max(0.0) as usize,
                "leftJustified" => left = x != 0.0,
                other => {
                    return Err(err(
                        name.span,
                        format!(
                            "`String` has no option `{other}` mocca supports (significantDigits, minimumLength, leftJustified)"
                        ),
                        "not supported",
                    ));
                }
            }
        }
        let Tree::Leaf(value) = self.flatten_expr(&first.value, ctx)? else {
            return Err(err(first.value.span, "`String` of an array", "an array"));
        };
        let ty = match self.dae.pool.node(value) {
            Node::Var(v) => Some(self.dae.var(v).ty),
            _ => None,
        };
        let piece = match ty {
            Some(ScalarType::Boolean) => TextPiece::Boolean(value),
            Some(ScalarType::Integer) => TextPiece::Integer {
                value,
                min_length,
                left,
            },
            _ => TextPiece::Real {
                value,
                significant,
                min_length,
                left,
            },
        };
        Ok(Text(vec![piece]))
    }
}
