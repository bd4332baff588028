//! The events of the emitted model, on a register file of their own (as `simulate`
//! evaluates events on a point of its own), driven by the shared `event_driver` in the order
//! of operations `mocca simulate` follows: the watched relations (switches of the continuous
//! equations, relations of `when` conditions) located within a step and settled by the
//! shared `switching` code, the `when` clauses fired by the shared `clauses` code, the
//! `sample` clocks as time events. The model takes the event's values when it is over.

use crate::clauses::{Clauses, Clock};
use crate::event_driver::{self, Driver, EventCounts, EventModel};
use crate::files::{self, MatFormat};
use crate::model;
use crate::runtime::{Failure, Registers};
use crate::switching::{self, Crossing, Relations};

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
    /// `Streams.print(text, file)`.
    Print { text: String, file: &'static str },
    /// `Streams.writeRealMatrix(file, name, values row by row, append, format)`.
    Matrix {
        file: &'static str,
        name: &'static str,
        rows: usize,
        cols: usize,
        values: Vec<f64>,
        append: bool,
        format: MatFormat,
    },
    /// `Files.removeFile(file)`.
    Remove(&'static str),
}

/// What the events of a run cost, and what the model said at them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventStats {
    pub counts: EventCounts,
    /// Where `terminate` ended the run, and its message.
    pub terminated: Option<(f64, &'static str)>,
    /// Warning-level asserts that were false: each once, at the first time.
    pub warnings: Vec<(f64, &'static str)>,
    warned: Vec<usize>,
}

/// The hybrid state of a run: the event register file and the driver's state between
/// events.
pub struct Events {
    regs: Registers,
    driver: Driver,
    notes: EventStats,
}

impl Events {
    /// The events of a run over `span`, with a register file like `regs`; `None` for a model
    /// without any.
    pub fn new(regs: &Registers, span: (f64, f64)) -> Option<Events> {
        // As `simulate` decides (`Hybrid::is_empty`): the switches are among the watched.
        let hybrid =
            !model::WATCHED.is_empty() || !model::CLAUSES.is_empty() || !model::SAMPLES.is_empty();
        if !hybrid {
            return None;
        }
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
        let sizes = (model::WATCHED.len(), model::CONDITIONS);
        Some(Events {
            regs: regs.clone(),
            driver: Driver::new(sizes, clocks, span),
            notes: EventStats::default(),
        })
    }

    /// The event register file, for the model to take after an event.
    pub fn registers(&self) -> &Registers {
        &self.regs
    }

    /// What the events of the run so far cost, and what the model said at them.
    pub fn stats(&self) -> EventStats {
        EventStats {
            counts: self.driver.counts.clone(),
            ..self.notes.clone()
        }
    }

    /// Sets each switch to its relation's value at the start `t` from the states `x` (their
    /// start values, `regs` the model's registers there): the mode initialisation starts
    /// from (see `event_driver::free_at_start`).
    pub fn free_at_start(&mut self, regs: &Registers, t: f64, x: &[f64]) -> Result<(), Failure> {
        self.regs.sync_from(regs);
        event_driver::free_at_start(self, t, x)
    }

    /// The initial event at `t` from the initialised states `x`; `x` takes any `reinit`.
    pub fn initial(&mut self, t: f64, x: &mut [f64]) -> Result<(), Failure> {
        event_driver::initial(self, t, x)
    }

    /// The terminal event at the end `t` of a run, with the states `x` there: whether there
    /// was one.
    pub fn terminal(&mut self, t: f64, x: &mut [f64]) -> Result<bool, Failure> {
        event_driver::terminal(self, t, x)
    }

    /// The next `sample` instant after `t` (infinite without one).
    pub fn next_time_event(&self, t: f64) -> f64 {
        self.driver.next_time_event(t)
    }

    /// Whether a relation at `(t, x)` left the side it is held on. The event register file
    /// keeps its values from one evaluation to the next (the guesses of the algebraic
    /// loops), as `simulate`'s event point does.
    pub fn crossed(&mut self, t: f64, x: &[f64]) -> bool {
        switching::crossed(self, t, x)
    }

    /// Takes the registers of `regs` (the model's, whose parameters or inputs changed during
    /// a run; its held values are the last event's).
    pub fn take_parameters(&mut self, regs: &Registers) {
        self.regs.sync_from(regs);
    }

    /// The first switch in `(t_l, t_r]` on the solution `state_at`: its time and the states.
    pub fn locate(
        &mut self,
        span: (f64, f64),
        state_at: &mut dyn FnMut(f64) -> Vec<f64>,
    ) -> (f64, Vec<f64>) {
        event_driver::locate(self, span, state_at)
    }

    /// The event at `t` with the states `x` just before it: a time event when `scheduled` (a
    /// breakpoint) or `t` is a sample instant, else a state event.
    pub fn at(&mut self, t: f64, x: &mut [f64], scheduled: bool) -> Result<(), Failure> {
        event_driver::at(self, t, x, scheduled)
    }

    /// Every `when` condition's value now.
    fn conditions(&self) -> Vec<bool> {
        (0..model::CONDITIONS)
            .map(|k| model::condition(k, &self.regs.r))
            .collect()
    }

    fn evaluate(&mut self, t: f64) -> Result<(), Failure> {
        self.regs.rerun_setup();
        self.regs.evaluate(t)
    }
}

impl EventModel for Events {
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

    fn load_states(&mut self, t: f64, x: &[f64]) -> Result<(), Failure> {
        self.regs.evaluate_at(t, x)
    }

    fn load_left_limit(&mut self, t: f64, x: &[f64]) -> Result<(), Failure> {
        self.regs.evaluate_left_of(t, x)
    }

    fn save(&self) -> Vec<f64> {
        self.regs.r.clone()
    }

    fn restore(&mut self, saved: Vec<f64>) {
        self.regs.r = saved;
    }

    fn states(&self, x: &mut [f64]) {
        for (xi, &reg) in x.iter_mut().zip(model::WHOLE.states) {
            *xi = self.regs.r[reg];
        }
    }

    fn derivatives(&self) -> Vec<f64> {
        (model::WHOLE.states.iter())
            .map(|&s| self.regs.r[model::VARS + s])
            .collect()
    }

    fn relations_of(&self, k: usize) -> Vec<usize> {
        model::CONDITION_RELATIONS[k].to_vec()
    }

    fn set_pre(&mut self, reals_only: bool) {
        for &(pre, var, real, _) in model::PRE {
            if real || !reals_only {
                self.regs.r[pre] = self.regs.r[var];
            }
        }
    }

    fn discrete_changing(&self) -> bool {
        (model::PRE.iter()).any(|&(pre, var, _, discrete)| {
            discrete && self.regs.r[pre] != self.regs.r[var]
        })
    }

    fn flags(&self) -> [Option<usize>; 2] {
        [model::INITIAL, model::TERMINAL]
    }

    fn assign_initial(&mut self) {
        model::initial_assignments(&mut self.regs.r);
    }

    fn clock_timing(&self, k: usize) -> (f64, f64) {
        model::sample_timing(k, &self.regs.r)
    }

    fn chattering(&self, t: f64) -> Failure {
        Failure::Chattering { t }
    }

    fn stuck(&self, t: f64, _: usize) -> Failure {
        Failure::Stuck { t }
    }

    fn not_settled(&self, t: f64) -> Failure {
        Failure::EventIteration { t }
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
        self.driver.before[k]
    }

    fn remember_conditions(&mut self) {
        self.driver.before = self.conditions();
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

    fn assign(&mut self, c: usize, b: usize) -> Result<(), Vec<usize>> {
        model::when_assign(c, b, &mut self.regs.r).map_err(<[usize]>::to_vec)
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
                    let stats = &mut self.notes;
                    if !stats.warned.contains(&id) {
                        stats.warned.push(id);
                        stats.warnings.push((t, message));
                    }
                }
                Effect::Terminate(message) => {
                    self.notes.terminated.get_or_insert((t, message));
                }
                Effect::Print { text, file } => files::print(&text, file)
                    .map_err(|message| Failure::Write { t, message })?,
                Effect::Matrix {
                    file,
                    name,
                    rows,
                    cols,
                    values,
                    append,
                    format,
                } => {
                    let matrix = files::Matrix {
                        name,
                        rows,
                        cols,
                        values: &values,
                    };
                    files::write_real_matrix(file, &matrix, append, format)
                        .map_err(|message| Failure::Write { t, message })?;
                }
                Effect::Remove(file) => {
                    files::remove_file(file).map_err(|message| Failure::Write { t, message })?
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

impl Relations for Events {
    type Error = Failure;

    fn count(&self) -> usize {
        model::WATCHED.len()
    }

    fn value(&self, k: usize) -> f64 {
        model::relation(k, &self.regs.r)
    }

    fn crossing(&self, k: usize) -> Crossing {
        model::crossing(k, &self.regs.r)
    }

    fn held(&self, k: usize) -> f64 {
        self.driver.held[k]
    }

    fn switch(&self, k: usize) -> Option<f64> {
        model::WATCHED[k].map(|reg| self.regs.r[reg])
    }

    fn set_switch(&mut self, k: usize, value: f64) {
        if let Some(reg) = model::WATCHED[k] {
            self.regs.r[reg] = value;
        }
    }

    fn evaluate(&mut self, t: f64) -> Result<(), Failure> {
        // While the event settles a failed evaluation is not yet an error (as in `simulate`):
        // a switch still on its side from before the event may select what the settled
        // model does not read. The evaluation after it has settled is checked.
        let _ = Events::evaluate(self, t);
        Ok(())
    }

    fn load(&mut self, t: f64, x: &[f64]) -> bool {
        self.regs.evaluate_at(t, x).is_ok()
    }
}
