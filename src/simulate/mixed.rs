//! Mixed-mode integration (SPEC §10): the states split into a slow part, stepped by an explicit
//! method, and a fast part, stepped by the matching implicit method with Newton on the fast
//! states only. With the diagonal selector `P` (1 = slow) and `P̄ = I − P`, one step of
//! `der(x) = A x` is
//!
//! - `mixed-euler` (explicit / implicit Euler): `(I − h P̄ A) x₁ = (I + h P A) x₀`;
//! - `mixed-midpoint` (explicit / implicit midpoint) and `mixed-trapezoidal` (Heun /
//!   trapezoidal, Lobatto IIIA): `(I − (h/2) P̄ A) x₁ = (I + (h/2)(I + P) A + (h²/2)(P A)²) x₀`.
//!
//! The slow part goes first, its stage advancing the slow states only (the fast ones held at
//! `x₀`); the fast stage then reads the slow states' new value (Euler, trapezoidal) or their
//! midpoint (midpoint). With every state slow a step is the explicit method's, with every state
//! fast the implicit method's, operation for operation.

use super::fixed_step::{FixedStep, Method, StageWork, StepFailure, axpy_on, eval};
use super::system::{OdeSystem, Stats};

/// A pair of methods: explicit on the slow part, implicit on the fast part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MixedMethod {
    /// Explicit Euler / implicit Euler (order 1).
    Euler,
    /// Explicit midpoint / implicit midpoint (order 2).
    Midpoint,
    /// Heun / trapezoidal, Lobatto IIIA (order 2).
    Trapezoidal,
}

impl MixedMethod {
    pub const ALL: [MixedMethod; 3] = [
        MixedMethod::Euler,
        MixedMethod::Midpoint,
        MixedMethod::Trapezoidal,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MixedMethod::Euler => "mixed-euler",
            MixedMethod::Midpoint => "mixed-midpoint",
            MixedMethod::Trapezoidal => "mixed-trapezoidal",
        }
    }

    /// The explicit method of the slow part.
    pub fn slow(self) -> Method {
        match self {
            MixedMethod::Euler => Method::ExplicitEuler,
            MixedMethod::Midpoint => Method::ExplicitMidpoint,
            MixedMethod::Trapezoidal => Method::Heun,
        }
    }

    /// The implicit method of the fast part.
    pub fn fast(self) -> Method {
        match self {
            MixedMethod::Euler => Method::ImplicitEuler,
            MixedMethod::Midpoint => Method::ImplicitMidpoint,
            MixedMethod::Trapezoidal => Method::Trapezoidal,
        }
    }

    /// The classical order of accuracy.
    pub fn order(self) -> u32 {
        self.fast().order()
    }
}

/// Which states are fast (implicit) and which slow (explicit), and the methods of the two parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    pub method: MixedMethod,
    /// Ascending indices into the system's states.
    fast: Vec<usize>,
    /// The other states, ascending.
    slow: Vec<usize>,
}

/// One part of a [`Split`]: its states and the method that steps them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part<'a> {
    pub states: &'a [usize],
    pub method: Method,
}

impl Split {
    /// Of `n` states, `fast` (indices below `n`, in any order, repeats allowed) are the fast
    /// part.
    pub fn new(method: MixedMethod, n: usize, fast: impl IntoIterator<Item = usize>) -> Split {
        let mut is_fast = vec![false; n];
        for i in fast {
            is_fast[i] = true;
        }
        let (fast, slow) = (0..n).partition(|&i| is_fast[i]);
        Split { method, fast, slow }
    }

    pub fn fast(&self) -> &[usize] {
        &self.fast
    }

    pub fn slow(&self) -> &[usize] {
        &self.slow
    }

    /// The fast part, then the slow part.
    pub fn parts(&self) -> [Part<'_>; 2] {
        [
            Part {
                states: &self.fast,
                method: self.method.fast(),
            },
            Part {
                states: &self.slow,
                method: self.method.slow(),
            },
        ]
    }
}

/// Steps a [`Split`] with a fixed step and keeps the counters; the Jacobian evaluations, LU
/// factorizations and Newton iterations are those of the fast block.
pub struct MixedStepper {
    split: Split,
    /// Newton over the fast states.
    work: StageWork,
}

