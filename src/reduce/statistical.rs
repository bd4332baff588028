//! Statistical ranking (SPEC §11): a term whose mean and spread are small beside its
//! equation's other terms can go; one whose spread alone is small can be frozen to its mean.

use super::operation::Operation;

/// A term's figures over the samples, and relative to the other terms of its equation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Figures {
    pub mean: f64,
    /// The standard deviation over the samples (divided by their count).
    pub std: f64,
    /// `m_r = m_j / ((1/N) Σ_i |m_i|)` (or `/ Σ_i |m_i|`, see [`RelativeTo`]), 0 when the
    /// denominator is.
    pub m_r: f64,
    /// `σ_r = σ_j / ((1/N) Σ_i σ_i)` (or `/ Σ_i σ_i`), 0 when the denominator is.
    pub sigma_r: f64,
}

/// What a term's mean and spread are relative to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelativeTo {
    /// The mean over the equation's N terms, `(1/N) Σ_i` (SPEC §11).
    Mean,
    /// Their sum, `Σ_i`, as Sodja and Žlajpah's tables give the figures (N times smaller).
    Sum,
}

/// The figures of the N terms of one equation, from each term's values at the samples.
pub fn figures(values: &[Vec<f64>], relative_to: RelativeTo) -> Vec<Figures> {
    let moments: Vec<(f64, f64)> = values.iter().map(|v| mean_and_std(v)).collect();
    let n = match relative_to {
        RelativeTo::Mean => moments.len() as f64,
        RelativeTo::Sum => 1.0,
    };
    let mean_scale = moments.iter().map(|(m, _)| m.abs()).sum::<f64>() / n;
    let std_scale = moments.iter().map(|(_, s)| s).sum::<f64>() / n;
    moments
        .into_iter()
        .map(|(mean, std)| Figures {
            mean,
            std,
            m_r: relative(mean, mean_scale),
            sigma_r: relative(std, std_scale),
        })
        .collect()
}

/// `x / scale`, with 0/0 as 0.
fn relative(x: f64, scale: f64) -> f64 {
    if x == 0.0 && scale == 0.0 {
        0.0
    } else {
        x / scale
    }
}

fn mean_and_std(v: &[f64]) -> (f64, f64) {
    // A constant term is its value with no spread, not a mean with rounding in it.
    if let Some(&first) = v.first()
        && v.iter().all(|&x| x == first)
    {
        return (first, 0.0);
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// What SPEC §11 does with a term of these figures at `threshold`: delete it when `|m_r|` and
/// `σ_r` are both below, replace it by its mean when only `σ_r` is (not a `constant` term,
/// which its mean is already), keep it otherwise (and when a figure is not a number).
pub fn verdict(f: &Figures, threshold: f64, constant: bool) -> Option<Operation> {
    if f.sigma_r.is_nan() || f.sigma_r >= threshold {
        return None;
    }
    if f.m_r.abs() < threshold {
        Some(Operation::Delete)
    } else if constant {
        None
    } else {
        Some(Operation::Replace(f.mean))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_relative_to_the_equations_terms() {
        // Terms: constant 2, ramp 0..4 (mean 2, σ √2), constant 0.
        let v = vec![
            vec![2.0, 2.0, 2.0, 2.0, 2.0],
            vec![0.0, 1.0, 2.0, 3.0, 4.0],
            vec![0.0; 5],
        ];
        let f = figures(&v, RelativeTo::Mean);
        let s = 2f64.sqrt();
        assert_eq!(f[0].mean, 2.0);
        assert!((f[1].std - s).abs() < 1e-15);
        assert!((f[0].m_r - 2.0 / (4.0 / 3.0)).abs() < 1e-15);
        assert!((f[1].sigma_r - s / (s / 3.0)).abs() < 1e-12);
        assert_eq!((f[2].m_r, f[2].sigma_r), (0.0, 0.0));
        assert_eq!(verdict(&f[2], 0.1, true), Some(Operation::Delete));
        assert_eq!(verdict(&f[0], 0.1, false), Some(Operation::Replace(2.0)));
        // A constant term is its own mean: deleting it is its one operation.
        assert_eq!(verdict(&f[0], 0.1, true), None);
        assert_eq!(verdict(&f[1], 0.1, false), None);
        // 0/0 counts as 0: an equation whose terms never vary.
        let flat = figures(&[vec![1.0, 1.0], vec![3.0, 3.0]], RelativeTo::Mean);
        assert_eq!(flat[0].sigma_r, 0.0);
        // Relative to the sum: N = 3 times smaller.
        let summed = figures(&v, RelativeTo::Sum);
        assert!((summed[0].m_r - 2.0 / 4.0).abs() < 1e-15);
        assert!((summed[1].sigma_r - 1.0).abs() < 1e-12);
    }
}
