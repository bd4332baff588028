//! The stability of the decoupled scheme (SPEC §10): the step matrix of a weak-partitioned
//! step (`simulate --partition weak`) at step `h`, linearised at a point, and its spectral
//! radius: the general form of `G_L⁻¹ G_R`.
//!
//! The step maps the states and the exchanged weak values of one step to those of the next,
//! so its matrix is taken over both (a Jacobi step reads the previous step's values, which
//! are then part of the state of the scheme). Its columns are finite differences of the
//! scheme itself, so the prediction is that of the solver the user runs, for every method
//! and exchange it offers. The model's own Newton solves converge far below the difference
//! step, and on a linear model they are exact, so the matrix is too.
//!
//! The same linearisation ([`StepMap`]) of a mixed-mode or multirate partition's step
//! ([`MixedStep`]) checks the explicit levels `--partition auto` chose from cycle bounds
//! before a run ([`allowed_radius`]): a bound is a gain bound, not a proof that explicit
//! steps are stable.

use nalgebra::DMatrix;

use crate::causal::{Causal, Point};
use crate::dae::Dae;
use crate::jacobian::OdeJacobian;
use crate::structure::Structure;

use super::fixed_step::{FixedStep, Method, StepFailure};
use super::mixed::MixedStepper;
use super::model::CompiledModel;
use super::partition::Partitioned;
use super::run::{Exchange, Options, Partition};

/// The tolerance of the implicit stages' Newton while the matrix is taken.
const NEWTON_TOL: f64 = 1e-13;

/// How the decoupled scheme steps: its method and how the subsystems exchange values.
#[derive(Clone, Copy, Debug)]
pub struct Scheme {
    pub method: Method,
    pub exchange: Exchange,
}

/// The weak-partitioned step from one point, to be linearised at any step size: the model
/// is compiled once (the implicit stages refactor when the step changes).
pub struct DecoupledStep {
    split: Partitioned,
    states: usize,
    /// The states (in `Causal::states` order) and then the exchanged values at the point.
    z0: Vec<f64>,
    time: f64,
}

impl DecoupledStep {
    /// The step from `point` (every variable consistent, as a simulation's start is).
    pub fn new(
        model: (&Dae, &Structure, &Causal, &OdeJacobian),
        point: &Point,
        scheme: Scheme,
    ) -> DecoupledStep {
        let options = Options {
            method: scheme.method,
            start: point.time,
            stop: f64::INFINITY,
            steps: 1,
            tol: NEWTON_TOL,
            partition: Partition::Weak,
            exchange: scheme.exchange,
            max_step: f64::INFINITY,
        };
        let split = Partitioned::new(model, point, &options, None, false);
        let causal = model.2;
        let mut z0: Vec<f64> = (causal.states.iter())
            .map(|v| point.vars[v.0 as usize])
            .collect();
        z0.extend(split.exchanged());
        DecoupledStep {
            split,
            states: causal.states.len(),
            z0,
            time: point.time,
        }
    }
}

impl StepMap for DecoupledStep {
    fn origin(&self) -> &[f64] {
        &self.z0
    }

    /// One step of `h` from `z` (states, exchanged values): the same after it.
    fn step(&mut self, z: &[f64], h: f64) -> Result<Vec<f64>, StepFailure> {
        let (x, exchanged) = z.split_at(self.states);
        self.split.set_exchanged(exchanged);
        let mut x = x.to_vec();
        self.split.step_over(&[], (self.time, h), &mut x)?;
        x.extend(self.split.exchanged());
        Ok(x)
    }
}

/// A scheme's step as a map of its own state (the model's states, and whatever else a step
/// carries to the next), to be linearised at its origin by finite differences of the scheme
/// itself.
pub trait StepMap {
    /// The point the map is linearised at.
    fn origin(&self) -> &[f64];

    /// One step of `h` from `z`.
    fn step(&mut self, z: &[f64], h: f64) -> Result<Vec<f64>, StepFailure>;

    /// The spectral radius of the step matrix at `h`: of the whole matrix up to
    /// [`DENSE_UP_TO`] dimensions, else of its Arnoldi projection on a
    /// Krylov subspace of dimension [`KRYLOV`] (its largest Ritz value).
    fn spectral_radius(&mut self, h: f64) -> Result<f64, StepFailure> {
        Ok(self.moduli(h)?[0])
    }

    /// The moduli of the step matrix's eigenvalues at `h`, largest first: all of them up to
    /// [`DENSE_UP_TO`] dimensions, else those of its Ritz values (the largest are the best
    /// approximated).
    fn moduli(&mut self, h: f64) -> Result<Vec<f64>, StepFailure> {
        if self.origin().len() <= DENSE_UP_TO {
            return Ok(moduli(self.matrix(h)?));
        }
        self.krylov_moduli(h, KRYLOV)
    }

