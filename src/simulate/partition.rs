//! Weak partitioning (SPEC §2.1, §10): each subsystem of `Structure::subsystems` is stepped
//! with its own fixed-step method and Newton on its own states only, reading the other
//! subsystems' weak variables (`last(v)`) from exchange registers. Subsystems go one after the
//! other (Gauss–Seidel): after a subsystem's step it is evaluated at its new state and the weak
//! variables it computes are published, so later subsystems in the same step read them.
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

use super::fixed_step::{FixedStep, StepFailure, Stepper};
use super::model::{CompiledModel, Layout};
use super::run::{Options, split_step};
use super::system::{OdeSystem, Stats};
use super::tape::{Groups, Reg, WeakReads};

pub struct Partitioned {
    pub model: CompiledModel,
    steppers: Vec<Stepper>,
    /// Output steps, run after every subsystem.
    outputs: Vec<usize>,
    /// Per subsystem, then for the outputs last: `(register, exchange register)` of the weak
    /// variables it computes.
    exchanges: Vec<Vec<(Reg, Reg)>>,
    /// Evaluations at each subsystem's new state to publish its weak values.
    exchange_evals: u64,
    steps: u64,
}

impl Partitioned {
    /// Compiles the model with exchanged weak reads; `point` holds consistent initial values
    /// of every variable (they become the first exchanged values).
    pub fn new(
        dae: &Dae,
        structure: &Structure,
        causal: &Causal,
        jac: &OdeJacobian,
        point: &Point,
        options: &Options,
    ) -> Partitioned {
        let subsystems = structure.subsystems.len();
        let (inputs_group, outputs_group) = (subsystems as u32, subsystems as u32 + 1);
        let mut of_step = vec![outputs_group; causal.steps.len()];
        for (s, sub) in structure.subsystems.iter().enumerate() {
            for &b in &sub.blocks {
                of_step[b] = s as u32;
            }
        }
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
        };
        let mut model = CompiledModel::new(dae, causal, jac, point, &layout);
        let exchanges = exchange_lists(dae, causal, &model, &of_step, &state_index, structure);
        for list in &exchanges {
            for &(reg, last) in list {
                let x = model.value(reg);
                model.set_value(last, x);
            }
        }
        let steppers = (0..subsystems)
            .map(|s| Stepper::new(options.method, options.tol, &model.part(s + 1)))
            .collect();
        let outputs = (0..causal.steps.len())
            .filter(|&k| of_step[k] == outputs_group)
            .collect();
        Partitioned {
            model,
            steppers,
            outputs,
            exchanges,
            exchange_evals: 0,
            steps: 0,
        }
    }

    /// One Gauss–Seidel step of every subsystem from `t` to `t + h`; `x` is the whole state in
    /// `Causal::states` order.
    pub fn step(&mut self, t: f64, h: f64, x: &mut [f64]) -> Result<(), StepFailure> {
        for s in 0..self.steppers.len() {
            let states = self.model.parts[s + 1].states.clone();
            let mut xs: Vec<f64> = states.iter().map(|&i| x[i]).collect();
            self.steppers[s].step(&mut self.model.part(s + 1), t, h, &mut xs)?;
            self.exchange_evals += 1;
            self.model
                .evaluate_part(s + 1, t + h, &xs, None)
                .map_err(|failure| StepFailure::Eval { failure, t: t + h })?;
            for (&i, &xi) in states.iter().zip(&xs) {
                x[i] = xi;
            }
            self.publish(s);
        }
        self.model
            .run_steps(&self.outputs)
            .map_err(|failure| StepFailure::Eval { failure, t: t + h })?;
        self.publish(self.steppers.len());
        self.steps += 1;
        Ok(())
    }

    fn publish(&mut self, list: usize) {
        for &(reg, last) in &self.exchanges[list] {
            let x = self.model.value(reg);
            self.model.set_value(last, x);
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
        let mut t = options.start;
        for k in 0..options.steps {
            let t_next = options.time(k + 1);
            for (a, b, step) in split_step(&breakpoints, t, options.step()) {
                self.model.enter_interval(a, b);
                self.step(a, step, &mut x)?;
            }
            if record(&self.model, t_next).is_break() {
                return Ok(());
            }
            progress(k + 1);
            t = t_next;
        }
        Ok(())
    }

    /// The counters of all subsystems together; `steps` counts whole steps.
    pub fn stats(&self) -> Stats {
        let mut total = Stats::default();
        for s in &self.steppers {
            total.f_evals += s.stats().f_evals;
            total.jac_evals += s.stats().jac_evals;
            total.f_evals_in_jacobians += s.stats().f_evals_in_jacobians;
            total.newton_iters += s.stats().newton_iters;
            total.factorizations += s.stats().factorizations;
        }
        total.f_evals += self.exchange_evals;
        total.steps = self.steps;
        total
    }

    pub fn sparse(&self) -> bool {
        self.steppers.iter().any(Stepper::sparse)
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
