//! The events of the emitted model: its switches (relations of the continuous equations, held
//! between events) located within a step and settled at each event by the shared
//! `switching` code, in the order of operations `mocca simulate` follows, on a register file
//! of their own (as `simulate` evaluates events on a point of its own). The model takes the
//! event's values when it is over.

use crate::model;
use crate::runtime::{Failure, Registers};
use crate::switching::{self, Crossing, MAX_ITERATIONS, Relations, Threshold};

/// Events closer than this, relative to the run's length, one after the other are close.
const CLOSE: f64 = 1e-6;
/// Close events in a row that make chattering an error rather than a run that never ends.
const MAX_CLOSE_EVENTS: usize = 10;

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

/// What the events of a run cost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventStats {
    pub state_events: u64,
    pub time_events: u64,
    /// Rounds of event iteration beyond the first.
    pub iterations: u64,
}

/// The hybrid state of a run: the relations' values held between events and the event
/// register file.
pub struct Events {
    regs: Registers,
    held: Vec<f64>,
    /// Roots are located to this time.
    tolerance: f64,
    close: f64,
    close_events: usize,
    last_event: f64,
    pub stats: EventStats,
}

impl Events {
    /// The events of a run over `span`, with a register file like `regs`; `None` for a model
    /// without switches.
    pub fn new(regs: &Registers, (start, stop): (f64, f64)) -> Option<Events> {
        if model::SWITCHES.is_empty() {
            return None;
        }
        let scale = stop.abs().max((stop - start).abs()).max(f64::MIN_POSITIVE);
        Some(Events {
            regs: regs.clone(),
            held: vec![0.0; model::SWITCHES.len()],
            tolerance: 1e-12 * scale,
            close: CLOSE * scale,
            close_events: 0,
            last_event: f64::NEG_INFINITY,
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

    /// The initial event at `t` from the initialised states `x`: `initial()` is true, then
    /// event iteration.
    pub fn initial(&mut self, t: f64, x: &mut [f64]) -> Result<(), Failure> {
        self.load(t, x)?;
        if let Some(initial) = model::INITIAL {
            self.regs.r[initial] = 1.0;
        }
        self.event(t, x, false)
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
        let tolerance = self.tolerance;
        switching::locate(&mut self.watched(), (t_l, t_r), tolerance, state_at)
    }

    /// The event at `t` with the states `x` just before it: a time event when `scheduled` (a
    /// breakpoint), else a state event.
    pub fn at(&mut self, t: f64, x: &mut [f64], scheduled: bool) -> Result<(), Failure> {
        if t - self.last_event <= self.close {
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
        if scheduled {
            self.stats.time_events += 1;
        } else {
            self.stats.state_events += 1;
        }
        self.event(t, x, true)
    }

    /// Event iteration at `t`: the switches settle with the model, `pre` takes each round's
    /// values until no discrete variable changes; then `initial()` is false again and each
    /// relation is held at its switch's value.
    fn event(&mut self, t: f64, x: &mut [f64], count: bool) -> Result<(), Failure> {
        self.set_pre(|real, _| real);
        // The crossings located take their new side, however near their threshold the
        // located time leaves them; from then on a switch moves only where its relation is
        // clearly past its threshold.
        let mut entered = switching::free_switches(&mut self.watched(), t, Threshold::Strict)?;
        let mut rounds = 0;
        loop {
            let moved = switching::settle_switches(&mut self.watched(), t)?
                | std::mem::take(&mut entered);
            if !moved && !self.changing() {
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
        if let Some(initial) = model::INITIAL {
            self.regs.r[initial] = 0.0;
        }
        self.evaluate(t)?;
        self.set_pre(|_, _| true);
        for (xi, &reg) in x.iter_mut().zip(model::WHOLE.states) {
            *xi = self.regs.r[reg];
        }
        for (h, &reg) in self.held.iter_mut().zip(model::SWITCHES) {
            *h = self.regs.r[reg];
        }
        Ok(())
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

/// The event register file as the shared switching code sees it.
struct Watched<'e> {
    events: &'e mut Events,
}

impl Relations for Watched<'_> {
    type Error = Failure;

    fn count(&self) -> usize {
        model::SWITCHES.len()
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
        Some(self.events.regs.r[model::SWITCHES[k]])
    }

    fn set_switch(&mut self, k: usize, value: f64) {
        self.events.regs.r[model::SWITCHES[k]] = value;
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
