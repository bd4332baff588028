//! AST expressions → flat expressions in the IR. Names resolve through the instance tree to
//! flat variables; arrays are nested [`Tree`]s of scalars. The same code evaluates at
//! translation time (`Mode::Constant`: parameters replaced by their values).

use super::Flattener;
use super::classes::ClassId;
use super::instance::{Content, InstId, element_count, strip_quotes};
use super::modifier::{Bound, Mod};
use super::tree::Tree;
use crate::dae::{ScalarType, VarKind};
use crate::diagnostics::Diagnostic;
use crate::expr::{CmpOp, ExprId, Func, Func2, Node, VarId};
use crate::source::Span;
use crate::syntax::ast::{
    Arg, BinOp, ClassBody, ClassKind, ComponentClause, ComponentRef, ElementKind, Expr, ExprKind,
    RefPart, Subscript, UnOp, Variability, Visibility,
};

pub type Val = Tree<ExprId>;

/// A bound expression, the scope its names resolve in and the mode it is flattened in.
pub type BoundKey = (*const Expr, InstId, ClassId, Mode);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Parameters and constants are replaced by their values; anything else is an error.
    Constant,
    /// Parameters stay symbolic.
    Symbolic,
}

#[derive(Clone, Copy)]
pub struct Ctx<'l> {
    /// The instance whose elements names refer to (`None` for package constants).
    pub inst: Option<InstId>,
    /// The class in which the expression was written (for package constants).
    pub class: ClassId,
    pub loops: &'l [LoopIndex],
    pub mode: Mode,
    /// The size of the dimension being subscripted (value of `end`).
    pub end: Option<usize>,
    /// Inside a function: its variables, which names find first.
    pub locals: Option<&'l super::function::Locals>,
}

/// A `for` index (of an equation, an array constructor or a reduction) bound to one of its
/// values; a Boolean index's are false and true, as 0 and 1.
#[derive(Clone, Debug)]
pub struct LoopIndex {
    pub name: String,
    pub value: f64,
    pub boolean: bool,
}

impl Ctx<'_> {
    /// Constant evaluation in `class` (a package constant's binding): no instance, no loops.
    pub fn of_class(class: ClassId) -> Ctx<'static> {
        Ctx {
            inst: None,
            class,
            loops: &[],
            mode: Mode::Constant,
            end: None,
            locals: None,
        }
    }

    /// The loop indices inside one more `for`, whose index `name` is `value`.
    pub fn loops_with(&self, name: &str, value: f64, boolean: bool) -> Vec<LoopIndex> {
        let mut loops = self.loops.to_vec();
        loops.push(LoopIndex {
            name: name.to_string(),
            value,
            boolean,
        });
        loops
    }

    /// The innermost `for` index of this name, when one is bound.
    pub fn loop_index(&self, name: &str) -> Option<&LoopIndex> {
        self.loops.iter().rev().find(|i| i.name == name)
    }
}

/// How one subscript selects along its dimension.
pub(crate) enum Pick {
    One(usize),
    Many(Vec<usize>),
}

pub(super) fn err(span: Span, msg: impl Into<String>, label: &str) -> Diagnostic {
    Diagnostic::error(msg).at(span, label)
}

