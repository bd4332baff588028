//! Events of the hybrid DAE (SPEC §6; Modelica 8.5 and appendix B). The integrators step the
//! continuous part with every held variable fixed, asking [`Events`] (through [`Watch`])
//! whether a relation of a `when` condition switched; this module locates the switch, and at
//! the event fires the `when` clauses, updates the held variables until no `pre(v) <> v`
//! remains (event iteration) and applies the `reinit`s. No integrator knows what a `when` is.

use crate::causal::{Causal, EvalFailure, Point};
use crate::clauses::{Clauses, Clock};
use crate::dae::hybrid::{Action, EquationSystem};
use crate::dae::relations::varies_continuously;
use crate::dae::{Dae, ScalarType, VarKind};
use crate::equations::{self, Equations};
use crate::event_driver::{self, CLOSE, Driver, EventModel};
use crate::expr::{CmpOp, ExprId, Func, Node, VarId};
use crate::simulate::model::CompiledModel;
use crate::simulate::system::OdeSystem;
use crate::source::Span;
use crate::switching::{self, Crossing, MAX_ITERATIONS, Relations, Stepwise};
use mocca_runtime::grid::Side;

/// Crossing detection, as the integrators see it.
pub trait Watch {
    /// Whether some watched relation at `(t, x)` differs from its value at the last event.
    fn crossed(&mut self, t: f64, x: &[f64]) -> bool;

    /// The first switch inside `(t_l, t_r]` (not crossed at `t_l`, crossed at `t_r`), located
    /// on the integrator's solution `state_at`: the time just after it and the state there.
    fn locate(
        &mut self,
        t_l: f64,
        t_r: f64,
        state_at: &mut dyn FnMut(f64) -> Vec<f64>,
    ) -> (f64, Vec<f64>);
}

/// What the events of a run were.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct EventStats {
    pub time_events: u64,
    pub state_events: u64,
    /// Rounds of event iteration past the first, over all events.
    pub iterations: u64,
    /// The first event times (up to ten).
    pub first_times: Vec<f64>,
    /// `terminate(…)` ended the run.
    #[serde(skip)]
    pub terminated: Option<Termination>,
    /// Warning-level `assert`s in `when` clauses that were false, each at its first time.
    #[serde(skip)]
    pub warnings: Vec<EventWarning>,
}

/// A `terminate(message)` that fired.
#[derive(Clone, Debug, PartialEq)]
pub struct Termination {
    pub time: f64,
    /// As written (escapes kept).
    pub message: String,
    pub span: Span,
}

