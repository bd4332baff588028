//! Fixed-step methods (SPEC §6) over any [`OdeSystem`]: the runtime's steppers
//! (`mocca_runtime::fixed_step`, the ones emitted crates run) over the system, counting into
//! [`Stats`], with [`NewtonMatrix`] for their implicit stages.

use crate::causal::EvalFailure;

use super::linear::NewtonMatrix;
use super::system::{OdeSystem, Stats};

pub use mocca_runtime::fixed_step::Method;
use mocca_runtime::fixed_step::{
    self as shared, Count, Factored, StageModel, StageNewton, StageWork,
};

/// Why a step failed.
#[derive(Clone, Debug, PartialEq)]
pub enum StepFailure {
    /// Evaluating the model failed (a step's Newton, or a NaN), at time `t`.
    Eval { failure: EvalFailure, t: f64 },
    /// The implicit stage's Newton did not converge at time `t`; `worst` are the states with the
    /// largest last corrections (indices into the system's states), largest first.
    Stage { t: f64, worst: Vec<usize> },
    /// `I − γ J` is singular at time `t`.
    Singular { t: f64 },
}

/// A fixed-step integrator: whole-system ([`Stepper`]) or mixed-mode
/// ([`super::mixed::MixedStepper`]).
pub trait FixedStep {
    /// Advances `x` from `t` to `t + h`.
    fn step(
        &mut self,
        system: &mut dyn OdeSystem,
        t: f64,
        h: f64,
        x: &mut [f64],
    ) -> Result<(), StepFailure>;

    fn stats(&self) -> &Stats;

    /// Whether the Newton matrix uses the sparse LU.
    fn sparse(&self) -> bool;
}

/// An [`OdeSystem`] as the shared fixed-step methods step it, counting into `stats`.
pub(super) struct Counted<'a> {
    pub system: &'a mut dyn OdeSystem,
    pub stats: &'a mut Stats,
}

impl StageModel<NewtonMatrix> for Counted<'_> {
    type Failure = StepFailure;

    fn count(&mut self, what: Count) {
        let counter = match what {
            Count::Evaluation => &mut self.stats.f_evals,
            Count::Jacobian => &mut self.stats.jac_evals,
            Count::Factorization => &mut self.stats.factorizations,
            Count::NewtonIteration => &mut self.stats.newton_iters,
            Count::Step => &mut self.stats.steps,
        };
        *counter += 1;
    }

    fn evaluations(&self) -> u64 {
        self.stats.f_evals
    }

    fn level_evaluations(&mut self) -> &mut Vec<u64> {
        &mut self.stats.level_f_evals
    }

    fn eval(
        &mut self,
        rows: Option<usize>,
        t: f64,
        x: &[f64],
        dx: &mut [f64],
    ) -> Result<(), StepFailure> {
        self.system
            .rhs_rows(rows, t, x, dx)
            .map_err(|failure| StepFailure::Eval { failure, t })
    }

    fn jacobian(
        &mut self,
        rows: Option<usize>,
        entries: Option<&[usize]>,
        (t, x): (f64, &[f64]),
        values: &mut [f64],
    ) -> Result<(), StepFailure> {
        match entries {
            None => self.system.jacobian(t, x, values),
            Some(entries) => self.system.jacobian_entries(rows, (t, x), entries, values),
        }
        .map_err(|failure| StepFailure::Eval { failure, t })
    }

    fn jacobian_is_constant(&self) -> bool {
        self.system.jacobian_is_constant()
    }

    fn factor(&mut self, matrix: &mut NewtonMatrix, gamma: f64, jac: &[f64]) -> bool {
        matrix.factor(gamma, jac)
    }

    fn solve(&mut self, matrix: &mut NewtonMatrix, b: &mut [f64]) {
        matrix.solve(b);
    }

    fn stage_failure(&self, t: f64, worst: Vec<usize>) -> StepFailure {
        StepFailure::Stage { t, worst }
    }

    fn singular(&self, t: f64) -> StepFailure {
        StepFailure::Singular { t }
    }
}

impl Factored for NewtonMatrix {
    fn contraction(&mut self, observed: Option<f64>) -> Option<f64> {
        NewtonMatrix::contraction(self, observed)
    }
}

/// Simplified Newton on the implicit stages of `block` (ascending state indices) of
/// `system`: `J_BB` the entries of its pattern in the block's rows and columns, evaluated by
/// the system's own block of rows where it has one.
pub(super) fn stage_newton(system: &dyn OdeSystem, block: Vec<usize>) -> StageNewton<NewtonMatrix> {
    let (n, pattern) = (system.dim(), system.jacobian_pattern());
    if block.len() == n {
        return StageNewton::whole(n, pattern.len(), NewtonMatrix::new(n, pattern));
    }
    let mut position = vec![None; n];
    for (k, &i) in block.iter().enumerate() {
        position[i] = Some(k);
    }
    // The block is ascending, so the renumbered pattern stays sorted by row then column.
    let (entries, block_pattern): (Vec<usize>, Vec<(usize, usize)>) = pattern
        .iter()
        .enumerate()
        .filter_map(|(e, &(r, c))| Some((e, (position[r]?, position[c]?))))
        .unzip();
    let matrix = NewtonMatrix::new(block.len(), &block_pattern);
    let rows = system.rows_block(&block);
    StageNewton::block(block, entries, rows, matrix)
}

/// Whether the Newton matrix of `work` uses the sparse LU.
pub(super) fn is_sparse(work: &StageWork<NewtonMatrix>) -> bool {
    work.newton.as_ref().is_some_and(|n| n.matrix.is_sparse())
}

/// Integrates with a fixed step and keeps the counters; allocates its work space once.
pub struct Stepper {
    stepper: shared::Stepper<NewtonMatrix>,
    stats: Stats,
}

impl Stepper {
    pub fn new(method: Method, tol: f64, system: &dyn OdeSystem) -> Stepper {
        let n = system.dim();
        let newton = method
            .is_implicit()
            .then(|| stage_newton(system, (0..n).collect()));
        Stepper {
            stepper: shared::Stepper::new(method, n, tol, newton),
            stats: Stats::default(),
        }
    }
}

impl FixedStep for Stepper {
    fn step(
        &mut self,
        system: &mut dyn OdeSystem,
        t: f64,
        h: f64,
        x: &mut [f64],
    ) -> Result<(), StepFailure> {
        let stats = &mut self.stats;
        self.stepper.step(&mut Counted { system, stats }, t, h, x)
    }

    fn stats(&self) -> &Stats {
        &self.stats
    }

    fn sparse(&self) -> bool {
        is_sparse(&self.stepper.work)
    }
}

/// Integrates from `t0` to `t1` with `steps` equal steps, calling `record(t, x)` at `t0` and
/// after every step.
pub fn integrate(
    stepper: &mut Stepper,
    system: &mut dyn OdeSystem,
    t0: f64,
    t1: f64,
    steps: u64,
    x: &mut [f64],
    mut record: impl FnMut(f64, &[f64]),
) -> Result<(), StepFailure> {
    let h = (t1 - t0) / steps as f64;
    record(t0, x);
    for k in 0..steps {
        let t = t0 + k as f64 * h;
        stepper.step(system, t, h, x)?;
        record(t0 + (k + 1) as f64 * h, x);
    }
    Ok(())
}
