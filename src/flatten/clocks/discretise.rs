//! Clocked discretised continuous partitions (Modelica 16.8): a partition whose equations read
//! `der(x)` and whose clock is `Clock(c, solverMethod = …)` integrates its states from tick to
//! tick by that method with the step `interval()`. Each `der(x)` becomes a variable `der(x)`
//! of the partition and each state `x` gets the method's update as one more equation:
//!
//! - `"ExplicitEuler"`: `x = previous(x) + h·previous(der(x))`;
//! - `"ImplicitEuler"`: `x = previous(x) + h·der(x)`;
//! - `"ImplicitTrapezoid"`: `x = previous(x) + h/2·(der(x) + previous(der(x)))`;
//!
//! except at the partition's first tick, where `x = previous(x)`, its start value: "the
//! initial conditions will be used at the first tick of the clock, and the first integration
//! step will go from the first to the second tick" (16.8.2). The partition's index is
//! reduced before ([`index`](super::index)), and it is then solved as every clocked partition
//! is: an implicit method whose `der(x)` reads `x` is a block solved at each tick.

use crate::expr::hash::{FxHashMap, FxHashSet};

use super::{Flattener, Mark, Partitions, Sets, Tick};
use crate::dae::{Equation, EquationOrigin, ScalarType};
use crate::diagnostics::Diagnostic;
use crate::expr::{ExprId, Node, Substituted, VarId};
use crate::source::Span;
use crate::syntax::ast::{Arg, Expr};

use super::super::expr::{Ctx, Val};
use super::super::tree::Tree;

/// How a discretised partition integrates its states from one tick to the next.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(in crate::flatten) enum SolverMethod {
    ExplicitEuler,
    ImplicitEuler,
    ImplicitTrapezoid,
}

impl SolverMethod {
    /// The method a `solverMethod` string names, of those mocca integrates with.
    fn from_name(name: &str) -> Option<SolverMethod> {
        match name {
            "ExplicitEuler" => Some(SolverMethod::ExplicitEuler),
            "ImplicitEuler" => Some(SolverMethod::ImplicitEuler),
            "ImplicitTrapezoid" => Some(SolverMethod::ImplicitTrapezoid),
            _ => None,
        }
    }
}

/// A state of a discretised partition: `x`, the variable its `der(x)` became, and what
/// integrates it.
struct DiscreteState {
    x: VarId,
    derivative: VarId,
    method: SolverMethod,
    interval: ExprId,
    /// A variable of its partition.
    key: VarId,
    span: Span,
}

impl<'a> Flattener<'a> {
    /// `Clock(c, solverMethod = name)`: the clock `c`, whose partitions are integrated by the
    /// method `name` names.
    pub(super) fn solver_clock(
        &mut self,
        c: &'a Expr,
        args: &'a [Arg],
        span: Span,
        ctx: &Ctx<'_>,
    ) -> Result<Val, Diagnostic> {
        let Some(method) = super::named_argument(args, "solverMethod") else {
            return Err(Diagnostic::error(
                "`Clock` of a clock takes the partition's `solverMethod` as well",
            )
            .at(span, "here"));
        };
        let name = self.string_value(&method.value, ctx, 0)?;
        let Some(method) = SolverMethod::from_name(&name) else {
            return Err(Diagnostic::error(format!(
                "the solver method \"{name}\" is not supported: mocca discretises a clocked partition by \"ExplicitEuler\", \"ImplicitEuler\" or \"ImplicitTrapezoid\""
            ))
            .at(method.value.span, "here"));
        };
        let clock = self.scalar_argument(c, ctx)?;
        self.clocks.solvers.push((clock, method, span));
        Ok(Tree::Leaf(clock))
    }

