//! Weak partitioning (SPEC §2.1, §10): each subsystem of `Structure::subsystems` is stepped
//! with its own fixed-step method and Newton on its own states only, reading the other
//! subsystems' weak variables (`last(v)`) from exchange registers. After its step a subsystem
//! is evaluated at its new state, and the weak variables it computes are published:
//!
//! - Gauss–Seidel publishes them at once, so later subsystems in the same step read them;
//! - Jacobi publishes them only after every subsystem has stepped, so each reads the values
//!   of the previous step. The subsystems are then independent within a step, and run on two
//!   threads: the second steps its share on its own copy of the model. Each subsystem computes
//!   from the same registers whichever copy it runs on, so the results do not depend on it.
//!
//! Blocks outside every subsystem are inputs (they feed a subsystem; they depend on no state)
//! and run inside every subsystem's evaluation, or outputs, run once after all subsystems:
//! under Gauss–Seidel they read the values published in the step, under Jacobi those of the
//! previous step, as the subsystems do (SPEC §10: an integrator computes what it gives from
//! what it was given; a co-simulation master's FMUs do the same).

use std::collections::{BTreeSet, HashMap};
use std::ops::ControlFlow;

use crate::causal::{Causal, Point, leaf};
use crate::dae::Dae;
use crate::expr::{Node, VarId};
use crate::jacobian::OdeJacobian;
use crate::structure::{Structure, Unknown};

use super::fixed_step::{FixedStep, StepFailure};
use super::mixed::MixedStepper;
use super::model::{CompiledModel, Layout, Part};
use super::pair::Pair;
use super::run::{Exchange, Options, split_step};
use super::system::{OdeSystem, Stats};
use super::tape::{Groups, Reg, WeakReads};
use crate::partition::Partition;

/// A model compiled for weak subsystems stepped apart: weak reads exchanged, a part per
/// subsystem (its steps and the inputs' after the whole model), per subsystem and then for
/// the outputs the weak variables it publishes as `(register, exchange register)`, the output
/// steps, and per step its group (a subsystem, the inputs, the outputs).
pub struct WeakLayout {
    pub model: CompiledModel,
    pub exchanges: Vec<Vec<(Reg, Reg)>>,
    pub outputs: Vec<usize>,
    pub of_step: Vec<u32>,
}

/// Compiles the model with exchanged weak reads, loaded with `point`.
pub fn weak_layout(
    (dae, structure, causal, jac): (&Dae, &Structure, &Causal, &OdeJacobian),
    point: &Point,
) -> WeakLayout {
    let subsystems = structure.subsystems.len();
    let (inputs_group, outputs_group) = (subsystems as u32, subsystems as u32 + 1);
    let mut of_block = vec![outputs_group; structure.blocks.len()];
    for (s, sub) in structure.subsystems.iter().enumerate() {
        for &b in &sub.blocks {
            of_block[b] = s as u32;
        }
    }
    let mut of_step: Vec<u32> = causal.block_of_step.iter().map(|&b| of_block[b]).collect();
    for k in input_steps(dae, causal, &of_step, outputs_group) {
        of_step[k] = inputs_group;
    }
    let state_index: HashMap<VarId, usize> = causal
        .states
        .iter()
        .enumerate()
        .map(|(i, &v)| (v, i))
        .collect();
    let parts = (0..subsystems)
        .map(|s| {
            let steps = (0..causal.steps.len())
                .filter(|&k| of_step[k] == s as u32 || of_step[k] == inputs_group)
                .collect();
            let states: BTreeSet<usize> = structure.subsystems[s]
                .states
                .iter()
                .map(|v| state_index[v])
                .collect();
            (steps, states.into_iter().collect())
        })
        .collect();
    let layout = Layout {
        mode: WeakReads::Exchanged,
        groups: Groups {
            of_step: of_step.clone(),
            inputs: inputs_group,
        },
        parts,
        row_blocks: None,
    };
    let model = CompiledModel::new(dae, causal, jac, point, &layout);
    let exchanges = exchange_lists(dae, causal, &model, &of_step, &state_index, structure);
    let outputs = (0..causal.steps.len())
        .filter(|&k| of_step[k] == outputs_group)
        .collect();
    WeakLayout {
        model,
        exchanges,
        outputs,
        of_step,
    }
}

pub struct Partitioned {
    /// Holds every value after each step (what `run`'s `record` is given).
    pub model: CompiledModel,
    steppers: Vec<MixedStepper>,
    /// Output steps, run after every subsystem.
    outputs: Vec<usize>,
    /// Per subsystem, then for the outputs last: `(register, exchange register)` of the weak
    /// variables it computes.
    exchanges: Vec<Vec<(Reg, Reg)>>,
    exchange: Exchange,
    /// A Jacobi run's second thread, when it may have one.
    helper: Option<Helper>,
    /// Evaluations at each subsystem's new state to publish its weak values.
    exchange_evals: u64,
    steps: u64,
}

