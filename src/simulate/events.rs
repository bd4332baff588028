//! Events of the hybrid DAE (SPEC §6; Modelica 8.5 and appendix B). The integrators step the
//! continuous part with every held variable fixed, asking [`Events`] (through [`Watch`])
//! whether a relation of a `when` condition switched; this module locates the switch, and at
//! the event fires the `when` clauses, updates the held variables until no `pre(v) <> v`
//! remains (event iteration) and applies the `reinit`s. No integrator knows what a `when` is.

use crate::causal::{Causal, EvalFailure, Point};
use crate::clauses::{self, Clauses, Clock};
use crate::dae::hybrid::Action;
use crate::dae::relations::varies_continuously;
use crate::dae::{Dae, ScalarType, VarKind};
use crate::expr::{CmpOp, ExprId, Func, Node, VarId};
use crate::simulate::model::CompiledModel;
use crate::simulate::system::OdeSystem;
use crate::source::Span;
use crate::switching::{self, Crossing, MAX_ITERATIONS, Relations, Stepwise, Threshold};

/// Events in a row, each closer than [`CLOSE`] of the run's length to the one before, that
/// make chattering (a Zeno accumulation) an error rather than a run that never ends or a
/// ball that falls through the floor once its bounces are shorter than the root tolerance.
const MAX_CLOSE_EVENTS: usize = 10;
const CLOSE: f64 = 1e-6;
/// How far past an event (in root tolerances) a relation is looked at to tell which side it
/// is heading to.
const LOOK_AHEAD: f64 = 1e3;

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

/// The hybrid state of a run: the held values (in `point`), the relations watched, the
/// conditions' values at the last event and the sample clocks.
pub struct Events<'a> {
    dae: &'a Dae,
    causal: &'a Causal,
    /// Every variable's value; the held variables' between events.
    pub point: Point,
    watched: Vec<Watched>,
    /// Per watched relation or function: its value between events.
    held: Vec<f64>,
    /// Every `when` condition, clause by clause and branch by branch.
    conditions: Vec<ExprId>,
    /// Per clause, per branch: how many conditions it has.
    shapes: Vec<Vec<usize>>,
    /// Per condition: its value at the last event (or round of event iteration).
    before: Vec<bool>,
    clocks: Vec<Clock>,
    /// Roots are located to this time.
    tolerance: f64,
    /// Events closer than this in a row are chattering.
    close: f64,
    close_events: usize,
    last_event: f64,
    /// Per condition: whether it fired (became true) at the last event.
    fired: Vec<bool>,
    /// Where the step in which the last switch was located began.
    located_from: f64,
    /// The model as the run compiled it, evaluating the events on a register file of its own.
    compiled: CompiledModel,
    /// The states and derivatives it is evaluated with, kept between evaluations.
    work: (Vec<f64>, Vec<f64>),
    pub stats: EventStats,
}

