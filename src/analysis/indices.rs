//! Stiffness and separability indices (SPEC §8) over the per-state bounds `h̄`, and the
//! stiffness ratio from the eigenvalues of J.
//!
//! Every index is `None` where SPEC §8 leaves it undefined, never ±∞ or NaN: the caller says
//! why (no finite bound, one time scale only, all bounds equal, a zero real part).

use super::digraph::Digraph;
use super::johnson::cyclic_components;

/// The states ordered fast → slow: those with a finite `h̄` ascending (ties by index), then
/// those with `h̄ = ∞` by index.
pub fn fast_to_slow(h_bar: &[f64]) -> (Vec<usize>, Vec<usize>) {
    let mut finite: Vec<usize> = (0..h_bar.len()).filter(|&i| h_bar[i].is_finite()).collect();
    finite.sort_by(|&a, &b| h_bar[a].total_cmp(&h_bar[b]).then(a.cmp(&b)));
    let infinite = (0..h_bar.len())
        .filter(|&i| !h_bar[i].is_finite())
        .collect();
    (finite, infinite)
}

/// `H`: the finite bounds, ascending.
pub fn finite_sorted(h_bar: &[f64]) -> Vec<f64> {
    let (order, _) = fast_to_slow(h_bar);
    order.into_iter().map(|i| h_bar[i]).collect()
}

/// `σ(α) = h_N / h_1`; undefined without a finite bound.
pub fn stiffness_index(h_bar: &[f64]) -> Option<f64> {
    let h = finite_sorted(h_bar);
    Some(h.last()? / h.first()?)
}

/// `s_α(i+1, i) = (h_{i+1} − h_i) / max_m (h_{m+1} − h_m)` for i = 1..N−1; undefined when
/// N < 2 or every gap is zero.
pub fn separability_terms(h_bar: &[f64]) -> Option<Vec<f64>> {
    let h = finite_sorted(h_bar);
    let gaps: Vec<f64> = h.windows(2).map(|w| w[1] - w[0]).collect();
    let widest = gaps.iter().copied().fold(0.0, f64::max);
    if gaps.is_empty() || widest <= 0.0 {
        return None;
    }
    Some(gaps.into_iter().map(|g| g / widest).collect())
}

/// `s(α) = 1 − (1/(N−1)) Σ s_α(i+1, i)`.
pub fn separability_index(h_bar: &[f64]) -> Option<f64> {
    let terms = separability_terms(h_bar)?;
    Some(1.0 - terms.iter().sum::<f64>() / terms.len() as f64)
}

/// Why σ_R has no value.
#[derive(Clone, Debug, PartialEq)]
pub enum RatioUndefined {
    NoStates,
    ZeroRealPart { eigenvalues: usize },
    EigenvaluesFailed,
}

impl std::fmt::Display for RatioUndefined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RatioUndefined::NoStates => write!(f, "the model has no states"),
            RatioUndefined::ZeroRealPart { eigenvalues } => {
                write!(f, "{eigenvalues} eigenvalue(s) of J have a zero real part")
            }
            RatioUndefined::EigenvaluesFailed => {
                write!(f, "the eigenvalue iteration did not converge")
            }
        }
    }
}

/// Real parts below this fraction of the spectral radius count as zero: the Schur iteration
/// leaves rounding-level residue where the exact value is 0 (an integrator's pole).
const ZERO_REAL_PART: f64 = 1e-12;

/// `σ_R = max|Re λ| / min|Re λ|` over the eigenvalues of the n×n matrix with these entries.
pub fn stiffness_ratio(n: usize, entries: &[(usize, usize, f64)]) -> Result<f64, RatioUndefined> {
    if n == 0 {
        return Err(RatioUndefined::NoStates);
    }
    let eigenvalues = spectrum(n, entries)?;
    let radius = eigenvalues.iter().map(|l| l.norm()).fold(0.0, f64::max);
    let real: Vec<f64> = eigenvalues.iter().map(|l| l.re.abs()).collect();
    let zero = real
        .iter()
        .filter(|&&r| r <= ZERO_REAL_PART * radius)
        .count();
    if zero > 0 {
        return Err(RatioUndefined::ZeroRealPart { eigenvalues: zero });
    }
    let max = real.iter().copied().fold(0.0, f64::max);
    let min = real.iter().copied().fold(f64::INFINITY, f64::min);
    Ok(max / min)
}

