//! The step of weak subsystems stepped apart (SPEC §2.1, §10): each subsystem is stepped with
//! its own fixed-step method and Newton on its own states only, reading the other subsystems'
//! weak variables (`last(v)`) from exchange registers. After its step a subsystem is
//! evaluated at its new state, and the weak variables it computes are published:
//!
//! - Gauss–Seidel publishes them at once, so later subsystems in the same step read them;
//! - Jacobi publishes them only after every subsystem has stepped, so each reads the values
//!   of the previous step. The subsystems are then independent within a step and may run on
//!   two threads: the second steps its share on its own copy of the model. Each subsystem
//!   computes from the same registers whichever copy it runs on, so the results do not
//!   depend on it.
//!
//! The outputs (blocks outside every subsystem that no subsystem reads) run once after all
//! subsystems, reading what the subsystems read: under Jacobi the previous step's values
//! (SPEC §10: an integrator computes what it gives from what it was given; a co-simulation
//! master's FMUs do the same).

use crate::pair::Pair;

/// A model split into weak subsystems, as [`WeakStepper`] steps it: `mocca simulate`'s
/// compiled tape, or an emitted crate's registers.
pub trait WeakModel {
    /// What steps one subsystem.
    type Stepper;
    type Failure;
    fn subsystems(&self) -> usize;
    /// The states (indices into the whole state) of subsystem `s`.
    fn states(&self, s: usize) -> &[usize];
    /// Steps subsystem `s` over `(t, h)` with `stepper` and evaluates it at its new state, so
    /// that the model holds the weak values it publishes; updates its states in `x`.
    fn advance(
        &mut self,
        stepper: &mut Self::Stepper,
        s: usize,
        span: (f64, f64),
        x: &mut [f64],
    ) -> Result<(), Self::Failure>;
    /// Copies the weak values of list `list` (subsystem `list`, or the outputs at
    /// [`WeakModel::subsystems`]) into their exchange registers.
    fn publish(&mut self, list: usize);
    /// Runs the output steps, at `t` (the end of the step).
    fn outputs(&mut self, t: f64) -> Result<(), Self::Failure>;
    /// Takes what `copy` computed stepping the subsystems from `first` on (their states'
    /// and unknowns' values, and its counters).
    fn take_computed(&mut self, copy: &mut Self, first: usize);
    /// Takes every exchange register's value from `main`.
    fn take_exchanged(&mut self, main: &Self);
}

/// Steps every weak subsystem of a [`WeakModel`], then the outputs.
pub struct WeakStepper<M: WeakModel> {
    /// Holds every value after each step.
    pub model: M,
    pub steppers: Vec<M::Stepper>,
    jacobi: bool,
    /// A Jacobi run's second share: its subsystems are those from `.0` on, stepped on the copy
    /// `.1` when a [`Pair`] is given.
    helper: Option<(usize, M)>,
    /// Steps taken, and evaluations at each subsystem's new state to publish its weak values.
    pub steps: u64,
    pub publications: u64,
}

impl<M: WeakModel + Send> WeakStepper<M>
where
    M::Stepper: Send,
    M::Failure: Send,
{
    /// Over `model`, one stepper per subsystem; `jacobi` or Gauss–Seidel; with `helper`, a
    /// Jacobi step given a pair steps the subsystems from `helper.0` on (see [`second_share`])
    /// on the copy `helper.1`.
    pub fn new(
        model: M,
        steppers: Vec<M::Stepper>,
        jacobi: bool,
        helper: Option<(usize, M)>,
    ) -> Self {
        let helper = helper.filter(|_| jacobi && model.subsystems() > 1);
        WeakStepper {
            model,
            steppers,
            jacobi,
            helper,
            steps: 0,
            publications: 0,
        }
    }

    /// Whether a pair would be used.
    pub fn threaded(&self) -> bool {
        self.helper.is_some()
    }

    /// The model and its copy, for what both must hold (breakpoints' intervals, the values
    /// after an event).
    pub fn each_copy(&mut self) -> impl Iterator<Item = &mut M> {
        std::iter::once(&mut self.model).chain(self.helper.as_mut().map(|(_, copy)| copy))
    }

    /// One step of every subsystem from `t` to `t + h`, then of the outputs; `x` is the whole
    /// state. With `pair`, a Jacobi step runs the copy's share on the pair's second thread.
    pub fn step(
        &mut self,
        (t, h): (f64, f64),
        x: &mut [f64],
        pair: Option<&Pair>,
    ) -> Result<(), M::Failure> {
        let subsystems = self.model.subsystems();
        match (pair, &mut self.helper) {
            (Some(pair), Some((first, copy))) => {
                let first = *first;
                let (mine, theirs) = self.steppers.split_at_mut(first);
                let mut their_x = x.to_vec();
                let model = &mut self.model;
                let (a, b) = pair.join(
                    || advance_all(model, mine, 0, (t, h), x, false),
                    || advance_all(copy, theirs, first, (t, h), &mut their_x, false),
                );
                // The first failure in subsystem order, as stepping one after the other reports.
                a.and(b)?;
                self.model.take_computed(copy, first);
                for s in first..subsystems {
                    for &i in copy.states(s) {
                        x[i] = their_x[i];
                    }
                }
            }
            _ => advance_all(
                &mut self.model,
                &mut self.steppers,
                0,
                (t, h),
                x,
                !self.jacobi,
            )?,
        }
        self.publications += subsystems as u64;
        self.model.outputs(t + h)?;
        if self.jacobi {
            // Only now: no subsystem may read another's values of this step.
            (0..subsystems).for_each(|s| self.model.publish(s));
        }
        self.model.publish(subsystems);
        if let Some((_, copy)) = &mut self.helper {
            copy.take_exchanged(&self.model);
        }
        self.steps += 1;
        Ok(())
    }
}

