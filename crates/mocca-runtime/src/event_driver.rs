//! The event driver: what happens at an event, in the order `mocca simulate` and the crates
//! `mocca emit` writes (this very file, std only) both follow. The initial event, an event
//! within the run (the clocks due, the `when` conditions that fire, event iteration with the
//! switches free and the clauses firing until no discrete value changes), the terminal
//! event, and the checks that stop a run that cannot go on: chattering (events closer and
//! closer) and a `when` condition an event cannot leave. The model is the caller's, seen
//! through [`EventModel`]: the watched relations ([`Relations`]), the `when` clauses
//! ([`Clauses`]) and the values an event reads and writes.

use crate::clauses::{self, Clauses, Clock};
use crate::switching::{self, MAX_ITERATIONS, Relations, Threshold};

/// Events in a row, each closer than [`CLOSE`] of the run's length to the one before, that
/// make chattering (a Zeno accumulation) an error rather than a run that never ends or a
/// ball that falls through the floor once its bounces are shorter than the root tolerance.
pub const MAX_CLOSE_EVENTS: usize = 10;
pub const CLOSE: f64 = 1e-6;
/// How far past an event (in root tolerances) a relation is looked at to tell which side it
/// is heading to.
const LOOK_AHEAD: f64 = 1e3;
/// The event times a run keeps to report.
const FIRST_TIMES: usize = 10;

/// What the events of a run cost.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventCounts {
    pub state_events: u64,
    pub time_events: u64,
    /// Rounds of event iteration beyond the first, over all events.
    pub iterations: u64,
    /// The times of the first events.
    pub first_times: Vec<f64>,
}

/// The hybrid state of a run between events: each watched relation's value held, each
/// `when` condition's value at the last event, the clocks, and what tells chattering.
#[derive(Clone, Debug)]
pub struct Driver {
    /// Per watched relation: its value between events.
    pub held: Vec<f64>,
    /// Per `when` condition: its value at the last event (or round of event iteration).
    pub before: Vec<bool>,
    /// Per condition: whether it fired (became true) at the last event.
    fired: Vec<bool>,
    pub clocks: Vec<Clock>,
    /// Roots are located to this time.
    pub tolerance: f64,
    close: f64,
    close_events: usize,
    last_event: f64,
    /// Where the step in which the last switch was located began.
    located_from: f64,
    pub counts: EventCounts,
}

impl Driver {
    /// The state of a run over `(start, stop)` with `watched` relations, `conditions` and
    /// `clocks`.
    pub fn new(
        (watched, conditions): (usize, usize),
        clocks: Vec<Clock>,
        (start, stop): (f64, f64),
    ) -> Driver {
        let scale = stop.abs().max((stop - start).abs()).max(f64::MIN_POSITIVE);
        Driver {
            held: vec![0.0; watched],
            before: vec![false; conditions],
            fired: vec![false; conditions],
            clocks,
            tolerance: 1e-12 * scale,
            close: CLOSE * scale,
            close_events: 0,
            last_event: f64::NEG_INFINITY,
            located_from: f64::NEG_INFINITY,
            counts: EventCounts::default(),
        }
    }

    /// The next `sample` instant after `t` (infinite without one).
    pub fn next_time_event(&self, t: f64) -> f64 {
        clauses::next_instant(&self.clocks, t)
    }
}

