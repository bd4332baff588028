//! The events of the emitted model, in the order of operations `mocca simulate` follows, on
//! a register file of their own (as `simulate` evaluates events on a point of its own): the
//! watched relations (switches of the continuous equations, relations of `when` conditions)
//! located within a step and settled by the shared `switching` code; the `when` clauses fired
//! by the shared `clauses` code; the `sample` clocks as time events. The model takes the
//! event's values when it is over.

use crate::clauses::{self, Clauses, Clock};
use crate::model;
use crate::runtime::{Failure, Registers};
use crate::switching::{self, Crossing, MAX_ITERATIONS, Relations, Threshold};

/// Events closer than this, relative to the run's length, one after the other are close.
const CLOSE: f64 = 1e-6;
/// Close events in a row that make chattering an error rather than a run that never ends.
const MAX_CLOSE_EVENTS: usize = 10;
/// How far past an event (in root tolerances) a relation is looked at to tell which side it
/// is heading to.
const LOOK_AHEAD: f64 = 1e3;

/// How the crate handles a switch inside a step, chosen at emit time (`model::EVENTS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventMode {
    /// The crossing is located (the step is taken again to trial times) and the next step
    /// starts there: the numbers of `mocca simulate` with the same method and step.
    Locate,
    /// The switch is handled at the end of the step that crossed: no step is taken again, so
    /// every step costs the same; the switch comes up to one step late.
    Step,
}

/// What a fired `when` branch does besides its assignments (`model::when_effects`).
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// `reinit(x, value)`: the register of `x` and the value.
    Reinit(usize, f64),
    /// A false `assert`: its number among the model's, its level and message.
    Assert {
        id: usize,
        error: bool,
        message: &'static str,
    },
    /// `terminate(message)`.
    Terminate(&'static str),
}