/// Every eigenvalue of the n×n matrix with these entries, with multiplicity, in no particular
/// order. Ordered by its strongly connected components, the matrix is block triangular, and
/// its spectrum is the union of the diagonal blocks' spectra: so each component is solved on
/// its own (Σ size³ instead of n³, which matters for one-way coupled subsystems), and a state
/// on no cycle contributes its diagonal entry, which is 0 there.
fn spectrum(n: usize, entries: &[(usize, usize, f64)]) -> Result<Vec<faer::c64>, RatioUndefined> {
    let nonzero = || entries.iter().filter(|e| e.2 != 0.0);
    let graph = Digraph::from_edges(n, nonzero().map(|&(r, c, _)| (r, c)));
    let components = cyclic_components(
        &graph,
        &(0..n).collect::<Vec<_>>(),
        &mut vec![usize::MAX; n],
    );
    // Position of each state inside its component's block.
    let mut block = vec![usize::MAX; n];
    let mut position = vec![0; n];
    for (k, members) in components.iter().enumerate() {
        for (i, &v) in members.iter().enumerate() {
            block[v] = k;
            position[v] = i;
        }
    }
    let on_no_cycle = block.iter().filter(|&&b| b == usize::MAX).count();
    let mut eigenvalues = vec![faer::c64::new(0.0, 0.0); on_no_cycle];
    let mut matrices: Vec<faer::Mat<f64>> = components
        .iter()
        .map(|members| faer::Mat::zeros(members.len(), members.len()))
        .collect();
    for &(r, c, v) in nonzero() {
        if block[r] != usize::MAX && block[r] == block[c] {
            matrices[block[r]][(position[r], position[c])] = v;
        }
    }
    for m in matrices {
        if m.nrows() == 1 {
            eigenvalues.push(faer::c64::new(m[(0, 0)], 0.0));
            continue;
        }
        let block = m
            .eigenvalues()
            .map_err(|_| RatioUndefined::EigenvaluesFailed)?;
        eigenvalues.extend(block);
    }
    Ok(eigenvalues)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_of_a_hand_computed_vector() {
        // H = (1, 2, 10) plus one state with no cycle: gaps 1 and 8, the widest 8.
        let h = [10.0, f64::INFINITY, 1.0, 2.0];
        assert_eq!(fast_to_slow(&h), (vec![2, 3, 0], vec![1]));
        assert_eq!(stiffness_index(&h), Some(10.0));
        assert_eq!(separability_terms(&h), Some(vec![0.125, 1.0]));
        // 1 − (0.125 + 1)/2
        assert_eq!(separability_index(&h), Some(0.4375));
    }

    #[test]
    fn undefined_cases_say_so() {
        assert_eq!(stiffness_index(&[f64::INFINITY]), None);
        assert_eq!(stiffness_index(&[3.0]), Some(1.0));
        assert_eq!(separability_index(&[3.0, f64::INFINITY]), None);
        assert_eq!(separability_index(&[3.0, 3.0]), None);
    }

    #[test]
    fn stiffness_ratio_of_a_diagonal_and_of_an_integrator() {
        let r = stiffness_ratio(2, &[(0, 0, -1.0), (1, 1, -1000.0)]).unwrap();
        assert!((r - 1000.0).abs() < 1e-9);
        // der(phi) = w: a zero eigenvalue.
        let e = stiffness_ratio(2, &[(0, 0, -1.0), (1, 0, 1.0)]);
        assert_eq!(e, Err(RatioUndefined::ZeroRealPart { eigenvalues: 1 }));
    }

    #[test]
    fn a_one_way_chain_has_its_diagonal_as_spectrum_exactly() {
        // der(x1) = −x1, der(xi) = x(i−1) − 2 xi: lower bidiagonal, eigenvalue −2 of
        // multiplicity 399. A dense Schur form of the whole matrix perturbs such a defective
        // eigenvalue by about ε^(1/399) (it gave σ_R = 2.00004); one block per state gives
        // the diagonal itself.
        let n = 400;
        let mut entries = vec![(0, 0, -1.0)];
        for i in 1..n {
            entries.push((i, i - 1, 1.0));
            entries.push((i, i, -2.0));
        }
        assert_eq!(stiffness_ratio(n, &entries), Ok(2.0));
    }

    /// The eigenvalues of the whole dense matrix, the oracle for the block-wise spectrum.
    fn dense_spectrum(n: usize, entries: &[(usize, usize, f64)]) -> Vec<faer::c64> {
        let mut j = faer::Mat::<f64>::zeros(n, n);
        for &(r, c, v) in entries {
            j[(r, c)] = v;
        }
        j.eigenvalues().unwrap()
    }

    fn sorted(mut l: Vec<faer::c64>) -> Vec<(f64, f64)> {
        l.sort_by(|a, b| a.re.total_cmp(&b.re).then(a.im.total_cmp(&b.im)));
        l.into_iter().map(|z| (z.re, z.im)).collect()
    }

    #[test]
    fn the_spectrum_by_blocks_is_the_dense_spectrum() {
        // Three components coupled one way (0,1,2 → 3,4 → 5), an oscillator among them
        // (3 ↔ 4 with complex eigenvalues), a state on no cycle (6, fed by 5), and an explicit
        // zero entry that must not join two components.
        let entries = [
            (0, 0, -1.0),
            (0, 1, 2.0),
            (1, 2, -0.5),
            (2, 0, 3.0),
            (2, 2, -4.0),
            (0, 3, 0.7),
            (3, 3, -0.1),
            (3, 4, 5.0),
            (4, 3, -5.0),
            (4, 4, -0.2),
            (4, 5, 1.5),
            (5, 5, -30.0),
            (5, 0, 0.0),
            (6, 5, 1.0),
        ];
        let by_blocks = sorted(spectrum(7, &entries).unwrap());
        let dense = sorted(dense_spectrum(7, &entries));
        assert_eq!(by_blocks.len(), 7);
        for (a, b) in by_blocks.iter().zip(&dense) {
            assert!(
                (a.0 - b.0).abs() < 1e-9 && (a.1 - b.1).abs() < 1e-9,
                "{a:?} vs {b:?}"
            );
        }
        // State 6 is an integrator of state 5: σ_R is undefined.
        assert_eq!(
            stiffness_ratio(7, &entries),
            Err(RatioUndefined::ZeroRealPart { eigenvalues: 1 })
        );
        let with_decay: Vec<_> = entries.iter().copied().chain([(6, 6, -2.0)]).collect();
        let dense = dense_spectrum(7, &with_decay);
        let re: Vec<f64> = dense.iter().map(|l| l.re.abs()).collect();
        let expected = re.iter().copied().fold(0.0, f64::max)
            / re.iter().copied().fold(f64::INFINITY, f64::min);
        let r = stiffness_ratio(7, &with_decay).unwrap();
        assert!((r - expected).abs() < 1e-9 * expected, "{r} vs {expected}");
    }
}
