//! Equations of every instance, scalarised: for-loops unrolled, if-equations with
//! translation-time conditions resolved (others become residual if-expressions), array
//! equations split into scalar ones, each with its additive terms.

use smallvec::SmallVec;

use super::Flattener;
use super::classes::ClassId;
use super::connect::Connection;
use super::expr::{Ctx, Mode, Val};
use super::function::Output;
use super::instance::InstId;
use super::tree::Tree;
use crate::dae::{Assertion, Equation, EquationOrigin, ScalarType, Term};
use crate::diagnostics::Diagnostic;
use crate::expr::{ExprId, Func, Node};
use crate::source::Span;
use crate::syntax::ast::{self, BinOp, EquationKind, Expr, ExprKind, UnOp};

/// Where the equations of one section go.
pub(crate) struct Sink {
    pub equations: Vec<Equation>,
    pub initial: bool,
}

impl<'a> Flattener<'a> {
    pub(crate) fn flatten_equations(
        &mut self,
        inst: InstId,
        eqs: &[(&'a ast::Equation, ClassId)],
        sink: &mut Sink,
    ) {
        for &(eq, class) in eqs {
            let ctx = Ctx {
                inst: Some(inst),
                class,
                loops: &[],
                mode: Mode::Symbolic,
                end: None,
                locals: None,
            };
            if let Err(d) = self.equation(eq, &ctx, sink) {
                self.diags.push(d);
            }
        }
    }

    fn equation(
        &mut self,
        eq: &'a ast::Equation,
        ctx: &Ctx<'_>,
        sink: &mut Sink,
    ) -> Result<(), Diagnostic> {
        match &eq.kind {
            EquationKind::Simple { lhs, rhs } => self.simple(eq, lhs, rhs, ctx, sink),
            EquationKind::For { indices, body } => self.for_loop(indices, body, ctx, sink),
            EquationKind::If {
                branches,
                else_branch,
            } => self.if_equation(eq, branches, else_branch, ctx, sink),
            EquationKind::Connect { a, b } => {
                if sink.initial {
                    return Err(Diagnostic::error(
                        "`connect` is not allowed in an initial equation section",
                    )
                    .at(eq.span, "here"));
                }
                let inst = ctx.inst.expect("equations belong to an instance");
                // A connection to a disabled conditional component vanishes with it.
                if self.names_disabled(inst, &a.cref) || self.names_disabled(inst, &b.cref) {
                    return Ok(());
                }
                let a = self.connect_side(inst, a, ctx)?;
                let b = self.connect_side(inst, b, ctx)?;
                if a.shape() != b.shape() {
                    return Err(Diagnostic::error(format!(
                        "connected arrays differ in size: {:?} and {:?}",
                        a.shape(),
                        b.shape()
                    ))
                    .at(eq.span, "sizes differ"));
                }
                let at_root = self.insts[inst.0 as usize].prefix.is_empty();
                if let (Tree::Leaf(x), Tree::Leaf(y)) = (&a, &b) {
                    // The usual case, two scalar connectors: no lists to build.
                    self.connections.push(Connection {
                        a: x.clone(),
                        b: y.clone(),
                        span: eq.span,
                        at_root,
                    });
                    return Ok(());
                }
                for (x, y) in a.leaves().into_iter().zip(b.leaves()) {
                    self.connections.push(Connection {
                        a: x,
                        b: y,
                        span: eq.span,
                        at_root,
                    });
                }
                Ok(())
            }
            EquationKind::When { branches } => self.when_equation(eq, branches, ctx, sink),
            EquationKind::Call { name, args } if name.dotted() == "reinit" => {
                Err(Self::reinit_outside_when(eq.span))
            }
            EquationKind::Call { name, args } => self.call_equation(eq.span, name, args, ctx),
            EquationKind::Algorithm(body) => self.algorithm(eq, body, ctx, sink),
            EquationKind::Unsupported => Ok(()),
        }
    }

    /// A Boolean side equated with a number is an error (Modelica 8.3.1: the two sides of an
    /// equation have compatible types), told from the flattened sides: a Boolean variable,
    /// a relation or `and`/`or`/`not` is a Boolean; a Real or Integer variable, `der`,
    /// `time` or arithmetic a number; a constant or an `if` either.
    fn check_equation_types(&self, lhs: &Val, rhs: &Val, span: Span) -> Result<(), Diagnostic> {
        let kind = |v: &Val| -> Option<bool> {
            let Tree::Leaf(id) = v else { return None };
            match self.dae.pool.node(*id) {
                Node::Var(v) => match self.dae.var(v).ty {
                    ScalarType::Boolean => Some(true),
                    ScalarType::Real | ScalarType::Integer => Some(false),
                    ScalarType::String => None,
                },
                Node::Cmp(..) | Node::And(..) | Node::Or(..) | Node::Not(_) => Some(true),
                Node::Const(_) | Node::If(..) | Node::Call(Func::NoEvent, _) => None,
                _ => Some(false),
            }
        };
        match (kind(lhs), kind(rhs)) {
            (Some(a), Some(b)) if a != b => Err(Diagnostic::error(
                "the two sides of this equation are a Boolean and a number",
            )
            .at(span, "sides of different types")),
            _ => Ok(()),
        }
    }

    pub(super) fn simple(
        &mut self,
        eq: &'a ast::Equation,
        lhs: &'a Expr,
        rhs: &'a Expr,
        ctx: &Ctx<'_>,
        sink: &mut Sink,
    ) -> Result<(), Diagnostic> {
        if let ExprKind::Tuple(targets) = &lhs.kind {
            return self.outputs_equation(eq, targets, rhs, ctx, sink);
        }
        if let Some(class) = self.record_equation_class(lhs, rhs, ctx) {
            let inst = ctx.inst.expect("instance");
            let component = self.insts[inst.0 as usize].owner.clone();
            let place = (eq.span, component);
            let equations = self.record_equation((lhs, rhs), class, place, ctx)?;
            sink.equations.extend(equations);
            return Ok(());
        }
        let mut lhs_terms = Terms::new();
        split_terms(lhs, 1.0, &mut lhs_terms);
        let mut rhs_terms = Terms::new();
        split_terms(rhs, -1.0, &mut rhs_terms);
        let mut flat: SmallVec<[(f64, Span, Val); 4]> = SmallVec::new();
        for (sign, term) in lhs_terms.iter().chain(&rhs_terms) {
            let value = self.flatten_expr(term, ctx)?;
            if lhs_terms.len() > 1 || rhs_terms.len() > 1 {
                self.check_additive_term(term, &value)?;
            }
            flat.push((*sign, term.span, value));
        }
        if let [(_, _, a), (_, _, b)] = flat.as_slice()
            && lhs_terms.len() == 1
        {
            self.check_equation_types(a, b, eq.span)?;
        }
        let shape = flat[0].2.shape();
        let lhs_shape = flat
            .iter()
            .take(lhs_terms.len())
            .map(|t| t.2.shape())
            .find(|s| !s.is_empty())
            .unwrap_or_default();
        let rhs_shape = flat
            .iter()
            .skip(lhs_terms.len())
            .map(|t| t.2.shape())
            .find(|s| !s.is_empty())
            .unwrap_or_default();
        let shape = if shape.is_empty() {
            lhs_shape.clone().max(rhs_shape.clone())
        } else {
            shape
        };
        let incompatible = flat
            .iter()
            .any(|t| !t.2.shape().is_empty() && t.2.shape() != shape)
            || (lhs_shape != rhs_shape && !lhs_shape.is_empty() && !rhs_shape.is_empty());
        if incompatible
            || (lhs_shape.is_empty() != rhs_shape.is_empty()
                && !(is_zero_literal(lhs) || is_zero_literal(rhs)))
        {
            return Err(Diagnostic::error(format!(
                "the two sides of this equation differ in size: {lhs_shape:?} and {rhs_shape:?}"
            ))
            .at(eq.span, "sizes differ"));
        }
        let count: usize = shape.iter().product();
        let component = self.insts[ctx.inst.expect("instance").0 as usize]
            .owner
            .clone();
        let n_lhs = lhs_terms.len();
        // Each term's elements listed once: picking element k out of the tree for every k
        // would cost the array's size each time.
        let elements: SmallVec<[Vec<ExprId>; 4]> = flat.iter().map(|t| t.2.leaves()).collect();
        for k in 0..count {
            let mut terms = Vec::with_capacity(flat.len());
            let (mut l, mut r) = (self.dae.pool.zero(), self.dae.pool.zero());
            for (i, ((sign, span, _), values)) in flat.iter().zip(&elements).enumerate() {
                let expr = element(values, k);
                terms.push(Term {
                    expr,
                    sign: *sign,
                    span: *span,
                });
                // Each side is rebuilt as written: its terms with their signs within that side.
                let (acc, within_side) = if i < n_lhs {
                    (&mut l, *sign)
                } else {
                    (&mut r, -*sign)
                };
                let p = &mut self.dae.pool;
                *acc = if within_side > 0.0 {
                    p.add(*acc, expr)
                } else {
                    p.sub(*acc, expr)
                };
            }
            let residual = self.dae.pool.sub(l, r);
            sink.equations.push(Equation {
                lhs: l,
                rhs: r,
                residual,
                terms,
                origin: EquationOrigin::Model,
                span: eq.span,
                component: component.clone(),
            });
        }
        Ok(())
    }

    /// `(a, , c) = f(x)`: one equation per element of each output given a target.
    fn outputs_equation(
        &mut self,
        eq: &'a ast::Equation,
        targets: &'a [Option<Expr>],
        call: &'a Expr,
        ctx: &Ctx<'_>,
        sink: &mut Sink,
    ) -> Result<(), Diagnostic> {
        let outputs = self.call_outputs_with_records(call, ctx)?;
        super::function::check_targets(targets.len(), outputs.len(), eq.span)?;
        let component = self.insts[ctx.inst.expect("instance").0 as usize]
            .owner
            .clone();
        for (target, output) in targets.iter().zip(outputs) {
            let Some(target) = target else {
                continue;
            };
            let value = match output {
                Output::Value(value) => value,
                Output::Record(value) => {
                    let ExprKind::Ref(cref) = &target.kind else {
                        return Err(Diagnostic::error(
                            "this output is a record: its target must name a record",
                        )
                        .at(target.span, "not a record"));
                    };
                    let place = (eq.span, component.clone());
                    let equations = self.record_value_equations(cref, value, place, ctx)?;
                    sink.equations.extend(equations);
                    continue;
                }
            };
            let lhs = self.flatten_expr(target, ctx)?.leaves();
            let rhs = value.leaves();
            if lhs.len() != rhs.len() {
                return Err(Diagnostic::error(format!(
                    "the output has {} elements and its target {}",
                    rhs.len(),
                    lhs.len()
                ))
                .at(target.span, "sizes differ"));
            }
            for (l, r) in lhs.into_iter().zip(rhs) {
                let place = (eq.span, component.clone());
                let equation =
                    Equation::between(&mut self.dae.pool, l, r, EquationOrigin::Model, place);
                sink.equations.push(equation);
            }
        }
        Ok(())
    }

    fn for_loop(
        &mut self,
        indices: &'a [ast::ForIndex],
        body: &'a [ast::Equation],
        ctx: &Ctx<'_>,
        sink: &mut Sink,
    ) -> Result<(), Diagnostic> {
        let Some((first, rest)) = indices.split_first() else {
            for eq in body {
                if let Err(d) = self.equation(eq, ctx, sink) {
                    self.diags.push(d);
                }
            }
            return Ok(());
        };
        let range = match &first.range {
            Some(range) => self.range_values(range, ctx)?,
            None => self.implicit_range(first, body, ctx)?,
        };
        self.each_index_value(first, range, ctx, |f, inner| {
            f.for_loop(rest, body, inner, sink)
        })
    }

    /// Runs `body` once per value of `index`'s range, the index bound to it.
    pub(super) fn each_index_value(
        &mut self,
        index: &ast::ForIndex,
        (values, boolean): (Vec<f64>, bool),
        ctx: &Ctx<'_>,
        mut body: impl FnMut(&mut Self, &Ctx<'_>) -> Result<(), Diagnostic>,
    ) -> Result<(), Diagnostic> {
        let name = super::instance::strip_quotes(&index.name.name);
        for value in values {
            let loops = ctx.loops_with(&name, value, boolean);
            let inner = Ctx {
                loops: &loops,
                ..*ctx
            };
            body(self, &inner)?;
        }
        Ok(())
    }

    /// The values of an explicit for-loop range, known at translation time, and whether they
    /// are Booleans (`false:true`, `{true, false}`, the type `Boolean` itself).
    pub(crate) fn range_values(
        &mut self,
        range: &'a Expr,
        ctx: &Ctx<'_>,
    ) -> Result<(Vec<f64>, bool), Diagnostic> {
        if self.names_boolean_type(range, ctx.class) {
            return Ok((vec![0.0, 1.0], true));
        }
        let first = match &range.kind {
            ExprKind::Range { start, .. } => Some(&**start),
            ExprKind::Array(items) => items.first(),
            _ => None,
        };
        let boolean =
            first.is_some_and(|e| self.symbolic_type(e, ctx) == Some(ScalarType::Boolean));
        let values = match self.flatten_expr(
            range,
            &Ctx {
                mode: Mode::Constant,
                ..*ctx
            },
        )? {
            Tree::Node(items) => items
                .into_iter()
                .map(|i| match i {
                    Tree::Leaf(id) => self.dae.pool.as_const(id),
                    Tree::Node(_) => None,
                })
                .collect::<Option<Vec<f64>>>(),
            Tree::Leaf(_) => None,
        }
        .ok_or_else(|| {
            Diagnostic::error("a for-loop range must be a vector known at translation time")
                .at(range.span, "not a constant vector")
        })?;
        Ok((values, boolean))
    }

    fn if_equation(
        &mut self,
        eq: &'a ast::Equation,
        branches: &'a [(Expr, Vec<ast::Equation>)],
        else_branch: &'a [ast::Equation],
        ctx: &Ctx<'_>,
        sink: &mut Sink,
    ) -> Result<(), Diagnostic> {
        let mut dynamic: Vec<(ExprId, &'a [ast::Equation])> = Vec::new();
        for (cond, body) in branches {
            self.expect_boolean(cond, ctx)?;
            match self.known_condition(cond, ctx) {
                Some(true) if dynamic.is_empty() => {
                    return self.equations_into(body, ctx, sink);
                }
                Some(false) => {}
                _ => {
                    let c = match self.flatten_expr(cond, ctx)? {
                        Tree::Leaf(c) => c,
                        Tree::Node(_) => {
                            return Err(Diagnostic::error("an if-condition must be a scalar")
                                .at(cond.span, "an array"));
                        }
                    };
                    dynamic.push((c, body));
                }
            }
        }
        if dynamic.is_empty() {
            return self.equations_into(else_branch, ctx, sink);
        }
        self.dynamic_if(eq, dynamic, else_branch, ctx, sink)
    }

    /// The value of an if-condition when it is known at translation (a parameter
    /// expression): its branch is then chosen there.
    pub(super) fn known_condition(&mut self, cond: &'a Expr, ctx: &Ctx<'_>) -> Option<bool> {
        self.known_number(cond, ctx).map(|x| x != 0.0)
    }

    /// The value of the scalar `e` when it is known at translation.
    pub(super) fn known_number(&mut self, e: &'a Expr, ctx: &Ctx<'_>) -> Option<f64> {
        let constant = Ctx {
            mode: Mode::Constant,
            ..*ctx
        };
        match self.flatten_expr(e, &constant).ok()? {
            Tree::Leaf(id) => self.dae.pool.as_const(id),
            Tree::Node(_) => None,
        }
    }

    fn equations_into(
        &mut self,
        body: &'a [ast::Equation],
        ctx: &Ctx<'_>,
        sink: &mut Sink,
    ) -> Result<(), Diagnostic> {
        for eq in body {
            self.equation(eq, ctx, sink)?;
        }
        Ok(())
    }

    /// An if-equation whose condition is only known at run time: every branch must give the
    /// same number of equations; equation k becomes `0 = if c1 then r1k elseif … else rnk`.
    fn dynamic_if(
        &mut self,
        eq: &'a ast::Equation,
        dynamic: Vec<(ExprId, &'a [ast::Equation])>,
        else_branch: &'a [ast::Equation],
        ctx: &Ctx<'_>,
        sink: &mut Sink,
    ) -> Result<(), Diagnostic> {
        let connections_before = self.connections.len();
        let whens_before = self.dae.hybrid.whens.len();
        let mut flattened = Vec::new();
        // Whether no branch before the current one holds.
        let mut none_before = self.dae.pool.constant(1.0);
        for (k, body) in dynamic
            .iter()
            .map(|(_, b)| *b)
            .chain(std::iter::once(else_branch))
            .enumerate()
        {
            let mut branch = Sink {
                equations: Vec::new(),
                initial: sink.initial,
            };
            let asserts_before = self.dae.assertions.len();
            self.equations_into(body, ctx, &mut branch)?;
            flattened.push(branch.equations);
            // An assert inside a branch is checked only while its branch is the one taken.
            let pool = &mut self.dae.pool;
            let taken = match dynamic.get(k) {
                Some(&(c, _)) => pool.and(none_before, c),
                None => none_before,
            };
            let not_taken = pool.not(taken);
            for a in &mut self.dae.assertions[asserts_before..] {
                a.condition = pool.or(not_taken, a.condition);
            }
            if let Some(&(c, _)) = dynamic.get(k) {
                let not_c = pool.not(c);
                none_before = pool.and(none_before, not_c);
            }
        }
        if let Some(w) = self.dae.hybrid.whens.get(whens_before) {
            return Err(Diagnostic::error(
                "`when` inside an if-equation whose condition is not known at translation time (Modelica 8.3.5)",
            )
            .at(w.span, "this `when`")
            .with_secondary(eq.span, "inside this if-equation"));
        }
        if self.connections.len() != connections_before {
            self.connections.truncate(connections_before);
            return Err(Diagnostic::error(
                "`connect` inside an if-equation whose condition is not known at translation time",
            )
            .at(eq.span, "make the condition a parameter expression"));
        }
        let counts: Vec<usize> = flattened.iter().map(Vec::len).collect();
        if counts.iter().any(|&c| c != counts[0]) {
            return Err(Diagnostic::error(format!(
                "the branches of this if-equation have different numbers of equations ({counts:?}) and its condition is not known at translation time"
            ))
            .at(eq.span, "unbalanced branches"));
        }
        let component = self.insts[ctx.inst.expect("instance").0 as usize]
            .owner
            .clone();
        let conditions = dynamic.iter().map(|&(c, _)| c).collect();
        let mut residuals = Vec::with_capacity(counts[0]);
        for k in 0..counts[0] {
            let last = &flattened.last().expect("else branch")[k];
            // An equation every branch has alike is kept as written (its sides and terms), so
            // that the flat text reads back to the same equation.
            if flattened.iter().all(|b| b[k].residual == last.residual) {
                sink.equations.push(last.clone());
                residuals.push(last.residual);
                continue;
            }
            let mut residual = last.residual;
            for (b, (cond, _)) in dynamic.iter().enumerate().rev() {
                residual = self
                    .dae
                    .pool
                    .if_then_else(*cond, flattened[b][k].residual, residual);
            }
            residuals.push(residual);
            let zero = self.dae.pool.zero();
            let terms = vec![Term {
                expr: residual,
                sign: 1.0,
                span: eq.span,
            }];
            sink.equations.push(Equation {
                lhs: residual,
                rhs: zero,
                residual,
                terms,
                origin: EquationOrigin::Model,
                span: eq.span,
                component: component.clone(),
            });
        }
        let branches = (flattened.iter())
            .map(|b| b.iter().map(|e| (e.lhs, e.rhs, e.span)).collect())
            .collect();
        self.clocks
            .note_if_equation(conditions, branches, residuals);
        Ok(())
    }

    pub(super) fn call_equation(
        &mut self,
        span: Span,
        name: &ast::Name,
        args: &'a [ast::Arg],
        ctx: &Ctx<'_>,
    ) -> Result<(), Diagnostic> {
        match name.dotted().as_str() {
            "assert" => {
                let assertion = self.assertion(span, args, ctx)?;
                // An equation holds all the time (an assert inside `when` only where it is
                // reached: `if tooShort then assert(false, …)`).
                if assertion.is_error && self.dae.pool.as_const(assertion.condition) == Some(0.0) {
                    let at = args.first().map_or(span, |a| a.value.span);
                    return Err(Diagnostic::error(format!(
                        "this assertion always fails: {}",
                        assertion.message
                    ))
                    .at(at, "the condition is false"));
                }
                self.dae.assertions.push(assertion);
                Ok(())
            }
            "terminate" => Err(Diagnostic::error(
                "`terminate` is only allowed inside `when` (Modelica 8.3.8)",
            )
            .at(span, "outside `when`")),
            other => Err(Diagnostic::error(format!(
                "`{other}(…)` as an equation is not supported"
            ))
            .at(span, "only `assert` calls are")),
        }
    }

    /// `assert(condition, message, level)` at `span`.
    pub(super) fn assertion(
        &mut self,
        span: Span,
        args: &'a [ast::Arg],
        ctx: &Ctx<'_>,
    ) -> Result<Assertion, Diagnostic> {
        let cond = args
            .first()
            .ok_or_else(|| Diagnostic::error("`assert` needs a condition").at(span, "here"))?;
        self.expect_boolean(&cond.value, ctx)?;
        let condition = match self.flatten_expr(&cond.value, ctx)? {
            Tree::Leaf(c) => c,
            Tree::Node(_) => {
                return Err(Diagnostic::error("an assert condition must be a scalar")
                    .at(cond.value.span, "an array"));
            }
        };
        let message = assert_message(args.get(1), span)?;
        let is_error = assert_is_error(args)?;
        Ok(Assertion {
            condition,
            message,
            span,
            is_error,
        })
    }
}

/// The text of an assert message; messages built at run time (`"x = " + String(x)`) are kept
/// empty, but a number or Boolean is a type error.
fn assert_message(arg: Option<&ast::Arg>, call: Span) -> Result<String, Diagnostic> {
    let Some(arg) = arg else {
        return Err(Diagnostic::error("`assert` needs a message").at(call, "here"));
    };
    match &arg.value.kind {
        ExprKind::Str(s) => Ok(s.clone()),
        ExprKind::Integer(_) | ExprKind::Real(_) | ExprKind::Bool(_) => {
            Err(Diagnostic::error("an assert message must be a String")
                .at(arg.value.span, "not a String"))
        }
        _ => Ok(String::new()),
    }
}

/// `terminate(message)`'s message, a String literal.
pub(super) fn terminate_message(args: &[ast::Arg], call: Span) -> Result<String, Diagnostic> {
    match args {
        [arg] if arg.name.is_none() => match &arg.value.kind {
            ExprKind::Str(s) => Ok(s.clone()),
            _ => Err(
                Diagnostic::error("`terminate` takes a String literal message")
                    .at(arg.value.span, "not a String literal"),
            ),
        },
        _ => Err(
            Diagnostic::error("`terminate` takes one argument: `terminate(\"why\")`")
                .at(call, "here"),
        ),
    }
}

/// Whether an assert has level `AssertionLevel.error` (the default); the level must be one of
/// the two literals, since it decides at translation what a failure does.
fn assert_is_error(args: &[ast::Arg]) -> Result<bool, Diagnostic> {
    let level = args
        .iter()
        .find(|a| a.name.as_ref().is_some_and(|n| n.name == "level"))
        .or_else(|| args.iter().filter(|a| a.name.is_none()).nth(2));
    let Some(level) = level else {
        return Ok(true);
    };
    if let ExprKind::Ref(cref) = &level.value.kind {
        match cref.dotted().as_str() {
            "AssertionLevel.error" => return Ok(true),
            "AssertionLevel.warning" => return Ok(false),
            _ => {}
        }
    }
    Err(Diagnostic::error(
        "an assert level must be `AssertionLevel.error` or `AssertionLevel.warning`",
    )
    .at(level.value.span, "not an assertion level"))
}

/// Splits `a + b - c` into signed terms; `sign` is +1 for the left side, −1 for the right.
/// An equation side's additive terms: few, so held inline.
type Terms<'e> = SmallVec<[(f64, &'e Expr); 4]>;

fn split_terms<'e>(e: &'e Expr, sign: f64, out: &mut Terms<'e>) {
    match &e.kind {
        ExprKind::Binary {
            op: BinOp::Add,
            lhs,
            rhs,
        } => {
            split_terms(lhs, sign, out);
            split_terms(rhs, sign, out);
        }
        ExprKind::Binary {
            op: BinOp::Sub,
            lhs,
            rhs,
        } => {
            split_terms(lhs, sign, out);
            split_terms(rhs, -sign, out);
        }
        ExprKind::Unary {
            op: UnOp::Neg,
            operand,
        } if matches!(
            operand.kind,
            ExprKind::Binary {
                op: BinOp::Add | BinOp::Sub,
                ..
            }
        ) =>
        {
            split_terms(operand, -sign, out);
        }
        _ => out.push((sign, e)),
    }
}

fn is_zero_literal(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Integer(0)) || matches!(e.kind, ExprKind::Real(v) if v == 0.0)
}

/// The k-th scalar of a value's elements (a scalar broadcasts).
fn element(values: &[ExprId], k: usize) -> ExprId {
    values[if values.len() == 1 { 0 } else { k }]
}
