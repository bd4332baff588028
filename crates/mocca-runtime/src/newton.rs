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
//!
//! Where the Jacobian is singular the system may still be consistent, its solutions a
//! manifold (a torque split between two locked clutches, enthalpies behind a mass flow that
//! is exactly 0). Newton then takes a basic solution, as other Modelica tools do: a
//! correction from a finite-difference Jacobian factored with complete pivoting, zero on the
//! columns left without a pivot, so those unknowns keep their guess.
//!
//! Where Newton fails from the guess and from points just off it, the Newton homotopy
//! `R(Y) − (1 − μ) R(y₀)` carries the guess `y₀` (its solution at μ = 0) to the system's
//! solution at μ = 1, each step solved by the same damped Newton. Where that fails too, the
//! branch through the guess has folded back, and Newton starts again from points farther off.

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
    /// The fallback where the Jacobian is singular (empty until it is needed).
    dense: Dense,
    /// Whether the last solve ended where the Jacobian is singular, on a basic solution.
    singular_at_root: bool,
}

impl Work {
    pub fn new(n: usize) -> Work {
        Work {
            start: vec![0.0; n],
            y: vec![0.0; n],
            r: vec![0.0; n],
            delta: vec![0.0; n],
            trial: vec![0.0; n],
            dense: Dense::default(),
            singular_at_root: false,
        }
    }

    /// Whether the last solve ended where the system's Jacobian is singular (numerically
    /// rank-deficient), keeping the unknowns without a pivot at their guess: its solutions
    /// may be a manifold, of which it took one.
    pub fn singular_at_root(&self) -> bool {
        self.singular_at_root
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
    work.singular_at_root = false;
    system.targets(&mut work.start);
    let Err(left) = solve_from_targets(system, work) else {
        return Ok(());
    };
    // Newton can run from a poor guess into where the model cannot be evaluated (an
    // exponential of a quotient whose divisor started at 0): again from points off the
    // guess, before giving up.
    if restarts_off_the_guess(system, work, &NEAR_RESTARTS) {
        return Ok(());
    }
    system.set_targets(&work.start);
    if newton_homotopy(system, n, work) {
        return Ok(());
    }
    // No root near the guess, nor on the branch through it: the branch has turned back (a
    // fold, where a loop with hysteresis jumps, as a Schmitt trigger does), and the root is
    // elsewhere.
    if restarts_off_the_guess(system, work, &FAR_RESTARTS) {
        return Ok(());
    }
    system.set_targets(&work.start);
    Err(left)
}

/// Newton again from points off the guess `work.start`, each unknown `y` moved by `scale`
/// times `1 + |y|` for each scale in turn; whether one converged.
fn restarts_off_the_guess(system: &mut dyn System, work: &mut Work, scales: &[f64]) -> bool {
    for &scale in scales {
        // Each unknown moved by its own amount: moved alike, a difference that the guess
        // makes zero (a divisor `vps - vns`) would stay zero.
        for (k, (t, &s)) in work.trial.iter_mut().zip(&work.start).enumerate() {
            *t = s + scale * spread(k) * (1.0 + s.abs());
        }
        system.set_targets(&work.trial);
        if solve_from_targets(system, work).is_ok() {
            return true;
        }
    }
    false
}

/// Steps of the Newton homotopy below this are given up on.
const SMALLEST_HOMOTOPY_STEP: f64 = 1e-4;

/// The Newton (global) homotopy from the guess `y₀`: `R(Y) − (1 − μ) R(y₀) = 0`, solved by
/// Newton at μ stepped from 0 (where `y₀` is the solution) to 1 (the system itself), each
/// from the last solution, the step doubled after a success and quartered after a failure.
/// It follows the solution branch through `y₀` where Newton from `y₀` alone stalls in a
/// valley of ½‖R‖² (an input that jumps at an event moves a loop of exponentials far from
/// the last solution). Its Jacobian is the system's own. Whether μ reached 1.
fn newton_homotopy(system: &mut dyn System, n: usize, work: &mut Work) -> bool {
    let mut at_start = vec![0.0; n];
    system.residuals(&mut at_start);
    if !at_start.iter().all(|x| x.is_finite()) {
        return false;
    }
    let mut solved = work.start.clone();
    let (mut mu, mut step) = (0.0f64, 0.1f64);
    while mu < 1.0 {
        let next = (mu + step).min(1.0);
        let mut shifted = Shifted {
            system: &mut *system,
            shift: at_start.iter().map(|r| (1.0 - next) * r).collect(),
        };
        shifted.set_targets(&solved);
        if solve_from_targets(&mut shifted, work).is_ok() {
            mu = next;
            shifted.targets(&mut solved);
            step *= 2.0;
        } else {
            step /= 4.0;
            if step < SMALLEST_HOMOTOPY_STEP {
                return false;
            }
        }
    }
    system.set_targets(&solved);
    true
}

/// `system` with a constant `shift` taken off its residuals.
struct Shifted<'s> {
    system: &'s mut dyn System,
    shift: Vec<f64>,
}

