//! Partition proposal (SPEC §8): states with `h̄_i < h` are fast (implicit), the rest slow
//! (explicit); applied again inside the fast part it gives the levels of a multirate scheme.

use super::indices::fast_to_slow;

/// One level of the proposal: the threshold step and the split of the states it was applied to.
#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    pub threshold: f64,
    /// Fast (`h̄ < threshold`) and slow states, each ordered fast → slow (slow ones with no cycle
    /// last).
    pub fast: Vec<usize>,
    pub slow: Vec<usize>,
}

/// Up to `levels` nested splits. The first uses `step` when given; every other one splits at the
/// largest gap between consecutive finite bounds of the states it sees (the threshold is the
/// upper end of the gap, so the states below it are fast). Stops early when the fast part has
/// fewer than two finite bounds or they are all equal.
pub fn propose(h_bar: &[f64], step: Option<f64>, levels: usize) -> Vec<Level> {
    let mut proposal = Vec::new();
    let mut states: Vec<usize> = (0..h_bar.len()).collect();
    for depth in 0..levels {
        let threshold = match (depth, step) {
            (0, Some(h)) => h,
            _ => match largest_gap_threshold(h_bar, &states) {
                Some(t) => t,
                None => break,
            },
        };
        let ordered = ordered_subset(h_bar, &states);
        let (fast, slow): (Vec<usize>, Vec<usize>) =
            ordered.into_iter().partition(|&i| h_bar[i] < threshold);
        let done = fast.is_empty();
        proposal.push(Level {
            threshold,
            fast: fast.clone(),
            slow,
        });
        if done {
            break;
        }
        states = fast;
    }
    proposal
}

/// The subset's states fast → slow.
fn ordered_subset(h_bar: &[f64], states: &[usize]) -> Vec<usize> {
    let sub: Vec<f64> = states.iter().map(|&i| h_bar[i]).collect();
    let (finite, infinite) = fast_to_slow(&sub);
    finite
        .into_iter()
        .chain(infinite)
        .map(|k| states[k])
        .collect()
}

/// The upper end of the widest gap between consecutive finite bounds of `states`.
fn largest_gap_threshold(h_bar: &[f64], states: &[usize]) -> Option<f64> {
    let mut h: Vec<f64> = states
        .iter()
        .map(|&i| h_bar[i])
        .filter(|x| x.is_finite())
        .collect();
    h.sort_by(f64::total_cmp);
    let (lower, upper) = h
        .windows(2)
        .map(|w| (w[0], w[1]))
        .filter(|(a, b)| b > a)
        .max_by(|x, y| (x.1 - x.0).total_cmp(&(y.1 - y.0)))?;
    debug_assert!(upper > lower);
    Some(upper)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_the_largest_gap_then_again_inside_the_fast_part() {
        // Gaps: 0.001→0.002 (0.001), 0.002→0.1 (0.098), 0.1→10 (9.9).
        let h = [10.0, 0.001, f64::INFINITY, 0.1, 0.002];
        let levels = propose(&h, None, 3);
        assert_eq!(levels.len(), 3);
        assert_eq!(levels[0].threshold, 10.0);
        assert_eq!(
            (levels[0].fast.clone(), levels[0].slow.clone()),
            (vec![1, 4, 3], vec![0, 2])
        );
        assert_eq!(levels[1].threshold, 0.1);
        assert_eq!(levels[1].fast, vec![1, 4]);
        assert_eq!(levels[2].threshold, 0.002);
        assert_eq!(levels[2].fast, vec![1]);
    }

    #[test]
    fn a_given_step_sets_the_first_threshold() {
        let h = [1.0, 0.5, 2.0];
        let levels = propose(&h, Some(1.5), 1);
        assert_eq!(levels[0].fast, vec![1, 0]);
        assert_eq!(levels[0].slow, vec![2]);
    }
}
