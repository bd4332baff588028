//! Fixed-step methods (SPEC §6) over any [`OdeSystem`]. The implicit ones solve their stage
//! equation `Y = a + γ f(τ, Y)` by simplified Newton: the Jacobian is evaluated and
//! `I − γ J` factored once per step, then reused by every iteration of that step. When the
//! Jacobian is constant (a linear model) it is evaluated and `I − γ J` factored once for the
//! whole run: the iterates are the same as with a fresh factorization every step.

use crate::causal::EvalFailure;

use super::linear::NewtonMatrix;
use super::system::{OdeSystem, Stats};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    ExplicitEuler,
    ExplicitMidpoint,
    Heun,
    ImplicitEuler,
    ImplicitMidpoint,
    Trapezoidal,
}

impl Method {
    pub const ALL: [Method; 6] = [
        Method::ExplicitEuler,
        Method::ExplicitMidpoint,
        Method::Heun,
        Method::ImplicitEuler,
        Method::ImplicitMidpoint,
        Method::Trapezoidal,
    ];

    /// The classical order of accuracy.
    pub fn order(self) -> u32 {
        match self {
            Method::ExplicitEuler | Method::ImplicitEuler => 1,
            _ => 2,
        }
    }

    pub fn is_implicit(self) -> bool {
        matches!(
            self,
            Method::ImplicitEuler | Method::ImplicitMidpoint | Method::Trapezoidal
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            Method::ExplicitEuler => "euler",
            Method::ExplicitMidpoint => "midpoint",
            Method::Heun => "heun",
            Method::ImplicitEuler => "implicit-euler",
            Method::ImplicitMidpoint => "implicit-midpoint",
            Method::Trapezoidal => "trapezoidal",
        }
    }
}

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

/// Newton on the implicit stage gives up after this many iterations.
const STAGE_NEWTON_MAX: u64 = 25;

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

/// What a fixed-step stepper works with, allocated once: its counters, its stage vectors, and
/// Newton on the states its implicit stages solve.
pub(super) struct StageWork {
    /// Newton on the stage stops when every correction, or once Newton's contraction rate
    /// `ρ` is known every correction times `ρ / (1 − ρ)` (the error it leaves), is below
    /// `tol · (1 + |Y_i|)`.
    pub tol: f64,
    pub stats: Stats,
    pub k1: Vec<f64>,
    pub k2: Vec<f64>,
    pub stage: Vec<f64>,
    pub base: Vec<f64>,
    /// Newton over the implicit states; none when there are none.
    newton: Option<StageNewton>,
}

impl StageWork {
    /// Work space for `system`, Newton over the states `implicit`.
    pub fn new(system: &dyn OdeSystem, tol: f64, implicit: Vec<usize>) -> StageWork {
        let n = system.dim();
        let newton = (!implicit.is_empty()).then(|| StageNewton::new(system, implicit));
        StageWork {
            tol,
            stats: Stats::default(),
            k1: vec![0.0; n],
            k2: vec![0.0; n],
            stage: vec![0.0; n],
            base: vec![0.0; n],
            newton,
        }
    }

    /// Whether the Newton matrix uses the sparse LU.
    pub fn sparse(&self) -> bool {
        self.newton.as_ref().is_some_and(StageNewton::sparse)
    }

    /// Solves `Y_I = base_I + γ f_I(τ, Y)` on the implicit states into `stage`, starting
    /// from its current value (the other entries held); nothing without implicit states.
    pub fn solve(
        &mut self,
        system: &mut dyn OdeSystem,
        tau: f64,
        gamma: f64,
    ) -> Result<(), StepFailure> {
        let Some(newton) = self.newton.as_mut() else {
            return Ok(());
        };
        let equation = StageEquation {
            base: &self.base,
            tau,
            gamma,
        };
        newton.solve(
            system,
            &mut self.stats,
            self.tol,
            equation,
            &mut self.stage,
            &mut self.k2,
        )
    }
}

/// Integrates with a fixed step and keeps the counters; allocates its work space once.
pub struct Stepper {
    pub method: Method,
    work: StageWork,
}

impl Stepper {
    pub fn new(method: Method, tol: f64, system: &dyn OdeSystem) -> Stepper {
        let implicit = match method.is_implicit() {
            true => (0..system.dim()).collect(),
            false => Vec::new(),
        };
        Stepper {
            method,
            work: StageWork::new(system, tol, implicit),
        }
    }

    fn f(
        &mut self,
        system: &mut dyn OdeSystem,
        t: f64,
        x: &[f64],
        out: Slot,
    ) -> Result<(), StepFailure> {
        let dx = match out {
            Slot::K1 => &mut self.work.k1,
            Slot::K2 => &mut self.work.k2,
        };
        eval(system, &mut self.work.stats, t, x, dx)
    }