/// A warning-level `assert` in a `when` clause that was false when its branch fired.
#[derive(Clone, Debug, PartialEq)]
pub struct EventWarning {
    pub time: f64,
    pub message: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum EventFailure {
    Eval {
        failure: EvalFailure,
        t: f64,
    },
    /// Event iteration did not settle: these variables kept changing.
    Iteration {
        t: f64,
        /// Each as written, and where it is declared or computed.
        changing: Vec<(String, Span)>,
    },
    /// Events accumulate: this relation keeps switching.
    Chattering {
        t: f64,
        relation: String,
        /// The equation or `when` clause the relation is in.
        span: Option<Span>,
    },
    /// The assignments of the `when` branches that fired form a loop that neither substitution
    /// nor Newton settles: these variables kept changing.
    Loop {
        t: f64,
        /// Each as written, and where it is declared.
        changing: Vec<(String, Span)>,
    },
    /// A `when` condition that fired at two events no integrator step separates and holds
    /// on past the second: the event cannot leave it.
    Stuck {
        t: f64,
        condition: String,
        /// The `when` clause.
        span: Option<Span>,
    },
    /// An error-level `assert` in a `when` clause was false when its branch fired.
    Assertion {
        t: f64,
        message: String,
        span: Span,
    },
    /// A write of a `when` clause (a print, a MAT file, a removed file) failed.
    Write {
        t: f64,
        message: String,
        span: Span,
    },
}

impl std::fmt::Display for EventFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EventFailure::Eval { failure, t } => {
                write!(
                    f,
                    "the model cannot be evaluated at the event at t = {t}: {failure:?}"
                )
            }
            EventFailure::Iteration { t, changing } => write!(
                f,
                "event iteration at t = {t} did not settle after {MAX_ITERATIONS} rounds; still changing: {}",
                changing
                    .iter()
                    .map(|(name, _)| name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            EventFailure::Loop { t, changing } => write!(
                f,
                "the `when` equations that fire at t = {t} form an algebraic loop that neither substitution nor Newton solves (no solution, or one through an Integer or Boolean); its values kept changing: {}",
                changing
                    .iter()
                    .map(|(name, _)| name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            EventFailure::Chattering { t, relation, .. } => write!(
                f,
                "events accumulate at t = {t}: `{relation}` keeps switching, each event closer to the last than {CLOSE:e} of the run's length (chattering or a Zeno model)"
            ),
            EventFailure::Stuck { t, condition, .. } => write!(
                f,
                "the event at t = {t} cannot leave `{condition}`: the condition still holds after the event it fired, whose crossing the integrator no longer resolves (events accumulate, as a ball's bounces do past their Zeno time); the run stops rather than go on in a state the `when` clause means to leave"
            ),
            EventFailure::Assertion { t, message, .. } => write!(
                f,
                "assertion failed at the event at t = {t}: {}",
                crate::dae::unescape(message)
            ),
            EventFailure::Write { t, message, .. } => {
                write!(f, "at the event at t = {t}: {message}")
            }
        }
    }
}

/// A relation or stepwise function whose switching is an event: a relation of a `when`
/// condition whose sides vary continuously, or a switch of the continuous equations.
pub struct Watched {
    pub node: ExprId,
    /// The switch variable the equations read in its place (`None` for a `when` condition's).
    pub var: Option<VarId>,
}

/// Every `when` condition of `dae`, clause by clause and branch by branch.
pub fn conditions(dae: &Dae) -> Vec<ExprId> {
    (dae.hybrid.whens.iter())
        .flat_map(|w| w.branches.iter().flat_map(|b| b.conditions.iter().copied()))
        .collect()
}

/// The relations whose switching makes an event, in the order events number them: those of
/// the `when` conditions `conditions` whose sides vary continuously, then the switches of
/// the continuous equations.
pub fn watched(dae: &Dae, conditions: &[ExprId]) -> Vec<Watched> {
    let mut watched = watched_relations(dae, conditions);
    watched.extend(dae.hybrid.switches.iter().map(|s| Watched {
        node: s.value,
        var: Some(s.var),
    }));
    watched
}

/// The hybrid state of a run: the held values (in `point`), the relations watched and the
/// `when` conditions, and the shared driver's state between events.
pub struct Events<'a> {
    dae: &'a Dae,
    causal: &'a Causal,
    /// Every variable's value; the held variables' between events.
    pub point: Point,
    watched: Vec<Watched>,
    /// Every `when` condition, clause by clause and branch by branch.
    conditions: Vec<ExprId>,
    /// Per clause, per branch: how many conditions it has.
    shapes: Vec<Vec<usize>>,
    driver: Driver,
    /// The model as the run compiled it, evaluating the events on a register file of its own.
    compiled: CompiledModel,
    /// The states and derivatives it is evaluated with, kept between evaluations.
    work: (Vec<f64>, Vec<f64>),
    /// What the model said at its events (`terminate`, warnings); the counts are the
    /// driver's until [`Events::stats`].
    notes: EventStats,
}

impl<'a> Events<'a> {
    /// Where the events' own evaluations first solved a loop on a singular Jacobian.
    pub fn singular_loop(&self) -> Option<(f64, usize)> {
        self.compiled.singular_loop()
    }