impl<'a> Flattener<'a> {
    pub(crate) fn flatten_expr(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> Result<Val, Diagnostic> {
        let p = &mut self.dae.pool;
        Ok(match &e.kind {
            ExprKind::Integer(v) => Tree::Leaf(p.constant(*v as f64)),
            ExprKind::Real(v) => Tree::Leaf(p.constant(*v)),
            ExprKind::Bool(b) => Tree::Leaf(p.boolean(*b)),
            ExprKind::Str(_) => {
                return Err(err(
                    e.span,
                    "strings are only supported in descriptions and messages",
                    "a string",
                ));
            }
            ExprKind::End => match ctx.end {
                Some(n) => Tree::Leaf(p.constant(n as f64)),
                None => return Err(err(e.span, "`end` outside a subscript", "here")),
            },
            ExprKind::Ref(cref) => self.flatten_ref(cref, ctx)?,
            ExprKind::Call { func, args } => self.flatten_call(func, args, e.span, ctx)?,
            ExprKind::Binary { op, lhs, rhs } if op.gives_boolean() && self.is_string(lhs, ctx) => {
                let holds = self.string_comparison(*op, (lhs, rhs), ctx)?;
                Tree::Leaf(self.dae.pool.boolean(holds))
            }
            ExprKind::Binary { op, lhs, rhs }
                if super::function::relation_name(*op).is_some()
                    && (self.record_class_of(lhs, ctx).is_some()
                        || self.record_class_of(rhs, ctx).is_some()) =>
            {
                self.record_relation(*op, (lhs, rhs), e.span, ctx)?
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.flatten_expr(lhs, ctx)?;
                let b = self.flatten_expr(rhs, ctx)?;
                self.check_operands(*op, (lhs, &a), (rhs, &b))?;
                let result = self.binary(*op, a, b, e.span)?;
                if !is_written_nan(*op, lhs, rhs) {
                    self.check_arithmetic_domain(*op, &result, e.span)?;
                }
                result
            }
            ExprKind::Unary { op, operand } => {
                let a = self.flatten_expr(operand, ctx)?;
                let symbol = match op {
                    UnOp::Plus => "+",
                    UnOp::Neg => "-",
                    UnOp::Not => "not",
                };
                self.check_operand(symbol, *op != UnOp::Not, operand, &a)?;
                match op {
                    UnOp::Plus => a,
                    UnOp::Neg => self.map1(&a, |p, x| p.neg(x)),
                    UnOp::Not => self.map1(&a, |p, x| p.not(x)),
                }
            }
            ExprKind::If {
                branches,
                else_branch,
            } => self.flatten_if(branches, else_branch, e.span, ctx)?,
            ExprKind::Range { start, step, stop } => {
                let start = self.eval_scalar(start, ctx)?;
                let step = match step {
                    Some(s) => self.eval_scalar(s, ctx)?,
                    None => 1.0,
                };
                let stop = self.eval_scalar(stop, ctx)?;
                let values = range(start, step, stop, self.max_size, e.span)?;
                Tree::Node(
                    values
                        .into_iter()
                        .map(|v| Tree::Leaf(self.dae.pool.constant(v)))
                        .collect(),
                )
            }
            ExprKind::Array(items) => {
                let vals = items
                    .iter()
                    .map(|i| self.flatten_expr(i, ctx))
                    .collect::<Result<Vec<_>, _>>()?;
                Tree::Node(vals)
            }
            ExprKind::Matrix(rows) => self.matrix(rows, e.span, ctx)?,
            ExprKind::Comprehension { body, indices } => {
                self.comprehension(body, indices, e.span, ctx)?
            }
            ExprKind::Tuple(_) => {
                return Err(err(
                    e.span,
                    "tuples are only meaningful for function outputs, which are not supported",
                    "a tuple",
                ));
            }
            ExprKind::Unsupported => {
                return Err(err(
                    e.span,
                    "this expression is not supported",
                    "outside the subset",
                ));
            }
        })
    }

    /// `[a, b; c, d]`: each cell promoted to a matrix (a scalar is 1 × 1, a vector a
    /// column), the cells of a row joined side by side, the rows stacked (Modelica 10.4.2).
    fn matrix(
        &mut self,
        rows: &'a [Vec<Expr>],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Val, Diagnostic> {
        let mut out: Vec<Val> = Vec::new();
        let mut width = None;
        for row in rows {
            let mut block: Vec<Vec<Val>> = Vec::new();
            for cell in row {
                let promoted: Vec<Vec<Val>> = match self.flatten_expr(cell, ctx)? {
                    leaf @ Tree::Leaf(_) => vec![vec![leaf]],
                    Tree::Node(items) => match items.first() {
                        Some(Tree::Node(_)) => items
                            .into_iter()
                            .map(|r| match r {
                                Tree::Node(cells) => cells,
                                leaf => vec![leaf],
                            })
                            .collect(),
                        _ => items.into_iter().map(|x| vec![x]).collect(),
                    },
                };
                if block.is_empty() {
                    block = promoted;
                } else if block.len() == promoted.len() {
                    for (r, more) in block.iter_mut().zip(promoted) {
                        r.extend(more);
                    }
                } else {
                    return Err(err(
                        cell.span,
                        format!(
                            "this cell has {} rows where the others of its row have {}",
                            promoted.len(),
                            block.len()
                        ),
                        "rows differ",
                    ));
                }
            }
            for r in block {
                if *width.get_or_insert(r.len()) != r.len() {
                    return Err(err(
                        span,
                        "the rows of this matrix have different lengths",
                        "columns differ",
                    ));
                }
                out.push(Tree::Node(r));
            }
        }
        Ok(Tree::Node(out))
    }

    fn map1(
        &mut self,
        a: &Val,
        mut f: impl FnMut(&mut crate::expr::ExprPool, ExprId) -> ExprId,
    ) -> Val {
        let p = &mut self.dae.pool;
        a.map::<_, ()>(&mut |&x| Ok(f(p, x))).expect("infallible")
    }

    /// Evaluates to one number at translation time.
    pub(crate) fn eval_scalar(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> Result<f64, Diagnostic> {
        let cctx = Ctx {
            mode: Mode::Constant,
            ..*ctx
        };
        match self.flatten_expr(e, &cctx)? {
            Tree::Leaf(id) => self.dae.pool.as_const(id).ok_or_else(|| {
                err(
                    e.span,
                    "this expression must be evaluable at translation time",
                    "not a constant",
                )
            }),
            Tree::Node(_) => Err(err(e.span, "expected a scalar, found an array", "an array")),
        }
    }

    /// An array size: a non-negative integer known at translation time.
    pub(crate) fn eval_size(
        &mut self,
        e: &'a Expr,
        inst: InstId,
        class: ClassId,
    ) -> Result<usize, Diagnostic> {
        let ctx = Ctx {
            inst: Some(inst),
            class,
            loops: &[],
            mode: Mode::Constant,
            end: None,
            locals: None,
        };
        let v = self.eval_scalar(e, &ctx)?;
        if v >= 0.0 && v.fract() == 0.0 && v < 1e9 {
            Ok(v as usize)
        } else {
            Err(err(
                e.span,
                format!("an array size must be a non-negative integer, found {v}"),
                "bad size",
            ))
        }
    }

    /// The shape of a modification's binding, when it can be evaluated now.
    pub(crate) fn binding_shape(&mut self, m: &Mod<'a>) -> Option<Vec<usize>> {
        let b = m.binding.as_ref()?;
        let ctx = Ctx {
            inst: Some(b.scope),
            class: b.class_scope,
            loops: &[],
            mode: Mode::Constant,
            end: None,
            locals: None,
        };
        if !b.field.is_empty() {
            return Some(self.record_field(b, Mode::Constant).ok()?.shape());
        }
        if b.select.is_empty()
            && let Some(shape) = self.filled_shape(b.expr, &ctx)
        {
            return Some(shape);
        }
        let v = self.flatten_expr(b.expr, &ctx).ok()?;
        Some(v.select(&b.select)?.shape())
    }

    /// The shape of `zeros(n, …)`, `ones(n, …)` or `fill(v, n, …)` from its arguments: an
    /// empty array's value keeps no dimension after its first zero (`fill(0.0, 0, 1)` is
    /// 0 × 1), so the value alone cannot tell the declaration `A[:, :]` its size.
    fn filled_shape(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> Option<Vec<usize>> {
        let ExprKind::Call { func, args } = &e.kind else {
            return None;
        };
        let (value, dims) = match func.dotted().as_str() {
            "zeros" | "ones" => (None, &args[..]),
            "fill" => (Some(&args.first()?.value), args.get(1..)?),
            _ => return None,
        };
        let mut shape = Vec::with_capacity(dims.len());
        for d in dims {
            let n = self.eval_scalar(&d.value, ctx).ok()?;
            shape.push(n.max(0.0) as usize);
        }
        if let Some(value) = value {
            shape.extend(self.flatten_expr(value, ctx).ok()?.shape());
        }
        Some(shape)
    }

    /// The value of a parameter or constant (memoised; cycles are reported).
    pub(crate) fn const_value(&mut self, v: VarId, span: Span) -> Result<f64, Diagnostic> {
        if let Some(value) = self.const_cache.get(&v) {
            return value.ok_or_else(|| {
                err(
                    span,
                    format!("the value of `{}` depends on itself", self.dae.var(v).name),
                    "in this cycle",
                )
            });
        }
        self.const_cache.insert(v, None);
        let result = self.evaluate_binding(v, span);
        // A failure is not a cycle: unmark it so a later use reports the failure again, not a
        // cycle.
        match &result {
            Ok(value) => {
                self.const_cache.insert(v, Some(*value));
            }
            Err(_) => {
                self.const_cache.remove(&v);
            }
        }
        result
    }

    /// Evaluates the binding (or the start value) of parameter or constant `v`.
    fn evaluate_binding(&mut self, v: VarId, span: Span) -> Result<f64, Diagnostic> {
        let m = self.modification_of(v);
        match m
            .binding
            .as_ref()
            .or(m.child("start").and_then(|s| s.binding.as_ref()))
        {
            Some(b) => match self.bound_element(b, Mode::Constant)? {
                Some(id) => self.dae.pool.as_const(id).ok_or_else(|| {
                    err(
                        b.expr.span,
                        "this binding must be evaluable at translation time",
                        "not constant",
                    )
                }),
                _ => Err(err(
                    b.expr.span,
                    "the binding's size does not match the declaration",
                    "wrong size",
                )),
            },
            None => Err(err(
                span,
                format!("parameter `{}` has no value", self.dae.var(v).name),
                "its value is needed here",
            )
            .with_secondary(self.dae.var(v).span, "declared without a binding")),
        }
    }

    /// The element of `b`'s value that `b` selects, flattened in `mode`; `None` if there is no
    /// such scalar element (the sizes differ). An array's value is flattened once for all its
    /// elements (kept in `array_values`): each time would cost its size per element.
    pub(crate) fn bound_element(
        &mut self,
        b: &Bound<'a>,
        mode: Mode,
    ) -> Result<Option<ExprId>, Diagnostic> {
        let ctx = Ctx { mode, ..b.ctx() };
        if !b.field.is_empty() {
            return Ok(match self.record_field(b, mode)? {
                Tree::Leaf(id) => Some(id),
                Tree::Node(_) => None,
            });
        }
        if b.select.is_empty() {
            return Ok(match self.flatten_expr(b.expr, &ctx)? {
                Tree::Leaf(id) => Some(id),
                Tree::Node(_) => None,
            });
        }
        let key = (std::ptr::from_ref(b.expr), b.scope, b.class_scope, mode);
        if !self.array_values.contains_key(&key) {
            let value = self.flatten_expr(b.expr, &ctx)?;
            #[cfg(test)]
            super::tree::element_work::add(value.count());
            self.array_values.insert(key, value);
        }
        Ok(match self.array_values[&key].select(&b.select) {
            Some(Tree::Leaf(id)) => Some(*id),
            _ => None,
        })
    }

    pub(super) fn flatten_ref(
        &mut self,
        cref: &'a ComponentRef,
        ctx: &Ctx<'_>,
    ) -> Result<Val, Diagnostic> {
        let first = strip_quotes(&cref.parts[0].ident.name);
        if !cref.global
            && let Some(local) = ctx.locals.and_then(|l| l.get(first.as_ref()))
        {
            return self.local_ref(local, cref, ctx);
        }
        let plain = cref.parts.len() == 1 && cref.parts[0].subscripts.is_empty();
        if plain && let Some(index) = ctx.loop_index(&first) {
            return Ok(Tree::Leaf(self.dae.pool.constant(index.value)));
        }
        // The class declaring `first`, when the instance has it.
        let mut hidden_in = None;
        if let Some(inst) = ctx.inst
            && let Some(elem) = self.insts[inst.0 as usize].elements.get(first.as_ref())
        {
            if self.sees(ctx.class, &first, elem) {
                return self.walk(inst, &cref.parts, cref.span, ctx, false);
            }
            hidden_in = Some(elem.declared_in);
        }
        if first == "time" && cref.parts.len() == 1 {
            return self.time(cref.span, ctx);
        }
        self.class_constant(cref, ctx).map_err(|e| match hidden_in {
            // Declared by a class extending the one the name is written in.
            Some(derived) => err(
                cref.parts[0].ident.span,
                format!(
                    "`{first}` is declared in `{}`, which extends `{}`: names written in a base class do not see the elements of the classes extending it",
                    self.tree.node(derived).path,
                    self.tree.node(ctx.class).path
                ),
                "not visible here",
            ),
            None => e,
        })
    }

    /// The builtin `time`: a variable of models and blocks only (Modelica 3.6.7), unknown at
    /// translation time.
    fn time(&mut self, span: Span, ctx: &Ctx<'_>) -> Result<Val, Diagnostic> {
        let kind = self.tree.node(ctx.class).def.map(|d| d.kind);
        if let Some(
            kind @ (ClassKind::Connector | ClassKind::ExpandableConnector | ClassKind::Record),
        ) = kind
        {
            return Err(err(
                span,
                format!(
                    "`time` is not available in a {}: only models and blocks have it",
                    kind.keyword()
                ),
                "not defined here",
            ));
        }
        match ctx.mode {
            Mode::Symbolic => Ok(Tree::Leaf(self.dae.pool.time())),
            Mode::Constant => Err(err(
                span,
                "`time` is not known at translation time",
                "not a constant",
            )),
        }
    }

    /// Follows `a.b[i].c` through instances to variables; past the first part the names are
    /// seen from outside their instance, where protected elements are hidden.
    fn walk(
        &mut self,
        inst: InstId,
        parts: &'a [RefPart],
        span: Span,
        ctx: &Ctx<'_>,
        from_outside: bool,
    ) -> Result<Val, Diagnostic> {
        let part = &parts[0];
        let name = strip_quotes(&part.ident.name);
        let pending = (self.insts[inst.0 as usize].elements.get_full(name.as_ref()))
            .filter(|(_, e)| matches!(e.content, Content::Pending))
            .map(|(slot, _)| slot);
        if let Some(slot) = pending
            && self.instantiate_pending(inst, slot)
        {
            return self.walk(inst, parts, span, ctx, from_outside);
        }
        let instance = &self.insts[inst.0 as usize];
        let Some((slot, elem)) = instance.elements.get_full(name.as_ref()) else {
            let owner = if instance.prefix.is_empty() {
                "the model".to_string()
            } else {
                format!("`{}`", instance.prefix)
            };
            return Err(err(
                part.ident.span,
                format!("{owner} has no element `{name}`"),
                "unknown name",
            ));
        };
        if from_outside && elem.protected {
            return Err(err(
                part.ident.span,
                format!("`{name}` is protected: it cannot be accessed from outside its class"),
                "protected element",
            ));
        }
        if elem.decl.condition.is_some() {
            return Err(err(
                part.ident.span,
                format!(
                    "`{name}` is a conditional component: only `connect` may name it (Modelica 4.4.5)"
                ),
                "a conditional component",
            ));
        }
        let (dims, boolean) = (elem.dims.clone(), elem.boolean_dims.clone());
        // A subscript not known at translation time selects at run time.
        let picks = match self.picks(&part.subscripts, (&dims, &boolean), span, ctx) {
            Ok(picks) => picks,
            Err(e) => {
                return match self.varying_subscript(inst, slot, parts, (&dims, &boolean), ctx)? {
                    Some(chosen) => Ok(chosen),
                    None => Err(e),
                };
            }
        };
        match self.element_content(inst, slot).select(&dims, &picks) {
            Selected::Pending => Err(err(
                part.ident.span,
                format!(
                    "`{name}` is used to size another declaration before it is itself declared"
                ),
                "declare it earlier",
            )),
            Selected::Disabled => unreachable!("a conditional component is refused above"),
            Selected::Vars(selected) => {
                if parts.len() > 1 {
                    return Err(err(
                        parts[1].ident.span,
                        format!("`{name}` has no element `{}`", parts[1].ident.name),
                        "not a component",
                    ));
                }
                selected.map(&mut |&v| self.var_value(v, ctx, span))
            }
            Selected::Insts(selected) => {
                if parts.len() == 1 {
                    return Err(err(
                        span,
                        format!("`{name}` is a component, not a variable"),
                        "not a variable",
                    ));
                }
                let nested =
                    selected.map(&mut |&child| self.walk(child, &parts[1..], span, ctx, true))?;
                Ok(graft(nested))
            }
        }
    }

    /// `x[…, i, …]` of an array of variables with one subscript that varies
    /// (`expr[firstActiveIndex]`, a pattern's row `fire[ka + 1, :]`): `if i == 1 then
    /// x[…, 1, …] elseif i == 2 then x[…, 2, …] … elseif i == n then x[…, n, …] else NaN`,
    /// element by element (Modelica 10.5 allows any Integer expression; out of range, the
    /// run stops where the value is read). `None` when the reference is not of that
    /// form or its subscripts are all known at translation time.
    fn varying_subscript(
        &mut self,
        inst: InstId,
        slot: usize,
        parts: &'a [RefPart],
        (dims, boolean): (&[usize], &[bool]),
        ctx: &Ctx<'_>,
    ) -> Result<Option<Val>, Diagnostic> {
        let part = &parts[0];
        let subs = part.subscripts.as_slice();
        if parts.len() != 1
            || ctx.mode != Mode::Symbolic
            || subs.is_empty()
            || subs.len() > dims.len()
        {
            return Ok(None);
        }
        if !matches!(self.element_content(inst, slot), Content::Vars(_)) {
            return Ok(None);
        }
        let mut varying = None;
        for (k, sub) in subs.iter().enumerate() {
            let Subscript::Expr(e) = sub else { continue };
            let known = Ctx {
                mode: Mode::Constant,
                end: Some(dims[k]),
                ..*ctx
            };
            if self.flatten_expr(e, &known).is_ok() {
                continue;
            }
            if varying.is_some() || boolean.get(k).copied().unwrap_or(false) {
                return Ok(None);
            }
            varying = Some((k, e));
        }
        let Some((at, index)) = varying else {
            return Ok(None);
        };
        let n = dims[at];
        if n == 0 {
            return Ok(None);
        }
        let with_end = Ctx {
            end: Some(n),
            ..*ctx
        };
        let Tree::Leaf(i) = self.flatten_expr(index, &with_end)? else {
            return Ok(None);
        };
        let mut picks = Vec::with_capacity(dims.len());
        for (k, &size) in dims.iter().enumerate() {
            let by_boolean = boolean.get(k).copied().unwrap_or(false);
            let pick = match k == at {
                true => Pick::One(0),
                false => self.pick(subs.get(k), size, by_boolean, ctx)?,
            };
            picks.push(pick);
        }
        let mut value: Option<Tree<ExprId>> = None;
        for k in (0..n).rev() {
            picks[at] = Pick::One(k);
            let Selected::Vars(selected) = self.element_content(inst, slot).select(dims, &picks)
            else {
                return Ok(None);
            };
            let element = selected.map(&mut |&v| self.var_value(v, ctx, part.ident.span))?;
            let p = &mut self.dae.pool;
            // An index out of range reads NaN, which stops the run where it is read, rather
            // than an element of the array.
            let rest = match value {
                Some(rest) => rest,
                None => {
                    // Written `0.0 / 0.0` in the flat model, which reads back the same.
                    let zero = p.constant(0.0);
                    let nan = p.div(zero, zero);
                    element.map(&mut |_| Ok::<_, Diagnostic>(nan))?
                }
            };
            let here = p.constant((k + 1) as f64);
            let here = p.cmp(CmpOp::Eq, i, here);
            let Some(chosen) = choose_elementwise(p, here, element, rest) else {
                return Ok(None);
            };
            value = Some(chosen);
        }
        Ok(value)
    }

    pub(crate) fn var_value(
        &mut self,
        v: VarId,
        ctx: &Ctx<'_>,
        span: Span,
    ) -> Result<ExprId, Diagnostic> {
        match ctx.mode {
            Mode::Symbolic if self.evaluate.contains(&v) => {
                let value = self.const_value(v, span)?;
                self.folded += 1;
                Ok(self.dae.pool.constant(value))
            }
            Mode::Symbolic => Ok(self.dae.pool.var(v)),
            Mode::Constant => match self.dae.var(v).kind {
                VarKind::Parameter | VarKind::Constant => {
                    let value = self.const_value(v, span)?;
                    Ok(self.dae.pool.constant(value))
                }
                _ => Err(err(
                    span,
                    format!(
                        "`{}` is not a parameter, so it cannot be evaluated at translation time",
                        self.dae.var(v).name
                    ),
                    "must be a parameter or constant here",
                )),
            },
        }
    }

    /// What each subscript selects along `dims`; `boolean[k]` says dimension k is indexed by
    /// `false` and `true` (`Real x[Boolean]`), a shorter `boolean` that the rest are not.
    pub(crate) fn picks(
        &mut self,
        subs: &'a [Subscript],
        (dims, boolean): (&[usize], &[bool]),
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Vec<Pick>, Diagnostic> {
        if subs.len() > dims.len() {
            return Err(err(
                span,
                format!("{} subscripts for {} dimensions", subs.len(), dims.len()),
                "too many subscripts",
            ));
        }
        let mut picks = Vec::new();
        for (k, &n) in dims.iter().enumerate() {
            let by_boolean = boolean.get(k).copied().unwrap_or(false);
            picks.push(self.pick(subs.get(k), n, by_boolean, ctx)?);
        }
        Ok(picks)
    }

    /// What one subscript (`None`: not written) selects along a dimension of `n`, indexed
    /// by `false` and `true` where `by_boolean`.
    fn pick(
        &mut self,
        sub: Option<&'a Subscript>,
        n: usize,
        by_boolean: bool,
        ctx: &Ctx<'_>,
    ) -> Result<Pick, Diagnostic> {
        Ok(match sub {
            None | Some(Subscript::Colon(_)) => Pick::Many((0..n).collect()),
            Some(Subscript::Expr(e)) => {
                let is_boolean = self.subscript_is_boolean(e, ctx);
                if by_boolean != is_boolean {
                    let message = if by_boolean {
                        "this dimension is indexed by `false` and `true`, not by numbers"
                    } else {
                        "a Boolean subscript indexes only a dimension declared by `Boolean`"
                    };
                    return Err(err(e.span, message, "wrong kind of subscript"));
                }
                // false and true are 0 and 1: as indices, 1 and 2.
                let shift = if by_boolean { 1.0 } else { 0.0 };
                let sctx = Ctx {
                    mode: Mode::Constant,
                    end: Some(n),
                    ..*ctx
                };
                let value = self.flatten_expr(e, &sctx)?;
                let as_index =
                    |id: ExprId, pool: &crate::expr::ExprPool| -> Result<usize, Diagnostic> {
                        match pool.as_const(id).map(|i| i + shift) {
                            Some(i) if i.fract() == 0.0 && i >= 1.0 && (i as usize) <= n => {
                                Ok(i as usize - 1)
                            }
                            Some(i) => Err(err(
                                e.span,
                                format!("index {i} is out of range 1..{n}"),
                                "out of range",
                            )),
                            None => Err(err(
                                e.span,
                                "a subscript must be evaluable at translation time",
                                "not constant",
                            )),
                        }
                    };
                match value {
                    Tree::Leaf(id) => Pick::One(as_index(id, &self.dae.pool)?),
                    node => Pick::Many(
                        node.leaves()
                            .into_iter()
                            .map(|id| as_index(id, &self.dae.pool))
                            .collect::<Result<_, _>>()?,
                    ),
                }
            }
        })
    }

    /// Whether a subscript is a Boolean: a literal, `not`, a relation, `and`, `or`, a Boolean
    /// `for` index, or a name or `if` whose type says so (only those are looked up).
    fn subscript_is_boolean(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> bool {
        match &e.kind {
            ExprKind::Bool(_) => true,
            ExprKind::Unary { op, .. } => *op == UnOp::Not,
            ExprKind::Binary { op, .. } => op.gives_boolean(),
            ExprKind::Ref(r) if r.parts.len() == 1 && r.parts[0].subscripts.is_empty() => {
                match ctx.loop_index(&strip_quotes(&r.parts[0].ident.name)) {
                    Some(index) => index.boolean,
                    None => self.symbolic_type(e, ctx) == Some(ScalarType::Boolean),
                }
            }
            ExprKind::Ref(_) | ExprKind::If { .. } => {
                self.symbolic_type(e, ctx) == Some(ScalarType::Boolean)
            }
            _ => false,
        }
    }

    /// A constant or parameter declared in an enclosing class or package (`pi`,
    /// `Lib.Constants.g`), evaluated to its value.
    fn class_constant(&mut self, cref: &'a ComponentRef, ctx: &Ctx<'_>) -> Result<Val, Diagnostic> {
        let (class, k, clause, binding) = match self.class_constant_declaration(cref, ctx)? {
            ClassConstant::Literal(value) => return Ok(value),
            ClassConstant::Declared(found) => found,
        };
        if self.record_class_named(&clause.type_name, class).is_some() {
            return Err(err(
                cref.span,
                format!(
                    "`{}` is a record constant: it is a value only where a record is expected",
                    cref.dotted()
                ),
                "a record",
            ));
        }
        let cctx = Ctx::of_class(class);
        let value = self.flatten_expr(binding, &cctx)?;
        let dims = value.shape();
        let picks = self.picks(&cref.parts[k].subscripts, (&dims, &[]), cref.span, ctx)?;
        let leaves = value.leaves();
        Ok(select(&leaves, &dims, &picks))
    }

    /// The record class `name` resolves to in `scope`, if it is a record.
    pub(crate) fn record_class_named(
        &mut self,
        name: &crate::syntax::ast::Name,
        scope: ClassId,
    ) -> Option<ClassId> {
        match self.tree.resolve(name, scope)? {
            super::classes::TypeRef::Class(c) => {
                let c = self.long_class(c);
                self.is_record(c).then_some(c)
            }
            _ => None,
        }
    }

    /// The declaration of the constant or parameter `cref` names in an enclosing class or
    /// package: the class declaring it, how many of `cref`'s parts name the class, its
    /// clause and binding; or the value of an enumeration literal.
    pub(crate) fn class_constant_declaration(
        &mut self,
        cref: &'a ComponentRef,
        ctx: &Ctx<'_>,
    ) -> Result<ClassConstant<'a>, Diagnostic> {
        let names: Vec<String> = cref
            .parts
            .iter()
            .map(|p| strip_quotes(&p.ident.name).into_owned())
            .collect();
        let unknown = || {
            err(
                cref.span,
                format!("unknown name `{}`", cref.dotted()),
                "not declared",
            )
        };
        // `c` in an enclosing class, or `P.Q.c` with `P.Q` a class.
        let mut candidates: Vec<(ClassId, usize)> = (self.tree.lookup_scopes(ctx.class))
            .into_iter()
            .map(|s| (s, 0))
            .collect();
        for package in self.tree.importing_packages(ctx.class, &names[0]) {
            candidates.push((package, 0));
        }
        for k in 1..names.len() {
            let path: Vec<_> = cref.parts[..k].iter().map(|p| p.ident.clone()).collect();
            let name = crate::syntax::ast::Name {
                global: cref.global,
                parts: path,
                span: cref.span,
            };
            if let Some(super::classes::TypeRef::Class(c)) = self.tree.resolve(&name, ctx.class) {
                candidates.push((c, k));
            }
        }
        if let [first, literal] = names.as_slice()
            && first == "StateSelect"
            && let Some(i) = super::classes::STATE_SELECT
                .iter()
                .position(|l| l == literal)
        {
            return Ok(ClassConstant::Literal(Tree::Leaf(
                self.dae.pool.constant(i as f64 + 1.0),
            )));
        }
        for (class, k) in candidates {
            if k + 1 != names.len() {
                continue;
            }
            let Some(def) = self.tree.node(class).def else {
                continue;
            };
            if let ClassBody::Enumeration { literals, .. } = &def.body
                && let Some(i) = literals
                    .iter()
                    .position(|l| strip_quotes(&l.name) == names[k])
            {
                return Ok(ClassConstant::Literal(Tree::Leaf(
                    self.dae.pool.constant(i as f64 + 1.0),
                )));
            }
            let ClassBody::Long(comp) = &def.body else {
                continue;
            };
            for element in &comp.elements {
                let ElementKind::Component(clause) = &element.kind else {
                    continue;
                };
                let evaluable = matches!(
                    clause.prefixes.variability,
                    Variability::Constant | Variability::Parameter
                );
                for decl in &clause.components {
                    if strip_quotes(&decl.name.name) != names[k] {
                        continue;
                    }
                    if !evaluable {
                        if k == 0 && class != ctx.class {
                            // The nearest enclosing declaration hides any further out.
                            return Err(err(
                                cref.span,
                                format!(
                                    "`{}` is found in the enclosing class `{}`, where it is not a constant: only constants can be used from an enclosing class",
                                    names[0],
                                    self.tree.node(class).path
                                ),
                                "not a constant",
                            )
                            .with_secondary(decl.span, "declared here"));
                        }
                        continue;
                    }
                    if k > 0 && element.visibility == Visibility::Protected {
                        return Err(err(
                            cref.span,
                            format!(
                                "`{}` is protected: it cannot be accessed from outside its class",
                                names[k]
                            ),
                            "protected element",
                        ));
                    }
                    let Some(binding) = decl.modification.as_ref().and_then(|m| m.binding.as_ref())
                    else {
                        return Err(unknown());
                    };
                    return Ok(ClassConstant::Declared((class, k, clause, binding)));
                }
            }
        }
        Err(unknown())
    }

    /// The branches of an if-expression are all Booleans or all numbers (Modelica 3.6.5),
    /// whichever is taken. Only branches that may be no number have their type found.
    fn check_branch_types(
        &mut self,
        branches: &'a [(Expr, Expr)],
        else_branch: &'a Expr,
        ctx: &Ctx<'_>,
    ) -> Result<(), Diagnostic> {
        let values: Vec<&'a Expr> = branches
            .iter()
            .map(|(_, v)| v)
            .chain([else_branch])
            .collect();
        if !values
            .iter()
            .any(|v| super::types::may_be_other_than_number(v))
        {
            return Ok(());
        }
        let mut seen: Option<(bool, &'a Expr)> = None;
        for value in values {
            let boolean = match self.symbolic_type(value, ctx) {
                Some(ScalarType::Boolean) => true,
                Some(ScalarType::Real | ScalarType::Integer) => false,
                _ => continue,
            };
            match seen {
                None => seen = Some((boolean, value)),
                Some((first, other)) if first != boolean => {
                    return Err(err(
                        value.span,
                        "the branches of this if-expression are a Boolean and a number",
                        "of another type than the first branch",
                    )
                    .with_secondary(other.span, "this branch"));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Condition `c` at its parameters' values when it reads Boolean, Integer or enumeration
    /// parameters and constants only.
    fn discrete_parameter_value(&mut self, c: ExprId) -> Option<bool> {
        if self.dae.pool.as_const(c).is_some() {
            return None;
        }
        let mut discrete = true;
        self.dae.pool.visit_leaves(c, |n| match n {
            Node::Const(_) => {}
            Node::Var(v) => {
                let var = self.dae.var(v);
                discrete &= matches!(var.kind, VarKind::Parameter | VarKind::Constant)
                    && var.ty != ScalarType::Real;
            }
            _ => discrete = false,
        });
        if discrete {
            self.parameter_value(c)
        } else {
            None
        }
    }

    /// Whether a value reads an unknown, a derivative or the time.
    fn reads_unknowns(&self, value: &Val) -> bool {
        value.leaves().iter().any(|&e| {
            let mut reads = false;
            self.dae.pool.visit_leaves(e, |n| match n {
                Node::Const(_) => {}
                Node::Var(v) => {
                    reads |= !matches!(self.dae.var(v).kind, VarKind::Parameter | VarKind::Constant)
                }
                _ => reads = true,
            });
            reads
        })
    }

    fn flatten_if(
        &mut self,
        branches: &'a [(Expr, Expr)],
        else_branch: &'a Expr,
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Val, Diagnostic> {
        self.check_branch_types(branches, else_branch, ctx)?;
        // Conditions known at translation time pick a branch without flattening the others.
        let mut pending: Vec<(ExprId, &'a Expr, &'a Expr)> = Vec::new();
        for (cond, value) in branches {
            self.expect_boolean(cond, ctx)?;
            let c = match self.flatten_expr(cond, ctx)? {
                Tree::Leaf(c) => c,
                Tree::Node(_) => {
                    return Err(err(
                        cond.span,
                        "an if-condition must be a scalar",
                        "an array",
                    ));
                }
            };
            // Relations in a function make no events (Modelica 8.5).
            let c = if ctx.locals.is_some() && self.dae.pool.as_const(c).is_none() {
                self.dae.pool.call(Func::NoEvent, c)
            } else {
                c
            };
            match self.dae.pool.as_const(c) {
                Some(x) if x != 0.0 && pending.is_empty() => return self.flatten_expr(value, ctx),
                Some(0.0) => {}
                _ => pending.push((c, cond, value)),
            }
        }
        let mut result = self.flatten_expr(else_branch, ctx)?;
        for (c, cond, value) in pending.into_iter().rev() {
            let v = self.flatten_expr(value, ctx)?;
            // A condition on Boolean or Integer parameters between branches that read unknowns
            // chooses structure, as a size would (`if nonLinearPermeability then … else
            // mu_rConst`): taken at its value, so that the other branch's unknowns are not
            // structurally there. Between values of parameters it stays, as written.
            if v.shape() == result.shape()
                && (self.reads_unknowns(&v) || self.reads_unknowns(&result))
                && let Some(holds) = self.discrete_parameter_value(c)
            {
                if holds {
                    result = v;
                }
                continue;
            }
            if v.shape() != result.shape() {
                // Branches of different sizes need a condition known at translation time
                // (over parameters, at their values).
                let known = Ctx {
                    mode: Mode::Constant,
                    ..*ctx
                };
                if let Ok(x) = self.eval_scalar(cond, &known) {
                    if x != 0.0 {
                        result = v;
                    }
                    continue;
                }
            }
            result = self.zip(
                v,
                result,
                span,
                "the branches of an if-expression have different sizes",
                &mut |p, a, b| p.if_then_else(c, a, b),
            )?;
        }
        Ok(result)
    }

    /// Elementwise combination of two equally shaped values (a scalar broadcasts).
    pub(crate) fn zip(
        &mut self,
        a: Val,
        b: Val,
        span: Span,
        mismatch: &str,
        f: &mut impl FnMut(&mut crate::expr::ExprPool, ExprId, ExprId) -> ExprId,
    ) -> Result<Val, Diagnostic> {
        match (a, b) {
            (Tree::Leaf(x), Tree::Leaf(y)) => Ok(Tree::Leaf(f(&mut self.dae.pool, x, y))),
            (Tree::Node(xs), Tree::Node(ys)) if xs.len() == ys.len() => Ok(Tree::Node(
                xs.into_iter()
                    .zip(ys)
                    .map(|(x, y)| self.zip(x, y, span, mismatch, f))
                    .collect::<Result<_, _>>()?,
            )),
            (Tree::Leaf(x), Tree::Node(ys)) => Ok(Tree::Node(
                ys.into_iter()
                    .map(|y| self.zip(Tree::Leaf(x), y, span, mismatch, f))
                    .collect::<Result<_, _>>()?,
            )),
            (Tree::Node(xs), Tree::Leaf(y)) => Ok(Tree::Node(
                xs.into_iter()
                    .map(|x| self.zip(x, Tree::Leaf(y), span, mismatch, f))
                    .collect::<Result<_, _>>()?,
            )),
            _ => Err(err(span, mismatch.to_string(), "sizes differ")),
        }
    }

    fn binary(&mut self, op: BinOp, a: Val, b: Val, span: Span) -> Result<Val, Diagnostic> {
        let scalar_only = |a: &Val, b: &Val| matches!((a, b), (Tree::Leaf(_), Tree::Leaf(_)));
        let mismatch = "operands have different sizes";
        match op {
            BinOp::Add | BinOp::ElemAdd => {
                self.zip_strict(op, a, b, span, &mut |p, x, y| p.add(x, y))
            }
            BinOp::Sub | BinOp::ElemSub => {
                self.zip_strict(op, a, b, span, &mut |p, x, y| p.sub(x, y))
            }
            BinOp::ElemMul => self.zip(a, b, span, mismatch, &mut |p, x, y| p.mul(x, y)),
            BinOp::ElemDiv => self.zip(a, b, span, mismatch, &mut |p, x, y| p.div(x, y)),
            BinOp::ElemPow => self.zip(a, b, span, mismatch, &mut |p, x, y| p.pow(x, y)),
            BinOp::Mul => self.multiply(a, b, span),
            BinOp::Div => match b {
                Tree::Leaf(_) => self.zip(a, b, span, mismatch, &mut |p, x, y| p.div(x, y)),
                _ => Err(err(
                    span,
                    "division by an array",
                    "divisor must be a scalar",
                )),
            },
            BinOp::Pow if scalar_only(&a, &b) => {
                self.zip(a, b, span, mismatch, &mut |p, x, y| p.pow(x, y))
            }
            BinOp::Pow if matches!(b, Tree::Leaf(_)) => self.matrix_power(a, &b, span),
            BinOp::Pow => Err(err(
                span,
                "`^` needs a scalar exponent (`.^` raises element by element)",
                "an array exponent",
            )),
            BinOp::And
            | BinOp::Or
            | BinOp::Eq
            | BinOp::Ne
            | BinOp::Lt
            | BinOp::Le
            | BinOp::Gt
            | BinOp::Ge => {
                if !scalar_only(&a, &b) {
                    return Err(err(
                        span,
                        format!("`{}` needs scalar operands", op.symbol()),
                        "an array operand",
                    ));
                }
                self.zip(a, b, span, mismatch, &mut |p, x, y| match op {
                    BinOp::And => p.and(x, y),
                    BinOp::Or => p.or(x, y),
                    BinOp::Eq => p.cmp(CmpOp::Eq, x, y),
                    BinOp::Ne => p.cmp(CmpOp::Ne, x, y),
                    BinOp::Lt => p.cmp(CmpOp::Lt, x, y),
                    BinOp::Le => p.cmp(CmpOp::Le, x, y),
                    BinOp::Gt => p.cmp(CmpOp::Gt, x, y),
                    _ => p.cmp(CmpOp::Ge, x, y),
                })
            }
        }
    }

    /// `+`/`-` need equal shapes (no broadcasting of scalars onto arrays, as in Modelica).
    fn zip_strict(
        &mut self,
        op: BinOp,
        a: Val,
        b: Val,
        span: Span,
        f: &mut impl FnMut(&mut crate::expr::ExprPool, ExprId, ExprId) -> ExprId,
    ) -> Result<Val, Diagnostic> {
        let elementwise = matches!(op, BinOp::ElemAdd | BinOp::ElemSub);
        if !elementwise && a.shape() != b.shape() {
            return Err(err(
                span,
                format!(
                    "`{}` of a {:?} and a {:?} array",
                    op.symbol(),
                    a.shape(),
                    b.shape()
                ),
                "sizes differ",
            ));
        }
        self.zip(a, b, span, "operands have different sizes", f)
    }

    /// Scalar × array, vector · vector, matrix × vector, vector × matrix, matrix × matrix.
    pub(crate) fn multiply(&mut self, a: Val, b: Val, span: Span) -> Result<Val, Diagnostic> {
        let (sa, sb) = (a.shape(), b.shape());
        let mismatch = || {
            err(
                span,
                format!("cannot multiply a {sa:?} by a {sb:?} array"),
                "sizes do not fit",
            )
        };
        match (sa.len(), sb.len()) {
            (0, _) | (_, 0) => self.zip(a, b, span, "", &mut |p, x, y| p.mul(x, y)),
            (1, 1) if sa == sb => Ok(Tree::Leaf(self.dot(&a.leaves(), &b.leaves()))),
            (2, 1) if sa[1] == sb[0] => {
                let Tree::Node(rows) = a else {
                    return Err(mismatch());
                };
                let v = b.leaves();
                Ok(Tree::Node(
                    rows.iter()
                        .map(|r| Tree::Leaf(self.dot(&r.leaves(), &v)))
                        .collect(),
                ))
            }
            (1, 2) if sa[0] == sb[0] => {
                let v = a.leaves();
                let cols = transpose(&b);
                Ok(Tree::Node(
                    cols.iter().map(|c| Tree::Leaf(self.dot(&v, c))).collect(),
                ))
            }
            (2, 2) if sa[1] == sb[0] => {
                let Tree::Node(rows) = a else {
                    return Err(mismatch());
                };
                let cols = transpose(&b);
                Ok(Tree::Node(
                    rows.iter()
                        .map(|r| {
                            let r = r.leaves();
                            Tree::Node(cols.iter().map(|c| Tree::Leaf(self.dot(&r, c))).collect())
                        })
                        .collect(),
                ))
            }
            _ => Err(mismatch()),
        }
    }

    fn dot(&mut self, a: &[ExprId], b: &[ExprId]) -> ExprId {
        let p = &mut self.dae.pool;
        let mut acc = p.zero();
        for (&x, &y) in a.iter().zip(b) {
            let term = p.mul(x, y);
            acc = p.add(acc, term);
        }
        acc
    }

    /// A division by a constant zero, or a power of constants with no real value, is a
    /// translation error, not an infinity or NaN discovered during simulation. The IR keeps
    /// such operations unfolded, so the result's leaves show them.
    fn check_arithmetic_domain(
        &self,
        op: BinOp,
        result: &Val,
        span: Span,
    ) -> Result<(), Diagnostic> {
        if !matches!(
            op,
            BinOp::Div | BinOp::ElemDiv | BinOp::Pow | BinOp::ElemPow
        ) {
            return Ok(());
        }
        let pool = &self.dae.pool;
        for leaf in result.leaves() {
            match pool.node(leaf) {
                Node::Div(_, divisor) if pool.as_const(divisor) == Some(0.0) => {
                    return Err(err(span, "division by zero", "the divisor is zero"));
                }
                Node::Pow(base, exponent) => {
                    let (Some(x), Some(y)) = (pool.as_const(base), pool.as_const(exponent)) else {
                        continue;
                    };
                    if x == 0.0 && y < 0.0 {
                        return Err(err(
                            span,
                            format!("`0^{y}` is a division by zero"),
                            "zero to a negative power",
                        ));
                    }
                    if x < 0.0 && y.fract() != 0.0 {
                        return Err(err(
                            span,
                            format!("`({x})^{y}` has no real value"),
                            "a negative number to a non-integer power",
                        ));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A constant argument outside a function's domain is a translation error (Modelica
    /// 3.7.1.2), not a NaN discovered during simulation.
    fn check_domain(&self, f: Func, arg: &Val, span: Span) -> Result<(), Diagnostic> {
        for x in arg.leaves() {
            if let Some(v) = self.dae.pool.as_const(x)
                && let Some(why) = f.domain_error(v)
            {
                return Err(err(
                    span,
                    format!("`{}({v})`: `{}` {why}", f.name(), f.name()),
                    "argument outside the domain",
                ));
            }
        }
        Ok(())
    }

    /// The builtin a library function stands for: `Modelica.Math.sin` (however it is named
    /// where it is called: `Math.sin`, `M.Math.sin`) is a wrapper of the builtin `sin`
    /// (`external "builtin"`). A one-part name (`sin` after an import) is the builtin by its
    /// name already, so only dotted names are looked up (not every `der` of a big model).
    fn builtin_behind(&self, func: &ComponentRef, ctx: &Ctx<'_>) -> Option<String> {
        const WRAPPED: [&str; 13] = [
            "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp",
            "log", "log10",
        ];
        if func.parts.len() < 2 {
            return None;
        }
        let name = crate::syntax::ast::Name {
            global: func.global,
            parts: func.parts.iter().map(|p| p.ident.clone()).collect(),
            span: func.span,
        };
        let super::classes::TypeRef::Class(class) = self.tree.resolve(&name, ctx.class)? else {
            return None;
        };
        let path = &self.tree.node(class).path;
        let short = path.strip_prefix("Modelica.Math.")?;
        WRAPPED.contains(&short).then(|| short.to_string())
    }

    fn flatten_call(
        &mut self,
        func: &'a ComponentRef,
        args: &'a [Arg],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Val, Diagnostic> {
        let name = self
            .builtin_behind(func, ctx)
            .unwrap_or_else(|| func.dotted());
        let positional: Vec<&'a Expr> = args
            .iter()
            .filter(|a| a.name.is_none())
            .map(|a| &a.value)
            .collect();
        let arity = |n: usize| -> Result<(), Diagnostic> {
            if positional.len() == n && positional.len() == args.len() {
                Ok(())
            } else {
                Err(wrong_arity(&name, &n.to_string(), args.len(), span))
            }
        };
        if let Some(f) = Func::from_name(&name) {
            arity(1)?;
            if self.static_type(positional[0], ctx) == Some(ScalarType::Boolean) {
                return Err(err(
                    positional[0].span,
                    format!("`{name}` needs a number, not a Boolean"),
                    "a Boolean",
                ));
            }
            let a = self.flatten_expr(positional[0], ctx)?;
            self.check_domain(f, &a, positional[0].span)?;
            return Ok(self.map1(&a, |p, x| p.call(f, x)));
        }
        if let Some(clocked) = self.clock_call(&name, (&positional, args), span, ctx) {
            return clocked;
        }
        if let Some(hybrid) = self.hybrid_call(&name, &positional, span, ctx) {
            return hybrid;
        }
        match name.as_str() {
            "der" => {
                arity(1)?;
                if ctx.mode == Mode::Constant {
                    return Err(err(
                        span,
                        "`der` is not known at translation time",
                        "not a constant",
                    ));
                }
                if let Some(t) = self.static_type(positional[0], ctx)
                    && t != ScalarType::Real
                {
                    return Err(err(
                        positional[0].span,
                        format!("`der` needs a Real argument, not {}", t.name()),
                        "not Real",
                    ));
                }
                let a = self.flatten_expr(positional[0], ctx)?;
                a.map(&mut |&x| self.time_derivative(x, positional[0].span))
            }
            "last" => {
                arity(1)?;
                let a = self.flatten_expr(positional[0], ctx)?;
                a.map(&mut |&x| match self.dae.pool.node(x) {
                    crate::expr::Node::Var(v) => Ok(self.dae.pool.last(v)),
                    _ => Err(err(
                        positional[0].span,
                        "`last` (a weak read) takes a variable",
                        "not a variable",
                    )),
                })
            }
            "noEvent" | "smooth" => {
                // `smooth(p, e)` allows `e` not to make events: mocca takes it at its word.
                arity(if name == "smooth" { 2 } else { 1 })?;
                let a = self.flatten_expr(positional[positional.len() - 1], ctx)?;
                Ok(self.map1(&a, |p, x| p.call(Func::NoEvent, x)))
            }
            "min" | "max" if args.len() != 1 && args.len() != 2 => {
                Err(wrong_arity(&name, "1 or 2", args.len(), span))
            }
            "atan2" | "min" | "max" if name == "atan2" || positional.len() == 2 => {
                arity(2)?;
                let f = match name.as_str() {
                    "atan2" => Func2::Atan2,
                    "min" => Func2::Min,
                    _ => Func2::Max,
                };
                let a = self.flatten_expr(positional[0], ctx)?;
                let b = self.flatten_expr(positional[1], ctx)?;
                self.zip(
                    a,
                    b,
                    span,
                    "arguments have different sizes",
                    &mut |p, x, y| p.call2(f, x, y),
                )
            }
            "min" | "max" | "sum" | "product" => {
                arity(1)?;
                let leaves = self.flatten_expr(positional[0], ctx)?.leaves();
                let Some((&first, rest)) = leaves.split_first() else {
                    let ty = self.static_type(positional[0], ctx);
                    let empty = empty_reduction(name.as_str(), ty);
                    return Ok(Tree::Leaf(self.dae.pool.constant(empty)));
                };
                let p = &mut self.dae.pool;
                Ok(Tree::Leaf(rest.iter().fold(
                    first,
                    |acc, &x| match name.as_str() {
                        "min" => p.call2(Func2::Min, acc, x),
                        "max" => p.call2(Func2::Max, acc, x),
                        "sum" => p.add(acc, x),
                        _ => p.mul(acc, x),
                    },
                )))
            }
            "size" => {
                // A size does not depend on the values: a function's variables need not be
                // known at translation time to have one.
                let a = self.flatten_expr(
                    positional
                        .first()
                        .ok_or_else(|| err(span, "`size` needs an array", "missing argument"))?,
                    &Ctx {
                        mode: Mode::Symbolic,
                        ..*ctx
                    },
                )?;
                let shape = a.shape();
                match positional.get(1) {
                    Some(k) => {
                        let k = self.eval_scalar(k, ctx)?;
                        let n = shape
                            .get((k as usize).wrapping_sub(1))
                            .ok_or_else(|| err(span, "no such dimension", "bad dimension"))?;
                        Ok(Tree::Leaf(self.dae.pool.constant(*n as f64)))
                    }
                    None => Ok(Tree::Node(
                        shape
                            .iter()
                            .map(|&n| Tree::Leaf(self.dae.pool.constant(n as f64)))
                            .collect(),
                    )),
                }
            }
            "ndims" => {
                arity(1)?;
                let n = self.flatten_expr(positional[0], ctx)?.shape().len();
                Ok(Tree::Leaf(self.dae.pool.constant(n as f64)))
            }
            "zeros" | "ones" | "fill" => {
                let (value, dims_from) = match name.as_str() {
                    "zeros" => (Tree::Leaf(self.dae.pool.zero()), 0),
                    "ones" => (Tree::Leaf(self.dae.pool.one()), 0),
                    _ => {
                        let v = self.flatten_expr(
                            positional.first().ok_or_else(|| {
                                err(span, "`fill` needs a value", "missing argument")
                            })?,
                            ctx,
                        )?;
                        (v, 1)
                    }
                };
                let mut dims = Vec::new();
                for d in &positional[dims_from..] {
                    let n = self.eval_scalar(d, ctx)?;
                    dims.push(n.max(0.0) as usize);
                }
                let count = element_count(&dims) as f64;
                if count > self.max_size as f64 {
                    return Err(too_large(count, self.max_size, span));
                }
                Ok(dims
                    .iter()
                    .rev()
                    .fold(value, |inner, &n| Tree::Node(vec![inner; n])))
            }
            "cat" => {
                let (dim, parts) = positional
                    .split_first()
                    .ok_or_else(|| err(span, "`cat` needs a dimension", "missing argument"))?;
                let dim = self.eval_scalar(dim, ctx)?;
                let parts = parts
                    .iter()
                    .map(|p| self.flatten_expr(p, ctx))
                    .collect::<Result<Vec<_>, _>>()?;
                super::tree::concatenate(parts, dim.max(1.0) as usize).ok_or_else(|| {
                    err(
                        span,
                        "the arrays of `cat` do not fit along the other dimensions",
                        "here",
                    )
                })
            }
            "identity" => {
                arity(1)?;
                let n = self.eval_scalar(positional[0], ctx)?.max(0.0) as usize;
                let count = element_count(&[n, n]) as f64;
                if count > self.max_size as f64 {
                    return Err(too_large(count, self.max_size, span));
                }
                let (zero, one) = (self.dae.pool.zero(), self.dae.pool.one());
                Ok(Tree::Node(
                    (0..n)
                        .map(|i| {
                            Tree::Node(
                                (0..n)
                                    .map(|j| Tree::Leaf(if i == j { one } else { zero }))
                                    .collect(),
                            )
                        })
                        .collect(),
                ))
            }
            // An enumeration's value is its ordinal already (Modelica 4.9.5).
            "Integer" => {
                arity(1)?;
                if let Some(ScalarType::Real | ScalarType::Boolean | ScalarType::String) =
                    self.static_type(positional[0], ctx)
                {
                    return Err(err(
                        positional[0].span,
                        "`Integer(e)` takes an enumeration value",
                        "not an enumeration",
                    ));
                }
                self.flatten_expr(positional[0], ctx)
            }
            "integer" | "floor" | "ceil" => {
                arity(1)?;
                let f = if name == "ceil" {
                    Func::Ceil
                } else {
                    Func::Floor
                };
                let a = self.flatten_expr(positional[0], ctx)?;
                Ok(self.map1(&a, |p, x| p.call(f, x)))
            }
            "mod" | "rem" | "div" => {
                arity(2)?;
                let a = self.flatten_expr(positional[0], ctx)?;
                let b = self.flatten_expr(positional[1], ctx)?;
                if let Tree::Leaf(y) = b
                    && self.dae.pool.as_const(y) == Some(0.0)
                {
                    return Err(err(
                        positional[1].span,
                        format!("`{name}` by zero"),
                        "the divisor is zero",
                    ));
                }
                self.zip(
                    a,
                    b,
                    span,
                    "arguments have different sizes",
                    &mut |p, x, y| {
                        let q = p.div(x, y);
                        let whole = match name.as_str() {
                            "mod" => p.call(Func::Floor, q),
                            _ => p.call(Func::Trunc, q),
                        };
                        if name == "div" {
                            return whole;
                        }
                        // x − ⌊x / y⌋·y (`mod`) or x − div(x, y)·y (`rem`).
                        let taken = p.mul(whole, y);
                        p.sub(x, taken)
                    },
                )
            }
            "reinit" => Err(Self::reinit_outside_when(span)),
            "homotopy" => {
                let argument = |name: &str, k: usize| {
                    args.iter()
                        .find(|a| a.name.as_ref().is_some_and(|n| n.name == name))
                        .map(|a| &a.value)
                        .or(positional.get(k).copied())
                };
                let missing = |what: &str| {
                    err(
                        span,
                        format!("`homotopy` needs its {what} expression"),
                        "missing argument",
                    )
                };
                let actual = argument("actual", 0).ok_or_else(|| missing("actual"))?;
                let simplified = argument("simplified", 1).ok_or_else(|| missing("simplified"))?;
                let (actual, simplified) = (
                    self.flatten_expr(actual, ctx)?,
                    self.flatten_expr(simplified, ctx)?,
                );
                if actual.shape() != simplified.shape() {
                    return Err(err(
                        span,
                        "`homotopy` needs its actual and simplified expressions of one size",
                        "sizes differ",
                    ));
                }
                // Element by element.
                let mut simplified = simplified.leaves().into_iter();
                actual.map(&mut |&a| {
                    let s = simplified.next().expect("shapes are equal");
                    Ok(self.dae.pool.call2(Func2::Homotopy, a, s))
                })
            }
            "semiLinear" => {
                // `smooth(0, if x >= 0 then x*positive else x*negative)` (Modelica 3.7.4.6).
                arity(3)?;
                let mut parts = Vec::with_capacity(3);
                for arg in &positional {
                    match self.flatten_expr(arg, ctx)? {
                        Tree::Leaf(id) => parts.push(id),
                        Tree::Node(_) => {
                            return Err(err(arg.span, "`semiLinear` takes scalars", "an array"));
                        }
                    }
                }
                let p = &mut self.dae.pool;
                let (x, positive, negative) = (parts[0], parts[1], parts[2]);
                let zero = p.zero();
                let ahead = p.cmp(CmpOp::Ge, x, zero);
                let (up, down) = (p.mul(x, positive), p.mul(x, negative));
                let value = p.if_then_else(ahead, up, down);
                Ok(Tree::Leaf(p.call(Func::NoEvent, value)))
            }
            "delay" | "cardinality" => Err(err(
                func.span,
                format!("`{name}` is not supported"),
                "outside mocca's subset",
            )),
            n if Self::is_array_function(n) => {
                if positional.len() != args.len() {
                    return Err(err(span, format!("`{n}` takes no named arguments"), "here"));
                }
                self.array_function(n, &positional, span, ctx)
            }
            _ => match self.function_class(func, ctx) {
                Some(class) => {
                    let mut outputs = self.call_function(class, args, span, ctx)?;
                    if outputs.is_empty() {
                        return Err(err(span, format!("`{name}` has no output"), "no value"));
                    }
                    Ok(outputs.swap_remove(0))
                }
                None => Err(err(
                    func.span,
                    format!("unknown function `{name}`"),
                    "not a function",
                )),
            },
        }
    }
}

impl Flattener<'_> {
    /// `der(e)` by the chain rule: `Σ ∂e/∂v · der(v)` over the time-varying variables of `e`,
    /// plus `∂e/∂time`. A parameter does not change in time (Modelica 3.7.4.2).
    fn time_derivative(&mut self, e: ExprId, span: Span) -> Result<ExprId, Diagnostic> {
        // `time` itself is not a visited leaf; its partial folds to zero when absent.
        let mut leaves = vec![Node::Time];
        let mut nested = false;
        self.dae.pool.visit_leaves(e, |n| match n {
            Node::Var(_) => leaves.push(n),
            Node::Der(_) | Node::Last(_) => nested = true,
            _ => {}
        });
        if nested {
            return Err(err(
                span,
                "`der` of an expression holding `der` or `last` is not supported",
                "here",
            ));
        }
        let mut total = self.dae.pool.zero();
        for leaf in leaves {
            let rate = match leaf {
                Node::Var(v)
                    if matches!(self.dae.var(v).kind, VarKind::Parameter | VarKind::Constant) =>
                {
                    continue;
                }
                Node::Var(v) => self.dae.pool.der(v),
                _ => self.dae.pool.one(),
            };
            let partial = self.dae.pool.diff(e, leaf);
            let term = self.dae.pool.mul(partial, rate);
            total = self.dae.pool.add(total, term);
        }
        Ok(total)
    }
}

/// An array of `count` elements where at most `max_size` are allowed.
pub(crate) fn too_large(count: f64, max_size: usize, span: Span) -> Diagnostic {
    err(
        span,
        format!("this array would have {count} elements, more than the limit of {max_size}"),
        "too large",
    )
    .with_note("`--max-size N` raises the limit")
}

/// `name` called with `given` arguments where it takes `takes`.
fn wrong_arity(name: &str, takes: &str, given: usize, span: Span) -> Diagnostic {
    let plural = if takes == "1" { "" } else { "s" };
    err(
        span,
        format!("`{name}` takes {takes} argument{plural}, {given} given"),
        "wrong number of arguments",
    )
}

/// Picks elements of a row-major array by per-dimension selections.
pub(crate) fn select<T: Clone>(items: &[T], dims: &[usize], picks: &[Pick]) -> Tree<T> {
    fn go<T: Clone>(items: &[T], dims: &[usize], picks: &[Pick]) -> Tree<T> {
        match (dims.split_first(), picks.split_first()) {
            (None, _) | (_, None) => Tree::Leaf(items[0].clone()),
            (Some((_, rest_dims)), Some((pick, rest_picks))) => {
                let stride: usize = rest_dims.iter().product();
                let sub =
                    |i: usize| go(&items[i * stride..(i + 1) * stride], rest_dims, rest_picks);
                match pick {
                    Pick::One(i) => sub(*i),
                    Pick::Many(is) => Tree::Node(is.iter().map(|&i| sub(i)).collect()),
                }
            }
        }
    }
    if items.is_empty() {
        return Tree::Node(Vec::new());
    }
    go(items, dims, picks)
}

/// What a reference selects from an element: copies of the chosen entries only, so a scalar
/// reference allocates nothing.
/// What a name of a constant in an enclosing class or package is.
pub(crate) enum ClassConstant<'a> {
    /// An enumeration literal (or `StateSelect`'s), by its value.
    Literal(Val),
    /// A declared constant or parameter: the class declaring it, how many of the name's
    /// parts name that class, its clause and its binding.
    Declared((ClassId, usize, &'a ComponentClause, &'a Expr)),
}

pub(crate) enum Selected {
    Pending,
    Disabled,
    Vars(Tree<VarId>),
    Insts(Tree<InstId>),
}

impl Content {
    pub(crate) fn select(&self, dims: &[usize], picks: &[Pick]) -> Selected {
        match self {
            Content::Pending => Selected::Pending,
            Content::Disabled => Selected::Disabled,
            Content::Vars(vars) => Selected::Vars(select(vars, dims, picks)),
            Content::Insts(ids) => Selected::Insts(select(ids, dims, picks)),
        }
    }
}

impl Flattener<'_> {
    /// The content of element number `slot` of an instance.
    pub(crate) fn element_content(&self, inst: InstId, slot: usize) -> &Content {
        &self.insts[inst.0 as usize].elements[slot].content
    }
}

/// Replaces each leaf (itself a tree) by its subtree.
/// `if cond then a else b` element by element of two arrays of one shape (`None` when their
/// shapes differ).
/// `0.0 / 0.0`, real literals: NaN as a flat model writes it (an index out of range's
/// value), not a division by zero written by mistake (`0/0`, `x / 0`).
fn is_written_nan(op: BinOp, lhs: &Expr, rhs: &Expr) -> bool {
    let zero = |e: &Expr| matches!(e.kind, ExprKind::Real(v) if v == 0.0);
    op == BinOp::Div && zero(lhs) && zero(rhs)
}

fn choose_elementwise(
    pool: &mut crate::expr::ExprPool,
    cond: ExprId,
    a: Tree<ExprId>,
    b: Tree<ExprId>,
) -> Option<Tree<ExprId>> {
    match (a, b) {
        (Tree::Leaf(x), Tree::Leaf(y)) => Some(Tree::Leaf(pool.if_then_else(cond, x, y))),
        (Tree::Node(xs), Tree::Node(ys)) if xs.len() == ys.len() => xs
            .into_iter()
            .zip(ys)
            .map(|(x, y)| choose_elementwise(pool, cond, x, y))
            .collect::<Option<_>>()
            .map(Tree::Node),
        _ => None,
    }
}

pub(crate) fn graft<T: Clone>(t: Tree<Tree<T>>) -> Tree<T> {
    match t {
        Tree::Leaf(inner) => inner,
        Tree::Node(kids) => Tree::Node(kids.into_iter().map(graft).collect()),
    }
}

fn transpose(m: &Val) -> Vec<Vec<ExprId>> {
    let Tree::Node(rows) = m else {
        return Vec::new();
    };
    let rows: Vec<Vec<ExprId>> = rows.iter().map(|r| r.leaves()).collect();
    let n = rows.first().map_or(0, Vec::len);
    (0..n)
        .map(|j| rows.iter().map(|r| r[j]).collect())
        .collect()
}

fn range(
    start: f64,
    step: f64,
    stop: f64,
    max_size: usize,
    span: Span,
) -> Result<Vec<f64>, Diagnostic> {
    if step == 0.0 {
        return Err(err(span, "a range with step 0", "step must not be 0"));
    }
    let count = ((stop - start) / step + 1e-9).floor() + 1.0;
    if count > max_size as f64 {
        return Err(too_large(count, max_size, span));
    }
    Ok((0..count.max(0.0) as usize)
        .map(|k| start + k as f64 * step)
        .collect())
}

/// The value of the reduction `name` (`sum`, `product`, `min`, `max`) of no elements of type
/// `ty` (Modelica 10.3.4.1): 0, 1, the greatest value of the type, the least.
fn empty_reduction(name: &str, ty: Option<ScalarType>) -> f64 {
    // A Modelica Integer is 32 bits (Modelica.Constants.Integer_inf).
    let greatest = match ty {
        Some(ScalarType::Boolean) => 1.0,
        Some(ScalarType::Integer) => f64::from(i32::MAX),
        _ => f64::MAX,
    };
    match name {
        "sum" => 0.0,
        "product" => 1.0,
        "min" => greatest,
        _ if ty == Some(ScalarType::Boolean) => 0.0,
        _ => -greatest,
    }
}
