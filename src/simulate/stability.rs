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

use nalgebra::DMatrix;

use crate::causal::{Causal, Point};
use crate::dae::Dae;
use crate::jacobian::OdeJacobian;
use crate::structure::Structure;

use super::fixed_step::{Method, StepFailure};
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

/// The spectral radius of the weak-partitioned step at `h`, linearised at `point` (every
/// variable consistent, as a simulation's start is).
pub fn spectral_radius(
    model: (&Dae, &Structure, &Causal, &OdeJacobian),
    point: &Point,
    scheme: Scheme,
    h: f64,
) -> Result<f64, StepFailure> {
    let matrix = step_matrix(model, point, scheme, h)?;
    Ok(matrix
        .complex_eigenvalues()
        .iter()
        .map(|z| z.norm())
        .fold(0.0, f64::max))
}

/// The step matrix over the states (in `Causal::states` order) and then the exchanged values.
pub fn step_matrix(
    model: (&Dae, &Structure, &Causal, &OdeJacobian),
    point: &Point,
    scheme: Scheme,
    h: f64,
) -> Result<DMatrix<f64>, StepFailure> {
    let causal = model.2;
    let options = Options {
        method: scheme.method,
        start: point.time,
        stop: point.time + h,
        steps: 1,
        tol: NEWTON_TOL,
        partition: Partition::Weak,
        exchange: scheme.exchange,
        max_step: f64::INFINITY,
    };
    let mut split = Partitioned::new(model, point, &options, None, false);
    let states = causal.states.len();
    let mut z0: Vec<f64> = (causal.states.iter())
        .map(|v| point.vars[v.0 as usize])
        .collect();
    z0.extend(split.exchanged());
    let mut step = |z: &[f64]| -> Result<Vec<f64>, StepFailure> {
        let (x, exchanged) = z.split_at(states);
        split.set_exchanged(exchanged);
        let mut x = x.to_vec();
        split.step_over(&[], (point.time, h), &mut x)?;
        x.extend(split.exchanged());
        Ok(x)
    };
    let base = step(&z0)?;
    let n = z0.len();
    let mut matrix = DMatrix::zeros(n, n);
    for k in 0..n {
        let delta = 1e-6 * (1.0 + z0[k].abs());
        let mut z = z0.clone();
        z[k] += delta;
        let moved = step(&z)?;
        for (i, (after, before)) in moved.iter().zip(&base).enumerate() {
            matrix[(i, k)] = (after - before) / delta;
        }
    }
    Ok(matrix)
}

/// How far the search for the stability limit goes from the step it starts at: 2²⁰ times
/// larger, 2³⁰ times smaller.
const GROW: u32 = 20;
const SHRINK: u32 = 30;

/// Where the scheme's stability ends, from `radius(h)`: the step at which the spectral radius
/// reaches 1 first, searching up from `h` when it is stable there and down when it is not.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    /// Stable up to this step (to a relative 1e-9).
    Below(f64),
    /// Stable at every step up to 2²⁰·h.
    Unbounded,
    /// Unstable at every step down to h/2³⁰.
    Unstable,
}

/// How closely the limit is bisected (relative).
const LIMIT_TOL: f64 = 1e-9;

/// Multiplies the step from `h` by `factor` up to `steps` times until the scheme's
/// stability (`radius < 1`) is `stable`: the step before and the step where it is.
fn walk<E>(
    h: f64,
    factor: f64,
    steps: u32,
    stable: bool,
    radius: &mut impl FnMut(f64) -> Result<f64, E>,
) -> Result<Option<(f64, f64)>, E> {
    let mut last = h;
    for _ in 0..steps {
        let next = factor * last;
        if (radius(next)? < 1.0) == stable {
            return Ok(Some((last, next)));
        }
        last = next;
    }
    Ok(None)
}

/// Searches the step at which `radius` crosses 1, doubling or halving from `h` and then by
/// bisection.
pub fn stability_limit<E>(
    h: f64,
    mut radius: impl FnMut(f64) -> Result<f64, E>,
) -> Result<Limit, E> {
    let (mut low, mut high) = if radius(h)? < 1.0 {
        match walk(h, 2.0, GROW, false, &mut radius)? {
            Some((low, high)) => (low, high),
            None => return Ok(Limit::Unbounded),
        }
    } else {
        match walk(h, 0.5, SHRINK, true, &mut radius)? {
            Some((high, low)) => (low, high),
            None => return Ok(Limit::Unstable),
        }
    };
    while high - low > LIMIT_TOL * high {
        let middle = 0.5 * (low + high);
        if radius(middle)? < 1.0 {
            low = middle;
        } else {
            high = middle;
        }
    }
    Ok(Limit::Below(low))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_of_a_radius_that_grows_with_the_step_is_where_it_reaches_one() {
        let limit = stability_limit(0.1, |h| Ok::<f64, ()>(h / 3.0)).unwrap();
        let Limit::Below(h) = limit else {
            panic!("{limit:?}")
        };
        assert!((h - 3.0).abs() < 1e-8, "{h}");
        let from_above = stability_limit(100.0, |h| Ok::<f64, ()>(h / 3.0)).unwrap();
        assert!(matches!(from_above, Limit::Below(h) if (h - 3.0).abs() < 1e-8));
        assert_eq!(
            stability_limit(1.0, |_| Ok::<f64, ()>(0.5)).unwrap(),
            Limit::Unbounded
        );
        assert_eq!(
            stability_limit(1.0, |_| Ok::<f64, ()>(2.0)).unwrap(),
            Limit::Unstable
        );
    }
}
