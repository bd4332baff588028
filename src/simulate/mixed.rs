//! Mixed-mode and multirate integration (SPEC §10) of a [`Partition`]: the slow levels step
//! with an explicit method, the fast level with the matching implicit method and Newton on the
//! fast states only. With the diagonal selector `P` (1 = slow) and `P̄ = I − P`, one step of
//! `der(x) = A x` with one level of each is
//!
//! - `mixed-euler` (explicit / implicit Euler): `(I − h P̄ A) x₁ = (I + h P A) x₀`;
//! - `mixed-midpoint` (explicit / implicit midpoint) and `mixed-trapezoidal` (Heun /
//!   trapezoidal, Lobatto IIIA): `(I − (h/2) P̄ A) x₁ = (I + (h/2)(I + P) A + (h²/2)(P A)²) x₀`.
//!
//! Slowest first: a level steps its own states (the faster ones held at their values at the
//! start of its step), then the next level takes its substeps over the same interval, reading
//! the slower levels through the partition's interpolation between their old and new values.
//! Euler's implicit stage reads them at the end of its substep, midpoint's at its middle, the
//! trapezoidal rule's at both ends. With every state slow a step is the explicit method's,
//! with every state fast the implicit method's, operation for operation.

use super::fixed_step::{FixedStep, Method, StageWork, StepFailure, axpy_on, eval_rows};
use super::system::{OdeSystem, Stats};
use crate::partition::{Interpolation, Partition};

/// A level with states, as the stepper walks them.
struct Active {
    /// Index into the partition's levels.
    level: usize,
    states: Vec<usize>,
    method: Method,
    /// Substeps per step of the previous active level (of the partition's step for the first).
    substeps: u64,
    /// The system's block of rows for these states, when it evaluates them alone.
    rows: Option<usize>,
}

/// Steps a [`Partition`] with a fixed step and keeps the counters; the Jacobian evaluations,
/// LU factorizations and Newton iterations are those of the fast level.
pub struct MixedStepper {
    partition: Partition,
    /// The levels that have states, slowest first.
    active: Vec<Active>,
    /// Newton over the fast states.
    work: StageWork,
    /// Per active level, its states' values at the start of its current substep.
    old: Vec<Vec<f64>>,
    /// Per active level, the index of its current substep.
    position: Vec<u64>,
    /// Whether `work.k1` holds `f` at the start of the substep the next level begins now: each
    /// explicit step evaluates `f` there first, and under linear interpolation the next level's
    /// first substep starts from the same point (when that evaluation was of every row).
    k1_at_start: bool,
}

impl MixedStepper {
    pub fn new(partition: Partition, tol: f64, system: &dyn OdeSystem) -> MixedStepper {
        let mut work = StageWork::new(system, tol, partition.fast().to_vec());
        work.stats.level_f_evals = vec![0; partition.levels().len()];
        let mut active = Vec::new();
        let mut parent_rate = 1;
        for (k, level) in partition.levels().iter().enumerate() {
            if level.states.is_empty() {
                continue;
            }
            let whole = level.states.len() == system.dim();
            active.push(Active {
                level: k,
                rows: (!whole).then(|| system.rows_block(&level.states)).flatten(),
                states: level.states.clone(),
                method: partition.method_of(k),
                substeps: level.rate / parent_rate,
            });
            parent_rate = level.rate;
        }
        MixedStepper {
            old: active.iter().map(|a| vec![0.0; a.states.len()]).collect(),
            position: vec![0; active.len()],
            active,
            partition,
            work,
            k1_at_start: false,
        }
    }

    pub fn partition(&self) -> &Partition {
        &self.partition
    }

    /// Takes active level `a`'s substeps over `[t, t + h]`, each followed by the faster levels'
    /// substeps over the same interval.
    fn advance(
        &mut self,
        system: &mut dyn OdeSystem,
        a: usize,
        (t, h): (f64, f64),
        x: &mut [f64],
    ) -> StepResult {
        let Some(level) = self.active.get(a) else {
            return Ok(());
        };
        let substeps = level.substeps;
        let step = h / substeps as f64;
        for j in 0..substeps {
            let start = t + j as f64 * step;
            self.position[a] = j;
            for (o, &i) in self.old[a].iter_mut().zip(&self.active[a].states) {
                *o = x[i];
            }
            let before = self.work.stats.f_evals;
            self.own_step(system, a, (start, step), x)?;
            let level = self.active[a].level;
            let stats = &mut self.work.stats;
            stats.level_f_evals[level] += stats.f_evals - before;
            self.advance(system, a + 1, (start, step), x)?;
        }
        Ok(())
    }