    /// The largest Ritz value of the step matrix at `h` in a Krylov subspace of dimension
    /// `k` (Arnoldi, each product one step of a finite difference; the basis
    /// orthogonalised twice).
    fn krylov_radius(&mut self, h: f64, k: usize) -> Result<f64, StepFailure> {
        Ok(self.krylov_moduli(h, k)?[0])
    }

    /// The moduli of the Ritz values of the step matrix at `h` in a Krylov subspace of
    /// dimension `k`, largest first.
    fn krylov_moduli(&mut self, h: f64, k: usize) -> Result<Vec<f64>, StepFailure> {
        let n = self.origin().len();
        let k = k.min(n);
        let origin = self.origin().to_vec();
        let base = self.step(&origin, h)?;
        let largest = self.origin().iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let delta = 1e-6 * (1.0 + largest);
        // A start that excites every mode, the same every run.
        let mut start: Vec<f64> = (0..n)
            .map(|i| 1.0 + ((i * 7919) % 101) as f64 / 101.0)
            .collect();
        normalise(&mut start);
        let mut basis = vec![start];
        let mut hessenberg = DMatrix::zeros(k + 1, k);
        let mut size = 0;
        for j in 0..k {
            let mut w = self.product(&base, &basis[j], delta, h)?;
            for _ in 0..2 {
                for (i, v) in basis.iter().enumerate() {
                    let projection: f64 = v.iter().zip(&w).map(|(a, b)| a * b).sum();
                    hessenberg[(i, j)] += projection;
                    for (wi, vi) in w.iter_mut().zip(v) {
                        *wi -= projection * vi;
                    }
                }
            }
            let norm = normalise(&mut w);
            hessenberg[(j + 1, j)] = norm;
            size = j + 1;
            // An invariant subspace: its Ritz values are eigenvalues.
            if norm <= 1e-12 {
                break;
            }
            basis.push(w);
        }
        Ok(moduli(hessenberg.view((0, 0), (size, size)).into_owned()))
    }

    /// The step matrix at `h`, over the map's state.
    fn matrix(&mut self, h: f64) -> Result<DMatrix<f64>, StepFailure> {
        let origin = self.origin().to_vec();
        let base = self.step(&origin, h)?;
        let n = self.origin().len();
        let mut matrix = DMatrix::zeros(n, n);
        let mut unit = vec![0.0; n];
        for k in 0..n {
            unit[k] = 1.0;
            let delta = 1e-6 * (1.0 + self.origin()[k].abs());
            let column = self.product(&base, &unit, delta, h)?;
            unit[k] = 0.0;
            for (i, x) in column.into_iter().enumerate() {
                matrix[(i, k)] = x;
            }
        }
        Ok(matrix)
    }

    /// The step matrix at `h` times `v`: a finite difference of one step from `z0 + delta·v`
    /// against `base`, the step from `z0`.
    fn product(
        &mut self,
        base: &[f64],
        v: &[f64],
        delta: f64,
        h: f64,
    ) -> Result<Vec<f64>, StepFailure> {
        let z: Vec<f64> = (self.origin().iter().zip(v))
            .map(|(z, v)| z + delta * v)
            .collect();
        let moved = self.step(&z, h)?;
        Ok((moved.iter().zip(base))
            .map(|(a, b)| (a - b) / delta)
            .collect())
    }
}

/// The step of a mixed-mode or multirate partition (SPEC §10) from one point, over the model's
/// states: the model compiled once with the partition's level rows, as `simulate` steps it.
pub struct MixedStep {
    model: CompiledModel,
    stepper: MixedStepper,
    x0: Vec<f64>,
    time: f64,
}

impl MixedStep {
    pub fn new(
        (dae, causal, jac): (&Dae, &Causal, &OdeJacobian),
        point: &Point,
        partition: &crate::partition::Partition,
    ) -> MixedStep {
        let layout = super::run::level_rows(dae, causal, partition);
        let mut model = CompiledModel::new(dae, causal, jac, point, &layout);
        model.enter_interval_from(point.time);
        let stepper = MixedStepper::new(partition.clone(), NEWTON_TOL, &model);
        MixedStep {
            model,
            stepper,
            x0: (causal.states.iter())
                .map(|v| point.vars[v.0 as usize])
                .collect(),
            time: point.time,
        }
    }
}

impl StepMap for MixedStep {
    fn origin(&self) -> &[f64] {
        &self.x0
    }