/// The second thread's share of a Jacobi step: the last subsystems, stepped on a copy of the
/// model (their registers are theirs alone within a step, but the evaluations' shared
/// scratch and the time register are not).
struct Helper {
    /// Its subsystems are those from `first` on.
    first: usize,
    model: CompiledModel,
    /// The registers its subsystems compute (their states, and the unknowns their own steps
    /// solve), copied into the main model after each step so that it holds every value.
    computed: Vec<Reg>,
    /// Every exchange register, copied from the main model after each publication.
    exchanged: Vec<Reg>,
}

impl Partitioned {
    /// Compiles the model with exchanged weak reads; `point` holds consistent initial values
    /// of every variable (they become the first exchanged values). Each subsystem steps with
    /// its share of the mixed partition `levels`, or with `options.method`. With `threads`, a Jacobi
    /// run steps its subsystems on two threads when the machine has two processors (the
    /// results are the same bit for bit).
    pub fn new(
        (dae, structure, causal, jac): (&Dae, &Structure, &Causal, &OdeJacobian),
        point: &Point,
        options: &Options,
        levels: Option<&Partition>,
        threads: bool,
    ) -> Partitioned {
        let subsystems = structure.subsystems.len();
        let WeakLayout {
            mut model,
            exchanges,
            outputs,
            of_step,
        } = weak_layout((dae, structure, causal, jac), point);
        for list in &exchanges {
            for &(reg, last) in list {
                let x = model.value(reg);
                model.set_value(last, x);
            }
        }
        let steppers = (0..subsystems)
            .map(|s| {
                let states = &model.parts[s + 1].states;
                let share = match levels {
                    Some(levels) => levels.restrict(states),
                    None => Partition::single(options.method, states.len()),
                };
                MixedStepper::new(share, options.tol, &model.part(s + 1))
            })
            .collect();
        let parallel = threads && options.exchange == Exchange::Jacobi && subsystems > 1;
        let helper = parallel.then(|| {
            let first = halfway(&model.parts[1..]);
            let solved = (0..causal.steps.len())
                .filter(|&k| (first..subsystems).contains(&(of_step[k] as usize)))
                .flat_map(|k| causal.steps[k].targets())
                .map(|u| model.unknown_reg(u));
            let states = model.parts[first + 1..]
                .iter()
                .flat_map(|part| &part.states)
                .map(|&i| model.tape.var_reg(causal.states[i]));
            Helper {
                first,
                computed: states.chain(solved).collect(),
                exchanged: exchanges.iter().flatten().map(|&(_, last)| last).collect(),
                model: model.clone(),
            }
        });
        Partitioned {
            model,
            steppers,
            outputs,
            exchanges,
            exchange: options.exchange,
            helper,
            exchange_evals: 0,
            steps: 0,
        }
    }

    /// One step of every subsystem from `t` to `t + h`, then of the outputs; `x` is the whole
    /// state in `Causal::states` order. With `pair`, a Jacobi step runs the helper's share on
    /// the pair's second thread.
    fn step(
        &mut self,
        t: f64,
        h: f64,
        x: &mut [f64],
        pair: Option<&Pair>,
    ) -> Result<(), StepFailure> {
        let subsystems = self.steppers.len();
        match self.exchange {
            Exchange::GaussSeidel => {
                for s in 0..subsystems {
                    advance(&mut self.model, &mut self.steppers[s], s, (t, h), x)?;
                    self.publish(s);
                }
            }
            Exchange::Jacobi => match pair.zip(self.helper.as_mut()) {
                Some((pair, helper)) => {
                    helper.step(pair, &mut self.model, &mut self.steppers, (t, h), x)?;
                }
                None => {
                    for s in 0..subsystems {
                        advance(&mut self.model, &mut self.steppers[s], s, (t, h), x)?;
                    }
                }
            },
        }
        self.exchange_evals += subsystems as u64;
        // Jacobi: the outputs too read the previous step's values (as a subsystem's own
        // outputs would, computed by its integrator from what it was given: SPEC §10).
        self.model
            .run_steps(&self.outputs)
            .map_err(|failure| StepFailure::Eval { failure, t: t + h })?;
        if self.exchange == Exchange::Jacobi {
            // Only now: no subsystem may read another's values of this step.
            for s in 0..subsystems {
                self.publish(s);
            }
        }
        self.publish(subsystems);
        if let (Some(_), Some(helper)) = (pair, &mut self.helper) {
            helper.model.copy_values(&self.model, &helper.exchanged);
        }
        self.steps += 1;
        Ok(())
    }

