//! The model's `assert`s checked while it runs: at the initial point and at every recorded
//! point. A false `AssertionLevel.error` condition stops the run; a false `warning` is noted
//! once (its first time) and the run goes on.
//!
//! Conditions are flat expressions over every variable of the flat DAE, including the ones
//! alias elimination removed from the equations; those are read through their bindings.
//!
//! Index reduction's state-dependent choices of dummy derivatives are checked at the same
//! points: a choice whose block of dummy derivatives has become poor against the other
//! candidates ([`pivots::conditioning`] below [`MIN_CONDITIONING`]) stops the run, since the
//! states it keeps no longer determine the others well, and the numbers would soon be wrong;
//! `simulate` then chooses the states again there.

use crate::causal::Point;
use crate::dae::{Dae, VarKind};
use crate::expr::{EvalError, Values, VarId};
use crate::structure::index_reduction::{evaluate, pivots};

/// A choice of dummy derivatives stops a run when its conditioning falls below this (it is
/// at least [`pivots::THRESHOLD`] where the choice was made).
pub const MIN_CONDITIONING: f64 = 0.1;

/// What was violated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Checked {
    /// `assertion` indexes `Dae::assertions`.
    Assertion,
    /// `assertion` indexes `Dae::state_choices`; the choice's conditioning there.
    StateChoice { conditioning: f64 },
}

/// An error-level assertion whose condition was false (or could not be evaluated), or a
/// choice of states that no longer holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// Index into `Dae::assertions` (or `Dae::state_choices`, by `checked`).
    pub assertion: usize,
    pub checked: Checked,
    pub time: f64,
    /// Why the condition has no value, when it has none.
    pub unevaluable: Option<EvalError>,
}

/// Checks a DAE's assertions at points and remembers the warnings seen.
pub struct Checker<'a> {
    dae: &'a Dae,
    /// Per assertion: the first time a warning-level one was false.
    warned: Vec<Option<f64>>,
}

impl<'a> Checker<'a> {
    pub fn new(dae: &'a Dae) -> Checker<'a> {
        Checker {
            dae,
            warned: vec![None; dae.assertions.len()],
        }
    }

    /// Whether there is anything to check (callers skip evaluating the full point otherwise).
    pub fn is_empty(&self) -> bool {
        self.dae.assertions.is_empty() && self.dae.state_choices.is_empty()
    }

    /// Checks every assertion at `point` (all variables and derivatives evaluated).
    pub fn check(&mut self, point: &Point) -> Result<(), Violation> {
        let values = WithAliases {
            dae: self.dae,
            point,
        };
        for (k, a) in self.dae.assertions.iter().enumerate() {
            let (holds, unevaluable) = match self.dae.pool.eval(a.condition, &values) {
                Ok(c) => (c != 0.0, None),
                Err(e) => (false, Some(e)),
            };
            if holds {
                continue;
            }
            if a.is_error {
                return Err(Violation {
                    assertion: k,
                    checked: Checked::Assertion,
                    time: point.time,
                    unevaluable,
                });
            }
            self.warned[k].get_or_insert(point.time);
        }
        for (k, choice) in self.dae.state_choices.iter().enumerate() {
            let rows = evaluate(
                &self.dae.pool,
                &choice.entries,
                choice.pivots.len(),
                &values,
            );
            let conditioning = pivots::conditioning(&rows, &choice.pivots);
            if conditioning < MIN_CONDITIONING {
                return Err(Violation {
                    assertion: k,
                    checked: Checked::StateChoice { conditioning },
                    time: point.time,
                    unevaluable: None,
                });
            }
        }
        Ok(())
    }

    /// The warning-level assertions that were false, with the first time each was.
    pub fn warnings(&self) -> Vec<(usize, f64)> {
        self.warned
            .iter()
            .enumerate()
            .filter_map(|(k, t)| t.map(|t| (k, t)))
            .collect()
    }
}

/// A point's values, with eliminated aliases read through their bindings.
struct WithAliases<'a> {
    dae: &'a Dae,
    point: &'a Point,
}

impl Values for WithAliases<'_> {
    fn var(&self, v: VarId) -> Option<f64> {
        let var = self.dae.var(v);
        match (var.kind, var.binding) {
            // Bindings of aliases name representatives, themselves possibly eliminated in a
            // later round: the chain is as long as the rounds of elimination.
            (VarKind::Alias, Some(b)) => self.dae.pool.eval(b, self).ok(),
            _ => self.point.var(v),
        }
    }

    fn der(&self, v: VarId) -> Option<f64> {
        self.point.der(v)
    }

    fn time(&self) -> Option<f64> {
        self.point.time()
    }
}
