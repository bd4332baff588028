//! Solving the initial system (SPEC §6), for `mocca simulate` and emitted crates alike: its
//! unknowns are the free states, its residuals the initial equations and `fixed = true`
//! conditions (the model side, [`InitialSystem`], says which).
//!
//! The system `g(s) = 0` is solved by Newton with a finite-difference Jacobian (it is small:
//! one column per free state) and a backtracking line search, so steady-state equations of
//! stiff nonlinear springs converge from rest. When that fails and the model writes
//! `homotopy(actual, simplified)`, it is solved along the homotopy (Modelica 3.7.4.4), as
//! OpenModelica and Dymola do: the simplified model, then `λ` stepped to 1, each solve
//! starting from the last. Where Newton stalls and that does not help (a Jacobian singular at
//! the start, as a purely cubic spring's at rest), the fixed-point homotopy from the start
//! values is tried ([`from_start`]).

use crate::dense_lu::DenseLu;

/// Newton on the initial system gives up after this many iterations.
pub const MAX_ITERATIONS: usize = 100;
/// A residual is solved when it is at most this times `1 + max |s_i|` over the free states.
pub const TOL: f64 = 1e-10;
/// The smallest step of `λ` before the homotopy is given up.
const MIN_HOMOTOPY_STEP: f64 = 1.0 / 1024.0;
/// The smallest step of the fixed-point homotopy's `μ` before it is given up.
const MIN_BLEND_STEP: f64 = 1e-4;

/// A model's initial system over its states `x`.
pub trait InitialSystem {
    type Failure;
    /// What [`InitialSystem::save`] keeps of the model to go back to.
    type Saved;
    /// The free states (indices into `x`), ready for Newton: with `seed`, the free states'
    /// values in `x` first improved as the model can (equations in one free state solved
    /// for it); `None` when there is no initial system (every state is fixed); an error
    /// when the counts of free states and residuals differ.
    fn free_states(
        &mut self,
        x: &mut [f64],
        seed: bool,
    ) -> Result<Option<Vec<usize>>, Self::Failure>;
    /// The residuals at the states `x`, the model evaluated there.
    fn residuals(&mut self, x: &[f64]) -> Result<Vec<f64>, Self::Failure>;
    /// The model evaluated at the states `x`, left there.
    fn evaluate(&mut self, x: &[f64]) -> Result<(), Self::Failure>;
    /// Newton did not converge; `r` are the residuals it left.
    fn no_convergence(&self, r: &[f64]) -> Self::Failure;
    /// Whether `failure` is Newton's (which a homotopy may get past), not the model's.
    fn stalled(failure: &Self::Failure) -> bool;
    /// Whether the model writes `homotopy(actual, simplified)`.
    fn writes_homotopy(&self) -> bool;
    /// Sets the homotopy parameter `λ` (1: the actual model).
    fn set_homotopy(&mut self, lambda: f64);
    fn save(&self) -> Self::Saved;
    fn restore(&mut self, saved: &Self::Saved);
}

/// Solves the initial system from the states `x` (updated), the actual model first, then
/// along `homotopy()` or the fixed-point homotopy as the module says; leaves the model
/// evaluated at the solution. The Newton iterations spent.
pub fn initialise<S: InitialSystem>(system: &mut S, x: &mut Vec<f64>) -> Result<u64, S::Failure> {
    let start = x.clone();
    let before = system.save();
    let failure = match solve(system, x, None) {
        Ok(iterations) => return Ok(iterations),
        Err(failure) => failure,
    };
    let stalled = S::stalled(&failure);
    if !stalled && !system.writes_homotopy() {
        return Err(failure);
    }
    system.restore(&before);
    x.clone_from(&start);
    if system.writes_homotopy()
        && let Ok(iterations) = along_homotopy(system, x)
    {
        return Ok(iterations);
    }
    if !stalled {
        return Err(failure);
    }
    system.restore(&before);
    x.clone_from(&start);
    from_start(system, x).map_err(|_| failure)
}

/// Solves the initial system at `λ` = 0, then at `λ` stepped to 1; leaves `λ` at 1.
fn along_homotopy<S: InitialSystem>(system: &mut S, x: &mut Vec<f64>) -> Result<u64, S::Failure> {
    system.set_homotopy(0.0);
    let first = solve(system, x, None);
    let stepped = first.and_then(|first| {
        let stepped = step_to_one((0.25, MIN_HOMOTOPY_STEP), |lambda| {
            let (saved_x, saved) = (x.clone(), system.save());
            system.set_homotopy(lambda);
            solve(system, x, None).inspect_err(|_| {
                *x = saved_x;
                system.restore(&saved);
            })
        });
        Ok(first + stepped?)
    });
    if stepped.is_err() {
        system.set_homotopy(1.0);
    }
    stepped
}

