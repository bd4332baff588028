//! The interface between a model and the integrators: `der(x) = f(t, x)` with the sparse
//! Jacobian `∂f/∂x`, and the counters every integrator keeps (SPEC §6).

use crate::causal::EvalFailure;

use super::pair::Pair;

/// An explicit ODE `der(x) = f(t, x)` the integrators can step.
pub trait OdeSystem {
    /// The number of states.
    fn dim(&self) -> usize;

    /// `dx = f(t, x)`.
    fn rhs(&mut self, t: f64, x: &[f64], dx: &mut [f64]) -> Result<(), EvalFailure>;

    /// [`OdeSystem::rhs`], free to share its work with `pair`'s helper thread (the same
    /// values either way).
    fn rhs_on(
        &mut self,
        t: f64,
        x: &[f64],
        dx: &mut [f64],
        pair: Option<&Pair>,
    ) -> Result<(), EvalFailure> {
        let _ = pair;
        self.rhs(t, x, dx)
    }

    /// The structurally nonzero entries `(row, col)` of `∂f/∂x`, sorted by row then column;
    /// fixed for the whole run.
    fn jacobian_pattern(&self) -> &[(usize, usize)];

    /// The values of `∂f/∂x` at `(t, x)`, one per entry of [`OdeSystem::jacobian_pattern`].
    fn jacobian(&mut self, t: f64, x: &[f64], values: &mut [f64]) -> Result<(), EvalFailure>;

    /// The block of rows `states` (ascending) when the system evaluates it alone (see
    /// [`OdeSystem::rhs_rows`]); `None` when it does not.
    fn rows_block(&self, states: &[usize]) -> Option<usize> {
        let _ = states;
        None
    }

    /// `f` at `(t, x)` on the rows of `block` (from [`OdeSystem::rows_block`]), written into
    /// `dx` at those rows (the others are left unspecified); every row when `None`.
    fn rhs_rows(
        &mut self,
        block: Option<usize>,
        t: f64,
        x: &[f64],
        dx: &mut [f64],
    ) -> Result<(), EvalFailure> {
        let _ = block;
        self.rhs(t, x, dx)
    }

    /// The values of the entries `entries` of `∂f/∂x` (ascending indices into
    /// [`OdeSystem::jacobian_pattern`]) at `(t, x)`, one per listed entry: a block of the
    /// Jacobian (a partition's fast part) for the cost of its own entries where the system
    /// allows. `block` is the block of rows from [`OdeSystem::rows_block`] whose rows and
    /// columns hold exactly these entries, when there is one. By default the whole Jacobian,
    /// then the entries picked out.
    fn jacobian_entries(
        &mut self,
        block: Option<usize>,
        (t, x): (f64, &[f64]),
        entries: &[usize],
        values: &mut [f64],
    ) -> Result<(), EvalFailure> {
        let _ = block;
        let mut all = vec![0.0; self.jacobian_pattern().len()];
        self.jacobian(t, x, &mut all)?;
        pick(&all, entries, values);
        Ok(())
    }

    /// Whether `∂f/∂x` depends on neither `t` nor `x` (a linear model): one evaluation then
    /// serves the whole run, and an iteration matrix stays valid while its step does.
    fn jacobian_is_constant(&self) -> bool {
        false
    }

    /// The times at which `f` may jump (relations between `time` and parameters), ascending.
    /// Every integrator ends a step exactly at each.
    fn breakpoints(&self) -> &[f64] {
        &[]
    }

    /// Until the next call, relations that switch at breakpoints keep the values they have
    /// inside `(from, to)`, also at its ends: a step ending at a breakpoint sees the model
    /// before the switch, and the next one after it.
    fn enter_interval(&mut self, from: f64, to: f64) {
        let _ = (from, to);
    }

    /// The guesses the system's algebraic solves start from (their last solutions) into
    /// `out`. A loop with several roots (a Schmitt trigger's) stays on the branch its guess is
    /// on: an integrator keeps the guesses of the last accepted step, so that a rejected trial
    /// step does not move the model to another branch.
    fn guesses(&self, out: &mut Vec<f64>) {
        out.clear();
    }

    /// Sets the guesses [`OdeSystem::guesses`] gave.
    fn set_guesses(&mut self, guesses: &[f64]) {
        let _ = guesses;
    }

    /// Called just before an integrator hands a point to its observer: a system that records
    /// may keep its guesses there, to evaluate the point later on the branch the run was on.
    fn observing(&mut self) {}
}

impl Stats {
    /// Adds `other`'s evaluations, Jacobians, Newton iterations and factorizations (not its
    /// steps, which a caller may count otherwise).
    pub fn add_work(&mut self, other: &Stats) {
        self.f_evals += other.f_evals;
        self.jac_evals += other.jac_evals;
        self.f_evals_in_jacobians += other.f_evals_in_jacobians;
        self.newton_iters += other.newton_iters;
        self.factorizations += other.factorizations;
    }
}

/// `values[k] = all[entries[k]]`.
pub fn pick(all: &[f64], entries: &[usize], values: &mut [f64]) {
    for (v, &e) in values.iter_mut().zip(entries) {
        *v = all[e];
    }
}

pub use mocca_runtime::grid::pieces;

/// What an integration cost (SPEC §6).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Accepted steps.
    pub steps: u64,
    /// Rejected steps (variable-step methods only).
    pub rejected_steps: u64,
    /// Evaluations of `f`, including those spent inside Jacobians.
    pub f_evals: u64,
    /// Evaluations of `∂f/∂x`.
    pub jac_evals: u64,
    /// Evaluations of `f` spent computing Jacobians (0 when the Jacobian is symbolic).
    pub f_evals_in_jacobians: u64,
    /// Newton iterations over all implicit stages.
    pub newton_iters: u64,
    /// LU factorizations of the Newton matrix `I − γJ`.
    pub factorizations: u64,
    /// Of a partitioned run, per level (slowest first) the evaluations of `f` its steps made,
    /// Newton's included; empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub level_f_evals: Vec<u64>,
}
