//! The Newton matrix `I − γJ` solved on its sparse path (the fixed-pattern LU with diagonal
//! pivots, and faer's pivoting LU where those are refused) agrees with a dense LU with partial
//! pivoting of the same matrix, on random sparse patterns: small residuals whichever path ran.

use mocca::simulate::linear::{DENSE_LIMIT, DenseLu, NewtonMatrix};
use mocca::simulate::static_lu::{Refactor, StaticLu};
use proptest::prelude::*;

/// A random sparse `J`: each row a few entries in random columns (duplicates kept: they must be
/// summed), values of either sign and spread magnitudes.
fn sparse_jacobian(n: usize) -> impl Strategy<Value = Vec<(usize, usize, f64)>> {
    proptest::collection::vec((0..n, 0..n, -1.0f64..1.0, 0i32..4), n..4 * n).prop_map(|entries| {
        entries
            .into_iter()
            .map(|(r, c, x, e)| (r, c, x * 10f64.powi(e)))
            .collect()
    })
}

/// `M = I − γJ` as a dense row-major matrix.
fn dense(n: usize, jac: &[(usize, usize, f64)], gamma: f64) -> Vec<f64> {
    let mut m = vec![0.0; n * n];
    for i in 0..n {
        m[i * n + i] = 1.0;
    }
    for &(r, c, x) in jac {
        m[r * n + c] -= gamma * x;
    }
    m
}

/// `‖M x − b‖∞ / (‖M‖∞ ‖x‖∞ + ‖b‖∞)`.
fn relative_residual(n: usize, m: &[f64], x: &[f64], b: &[f64]) -> f64 {
    let norm_m = (0..n)
        .map(|i| m[i * n..(i + 1) * n].iter().map(|v| v.abs()).sum::<f64>())
        .fold(0.0, f64::max);
    let norm = |v: &[f64]| v.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    let residual = (0..n)
        .map(|i| (0..n).map(|j| m[i * n + j] * x[j]).sum::<f64>() - b[i])
        .fold(0.0f64, |a, r| a.max(r.abs()));
    residual / (norm_m * norm(x) + norm(b))
}

fn dense_factor(n: usize, m: &[f64]) -> Option<DenseLu> {
    let mut lu = DenseLu::new(n);
    for r in 0..n {
        for c in 0..n {
            lu.set(r, c, m[r * n + c]);
        }
    }
    lu.factor().then_some(lu)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn sparse_newton_matrix_solves_like_a_dense_lu(
        (n, jac) in (DENSE_LIMIT + 1..DENSE_LIMIT + 60).prop_flat_map(|n| (Just(n), sparse_jacobian(n))),
        gamma in prop_oneof![Just(1e-3), Just(0.1), Just(1.0), Just(100.0)],
        seed in 0u64..1000,
    ) {
        let pattern: Vec<(usize, usize)> = jac.iter().map(|&(r, c, _)| (r, c)).collect();
        let values: Vec<f64> = jac.iter().map(|e| e.2).collect();
        let m = dense(n, &jac, gamma);
        let mut matrix = NewtonMatrix::new(n, &pattern);
        prop_assert!(matrix.is_sparse());
        let factored = matrix.factor(gamma, &values);
        let Some(reference) = dense_factor(n, &m) else {
            return Ok(()); // exactly singular: nothing to compare
        };
        let b: Vec<f64> = (0..n).map(|i| ((i as u64 * 7919 + seed) % 13) as f64 - 6.0).collect();
        let mut expected = b.clone();
        reference.solve(&mut expected);
        if relative_residual(n, &m, &expected, &b) > 1e-10 {
            return Ok(()); // too ill-conditioned for the dense LU itself to be an oracle
        }
        prop_assert!(factored, "a matrix the dense LU factors is refused");
        let mut x = b.clone();
        matrix.solve(&mut x);
        let r = relative_residual(n, &m, &x, &b);
        prop_assert!(r <= 1e-10, "relative residual {r:e}");
    }

    /// Diagonally dominant matrices never need a row exchange: the diagonal pivots are taken.
    #[test]
    fn diagonally_dominant_matrices_take_the_diagonal_pivots(
        (n, jac) in (2usize..80).prop_flat_map(|n| (Just(n), sparse_jacobian(n))),
    ) {
        let mut entries: Vec<(usize, usize)> = jac.iter().map(|&(r, c, _)| (r, c)).collect();
        entries.extend((0..n).map(|i| (i, i)));
        let mut row_sums = vec![0.0; n];
        for &(r, _, x) in &jac {
            row_sums[r] += x.abs();
        }
        let mut lu = StaticLu::new(n, &entries);
        let slots = lu.slots(&entries);
        let loaded = lu.factor(|v| {
            for (k, &s) in slots.iter().enumerate() {
                v[s] += match jac.get(k) {
                    Some(&(_, _, x)) => x,
                    None => 1.0 + 2.0 * row_sums[k - jac.len()],
                };
            }
        });
        prop_assert_eq!(loaded, Ok(()));
    }
}

/// Blocks `[[10⁻⁶, 1], [1, 10⁻⁶]]`: eliminating on the diagonal grows the second row a million
/// times, so the fixed-pattern LU refuses and the matrix is solved by the pivoting LU.
#[test]
fn growing_rows_fall_back_to_pivoting() {
    let n = DENSE_LIMIT + 2;
    let jac: Vec<(usize, usize, f64)> = (0..n)
        .map(|i| (i, i, 1.0 - 1e-6))
        .chain((0..n / 2).flat_map(|b| [(2 * b, 2 * b + 1, -1.0), (2 * b + 1, 2 * b, -1.0)]))
        .collect();
    let pattern: Vec<(usize, usize)> = jac.iter().map(|&(r, c, _)| (r, c)).collect();
    let values: Vec<f64> = jac.iter().map(|e| e.2).collect();
    let gamma = 1.0;

    let mut entries = pattern.clone();
    entries.extend((0..n).map(|i| (i, i)));
    let mut fixed = StaticLu::new(n, &entries);
    let slots = fixed.slots(&entries);
    let refused = fixed.factor(|v| {
        for (k, &s) in slots.iter().enumerate() {
            v[s] += values.get(k).map_or(1.0, |&x| -gamma * x);
        }
    });
    assert_eq!(refused, Err(Refactor::Unstable));

    let mut matrix = NewtonMatrix::new(n, &pattern);
    assert!(matrix.factor(gamma, &values));
    let b: Vec<f64> = (0..n).map(|i| 1.0 + i as f64).collect();
    let mut x = b.clone();
    matrix.solve(&mut x);
    let m = dense(n, &jac, gamma);
    let r = relative_residual(n, &m, &x, &b);
    assert!(r <= 1e-12, "relative residual {r:e}");
}
