//! Mixed-mode and multirate integration (SPEC §10) of a [`Partition`]: the runtime's
//! [`mocca_runtime::mixed::MixedStepper`] (the one emitted crates run) over an
//! [`OdeSystem`], its levels the partition's, counting into [`Stats`].

use mocca_runtime::mixed::{self as shared, LevelPlan};

use super::fixed_step::{Counted, FixedStep, StepFailure, is_sparse, stage_newton};
use super::linear::NewtonMatrix;
use super::system::{OdeSystem, Stats};
use crate::partition::{Interpolation, Partition};

/// Steps a [`Partition`] with a fixed step and keeps the counters; the Jacobian evaluations,
/// LU factorizations and Newton iterations are those of the fast level.
pub struct MixedStepper {
    partition: Partition,
    stepper: shared::MixedStepper<NewtonMatrix>,
    stats: Stats,
}

impl MixedStepper {
    pub fn new(partition: Partition, tol: f64, system: &dyn OdeSystem) -> MixedStepper {
        let n = system.dim();
        let levels: Vec<LevelPlan> = (partition.levels().iter().enumerate())
            .map(|(k, level)| {
                let apart = !level.states.is_empty() && level.states.len() < n;
                LevelPlan {
                    states: level.states.clone(),
                    method: partition.method_of(k),
                    rate: level.rate,
                    rows: apart.then(|| system.rows_block(&level.states)).flatten(),
                }
            })
            .collect();
        let fast = partition.fast().to_vec();
        let newton = (!fast.is_empty()).then(|| stage_newton(system, fast));
        let linear = partition.interpolation == Interpolation::Linear;
        let stats = Stats {
            level_f_evals: vec![0; levels.len()],
            ..Stats::default()
        };
        MixedStepper {
            stepper: shared::MixedStepper::new(n, &levels, linear, tol, newton),
            partition,
            stats,
        }
    }

    pub fn partition(&self) -> &Partition {
        &self.partition
    }
}

impl FixedStep for MixedStepper {
    fn step(
        &mut self,
        system: &mut dyn OdeSystem,
        t: f64,
        h: f64,
        x: &mut [f64],
    ) -> Result<(), StepFailure> {
        let stats = &mut self.stats;
        self.stepper.step(&mut Counted { system, stats }, t, h, x)
    }

    fn stats(&self) -> &Stats {
        &self.stats
    }

    fn sparse(&self) -> bool {
        is_sparse(&self.stepper.work)
    }
}
