//! The fixed-step run over an output grid, with its events: each step ends at the breakpoints
//! on its way (relations of time) and at the events inside it, located on the method's own
//! solution (or, in real time, handled at the step's end), and the next step starts there so
//! that the method keeps its order. `mocca simulate` and the crates `mocca emit` writes run
//! this one loop; what it steps is theirs, seen through [`GridSystem`], and what happens at an
//! event is the [`event_driver`](crate::event_driver)'s.

use crate::event_driver::{self, EventModel};
use crate::numfmt::decimal;
use crate::switching::{self, Relations};

/// How a switch inside a step is handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventMode {
    /// The crossing is located (the step is taken again to trial times) and the next step
    /// starts there.
    Locate,
    /// The switch is handled at the end of the step that crossed: no step is taken again, so
    /// every step costs the same; the switch comes up to one step late.
    Step,
}

/// Which side of its time a point is recorded on: just before an event there, or after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Before,
    After,
}

/// What a fixed-step run steps: the model as one system, or its weak subsystems, with the
/// recording of its points.
pub trait GridSystem {
    /// The events of the run.
    type Events: EventModel;
    /// Why a run stopped; an event's failure is one.
    type Error: From<<Self::Events as Relations>::Error>;

    /// The times at which relations of time switch, as the values held now say (one that
    /// compares time with a discrete variable moves at its events).
    fn breakpoints(&self) -> Vec<f64>;

    /// Steps the states `x` from `t` by `h`, ending a step at each breakpoint on the way.
    fn step_over(
        &mut self,
        breakpoints: &[f64],
        span: (f64, f64),
        x: &mut [f64],
    ) -> Result<(), Self::Error>;

    /// What stepping again from a step's start needs besides its states.
    fn checkpoint(&self) -> Vec<f64>;

    /// Back to a [`GridSystem::checkpoint`], to step again from where it was taken.
    fn rewind(&mut self, saved: &[f64]);

    /// Whether the values recorded are those the last step left (weak subsystems hold every
    /// value after a step), rather than the model evaluated at the states recorded: then a
    /// located event is stepped to again, so that they are the values there.
    fn records_last_step(&self) -> bool;

    /// Records the point `(t, x)` the system has just stepped to (or resumed at), with the
    /// relations of time on `side` of `t` (`Before` for the row just before an event there:
    /// the values it leaves, not those it switches to).
    fn record(&mut self, at: (f64, Side), x: &[f64]) -> Result<(), Self::Error>;

    /// Continues from the event at `t`, whose values (held ones, states as re-initialised)
    /// `events` holds.
    fn resume(&mut self, events: &Self::Events, t: f64);
}

/// The `k`-th of `steps` output times from `start` to `stop`, `start + k·(stop − start)/steps`:
/// computed, not accumulated, and rounded to 15 significant digits, so that a grid of 0.1
/// reads 0.3, not 0.30000000000000004 (a change of at most a few ulps).
pub fn grid_time(start: f64, stop: f64, steps: u64, k: u64) -> f64 {
    if k == steps {
        return stop;
    }
    decimal(start + k as f64 * (stop - start) / steps as f64)
}

/// Steps `system` from the initial state `x` at `start` to `stop` in `steps` equal steps,
/// recording the start, every grid point and the points just before and just after each
/// event, until the stop time or a `terminate`; then the terminal event. `stepped(k, s)` is
/// called after step `k` (from 1), with the seconds its stepping and events took.
pub fn run<S: GridSystem>(
    system: &mut S,
    mut events: Option<&mut S::Events>,
    (start, stop, steps): (f64, f64, u64),
    mode: EventMode,
    x: &mut [f64],
    stepped: &mut dyn FnMut(u64, f64),
) -> Result<(), S::Error> {
    system.record((start, Side::After), x)?;
    // Without events nothing discrete changes, so the breakpoints stay where they start.
    let fixed_breakpoints = system.breakpoints();
    let h = (stop - start) / steps as f64;
    let mut t = start;
    for k in 0..steps {
        if events.as_deref().is_some_and(EventModel::terminated) {
            break;
        }
        let t_next = grid_time(start, stop, steps, k + 1);
        let clock = std::time::Instant::now();
        let span = (t, t_next, h);
        let end = step(
            system,
            events.as_deref_mut(),
            &fixed_breakpoints,
            span,
            mode,
            x,
        )?;
        let seconds = clock.elapsed().as_secs_f64();
        if end == t_next {
            system.record((t_next, Side::After), x)?;
        }
        stepped(k + 1, seconds);
        t = end;
    }
    if let Some(events) = events
        && event_driver::terminal(events, t, x)?
    {
        system.resume(events, t);
        system.record((t, Side::After), x)?;
    }
    Ok(())
}