/// The fixed-point homotopy (a globalised Newton for initial systems that do not write
/// `homotopy`): `H(x, μ) = μ·g(x) + (1 − μ)·(x − x₀)`, solved from `μ = 0` (where `x₀`, the
/// start values, is the solution) with `μ` stepped to 1, each solve starting from the last,
/// then `g(x) = 0` itself from there. Newton on `g` alone stalls where its Jacobian is
/// singular at the start: a cubic spring `k3·s³` at rest (`s = 0`), which the blend's
/// identity term makes regular along the way.
fn from_start<S: InitialSystem>(system: &mut S, x: &mut Vec<f64>) -> Result<u64, S::Failure> {
    let start = x.clone();
    let stepped = step_to_one((0.125, MIN_BLEND_STEP), |mu| {
        let saved = x.clone();
        let blend = Blend { mu, start: &start };
        solve(system, x, Some(&blend)).inspect_err(|_| *x = saved)
    })?;
    Ok(stepped + solve(system, x, None)?)
}

/// Steps a continuation parameter from 0 to 1 from `first`: `attempt(p)` solves at `p` from
/// the last solution (and leaves it as it was on failure); the step is doubled after a
/// success and halved after a failure, given up below `min_step`. The iterations spent.
fn step_to_one<F>(
    (first, min_step): (f64, f64),
    mut attempt: impl FnMut(f64) -> Result<u64, F>,
) -> Result<u64, F> {
    let (mut at, mut step, mut iterations) = (0.0, first, 0);
    while at < 1.0 {
        let next = f64::min(at + step, 1.0);
        match attempt(next) {
            Ok(spent) => {
                iterations += spent;
                at = next;
                step *= 2.0;
            }
            Err(failure) => {
                step /= 2.0;
                if step < min_step {
                    return Err(failure);
                }
            }
        }
    }
    Ok(iterations)
}

/// The fixed-point homotopy at `μ` from the states `start`: residual `k` of the initial
/// system blended with the distance of the `k`-th free state from its start.
struct Blend<'a> {
    mu: f64,
    start: &'a [f64],
}

impl Blend<'_> {
    fn apply(&self, r: &mut [f64], free: &[usize], x: &[f64]) {
        for (r, &i) in r.iter_mut().zip(free) {
            *r = self.mu * *r + (1.0 - self.mu) * (x[i] - self.start[i]);
        }
    }
}

/// The initial system solved from the states `x` (updated), the model left evaluated there;
/// with `blend`, the fixed-point homotopy's system at its `μ`.
fn solve<S: InitialSystem>(
    system: &mut S,
    x: &mut [f64],
    blend: Option<&Blend<'_>>,
) -> Result<u64, S::Failure> {
    let Some(free) = system.free_states(x, blend.is_none())? else {
        system.evaluate(x)?;
        return Ok(0);
    };
    let values = |system: &mut S, x: &[f64]| {
        let mut r = system.residuals(x)?;
        if let Some(blend) = blend {
            blend.apply(&mut r, &free, x);
        }
        Ok(r)
    };
    let m = free.len();
    let mut r = values(system, x)?;
    for iteration in 0..MAX_ITERATIONS {
        let scale = 1.0 + free.iter().map(|&i| x[i].abs()).fold(0.0, f64::max);
        if r.iter().all(|v| v.abs() <= TOL * scale) {
            // Leave the model evaluated at the solution.
            system.evaluate(x)?;
            return Ok(iteration as u64);
        }
        let mut lu = DenseLu::new(m);
        for (c, &i) in free.iter().enumerate() {
            let h = 1e-7 * (1.0 + x[i].abs());
            let saved = x[i];
            x[i] = saved + h;
            let shifted = values(system, x)?;
            x[i] = saved;
            for row in 0..m {
                lu.set(row, c, (shifted[row] - r[row]) / h);
            }
        }
        if !lu.factor() {
            break;
        }
        let mut step = r.clone();
        lu.solve(&mut step);
        // Backtracking: halve the step until the residual norm decreases.
        let start = x.to_vec();
        let mut lambda = 1.0;
        loop {
            for (k, &i) in free.iter().enumerate() {
                x[i] = start[i] - lambda * step[k];
            }
            if let Ok(trial) = values(system, x)
                && (norm(&trial) < norm(&r) || lambda < 1e-4)
            {
                r = trial;
                break;
            }
            lambda /= 2.0;
            if lambda < 1e-6 {
                x.copy_from_slice(&start);
                return Err(system.no_convergence(&r));
            }
        }
    }
    Err(system.no_convergence(&r))
}

