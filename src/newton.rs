//! Damped Newton for the algebraic blocks of the causal form (scalar implicit equations and
//! algebraic loops), shared by the reference evaluator and the compiled tape. It depends on
//! `std` only: `mocca emit` writes this very file into the crates it emits.
//!
//! The guess is whatever the targets hold (their start values at the first evaluation, the
//! last solution after that), so a block with several roots stays with the one nearest the
//! user's guess: each Newton step is shortened until it reduces the residual (a backtracking
//! line search on ½‖R‖²), never jumping across to another basin. Convergence asks for a small
//! residual and, once a Jacobian is known, for a small remaining correction `J⁻¹R`: at a
//! root where the Jacobian is singular the residual shrinks much faster than the error (for
//! `(y − x)³ = 0` the residual is the error cubed), and Newton converges only linearly there,
//! so the iteration budget allows for slow convergence.

/// A square system `R(Y) = 0` over targets the implementor holds.
pub trait System {
    /// `R` at the current targets into `r` (values may be NaN or infinite).
    fn residuals(&mut self, r: &mut [f64]);
    /// The current targets into `y`.
    fn targets(&self, y: &mut [f64]);
    fn set_targets(&mut self, y: &[f64]);
    /// Evaluates and factors `∂R/∂Y` at the current targets; false when it is singular or
    /// not finite.
    fn factor(&mut self) -> bool;
    /// Overwrites `v` with `(∂R/∂Y)⁻¹ v` for the last factorization.
    fn solve(&mut self, v: &mut [f64]);
}

/// Residuals at most this, relative to `1 + max |Y|`, and a remaining correction at most
/// this, relative to the same, are converged.
pub const TOL: f64 = 1e-10;
/// Newton iterations (Jacobian factorizations) before giving up: a root where the Jacobian
/// is singular gains about a third of a digit per iteration.
pub const MAX_ITERATIONS: usize = 100;
/// Halvings of one Newton step before it is taken as it is.
const MAX_HALVINGS: usize = 12;

/// Work vectors for a system of up to `n` unknowns, kept between solves.
#[derive(Clone, Debug, Default)]
pub struct Work {
    /// The guess a solve started from.
    start: Vec<f64>,
    y: Vec<f64>,
    r: Vec<f64>,
    delta: Vec<f64>,
    trial: Vec<f64>,
}

impl Work {
    pub fn new(n: usize) -> Work {
        Work {
            start: vec![0.0; n],
            y: vec![0.0; n],
            r: vec![0.0; n],
            delta: vec![0.0; n],
            trial: vec![0.0; n],
        }
    }

    fn fit(&mut self, n: usize) {
        for v in [
            &mut self.start,
            &mut self.y,
            &mut self.r,
            &mut self.delta,
            &mut self.trial,
        ] {
            v.resize(n, 0.0);
        }
    }
}

/// Solves `system` (of `n` unknowns) from its current targets, which it leaves at the
/// solution. `Err` holds the largest residual left when it did not converge.
pub fn solve(system: &mut dyn System, n: usize, work: &mut Work) -> Result<(), f64> {
    work.fit(n);
    system.targets(&mut work.start);
    let Err(left) = solve_from_targets(system, work) else {
        return Ok(());
    };
    // Newton can run from a poor guess into where the model cannot be evaluated (an
    // exponential of a quotient whose divisor started at 0): again from points off the
    // guess, before giving up.
    for scale in RESTART_SCALES {
        // Each unknown moved by its own amount: moved alike, a difference that the guess
        // makes zero (a divisor `vps - vns`) would stay zero.
        for (k, (t, &s)) in work.trial.iter_mut().zip(&work.start).enumerate() {
            *t = s + scale * spread(k) * (1.0 + s.abs());
        }
        system.set_targets(&work.trial);
        if solve_from_targets(system, work).is_ok() {
            return Ok(());
        }
    }
    system.set_targets(&work.start);
    Err(left)
}

/// A factor in [0.5, 1.5) that differs from one unknown to the next (the golden ratio's
/// multiples modulo 1 spread evenly), the same from run to run.
fn spread(k: usize) -> f64 {
    0.5 + (k as f64 * 0.618_033_988_749_895).fract()
}

/// How far (relative to `1 + |y|`) the restarts of a failed solve start from its guess.
const RESTART_SCALES: [f64; 2] = [1e-3, 1e-1];