impl System for Shifted<'_> {
    fn residuals(&mut self, r: &mut [f64]) {
        self.system.residuals(r);
        for (ri, s) in r.iter_mut().zip(&self.shift) {
            *ri -= s;
        }
    }
    fn targets(&self, y: &mut [f64]) {
        self.system.targets(y);
    }
    fn set_targets(&mut self, y: &[f64]) {
        self.system.set_targets(y);
    }
    fn factor(&mut self) -> bool {
        self.system.factor()
    }
    fn solve(&mut self, v: &mut [f64]) {
        self.system.solve(v);
    }
}

/// A factor in [0.5, 1.5) that differs from one unknown to the next (the golden ratio's
/// multiples modulo 1 spread evenly), the same from run to run.
fn spread(k: usize) -> f64 {
    0.5 + (k as f64 * 0.618_033_988_749_895).fract()
}

/// How far (relative to `1 + |y|`) the restarts of a failed solve start from its guess.
const NEAR_RESTARTS: [f64; 2] = [1e-3, 1e-1];
/// The same, once the Newton homotopy from the guess has failed too: farther, on both sides.
const FAR_RESTARTS: [f64; 4] = [1.0, -1.0, 10.0, -10.0];

/// Where the last correction's Jacobian came from.
#[derive(Clone, Copy, PartialEq)]
enum Jacobian {
    None,
    /// `System::factor`'s.
    Analytic,
    /// The finite-difference fallback's (`Work::dense`).
    Dense,
}

/// Newton from the system's current targets.
fn solve_from_targets(system: &mut dyn System, work: &mut Work) -> Result<(), f64> {
    let Work {
        y,
        r,
        delta,
        trial,
        dense,
        singular_at_root,
        ..
    } = work;
    system.targets(y);
    system.residuals(r);
    let mut jacobian = Jacobian::None;
    if !r.iter().all(|x| x.is_finite()) && !step_off_singular_point(system, y, r) {
        return Err(f64::INFINITY);
    }
    let mut last_step = f64::INFINITY;
    for _ in 0..MAX_ITERATIONS {
        if !r.iter().all(|x| x.is_finite()) {
            return Err(f64::INFINITY);
        }
        if converged(system, dense, jacobian, y, r, delta, last_step) {
            *singular_at_root = jacobian == Jacobian::Dense;
            if jacobian != Jacobian::None {
                // The correction left is small but known: taken, it leaves an error of its
                // square (a flux of 10⁻⁶ known to 10⁻¹⁰ would be noise to BDF at 10⁻⁸).
                take_last_correction(system, y, r, delta, trial);
            }
            return Ok(());
        }
        jacobian = if system.factor() {
            Jacobian::Analytic
        } else if dense.factor(system, y, r) {
            Jacobian::Dense
        } else if step_off_singular_point(system, y, r) {
            Jacobian::Analytic
        } else {
            return Err(max_abs(r));
        };
        correction(system, dense, jacobian, r, delta);
        last_step = relative_size(delta, y);
        if line_search(system, y, r, delta, trial) || jacobian == Jacobian::Analytic {
            y.copy_from_slice(trial);
            continue;
        }
        // A basic solution that does not reduce the residual: the singular system is
        // inconsistent here, or singular only at this point. Step off it, as Newton did
        // before the fallback existed.
        system.set_targets(y);
        system.residuals(r);
        if !step_off_singular_point(system, y, r) {
            return Err(max_abs(r));
        }
        jacobian = Jacobian::Analytic;
    }
    Err(max_abs(r))
}

