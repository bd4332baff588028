//! Algorithm sections (Modelica 11.1), executed symbolically at translation time. Each
//! statement updates what the section knows of the variables it assigned so far; a read of
//! one takes that value, a read of any other variable its value on entry. At the end every
//! variable the section assigned gets one equation, `v = its final value`, whose reads of
//! assigned variables' entry values are `pre(v)` for a discrete variable and the start value
//! for a continuous one (11.1.2). The equations join the BLT like any other, so the section is
//! solved where its outputs are needed.
//!
//! `if` with a condition that varies becomes `if`-expressions merging the branches' values;
//! `for` over a range known at translation time, and `while` whose condition is known at each
//! turn, are unrolled. A `when` statement becomes a `when` clause whose assignments run in
//! their written order at its events.

use indexmap::IndexMap;

use super::Flattener;
use super::expr::Ctx;
use super::tree::Tree;
use crate::dae::hybrid::Action;
use crate::dae::{Equation, EquationOrigin, ScalarType, VarKind};
use crate::diagnostics::Diagnostic;
use crate::expr::{ExprId, Node, VarId};
use crate::source::Span;
use crate::syntax::ast::{self, Expr, ExprKind, Statement, StatementKind};

use super::equations::Sink;

/// One element assignment `var := value`, and the guard under which it writes when its
/// target was picked by a varying subscript (guards of one such target exclude each other).
type Assigned = (VarId, ExprId, Option<ExprId>);

/// Turns of a `while` loop before it is taken for one that never ends.
const MAX_TURNS: usize = 1_000_000;

/// Each variable assigned so far, with its value (over the entry values of the variables).
type Values = IndexMap<VarId, ExprId>;

/// How a statement list ended.
#[derive(Clone, Copy, PartialEq)]
enum Flow {
    Next,
    Break,
    Return,
}

impl<'a> Flattener<'a> {
    pub(super) fn algorithm(
        &mut self,
        eq: &'a ast::Equation,
        body: &'a [Statement],
        ctx: &Ctx<'_>,
        sink: &mut Sink,
    ) -> Result<(), Diagnostic> {
        let mut values = Values::new();
        let place = Place {
            initial: sink.initial,
            nested: false,
        };
        self.statements(body, ctx, &mut values, place)?;
        let entry: IndexMap<VarId, ExprId> =
            values.keys().map(|&v| (v, self.entry_value(v))).collect();
        let component = self.insts[ctx.inst.expect("instance").0 as usize]
            .owner
            .clone();
        for (&var, &value) in &values {
            let value = self.dae.pool.substitute(value, &mut |_, n| match n {
                Node::Var(v) => entry.get(&v).copied(),
                _ => None,
            });
            let place = (eq.span, component.clone());
            let pool = &mut self.dae.pool;
            let equation = Equation::assignment(pool, var, value, EquationOrigin::Model, place);
            sink.equations.push(equation);
        }
        Ok(())
    }

    /// A variable's value on entry to a section that assigns it: `pre(v)` for a discrete one,
    /// its start value (default 0) for a continuous one.
    fn entry_value(&mut self, v: VarId) -> ExprId {
        let var = self.dae.var(v);
        let discrete = var.ty != ScalarType::Real || var.kind == VarKind::Discrete;
        match (discrete, var.start) {
            (true, _) => {
                let pre = self.pre_variable(v);
                self.dae.pool.var(pre)
            }
            (false, Some(start)) => start,
            (false, None) => self.dae.pool.zero(),
        }
    }

    fn statements(
        &mut self,
        body: &'a [Statement],
        ctx: &Ctx<'_>,
        values: &mut Values,
        place: Place,
    ) -> Result<Flow, Diagnostic> {
        for s in body {
            let flow = self.statement(s, ctx, values, place)?;
            if flow != Flow::Next {
                return Ok(flow);
            }
        }
        Ok(Flow::Next)
    }

