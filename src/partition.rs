//! The one description of a model integrated in parts (SPEC §10): which states, which method,
//! which rate. `simulate` steps it; the emitted solver and FMI export are to be generated from
//! the same description.
//!
//! The states fall into levels, slowest first. Every level but the last steps with the
//! explicit method of a [`MixedMethod`], the last (the fast part) with its implicit method and
//! Newton on that level's states only. Level `k` takes `rate` steps per step of the whole
//! partition (`H = --step`); each level's rate divides the next one's, and a level reads the
//! slower levels, which have already stepped, through an [`Interpolation`] over their step.

use crate::simulate::fixed_step::Method;

/// A pair of methods: explicit on the slow levels, implicit on the fast one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MixedMethod {
    /// Explicit Euler / implicit Euler (order 1).
    Euler,
    /// Explicit midpoint / implicit midpoint.
    Midpoint,
    /// Heun / trapezoidal, Lobatto IIIA.
    Trapezoidal,
}

impl MixedMethod {
    pub const ALL: [MixedMethod; 3] = [
        MixedMethod::Euler,
        MixedMethod::Midpoint,
        MixedMethod::Trapezoidal,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MixedMethod::Euler => "mixed-euler",
            MixedMethod::Midpoint => "mixed-midpoint",
            MixedMethod::Trapezoidal => "mixed-trapezoidal",
        }
    }

    /// The explicit method of the slow levels.
    pub fn slow(self) -> Method {
        match self {
            MixedMethod::Euler => Method::ExplicitEuler,
            MixedMethod::Midpoint => Method::ExplicitMidpoint,
            MixedMethod::Trapezoidal => Method::Heun,
        }
    }

    /// The classical order of accuracy when no slow state reads a fast one (SPEC §10).
    pub fn order(self) -> u32 {
        self.fast().order()
    }

    /// The implicit method of the fast level.
    pub fn fast(self) -> Method {
        match self {
            MixedMethod::Euler => Method::ImplicitEuler,
            MixedMethod::Midpoint => Method::ImplicitMidpoint,
            MixedMethod::Trapezoidal => Method::Trapezoidal,
        }
    }
}

/// How a level sees the slower levels' states between the start and the end of their step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Interpolation {
    /// Their new value (the end of their step), held over the faster level's substeps.
    Hold,
    /// The straight line from their old to their new value. With one substep this is exactly
    /// what each single-rate mixed method reads (the new value, or the midpoint).
    #[default]
    Linear,
}

impl Interpolation {
    pub fn name(self) -> &'static str {
        match self {
            Interpolation::Hold => "hold",
            Interpolation::Linear => "linear",
        }
    }
}

/// One level: its states (ascending indices into the model's states) and its steps per step of
/// the partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Level {
    pub states: Vec<usize>,
    pub rate: u64,
}

/// A level with its method, as the outputs list it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part<'a> {
    pub states: &'a [usize],
    pub method: Method,
    pub rate: u64,
}

/// The states of a model in levels, slowest first, with their methods and rates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    pub method: MixedMethod,
    /// Slowest first; the last is the fast (implicit) level. Every state is in exactly one.
    levels: Vec<Level>,
    pub interpolation: Interpolation,
}

impl Partition {
    /// Of `n` states, `fast` (indices below `n`, in any order, repeats allowed) step
    /// implicitly `rate` times per step, the others explicitly once.
    pub fn two_level(
        method: MixedMethod,
        n: usize,
        fast: impl IntoIterator<Item = usize>,
        rate: u64,
    ) -> Partition {
        let mut level = vec![0; n];
        for i in fast {
            level[i] = 1;
        }
        Partition::from_levels(method, &level, rate)
    }

    /// Levels from the step bounds `h_bar` of cycle analysis (SPEC §8) and the step `step`:
    /// with `levels` = L, a state with `h̄ ≥ step` is slow (level 0); level `k` of `1..L` holds
    /// the states with `step/rate^k ≤ h̄ < step/rate^(k−1)`, stepped explicitly at
    /// `step/rate^k` where they are stable; the states with `h̄ < step/rate^(L−1)` are the
    /// fast level L, stepped implicitly at `step/rate^L`.
    pub fn from_bounds(
        method: MixedMethod,
        h_bar: &[f64],
        step: f64,
        levels: usize,
        rate: u64,
    ) -> Partition {
        let level: Vec<usize> = h_bar
            .iter()
            .map(|&h| {
                let mut threshold = step;
                for k in 0..levels {
                    if h >= threshold {
                        return k;
                    }
                    threshold /= rate as f64;
                }
                levels
            })
            .collect();
        let mut partition = Partition::from_levels(method, &level, rate);
        // Empty explicit levels in between are kept: the rates stay powers of `rate`.
        partition.levels.resize_with(levels + 1, || Level {
            states: Vec::new(),
            rate: 0,
        });
        for (k, l) in partition.levels.iter_mut().enumerate() {
            l.rate = rate.pow(k as u32);
        }
        partition
    }