/// Steps `system` from `t` to `t_next` (a whole step `h` when no event splits it), ending a
/// step at each breakpoint on the way (the `fixed_breakpoints` of a run without events) and
/// handling the `events` inside it: where it stopped, `t_next` or the event at which
/// `terminate` ended the run (`t` when it already had).
pub fn step<S: GridSystem>(
    system: &mut S,
    events: Option<&mut S::Events>,
    fixed_breakpoints: &[f64],
    (t, t_next, h): (f64, f64, f64),
    mode: EventMode,
    x: &mut [f64],
) -> Result<f64, S::Error> {
    match events {
        None => {
            system.step_over(fixed_breakpoints, (t, h), x)?;
            Ok(t_next)
        }
        Some(events) if events.terminated() => Ok(t),
        Some(events) => {
            let mut run = EventRun {
                system,
                events,
                mode,
            };
            run.advance((t, t_next, h), x)
        }
    }
}

/// A fixed-step run with events.
struct EventRun<'r, S: GridSystem> {
    system: &'r mut S,
    events: &'r mut S::Events,
    mode: EventMode,
}

impl<S: GridSystem> EventRun<'_, S> {
    /// Steps from `t` to `t_next` (a whole step `h` when no event splits it), handling the
    /// events on the way: a step ends at a breakpoint or a `sample` instant, which are time
    /// events, and at a switch inside it; the next starts there. Where it stopped: `t_next`,
    /// or the event at which `terminate` ended the run.
    fn advance(&mut self, (t, t_next, h): (f64, f64, f64), x: &mut [f64]) -> Result<f64, S::Error> {
        let mut from = t;
        while from < t_next {
            let breakpoints = self.system.breakpoints();
            let timed = self
                .events
                .driver()
                .next_time_event(from)
                .min(next_after(&breakpoints, from));
            let end = timed.min(t_next);
            let step = if from == t && end == t_next {
                h
            } else {
                end - from
            };
            let saved = (x.to_vec(), self.system.checkpoint());
            self.system.step_over(&breakpoints, (from, step), x)?;
            let crossed = switching::crossed(self.events, end, x);
            let at = if crossed && self.mode == EventMode::Locate {
                let at = self.locate((from, end), (&breakpoints, &saved), x);
                if self.system.records_last_step() && at > from {
                    // Step to the event itself, so that the values recorded are those there.
                    self.system.rewind(&saved.1);
                    x.copy_from_slice(&saved.0);
                    self.system.step_over(&breakpoints, (from, at - from), x)?;
                }
                at
            } else if crossed || end == timed {
                end
            } else {
                from = end;
                continue;
            };
            self.system.record((at, Side::Before), x)?;
            event_driver::at(self.events, at, x, !crossed)?;
            self.system.resume(self.events, at);
            // An event on the grid: the grid's own row is the one after it.
            if at < t_next {
                self.system.record((at, Side::After), x)?;
            }
            if self.events.terminated() {
                return Ok(at);
            }
            from = at;
        }
        Ok(t_next)
    }

    /// The first switch in `(from, end]`, located on the system's solution stepped again from
    /// `saved` (states and checkpoint) to each trial time; `x` takes the states there.
    fn locate(
        &mut self,
        (from, end): (f64, f64),
        (breakpoints, saved): (&[f64], &(Vec<f64>, Vec<f64>)),
        x: &mut [f64],
    ) -> f64 {
        let system = &mut *self.system;
        let mut state_at = |tau: f64| {
            let mut y = saved.0.clone();
            if tau > from {
                system.rewind(&saved.1);
                // A failure here leaves the start: no switch is seen there.
                if system
                    .step_over(breakpoints, (from, tau - from), &mut y)
                    .is_err()
                {
                    y.copy_from_slice(&saved.0);
                }
            }
            y
        };
        let (at, x_at) = event_driver::locate(self.events, (from, end), &mut state_at);
        x.copy_from_slice(&x_at);
        at
    }
}

/// The first of the sorted `times` after `t` (infinite without one).
pub fn next_after(times: &[f64], t: f64) -> f64 {
    let k = times.partition_point(|&b| b <= t);
    times.get(k).copied().unwrap_or(f64::INFINITY)
}

/// The pieces `(a, b)` of `[from, to]` between the breakpoints inside it, in order.
pub fn pieces(breakpoints: &[f64], from: f64, to: f64) -> impl Iterator<Item = (f64, f64)> + '_ {
    // Sorted: the ones inside start after those at or before `from` (a binary search, as a
    // fixed-step run asks once per step).
    let first = breakpoints.partition_point(|&b| b <= from);
    let inner = breakpoints[first..]
        .iter()
        .copied()
        .take_while(move |&b| b < to);
    inner.chain(std::iter::once(to)).scan(from, |a, b| {
        let piece = (*a, b);
        *a = b;
        Some(piece)
    })
}

/// The step from `t` by `h` as pieces `(from, to, step)` between the breakpoints on the way;
/// a step no breakpoint splits keeps `h` exactly (so an implicit method's matrix for `h`
/// stays valid from step to step).
pub fn split_step(
    breakpoints: &[f64],
    t: f64,
    h: f64,
) -> impl Iterator<Item = (f64, f64, f64)> + '_ {
    pieces(breakpoints, t, t + h).map(move |(a, b)| {
        let whole = a == t && b == t + h;
        (a, b, if whole { h } else { b - a })
    })
}