fn norm(r: &[f64]) -> f64 {
    r.iter().map(|x| x * x).sum::<f64>().sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `g(s) = k₃ s³ + k₁ s − f` over one free state (of two: the second fixed), with
    /// `homotopy(actual, s − 1)` optionally written: λ blends it with the simplified residual.
    struct Spring {
        k1: f64,
        k3: f64,
        f: f64,
        lambda: f64,
        homotopy: bool,
        evaluated: Option<Vec<f64>>,
    }

    impl Spring {
        fn new(k1: f64, k3: f64, f: f64) -> Spring {
            Spring {
                k1,
                k3,
                f,
                lambda: 1.0,
                homotopy: false,
                evaluated: None,
            }
        }
    }

    impl InitialSystem for Spring {
        type Failure = String;
        type Saved = f64;

        fn free_states(&mut self, _: &mut [f64], _: bool) -> Result<Option<Vec<usize>>, String> {
            Ok(Some(vec![0]))
        }

        fn residuals(&mut self, x: &[f64]) -> Result<Vec<f64>, String> {
            let s = x[0];
            let actual = self.k3 * s * s * s + self.k1 * s - self.f;
            let simplified = s - 1.0;
            Ok(vec![
                self.lambda * actual + (1.0 - self.lambda) * simplified,
            ])
        }

        fn evaluate(&mut self, x: &[f64]) -> Result<(), String> {
            self.evaluated = Some(x.to_vec());
            Ok(())
        }

        fn no_convergence(&self, r: &[f64]) -> String {
            format!("no convergence: {r:?}")
        }

        fn stalled(failure: &String) -> bool {
            failure.starts_with("no convergence")
        }

        fn writes_homotopy(&self) -> bool {
            self.homotopy
        }

        fn set_homotopy(&mut self, lambda: f64) {
            self.lambda = lambda;
        }

        fn save(&self) -> f64 {
            self.lambda
        }

        fn restore(&mut self, saved: &f64) {
            self.lambda = *saved;
        }
    }

    /// A stiff cubic spring at rest: its Jacobian `3 k₃ s² + k₁` is zero at the start, and
    /// the fixed-point homotopy carries Newton to the real root of `s³ = 8`, 2.
    #[test]
    fn a_singular_start_is_passed_by_the_fixed_point_homotopy() {
        let mut spring = Spring::new(0.0, 1.0, 8.0);
        let mut x = vec![0.0, 5.0];
        initialise(&mut spring, &mut x).expect("initialises");
        assert!((x[0] - 2.0).abs() < 1e-9, "{x:?}");
        assert_eq!(x[1], 5.0, "the fixed state keeps its value");
        assert_eq!(
            spring.evaluated,
            Some(x),
            "the model is left at the solution"
        );
    }

    /// Written `homotopy()` is followed from the simplified model's solution (s = 1) to the
    /// actual one, λ left at 1.
    #[test]
    fn a_written_homotopy_is_followed_to_lambda_one() {
        let mut spring = Spring::new(0.0, 1.0, 27.0);
        spring.homotopy = true;
        let mut x = vec![0.0, 0.0];
        initialise(&mut spring, &mut x).expect("initialises");
        assert!((x[0] - 3.0).abs() < 1e-9, "{x:?}");
        assert_eq!(spring.lambda, 1.0);
    }

    /// A regular system converges directly, in a few Newton iterations from its start, to
    /// the residual's tolerance (`TOL·(1 + |s|)/k₁` in `s`: the Jacobian is a difference).
    #[test]
    fn a_linear_system_converges_in_two_iterations() {
        let mut spring = Spring::new(4.0, 0.0, 2.0);
        let mut x = vec![0.0, 0.0];
        let iterations = initialise(&mut spring, &mut x).expect("initialises");
        assert!((x[0] - 0.5).abs() <= TOL * 1.5 / 4.0, "{x:?}");
        assert!(iterations <= 2, "{iterations} iterations");
    }

    /// Without a root (s³ + 1 = 0 has one, s² + 1 has none) Newton's failure is the model's
    /// report of it.
    #[test]
    fn no_root_is_reported() {
        struct NoRoot;
        impl InitialSystem for NoRoot {
            type Failure = String;
            type Saved = ();
            fn free_states(
                &mut self,
                _: &mut [f64],
                _: bool,
            ) -> Result<Option<Vec<usize>>, String> {
                Ok(Some(vec![0]))
            }
            fn residuals(&mut self, x: &[f64]) -> Result<Vec<f64>, String> {
                Ok(vec![x[0] * x[0] + 1.0])
            }
            fn evaluate(&mut self, _: &[f64]) -> Result<(), String> {
                Ok(())
            }
            fn no_convergence(&self, _: &[f64]) -> String {
                "no convergence".to_string()
            }
            fn stalled(_: &String) -> bool {
                true
            }
            fn writes_homotopy(&self) -> bool {
                false
            }
            fn set_homotopy(&mut self, _: f64) {}
            fn save(&self) {}
            fn restore(&mut self, _: &()) {}
        }
        let mut x = vec![0.5];
        assert_eq!(
            initialise(&mut NoRoot, &mut x),
            Err("no convergence".to_string())
        );
    }
}