/// Steps `steppers` (the subsystems from `first` on) one after the other, each publishing at
/// once when `publish` (Gauss–Seidel).
fn advance_all<M: WeakModel>(
    model: &mut M,
    steppers: &mut [M::Stepper],
    first: usize,
    span: (f64, f64),
    x: &mut [f64],
    publish: bool,
) -> Result<(), M::Failure> {
    for (stepper, s) in steppers.iter_mut().zip(first..) {
        model.advance(stepper, s, span, x)?;
        if publish {
            model.publish(s);
        }
    }
    Ok(())
}

/// Where a Jacobi step's second share starts: about half of the states on each thread, at
/// least one subsystem on each (of a model with two or more).
pub fn second_share<M: WeakModel>(model: &M) -> usize {
    let count = model.subsystems();
    let total: usize = (0..count).map(|s| model.states(s).len()).sum();
    let mut before = 0;
    let half = (0..count).position(|s| {
        before += model.states(s).len();
        2 * before >= total
    });
    half.map_or(1, |k| k + 1).clamp(1, count - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Subsystem `s` holds state `s` and steps `x_s ← x_s + h·(last of the other)`: two
    /// scalar subsystems coupled through their published values.
    #[derive(Clone, Default)]
    struct Two {
        x: [f64; 2],
        exchanged: [f64; 2],
        outputs: u32,
        taken: u32,
    }

    const STATES: [[usize; 1]; 2] = [[0], [1]];

    impl WeakModel for Two {
        type Stepper = ();
        type Failure = ();
        fn subsystems(&self) -> usize {
            2
        }
        fn states(&self, s: usize) -> &[usize] {
            &STATES[s]
        }
        fn advance(
            &mut self,
            _: &mut (),
            s: usize,
            (_, h): (f64, f64),
            x: &mut [f64],
        ) -> Result<(), ()> {
            x[s] += h * self.exchanged[1 - s];
            self.x[s] = x[s];
            Ok(())
        }
        fn publish(&mut self, list: usize) {
            if list < 2 {
                self.exchanged[list] = self.x[list];
            }
        }
        fn outputs(&mut self, _: f64) -> Result<(), ()> {
            self.outputs += 1;
            Ok(())
        }
        fn take_computed(&mut self, copy: &mut Self, first: usize) {
            self.x[first..].copy_from_slice(&copy.x[first..]);
            self.taken += 1;
        }
        fn take_exchanged(&mut self, main: &Self) {
            self.exchanged = main.exchanged;
        }
    }

    fn two(x: [f64; 2]) -> Two {
        Two {
            x,
            exchanged: x,
            ..Two::default()
        }
    }

    #[test]
    fn gauss_seidel_reads_the_values_published_in_the_same_step() {
        let mut stepper = WeakStepper::new(two([1.0, 2.0]), vec![(), ()], false, None);
        let mut x = [1.0, 2.0];
        stepper.step((0.0, 0.5), &mut x, None).unwrap();
        // x0 = 1 + 0.5·2 = 2, then x1 = 2 + 0.5·2 (x0's new value).
        assert_eq!(x, [2.0, 3.0]);
        assert_eq!(
            (stepper.steps, stepper.publications, stepper.model.outputs),
            (1, 2, 1)
        );
    }

    #[test]
    fn jacobi_reads_the_previous_step_on_one_thread_or_two() {
        let run = |pair: Option<&Pair>| {
            let main = two([1.0, 2.0]);
            let helper = Some((second_share(&main), main.clone()));
            let mut stepper = WeakStepper::new(main, vec![(), ()], true, helper);
            assert!(stepper.threaded());
            let mut x = [1.0, 2.0];
            stepper.step((0.0, 0.5), &mut x, pair).unwrap();
            // x0 = 1 + 0.5·2, x1 = 2 + 0.5·1: both from the step's start.
            assert_eq!(x, [2.0, 2.5]);
            stepper.step((0.5, 0.5), &mut x, pair).unwrap();
            assert_eq!(x, [3.25, 3.5]);
            assert_eq!(stepper.model.exchanged, [3.25, 3.5]);
            stepper.model.taken
        };
        assert_eq!(run(None), 0);
        Pair::with(true, |pair| {
            let threaded = pair.is_some();
            assert_eq!(run(pair), if threaded { 2 } else { 0 });
        });
    }
}