/// The model as events see it, on a point (or register file) of the events' own.
pub trait EventModel: Relations + Clauses<Error = <Self as Relations>::Error> {
    fn driver(&self) -> &Driver;
    fn driver_mut(&mut self) -> &mut Driver;
    /// The states `x` at `t` loaded and the model evaluated.
    fn load_states(&mut self, t: f64, x: &[f64]) -> Result<(), <Self as Relations>::Error>;
    /// [`EventModel::load_states`] with the relations of time as they are just before `t`:
    /// the model's left limit at a time event there.
    fn load_left_limit(&mut self, t: f64, x: &[f64]) -> Result<(), <Self as Relations>::Error>;
    /// Every value of the point, to restore later.
    fn save(&self) -> Vec<f64>;
    fn restore(&mut self, saved: Vec<f64>);
    /// The states as the point holds them, into `x`.
    fn states(&self, x: &mut [f64]);
    /// The states' derivatives as the point holds them.
    fn derivatives(&self) -> Vec<f64>;
    /// The watched relations (of `when` conditions) that condition `k` reads.
    fn relations_of(&self, k: usize) -> Vec<usize>;
    /// `pre(v) := v`: of the Real `v`s only when `reals_only`.
    fn set_pre(&mut self, reals_only: bool);
    /// Whether a discrete variable (held, Boolean or Integer) differs from its `pre`.
    fn discrete_changing(&self) -> bool;
    /// The variables `initial()` and `terminal()` read.
    fn flags(&self) -> [Option<usize>; 2];
    /// The initial equations of `when`-assigned variables, in order.
    fn assign_initial(&mut self);
    /// Clock `k`'s start and interval at the point.
    fn clock_timing(&self, k: usize) -> (f64, f64);
    /// Events accumulate at `t`.
    fn chattering(&self, t: f64) -> <Self as Relations>::Error;
    /// The event at `t` cannot leave condition `k`.
    fn stuck(&self, t: f64, k: usize) -> <Self as Relations>::Error;
    /// Event iteration at `t` did not settle.
    fn not_settled(&self, t: f64) -> <Self as Relations>::Error;
    /// Whether `terminate(…)` has ended the run.
    fn terminated(&self) -> bool;
}

type Failure<M> = <M as Relations>::Error;

/// Sets each switch to its relation's value at the start `t` from the states `x` (the states'
/// start values), until they agree with the model they make: the mode the initialisation
/// starts from. Start values need not be a point where the model can be evaluated (a
/// position that divides, left at 0 until an initial equation sets it): the switches whose
/// relations cannot be evaluated there keep their first values, and the initial event
/// settles them.
pub fn free_at_start<M: EventModel>(m: &mut M, t: f64, x: &[f64]) -> Result<(), Failure<M>> {
    if m.load_states(t, x).is_err() {
        return Ok(());
    }
    for _ in 0..MAX_ITERATIONS {
        if !switching::free_switches(m, t, Threshold::Strict)? {
            return Ok(());
        }
    }
    Err(m.not_settled(t))
}

/// The initial event at `t` from the initialised states `x`: the clocks start, `initial()`
/// is true, the `when` conditions start from their values with it false (so that only a
/// condition holding `initial()` fires), then event iteration. `x` takes any `reinit`.
pub fn initial<M: EventModel>(m: &mut M, t: f64, x: &mut [f64]) -> Result<(), Failure<M>> {
    m.load_states(t, x)?;
    // A clock may start at a parameter the initial system computed: read it now.
    for k in 0..m.driver().clocks.len() {
        let timing = m.clock_timing(k);
        let tolerance = m.driver().tolerance;
        let clock = &mut m.driver_mut().clocks[k];
        (clock.start, clock.interval) = timing;
        let at_start = clock.start_at(t, tolerance);
        let var = clock.var;
        m.set_var(var, if at_start { 1.0 } else { 0.0 });
    }
    m.load_states(t, x)?;
    m.assign_initial();
    Clauses::evaluate(m, t)?;
    m.remember_conditions();
    if let [Some(initial), _] = m.flags() {
        m.set_var(initial, 1.0);
    }
    m.set_pre(true);
    event(m, t, x, false)
}

/// The terminal event at the end `t` of a run, with the states `x` there: `terminal()` is
/// true and the clauses it makes fire run (Modelica 3.7.4.4). Whether there was one (the run
/// records a last row with its values, as after any event); nothing to do for a model that
/// does not call `terminal()`.
pub fn terminal<M: EventModel>(m: &mut M, t: f64, x: &mut [f64]) -> Result<bool, Failure<M>> {
    let [_, Some(terminal)] = m.flags() else {
        return Ok(false);
    };
    m.load_states(t, x)?;
    m.set_var(terminal, 1.0);
    m.set_pre(true);
    event(m, t, x, false)?;
    Ok(true)
}

/// The first switch in `(t_l, t_r]` on the solution `state_at`: its time and the states.
pub fn locate<M: EventModel>(
    m: &mut M,
    (t_l, t_r): (f64, f64),
    state_at: &mut dyn FnMut(f64) -> Vec<f64>,
) -> (f64, Vec<f64>) {
    m.driver_mut().located_from = t_l;
    let tolerance = m.driver().tolerance;
    switching::locate(m, (t_l, t_r), tolerance, state_at)
}