    fn step(&mut self, z: &[f64], h: f64) -> Result<Vec<f64>, StepFailure> {
        let mut x = z.to_vec();
        self.stepper.step(&mut self.model, self.time, h, &mut x)?;
        Ok(x)
    }
}

/// Up to this many states the spectral radius of the exact flow is taken from J's
/// eigenvalues (beyond, the flow is taken as growing no mode).
const EXACT_UP_TO: usize = 400;

/// The largest spectral radius a step of `h` may have and be stable over a run of `steps`
/// steps: the exact flow's, `max(1, e^{h·max Re λ(J)})` (a model that grows, grows), times
/// `2^(1/steps)`, so that no mode is amplified twofold beyond it over the run.
pub fn allowed_radius(jacobian: &[(usize, usize, f64)], n: usize, h: f64, steps: u64) -> f64 {
    let exact = if n <= EXACT_UP_TO {
        let mut j = DMatrix::zeros(n, n);
        for &(r, c, v) in jacobian {
            j[(r, c)] = v;
        }
        let growth = (j.complex_eigenvalues().iter())
            .map(|z| z.re)
            .fold(f64::NEG_INFINITY, f64::max);
        (h * growth).exp().max(1.0)
    } else {
        1.0
    };
    exact * 2f64.powf(1.0 / steps.max(1) as f64)
}

/// The largest modulus of the eigenvalues of the `n × n` matrix of `entries`: exactly up to
/// 400 rows, above that Gershgorin's bound (the largest absolute row sum), which is at least
/// as large.
pub fn spectral_radius(entries: &[(usize, usize, f64)], n: usize) -> f64 {
    if n <= EXACT_UP_TO {
        let mut j = DMatrix::zeros(n, n);
        for &(r, c, v) in entries {
            j[(r, c)] += v;
        }
        return moduli(j)[0];
    }
    let mut rows = vec![0.0f64; n];
    for &(r, _, v) in entries {
        rows[r] += v.abs();
    }
    rows.into_iter().fold(0.0, f64::max)
}

/// Up to this many states and exchanged values the step matrix is taken whole.
pub const DENSE_UP_TO: usize = 64;

/// The dimension of the Krylov subspace the spectral radius of larger ones is estimated in.
pub const KRYLOV: usize = 40;

/// The moduli of `matrix`'s eigenvalues, largest first (a 0 for an empty matrix).
fn moduli(matrix: DMatrix<f64>) -> Vec<f64> {
    if matrix.is_empty() {
        // nalgebra's Schur decomposition indexes past an empty matrix.
        return vec![0.0];
    }
    let mut moduli: Vec<f64> = (matrix.complex_eigenvalues().iter())
        .map(|z| z.norm())
        .collect();
    moduli.sort_by(|a, b| b.total_cmp(a));
    if moduli.is_empty() {
        moduli.push(0.0);
    }
    moduli
}

/// Scales `v` to unit length; returns its length before.
fn normalise(v: &mut [f64]) -> f64 {
    let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    if norm > 0.0 {
        for x in v.iter_mut() {
            *x /= norm;
        }
    }
    norm
}

/// How far the search for the stability limit goes from the step it starts at, in factors of
/// 4: 2²⁰ times larger, 2³⁰ times smaller.
const GROW: u32 = 10;
const SHRINK: u32 = 15;

/// Where the scheme's stability ends, from `radius(h)`: the step at which the spectral radius
/// reaches 1 first, searching up from `h` when it is stable there and down when it is not.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    /// Stable up to this step (to a relative 1e-7).
    Below(f64),
    /// Stable at every step up to 2²⁰·h.
    Unbounded,
    /// Unstable at every step down to h/2³⁰.
    Unstable,
}

/// How far above 1 a radius may be and the scheme still count as stable: a mode of
/// eigenvalue 1 (a free body's angle and speed, which the exact solution keeps too) reads a
/// little above 1 through the finite differences, and a Jordan block of it (the angle growing
/// with the speed) as much as the square root of their error.
pub const MARGINAL: f64 = 1e-4;

/// Whether a step matrix of spectral radius `radius` gives a stable scheme: no mode grows,
/// to within [`MARGINAL`].
pub fn is_stable(radius: f64) -> bool {
    radius <= 1.0 + MARGINAL
}

/// How closely the limit is found (relative).
const LIMIT_TOL: f64 = 1e-7;

/// A step and the spectral radius there.
pub type Probe = (f64, f64);