    /// The events of a run from `start` to `stop`, from the initial `point` (parameters and
    /// start values); `None` when the model has none.
    pub fn new(
        dae: &'a Dae,
        causal: &'a Causal,
        compiled: &CompiledModel,
        (start, stop): (f64, f64),
    ) -> Option<Events<'a>> {
        if dae.hybrid.is_empty() {
            return None;
        }
        let point = compiled.point();
        let conditions = conditions(dae);
        let watched = watched(dae, &conditions);
        let clocks = dae
            .hybrid
            .samples
            .iter()
            .map(|s| Clock {
                var: s.var.0 as usize,
                start: dae.pool.eval(s.start, &point).unwrap_or(f64::NAN),
                interval: dae.pool.eval(s.interval, &point).unwrap_or(f64::NAN),
                next: 0,
            })
            .collect();
        let shapes = (dae.hybrid.whens.iter())
            .map(|w| w.branches.iter().map(|b| b.conditions.len()).collect())
            .collect();
        let sizes = (watched.len(), conditions.len());
        Some(Events {
            shapes,
            dae,
            causal,
            point,
            compiled: compiled.clone(),
            work: Default::default(),
            driver: Driver::new(sizes, clocks, (start, stop)),
            watched,
            conditions,
            notes: EventStats::default(),
        })
    }

    /// The initial event at `t` from the initialised states `x` (see
    /// [`event_driver::initial`]); `x` takes any `reinit`.
    pub fn initial(&mut self, t: f64, x: &mut [f64]) -> Result<(), EventFailure> {
        event_driver::initial(self, t, x)
    }

    /// The terminal event at the end `t` of a run, with the states `x` there (see
    /// [`event_driver::terminal`]): whether there was one.
    pub fn terminal(&mut self, t: f64, x: &mut [f64]) -> Result<bool, EventFailure> {
        event_driver::terminal(self, t, x)
    }

    /// What the events of the run were.
    pub fn stats(&self) -> EventStats {
        let counts = &self.driver.counts;
        EventStats {
            time_events: counts.time_events,
            state_events: counts.state_events,
            iterations: counts.iterations,
            first_times: counts.first_times.clone(),
            ..self.notes.clone()
        }
    }

    /// Sets each switch to its relation's value at the start `t` from the states `x`: the
    /// mode the initialisation starts from (see [`event_driver::free_at_start`]).
    pub fn free_at_start(&mut self, t: f64, x: &[f64]) -> Result<(), EventFailure> {
        event_driver::free_at_start(self, t, x)
    }

    /// The next `sample` instant after `t` (infinite without one).
    pub fn next_time_event(&self, t: f64) -> f64 {
        self.driver.next_time_event(t)
    }

    /// The event at `t` with the states `x` just before it (see [`event_driver::at`]): a
    /// time event when `scheduled` or `t` is a sample instant, else a state event.
    pub fn at(&mut self, t: f64, x: &mut [f64], scheduled: bool) -> Result<(), EventFailure> {
        event_driver::at(self, t, x, scheduled)
    }