/// Newton from the system's current targets.
fn solve_from_targets(system: &mut dyn System, work: &mut Work) -> Result<(), f64> {
    let Work {
        y, r, delta, trial, ..
    } = work;
    system.targets(y);
    system.residuals(r);
    let mut factored = false;
    if !r.iter().all(|x| x.is_finite()) && !step_off_singular_point(system, y, r) {
        return Err(f64::INFINITY);
    }
    for _ in 0..MAX_ITERATIONS {
        let tol = TOL * (1.0 + max_abs(y));
        if !r.iter().all(|x| x.is_finite()) {
            return Err(f64::INFINITY);
        }
        if max_abs(r) <= tol && (!factored || remaining_correction(system, r, delta) <= tol) {
            return Ok(());
        }
        if !system.factor() && !step_off_singular_point(system, y, r) {
            return Err(max_abs(r));
        }
        factored = true;
        delta.copy_from_slice(r);
        system.solve(delta);
        let before = squares(r);
        let mut lambda = 1.0;
        for halving in 0..=MAX_HALVINGS {
            for ((t, &yi), &d) in trial.iter_mut().zip(y.iter()).zip(delta.iter()) {
                *t = yi - lambda * d;
            }
            system.set_targets(trial);
            system.residuals(r);
            let after = squares(r);
            // Armijo's condition on ½‖R‖², whose slope along the Newton step is −‖R‖².
            if after <= (1.0 - 1e-4 * lambda) * before || halving == MAX_HALVINGS {
                break;
            }
            lambda *= 0.5;
        }
        y.copy_from_slice(trial);
    }
    Err(max_abs(r))
}

/// Where the residuals cannot be evaluated or the Jacobian is singular (most often at a
/// guess of zeros: `v = R·i` with `R` and `i` both 0 has no slope in either, `x / vt` with
/// `vt` 0 is infinite), moves every target by a growing relative amount until the residuals
/// are finite and the Jacobian factors there; the targets and residuals are then that point's.
/// False (the system left as it was) when no such point is found.
fn step_off_singular_point(system: &mut dyn System, y: &mut [f64], r: &mut [f64]) -> bool {
    let start = y.to_vec();
    for scale in [1e-6, 1e-3, 1e-1] {
        for (k, (t, &s)) in y.iter_mut().zip(&start).enumerate() {
            *t = s + scale * spread(k) * (1.0 + s.abs());
        }
        system.set_targets(y);
        if system.factor() {
            system.residuals(r);
            if r.iter().all(|x| x.is_finite()) {
                return true;
            }
        }
    }
    y.copy_from_slice(&start);
    system.set_targets(y);
    system.residuals(r);
    false
}