/// What the events of a run cost, and what the model said at them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventStats {
    pub state_events: u64,
    pub time_events: u64,
    /// Rounds of event iteration beyond the first.
    pub iterations: u64,
    /// Where `terminate` ended the run, and its message.
    pub terminated: Option<(f64, &'static str)>,
    /// Warning-level asserts that were false: each once, at the first time.
    pub warnings: Vec<(f64, &'static str)>,
    warned: Vec<usize>,
}

/// The hybrid state of a run: the relations' values held between events, the conditions'
/// values at the last event, the clocks and the event register file.
pub struct Events {
    regs: Registers,
    held: Vec<f64>,
    before: Vec<bool>,
    /// Per condition: whether it fired (became true) at the last event.
    fired: Vec<bool>,
    clocks: Vec<Clock>,
    /// Roots are located to this time.
    tolerance: f64,
    close: f64,
    close_events: usize,
    last_event: f64,
    /// Where the step in which the last switch was located began.
    located_from: f64,
    pub stats: EventStats,
}

impl Events {
    /// The events of a run over `span`, with a register file like `regs`; `None` for a model
    /// without any.
    pub fn new(regs: &Registers, (start, stop): (f64, f64)) -> Option<Events> {
        // As `simulate` decides (`Hybrid::is_empty`): the switches are among the watched.
        let hybrid =
            !model::WATCHED.is_empty() || !model::CLAUSES.is_empty() || !model::SAMPLES.is_empty();
        if !hybrid {
            return None;
        }
        let scale = stop.abs().max((stop - start).abs()).max(f64::MIN_POSITIVE);
        let clocks = (model::SAMPLES.iter().enumerate())
            .map(|(k, &var)| {
                let (start, interval) = model::sample_timing(k, &regs.r);
                Clock {
                    var,
                    start,
                    interval,
                    next: 0,
                }
            })
            .collect();
        Some(Events {
            regs: regs.clone(),
            held: vec![0.0; model::WATCHED.len()],
            before: vec![false; model::CONDITIONS],
            fired: vec![false; model::CONDITIONS],
            clocks,
            tolerance: 1e-12 * scale,
            close: CLOSE * scale,
            close_events: 0,
            last_event: f64::NEG_INFINITY,
            located_from: f64::NEG_INFINITY,
            stats: EventStats::default(),
        })
    }

    /// The event register file, for the model to take after an event.
    pub fn registers(&self) -> &Registers {
        &self.regs
    }

    /// Sets each switch to its relation's value at the start `t` from the states `x` (their
    /// start values, `regs` the model's registers there), until they agree with the model
    /// they make: the mode initialisation starts from. Where the model cannot be evaluated
    /// there the switches keep their first values, and the initial event settles them.
    pub fn free_at_start(&mut self, regs: &Registers, t: f64, x: &[f64]) -> Result<(), Failure> {
        self.regs.sync_from(regs);
        let mut watched = self.watched();
        if !watched.load(t, x) {
            return Ok(());
        }
        for _ in 0..MAX_ITERATIONS {
            if !switching::free_switches(&mut watched, t, Threshold::Strict)? {
                return Ok(());
            }
        }
        Err(Failure::EventIteration { t })
    }

    /// The initial event at `t` from the initialised states `x`: the clocks start,
    /// `initial()` is true, the `when` conditions start from their values with it false (so
    /// that only a condition holding `initial()` fires), then event iteration. `x` takes
    /// any `reinit`.
    pub fn initial(&mut self, t: f64, x: &mut [f64]) -> Result<(), Failure> {
        self.load(t, x)?;
        // A clock may start at a parameter the initial system computed: read it now.
        for (k, clock) in self.clocks.iter_mut().enumerate() {
            (clock.start, clock.interval) = model::sample_timing(k, &self.regs.r);
            let at_start = clock.start_at(t, self.tolerance);
            self.regs.r[clock.var] = if at_start { 1.0 } else { 0.0 };
        }
        self.load(t, x)?;
        model::initial_assignments(&mut self.regs.r);
        self.evaluate(t)?;
        self.before = self.conditions();
        if let Some(initial) = model::INITIAL {
            self.regs.r[initial] = 1.0;
        }
        self.event(t, x, false)
    }

    /// The terminal event at the end `t` of a run, with the states `x` there: `terminal()`
    /// is true and the clauses it makes fire run. Whether there was one (nothing to do for a
    /// model that does not call `terminal()`).
    pub fn terminal(&mut self, t: f64, x: &mut [f64]) -> Result<bool, Failure> {
        let Some(terminal) = model::TERMINAL else {
            return Ok(false);
        };
        self.load(t, x)?;
        self.regs.r[terminal] = 1.0;
        self.event(t, x, false)?;
        Ok(true)
    }

    /// Whether `terminate(…)` has ended the run.
    pub fn terminated(&self) -> bool {
        self.stats.terminated.is_some()
    }

    /// The next `sample` instant after `t` (infinite without one).
    pub fn next_time_event(&self, t: f64) -> f64 {
        clauses::next_instant(&self.clocks, t)
    }

    /// Whether a relation at `(t, x)` left the side it is held on. The event register file
    /// keeps its values from one evaluation to the next (the guesses of the algebraic
    /// loops), as `simulate`'s event point does.
    pub fn crossed(&mut self, t: f64, x: &[f64]) -> bool {
        switching::crossed(&mut self.watched(), t, x)
    }

    /// Takes the registers of `regs` (the model's, whose parameters or inputs changed during
    /// a run; its held values are the last event's).
    pub fn take_parameters(&mut self, regs: &Registers) {
        self.regs.sync_from(regs);
    }

    /// The first switch in `(t_l, t_r]` on the solution `state_at`: its time and the states.
    pub fn locate(
        &mut self,
        (t_l, t_r): (f64, f64),
        state_at: &mut dyn FnMut(f64) -> Vec<f64>,
    ) -> (f64, Vec<f64>) {
        self.located_from = t_l;
        let tolerance = self.tolerance;
        switching::locate(&mut self.watched(), (t_l, t_r), tolerance, state_at)
    }

    /// The event at `t` with the states `x` just before it: a time event when `scheduled` (a
    /// breakpoint) or `t` is a sample instant, else a state event.
    pub fn at(&mut self, t: f64, x: &mut [f64], scheduled: bool) -> Result<(), Failure> {
        let previous = self.last_event;
        let close = t - previous <= self.close;
        if close {
            self.close_events += 1;
            if self.close_events >= MAX_CLOSE_EVENTS {
                return Err(Failure::Chattering { t });
            }
        } else {
            self.close_events = 0;
        }
        self.last_event = t;
        // While the event settles a failed evaluation is not yet an error (as in `simulate`):
        // a switch still on its side from before the event may select what the settled
        // model does not read. The evaluation after it has settled is checked.
        let _ = self.load(t, x);
        let mut timed = false;
        for clock in &mut self.clocks {
            if clock.tick(t, self.tolerance) {
                self.regs.r[clock.var] = 1.0;
                timed = true;
            }
        }
        if timed {
            // The clocks are now true: equations that read them must see it.
            self.evaluate(t)?;
        }
        if timed || scheduled {
            self.stats.time_events += 1;
        } else {
            self.stats.state_events += 1;
        }
        let before = self.before.clone();
        let now = self.conditions();
        let fired: Vec<bool> = now.iter().zip(&before).map(|(&is, &was)| is && !was).collect();
        // Found in the first step after the event before: the integrator has not resolved
        // the time between the two.
        let unresolved = close || self.located_from <= previous;
        let fired_before = std::mem::replace(&mut self.fired, fired);
        let x_before = x.to_vec();
        self.event(t, x, true)?;
        // A condition that fired at the event just before, fired again right after it and
        // holds on past this one: the event could not move the model out of it.
        let stuck = (0..before.len()).any(|k| fired_before[k] && !before[k] && self.before[k]);
        if close && stuck {
            return Err(Failure::Chattering { t });
        }
        match self.cannot_leave(t, &x_before, &fired_before, unresolved)? {
            Some(_) => Err(Failure::Stuck { t }),
            None => Ok(()),
        }
    }

    /// A condition that fired at the event at `t` (entered with the states `x_before`) and
    /// holds on past it although the event should have left it: it fired at the event just
    /// before too with no step of the integrator between the two (`unresolved`), or its
    /// crossing was a graze (the solution was already heading back out of it).
    fn cannot_leave(
        &mut self,
        t: f64,
        x_before: &[f64],
        fired_before: &[bool],
        unresolved: bool,
    ) -> Result<Option<usize>, Failure> {
        let holding: Vec<usize> = (0..self.fired.len())
            .filter(|&k| self.fired[k] && self.before[k])
            .collect();
        if holding.is_empty() {
            return Ok(None);
        }
        if let Some(&k) = holding.iter().find(|&&k| unresolved && fired_before[k]) {
            return Ok(Some(k));
        }
        let saved = self.regs.r.clone();
        self.load(t, x_before)?;
        let (_, heading) = self.heading(t, x_before)?;
        self.regs.r = saved;
        Ok(holding.into_iter().find(|&k| !heading[k]))
    }

    /// Event iteration at `t`: the switches settle with the model and the `when` clauses
    /// fire, `pre` takes each round's values until no discrete variable changes; then the
    /// clocks, `initial()` and `terminal()` are false again and each relation is held at the
    /// side the solution heads to.
    fn event(&mut self, t: f64, x: &mut [f64], count: bool) -> Result<(), Failure> {
        self.set_pre(|real, _| real);
        // The crossings located take their new side, however near their threshold the
        // located time leaves them; from then on a switch moves only where its relation is
        // clearly past its threshold.
        let mut entered = switching::free_switches(&mut self.watched(), t, Threshold::Strict)?;
        let mut rounds = 0;
        loop {
            let mut moved = switching::settle_switches(&mut self.watched(), t)?
                | std::mem::take(&mut entered);
            let mut fired = false;
            // What fires moves the relations that read what it assigns: they settle before
            // any `pre` takes a value from them.
            for _ in 0..MAX_ITERATIONS {
                if !clauses::fire(self, t)? {
                    break;
                }
                fired = true;
                moved |= switching::settle_switches(&mut self.watched(), t)?;
            }
            if !moved && !fired && !self.changing() {
                break;
            }
            rounds += 1;
            if rounds >= MAX_ITERATIONS {
                return Err(Failure::EventIteration { t });
            }
            self.set_pre(|_, _| true);
            let _ = self.evaluate(t);
        }
        if count {
            self.stats.iterations += rounds.saturating_sub(1) as u64;
        }
        for clock in &self.clocks {
            self.regs.r[clock.var] = 0.0;
        }
        for flag in [model::INITIAL, model::TERMINAL].into_iter().flatten() {
            self.regs.r[flag] = 0.0;
        }
        self.evaluate(t)?;
        self.set_pre(|_, _| true);
        for (xi, &reg) in x.iter_mut().zip(model::WHOLE.states) {
            *xi = self.regs.r[reg];
        }
        (self.held, self.before) = self.heading(t, x)?;
        self.keep_edges_ahead();
        Ok(())
    }

    /// A condition false at the event that the look-ahead finds true has its edge just past
    /// it: it and its relations are held at their values now, so that the integrator's next
    /// step sees the switch and locates it, and the clause fires.
    fn keep_edges_ahead(&mut self) {
        let now = self.conditions();
        for (k, &is) in now.iter().enumerate() {
            if is || !self.before[k] {
                continue;
            }
            self.before[k] = false;
            for &r in model::CONDITION_RELATIONS[k] {
                self.held[r] = model::relation(r, &self.regs.r);
            }
        }
    }

    /// Each relation's and condition's value just after `t` on the tangent from `(t, x)`: at
    /// its own root a relation is held at the side the solution heads to. A switch holds the
    /// value the event left it at.
    fn heading(&mut self, t: f64, x: &[f64]) -> Result<(Vec<f64>, Vec<bool>), Failure> {
        let delta = LOOK_AHEAD * self.tolerance;
        let ahead: Vec<f64> = (x.iter().zip(model::WHOLE.states))
            .map(|(&xi, &s)| xi + delta * self.regs.r[model::VARS + s])
            .collect();
        let saved = self.regs.r.clone();
        self.load(t + delta, &ahead)?;
        let held: Vec<f64> = (model::WATCHED.iter().enumerate())
            .map(|(k, w)| match *w {
                Some(reg) => saved[reg],
                None => model::relation(k, &self.regs.r),
            })
            .collect();
        let conditions = self.conditions();
        self.regs.r = saved;
        Ok((held, conditions))
    }

    /// Every `when` condition's value now.
    fn conditions(&self) -> Vec<bool> {
        (0..model::CONDITIONS)
            .map(|k| model::condition(k, &self.regs.r))
            .collect()
    }

    /// `pre(v) := v` for the pairs `which(real, discrete)` selects.
    fn set_pre(&mut self, which: impl Fn(bool, bool) -> bool) {
        for &(pre, var, real, discrete) in model::PRE {
            if which(real, discrete) {
                self.regs.r[pre] = self.regs.r[var];
            }
        }
    }

    /// Whether a discrete variable differs from its `pre`.
    fn changing(&self) -> bool {
        (model::PRE.iter()).any(|&(pre, var, _, discrete)| {
            discrete && self.regs.r[pre] != self.regs.r[var]
        })
    }

    fn load(&mut self, t: f64, x: &[f64]) -> Result<(), Failure> {
        self.regs.evaluate_at(t, x)
    }

    fn evaluate(&mut self, t: f64) -> Result<(), Failure> {
        self.regs.rerun_setup();
        self.regs.evaluate(t)
    }

    fn watched(&mut self) -> Watched<'_> {
        Watched { events: self }
    }
}