    fn statement(
        &mut self,
        s: &'a Statement,
        ctx: &Ctx<'_>,
        values: &mut Values,
        place: Place,
    ) -> Result<Flow, Diagnostic> {
        match &s.kind {
            StatementKind::Assign { target, value } if self.named_record(target, ctx).is_some() => {
                let class = self.named_record(target, ctx);
                let record = self.record_value(value, class, ctx)?;
                let paths: Vec<&str> = record.iter().map(|(p, _)| p.as_str()).collect();
                let fields = self.model_record_fields(target, &paths, ctx, target.span)?;
                let mut assigned = Vec::new();
                for ((_, field), (_, new)) in fields.into_iter().zip(&record) {
                    let (targets, new) = (field.leaves(), new.leaves());
                    let leaves = self.assign_leaves(target, targets, new, s.span, values)?;
                    assigned.extend(leaves.into_iter().map(|(v, e, _)| (v, e)));
                }
                values.extend(assigned);
            }
            StatementKind::Assign { target, value } => {
                let new = self.flatten_expr(value, ctx)?;
                for (var, value, _) in self.assignment(target, new, s.span, ctx, values)? {
                    values.insert(var, value);
                }
            }
            StatementKind::AssignOutputs { targets, call } => {
                let assigned = self.output_assignments(targets, call, s.span, ctx, values)?;
                values.extend(assigned.into_iter().map(|(v, e, _)| (v, e)));
            }
            StatementKind::Break => return Ok(Flow::Break),
            StatementKind::Return => return Ok(Flow::Return),
            StatementKind::If {
                branches,
                else_branch,
            } => return self.if_statement(s, branches, else_branch, ctx, values, place),
            StatementKind::For { indices, body } => {
                return self.for_statement(s.span, indices, body, ctx, values, place);
            }
            StatementKind::While { condition, body } => {
                return self.while_statement(s.span, condition, body, ctx, values, place);
            }
            StatementKind::When { branches } => self.when_statement(s, branches, ctx, place)?,
            StatementKind::Call { name, args } => match name.dotted().as_str() {
                "assert" => self.call_equation(s.span, name, args, ctx)?,
                "reinit" => return Err(Self::reinit_outside_when(s.span)),
                "terminate" => {
                    return Err(Diagnostic::error(
                        "`terminate` is only supported inside a `when` statement",
                    )
                    .at(s.span, "outside `when`"));
                }
                other => match self.function_class_named(name, ctx) {
                    // Its outputs, if any, are dropped; its asserts are checked where
                    // they are known at translation time.
                    Some(class) => {
                        self.call_function(class, args, s.span, ctx)?;
                    }
                    None => {
                        return Err(Diagnostic::error(format!("unknown function `{other}`"))
                            .at(s.span, "not a function"));
                    }
                },
            },
            StatementKind::Unsupported => {}
        }
        Ok(Flow::Next)
    }

    /// `target := value`, elementwise: each assigned variable and its new value (all read
    /// before any is written, so `x := {x[2], x[1]}` swaps).
    fn assignment(
        &mut self,
        target: &'a ast::ComponentRef,
        new: Tree<ExprId>,
        span: Span,
        ctx: &Ctx<'_>,
        values: &Values,
    ) -> Result<Vec<Assigned>, Diagnostic> {
        let targets = self.flatten_ref(target, ctx)?.leaves();
        self.assign_leaves(target, targets, new.leaves(), span, values)
    }