/// The event at `t` with the states `x` just before it: the clocks due tick, the `when`
/// clauses fire, held variables update until they settle, `reinit`s apply to `x`. It is a
/// time event when `scheduled` (the caller stepped to a breakpoint, known in advance) or `t`
/// is a sample instant, else a state event (a crossing located between steps).
pub fn at<M: EventModel>(
    m: &mut M,
    t: f64,
    x: &mut [f64],
    scheduled: bool,
) -> Result<(), Failure<M>> {
    let d = m.driver_mut();
    let previous = d.last_event;
    let close = t - previous <= d.close;
    if close {
        d.close_events += 1;
        if d.close_events >= MAX_CLOSE_EVENTS {
            return Err(m.chattering(t));
        }
    } else {
        d.close_events = 0;
    }
    d.last_event = t;
    // While the event settles a failed evaluation is not yet an error: a switch still on its
    // side from before the event may select what the settled model does not read (`x[i]`
    // with `i` out of range under `if i > 0`). The evaluation after it has settled is
    // checked.
    // `pre(v)` of a Real is its left limit, and so is what `sample(u)` takes (Modelica 3.7.5,
    // 16.5.1): the values before the relations of time switch at `t`.
    let _ = m.load_left_limit(t, x);
    m.set_pre(true);
    let _ = m.load_states(t, x);
    let mut due = Vec::new();
    let d = m.driver_mut();
    let tolerance = d.tolerance;
    for clock in &mut d.clocks {
        if clock.tick(t, tolerance) {
            due.push(clock.var);
        }
    }
    for &var in &due {
        m.set_var(var, 1.0);
    }
    if !due.is_empty() {
        // The clocks are now true: equations that read them (`y = sample(0, T)`) must see it.
        Clauses::evaluate(m, t)?;
    }
    let counts = &mut m.driver_mut().counts;
    if !due.is_empty() || scheduled {
        counts.time_events += 1;
    } else {
        counts.state_events += 1;
    }
    if counts.first_times.len() < FIRST_TIMES {
        counts.first_times.push(t);
    }
    let before = m.driver().before.clone();
    let fired: Vec<bool> = (0..before.len())
        .map(|k| m.condition(k) && !before[k])
        .collect();
    // Found in the first step after the event before: the integrator has not resolved the
    // time between the two.
    let unresolved = close || m.driver().located_from <= previous;
    let fired_before = std::mem::replace(&mut m.driver_mut().fired, fired);
    let x_before = x.to_vec();
    event(m, t, x, true)?;
    // A condition that fired at the event just before, fired again right after it and holds
    // on past this one: the event could not move the model out of it (a ball whose bounce is
    // below the integrator's tolerance, about to fall through the floor). A condition firing
    // for the first time next to another event (a state event a hair after a sample
    // instant) is no such thing.
    let now = &m.driver().before;
    let stuck = (0..before.len()).any(|k| fired_before[k] && !before[k] && now[k]);
    if close && stuck {
        return Err(m.chattering(t));
    }
    match cannot_leave(m, t, &x_before, &fired_before, unresolved)? {
        Some(k) => Err(m.stuck(t, k)),
        None => Ok(()),
    }
}

/// A condition that fired at the event at `t` (entered with the states `x_before`) and holds
/// on past it although the event should have left it: it fired at the event just before too
/// (`fired_before`) with no step of the integrator between the two (`unresolved`), or its
/// crossing was a graze (the solution was already heading back out of it at the event).
/// Either is the ball whose bounce the integrator cannot resolve, located at its apex, which
/// its reinit leaves falling below the floor.
fn cannot_leave<M: EventModel>(
    m: &mut M,
    t: f64,
    x_before: &[f64],
    fired_before: &[bool],
    unresolved: bool,
) -> Result<Option<usize>, Failure<M>> {
    let d = m.driver();
    let holding: Vec<usize> = (0..d.fired.len())
        .filter(|&k| d.fired[k] && d.before[k])
        .collect();
    if holding.is_empty() {
        return Ok(None);
    }
    if let Some(&k) = holding.iter().find(|&&k| unresolved && fired_before[k]) {
        return Ok(Some(k));
    }
    let saved = m.save();
    m.load_states(t, x_before)?;
    let (_, heading) = heading(m, t, x_before)?;
    m.restore(saved);
    Ok(holding.into_iter().find(|&k| !heading[k]))
}