    /// A fired branch's assignments in written order. `Err` names the unknowns of equations
    /// solved together that Newton did not solve.
    fn assign_actions(&mut self, actions: &[Action]) -> Result<(), Vec<usize>> {
        for action in actions {
            match action {
                Action::Assign { var, value, .. } => {
                    let x = self.eval(*value);
                    self.point.vars[var.0 as usize] = x;
                }
                Action::If {
                    branches,
                    otherwise,
                } => {
                    let chosen = self.chosen(branches, otherwise);
                    self.assign_actions(chosen)?;
                }
                Action::Solve(system) => {
                    let mut on_point = PointEquations {
                        dae: self.dae,
                        point: &mut self.point,
                        system,
                    };
                    if equations::solve(&mut on_point).is_err() {
                        return Err(system.vars.iter().map(|v| v.0 as usize).collect());
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A fired branch's `reinit`s (gathered into `reinits`), asserts and `terminate`s in
    /// written order, at the event's solution.
    fn effects_of(
        &mut self,
        t: f64,
        actions: &[Action],
        reinits: &mut Vec<(usize, f64)>,
    ) -> Result<(), EventFailure> {
        for action in actions {
            match action {
                Action::Reinit { var, value, .. } => {
                    reinits.push((var.0 as usize, self.eval(*value)));
                }
                Action::If {
                    branches,
                    otherwise,
                } => {
                    let chosen = self.chosen(branches, otherwise);
                    self.effects_of(t, chosen, reinits)?;
                }
                Action::Assert(a) => {
                    if self.eval(a.condition) != 0.0 {
                        continue;
                    }
                    if a.is_error {
                        return Err(EventFailure::Assertion {
                            t,
                            message: a.message.clone(),
                            span: a.span,
                        });
                    }
                    if !self.notes.warnings.iter().any(|w| w.span == a.span) {
                        self.notes.warnings.push(EventWarning {
                            time: t,
                            message: a.message.clone(),
                            span: a.span,
                        });
                    }
                }
                Action::Terminate { message, span } => {
                    self.notes.terminated.get_or_insert(Termination {
                        time: t,
                        message: message.clone(),
                        span: *span,
                    });
                }
                Action::Write { write, span } => {
                    let values = |e: &[ExprId]| e.iter().map(|&e| self.eval(e)).collect();
                    let done = crate::simulate::writes::perform(write, values);
                    done.map_err(|message| EventFailure::Write {
                        t,
                        message,
                        span: *span,
                    })?;
                }
                Action::Assign { .. } | Action::Solve(_) => {}
            }
        }
        Ok(())
    }

    /// The actions of an `if` inside `when`: its first branch whose condition holds.
    fn chosen<'b>(
        &self,
        branches: &'b [(ExprId, Vec<Action>)],
        otherwise: &'b [Action],
    ) -> &'b [Action] {
        branches
            .iter()
            .find(|(condition, _)| self.eval(*condition) != 0.0)
            .map_or(otherwise, |(_, body)| body)
    }

    /// The switches whose relation disagrees with them (past its threshold), as written.
    fn moving_switches(&self) -> Vec<(String, Span)> {
        (switching::moving(self).into_iter())
            .filter_map(|k| {
                let var = self.watched[k].var?;
                let relation = format!("`{}`", self.dae.show(self.watched[k].node));
                Some((relation, self.dae.var(var).span))
            })
            .collect()
    }

    /// The discrete variables (held, Boolean or Integer) whose value differs from their `pre`.
    fn changing(&self) -> Vec<(String, Span)> {
        self.dae
            .hybrid
            .pre
            .iter()
            .filter(|&&(p, v)| {
                let var = self.dae.var(v);
                (var.kind == VarKind::Held || var.ty != ScalarType::Real)
                    && self.point.vars[p.0 as usize] != self.point.vars[v.0 as usize]
            })
            .map(|&(_, v)| (self.dae.var(v).name.clone(), self.dae.var(v).span))
            .collect()
    }

    /// `pre(v) := v`, of the Real `v`s only when `reals_only`: `pre(v)` on entering an event
    /// is `v`'s left limit. For a Real that is its value now; a Boolean or Integer keeps the
    /// value it had since the last event (one computed from a relation, `impact = h <= 0`, has
    /// already switched at the located time, which is just past the switch).
    fn set_pre_values(&mut self, reals_only: bool) {
        for &(p, v) in &self.dae.hybrid.pre {
            // The pre variable's own type (see `emit`'s PRE table).
            if !reals_only || self.dae.var(p).ty == ScalarType::Real {
                self.point.vars[p.0 as usize] = self.point.vars[v.0 as usize];
            }
        }
    }

    /// [`Events::evaluate`] while the event settles, where a failure is not yet an error: a
    /// switch still on its side from before the event may select what the settled model does
    /// not read (`x[i]` with `i` out of range under `if i > 0`, whose switch has not moved
    /// yet). The values computed before the failure stand, the failed one is NaN (which moves
    /// no switch); the evaluation after the event has settled is checked.
    fn evaluate_settling(&mut self, t: f64) {
        let _ = self.evaluate(t);
    }

    fn load_point(&mut self, t: f64, x: &[f64]) -> Result<(), EventFailure> {
        self.load_point_on(t, x, Side::After)
    }

    fn load_point_on(&mut self, t: f64, x: &[f64], side: Side) -> Result<(), EventFailure> {
        for (&xi, &s) in x.iter().zip(&self.causal.states) {
            self.point.vars[s.0 as usize] = xi;
        }
        self.evaluate_on(t, side)
    }

    /// Every variable at `t` from the states and held values in `point`, by the compiled
    /// model (with the relations of time as they are just after `t`), as an emitted crate
    /// evaluates its events.
    fn evaluate(&mut self, t: f64) -> Result<(), EventFailure> {
        self.evaluate_on(t, Side::After)
    }

    /// [`Events::evaluate`] with the relations of time as they are on `side` of `t`.
    fn evaluate_on(&mut self, t: f64, side: Side) -> Result<(), EventFailure> {
        self.point.time = t;
        let compiled = &mut self.compiled;
        compiled.load(&self.point);
        match side {
            Side::Before => compiled.enter_interval_to(t),
            Side::After => compiled.enter_interval_from(t),
        }
        let (x, dx) = &mut self.work;
        x.clear();
        x.extend(
            self.causal
                .states
                .iter()
                .map(|s| self.point.vars[s.0 as usize]),
        );
        dx.resize(x.len(), 0.0);
        let evaluated = compiled.rhs(t, x, dx);
        compiled.store(&mut self.point);
        evaluated.map_err(|failure| EventFailure::Eval { failure, t })
    }

    fn eval(&self, e: ExprId) -> f64 {
        self.dae.pool.eval(e, &self.point).unwrap_or(f64::NAN)
    }

    fn values(&self, exprs: &[ExprId]) -> Vec<bool> {
        exprs.iter().map(|&e| self.eval(e) != 0.0).collect()
    }

    /// Condition `k` that the event at `t` cannot leave, named by its first relation.
    fn stuck_at(&self, t: f64, k: usize) -> EventFailure {
        let condition = self.conditions[k];
        let relation = (self.watched.iter())
            .position(|w| w.var.is_none() && reads(self.dae, condition, w.node));
        EventFailure::Stuck {
            t,
            condition: self.dae.show(condition),
            span: relation.and_then(|r| self.span_of(r)),
        }
    }

    /// Chattering at `t`, named by the relation nearest to switching.
    fn chattering_at(&self, t: f64) -> EventFailure {
        let held = &self.driver.held;
        let nearest = (0..self.watched.len()).min_by(|&a, &b| {
            let g = |k: usize| self.crossing(k).function(held[k], f64::NAN).abs();
            g(a).total_cmp(&g(b))
        });
        let Some(k) = nearest else {
            return EventFailure::Chattering {
                t,
                relation: String::new(),
                span: None,
            };
        };
        let node = self.watched[k].node;
        EventFailure::Chattering {
            t,
            relation: self.dae.show(node),
            span: self.span_of(k),
        }
    }

    /// Where watched relation `k` is written: its switch's equation, or the `when` clause whose
    /// condition holds it.
    fn span_of(&self, k: usize) -> Option<Span> {
        let node = self.watched[k].node;
        if let Some(var) = self.watched[k].var {
            return Some(self.dae.var(var).span);
        }
        let clauses = &self.dae.hybrid.whens;
        clauses
            .iter()
            .find(|w| {
                w.branches
                    .iter()
                    .flat_map(|b| &b.conditions)
                    .any(|&c| reads(self.dae, c, node))
            })
            .map(|w| w.span)
    }
}

impl Watch for Events<'_> {
    fn crossed(&mut self, t: f64, x: &[f64]) -> bool {
        switching::crossed(self, t, x)
    }

    fn locate(
        &mut self,
        t_l: f64,
        t_r: f64,
        state_at: &mut dyn FnMut(f64) -> Vec<f64>,
    ) -> (f64, Vec<f64>) {
        event_driver::locate(self, (t_l, t_r), state_at)
    }
}

impl Relations for Events<'_> {
    type Error = EventFailure;

    fn count(&self) -> usize {
        self.watched.len()
    }

    fn value(&self, k: usize) -> f64 {
        self.eval(self.watched[k].node)
    }

    fn crossing(&self, k: usize) -> Crossing {
        match self.dae.pool.node(self.watched[k].node) {
            Node::Cmp(_, lhs, rhs) => Crossing::Sides(self.eval(lhs), self.eval(rhs)),
            Node::Call(f, arg) => Crossing::Argument(stepwise(f), self.eval(arg)),
            _ => Crossing::Sides(f64::NAN, f64::NAN),
        }
    }

    fn held(&self, k: usize) -> f64 {
        self.driver.held[k]
    }

    fn switch(&self, k: usize) -> Option<f64> {
        (self.watched[k].var).map(|v| self.point.vars[v.0 as usize])
    }

    fn set_switch(&mut self, k: usize, value: f64) {
        if let Some(v) = self.watched[k].var {
            self.point.vars[v.0 as usize] = value;
        }
    }

    fn evaluate(&mut self, t: f64) -> Result<(), EventFailure> {
        self.evaluate_settling(t);
        Ok(())
    }

    fn load(&mut self, t: f64, x: &[f64]) -> bool {
        self.load_point(t, x).is_ok()
    }
}

impl Clauses for Events<'_> {
    type Error = EventFailure;