    /// `(a, , c) := f(x)`: the element assignments of every target written, from the call's
    /// outputs, all computed before any target is written.
    fn output_assignments(
        &mut self,
        targets: &'a [Option<Expr>],
        call: &'a Expr,
        span: Span,
        ctx: &Ctx<'_>,
        values: &Values,
    ) -> Result<Vec<Assigned>, Diagnostic> {
        let outputs = self.call_outputs(call, ctx)?;
        super::function::check_targets(targets.len(), outputs.len(), span)?;
        let mut assigned = Vec::new();
        for (target, new) in targets.iter().zip(outputs) {
            match target.as_ref().map(|t| (&t.kind, t.span)) {
                None => {}
                Some((ExprKind::Ref(cref), _)) => {
                    assigned.extend(self.assignment(cref, new, span, ctx, values)?);
                }
                Some((_, at)) => {
                    return Err(Diagnostic::error("only a variable can be assigned")
                        .at(at, "not a variable"));
                }
            }
        }
        Ok(assigned)
    }

    /// `target := new`, element by element, of the variables `targets` `target` names. An
    /// element picked by a varying subscript (`buf[k]`) is the choice among the elements
    /// its index may name: each is written under its guard (`k == 2`), keeping its value
    /// otherwise; an index out of range writes nothing.
    fn assign_leaves(
        &mut self,
        target: &'a ast::ComponentRef,
        targets: Vec<ExprId>,
        new: Vec<ExprId>,
        span: Span,
        values: &Values,
    ) -> Result<Vec<Assigned>, Diagnostic> {
        if targets.len() != new.len() {
            return Err(Diagnostic::error(format!(
                "assigning {} values to {} variables",
                new.len(),
                targets.len()
            ))
            .at(span, "sizes differ"));
        }
        let mut out = Vec::with_capacity(targets.len());
        for (t, e) in targets.into_iter().zip(new) {
            let mut picked = Vec::new();
            if !self.picked_variables(t, (None, false), &mut picked) {
                return Err(Diagnostic::error("only a variable can be assigned")
                    .at(target.span, "not a variable"));
            }
            for (guard, var) in picked {
                if matches!(
                    self.dae.var(var).kind,
                    VarKind::Parameter | VarKind::Constant
                ) {
                    return Err(Diagnostic::error(format!(
                        "`{}` is a parameter or constant: an algorithm cannot assign it",
                        self.dae.var(var).name
                    ))
                    .at(target.span, "not a variable"));
                }
                let value = self.current(e, values);
                let Some(guard) = guard else {
                    out.push((var, value, None));
                    continue;
                };
                let guard = self.current(guard, values);
                let old = self.dae.pool.var(var);
                let old = self.current(old, values);
                let value = self.dae.pool.if_then_else(guard, value, old);
                out.push((var, value, Some(guard)));
            }
        }
        Ok(out)
    }

    /// The variables a target element `t` may be, each with its guard: `t` itself, or the
    /// branches of the choice a varying subscript made (whose out-of-range end is NaN).
    /// False when `t` is neither.
    fn picked_variables(
        &mut self,
        t: ExprId,
        (guard, chosen): (Option<ExprId>, bool),
        out: &mut Vec<(Option<ExprId>, VarId)>,
    ) -> bool {
        match self.dae.pool.node(t) {
            Node::Var(v) => {
                out.push((guard, v));
                true
            }
            Node::If(c, then, otherwise) => {
                let here = match guard {
                    Some(g) => self.dae.pool.and(g, c),
                    None => c,
                };
                self.picked_variables(then, (Some(here), true), out)
                    && self.picked_variables(otherwise, (guard, true), out)
            }
            // The out-of-range end, written `0.0 / 0.0`.
            Node::Div(a, b) => chosen && a == b && self.dae.pool.as_const(a) == Some(0.0),
            _ => false,
        }
    }

    /// `e` with each variable assigned so far replaced by its value.
    fn current(&mut self, e: ExprId, values: &Values) -> ExprId {
        if values.is_empty() {
            return e;
        }
        self.dae.pool.substitute(e, &mut |_, n| match n {
            Node::Var(v) => values.get(&v).copied(),
            _ => None,
        })
    }