    /// The partitions' equations that read `der(x)` rewritten as [the module](self) says,
    /// with the states' updates appended to the equations (and marked in `in_partition`).
    /// `methods` gives each tick that has one its solver method.
    pub(super) fn discretise(
        &mut self,
        sets: &mut Sets,
        partitions: &Partitions,
        in_partition: &mut Vec<bool>,
        methods: &FxHashMap<usize, SolverMethod>,
    ) -> Result<(), Diagnostic> {
        let discretised = methods.keys().copied().collect();
        self.reduce_partition_index(sets, partitions, in_partition, &discretised)?;
        let states = self.discrete_states(sets, partitions, in_partition, methods)?;
        if states.is_empty() {
            return Ok(());
        }
        let derivative_of: FxHashMap<VarId, VarId> =
            states.iter().map(|s| (s.x, s.derivative)).collect();
        let mut done = Substituted::default();
        let pool = &mut self.dae.pool;
        let mut rewrite = |e: ExprId| {
            pool.substitute_with(
                e,
                &mut |pool, node| match node {
                    Node::Der(x) => derivative_of.get(&x).map(|&d| pool.var(d)),
                    _ => None,
                },
                &mut done,
            )
        };
        for (eq, _) in (self.dae.equations.iter_mut().zip(in_partition.iter())).filter(|(_, p)| **p)
        {
            eq.lhs = rewrite(eq.lhs);
            eq.rhs = rewrite(eq.rhs);
            eq.residual = rewrite(eq.residual);
        }
        for ifs in &mut self.clocks.if_equations {
            ifs.residuals.iter_mut().for_each(|r| *r = rewrite(*r));
            for (lhs, rhs, _) in ifs.branches.iter_mut().flatten() {
                *lhs = rewrite(*lhs);
                *rhs = rewrite(*rhs);
            }
        }
        let defining = self.defining_values(&derivative_of, in_partition);
        let mut first_of: FxHashMap<u32, ExprId> = FxHashMap::default();
        for state in states {
            let root = sets.find(state.key);
            let first = match first_of.get(&root) {
                Some(&first) => first,
                None => {
                    let first = self.partition_first_tick(sets, state.key, state.span);
                    first_of.insert(root, first);
                    first
                }
            };
            let f = defining.get(&state.derivative).copied();
            self.push_update(&state, first, f);
            in_partition.push(true);
        }
        Ok(())
    }

    /// The states of the discretised partitions: each `x` whose `der(x)` a partition's
    /// equation reads, a new variable for its derivative joined to the partition.
    fn discrete_states(
        &mut self,
        sets: &mut Sets,
        partitions: &Partitions,
        in_partition: &[bool],
        methods: &FxHashMap<usize, SolverMethod>,
    ) -> Result<Vec<DiscreteState>, Diagnostic> {
        let holds = Default::default();
        let mut states: Vec<DiscreteState> = Vec::new();
        let mut seen: FxHashSet<VarId> = FxHashSet::default();
        for k in (0..self.dae.equations.len()).filter(|&k| in_partition[k]) {
            let eq = &self.dae.equations[k];
            let (lhs, rhs, span) = (eq.lhs, eq.rhs, eq.span);
            let mut ders = Vec::new();
            for side in [lhs, rhs] {
                self.dae.pool.visit_leaves(side, |node| {
                    if let Node::Der(x) = node
                        && !ders.contains(&x)
                    {
                        ders.push(x);
                    }
                });
            }
            let Some(&first_state) = ders.first() else {
                continue;
            };
            let mut reads = self.partition_reads(lhs, &holds);
            reads.extend(self.partition_reads(rhs, &holds));
            let key = reads.first().copied().unwrap_or(first_state);
            let tick = partitions.get(&sets.find(key)).and_then(|p| p.tick);
            let Some((tick, &method)) = tick.and_then(|t| Some((t, methods.get(&t)?))) else {
                return Err(Diagnostic::error(
                    "this clocked equation reads `der`, which needs its partition's clock to carry a solver method: `Clock(c, solverMethod = \"ImplicitEuler\")` (Modelica 16.8)",
                )
                .at(span, "a derivative in a clocked partition"));
            };
            let Tick::Periodic { interval, .. } = self.clocks.ticks[tick].1 else {
                return Err(Diagnostic::error(
                    "a discretised partition on an event clock is not supported: its step is the interval of a periodic clock",
                )
                .at(span, "here"));
            };
            for x in ders {
                if !seen.insert(x) {
                    continue;
                }
                let derivative = self.derivative_variable(x);
                sets.union(key, x);
                sets.union(key, derivative);
                states.push(DiscreteState {
                    x,
                    derivative,
                    method,
                    interval,
                    key,
                    span,
                });
            }
        }
        Ok(states)
    }

