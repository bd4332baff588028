//! The parametric separability map (SPEC §8): `s_α(i+1, i)` for α on a grid (drawn by
//! [`super::picture`]).

use super::bounds::StateBounds;
use super::indices::{fast_to_slow, separability_terms};

/// Per α of the grid: the states fast → slow (finite bounds only) and the terms
/// `s_α(i+1, i)`, i = 1..N−1 (`None` where undefined: N < 2 or all bounds equal).
#[derive(Clone, Debug, PartialEq)]
pub struct SeparabilityMap {
    pub alphas: Vec<f64>,
    pub orders: Vec<Vec<usize>>,
    pub terms: Vec<Option<Vec<f64>>>,
}

/// The map from the bounds at every α of `alphas` (as [`super::analyse_grid`] gives them).
pub fn separability_map(bounds: &StateBounds, alphas: &[f64]) -> SeparabilityMap {
    let mut orders = Vec::new();
    let mut terms = Vec::new();
    for k in 0..alphas.len() {
        let h = bounds.at(k);
        orders.push(fast_to_slow(h).0);
        terms.push(separability_terms(h));
    }
    SeparabilityMap {
        alphas: alphas.to_vec(),
        orders,
        terms,
    }
}

/// `n` values evenly spaced from `a` to `b` inclusive.
pub fn grid(a: f64, b: f64, n: usize) -> Vec<f64> {
    match n {
        0 => Vec::new(),
        1 => vec![a],
        _ => (0..n)
            .map(|k| a + (b - a) * k as f64 / (n - 1) as f64)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_includes_both_ends() {
        assert_eq!(grid(0.1, 1.0, 4).len(), 4);
        assert!((grid(0.1, 1.0, 4)[3] - 1.0).abs() < 1e-15);
        assert_eq!(grid(0.5, 1.0, 1), vec![0.5]);
    }
}
