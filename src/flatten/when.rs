//! `when` equations and the operators of the hybrid DAE (`pre`, `edge`, `change`,
//! `initial()`, `sample`), flattened into [`crate::dae::hybrid`]: the variables a `when`
//! assigns become held variables, known to the continuous part between events.

use super::Flattener;
use super::equations::Sink;
use super::expr::{Ctx, Mode, Val};
use super::tree::Tree;
use crate::dae::hybrid::{Action, Sample, WhenBranch, WhenClause};
use crate::dae::{ScalarType, VarKind, Variable};
use crate::diagnostics::Diagnostic;
use crate::expr::{CmpOp, ExprId, Node, VarId};
use crate::source::Span;
use crate::syntax::ast::{self, EquationKind, Expr};

impl<'a> Flattener<'a> {
    pub(super) fn when_equation(
        &mut self,
        eq: &'a ast::Equation,
        branches: &'a [(Expr, Vec<ast::Equation>)],
        ctx: &Ctx<'_>,
        sink: &Sink,
    ) -> Result<(), Diagnostic> {
        if sink.initial {
            return Err(Diagnostic::error(
                "`when` is not allowed in an initial equation section (Modelica 8.3.5)",
            )
            .at(eq.span, "here"));
        }
        self.when_clause(branches, (eq.span, false), ctx, Self::when_body_equation)
    }

