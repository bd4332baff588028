//! The asserts checked at every step a variable-step run accepts, not at its output points
//! only (as OpenModelica checks them): an `assert(x < 0.9)` that a long step's output grid
//! passes over is still seen. So is index reduction's choice of states, which must be
//! changed before the states it keeps stop determining the others. It watches the run as the events do ([`Watch`]), around them
//! when the model has events: a violation ends the step where it is seen, as a switch would,
//! and the run stops there with it.

use crate::causal::{Causal, Point};
use crate::dae::{Dae, VarKind};
use crate::expr::Node;

use super::assertions::{Checker, Violation};
use super::events::{Events, Watch};

/// The run's events (if any) and the asserts checked at each accepted step.
pub struct StepChecks<'w, 'd> {
    events: Option<&'w mut Events<'d>>,
    dae: &'d Dae,
    causal: &'d Causal,
    /// The model evaluated at the point checked, when no events evaluate it.
    point: Point,
    checker: Checker<'d>,
    /// The first violation seen, with the time it was seen at.
    pub violation: Option<Violation>,
}

impl<'w, 'd> StepChecks<'w, 'd> {
    /// The watch of a run with `events`, `point` giving the model evaluated at the start:
    /// `None` when there is nothing to watch (no events, no assert that reads what changes
    /// during a run, and no choice of states that depends on the state).
    pub fn watch(
        dae: &'d Dae,
        causal: &'d Causal,
        events: Option<&'w mut Events<'d>>,
        point: impl FnOnce() -> Point,
    ) -> Option<StepChecks<'w, 'd>> {
        if events.is_none() && !asserts_vary(dae) && dae.state_choices.is_empty() {
            return None;
        }
        let point = if events.is_some() {
            Point::default()
        } else {
            point()
        };
        Some(StepChecks {
            events,
            dae,
            causal,
            point,
            checker: Checker::new(dae),
            violation: None,
        })
    }

    /// The warning-level asserts seen false between output points, each at its first time.
    pub fn warnings(&self) -> Vec<(usize, f64)> {
        self.checker.warnings()
    }

    /// Whether an assert is violated at `(t, x)`; the first violation is kept.
    fn violated(&mut self, t: f64, x: &[f64]) -> bool {
        let point = match self.events.as_deref() {
            // `crossed` has just evaluated the model at (t, x).
            Some(events) => &events.point,
            None => {
                for (&xi, &s) in x.iter().zip(&self.causal.states) {
                    self.point.vars[s.0 as usize] = xi;
                }
                self.point.time = t;
                if self
                    .causal
                    .evaluate(&self.dae.pool, &mut self.point)
                    .is_err()
                {
                    // The integrator meets the failure itself.
                    return false;
                }
                &self.point
            }
        };
        match self.checker.check(point) {
            Ok(()) => false,
            Err(v) => {
                self.violation.get_or_insert(v);
                true
            }
        }
    }
}

impl Watch for StepChecks<'_, '_> {
    /// A switch of the events, else a violated assert. Past a switch the asserts are not
    /// looked at: the event may change what they read, and the step after it is checked.
    fn crossed(&mut self, t: f64, x: &[f64]) -> bool {
        if self.events.as_deref_mut().is_some_and(|e| e.crossed(t, x)) {
            return true;
        }
        self.violated(t, x)
    }

    fn locate(
        &mut self,
        t_l: f64,
        t_r: f64,
        state_at: &mut dyn FnMut(f64) -> Vec<f64>,
    ) -> (f64, Vec<f64>) {
        match (&self.violation, self.events.as_deref_mut()) {
            (None, Some(events)) => events.locate(t_l, t_r, state_at),
            // Seen at t_r: the run stops there.
            _ => (t_r, state_at(t_r)),
        }
    }
}

/// Whether some assert reads a value that changes during a run (not parameters and constants
/// only, which the initial point's check settles).
fn asserts_vary(dae: &Dae) -> bool {
    dae.assertions.iter().any(|a| {
        let mut varies = false;
        dae.pool.visit_leaves(a.condition, |n| match n {
            Node::Var(v) => {
                varies |= !matches!(dae.var(v).kind, VarKind::Parameter | VarKind::Constant)
            }
            _ => varies = true,
        });
        varies
    })
}