impl<'a> Events<'a> {
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
        let scale = stop.abs().max((stop - start).abs()).max(f64::MIN_POSITIVE);
        let before_len = conditions.len();
        let shapes = (dae.hybrid.whens.iter())
            .map(|w| w.branches.iter().map(|b| b.conditions.len()).collect())
            .collect();
        Some(Events {
            shapes,
            dae,
            causal,
            point,
            compiled: compiled.clone(),
            work: Default::default(),
            held: vec![0.0; watched.len()],
            watched,
            before: vec![false; conditions.len()],
            conditions,
            clocks,
            tolerance: 1e-12 * scale,
            close: CLOSE * scale,
            close_events: 0,
            last_event: f64::NEG_INFINITY,
            fired: vec![false; before_len],
            located_from: f64::NEG_INFINITY,
            stats: EventStats::default(),
        })
    }

    /// The initial event at `t` from the initialised states `x`: `initial()` is true, the
    /// `when` conditions start from their values with it false (so that only a condition
    /// holding `initial()` fires), then event iteration. `x` takes any `reinit`.
    pub fn initial(&mut self, t: f64, x: &mut [f64]) -> Result<(), EventFailure> {
        self.load_states(t, x)?;
        // A clock may start at a parameter the initial system computed: read it now.
        for (clock, sample) in self.clocks.iter_mut().zip(&self.dae.hybrid.samples) {
            let eval = |e| self.dae.pool.eval(e, &self.point).unwrap_or(f64::NAN);
            clock.start = eval(sample.start);
            clock.interval = eval(sample.interval);
        }
        for clock in &mut self.clocks {
            let at_start = clock.start_at(t, self.tolerance);
            self.point.vars[clock.var] = if at_start { 1.0 } else { 0.0 };
        }
        self.load_states(t, x)?;
        // Initial equations of `when`-assigned variables, in order (an initial algorithm's).
        for eq in &self.dae.initial_equations {
            if let Some((v, value)) = self.dae.initial_assignment(eq) {
                self.point.vars[v.0 as usize] = self.eval(value);
            }
        }
        self.evaluate(t)?;
        self.before = self.values(&self.conditions);
        if let Some(initial) = self.dae.hybrid.initial {
            self.point.vars[initial.0 as usize] = 1.0;
        }
        self.event(t, x, false)
    }

    /// The terminal event at the end `t` of a run, with the states `x` there: `terminal()`
    /// is true and the clauses it makes fire run (Modelica 3.7.4.4); whether there was one
    /// (the run records a last row with its values, as after any event). Nothing to do for
    /// a model that does not call `terminal()`.
    pub fn terminal(&mut self, t: f64, x: &mut [f64]) -> Result<bool, EventFailure> {
        let Some(terminal) = self.dae.hybrid.terminal else {
            return Ok(false);
        };
        self.load_states(t, x)?;
        self.point.vars[terminal.0 as usize] = 1.0;
        self.event(t, x, false)?;
        Ok(true)
    }

    /// Whether `terminate(…)` has ended the run.
    pub fn terminated(&self) -> bool {
        self.stats.terminated.is_some()
    }

    /// Sets each switch to its relation's value at the start `t` from the states `x` (the
    /// states' start values), until they agree with the model they make: the mode the
    /// initialisation starts from. Start values need not be a point where the model can be
    /// evaluated (a position that divides, left at 0 until an initial equation sets it): the
    /// switches whose relations cannot be evaluated there keep their first values, and the
    /// initial event settles them.
    pub fn free_at_start(&mut self, t: f64, x: &[f64]) -> Result<(), EventFailure> {
        if self.load_states(t, x).is_err() {
            return Ok(());
        }
        for _ in 0..MAX_ITERATIONS {
            if !switching::free_switches(self, t, Threshold::Strict)? {
                return Ok(());
            }
        }
        Err(EventFailure::Iteration {
            t,
            changing: self.moving_switches(),
        })
    }

    /// The next `sample` instant after `t` (infinite without one).
    pub fn next_time_event(&self, t: f64) -> f64 {
        clauses::next_instant(&self.clocks, t)
    }

    /// The event at `t` with the states `x` just before it: the `when` clauses fire, held
    /// variables update until they settle, `reinit`s apply to `x`. It is a time event when
    /// `scheduled` (the caller stepped to a breakpoint or a sample instant, known in advance)
    /// or `t` is a sample instant, else a state event (a crossing located between steps).
    pub fn at(&mut self, t: f64, x: &mut [f64], scheduled: bool) -> Result<(), EventFailure> {
        let previous = self.last_event;
        let close = t - previous <= self.close;
        if close {
            self.close_events += 1;
            if self.close_events >= MAX_CLOSE_EVENTS {
                return Err(self.chattering(t));
            }
        } else {
            self.close_events = 0;
        }
        self.last_event = t;
        // Settling: see `evaluate_settling`.
        let _ = self.load_states(t, x);
        let mut timed = false;
        for clock in &mut self.clocks {
            if clock.tick(t, self.tolerance) {
                self.point.vars[clock.var] = 1.0;
                timed = true;
            }
        }
        if timed {
            // The clocks are now true: equations that read them (`y = sample(0, T)`) must see it.
            self.evaluate(t)?;
        }
        if timed || scheduled {
            self.stats.time_events += 1;
        } else {
            self.stats.state_events += 1;
        }
        if self.stats.first_times.len() < 10 {
            self.stats.first_times.push(t);
        }
        let before = self.before.clone();
        let fired: Vec<bool> = (self.values(&self.conditions).iter())
            .zip(&before)
            .map(|(&is, &was)| is && !was)
            .collect();
        // Found in the first step after the event before: the integrator has not resolved
        // the time between the two.
        let unresolved = close || self.located_from <= previous;
        let fired_before = std::mem::replace(&mut self.fired, fired);
        let x_before = x.to_vec();
        self.event(t, x, true)?;
        // A condition that fired at the event just before, fired again right after it and
        // holds on past this one: the event could not move the model out of it (a ball whose
        // bounce is below the integrator's tolerance, about to fall through the floor). A
        // condition firing for the first time next to another event (a state event a hair
        // after a sample instant) is no such thing.
        let stuck = (0..before.len()).any(|k| fired_before[k] && !before[k] && self.before[k]);
        if close && stuck {
            return Err(self.chattering(t));
        }
        match self.cannot_leave(t, &x_before, &fired_before, unresolved)? {
            Some(k) => Err(self.stuck(t, k)),
            None => Ok(()),
        }
    }

    /// A condition that fired at the event at `t` (entered with the states `x_before`) and
    /// holds on past it although the event should have left it: it fired at the event just
    /// before too (`fired_before`) with no step of the integrator between the two
    /// (`unresolved`), or its crossing was a graze (the solution was already heading back
    /// out of it at the event). Either is the ball whose bounce the integrator cannot
    /// resolve, located at its apex, which its reinit leaves falling below the floor.
    fn cannot_leave(
        &mut self,
        t: f64,
        x_before: &[f64],
        fired_before: &[bool],
        unresolved: bool,
    ) -> Result<Option<usize>, EventFailure> {
        let holding: Vec<usize> = (0..self.fired.len())
            .filter(|&k| self.fired[k] && self.before[k])
            .collect();
        if holding.is_empty() {
            return Ok(None);
        }
        if let Some(&k) = holding.iter().find(|&&k| unresolved && fired_before[k]) {
            return Ok(Some(k));
        }
        let saved = self.point.clone();
        self.load_states(t, x_before)?;
        let (_, heading) = self.heading(t, x_before)?;
        self.point = saved;
        Ok(holding.into_iter().find(|&k| !heading[k]))
    }

    /// Event iteration at `t`, then the held relations, clocks and `initial()` back to their
    /// values between events.
    fn event(&mut self, t: f64, x: &mut [f64], count: bool) -> Result<(), EventFailure> {
        self.set_pre_of_reals();
        // The crossings located take their new side, however near their threshold the
        // located time leaves them; from then on a switch moves only where its relation is
        // clearly past its threshold.
        let mut entered = switching::free_switches(self, t, Threshold::Strict)?;
        let mut rounds = 0;
        loop {
            let mut moved = switching::settle_switches(self, t)? | std::mem::take(&mut entered);
            let mut fired = false;
            // What fires moves the relations that read what it assigns (a timer's entry time
            // under `y > angle`): they settle before any `pre` takes a value from them.
            for _ in 0..MAX_ITERATIONS {
                if !clauses::fire(self, t)? {
                    break;
                }
                fired = true;
                moved |= switching::settle_switches(self, t)?;
            }
            let changing = self.changing();
            if !moved && !fired && changing.is_empty() {
                break;
            }
            rounds += 1;
            if rounds >= MAX_ITERATIONS {
                let mut changing = changing;
                changing.extend(self.moving_switches());
                return Err(EventFailure::Iteration { t, changing });
            }
            self.set_pre();
            self.evaluate_settling(t);
        }
        if count {
            self.stats.iterations += rounds.saturating_sub(1) as u64;
        }
        for clock in &self.clocks {
            self.point.vars[clock.var] = 0.0;
        }
        for flag in [self.dae.hybrid.initial, self.dae.hybrid.terminal]
            .into_iter()
            .flatten()
        {
            self.point.vars[flag.0 as usize] = 0.0;
        }
        self.evaluate(t)?;
        self.set_pre();
        for (xi, &s) in x.iter_mut().zip(&self.causal.states) {
            *xi = self.point.vars[s.0 as usize];
        }
        (self.held, self.before) = self.heading(t, x)?;
        self.keep_edges_ahead();
        Ok(())
    }

    /// A condition false at the event that the look-ahead finds true has its edge just past
    /// it (`sin(2πt) < 0` at a sample instant t = 0.5, where the sine is 1e-16): it and its
    /// relations are held at their values now, so that the integrator's next step sees the
    /// switch and locates it, and the clause fires, rather than the edge being taken as
    /// already passed.
    fn keep_edges_ahead(&mut self) {
        let now = self.values(&self.conditions);
        for (k, &is) in now.iter().enumerate() {
            if is || !self.before[k] {
                continue;
            }
            self.before[k] = false;
            for (r, w) in self.watched.iter().enumerate() {
                if w.var.is_none() && reads(self.dae, self.conditions[k], w.node) {
                    self.held[r] = self.eval(w.node);
                }
            }
        }
    }

    /// Each relation's and condition's value just after `t` on the tangent from `(t, x)`: at
    /// its own root a relation is held at the side the solution heads to (a ball that bounced
    /// at `h = 0` holds `h < 0` false, so that its next fall is seen however short the
    /// bounce, and `when h < 0` fires again then).
    /// A switch holds the value the event left it at.
    fn heading(&mut self, t: f64, x: &[f64]) -> Result<(Vec<f64>, Vec<bool>), EventFailure> {
        let delta = LOOK_AHEAD * self.tolerance;
        let ahead: Vec<f64> = x
            .iter()
            .zip(&self.causal.states)
            .map(|(&xi, &s)| xi + delta * self.point.ders[s.0 as usize])
            .collect();
        let saved = self.point.clone();
        self.load_states(t + delta, &ahead)?;
        let held: Vec<f64> = self
            .watched
            .iter()
            .map(|w| match w.var {
                Some(var) => saved.vars[var.0 as usize],
                None => self.eval(w.node),
            })
            .collect();
        let conditions = self.values(&self.conditions);
        self.point = saved;
        Ok((held, conditions))
    }

    /// A fired branch's assignments in written order.
    fn assign_actions(&mut self, actions: &[Action]) {
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
                    self.assign_actions(chosen);
                }
                _ => {}
            }
        }
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
                    if !self.stats.warnings.iter().any(|w| w.span == a.span) {
                        self.stats.warnings.push(EventWarning {
                            time: t,
                            message: a.message.clone(),
                            span: a.span,
                        });
                    }
                }
                Action::Terminate { message, span } => {
                    self.stats.terminated.get_or_insert(Termination {
                        time: t,
                        message: message.clone(),
                        span: *span,
                    });
                }
                Action::Assign { .. } => {}
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

    fn set_pre(&mut self) {
        for &(p, v) in &self.dae.hybrid.pre {
            self.point.vars[p.0 as usize] = self.point.vars[v.0 as usize];
        }
    }

    /// `pre(v)` on entering an event is `v`'s left limit. For a Real that is its value now; a
    /// Boolean or Integer keeps the value it had since the last event (one computed from a
    /// relation, `impact = h <= 0`, has already switched at the located time, which is just
    /// past the switch).
    fn set_pre_of_reals(&mut self) {
        for &(p, v) in &self.dae.hybrid.pre {
            if self.dae.var(v).ty == ScalarType::Real {
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

    fn load_states(&mut self, t: f64, x: &[f64]) -> Result<(), EventFailure> {
        for (&xi, &s) in x.iter().zip(&self.causal.states) {
            self.point.vars[s.0 as usize] = xi;
        }
        self.evaluate(t)
    }

    /// Every variable at `t` from the states and held values in `point`, by the compiled
    /// model (with the relations of time as they are just after `t`), as an emitted crate
    /// evaluates its events.
    fn evaluate(&mut self, t: f64) -> Result<(), EventFailure> {
        self.point.time = t;
        let compiled = &mut self.compiled;
        compiled.load(&self.point);
        compiled.enter_interval_from(t);
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
    fn stuck(&self, t: f64, k: usize) -> EventFailure {
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
    fn chattering(&self, t: f64) -> EventFailure {
        let nearest = (0..self.watched.len()).min_by(|&a, &b| {
            let g = |k: usize| self.crossing(k).function(self.held[k], f64::NAN).abs();
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
        self.located_from = t_l;
        let tolerance = self.tolerance;
        switching::locate(self, (t_l, t_r), tolerance, state_at)
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
        self.held[k]
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
        self.load_states(t, x).is_ok()
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
        self.before[k]
    }

    fn remember_conditions(&mut self) {
        self.before = self.values(&self.conditions);
    }

    fn assigned(&self, c: usize, b: usize) -> Vec<usize> {
        assigned_vars(&self.dae.hybrid.whens[c].branches[b].actions)
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

    fn assign(&mut self, c: usize, b: usize) {
        let dae = self.dae;
        self.assign_actions(&dae.hybrid.whens[c].branches[b].actions);
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

/// The jumps of stepwise function `f` (`floor`, `ceil`; `integer` and the others truncate).
fn stepwise(f: Func) -> Stepwise {
    match f {
        Func::Floor => Stepwise::Floor,
        Func::Ceil => Stepwise::Ceil,
        _ => Stepwise::TowardZero,
    }
}

/// The variables `actions` assign, in any branch of their `if`s, each once.
fn assigned_vars(actions: &[Action]) -> Vec<usize> {
    let mut vars = Vec::new();
    Action::walk(actions, &mut |a| {
        if let Action::Assign { var, .. } = a
            && !vars.contains(&(var.0 as usize))
        {
            vars.push(var.0 as usize);
        }
    });
    vars
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