    fn publish(&mut self, list: usize) {
        for &(reg, last) in &self.exchanges[list] {
            let x = self.model.value(reg);
            self.model.set_value(last, x);
        }
    }

    /// Holds the relations with breakpoints at their values inside `(from, to)`, in every copy
    /// of the model.
    fn enter_interval(&mut self, from: f64, to: f64) {
        self.model.enter_interval(from, to);
        if let Some(helper) = &mut self.helper {
            helper.model.enter_interval(from, to);
        }
    }

    /// Steps every subsystem from `t` by `h`, ending a step at each breakpoint on the way (one
    /// thread: a Jacobi step's results are the same on one as on two).
    pub fn step_over(
        &mut self,
        breakpoints: &[f64],
        (t, h): (f64, f64),
        x: &mut [f64],
    ) -> Result<(), StepFailure> {
        for (a, b, step) in split_step(breakpoints, t, h) {
            self.enter_interval(a, b);
            self.step(a, step, x, None)?;
        }
        Ok(())
    }

    /// The exchanged weak values: what a step reads of the other subsystems besides `x`.
    pub fn exchanged(&self) -> Vec<f64> {
        (self.exchanges.iter().flatten())
            .map(|&(_, last)| self.model.value(last))
            .collect()
    }

    /// Sets the exchanged weak values back to `saved` ([`Partitioned::exchanged`]), to step
    /// again from where they were taken.
    pub fn set_exchanged(&mut self, saved: &[f64]) {
        let lasts: Vec<Reg> = (self.exchanges.iter().flatten())
            .map(|&(_, last)| last)
            .collect();
        for (&last, &x) in lasts.iter().zip(saved) {
            self.model.set_value(last, x);
        }
    }

    /// After an event at `t`: takes every value of `point` (the model evaluated as one system
    /// after the event: held values, states as re-initialised, the unknowns consistent with
    /// them) and publishes its weak values, so that the next step starts from values
    /// consistent at `t`, as the first does.
    pub fn resume(&mut self, point: &Point, t: f64) {
        self.model.load(point);
        self.model.enter_interval_from(t);
        for list in 0..self.exchanges.len() {
            self.publish(list);
        }
    }

    /// Integrates from `x0` over the options' grid, calling `record` after every step until it breaks (the
    /// model then holds the values at that time) and `progress` with the steps done.
    pub fn run(
        &mut self,
        options: &Options,
        x0: &[f64],
        mut record: impl FnMut(&CompiledModel, f64) -> ControlFlow<()>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), StepFailure> {
        let mut x = x0.to_vec();
        let breakpoints = self.model.breakpoints().to_vec();
        if record(&self.model, options.start).is_break() {
            return Ok(());
        }
        Pair::with(self.helper.is_some(), |pair| {
            let mut t = options.start;
            for k in 0..options.steps {
                let t_next = options.time(k + 1);
                for (a, b, step) in split_step(&breakpoints, t, options.step()) {
                    self.enter_interval(a, b);
                    self.step(a, step, &mut x, pair)?;
                }
                if record(&self.model, t_next).is_break() {
                    return Ok(());
                }
                progress(k + 1);
                t = t_next;
            }
            Ok(())
        })
    }

    /// The counters of all subsystems together; `steps` counts whole steps.
    pub fn stats(&self) -> Stats {
        let mut total = Stats::default();
        for s in &self.steppers {
            total.add_work(s.stats());
        }
        for s in &self.steppers {
            let levels = &s.stats().level_f_evals;
            total.level_f_evals.resize(levels.len(), 0);
            for (sum, &evals) in total.level_f_evals.iter_mut().zip(levels) {
                *sum += evals;
            }
        }
        total.f_evals += self.exchange_evals;
        total.steps = self.steps;
        total
    }

    pub fn sparse(&self) -> bool {
        self.steppers.iter().any(MixedStepper::sparse)
    }
}