/// `max |J⁻¹ r|` for the last factorization (the correction still to come).
fn remaining_correction(system: &mut dyn System, r: &[f64], v: &mut [f64]) -> f64 {
    v.copy_from_slice(r);
    system.solve(v);
    max_abs(v)
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

/// `‖v‖²`, infinite when any entry is not finite (so a step into NaN is never accepted).
fn squares(v: &[f64]) -> f64 {
    let s: f64 = v.iter().map(|x| x * x).sum();
    if s.is_nan() { f64::INFINITY } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `R(y) = f(y)` for a scalar function with its derivative.
    struct Scalar<F: Fn(f64) -> (f64, f64)> {
        y: f64,
        f: F,
        d: f64,
        evaluations: usize,
    }

    impl<F: Fn(f64) -> (f64, f64)> System for Scalar<F> {
        fn residuals(&mut self, r: &mut [f64]) {
            self.evaluations += 1;
            r[0] = (self.f)(self.y).0;
        }
        fn targets(&self, y: &mut [f64]) {
            y[0] = self.y;
        }
        fn set_targets(&mut self, y: &[f64]) {
            self.y = y[0];
        }
        fn factor(&mut self) -> bool {
            self.d = (self.f)(self.y).1;
            self.d != 0.0 && self.d.is_finite()
        }
        fn solve(&mut self, v: &mut [f64]) {
            v[0] /= self.d;
        }
    }

    fn scalar<F: Fn(f64) -> (f64, f64)>(y: f64, f: F) -> (Result<(), f64>, f64) {
        let mut s = Scalar {
            y,
            f,
            d: 0.0,
            evaluations: 0,
        };
        let outcome = solve(&mut s, 1, &mut Work::new(1));
        (outcome, s.y)
    }

    /// A triple root: the residual is the error cubed, so a residual test alone stops at an
    /// error near 1e-3 (the bug this replaced: y − x = 4e-4 with exit 0).
    #[test]
    fn a_singular_root_is_found_to_the_tolerance_not_the_residual() {
        let (outcome, y) = scalar(3.0, |y| ((y - 1.0).powi(3), 3.0 * (y - 1.0).powi(2)));
        assert_eq!(outcome, Ok(()));
        assert!((y - 1.0).abs() < 1e-8, "y = {y}");
    }

    /// atan has several basins for plain Newton from far away: from 3 an undamped step
    /// overshoots to −9.5 and then diverges. Damped, it walks to the root at 0.
    #[test]
    fn a_damped_step_does_not_diverge() {
        let (outcome, y) = scalar(3.0, |y| (y.atan(), 1.0 / (1.0 + y * y)));
        assert_eq!(outcome, Ok(()));
        assert!(y.abs() < 1e-10, "y = {y}");
    }

    /// sin(y) = 0.5 has roots π/6 + 2kπ and 5π/6 + 2kπ. From 1.7, where the derivative is
    /// small, the undamped step lands at 5.52 and plain Newton ends at π/6 + 2π ≈ 6.81; the
    /// damped step is shortened to 2.66 and ends at 5π/6, the root nearest the guess.
    #[test]
    fn several_roots_the_one_near_the_guess() {
        let (outcome, y) = scalar(1.7, |y| (y.sin() - 0.5, y.cos()));
        assert_eq!(outcome, Ok(()));
        let root = 5.0 * std::f64::consts::PI / 6.0;
        assert!((y - root).abs() < 1e-10, "y = {y}, expected {root}");
    }

    /// `R(y) = y²` at 0: the Jacobian is singular at the guess; stepping off it, Newton
    /// goes on to the root (the test fails with an error without the step).
    #[test]
    fn a_singular_guess_is_stepped_off() {
        let (outcome, y) = scalar(0.0, |y| (y * y - 4.0, 2.0 * y));
        assert_eq!(outcome, Ok(()));
        assert!((y - 2.0).abs() < 1e-10, "y = {y}");
    }

    #[test]
    fn no_root_reports_the_residual_left() {
        let (outcome, _) = scalar(1.0, |y| (y * y + 1.0, 2.0 * y));
        let left = outcome.expect_err("no real root");
        assert!(left >= 1.0, "residual left {left}");
    }

    /// `(a − b) − 2/(a − b) = 0`, `a + b = 0` from `a = b = 0`, where the first residual
    /// divides by zero: moving both unknowns alike would keep `a − b` zero.
    struct Divided {
        y: [f64; 2],
        j: [[f64; 2]; 2],
    }

    impl System for Divided {
        fn residuals(&mut self, r: &mut [f64]) {
            let d = self.y[0] - self.y[1];
            r[0] = d - 2.0 / d;
            r[1] = self.y[0] + self.y[1];
        }
        fn targets(&self, y: &mut [f64]) {
            y.copy_from_slice(&self.y);
        }
        fn set_targets(&mut self, y: &[f64]) {
            self.y.copy_from_slice(y);
        }
        fn factor(&mut self) -> bool {
            let d = self.y[0] - self.y[1];
            let g = 1.0 + 2.0 / (d * d);
            self.j = [[g, -g], [1.0, 1.0]];
            g.is_finite()
        }
        fn solve(&mut self, v: &mut [f64]) {
            let [[a, b], [c, d]] = self.j;
            let det = a * d - b * c;
            let (x0, x1) = ((d * v[0] - b * v[1]) / det, (a * v[1] - c * v[0]) / det);
            v[0] = x0;
            v[1] = x1;
        }
    }

    #[test]
    fn a_guess_on_a_zero_divisor_is_left_by_moving_each_unknown_differently() {
        let mut system = Divided {
            y: [0.0; 2],
            j: [[0.0; 2]; 2],
        };
        solve(&mut system, 2, &mut Work::new(2)).expect("converges");
        let [a, b] = system.y;
        assert!(((a - b).abs() - 2f64.sqrt()).abs() < 1e-9, "{a} {b}");
        assert!((a + b).abs() < 1e-9, "{a} {b}");
    }
}
