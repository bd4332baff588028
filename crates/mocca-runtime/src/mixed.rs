//! Mixed-mode and multirate integration (SPEC §10) of a partition's levels: the slow levels
//! step with an explicit method, the fast level with the matching implicit method and Newton
//! on the fast states only. With the diagonal selector `P` (1 = slow) and `P̄ = I − P`, one
//! step of `der(x) = A x` with one level of each is
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

use crate::fixed_step::{
    Count, Factored, Method, StageModel, StageNewton, StageWork, axpy_on, copy_on, eval,
};

/// A partition's level as the stepper takes it.
#[derive(Clone, Debug)]
pub struct LevelPlan {
    /// Its states, ascending.
    pub states: Vec<usize>,
    pub method: Method,
    /// Steps per step of the partition.
    pub rate: u64,
    /// The model's block of rows for these states, when it evaluates them alone.
    pub rows: Option<usize>,
}

/// A level with states, as the stepper walks them.
struct Active {
    /// Index into the partition's levels.
    level: usize,
    states: Vec<usize>,
    method: Method,
    /// Substeps per step of the previous active level (of the partition's step for the first).
    substeps: u64,
    /// The model's block of rows for these states, when it evaluates them alone.
    rows: Option<usize>,
}

/// Steps a partition's levels with a fixed step; the Jacobian evaluations, LU factorizations
/// and Newton iterations are those of the fast level.
pub struct MixedStepper<M> {
    /// The partition's levels, those without states included.
    levels: usize,
    /// The levels that have states, slowest first.
    active: Vec<Active>,
    /// Newton over the fast states.
    pub work: StageWork<M>,
    /// Per active level, its states' values at the start of its current substep.
    old: Vec<Vec<f64>>,
    /// Per active level, the index of its current substep.
    position: Vec<u64>,
    /// Whether `work.k1` holds `f` at the start of the substep the next level begins now: each
    /// explicit step evaluates `f` there first, and under linear interpolation the next level's
    /// first substep starts from the same point (when that evaluation was of every row).
    k1_at_start: bool,
    /// Whether the slower levels are read interpolated linearly (else held).
    linear: bool,
}

impl<M: Factored> MixedStepper<M> {
    /// The `levels` (slowest first) of `n` states, `newton` on the fast level's states,
    /// the slower levels read `linear`ly interpolated or held.
    pub fn new(
        n: usize,
        levels: &[LevelPlan],
        linear: bool,
        tol: f64,
        newton: Option<StageNewton<M>>,
    ) -> MixedStepper<M> {
        let mut active = Vec::new();
        let mut parent_rate = 1;
        for (k, level) in levels.iter().enumerate() {
            if level.states.is_empty() {
                continue;
            }
            let whole = level.states.len() == n;
            active.push(Active {
                level: k,
                rows: level.rows.filter(|_| !whole),
                states: level.states.clone(),
                method: level.method,
                substeps: level.rate / parent_rate,
            });
            parent_rate = level.rate;
        }
        MixedStepper {
            levels: levels.len(),
            old: active.iter().map(|a| vec![0.0; a.states.len()]).collect(),
            position: vec![0; active.len()],
            active,
            work: StageWork::new(n, tol, newton),
            k1_at_start: false,
            linear,
        }
    }

    /// Advances `x` from `t` to `t + h`.
    pub fn step<S: StageModel<M>>(
        &mut self,
        model: &mut S,
        t: f64,
        h: f64,
        x: &mut [f64],
    ) -> Result<(), S::Failure> {
        if model.level_evaluations().is_empty() {
            *model.level_evaluations() = vec![0; self.levels];
        }
        self.k1_at_start = false;
        self.advance(model, 0, (t, h), x)?;
        model.count(Count::Step);
        Ok(())
    }