    /// The variable `der(x)` of a discretised partition, 0 before its first tick.
    fn derivative_variable(&mut self, x: VarId) -> VarId {
        let of = self.dae.var(x);
        let (name, span) = (format!("der({})", of.name), of.span);
        let var = self.algebraic_variable(name, ScalarType::Real, span);
        self.dae.variables[var.0 as usize].start = Some(self.dae.pool.zero());
        var
    }

    /// `firstTick()` of the partition of `key`, joined to it.
    fn partition_first_tick(&mut self, sets: &mut Sets, key: VarId, span: Span) -> ExprId {
        let Tree::Leaf(first) = self.first_tick(None, span) else {
            unreachable!("firstTick is a scalar")
        };
        if let Some(Mark::FirstTick { var, ticked, .. }) = self.clocks.marks.last() {
            sets.union(key, *var);
            sets.union(key, *ticked);
        }
        first
    }

    /// What the partitions' equations `derivative = f` (or `f = derivative`) give each of
    /// the derivatives `derivative_of` made, for those that have one.
    fn defining_values(
        &self,
        derivative_of: &FxHashMap<VarId, VarId>,
        in_partition: &[bool],
    ) -> FxHashMap<VarId, ExprId> {
        let derivatives: FxHashSet<VarId> = derivative_of.values().copied().collect();
        let pool = &self.dae.pool;
        let derivative = |e: ExprId| match pool.node(e) {
            Node::Var(v) if derivatives.contains(&v) => Some(v),
            _ => None,
        };
        let mut defining = FxHashMap::default();
        for (eq, _) in (self.dae.equations.iter().zip(in_partition)).filter(|(_, p)| **p) {
            match (derivative(eq.lhs), derivative(eq.rhs)) {
                (Some(d), None) => defining.entry(d).or_insert(eq.rhs),
                (None, Some(d)) => defining.entry(d).or_insert(eq.lhs),
                _ => continue,
            };
        }
        defining
    }

    /// `x = if first then previous(x) else previous(x) + h·step`, `step` the method's. An
    /// implicit step whose derivative `defining` reads x itself is solved for x where it is
    /// affine in x (a linear ODE: `der(x) = -x + u`), so that x and its derivative make no
    /// loop.
    fn push_update(&mut self, state: &DiscreteState, first: ExprId, defining: Option<ExprId>) {
        let pre_x = self.pre_variable(state.x);
        let pre_derivative = match state.method {
            SolverMethod::ImplicitEuler => None,
            _ => Some(self.pre_variable(state.derivative)),
        };
        let pool = &mut self.dae.pool;
        let previous = pool.var(pre_x);
        let now = pool.var(state.derivative);
        let before = pre_derivative.map(|p| pool.var(p));
        let step = match (state.method, before) {
            (SolverMethod::ImplicitEuler, _) | (_, None) => now,
            (SolverMethod::ExplicitEuler, Some(before)) => before,
            (SolverMethod::ImplicitTrapezoid, Some(before)) => {
                let sum = pool.add(now, before);
                let half = pool.constant(0.5);
                pool.mul(half, sum)
            }
        };
        let increment = pool.mul(state.interval, step);
        let mut integrated = pool.add(previous, increment);
        let x = Node::Var(state.x);
        if let Some(f) = defining.filter(|&f| pool.depends_on(f, x))
            && state.method != SolverMethod::ExplicitEuler
        {
            let derivative = Node::Var(state.derivative);
            let through_f = pool.substitute(integrated, &mut |_, n| (n == derivative).then_some(f));
            let x_value = pool.var(state.x);
            let residual = pool.sub(x_value, through_f);
            if let Some(solved) = pool.solve_affine(residual, x) {
                integrated = solved;
            }
        }
        let value = pool.if_then_else(first, previous, integrated);
        let place = (state.span, self.dae.var(state.x).component.clone());
        let pool = &mut self.dae.pool;
        let eq = Equation::assignment(pool, state.x, value, EquationOrigin::Model, place);
        self.dae.equations.push(eq);
    }
}