    /// `level[i]` is state i's level; level k steps `rate^k` times per step (two levels at
    /// least: the fast level is the last, possibly empty).
    fn from_levels(method: MixedMethod, level: &[usize], rate: u64) -> Partition {
        let count = level.iter().max().map_or(2, |&m| (m + 1).max(2));
        let levels = (0..count)
            .map(|k| Level {
                states: (0..level.len()).filter(|&i| level[i] == k).collect(),
                rate: rate.pow(k as u32),
            })
            .collect();
        Partition {
            method,
            levels,
            interpolation: Interpolation::default(),
        }
    }

    /// The same partition with the states `moved` (indices into the model's states) in the
    /// fast, implicit level.
    pub fn with_fast(&self, moved: &[usize]) -> Partition {
        let mut partition = self.clone();
        let last = partition.levels.len() - 1;
        for level in &mut partition.levels[..last] {
            level.states.retain(|i| !moved.contains(i));
        }
        let fast = &mut partition.levels[last].states;
        fast.extend(moved);
        fast.sort_unstable();
        fast.dedup();
        partition
    }

    /// Every one of `n` states stepped by `method` alone: explicit methods make the slow level,
    /// implicit ones the fast level.
    pub fn single(method: Method, n: usize) -> Partition {
        let pair = MixedMethod::ALL
            .into_iter()
            .find(|m| m.slow() == method || m.fast() == method)
            .expect("every fixed-step method is half of a mixed pair");
        let level = if method.is_implicit() { 1 } else { 0 };
        Partition::from_levels(pair, &vec![level; n], 1)
    }

    /// The partition of the states `states` (ascending) alone, renumbered `0..states.len()`:
    /// a weak subsystem's share, with the same levels, methods and rates.
    pub fn restrict(&self, states: &[usize]) -> Partition {
        let levels = self
            .levels
            .iter()
            .map(|l| Level {
                states: (0..states.len())
                    .filter(|&k| l.states.binary_search(&states[k]).is_ok())
                    .collect(),
                rate: l.rate,
            })
            .collect();
        Partition {
            method: self.method,
            levels,
            interpolation: self.interpolation,
        }
    }

    pub fn with_interpolation(mut self, interpolation: Interpolation) -> Partition {
        self.interpolation = interpolation;
        self
    }

    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// The implicit (last) level's states.
    pub fn fast(&self) -> &[usize] {
        &self.levels[self.levels.len() - 1].states
    }

    /// The method of level `k`: explicit but for the last.
    pub fn method_of(&self, k: usize) -> Method {
        if k + 1 == self.levels.len() {
            self.method.fast()
        } else {
            self.method.slow()
        }
    }

    /// Every level with its method, fast (implicit) first, then slower and slower.
    pub fn parts(&self) -> Vec<Part<'_>> {
        (0..self.levels.len())
            .rev()
            .map(|k| Part {
                states: &self.levels[k].states,
                method: self.method_of(k),
                rate: self.levels[k].rate,
            })
            .collect()
    }

    /// The largest rate (steps of the fast level per step of the partition).
    pub fn finest_rate(&self) -> u64 {
        self.levels.last().map_or(1, |l| l.rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_give_levels_at_the_step_over_powers_of_the_rate() {
        // step 1, rate 10, 2 levels: slow h̄ ≥ 1, middle 0.1 ≤ h̄ < 1, fast h̄ < 0.1.
        let h = [5.0, 0.5, 0.01, f64::INFINITY, 0.1, 0.099];
        let p = Partition::from_bounds(MixedMethod::Euler, &h, 1.0, 2, 10);
        let states: Vec<&[usize]> = p.levels().iter().map(|l| &l.states[..]).collect();
        assert_eq!(states, [&[0, 3][..], &[1, 4], &[2, 5]]);
        let rates: Vec<u64> = p.levels().iter().map(|l| l.rate).collect();
        assert_eq!(rates, [1, 10, 100]);
        assert_eq!(p.method_of(1), Method::ExplicitEuler);
        assert_eq!(p.method_of(2), Method::ImplicitEuler);
    }

    #[test]
    fn a_subsystems_share_keeps_its_levels_renumbered() {
        let p = Partition::two_level(MixedMethod::Trapezoidal, 6, [1, 4, 5], 3);
        let share = p.restrict(&[2, 4, 5]);
        assert_eq!(share.levels()[0].states, [0]);
        assert_eq!(share.fast(), [1, 2]);
        assert_eq!(share.finest_rate(), 3);
        let single = Partition::single(Method::Heun, 2);
        assert_eq!(single.levels()[0].states, [0, 1]);
        assert_eq!(single.method_of(0), Method::Heun);
        let single = Partition::single(Method::ImplicitMidpoint, 2);
        assert_eq!(single.fast(), [0, 1]);
        assert_eq!(single.method_of(1), Method::ImplicitMidpoint);
    }

    #[test]
    fn nothing_fast_keeps_an_empty_fast_level() {
        let p = Partition::from_bounds(MixedMethod::Midpoint, &[2.0, 3.0], 1.0, 1, 1);
        assert_eq!(p.levels().len(), 2);
        assert!(p.fast().is_empty());
        let p = Partition::two_level(MixedMethod::Euler, 3, [2, 2], 4);
        assert_eq!(p.levels()[0].states, [0, 1]);
        assert_eq!(p.fast(), [2]);
        assert_eq!(p.finest_rate(), 4);
    }
}