    /// A scalar condition's value now: a constant when known at translation time (over
    /// parameters, at their values, as a `for` range is).
    fn condition(
        &mut self,
        condition: &'a Expr,
        ctx: &Ctx<'_>,
        values: &Values,
    ) -> Result<ExprId, Diagnostic> {
        self.expect_boolean(condition, ctx)?;
        let c = match self.flatten_expr(condition, ctx)? {
            Tree::Leaf(c) => self.current(c, values),
            Tree::Node(_) => {
                return Err(Diagnostic::error("a condition must be a scalar")
                    .at(condition.span, "an array"));
            }
        };
        if self.dae.pool.as_const(c).is_some() || !self.reads_parameters_only(c) {
            return Ok(c);
        }
        let mut parameters = Vec::new();
        self.dae.pool.visit_leaves(c, |n| {
            if let Node::Var(v) = n {
                parameters.push(v);
            }
        });
        let mut known = Vec::with_capacity(parameters.len());
        for v in parameters {
            match self.const_value(v, condition.span) {
                Ok(x) => known.push((v, self.dae.pool.constant(x))),
                // A parameter fixed only at initialisation: the condition stays symbolic.
                Err(_) => return Ok(c),
            }
        }
        Ok(self.dae.pool.substitute(c, &mut |_, n| match n {
            Node::Var(v) => known.iter().find(|k| k.0 == v).map(|k| k.1),
            _ => None,
        }))
    }

    fn if_statement(
        &mut self,
        s: &'a Statement,
        branches: &'a [(Expr, Vec<Statement>)],
        else_branch: &'a [Statement],
        ctx: &Ctx<'_>,
        values: &mut Values,
        place: Place,
    ) -> Result<Flow, Diagnostic> {
        let inner = place.nested();
        // The branches whose condition varies, each with the values it leaves, until one
        // whose condition is true at translation time (or the `else`) ends the choice.
        let mut varying: Vec<(ExprId, Values)> = Vec::new();
        let mut last: Option<(Values, Flow)> = None;
        for (condition, body) in branches {
            let c = self.condition(condition, ctx, values)?;
            match self.dae.pool.as_const(c) {
                Some(0.0) => continue,
                Some(_) => {
                    let mut taken = values.clone();
                    let flow = self.statements(body, ctx, &mut taken, inner)?;
                    last = Some((taken, flow));
                    break;
                }
                None => {
                    let mut taken = values.clone();
                    let flow = self.statements(body, ctx, &mut taken, inner)?;
                    if flow != Flow::Next {
                        return Err(varying_jump(s.span));
                    }
                    varying.push((c, taken));
                }
            }
        }
        let (mut merged, flow) = match last {
            Some(done) => done,
            None => {
                let mut taken = values.clone();
                let flow = self.statements(else_branch, ctx, &mut taken, inner)?;
                (taken, flow)
            }
        };
        if varying.is_empty() {
            *values = merged;
            return Ok(flow);
        }
        if flow != Flow::Next {
            return Err(varying_jump(s.span));
        }
        // Each variable any branch assigned: the value of the branch taken.
        let mut assigned: Vec<VarId> = merged.keys().copied().collect();
        for (_, taken) in &varying {
            assigned.extend(taken.keys().copied().filter(|v| !merged.contains_key(v)));
        }
        for var in assigned {
            let before = values
                .get(&var)
                .copied()
                .unwrap_or_else(|| self.dae.pool.var(var));
            let mut value = merged.get(&var).copied().unwrap_or(before);
            for (c, taken) in varying.iter().rev() {
                let then = taken.get(&var).copied().unwrap_or(before);
                value = self.dae.pool.if_then_else(*c, then, value);
            }
            merged.insert(var, value);
        }
        *values = merged;
        Ok(Flow::Next)
    }