/// Event iteration at `t` (the Reals' `pre` values taken), then the held relations, clocks,
/// `initial()` and `terminal()` back to their values between events; `x` takes the states as
/// the event leaves them.
fn event<M: EventModel>(m: &mut M, t: f64, x: &mut [f64], count: bool) -> Result<(), Failure<M>> {
    // The crossings located take their new side, however near their threshold the located
    // time leaves them; from then on a switch moves only where its relation is clearly past
    // its threshold.
    let mut entered = switching::free_switches(m, t, Threshold::Strict)?;
    let mut rounds = 0;
    loop {
        let mut moved = switching::settle_switches(m, t)? | std::mem::take(&mut entered);
        let mut fired = false;
        // What fires moves the relations that read what it assigns (a timer's entry time
        // under `y > angle`): they settle before any `pre` takes a value from them.
        for _ in 0..MAX_ITERATIONS {
            if !clauses::fire(m, t)? {
                break;
            }
            fired = true;
            moved |= switching::settle_switches(m, t)?;
        }
        if !moved && !fired && !m.discrete_changing() {
            break;
        }
        rounds += 1;
        if rounds >= MAX_ITERATIONS {
            return Err(m.not_settled(t));
        }
        m.set_pre(false);
        // Settling: see `at`.
        let _ = Relations::evaluate(m, t);
    }
    if count {
        m.driver_mut().counts.iterations += rounds.saturating_sub(1) as u64;
    }
    let clocks: Vec<usize> = m.driver().clocks.iter().map(|c| c.var).collect();
    for var in clocks.into_iter().chain(m.flags().into_iter().flatten()) {
        m.set_var(var, 0.0);
    }
    Clauses::evaluate(m, t)?;
    m.set_pre(false);
    m.states(x);
    let (held, before) = heading(m, t, x)?;
    let d = m.driver_mut();
    (d.held, d.before) = (held, before);
    keep_edges_ahead(m);
    Ok(())
}

/// A condition false at the event that the look-ahead finds true has its edge just past it
/// (`sin(2πt) < 0` at a sample instant t = 0.5, where the sine is 1e-16): it and its
/// relations are held at their values now, so that the integrator's next step sees the
/// switch and locates it, and the clause fires, rather than the edge being taken as already
/// passed.
fn keep_edges_ahead<M: EventModel>(m: &mut M) {
    for k in 0..m.driver().before.len() {
        if m.condition(k) || !m.driver().before[k] {
            continue;
        }
        m.driver_mut().before[k] = false;
        for r in m.relations_of(k) {
            let value = m.value(r);
            m.driver_mut().held[r] = value;
        }
    }
}

/// Each relation's and condition's value just after `t` on the tangent from `(t, x)`: at its
/// own root a relation is held at the side the solution heads to (a ball that bounced at
/// `h = 0` holds `h < 0` false, so that its next fall is seen however short the bounce, and
/// `when h < 0` fires again then). A switch holds the value the event left it at.
fn heading<M: EventModel>(
    m: &mut M,
    t: f64,
    x: &[f64],
) -> Result<(Vec<f64>, Vec<bool>), Failure<M>> {
    let delta = LOOK_AHEAD * m.driver().tolerance;
    let ahead: Vec<f64> = (x.iter().zip(m.derivatives()))
        .map(|(&xi, dx)| xi + delta * dx)
        .collect();
    let switches: Vec<Option<f64>> = (0..m.count()).map(|k| m.switch(k)).collect();
    let saved = m.save();
    m.load_states(t + delta, &ahead)?;
    let held: Vec<f64> = (switches.into_iter().enumerate())
        .map(|(k, switch)| switch.unwrap_or_else(|| m.value(k)))
        .collect();
    let conditions = (0..m.driver().before.len())
        .map(|k| m.condition(k))
        .collect();
    m.restore(saved);
    Ok((held, conditions))
}