    fn clauses(&self) -> usize {
        self.shapes.len()
    }

    fn statement(&self, c: usize) -> bool {
        self.dae.hybrid.whens[c].statement
    }

    fn branch_conditions(&self, c: usize) -> &[usize] {
        &self.shapes[c]
    }

    fn condition(&self, k: usize) -> bool {
        self.eval(self.conditions[k]) != 0.0
    }

    fn before(&self, k: usize) -> bool {
        self.driver.before[k]
    }

    fn remember_conditions(&mut self) {
        self.driver.before = self.values(&self.conditions);
    }

    fn assigned(&self, c: usize, b: usize) -> Vec<usize> {
        let actions = &self.dae.hybrid.whens[c].branches[b].actions;
        (Action::assigned(actions).into_iter())
            .map(|v| v.0 as usize)
            .collect()
    }

    fn var(&self, v: usize) -> f64 {
        self.point.vars[v]
    }

    fn set_var(&mut self, v: usize, x: f64) {
        self.point.vars[v] = x;
    }

    fn vars(&self) -> Vec<f64> {
        self.point.vars.clone()
    }

    fn is_real(&self, v: usize) -> bool {
        self.dae.var(VarId(v as u32)).ty == ScalarType::Real
    }

    fn assign(&mut self, c: usize, b: usize) -> Result<(), Vec<usize>> {
        let dae = self.dae;
        self.assign_actions(&dae.hybrid.whens[c].branches[b].actions)
    }

