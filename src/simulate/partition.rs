//! Weak partitioning (SPEC §2.1, §10): each subsystem of `Structure::subsystems` stepped
//! with its own fixed-step method and Newton on its own states only, reading the other
//! subsystems' weak variables (`last(v)`) from exchange registers, by the runtime's
//! [`WeakStepper`] (the one emitted crates run; its module says how Gauss–Seidel and Jacobi
//! publish). Here the model is compiled for it: a part per subsystem, its exchange lists.
//!
//! Blocks outside every subsystem are inputs (they feed a subsystem; they depend on no state)
//! and run inside every subsystem's evaluation, or outputs, run once after all subsystems.

use std::collections::{BTreeSet, HashMap};
use std::ops::ControlFlow;

use crate::causal::{Causal, Point, leaf};
use crate::dae::Dae;
use crate::expr::{Node, VarId};
use crate::jacobian::OdeJacobian;
use crate::structure::{Structure, Unknown};

use super::fixed_step::{FixedStep, StepFailure};
use super::mixed::MixedStepper;
use super::model::{CompiledModel, Layout};
use super::pair::Pair;
use super::run::{Exchange, Options};
use super::system::{OdeSystem, Stats};
use super::tape::{Groups, Reg, WeakReads};
use crate::partition::Partition;
use mocca_runtime::grid::split_step;
use mocca_runtime::weak::{self, WeakModel, WeakStepper};

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
    split: WeakStepper<Subsystems>,
    exchange: Exchange,
}

/// The compiled model as the runtime's [`WeakStepper`] steps it; a copy for a Jacobi run's
/// second thread knows what its subsystems compute.
#[derive(Clone)]
struct Subsystems {
    /// Holds every value after each step (what `run`'s `record` is given).
    model: CompiledModel,
    /// Output steps, run after every subsystem.
    outputs: Vec<usize>,
    /// Per subsystem, then for the outputs last: `(register, exchange register)` of the weak
    /// variables it computes.
    exchanges: Vec<Vec<(Reg, Reg)>>,
    /// Of the second thread's copy: the registers its subsystems compute (their states, and
    /// the unknowns their own steps solve), copied into the main model after each step so
    /// that it holds every value.
    computed: Vec<Reg>,
}

impl WeakModel for Subsystems {
    type Stepper = MixedStepper;
    type Failure = StepFailure;

    fn subsystems(&self) -> usize {
        self.model.parts.len() - 1
    }

    fn states(&self, s: usize) -> &[usize] {
        &self.model.parts[s + 1].states
    }

    fn advance(
        &mut self,
        stepper: &mut MixedStepper,
        s: usize,
        (t, h): (f64, f64),
        x: &mut [f64],
    ) -> Result<(), StepFailure> {
        let model = &mut self.model;
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

    fn publish(&mut self, list: usize) {
        for &(reg, last) in &self.exchanges[list] {
            let x = self.model.value(reg);
            self.model.set_value(last, x);
        }
    }

    fn outputs(&mut self, t: f64) -> Result<(), StepFailure> {
        (self.model)
            .run_steps(&self.outputs)
            .map_err(|failure| StepFailure::Eval { failure, t })
    }

    fn take_computed(&mut self, copy: &mut Subsystems, _first: usize) {
        self.model.copy_values(&copy.model, &copy.computed);
    }

    fn take_exchanged(&mut self, main: &Subsystems) {
        let lasts: Vec<Reg> = main.exchanged_registers().collect();
        self.model.copy_values(&main.model, &lasts);
    }
}

impl Subsystems {
    fn exchanged_registers(&self) -> impl Iterator<Item = Reg> + '_ {
        self.exchanges.iter().flatten().map(|&(_, last)| last)
    }
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
        let jacobi = options.exchange == Exchange::Jacobi;
        let main = Subsystems {
            model,
            outputs,
            exchanges,
            computed: Vec::new(),
        };
        let helper = (threads && jacobi && subsystems > 1).then(|| {
            let mut copy = main.clone();
            let first = weak::second_share(&main);
            let solved = (0..causal.steps.len())
                .filter(|&k| (first..subsystems).contains(&(of_step[k] as usize)))
                .flat_map(|k| causal.steps[k].targets())
                .map(|u| main.model.unknown_reg(u));
            let states = main.model.parts[first + 1..]
                .iter()
                .flat_map(|part| &part.states)
                .map(|&i| main.model.tape.var_reg(causal.states[i]));
            copy.computed = states.chain(solved).collect();
            (first, copy)
        });
        Partitioned {
            split: WeakStepper::new(main, steppers, jacobi, helper),
            exchange: options.exchange,
        }
    }

    /// The model, holding every value after each step.
    pub fn model(&self) -> &CompiledModel {
        &self.split.model.model
    }

    /// Holds the relations with breakpoints at their values inside `(from, to)`, in every copy
    /// of the model.
    fn enter_interval(&mut self, from: f64, to: f64) {
        for copy in self.split.each_copy() {
            copy.model.enter_interval(from, to);
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
            self.split.step((a, step), x, None)?;
        }
        Ok(())
    }

    /// The exchanged weak values: what a step reads of the other subsystems besides `x`.
    pub fn exchanged(&self) -> Vec<f64> {
        let main = &self.split.model;
        main.exchanged_registers()
            .map(|last| main.model.value(last))
            .collect()
    }

    /// Sets the exchanged weak values back to `saved` ([`Partitioned::exchanged`]), to step
    /// again from where they were taken.
    pub fn set_exchanged(&mut self, saved: &[f64]) {
        let main = &mut self.split.model;
        let lasts: Vec<Reg> = main.exchanged_registers().collect();
        for (&last, &x) in lasts.iter().zip(saved) {
            main.model.set_value(last, x);
        }
    }

    /// After an event at `t`: takes every value of `point` (the model evaluated as one system
    /// after the event: held values, states as re-initialised, the unknowns consistent with
    /// them) and publishes its weak values, so that the next step starts from values
    /// consistent at `t`, as the first does. (A run with events steps on one thread.)
    pub fn resume(&mut self, point: &Point, t: f64) {
        let main = &mut self.split.model;
        main.model.load(point);
        main.model.enter_interval_from(t);
        for list in 0..main.exchanges.len() {
            main.publish(list);
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
        let breakpoints = self.model().breakpoints().to_vec();
        if record(self.model(), options.start).is_break() {
            return Ok(());
        }
        let threaded = self.split.threaded() && self.exchange == Exchange::Jacobi;
        Pair::with(threaded, |pair| {
            let mut t = options.start;
            for k in 0..options.steps {
                let t_next = options.time(k + 1);
                for (a, b, step) in split_step(&breakpoints, t, options.step()) {
                    self.enter_interval(a, b);
                    self.split.step((a, step), &mut x, pair)?;
                }
                if record(self.model(), t_next).is_break() {
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
        for s in &self.split.steppers {
            total.add_work(s.stats());
        }
        for s in &self.split.steppers {
            let levels = &s.stats().level_f_evals;
            total.level_f_evals.resize(levels.len(), 0);
            for (sum, &evals) in total.level_f_evals.iter_mut().zip(levels) {
                *sum += evals;
            }
        }
        total.f_evals += self.split.publications;
        total.steps = self.split.steps;
        total
    }

    pub fn sparse(&self) -> bool {
        self.split.steppers.iter().any(MixedStepper::sparse)
    }
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