    /// Takes active level `a`'s substeps over `[t, t + h]`, each followed by the faster levels'
    /// substeps over the same interval.
    fn advance<S: StageModel<M>>(
        &mut self,
        model: &mut S,
        a: usize,
        (t, h): (f64, f64),
        x: &mut [f64],
    ) -> Result<(), S::Failure> {
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
            let before = model.evaluations();
            self.own_step(model, a, (start, step), x)?;
            let spent = model.evaluations() - before;
            model.level_evaluations()[self.active[a].level] += spent;
            self.advance(model, a + 1, (start, step), x)?;
        }
        Ok(())
    }

    /// Active level `a` steps its own states from `t` by `h`.
    fn own_step<S: StageModel<M>>(
        &mut self,
        model: &mut S,
        a: usize,
        (t, h): (f64, f64),
        x: &mut [f64],
    ) -> Result<(), S::Failure> {
        let reuse_k1 = std::mem::take(&mut self.k1_at_start) && self.position[a] == 0;
        let method = self.active[a].method;
        let needs_k1 = !matches!(method, Method::ImplicitEuler | Method::ImplicitMidpoint);
        let rows = self.active[a].rows;
        if needs_k1 && !reuse_k1 {
            if a == 0 || !self.linear {
                // Nothing slower to interpolate: the point is `x` itself.
                eval(model, rows, t, x, &mut self.work.k1)?;
            } else {
                self.view(a, 0.0, x);
                let work = &mut self.work;
                eval(model, rows, t, &work.stage, &mut work.k1)?;
            }
        }
        let own = std::mem::take(&mut self.active[a].states);
        let r = self.own_stage(model, a, &own, (t, h), x);
        self.active[a].states = own;
        r?;
        // Only an evaluation of every row serves the next level's rows.
        self.k1_at_start = !method.is_implicit() && rows.is_none() && self.linear;
        Ok(())
    }

    /// The rest of [`MixedStepper::own_step`] once `k1 = f(t, view at 0)` is known (when the
    /// method needs it): `own` are the level's states.
    fn own_stage<S: StageModel<M>>(
        &mut self,
        model: &mut S,
        a: usize,
        own: &[usize],
        (t, h): (f64, f64),
        x: &mut [f64],
    ) -> Result<(), S::Failure> {
        match self.active[a].method {
            Method::ExplicitEuler => axpy_on(x, h, &self.work.k1, own),
            Method::ExplicitMidpoint | Method::Heun => {
                let midpoint = self.active[a].method == Method::ExplicitMidpoint;
                let c = if midpoint { 0.5 } else { 1.0 };
                self.view(a, c, x);
                let (rows, work) = (self.active[a].rows, &mut self.work);
                axpy_on(&mut work.stage, c * h, &work.k1, own);
                eval(model, rows, t + c * h, &work.stage, &mut work.k2)?;
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
                self.work.solve(model, t + h, h)?;
                copy_on(x, &self.work.stage, own);
            }
            Method::ImplicitMidpoint => {
                // Y = x + h/2 f(t + h/2, Y), X = 2Y − x
                self.view(a, 0.5, x);
                self.base_from(own, x, 0.0);
                self.work.solve(model, t + h / 2.0, h / 2.0)?;
                for &i in own {
                    x[i] = 2.0 * self.work.stage[i] - x[i];
                }
            }
            Method::Trapezoidal => {
                // X = x + h/2 (f(t, x) + f(t + h, X))
                self.view(a, 1.0, x);
                self.base_from(own, x, h / 2.0);
                self.work.solve(model, t + h, h / 2.0)?;
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
        if !self.linear {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixed_step::tests::{Linear, Matrix, close, solve_shifted};

    const A: [f64; 4] = [-1.0, 0.5, 0.2, -3.0];

    fn levels(rate: u64) -> [LevelPlan; 2] {
        let level = |states: Vec<usize>, method, rate| LevelPlan {
            states,
            method,
            rate,
            rows: None,
        };
        [
            level(vec![0], Method::ExplicitEuler, 1),
            level(vec![1], Method::ImplicitEuler, rate),
        ]
    }

    /// `mixed-euler` on one slow and one fast state: `(I − h P̄ A) x₁ = (I + h P A) x₀`.
    #[test]
    fn mixed_euler_is_its_amplification() {
        let (h, x0) = (0.1, [1.0, -2.0]);
        let mut model = Linear::new(&A);
        let newton = StageNewton::block(vec![1], vec![3], None, Matrix::new(1));
        let mut stepper = MixedStepper::new(2, &levels(1), true, 1e-10, Some(newton));
        let mut x = x0.to_vec();
        stepper.step(&mut model, 0.0, h, &mut x).expect("steps");
        // The slow state by explicit Euler; the fast one implicit, reading the slow one's new
        // value.
        let slow = x0[0] + h * (A[0] * x0[0] + A[1] * x0[1]);
        let fast = (x0[1] + h * A[2] * slow) / (1.0 - h * A[3]);
        assert!(close(&x, &[slow, fast]), "{x:?}");
        assert_eq!(model.levels[0], 1, "the slow level evaluates f once");
    }

    /// With every state fast a mixed step is implicit Euler's, operation for operation.
    #[test]
    fn every_state_fast_is_implicit_euler() {
        let (h, x0) = (0.1, [1.0, -2.0]);
        let mut model = Linear::new(&A);
        let all = [LevelPlan {
            states: vec![0, 1],
            method: Method::ImplicitEuler,
            rate: 1,
            rows: None,
        }];
        let newton = StageNewton::whole(2, 4, Matrix::new(2));
        let mut stepper = MixedStepper::new(2, &all, true, 1e-10, Some(newton));
        let mut x = x0.to_vec();
        stepper.step(&mut model, 0.0, h, &mut x).expect("steps");
        assert!(close(&x, &solve_shifted(&A, h, &x0)), "{x:?}");
    }

    /// A fast level at twice the rate takes two substeps, the slow state interpolated
    /// linearly between its old and new values (at the substeps' ends: ½ then 1).
    #[test]
    fn multirate_substeps_read_the_slow_level_interpolated() {
        let (h, x0) = (0.1, [1.0, -2.0]);
        let mut model = Linear::new(&A);
        let newton = StageNewton::block(vec![1], vec![3], None, Matrix::new(1));
        let mut stepper = MixedStepper::new(2, &levels(2), true, 1e-10, Some(newton));
        let mut x = x0.to_vec();
        stepper.step(&mut model, 0.0, h, &mut x).expect("steps");
        let slow = x0[0] + h * (A[0] * x0[0] + A[1] * x0[1]);
        let mut fast = x0[1];
        for theta in [0.5, 1.0] {
            let s = (1.0 - theta) * x0[0] + theta * slow;
            fast = (fast + h / 2.0 * A[2] * s) / (1.0 - h / 2.0 * A[3]);
        }
        assert!(close(&x, &[slow, fast]), "{x:?}");
    }
}