    fn effects(
        &mut self,
        t: f64,
        (c, b): (usize, usize),
        reinits: &mut Vec<(usize, f64)>,
    ) -> Result<(), EventFailure> {
        let dae = self.dae;
        self.effects_of(t, &dae.hybrid.whens[c].branches[b].actions, reinits)
    }

    fn evaluate(&mut self, t: f64) -> Result<(), EventFailure> {
        self.evaluate(t)
    }

    fn loop_failure(&self, t: f64, moving: Vec<usize>) -> EventFailure {
        let var = |v: usize| self.dae.var(VarId(v as u32));
        EventFailure::Loop {
            t,
            changing: (moving.into_iter())
                .map(|v| (var(v).name.clone(), var(v).span))
                .collect(),
        }
    }
}

impl EventModel for Events<'_> {
    /// Whether `terminate(…)` has ended the run.
    fn terminated(&self) -> bool {
        self.notes.terminated.is_some()
    }

    fn driver(&self) -> &Driver {
        &self.driver
    }

    fn driver_mut(&mut self) -> &mut Driver {
        &mut self.driver
    }

    fn load_states(&mut self, t: f64, x: &[f64]) -> Result<(), EventFailure> {
        self.load_point(t, x)
    }

    fn load_left_limit(&mut self, t: f64, x: &[f64]) -> Result<(), EventFailure> {
        self.load_point_on(t, x, Side::Before)
    }

    fn save(&self) -> Vec<f64> {
        let mut saved = self.point.vars.clone();
        saved.extend(&self.point.ders);
        saved.push(self.point.time);
        saved
    }

    fn restore(&mut self, mut saved: Vec<f64>) {
        self.point.time = saved.pop().unwrap_or(self.point.time);
        let ders = saved.split_off(self.point.vars.len());
        self.point.vars = saved;
        self.point.ders = ders;
    }

    fn states(&self, x: &mut [f64]) {
        for (xi, &s) in x.iter_mut().zip(&self.causal.states) {
            *xi = self.point.vars[s.0 as usize];
        }
    }

    fn derivatives(&self) -> Vec<f64> {
        (self.causal.states.iter())
            .map(|s| self.point.ders[s.0 as usize])
            .collect()
    }

    fn relations_of(&self, k: usize) -> Vec<usize> {
        let condition = self.conditions[k];
        (self.watched.iter().enumerate())
            .filter(|(_, w)| w.var.is_none() && reads(self.dae, condition, w.node))
            .map(|(r, _)| r)
            .collect()
    }

    fn set_pre(&mut self, reals_only: bool) {
        self.set_pre_values(reals_only);
    }

    fn discrete_changing(&self) -> bool {
        !self.changing().is_empty()
    }

    fn flags(&self) -> [Option<usize>; 2] {
        let hybrid = &self.dae.hybrid;
        [hybrid.initial, hybrid.terminal].map(|v| v.map(|v| v.0 as usize))
    }

    fn assign_initial(&mut self) {
        for eq in &self.dae.initial_equations {
            if let Some((v, value)) = self.dae.initial_assignment(eq) {
                self.point.vars[v.0 as usize] = self.eval(value);
            }
        }
    }

    fn clock_timing(&self, k: usize) -> (f64, f64) {
        let sample = &self.dae.hybrid.samples[k];
        (self.eval(sample.start), self.eval(sample.interval))
    }

    fn chattering(&self, t: f64) -> EventFailure {
        self.chattering_at(t)
    }

    fn stuck(&self, t: f64, k: usize) -> EventFailure {
        self.stuck_at(t, k)
    }

    fn not_settled(&self, t: f64) -> EventFailure {
        let mut changing = self.changing();
        changing.extend(self.moving_switches());
        EventFailure::Iteration { t, changing }
    }
}