    /// Active level `a` steps its own states from `t` by `h`.
    fn own_step(
        &mut self,
        system: &mut dyn OdeSystem,
        a: usize,
        (t, h): (f64, f64),
        x: &mut [f64],
    ) -> StepResult {
        let reuse_k1 = std::mem::take(&mut self.k1_at_start) && self.position[a] == 0;
        let method = self.active[a].method;
        let needs_k1 = !matches!(method, Method::ImplicitEuler | Method::ImplicitMidpoint);
        let rows = self.active[a].rows;
        if needs_k1 && !reuse_k1 {
            let work = &mut self.work;
            if a == 0 || self.partition.interpolation == Interpolation::Hold {
                // Nothing slower to interpolate: the point is `x` itself.
                eval_rows(system, &mut work.stats, rows, t, x, &mut work.k1)?;
            } else {
                self.view(a, 0.0, x);
                let work = &mut self.work;
                eval_rows(system, &mut work.stats, rows, t, &work.stage, &mut work.k1)?;
            }
        }
        let own = std::mem::take(&mut self.active[a].states);
        let r = self.own_stage(system, a, &own, (t, h), x);
        self.active[a].states = own;
        r?;
        // Only an evaluation of every row serves the next level's rows.
        self.k1_at_start = !method.is_implicit()
            && rows.is_none()
            && self.partition.interpolation == Interpolation::Linear;
        Ok(())
    }

    /// The rest of [`MixedStepper::own_step`] once `k1 = f(t, view at 0)` is known (when the
    /// method needs it): `own` are the level's states.
    fn own_stage(
        &mut self,
        system: &mut dyn OdeSystem,
        a: usize,
        own: &[usize],
        (t, h): (f64, f64),
        x: &mut [f64],
    ) -> StepResult {
        let work = &mut self.work;
        match self.active[a].method {
            Method::ExplicitEuler => axpy_on(x, h, &work.k1, own),
            Method::ExplicitMidpoint | Method::Heun => {
                let midpoint = self.active[a].method == Method::ExplicitMidpoint;
                let c = if midpoint { 0.5 } else { 1.0 };
                self.view(a, c, x);
                let (rows, work) = (self.active[a].rows, &mut self.work);
                axpy_on(&mut work.stage, c * h, &work.k1, own);
                eval_rows(
                    system,
                    &mut work.stats,
                    rows,
                    t + c * h,
                    &work.stage,
                    &mut work.k2,
                )?;
                if midpoint {
                    axpy_on(x, h, &work.k2, own);
                } else {
                    axpy_on(x, h / 2.0, &work.k1, own);
                    axpy_on(x, h / 2.0, &work.k2, own);
                }
            }
            Method::ImplicitEuler => {
                // X = x + h f(t + h, X)
                self.view(a, 1.0, x);
                self.base_from(own, x, 0.0);
                self.work.solve(system, t + h, h)?;
                copy_on(x, &self.work.stage, own);
            }
            Method::ImplicitMidpoint => {
                // Y = x + h/2 f(t + h/2, Y), X = 2Y − x
                self.view(a, 0.5, x);
                self.base_from(own, x, 0.0);
                self.work.solve(system, t + h / 2.0, h / 2.0)?;
                for &i in own {
                    x[i] = 2.0 * self.work.stage[i] - x[i];
                }
            }
            Method::Trapezoidal => {
                // X = x + h/2 (f(t, x) + f(t + h, X))
                self.view(a, 1.0, x);
                self.base_from(own, x, h / 2.0);
                self.work.solve(system, t + h, h / 2.0)?;
                copy_on(x, &self.work.stage, own);
            }
        }
        Ok(())
    }

    /// `base = x + c k1` on `own`.
    fn base_from(&mut self, own: &[usize], x: &[f64], c: f64) {
        for &i in own {
            self.work.base[i] = x[i];
        }
        if c != 0.0 {
            axpy_on(&mut self.work.base, c, &self.work.k1, own);
        }
    }

    /// The point active level `a` evaluates at the fraction `c` of its current substep, into
    /// `work.stage`: its own and the faster levels' states as they are in `x`, the slower
    /// levels' interpolated over their current step.
    fn view(&mut self, a: usize, c: f64, x: &[f64]) {
        self.work.stage.copy_from_slice(x);
        if self.partition.interpolation == Interpolation::Hold {
            return;
        }
        // The fraction of each slower level's step, from the nearest outwards.
        let mut theta = c;
        for b in (0..a).rev() {
            let child = b + 1;
            theta = (self.position[child] as f64 + theta) / self.active[child].substeps as f64;
            for (&old, &i) in self.old[b].iter().zip(&self.active[b].states) {
                self.work.stage[i] = (1.0 - theta) * old + theta * x[i];
            }
        }
    }
}

/// `y_i = x_i` for each `i` in `indices`.
fn copy_on(y: &mut [f64], x: &[f64], indices: &[usize]) {
    for &i in indices {
        y[i] = x[i];
    }
}

type StepResult = Result<(), StepFailure>;

impl FixedStep for MixedStepper {
    fn step(&mut self, system: &mut dyn OdeSystem, t: f64, h: f64, x: &mut [f64]) -> StepResult {
        self.k1_at_start = false;
        self.advance(system, 0, (t, h), x)?;
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