    /// Solves `Y = base + γ f(τ, Y)` into the stage vector, starting from `Y = x`.
    fn solve_stage(
        &mut self,
        system: &mut dyn OdeSystem,
        x: &[f64],
        tau: f64,
        gamma: f64,
    ) -> Result<(), StepFailure> {
        self.work.stage.copy_from_slice(x);
        self.work.solve(system, tau, gamma)
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
        match self.method {
            Method::ExplicitEuler => {
                self.f(system, t, x, Slot::K1)?;
                axpy(x, h, &self.work.k1);
            }
            Method::ExplicitMidpoint => {
                self.f(system, t, x, Slot::K1)?;
                self.work.stage.copy_from_slice(x);
                axpy(&mut self.work.stage, h / 2.0, &self.work.k1);
                let stage = std::mem::take(&mut self.work.stage);
                let r = self.f(system, t + h / 2.0, &stage, Slot::K2);
                self.work.stage = stage;
                r?;
                axpy(x, h, &self.work.k2);
            }
            Method::Heun => {
                self.f(system, t, x, Slot::K1)?;
                self.work.stage.copy_from_slice(x);
                axpy(&mut self.work.stage, h, &self.work.k1);
                let stage = std::mem::take(&mut self.work.stage);
                let r = self.f(system, t + h, &stage, Slot::K2);
                self.work.stage = stage;
                r?;
                axpy(x, h / 2.0, &self.work.k1);
                axpy(x, h / 2.0, &self.work.k2);
            }
            Method::ImplicitEuler => {
                // X = x + h f(t + h, X)
                self.work.base.copy_from_slice(x);
                self.solve_stage(system, x, t + h, h)?;
                x.copy_from_slice(&self.work.stage);
            }
            Method::ImplicitMidpoint => {
                // Y = x + h/2 f(t + h/2, Y), X = 2Y − x
                self.work.base.copy_from_slice(x);
                self.solve_stage(system, x, t + h / 2.0, h / 2.0)?;
                for (xi, &yi) in x.iter_mut().zip(&self.work.stage) {
                    *xi = 2.0 * yi - *xi;
                }
            }
            Method::Trapezoidal => {
                // X = x + h/2 (f(t, x) + f(t + h, X)); f(t + h, X) starts the next step.
                // f(t, x) is evaluated afresh each step rather than carried over from the
                // last stage: a partitioned run changes the exchanged values between steps.
                self.f(system, t, x, Slot::K1)?;
                self.work.base.copy_from_slice(x);
                axpy(&mut self.work.base, h / 2.0, &self.work.k1);
                self.solve_stage(system, x, t + h, h / 2.0)?;
                x.copy_from_slice(&self.work.stage);
            }
        }
        self.work.stats.steps += 1;
        Ok(())
    }

    fn stats(&self) -> &Stats {
        &self.work.stats
    }

    fn sparse(&self) -> bool {
        self.work.sparse()
    }
}

/// Evaluates `dx = f(t, x)`, counting it.
pub(super) fn eval(
    system: &mut dyn OdeSystem,
    stats: &mut Stats,
    t: f64,
    x: &[f64],
    dx: &mut [f64],
) -> Result<(), StepFailure> {
    eval_rows(system, stats, None, t, x, dx)
}

/// Evaluates `f(t, x)` on the rows of `block` (every row when `None`) into `dx`, counting it.
pub(super) fn eval_rows(
    system: &mut dyn OdeSystem,
    stats: &mut Stats,
    block: Option<usize>,
    t: f64,
    x: &[f64],
    dx: &mut [f64],
) -> Result<(), StepFailure> {
    stats.f_evals += 1;
    system
        .rhs_rows(block, t, x, dx)
        .map_err(|failure| StepFailure::Eval { failure, t })
}

/// An implicit stage `Y_B = base_B + γ f_B(τ, Y)` over a block B of the states.
pub(super) struct StageEquation<'a> {
    /// Indexed by state; only the block's entries are read.
    pub base: &'a [f64],
    pub tau: f64,
    pub gamma: f64,
}

/// Simplified Newton on an implicit stage over a block B of the states (all of them, or a
/// partition's fast part), the other states held: the block `J_BB` of the Jacobian is
/// evaluated and `I − γ J_BB` factored at the first iterate, then reused by every iteration of
/// the stage. When the Jacobian is constant (a linear model) it is evaluated and factored once
/// for the whole run: the iterates are the same as with a fresh factorization every stage.
pub(super) struct StageNewton {
    /// The block's states, ascending (indices into the system's states).
    block: Vec<usize>,
    /// Per entry of `J_BB`'s pattern, the index of that entry in the system's pattern
    /// (ascending).
    entries: Vec<usize>,
    /// Whether the block is every state (then `J_BB` is the whole Jacobian).
    whole: bool,
    /// The system's block of rows for the block's states, when it evaluates them alone.
    rows: Option<usize>,
    /// `J_BB`'s values.
    jac: Vec<f64>,
    delta: Vec<f64>,
    matrix: NewtonMatrix,
    /// The γ of the factorization in `matrix`, when that factorization holds a constant
    /// Jacobian and may serve later stages.
    constant_factored: Option<f64>,
}

