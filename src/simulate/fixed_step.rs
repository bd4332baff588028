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

/// Integrates with a fixed step and keeps the counters; allocates its work space once.
pub struct Stepper {
    pub method: Method,
    /// Newton on the stage stops when every correction, or once Newton's contraction rate
    /// `ρ` is known every correction times `ρ / (1 − ρ)` (the error it leaves), is below
    /// `tol · (1 + |Y_i|)`.
    pub tol: f64,
    pub stats: Stats,
    n: usize,
    k1: Vec<f64>,
    k2: Vec<f64>,
    stage: Vec<f64>,
    base: Vec<f64>,
    delta: Vec<f64>,
    jac: Vec<f64>,
    matrix: Option<NewtonMatrix>,
    /// The γ of the factorization in `matrix`, when that factorization holds a constant
    /// Jacobian and may serve later steps.
    constant_factored: Option<f64>,
}

impl Stepper {
    pub fn new(method: Method, tol: f64, system: &dyn OdeSystem) -> Stepper {
        let n = system.dim();
        let matrix = method
            .is_implicit()
            .then(|| NewtonMatrix::new(n, system.jacobian_pattern()));
        Stepper {
            method,
            tol,
            stats: Stats::default(),
            n,
            k1: vec![0.0; n],
            k2: vec![0.0; n],
            stage: vec![0.0; n],
            base: vec![0.0; n],
            delta: vec![0.0; n],
            jac: vec![0.0; system.jacobian_pattern().len()],
            matrix,
            constant_factored: None,
        }
    }

    /// Whether the Newton matrix uses the sparse LU.
    pub fn sparse(&self) -> bool {
        self.matrix.as_ref().is_some_and(NewtonMatrix::is_sparse)
    }

    fn f(
        &mut self,
        system: &mut dyn OdeSystem,
        t: f64,
        x: &[f64],
        out: Slot,
    ) -> Result<(), StepFailure> {
        self.stats.f_evals += 1;
        let dx = match out {
            Slot::K1 => &mut self.k1,
            Slot::K2 => &mut self.k2,
        };
        system
            .rhs(t, x, dx)
            .map_err(|failure| StepFailure::Eval { failure, t })
    }

    /// Advances `x` from `t` to `t + h`.
    pub fn step(
        &mut self,
        system: &mut dyn OdeSystem,
        t: f64,
        h: f64,
        x: &mut [f64],
    ) -> Result<(), StepFailure> {
        match self.method {
            Method::ExplicitEuler => {
                self.f(system, t, x, Slot::K1)?;
                axpy(x, h, &self.k1);
            }
            Method::ExplicitMidpoint => {
                self.f(system, t, x, Slot::K1)?;
                self.stage.copy_from_slice(x);
                axpy(&mut self.stage, h / 2.0, &self.k1);
                let stage = std::mem::take(&mut self.stage);
                let r = self.f(system, t + h / 2.0, &stage, Slot::K2);
                self.stage = stage;
                r?;
                axpy(x, h, &self.k2);
            }
            Method::Heun => {
                self.f(system, t, x, Slot::K1)?;
                self.stage.copy_from_slice(x);
                axpy(&mut self.stage, h, &self.k1);
                let stage = std::mem::take(&mut self.stage);
                let r = self.f(system, t + h, &stage, Slot::K2);
                self.stage = stage;
                r?;
                axpy(x, h / 2.0, &self.k1);
                axpy(x, h / 2.0, &self.k2);
            }
            Method::ImplicitEuler => {
                // X = x + h f(t + h, X)
                self.base.copy_from_slice(x);
                self.solve_stage(system, x, t + h, h)?;
                x.copy_from_slice(&self.stage);
            }
            Method::ImplicitMidpoint => {
                // Y = x + h/2 f(t + h/2, Y), X = 2Y − x
                self.base.copy_from_slice(x);
                self.solve_stage(system, x, t + h / 2.0, h / 2.0)?;
                for (xi, &yi) in x.iter_mut().zip(&self.stage) {
                    *xi = 2.0 * yi - *xi;
                }
            }
            Method::Trapezoidal => {
                // X = x + h/2 (f(t, x) + f(t + h, X)); f(t + h, X) starts the next step.
                // f(t, x) is evaluated afresh each step rather than carried over from the
                // last stage: a partitioned run changes the exchanged values between steps.
                self.f(system, t, x, Slot::K1)?;
                self.base.copy_from_slice(x);
                axpy(&mut self.base, h / 2.0, &self.k1);
                self.solve_stage(system, x, t + h, h / 2.0)?;
                x.copy_from_slice(&self.stage);
            }
        }
        self.stats.steps += 1;
        Ok(())
    }

    /// Solves `Y = base + γ f(τ, Y)` into `self.stage`, starting from `Y = x`. The Jacobian is
    /// taken at that first iterate `(τ, x)`, right after `f` was evaluated there, so the model
    /// reuses that evaluation.
    fn solve_stage(
        &mut self,
        system: &mut dyn OdeSystem,
        x: &[f64],
        tau: f64,
        gamma: f64,
    ) -> Result<(), StepFailure> {
        self.stage.copy_from_slice(x);
        let mut previous_size = None;
        for iteration in 0..STAGE_NEWTON_MAX {
            self.stats.newton_iters += 1;
            let stage = std::mem::take(&mut self.stage);
            let r = self.f(system, tau, &stage, Slot::K2);
            self.stage = stage;
            r?;
            if iteration == 0 && self.constant_factored != Some(gamma) {
                self.factor(system, tau, x, gamma)?;
            }
            // G(Y) = Y − base − γ f(τ, Y); solve (I − γ J) Δ = −G.
            for i in 0..self.n {
                self.delta[i] = self.base[i] + gamma * self.k2[i] - self.stage[i];
            }
            let matrix = self
                .matrix
                .as_mut()
                .expect("implicit methods have a matrix");
            matrix.solve(&mut self.delta);
            // The largest correction in units of its tolerance; NaN if any correction is.
            let mut size = 0.0f64;
            for i in 0..self.n {
                self.stage[i] += self.delta[i];
                let scaled = self.delta[i].abs() / (self.tol * (1.0 + self.stage[i].abs()));
                if scaled.is_nan() {
                    size = f64::NAN;
                    break;
                }
                size = size.max(scaled);
            }
            let left = match matrix.contraction(previous_size.map(|p| size / p)) {
                Some(rate) if rate < 1.0 => size * rate / (1.0 - rate),
                _ => size,
            };
            if size <= 1.0 || left <= 1.0 {
                return Ok(());
            }
            previous_size = Some(size);
        }
        Err(StepFailure::Stage {
            t: tau,
            worst: largest(&self.delta, 3),
        })
    }

    /// Evaluates the Jacobian at `(t, x)` and factors `I − γ J`.
    fn factor(
        &mut self,
        system: &mut dyn OdeSystem,
        t: f64,
        x: &[f64],
        gamma: f64,
    ) -> Result<(), StepFailure> {
        self.stats.jac_evals += 1;
        system
            .jacobian(t, x, &mut self.jac)
            .map_err(|failure| StepFailure::Eval { failure, t })?;
        let matrix = self
            .matrix
            .as_mut()
            .expect("implicit methods have a matrix");
        self.stats.factorizations += 1;
        if matrix.factor(gamma, &self.jac) {
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