impl MixedStepper {
    pub fn new(split: Split, tol: f64, system: &dyn OdeSystem) -> MixedStepper {
        let work = StageWork::new(system, tol, split.fast.clone());
        MixedStepper { split, work }
    }

    pub fn split(&self) -> &Split {
        &self.split
    }

    /// `k1 = f(t, x)` and the slow explicit stage `stage = x + c P k1` with `k2 = f(τ, stage)`,
    /// when some state is slow.
    fn slow_stage(
        &mut self,
        system: &mut dyn OdeSystem,
        (t, x): (f64, &[f64]),
        (tau, c): (f64, f64),
    ) -> Result<(), StepFailure> {
        if self.split.slow.is_empty() {
            return Ok(());
        }
        eval(system, &mut self.work.stats, t, x, &mut self.work.k1)?;
        self.work.stage.copy_from_slice(x);
        axpy_on(&mut self.work.stage, c, &self.work.k1, &self.split.slow);
        eval(
            system,
            &mut self.work.stats,
            tau,
            &self.work.stage,
            &mut self.work.k2,
        )
    }

    fn euler(&mut self, system: &mut dyn OdeSystem, t: f64, h: f64, x: &mut [f64]) -> StepResult {
        // x_S += h f_S(t, x); then X_F = x_F + h f_F(t + h, x_S, X_F).
        if !self.split.slow.is_empty() {
            eval(system, &mut self.work.stats, t, x, &mut self.work.k1)?;
            axpy_on(x, h, &self.work.k1, &self.split.slow);
        }
        self.work.base.copy_from_slice(x);
        self.work.stage.copy_from_slice(x);
        self.work.solve(system, t + h, h)?;
        x.copy_from_slice(&self.work.stage);
        Ok(())
    }

    fn midpoint(
        &mut self,
        system: &mut dyn OdeSystem,
        t: f64,
        h: f64,
        x: &mut [f64],
    ) -> StepResult {
        // Slow: x_S += h f_S(t + h/2, x + (h/2) P f(t, x)). Fast: Y_F = x_F + (h/2) f_F(t + h/2,
        // Y) with Y_S the slow states' midpoint, X_F = 2 Y_F − x_F.
        self.slow_stage(system, (t, x), (t + h / 2.0, h / 2.0))?;
        for &i in &self.split.slow {
            let new = x[i] + h * self.work.k2[i];
            self.work.stage[i] = (x[i] + new) / 2.0;
            x[i] = new;
        }
        for &i in &self.split.fast {
            self.work.base[i] = x[i];
            self.work.stage[i] = x[i];
        }
        self.work.solve(system, t + h / 2.0, h / 2.0)?;
        for &i in &self.split.fast {
            x[i] = 2.0 * self.work.stage[i] - x[i];
        }
        Ok(())
    }

    fn trapezoidal(
        &mut self,
        system: &mut dyn OdeSystem,
        t: f64,
        h: f64,
        x: &mut [f64],
    ) -> StepResult {
        // Slow (Heun): x_S += (h/2) (f_S(t, x) + f_S(t + h, x + h P f(t, x))). Fast:
        // X_F = x_F + (h/2) (f_F(t, x) + f_F(t + h, x_S, X_F)).
        if self.split.slow.is_empty() {
            eval(system, &mut self.work.stats, t, x, &mut self.work.k1)?;
        } else {
            self.slow_stage(system, (t, x), (t + h, h))?;
            axpy_on(x, h / 2.0, &self.work.k1, &self.split.slow);
            axpy_on(x, h / 2.0, &self.work.k2, &self.split.slow);
        }
        self.work.base.copy_from_slice(x);
        axpy_on(
            &mut self.work.base,
            h / 2.0,
            &self.work.k1,
            &self.split.fast,
        );
        self.work.stage.copy_from_slice(x);
        self.work.solve(system, t + h, h / 2.0)?;
        x.copy_from_slice(&self.work.stage);
        Ok(())
    }
}

type StepResult = Result<(), StepFailure>;

impl FixedStep for MixedStepper {
    fn step(&mut self, system: &mut dyn OdeSystem, t: f64, h: f64, x: &mut [f64]) -> StepResult {
        match self.split.method {
            MixedMethod::Euler => self.euler(system, t, h, x)?,
            MixedMethod::Midpoint => self.midpoint(system, t, h, x)?,
            MixedMethod::Trapezoidal => self.trapezoidal(system, t, h, x)?,
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