impl Clauses for Events {
    type Error = Failure;

    fn clauses(&self) -> usize {
        model::CLAUSES.len()
    }

    fn statement(&self, c: usize) -> bool {
        model::CLAUSES[c].0
    }

    fn branch_conditions(&self, c: usize) -> &[usize] {
        model::CLAUSES[c].1
    }

    fn condition(&self, k: usize) -> bool {
        model::condition(k, &self.regs.r)
    }

    fn before(&self, k: usize) -> bool {
        self.before[k]
    }

    fn remember_conditions(&mut self) {
        self.before = self.conditions();
    }

    fn assigned(&self, c: usize, b: usize) -> Vec<usize> {
        model::ASSIGNED[c][b].to_vec()
    }

    fn var(&self, v: usize) -> f64 {
        self.regs.r[v]
    }

    fn set_var(&mut self, v: usize, x: f64) {
        self.regs.r[v] = x;
    }

    fn vars(&self) -> Vec<f64> {
        self.regs.r.clone()
    }

    fn is_real(&self, v: usize) -> bool {
        !model::DISCRETE.contains(&v)
    }

    fn assign(&mut self, c: usize, b: usize) {
        model::when_assign(c, b, &mut self.regs.r);
    }

    fn effects(
        &mut self,
        t: f64,
        (c, b): (usize, usize),
        reinits: &mut Vec<(usize, f64)>,
    ) -> Result<(), Failure> {
        let mut effects = Vec::new();
        model::when_effects(c, b, &self.regs.r, &mut effects);
        for effect in effects {
            match effect {
                Effect::Reinit(var, x) => reinits.push((var, x)),
                Effect::Assert {
                    error: true,
                    message,
                    ..
                } => {
                    return Err(Failure::Assertion {
                        t,
                        message: message.to_string(),
                    });
                }
                Effect::Assert { id, message, .. } => {
                    let stats = &mut self.stats;
                    if !stats.warned.contains(&id) {
                        stats.warned.push(id);
                        stats.warnings.push((t, message));
                    }
                }
                Effect::Terminate(message) => {
                    self.stats.terminated.get_or_insert((t, message));
                }
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, t: f64) -> Result<(), Failure> {
        Events::evaluate(self, t)
    }

    fn loop_failure(&self, t: f64, _: Vec<usize>) -> Failure {
        Failure::EventLoop { t }
    }
}

/// The event register file as the shared switching code sees it.
struct Watched<'e> {
    events: &'e mut Events,
}

impl Relations for Watched<'_> {
    type Error = Failure;

    fn count(&self) -> usize {
        model::WATCHED.len()
    }

    fn value(&self, k: usize) -> f64 {
        model::relation(k, &self.events.regs.r)
    }

    fn crossing(&self, k: usize) -> Crossing {
        model::crossing(k, &self.events.regs.r)
    }

    fn held(&self, k: usize) -> f64 {
        self.events.held[k]
    }

    fn switch(&self, k: usize) -> Option<f64> {
        model::WATCHED[k].map(|reg| self.events.regs.r[reg])
    }

    fn set_switch(&mut self, k: usize, value: f64) {
        if let Some(reg) = model::WATCHED[k] {
            self.events.regs.r[reg] = value;
        }
    }

    fn evaluate(&mut self, t: f64) -> Result<(), Failure> {
        // Settling: see `Events::at`.
        let _ = self.events.evaluate(t);
        Ok(())
    }

    fn load(&mut self, t: f64, x: &[f64]) -> bool {
        self.events.load(t, x).is_ok()
    }
}