    fn for_statement(
        &mut self,
        span: Span,
        indices: &'a [ast::ForIndex],
        body: &'a [Statement],
        ctx: &Ctx<'_>,
        values: &mut Values,
        place: Place,
    ) -> Result<Flow, Diagnostic> {
        let Some((first, rest)) = indices.split_first() else {
            return self.statements(body, ctx, values, place);
        };
        let Some(range) = &first.range else {
            return Err(
                Diagnostic::error("a `for` statement needs its range (`for i in 1:n`)")
                    .at(span, "no range"),
            );
        };
        let (range, boolean) = self.range_values(range, ctx)?;
        let name = super::instance::strip_quotes(&first.name.name);
        for value in range {
            let loops = ctx.loops_with(&name, value, boolean);
            let inner = Ctx {
                loops: &loops,
                ..*ctx
            };
            match self.for_statement(span, rest, body, &inner, values, place)? {
                Flow::Next => {}
                Flow::Break => break,
                Flow::Return => return Ok(Flow::Return),
            }
        }
        Ok(Flow::Next)
    }

    fn while_statement(
        &mut self,
        span: Span,
        condition: &'a Expr,
        body: &'a [Statement],
        ctx: &Ctx<'_>,
        values: &mut Values,
        place: Place,
    ) -> Result<Flow, Diagnostic> {
        let inner = place.nested();
        for _ in 0..MAX_TURNS {
            let c = self.condition(condition, ctx, values)?;
            match self.dae.pool.as_const(c) {
                Some(0.0) => return Ok(Flow::Next),
                Some(_) => match self.statements(body, ctx, values, inner)? {
                    Flow::Next => {}
                    Flow::Break => return Ok(Flow::Next),
                    Flow::Return => return Ok(Flow::Return),
                },
                None => {
                    return Err(Diagnostic::error(
                        "a `while` whose condition is not known at translation time is not supported yet",
                    )
                    .at(condition.span, "varies during the simulation"));
                }
            }
        }
        Err(Diagnostic::error(format!(
            "this `while` loop did not end after {MAX_TURNS} turns"
        ))
        .at(span, "here"))
    }

    /// A `when` statement: a `when` clause whose assignments run in order at its events.
    fn when_statement(
        &mut self,
        s: &'a Statement,
        branches: &'a [(Expr, Vec<Statement>)],
        ctx: &Ctx<'_>,
        place: Place,
    ) -> Result<(), Diagnostic> {
        if place.initial {
            return Err(Diagnostic::error(
                "`when` is not allowed in an initial algorithm (Modelica 11.2.7)",
            )
            .at(s.span, "here"));
        }
        if place.nested {
            return Err(Diagnostic::error(
                "a `when` statement cannot be inside `if` or `while` (Modelica 11.2.7)",
            )
            .at(s.span, "here"));
        }
        self.when_clause(branches, (s.span, true), ctx, Self::when_action)
    }

    /// One statement of a `when` statement's body, as the actions it runs at the event.
    fn when_action(
        &mut self,
        s: &'a Statement,
        ctx: &Ctx<'_>,
        actions: &mut Vec<Action>,
    ) -> Result<(), Diagnostic> {
        match &s.kind {
            StatementKind::Assign { target, value } => {
                // Read at the event, after the actions before it wrote: no symbolic values.
                let (writes, new) = self.collecting_writes(|f| f.flatten_expr(value, ctx))?;
                actions.extend(writes);
                let assigned = self.assignment(target, new, s.span, ctx, &Values::new())?;
                actions.extend(self.simultaneous(assigned, s.span)?);
                Ok(())
            }
            StatementKind::AssignOutputs { targets, call } => {
                let none = Values::new();
                let (writes, assigned) = self.collecting_writes(|f| {
                    f.output_assignments(targets, call, s.span, ctx, &none)
                })?;
                actions.extend(writes);
                actions.extend(self.simultaneous(assigned, s.span)?);
                Ok(())
            }
            StatementKind::If {
                branches,
                else_branch,
            } => {
                let action = self.when_if(branches, else_branch, ctx, Self::when_action)?;
                actions.push(action);
                Ok(())
            }
            StatementKind::For { indices, body } => {
                self.when_for(indices, body, s.span, ctx, actions, Self::when_action)
            }
            StatementKind::Call { name, args } => {
                actions.extend(self.when_call(name, args, s.span, ctx)?);
                Ok(())
            }
            StatementKind::When { .. } => Err(Diagnostic::error(
                "`when` statements cannot be nested (Modelica 11.2.7)",
            )
            .at(s.span, "nested")),
            _ => Err(Diagnostic::error(
                "inside a `when` statement mocca supports assignments (of a call's outputs too), \
                 `if`, `for`, `reinit`, `assert` and `terminate`; not `while`, `break` or \
                 `return` yet",
            )
            .at(s.span, "not supported yet")),
        }
    }
}