/// The jumps of stepwise function `f` (`floor`, `ceil`; `integer` and the others truncate).
fn stepwise(f: Func) -> Stepwise {
    match f {
        Func::Floor => Stepwise::Floor,
        Func::Ceil => Stepwise::Ceil,
        _ => Stepwise::TowardZero,
    }
}

/// Whether expression `node` is part of `root`.
pub fn reads(dae: &Dae, root: ExprId, node: ExprId) -> bool {
    let mut stack = vec![root];
    while let Some(e) = stack.pop() {
        if e == node {
            return true;
        }
        stack.extend(dae.pool.children(e));
    }
    false
}

/// The relations in `conditions` whose sides are not fixed between events (they read a state,
/// an unknown or time): those whose switching makes an event.
fn watched_relations(dae: &Dae, conditions: &[ExprId]) -> Vec<Watched> {
    let mut out: Vec<Watched> = Vec::new();
    let mut stack: Vec<ExprId> = conditions.to_vec();
    let mut seen = std::collections::HashSet::new();
    while let Some(e) = stack.pop() {
        if !seen.insert(e) {
            continue;
        }
        if let Node::Cmp(op, ..) = dae.pool.node(e) {
            if varies_continuously(dae, e) && op != CmpOp::Eq && op != CmpOp::Ne {
                out.push(Watched { node: e, var: None });
            }
            continue;
        }
        stack.extend(dae.pool.children(e).as_slice().iter().copied());
    }
    out.sort_by_key(|r| r.node.index());
    out
}

/// Equations solved together at an event, on the event's point.
struct PointEquations<'a> {
    dae: &'a Dae,
    point: &'a mut Point,
    system: &'a EquationSystem,
}

impl PointEquations<'_> {
    fn eval(&self, e: ExprId) -> f64 {
        self.dae.pool.eval(e, self.point).unwrap_or(f64::NAN)
    }
}

impl Equations for PointEquations<'_> {
    fn unknowns(&self) -> usize {
        self.system.vars.len()
    }
    fn get(&self, k: usize) -> f64 {
        self.point.vars[self.system.vars[k].0 as usize]
    }
    fn set(&mut self, k: usize, value: f64) {
        self.point.vars[self.system.vars[k].0 as usize] = value;
    }
    fn residuals(&self, out: &mut [f64]) {
        for (o, &r) in out.iter_mut().zip(&self.system.residuals) {
            *o = self.eval(r);
        }
    }
    fn jacobian(&self, out: &mut [f64]) {
        let n = self.system.vars.len();
        for &(i, j, entry) in &self.system.jacobian {
            out[i * n + j] = self.eval(entry);
        }
    }
}