impl StageNewton {
    /// Newton over `block` (ascending state indices) of `system`.
    pub(super) fn new(system: &dyn OdeSystem, block: Vec<usize>) -> StageNewton {
        let pattern = system.jacobian_pattern();
        let mut position = vec![None; system.dim()];
        for (k, &i) in block.iter().enumerate() {
            position[i] = Some(k);
        }
        // The block is ascending, so the renumbered pattern stays sorted by row then column.
        let (entries, block_pattern): (Vec<usize>, Vec<(usize, usize)>) = pattern
            .iter()
            .enumerate()
            .filter_map(|(e, &(r, c))| Some((e, (position[r]?, position[c]?))))
            .unzip();
        StageNewton {
            matrix: NewtonMatrix::new(block.len(), &block_pattern),
            delta: vec![0.0; block.len()],
            whole: block.len() == system.dim(),
            rows: (block.len() < system.dim())
                .then(|| system.rows_block(&block))
                .flatten(),
            jac: vec![0.0; entries.len()],
            entries,
            block,
            constant_factored: None,
        }
    }

    pub(super) fn sparse(&self) -> bool {
        self.matrix.is_sparse()
    }

    /// Solves `equation` for the block's entries of `stage`, starting from its values (the
    /// other entries are held); `fx` receives `f` at the iterates. The Jacobian is taken at
    /// the first iterate, right after `f` was evaluated there, so the model reuses that
    /// evaluation. Newton stops when every correction, or once Newton's contraction rate `ρ`
    /// is known every correction times `ρ / (1 − ρ)` (the error it leaves), is below
    /// `tol · (1 + |Y_i|)`.
    pub(super) fn solve(
        &mut self,
        system: &mut dyn OdeSystem,
        stats: &mut Stats,
        tol: f64,
        equation: StageEquation<'_>,
        stage: &mut [f64],
        fx: &mut [f64],
    ) -> Result<(), StepFailure> {
        let StageEquation { base, tau, gamma } = equation;
        let mut previous_size = None;
        for iteration in 0..STAGE_NEWTON_MAX {
            stats.newton_iters += 1;
            eval_rows(system, stats, self.rows, tau, stage, fx)?;
            if iteration == 0 && self.constant_factored != Some(gamma) {
                self.factor(system, stats, tau, stage, gamma)?;
            }
            // G(Y) = Y − base − γ f(τ, Y); solve (I − γ J_BB) Δ = −G_B.
            for (d, &i) in self.delta.iter_mut().zip(&self.block) {
                *d = base[i] + gamma * fx[i] - stage[i];
            }
            self.matrix.solve(&mut self.delta);
            // The largest correction in units of its tolerance; NaN if any correction is.
            let mut size = 0.0f64;
            for (&d, &i) in self.delta.iter().zip(&self.block) {
                stage[i] += d;
                let scaled = d.abs() / (tol * (1.0 + stage[i].abs()));
                if scaled.is_nan() {
                    size = f64::NAN;
                    break;
                }
                size = size.max(scaled);
            }
            let left = match self.matrix.contraction(previous_size.map(|p| size / p)) {
                Some(rate) if rate < 1.0 => size * rate / (1.0 - rate),
                _ => size,
            };
            if size <= 1.0 || left <= 1.0 {
                return Ok(());
            }
            previous_size = Some(size);
        }
        let worst = largest(&self.delta, 3);
        Err(StepFailure::Stage {
            t: tau,
            worst: worst.into_iter().map(|k| self.block[k]).collect(),
        })
    }

    /// Evaluates the Jacobian at `(t, x)` and factors `I − γ J_BB`.
    fn factor(
        &mut self,
        system: &mut dyn OdeSystem,
        stats: &mut Stats,
        t: f64,
        x: &[f64],
        gamma: f64,
    ) -> Result<(), StepFailure> {
        stats.jac_evals += 1;
        let evaluated = if self.whole {
            system.jacobian(t, x, &mut self.jac)
        } else {
            system.jacobian_entries(self.rows, (t, x), &self.entries, &mut self.jac)
        };
        evaluated.map_err(|failure| StepFailure::Eval { failure, t })?;
        stats.factorizations += 1;
        if self.matrix.factor(gamma, &self.jac) {
            self.constant_factored = system.jacobian_is_constant().then_some(gamma);
            Ok(())
        } else {
            self.constant_factored = None;
            Err(StepFailure::Singular { t })
        }
    }
}

#[derive(Clone, Copy)]
enum Slot {
    K1,
    K2,
}

fn axpy(y: &mut [f64], a: f64, x: &[f64]) {
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

/// `y_i += a x_i` for each `i` in `indices`.
pub(super) fn axpy_on(y: &mut [f64], a: f64, x: &[f64], indices: &[usize]) {
    for &i in indices {
        y[i] += a * x[i];
    }
}

/// Indices of the `k` largest magnitudes, largest first (NaN counts as largest).
fn largest(v: &[f64], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    let key = |i: usize| {
        if v[i].is_nan() {
            f64::INFINITY
        } else {
            v[i].abs()
        }
    };
    idx.sort_by(|&a, &b| key(b).total_cmp(&key(a)).then(a.cmp(&b)));
    idx.truncate(k);
    idx
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