/// Moves `y` by `−delta` where the residuals stay finite there, leaving the system's targets
/// and `r` at the point kept.
fn take_last_correction(
    system: &mut dyn System,
    y: &mut [f64],
    r: &mut [f64],
    delta: &[f64],
    trial: &mut [f64],
) {
    for ((t, &yi), &d) in trial.iter_mut().zip(y.iter()).zip(delta) {
        *t = yi - d;
    }
    system.set_targets(trial);
    system.residuals(r);
    if r.iter().all(|x| x.is_finite()) {
        y.copy_from_slice(trial);
    } else {
        system.set_targets(y);
        system.residuals(r);
    }
}

/// Shortens the step `−delta` from `y` until it reduces ½‖R‖² enough (Armijo), into `trial`
/// with `r` its residuals. False when no shortening did; `trial` is then the shortest step.
fn line_search(
    system: &mut dyn System,
    y: &[f64],
    r: &mut [f64],
    delta: &[f64],
    trial: &mut [f64],
) -> bool {
    let before = squares(r);
    let mut lambda = 1.0;
    for _ in 0..=MAX_HALVINGS {
        for ((t, &yi), &d) in trial.iter_mut().zip(y).zip(delta) {
            *t = yi - lambda * d;
        }
        system.set_targets(trial);
        system.residuals(r);
        // Armijo's condition on ½‖R‖², whose slope along the Newton step is −‖R‖².
        if squares(r) <= (1.0 - 1e-4 * lambda) * before {
            return true;
        }
        lambda *= 0.5;
    }
    false
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

/// `delta = J⁻¹ r` with the last factorization of `jacobian` (a basic solution for the
/// dense fallback's).
fn correction(
    system: &mut dyn System,
    dense: &mut Dense,
    jacobian: Jacobian,
    r: &[f64],
    delta: &mut [f64],
) {
    match jacobian {
        Jacobian::None => delta.fill(0.0),
        Jacobian::Analytic => {
            delta.copy_from_slice(r);
            system.solve(delta);
        }
        Jacobian::Dense => dense.solve(r, delta),
    }
}

/// Whether `y` (residuals `r`) is a root: residuals at most `TOL` relative to `1 + max |y|`,
/// and each unknown's remaining correction `J⁻¹ r` (with the last factorization) at most
/// `TOL` relative to `1 + |yᵢ|`. A block mixes scales (a reluctance of 10⁵ beside a flux of
/// 10⁻⁵): a residual or a correction small beside the largest unknown can be an error larger
/// than the smallest, and an unknown of 10⁻⁶ known to 10⁻¹⁰ is noise to BDF at 10⁻⁸. So
/// before any factorization only a residual of exactly 0 is converged (the guess is the root
/// where nothing changed); and a correction small only beside the largest unknown is
/// accepted where it no longer shrinks from the last step (`last_step`, the same relative
/// size): the rounding floor.
fn converged(
    system: &mut dyn System,
    dense: &mut Dense,
    jacobian: Jacobian,
    y: &[f64],
    r: &[f64],
    v: &mut [f64],
    last_step: f64,
) -> bool {
    let largest = max_abs(r);
    if jacobian == Jacobian::None {
        return largest == 0.0;
    }
    let tol = TOL * (1.0 + max_abs(y));
    if largest > tol {
        return false;
    }
    correction(system, dense, jacobian, r, v);
    let remaining = relative_size(v, y);
    remaining <= TOL || (max_abs(v) <= tol && remaining > 0.5 * last_step)
}

/// `max |vᵢ| / (1 + |yᵢ|)`.
fn relative_size(v: &[f64], y: &[f64]) -> f64 {
    v.iter()
        .zip(y)
        .map(|(d, yi)| d.abs() / (1.0 + yi.abs()))
        .fold(0.0, f64::max)
}

/// The tangents of a block's targets `y` where its Jacobian (written by `fill`, row-major,
/// into zeros) is singular: `rhs` (`−∂R/∂x·dx`) becomes the basic solution of `J dY = rhs`,
/// 0 on the free targets, which keep their values as Newton leaves them; NaN when the
/// Jacobian is zero or not finite.
pub fn singular_tangents(y: &[f64], fill: impl FnOnce(&mut [f64]), rhs: &mut [f64]) {
    let mut dense = Dense::default();
    if dense.factor_given(y, fill) {
        let b = rhs.to_vec();
        dense.solve(&b, rhs);
    } else {
        rhs.fill(f64::NAN);
    }
}

/// The perturbation of an unknown `y` for its column of the finite-difference Jacobian,
/// relative to `1 + |y|`: √ε balances truncation (∝ the perturbation) against rounding
/// (∝ ε / the perturbation), each near 1.5e-8 of an entry, well below [`RANK_TOL`].
const FD_STEP: f64 = 1.49e-8;
/// Pivots of the scaled finite-difference Jacobian at most this, relative to the largest,
/// are taken as zero. It sits well above the differences' own errors (see [`FD_STEP`]), so
/// that a dependence they blur is still seen as one, where 1e-10 would not be.
const RANK_TOL: f64 = 1e-6;

/// The finite-difference Jacobian, factored `P A Q = L U` with complete pivoting and cut at
/// its numerical rank. Rows are scaled to a largest entry of 1 and columns by `1 + |y_j|`
/// (a relative change of each unknown), so that the rank test does not depend on units.
#[derive(Clone, Debug, Default)]
struct Dense {
    n: usize,
    /// Row-major; after `eliminate`, `L` (unit diagonal) below the diagonal and `U` on and
    /// above it, in pivot order.
    a: Vec<f64>,
    /// The original row and column at each pivot position.
    rows: Vec<usize>,
    cols: Vec<usize>,
    row_scale: Vec<f64>,
    col_scale: Vec<f64>,
    /// The number of pivots taken.
    rank: usize,
    /// Residuals at a perturbed point, then the right-hand side of a solve.
    v: Vec<f64>,
}

impl Dense {
    /// Differences `R` (residuals `r` at `y`, the current targets) and factors the result.
    /// True when it is numerically rank-deficient but not zero: a regular difference
    /// Jacobian means the analytic one is singular at this point only (`y²` at 0), where
    /// stepping off serves better, and a zero one leaves nothing to solve for.
    fn factor(&mut self, system: &mut dyn System, y: &mut [f64], r: &mut [f64]) -> bool {
        let n = y.len();
        self.fit(n);
        if !self.difference(system, y, r) {
            return false;
        }
        self.scale();
        self.eliminate();
        0 < self.rank && self.rank < n
    }

    /// Factors a Jacobian `fill` writes (row-major, into zeros) at the targets `y`. False
    /// when it is zero or not finite.
    fn factor_given(&mut self, y: &[f64], fill: impl FnOnce(&mut [f64])) -> bool {
        self.fit(y.len());
        self.a.fill(0.0);
        fill(&mut self.a);
        if !self.a.iter().all(|x| x.is_finite()) {
            return false;
        }
        for (s, &yj) in self.col_scale.iter_mut().zip(y) {
            *s = 1.0 + yj.abs();
        }
        let n = self.n;
        for row in self.a.chunks_mut(n) {
            row.iter_mut()
                .zip(&self.col_scale)
                .for_each(|(x, s)| *x *= s);
        }
        self.scale();
        self.eliminate();
        self.rank > 0
    }

    fn fit(&mut self, n: usize) {
        self.n = n;
        self.a.resize(n * n, 0.0);
        for v in [&mut self.row_scale, &mut self.col_scale, &mut self.v] {
            v.resize(n, 0.0);
        }
        self.rows.clear();
        self.rows.extend(0..n);
        self.cols.clear();
        self.cols.extend(0..n);
    }

    /// Forward differences, one evaluation per column, the targets left at `y` (and `r`
    /// re-evaluated there, so the system's other state is `y`'s again). False when a
    /// perturbed point cannot be evaluated.
    fn difference(&mut self, system: &mut dyn System, y: &mut [f64], r: &mut [f64]) -> bool {
        let n = self.n;
        let mut finite = true;
        for j in 0..n {
            let yj = y[j];
            self.col_scale[j] = 1.0 + yj.abs();
            y[j] = yj + FD_STEP * self.col_scale[j];
            // The step as represented, so that the difference quotient is not off by rounding.
            let h = y[j] - yj;
            system.set_targets(y);
            system.residuals(&mut self.v);
            y[j] = yj;
            for (i, (&vi, &ri)) in self.v.iter().zip(r.iter()).enumerate() {
                let d = (vi - ri) / h * self.col_scale[j];
                finite &= d.is_finite();
                self.a[i * n + j] = d;
            }
        }
        system.set_targets(y);
        system.residuals(r);
        finite
    }

    /// Scales each row to a largest entry of 1 (a zero row stays as it is).
    fn scale(&mut self) {
        let n = self.n;
        for (row, s) in self.a.chunks_mut(n).zip(&mut self.row_scale) {
            let m = max_abs(row);
            *s = if m > 0.0 { 1.0 / m } else { 1.0 };
            row.iter_mut().for_each(|x| *x *= *s);
        }
    }

    /// Gaussian elimination with complete pivoting (the largest entry left is the next
    /// pivot, as rows are scaled mostly one of several 1s), stopped at the first pivot at most [`RANK_TOL`] of the first.
    fn eliminate(&mut self) {
        let (n, a) = (self.n, &mut self.a);
        self.rank = 0;
        let mut largest = 0.0;
        for k in 0..n {
            // Of entries equal but for the differences' errors the first is taken, so that
            // rounding does not pick other free unknowns from one iteration to the next.
            let (mut p, mut q) = (k, k);
            for i in k..n {
                for j in k..n {
                    if a[i * n + j].abs() > a[p * n + q].abs() * (1.0 + RANK_TOL) {
                        (p, q) = (i, j);
                    }
                }
            }
            let pivot = a[p * n + q];
            if k == 0 {
                largest = pivot.abs();
            }
            if pivot == 0.0 || pivot.abs() <= RANK_TOL * largest {
                return;
            }
            for c in 0..n {
                a.swap(k * n + c, p * n + c);
            }
            self.rows.swap(k, p);
            for i in 0..n {
                a.swap(i * n + k, i * n + q);
            }
            self.cols.swap(k, q);
            for i in k + 1..n {
                let l = a[i * n + k] / pivot;
                a[i * n + k] = l;
                for c in k + 1..n {
                    a[i * n + c] -= l * a[k * n + c];
                }
            }
            self.rank = k + 1;
        }
    }

    /// The basic solution of `J delta = r`: the pivot rows solved for the pivot columns,
    /// `delta` 0 on the other columns (those unknowns keep their values); the rows left
    /// without a pivot are dependent on the others, or inconsistent, which the line search
    /// finds out.
    fn solve(&mut self, r: &[f64], delta: &mut [f64]) {
        let (n, k, a, b) = (self.n, self.rank, &self.a, &mut self.v);
        for (bi, &row) in b.iter_mut().zip(&self.rows) {
            *bi = r[row] * self.row_scale[row];
        }
        for i in 0..k {
            b[i] -= (0..i).map(|c| a[i * n + c] * b[c]).sum::<f64>();
        }
        for i in (0..k).rev() {
            let s: f64 = (i + 1..k).map(|c| a[i * n + c] * b[c]).sum();
            b[i] = (b[i] - s) / a[i * n + i];
        }
        delta.fill(0.0);
        for (&bi, &col) in b[..k].iter().zip(&self.cols) {
            delta[col] = bi * self.col_scale[col];
        }
    }
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

    type Residuals = fn(&[f64; 3]) -> [f64; 3];
    type Jacobian3 = fn(&[f64; 3]) -> [[f64; 3]; 3];

    /// Three equations with their analytic Jacobian, inverted by cofactors; `factor` fails
    /// when its determinant is exactly 0, as the real systems' LU does at a zero pivot.
    struct Three {
        y: [f64; 3],
        f: Residuals,
        jacobian: Jacobian3,
        inverse: [[f64; 3]; 3],
    }

    impl System for Three {
        fn residuals(&mut self, r: &mut [f64]) {
            r.copy_from_slice(&(self.f)(&self.y));
        }
        fn targets(&self, y: &mut [f64]) {
            y.copy_from_slice(&self.y);
        }
        fn set_targets(&mut self, y: &[f64]) {
            self.y.copy_from_slice(y);
        }
        fn factor(&mut self) -> bool {
            let a = (self.jacobian)(&self.y);
            let cofactor = |i: usize, j: usize| {
                let (i1, i2, j1, j2) = ((i + 1) % 3, (i + 2) % 3, (j + 1) % 3, (j + 2) % 3);
                a[i1][j1] * a[i2][j2] - a[i1][j2] * a[i2][j1]
            };
            let det: f64 = (0..3).map(|j| a[0][j] * cofactor(0, j)).sum();
            for (j, row) in self.inverse.iter_mut().enumerate() {
                for (i, x) in row.iter_mut().enumerate() {
                    *x = cofactor(i, j) / det;
                }
            }
            det != 0.0 && det.is_finite()
        }
        fn solve(&mut self, v: &mut [f64]) {
            let b = [v[0], v[1], v[2]];
            for (vi, row) in v.iter_mut().zip(&self.inverse) {
                *vi = row.iter().zip(&b).map(|(x, y)| x * y).sum();
            }
        }
    }

    /// The outcome, the solution, and whether the solve ended on a singular Jacobian.
    fn three(y: [f64; 3], f: Residuals, jacobian: Jacobian3) -> (Result<(), f64>, [f64; 3], bool) {
        let mut s = Three {
            y,
            f,
            jacobian,
            inverse: [[0.0; 3]; 3],
        };
        let mut work = Work::new(3);
        let outcome = solve(&mut s, 3, &mut work);
        (outcome, s.y, work.singular_at_root())
    }

    /// A flow `m` exactly 0 leaves the enthalpy `h` of `m·(h − 5)` (a `semiLinear`) without
    /// an equation, and `p` has two equations with the one root 2 (p³ + p = 10 and p = 2):
    /// the Jacobian is singular everywhere on `m = 0`, the system consistent. The solution
    /// keeps `h` at its guess, takes `m` = 0 and `p` = 2. (Before the fallback, stepping off
    /// to `m ≠ 0` made `h` absorb `(p − 2) / m`.)
    #[test]
    fn a_consistent_singular_system_keeps_the_free_unknown() {
        let (outcome, [m, h, p], singular) = three(
            [0.0, 1.0, 0.0],
            |&[m, h, p]| [m * (p + 1.0), m * (h - 5.0) + p - 2.0, p.powi(3) + p - 10.0],
            |&[m, h, p]| {
                [
                    [p + 1.0, 0.0, m],
                    [h - 5.0, m, 1.0],
                    [0.0, 0.0, 3.0 * p * p + 1.0],
                ]
            },
        );
        assert_eq!(outcome, Ok(()));
        assert!(singular);
        assert_eq!((m, h), (0.0, 1.0));
        assert!((p - 2.0).abs() < 1e-10, "p = {p}");
    }

    /// Two locked clutches: only the sum `a + b` of their torques is determined (twice), and
    /// `c` follows `a`. The solutions are a line; which unknown is free is the pivoting's
    /// choice, and that one keeps its guess while the others solve the equations.
    #[test]
    fn a_split_that_is_not_unique_takes_one_solution() {
        let guess = [3.0, -4.0, 0.0];
        let (outcome, y, singular) = three(
            guess,
            |&[a, b, c]| [a + b - 2.0, 2.0 * a + 2.0 * b - 4.0, c - 2.0 * a - 1.0],
            |_| [[1.0, 1.0, 0.0], [2.0, 2.0, 0.0], [-2.0, 0.0, 1.0]],
        );
        assert_eq!((outcome, singular), (Ok(()), true));
        let [a, b, c] = y;
        assert!(
            (a + b - 2.0).abs() < 1e-10 && (c - 2.0 * a - 1.0).abs() < 1e-10,
            "{y:?}"
        );
        assert!((0..3).any(|i| y[i] == guess[i]), "{y:?}");
    }

    /// `a + b` = 1 and = 3: no point has a residual below 1, so Newton fails with at least
    /// that left.
    #[test]
    fn an_inconsistent_singular_system_fails() {
        let (outcome, _, _) = three(
            [0.0, 0.0, 0.0],
            |&[a, b, c]| [a + b - 1.0, a + b - 3.0, c - 2.0],
            |_| [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
        );
        let left = outcome.expect_err("inconsistent");
        assert!(
            left.is_finite() && left >= 1.0 - 1e-9,
            "residual left {left}"
        );
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
        let mut work = Work::new(2);
        solve(&mut system, 2, &mut work).expect("converges");
        assert!(!work.singular_at_root(), "regular at its root");
        let [a, b] = system.y;
        assert!(((a - b).abs() - 2f64.sqrt()).abs() < 1e-9, "{a} {b}");
        assert!((a + b).abs() < 1e-9, "{a} {b}");
    }
}