/// Multiplies the step from `from` by `factor` up to `steps` times until whether the radius
/// is at most `threshold` is `below`: the probe before and the probe where it is.
fn walk<E>(
    from: Probe,
    (factor, steps): (f64, u32),
    (threshold, below): (f64, bool),
    radius: &mut impl FnMut(f64) -> Result<f64, E>,
) -> Result<Option<(Probe, Probe)>, E> {
    let mut last = from;
    for _ in 0..steps {
        let h = factor * last.0;
        let next = (h, radius(h)?);
        if (next.1 <= threshold) == below {
            return Ok(Some((last, next)));
        }
        last = next;
    }
    Ok(None)
}

/// Searches the step at which `radius` crosses 1 (or `1 + MARGINAL`, when it stays at 1 below
/// it: see [`is_stable`]), from the probe `first` (a step `h` and the radius there, taken
/// already): multiplying or dividing by 4 from `h` to bracket
/// it, then regula falsi with the Illinois modification (superlinear where the radius is
/// smooth in the step, bracketing where it is not).
pub fn stability_limit<E>(
    first: Probe,
    mut radius: impl FnMut(f64) -> Result<f64, E>,
) -> Result<Limit, E> {
    // The crossing sought is of 1, or of 1 + MARGINAL where a mode of eigenvalue 1 holds the
    // radius at 1 on the stable side (within MARGINAL of 1 there).
    let crossing = |stable_radius: f64| {
        if stable_radius < 1.0 - MARGINAL {
            1.0
        } else {
            1.0 + MARGINAL
        }
    };
    let (mut low, mut high, threshold) = if is_stable(first.1) {
        let threshold = crossing(first.1);
        match walk(first, (4.0, GROW), (threshold, false), &mut radius)? {
            Some((low, high)) => (low, high, threshold),
            None => return Ok(Limit::Unbounded),
        }
    } else {
        match walk(first, (0.25, SHRINK), (1.0 + MARGINAL, true), &mut radius)? {
            Some((high, low)) => (low, high, crossing(low.1)),
            None => return Ok(Limit::Unstable),
        }
    };
    // `low` is at most `threshold`, `high` above it.
    let excess = |radius: f64| radius - threshold;
    let (mut f_low, mut f_high) = (excess(low.1), excess(high.1));
    let mut kept = 0i8;
    for _ in 0..200 {
        if high.0 - low.0 <= LIMIT_TOL * high.0 {
            break;
        }
        let secant = (low.0 * f_high - high.0 * f_low) / (f_high - f_low);
        let h = if secant > low.0 && secant < high.0 {
            secant
        } else {
            0.5 * (low.0 + high.0)
        };
        let probe = (h, radius(h)?);
        let f = excess(probe.1);
        if f.abs() < 1e-14 {
            return Ok(Limit::Below(h));
        }
        if f < 0.0 {
            low = probe;
            f_low = f;
            if kept == -1 {
                f_high *= 0.5;
            }
            kept = -1;
        } else {
            high = probe;
            f_high = f;
            if kept == 1 {
                f_low *= 0.5;
            }
            kept = 1;
        }
    }
    Ok(Limit::Below(low.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A damped oscillator (eigenvalues −1 ± 3i, modulus √10) and a decay of rate 7.
    #[test]
    fn the_spectral_radius_is_the_largest_modulus() {
        let entries = [(0, 1, 1.0), (1, 0, -10.0), (1, 1, -2.0), (2, 2, -7.0)];
        assert!((spectral_radius(&entries, 3) - 7.0).abs() < 1e-12);
        let slow = [(0, 1, 1.0), (1, 0, -10.0), (1, 1, -2.0), (2, 2, -0.5)];
        assert!((spectral_radius(&slow, 3) - 10f64.sqrt()).abs() < 1e-12);
        assert_eq!(spectral_radius(&[], 0), 0.0);
    }

    #[test]
    fn the_limit_of_a_radius_that_grows_with_the_step_is_where_it_reaches_one() {
        let limit = stability_limit((0.1, 0.1 / 3.0), |h| Ok::<f64, ()>(h / 3.0)).unwrap();
        let Limit::Below(h) = limit else {
            panic!("{limit:?}")
        };
        assert!((h - 3.0).abs() < 1e-6, "{h}");
        let from_above = stability_limit((100.0, 100.0 / 3.0), |h| Ok::<f64, ()>(h / 3.0)).unwrap();
        assert!(matches!(from_above, Limit::Below(h) if (h - 3.0).abs() < 1e-6));
        assert_eq!(
            stability_limit((1.0, 0.5), |_| Ok::<f64, ()>(0.5)).unwrap(),
            Limit::Unbounded
        );
        assert_eq!(
            stability_limit((1.0, 2.0), |_| Ok::<f64, ()>(2.0)).unwrap(),
            Limit::Unstable
        );
    }
}