impl Flattener<'_> {
    /// The element assignments of one statement (an array's elements, a call's outputs) as
    /// actions that run one after the other at the event, yet each value as it was before
    /// the statement: an assignment whose value reads another's target runs before it. A
    /// cycle of such reads (`x := {x[2], x[1]}`) would need a temporary: an error.
    fn simultaneous(&self, assigned: Vec<Assigned>, span: Span) -> Result<Vec<Action>, Diagnostic> {
        let target: IndexMap<VarId, usize> = (assigned.iter().enumerate())
            .map(|(k, &(v, ..))| (v, k))
            .collect();
        // Elements of one target under different guards: only one of them writes.
        let exclusive = |i: usize, j: usize| match (assigned[i].2, assigned[j].2) {
            (Some(a), Some(b)) => a != b,
            _ => false,
        };
        // `before[j]`: the assignments whose values read `j`'s target, which must run first.
        let mut before: Vec<Vec<usize>> = vec![Vec::new(); assigned.len()];
        let mut waiting = vec![0usize; assigned.len()];
        for (i, &(_, value, _)) in assigned.iter().enumerate() {
            self.dae.pool.visit_leaves(value, |leaf| {
                if let Node::Var(v) = leaf
                    && let Some(&j) = target.get(&v)
                    && j != i
                    && !exclusive(i, j)
                {
                    before[j].push(i);
                    waiting[j] += 1;
                }
            });
        }
        let mut after: Vec<Vec<usize>> = vec![Vec::new(); assigned.len()];
        for (j, readers) in before.iter().enumerate() {
            readers.iter().for_each(|&i| after[i].push(j));
        }
        // Written order wherever the reads allow it.
        let mut ready: std::collections::BTreeSet<usize> =
            (0..assigned.len()).filter(|&k| waiting[k] == 0).collect();
        let mut actions = Vec::with_capacity(assigned.len());
        while let Some(i) = ready.pop_first() {
            let (var, value, _) = assigned[i];
            actions.push(Action::Assign { var, value, span });
            for &j in &after[i] {
                waiting[j] -= 1;
                if waiting[j] == 0 {
                    ready.insert(j);
                }
            }
        }
        if actions.len() < assigned.len() {
            return Err(Diagnostic::error(
                "the values of this assignment read each other's targets in a cycle: inside a \
                 `when` statement mocca writes the elements one after another, so this needs a \
                 temporary variable (assign the values to one first)",
            )
            .at(span, "its elements read each other"));
        }
        Ok(actions)
    }
}

/// Where a statement list runs.
#[derive(Clone, Copy)]
struct Place {
    /// In an `initial algorithm`.
    initial: bool,
    /// Inside `if` or `while`.
    nested: bool,
}

impl Place {
    /// Inside an `if` or `while` of this place.
    fn nested(self) -> Place {
        Place {
            nested: true,
            ..self
        }
    }
}

fn varying_jump(span: Span) -> Diagnostic {
    Diagnostic::error(
        "`break` or `return` under a condition that varies during the simulation is not supported yet",
    )
    .at(span, "this statement's condition is not known at translation time")
}