impl Helper {
    /// Steps the subsystems before `first` on `model` on this thread and the others on the
    /// helper's copy on the pair's second thread; then copies their values into `model` and
    /// `x`.
    fn step(
        &mut self,
        pair: &Pair,
        model: &mut CompiledModel,
        steppers: &mut [MixedStepper],
        span: (f64, f64),
        x: &mut [f64],
    ) -> Result<(), StepFailure> {
        let (mine, theirs) = steppers.split_at_mut(self.first);
        let (first, copy) = (self.first, &mut self.model);
        let mut their_x = x.to_vec();
        let (a, b) = pair.join(
            || {
                (mine.iter_mut().enumerate())
                    .try_for_each(|(s, stepper)| advance(model, stepper, s, span, x))
            },
            || {
                (theirs.iter_mut().zip(first..))
                    .try_for_each(|(stepper, s)| advance(copy, stepper, s, span, &mut their_x))
            },
        );
        // The first failure in subsystem order, as stepping one after the other reports.
        a.and(b)?;
        model.copy_values(copy, &self.computed);
        for part in &copy.parts[first + 1..] {
            for &i in &part.states {
                x[i] = their_x[i];
            }
        }
        Ok(())
    }
}

/// Steps subsystem `s` on `model` over `span` = `(t, h)` and evaluates it at its new state, so
/// that the model holds the weak values it publishes; updates its states in `x`.
fn advance(
    model: &mut CompiledModel,
    stepper: &mut MixedStepper,
    s: usize,
    (t, h): (f64, f64),
    x: &mut [f64],
) -> Result<(), StepFailure> {
    let states = model.parts[s + 1].states.clone();
    let mut xs: Vec<f64> = states.iter().map(|&i| x[i]).collect();
    stepper.step(&mut model.part(s + 1), t, h, &mut xs)?;
    model
        .evaluate_part(s + 1, t + h, &xs, None)
        .map_err(|failure| StepFailure::Eval { failure, t: t + h })?;
    for (&i, &xi) in states.iter().zip(&xs) {
        x[i] = xi;
    }
    Ok(())
}

/// Where the second thread's share starts: about half of the states on each thread, at least
/// one subsystem on each (`parts`: the subsystems' parts).
fn halfway(parts: &[Part]) -> usize {
    let total: usize = parts.iter().map(|p| p.states.len()).sum();
    let mut before = 0;
    let half = parts.iter().position(|p| {
        before += p.states.len();
        2 * before >= total
    });
    half.map_or(1, |k| k + 1).clamp(1, parts.len() - 1)
}

/// Steps outside every subsystem that a subsystem reads (directly or through other such
/// steps); the rest of them are outputs.
fn input_steps(dae: &Dae, causal: &Causal, of_step: &[u32], outside: u32) -> Vec<usize> {
    let mut producer: HashMap<Node, usize> = HashMap::new();
    for (k, step) in causal.steps.iter().enumerate() {
        for u in step.targets() {
            producer.insert(leaf(u), k);
        }
    }
    let mut needed = vec![false; causal.steps.len()];
    for k in (0..causal.steps.len()).rev() {
        if of_step[k] == outside && !needed[k] {
            continue;
        }
        for &e in causal.steps[k].exprs() {
            dae.pool.visit_leaves(e, |n| {
                if let Some(&p) = producer.get(&n) {
                    needed[p] = true;
                }
            });
        }
    }
    (0..causal.steps.len())
        .filter(|&k| of_step[k] == outside && needed[k])
        .collect()
}

/// Per subsystem (and the outputs last): the weak variables it computes, as `(register,
/// exchange register)`. Inputs are recomputed by every subsystem; their weak values are
/// published by the first.
fn exchange_lists(
    dae: &Dae,
    causal: &Causal,
    model: &CompiledModel,
    of_step: &[u32],
    state_index: &HashMap<VarId, usize>,
    structure: &Structure,
) -> Vec<Vec<(Reg, Reg)>> {
    let subsystems = structure.subsystems.len();
    let mut weak_read: BTreeSet<VarId> = BTreeSet::new();
    for eq in &dae.equations {
        dae.pool.visit_leaves(eq.residual, |n| {
            if let Node::Last(v) = n {
                weak_read.insert(v);
            }
        });
    }
    let mut step_of: HashMap<VarId, usize> = HashMap::new();
    for (k, step) in causal.steps.iter().enumerate() {
        for u in step.targets() {
            if let Unknown::Algebraic(v) = u {
                step_of.insert(v, k);
            }
        }
    }
    let mut lists = vec![Vec::new(); subsystems + 1];
    for v in weak_read {
        let list = if let Some(&i) = state_index.get(&v) {
            let owner = structure
                .subsystems
                .iter()
                .position(|s| s.states.contains(&causal.states[i]));
            owner.unwrap_or(subsystems)
        } else if let Some(&k) = step_of.get(&v) {
            match of_step[k] as usize {
                g if g < subsystems => g,
                // Inputs are recomputed by every subsystem; the first publishes them.
                g if g == subsystems => 0,
                _ => subsystems,
            }
        } else {
            continue;
        };
        lists[list].push((model.tape.var_reg(v), model.tape.last_reg(v)));
    }
    lists
}