    /// A `when` clause at `span` from its branches, each body item giving its actions through
    /// `action` (an equation's or, with `statement`, a statement's).
    pub(super) fn when_clause<B: 'a>(
        &mut self,
        branches: &'a [(Expr, Vec<B>)],
        (span, statement): (Span, bool),
        ctx: &Ctx<'_>,
        action: fn(&mut Self, &'a B, &Ctx<'_>, &mut Vec<Action>) -> Result<(), Diagnostic>,
    ) -> Result<(), Diagnostic> {
        let mut flat = Vec::with_capacity(branches.len());
        for (condition, body) in branches {
            self.expect_boolean(condition, ctx)?;
            let conditions = self.flatten_expr(condition, ctx)?.leaves();
            let mut actions = Vec::new();
            for item in body {
                action(self, item, ctx, &mut actions)?;
            }
            self.check_write_reads(&actions)?;
            flat.push(WhenBranch {
                conditions,
                actions,
            });
        }
        self.dae.hybrid.whens.push(WhenClause {
            branches: flat,
            span,
            statement,
        });
        Ok(())
    }

    fn when_body_equation(
        &mut self,
        e: &'a ast::Equation,
        ctx: &Ctx<'_>,
        actions: &mut Vec<Action>,
    ) -> Result<(), Diagnostic> {
        match &e.kind {
            EquationKind::Simple { lhs, rhs } => {
                let mut assigned = Sink {
                    equations: Vec::new(),
                    initial: false,
                };
                self.simple(e, lhs, rhs, ctx, &mut assigned)?;
                for q in assigned.equations {
                    let Node::Var(var) = self.dae.pool.node(q.lhs) else {
                        return Err(Diagnostic::error(
                            "an equation in `when` must have a variable on its left (Modelica 8.3.5)",
                        )
                        .at(lhs.span, "not a variable"));
                    };
                    actions.push(Action::Assign {
                        var,
                        value: q.rhs,
                        span: e.span,
                    });
                }
                Ok(())
            }
            EquationKind::If {
                branches,
                else_branch,
            } => {
                let action = self.when_if(branches, else_branch, ctx, Self::when_body_equation)?;
                actions.push(action);
                Ok(())
            }
            EquationKind::For { indices, body } => {
                self.when_for(indices, body, e.span, ctx, actions, Self::when_body_equation)
            }
            EquationKind::Call { name, args } => {
                actions.extend(self.when_call(name, args, e.span, ctx)?);
                Ok(())
            }
            EquationKind::When { .. } => Err(Diagnostic::error(
                "`when` cannot be nested in `when` (Modelica 8.3.5)",
            )
            .at(e.span, "nested")),
            _ => Err(Diagnostic::error(
                "inside `when`, mocca supports `v = e`, `if`, `for`, `reinit`, `assert` and `terminate`",
            )
            .at(e.span, "not supported here")),
        }
    }

    /// `if` inside a `when` body, of equations or statements: an action choosing at the event.
    pub(super) fn when_if<B: 'a>(
        &mut self,
        branches: &'a [(Expr, Vec<B>)],
        else_branch: &'a [B],
        ctx: &Ctx<'_>,
        action: fn(&mut Self, &'a B, &Ctx<'_>, &mut Vec<Action>) -> Result<(), Diagnostic>,
    ) -> Result<Action, Diagnostic> {
        let mut flat = Vec::with_capacity(branches.len());
        for (condition, body) in branches {
            self.expect_boolean(condition, ctx)?;
            // A condition known at translation chooses there, as an if-equation's does: a
            // branch not taken is not flattened (its clock operators leave no marks).
            match self.known_condition(condition, ctx) {
                Some(false) => continue,
                Some(true) => {
                    let mut otherwise = Vec::new();
                    for item in body {
                        action(self, item, ctx, &mut otherwise)?;
                    }
                    return Ok(Action::If {
                        branches: flat,
                        otherwise,
                    });
                }
                None => {}
            }
            let c = match self.flatten_expr(condition, ctx)? {
                Tree::Leaf(c) => c,
                Tree::Node(_) => {
                    return Err(Diagnostic::error("an if-condition must be a scalar")
                        .at(condition.span, "an array"));
                }
            };
            let mut actions = Vec::new();
            for item in body {
                action(self, item, ctx, &mut actions)?;
            }
            flat.push((c, actions));
        }
        let mut otherwise = Vec::new();
        for item in else_branch {
            action(self, item, ctx, &mut otherwise)?;
        }
        Ok(Action::If {
            branches: flat,
            otherwise,
        })
    }

    /// `for` inside a `when` body, unrolled over its range (known at translation time).
    pub(super) fn when_for<B: 'a>(
        &mut self,
        indices: &'a [ast::ForIndex],
        body: &'a [B],
        span: Span,
        ctx: &Ctx<'_>,
        actions: &mut Vec<Action>,
        action: fn(&mut Self, &'a B, &Ctx<'_>, &mut Vec<Action>) -> Result<(), Diagnostic>,
    ) -> Result<(), Diagnostic> {
        let Some((first, rest)) = indices.split_first() else {
            for item in body {
                action(self, item, ctx, actions)?;
            }
            return Ok(());
        };
        let Some(range) = &first.range else {
            return Err(Diagnostic::error(
                "a `for` inside `when` needs its range (`for i in 1:n`)",
            )
            .at(span, "no range"));
        };
        let range = self.range_values(range, ctx)?;
        self.each_index_value(first, range, ctx, |f, inner| {
            f.when_for(rest, body, span, inner, actions, action)
        })
    }

    /// `reinit`, `assert` or `terminate` inside a `when` body.
    pub(super) fn when_call(
        &mut self,
        name: &ast::Name,
        args: &'a [ast::Arg],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Vec<Action>, Diagnostic> {
        match name.dotted().as_str() {
            "reinit" => self.reinit(args, span, ctx),
            "assert" => Ok(vec![Action::Assert(self.assertion(span, args, ctx)?)]),
            "terminate" => Ok(vec![Action::Terminate {
                message: super::equations::terminate_message(args, span)?,
                span,
            }]),
            other => match self.function_class_named(name, ctx) {
                // A function runs for what it writes.
                Some(class) => {
                    let call = |f: &mut Self| f.call_function_outputs(class, args, span, ctx);
                    Ok(self.collecting_writes(call)?.0)
                }
                None => Err(Diagnostic::error(format!(
                    "`{other}(…)` inside `when` is not supported"
                ))
                .at(
                    span,
                    "only `reinit`, `assert`, `terminate` and function calls are",
                )),
            },
        }
    }

    /// `reinit(x, e)` (elementwise for arrays) at `span`.
    pub(super) fn reinit(
        &mut self,
        args: &'a [ast::Arg],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Vec<Action>, Diagnostic> {
        let [x, value] = args else {
            return Err(
                Diagnostic::error("`reinit` takes two arguments: `reinit(x, e)`").at(span, "here"),
            );
        };
        let targets = self.flatten_expr(&x.value, ctx)?.leaves();
        let values = self.flatten_expr(&value.value, ctx)?.leaves();
        if targets.len() != values.len() {
            return Err(
                Diagnostic::error("the two arguments of `reinit` differ in size")
                    .at(span, "sizes differ"),
            );
        }
        targets
            .into_iter()
            .zip(values)
            .map(|(target, value)| match self.dae.pool.node(target) {
                Node::Var(var) => Ok(Action::Reinit { var, value, span }),
                _ => Err(Diagnostic::error("`reinit` takes a state variable")
                    .at(x.value.span, "not a variable")),
            })
            .collect()
    }

    /// `reinit` outside `when`.
    pub(super) fn reinit_outside_when(span: Span) -> Diagnostic {
        Diagnostic::error("`reinit` is only allowed inside `when` (Modelica 8.3.6)")
            .at(span, "outside `when`")
    }

    /// `pre`, `edge`, `change`, `initial()` and `sample(start, interval)`; `None` for other
    /// names.
    pub(super) fn hybrid_call(
        &mut self,
        name: &str,
        positional: &[&'a Expr],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Option<Result<Val, Diagnostic>> {
        if !matches!(
            name,
            "pre" | "edge" | "change" | "initial" | "terminal" | "sample"
        ) {
            return None;
        }
        if ctx.mode == Mode::Constant {
            return Some(Err(Diagnostic::error(format!(
                "`{name}` is not known at translation time"
            ))
            .at(span, "not a constant")));
        }
        let wanted = match name {
            "initial" | "terminal" => 0,
            "sample" => 2,
            _ => 1,
        };
        if positional.len() != wanted {
            return Some(Err(Diagnostic::error(format!(
                "`{name}` takes {wanted} argument{}",
                if wanted == 1 { "" } else { "s" }
            ))
            .at(span, "here")));
        }
        Some(match name {
            "initial" => Ok(Tree::Leaf(self.flag_variable(Flag::Initial, span))),
            "terminal" => Ok(Tree::Leaf(self.flag_variable(Flag::Terminal, span))),
            "sample" => self.sample(positional, span, ctx),
            _ => self.of_pre(name, positional[0], ctx),
        })
    }

    fn of_pre(&mut self, name: &str, arg: &'a Expr, ctx: &Ctx<'_>) -> Result<Val, Diagnostic> {
        let value = self.flatten_expr(arg, ctx)?;
        value.map(&mut |&x| {
            let Node::Var(v) = self.dae.pool.node(x) else {
                return Err(Diagnostic::error(format!("`{name}` takes a variable"))
                    .at(arg.span, "not a variable"));
            };
            let pre = self.pre_variable(v);
            let pool = &mut self.dae.pool;
            let pre = pool.var(pre);
            Ok(match name {
                "pre" => pre,
                "edge" => {
                    let not_before = pool.not(pre);
                    pool.and(x, not_before)
                }
                _ => pool.cmp(CmpOp::Ne, x, pre),
            })
        })
    }

    fn sample(&mut self, args: &[&'a Expr], span: Span, ctx: &Ctx<'_>) -> Result<Val, Diagnostic> {
        let mut scalar = |e: &'a Expr| -> Result<ExprId, Diagnostic> {
            match self.flatten_expr(e, ctx)? {
                Tree::Leaf(x) if self.constant_from_start(x) => Ok(x),
                _ => Err(Diagnostic::error(
                    "the arguments of `sample` are scalar parameter expressions",
                )
                .at(e.span, "not a parameter expression")),
            }
        };
        let start = scalar(args[0])?;
        let interval = scalar(args[1])?;
        let name = format!("sample({})", self.dae.hybrid.samples.len() + 1);
        let var = self.held_variable(name, ScalarType::Boolean, None, span);
        self.dae.hybrid.samples.push(Sample {
            var,
            start,
            interval,
            span,
        });
        Ok(Tree::Leaf(self.dae.pool.var(var)))
    }

    /// Whether `e` reads parameters only, those the initial system computes included: its
    /// value is known from the start of the run on (`sample(t0 + 1/f, 1/f)` with
    /// `parameter Real t0(fixed = false)`).
    fn constant_from_start(&self, e: ExprId) -> bool {
        let mut only = true;
        self.dae.pool.visit_leaves(e, |n| match n {
            Node::Const(_) => {}
            Node::Var(v) => {
                only &= matches!(self.dae.var(v).kind, VarKind::Parameter | VarKind::Constant)
                    || self.free_parameters.contains(&v)
            }
            _ => only = false,
        });
        only
    }

    pub(super) fn reads_parameters_only(&self, e: ExprId) -> bool {
        let mut only = true;
        self.dae.pool.visit_leaves(e, |n| match n {
            Node::Const(_) => {}
            Node::Var(v) => {
                only &= matches!(self.dae.var(v).kind, VarKind::Parameter | VarKind::Constant)
            }
            _ => only = false,
        });
        only
    }

    /// Whether a branch's conditions read `terminal()`.
    fn reads_terminal(&self, conditions: &[ExprId]) -> bool {
        let Some(terminal) = self.dae.hybrid.terminal else {
            return false;
        };
        conditions.iter().any(|&c| {
            let mut found = false;
            self.dae
                .pool
                .visit_leaves(c, |n| found |= n == Node::Var(terminal));
            found
        })
    }

    /// The held Boolean that reads as `initial()` or `terminal()`.
    pub(super) fn flag_variable(&mut self, flag: Flag, span: Span) -> ExprId {
        let (slot, name) = match flag {
            Flag::Initial => (self.dae.hybrid.initial, "initial()"),
            Flag::Terminal => (self.dae.hybrid.terminal, "terminal()"),
        };
        let var = match slot {
            Some(v) => v,
            None => {
                let v = self.held_variable(name.to_string(), ScalarType::Boolean, None, span);
                match flag {
                    Flag::Initial => self.dae.hybrid.initial = Some(v),
                    Flag::Terminal => self.dae.hybrid.terminal = Some(v),
                }
                v
            }
        };
        self.dae.pool.var(var)
    }

    /// The held variable that reads as `pre(v)`.
    pub(super) fn pre_variable(&mut self, v: VarId) -> VarId {
        if let Some(p) = self.dae.hybrid.pre_of(v) {
            return p;
        }
        let var = self.dae.var(v);
        let (name, ty, start, span) = (format!("pre({})", var.name), var.ty, var.start, var.span);
        let p = self.held_variable(name, ty, start, span);
        self.dae.hybrid.pre.push((p, v));
        p
    }

    fn held_variable(
        &mut self,
        name: String,
        ty: ScalarType,
        start: Option<ExprId>,
        span: Span,
    ) -> VarId {
        let var = Variable {
            start,
            ..Variable::derived(name, VarKind::Held, ty, span)
        };
        self.dae
            .add_variable(var)
            .unwrap_or_else(|existing| existing)
    }

    /// The variables `when` clauses assign are held between events; each is assigned by one
    /// clause only, and `reinit` restarts states only (Modelica 8.3.5, 8.3.6). Run after the
    /// states are known.
    pub(super) fn mark_held(&mut self) {
        let mut assigned_by: Vec<Option<usize>> = vec![None; self.dae.variables.len()];
        let mut diags = Vec::new();
        for (c, clause) in self.dae.hybrid.whens.iter().enumerate() {
            let mut all = Vec::new();
            for branch in &clause.branches {
                let at_end = self.reads_terminal(&branch.conditions);
                Action::walk(&branch.actions, &mut |a| all.push((a, at_end)));
            }
            for (action, at_end) in all {
                let assigned: Vec<(VarId, Span)> = match action {
                    Action::Assign { var, span, .. } => vec![(*var, *span)],
                    Action::Solve(system) => {
                        system.vars.iter().map(|&v| (v, system.span)).collect()
                    }
                    _ => Vec::new(),
                };
                for (var, span) in assigned {
                    let v = &mut self.dae.variables[var.0 as usize];
                    match (v.kind, assigned_by[var.0 as usize]) {
                        (_, Some(other)) if other != c => diags.push(
                            Diagnostic::error(format!(
                                "`{}` is assigned in two `when` clauses (Modelica 8.3.5: one only)",
                                v.name
                            ))
                            .at(span, "assigned again here")
                            .with_secondary(self.dae.hybrid.whens[other].span, "first assigned here"),
                        ),
                        (VarKind::Algebraic | VarKind::Discrete | VarKind::Held, _) => {
                            v.kind = VarKind::Held;
                            assigned_by[var.0 as usize] = Some(c);
                        }
                        (VarKind::State, _) => diags.push(
                            Diagnostic::error(format!(
                                "`{}` is a state: a `when` changes it with `reinit`, not an equation",
                                v.name
                            ))
                            .at(span, "assigns a state"),
                        ),
                        _ => diags.push(
                            Diagnostic::error(format!(
                                "`{}` is not a variable a `when` can assign",
                                v.name
                            ))
                            .at(span, "a parameter, constant or input"),
                        ),
                    }
                }
                match *action {
                    Action::Assign { .. } | Action::Solve(_) => {}
                    Action::Reinit { span, .. } if at_end => diags.push(
                        Diagnostic::error(
                            "`reinit` in a branch that fires at `terminal()`: no step follows the end of the run for it to restart",
                        )
                        .at(span, "at the end of the run"),
                    ),
                    Action::Reinit { var, span, .. } => {
                        if self.dae.var(var).kind != VarKind::State {
                            diags.push(
                                Diagnostic::error(format!(
                                    "`reinit({}, …)`: `{}` is not a state (Modelica 8.3.6)",
                                    self.dae.var(var).name,
                                    self.dae.var(var).name
                                ))
                                .at(span, "not a state"),
                            );
                        }
                    }
                    Action::If { .. }
                    | Action::Assert(_)
                    | Action::Terminate { .. }
                    | Action::Write { .. } => {}
                }
            }
        }
        self.diags.extend(diags);
    }
}

/// The instants a held Boolean of the flattener's own marks.
#[derive(Clone, Copy)]
pub(super) enum Flag {
    Initial,
    Terminal,
}
