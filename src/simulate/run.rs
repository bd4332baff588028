//! One simulation from a causal model: compile, initialise, integrate with a fixed step (as one
//! system or weak subsystem by subsystem) or with the variable-step BDF, record the chosen
//! variables.

use crate::causal::{Causal, Point};
use crate::dae::Dae;
use crate::jacobian::OdeJacobian;
use crate::structure::{Structure, Unknown};

use super::bdf::{BdfError, BdfOptions, integrate_bdf};
use super::fixed_step::{Method, StepFailure, Stepper};
use super::init::{InitFailure, initialise};
use super::model::{CompiledModel, Layout};
use super::partition::Partitioned;
use super::system::{OdeSystem, Stats};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partition {
    /// The model as one system (weak reads see the values being computed).
    None,
    /// Each weak subsystem stepped on its own, Gauss–Seidel (SPEC §2.1, §10).
    Weak,
}

#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub method: Method,
    pub start: f64,
    pub stop: f64,
    pub steps: u64,
    /// Newton tolerance of the implicit stages.
    pub tol: f64,
    pub partition: Partition,
}

/// What a run produced: the time grid, one column per recorded unknown, and the counters.
#[derive(Clone, Debug)]
pub struct Trajectory {
    pub times: Vec<f64>,
    pub columns: Vec<Vec<f64>>,
    pub stats: Stats,
    /// Newton iterations spent on the initial system.
    pub init_iterations: u64,
    /// Whether the implicit stages used the sparse LU.
    pub sparse: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    Init(InitFailure),
    Step(StepFailure),
    Bdf(BdfError),
}

/// The stages a simulation starts from.
#[derive(Clone, Copy)]
pub struct Model<'a> {
    pub dae: &'a Dae,
    pub structure: &'a Structure,
    pub causal: &'a Causal,
    pub jac: &'a OdeJacobian,
}

/// Simulates and records `outputs` (states or any other unknown) at every step; `progress`
/// is told the number of steps done.
pub fn simulate(
    m: Model<'_>,
    start: &Point,
    options: &Options,
    outputs: &[Unknown],
    mut progress: impl FnMut(u64),
) -> Result<Trajectory, Failure> {
    let Model {
        dae,
        structure,
        causal,
        jac,
    } = m;
    let mut model = CompiledModel::new(dae, causal, jac, start, &Layout::whole(causal));
    let (mut x, init_iterations) =
        initialise(dae, causal, &mut model, options.start).map_err(Failure::Init)?;
    let capacity = options.steps as usize + 1;
    let mut trajectory = Trajectory {
        times: Vec::with_capacity(capacity),
        columns: vec![Vec::with_capacity(capacity); outputs.len()],
        stats: Stats::default(),
        init_iterations,
        sparse: false,
    };
    let sources: Vec<Source> = outputs.iter().map(|&u| source(causal, &model, u)).collect();
    let only_states = sources.iter().all(|s| matches!(s, Source::State(_)));
    match options.partition {
        Partition::None => {
            let mut stepper = Stepper::new(options.method, options.tol, &model);
            let mut record = |model: &mut CompiledModel, t: f64, x: &[f64]| {
                if !only_states {
                    // Outputs other than states need the model evaluated at the recorded
                    // point (not counted: it is output, not integration).
                    let mut dx = vec![0.0; x.len()];
                    let _ = model.rhs(t, x, &mut dx);
                }
                trajectory.times.push(t);
                for (column, s) in trajectory.columns.iter_mut().zip(&sources) {
                    column.push(match *s {
                        Source::State(i) => x[i],
                        Source::Register(r) => model.value(r),
                    });
                }
            };
            record(&mut model, options.start, &x);
            let h = (options.stop - options.start) / options.steps as f64;
            let mut result = Ok(());
            for k in 0..options.steps {
                let t = options.start + k as f64 * h;
                result = stepper.step(&mut model, t, h, &mut x);
                if result.is_err() {
                    break;
                }
                record(&mut model, options.start + (k + 1) as f64 * h, &x);
                progress(k + 1);
            }
            trajectory.stats = stepper.stats.clone();
            trajectory.sparse = stepper.sparse();
            result.map_err(Failure::Step)?;
        }
        Partition::Weak => {
            let mut split = Partitioned::new(dae, structure, causal, jac, &model.point(), options);
            // After each step the partitioned model holds every value, states included.
            let record = |model: &CompiledModel, t: f64| {
                trajectory.times.push(t);
                for (column, s) in trajectory.columns.iter_mut().zip(&sources) {
                    let r = match *s {
                        Source::State(i) => model.tape.var_reg(causal.states[i]),
                        Source::Register(r) => r,
                    };
                    column.push(model.value(r));
                }
            };
            let result = split.run(options, &x, record, &mut progress);
            trajectory.stats = split.stats();
            trajectory.sparse = split.sparse();
            result.map_err(Failure::Step)?;
        }
    }
    Ok(trajectory)
}

/// The variable-step reference run: BDF with `options.tol` as relative and absolute
/// tolerance, the solution reported on the fixed grid of `options.steps` intervals.
pub fn simulate_bdf(
    m: Model<'_>,
    start: &Point,
    options: &Options,
    outputs: &[Unknown],
) -> Result<Trajectory, Failure> {
    let mut model = CompiledModel::new(m.dae, m.causal, m.jac, start, &Layout::whole(m.causal));
    let (x, init_iterations) =
        initialise(m.dae, m.causal, &mut model, options.start).map_err(Failure::Init)?;
    let h = (options.stop - options.start) / options.steps as f64;
    let bdf = BdfOptions {
        rtol: options.tol,
        atol: options.tol,
        output_times: (1..options.steps)
            .map(|k| options.start + k as f64 * h)
            .collect(),
        ..BdfOptions::default()
    };
    let mut states: Vec<(f64, Vec<f64>)> = Vec::with_capacity(options.steps as usize + 1);
    let outcome = integrate_bdf(
        &mut model,
        &x,
        options.start,
        options.stop,
        &bdf,
        &mut |t, x| states.push((t, x.to_vec())),
    )
    .map_err(Failure::Bdf)?;
    let sources: Vec<Source> = outputs
        .iter()
        .map(|&u| source(m.causal, &model, u))
        .collect();
    let mut trajectory = Trajectory {
        times: Vec::with_capacity(states.len()),
        columns: vec![Vec::with_capacity(states.len()); outputs.len()],
        stats: outcome.stats,
        init_iterations,
        sparse: super::linear::NewtonMatrix::new(x.len(), &[]).is_sparse(),
    };
    let mut dx = vec![0.0; x.len()];
    for (t, x) in &states {
        // Recorded values other than states need the model at the reported point (output,
        // not integration: not counted).
        if sources.iter().any(|s| matches!(s, Source::Register(_))) {
            model
                .rhs(*t, x, &mut dx)
                .map_err(|failure| Failure::Bdf(BdfError::Model { time: *t, failure }))?;
        }
        trajectory.times.push(*t);
        for (column, s) in trajectory.columns.iter_mut().zip(&sources) {
            column.push(match *s {
                Source::State(i) => x[i],
                Source::Register(r) => model.value(r),
            });
        }
    }
    Ok(trajectory)
}

/// Where a recorded value comes from.
#[derive(Clone, Copy)]
enum Source {
    /// Index into the state vector.
    State(usize),
    Register(super::tape::Reg),
}

fn source(causal: &Causal, model: &CompiledModel, u: Unknown) -> Source {
    match u {
        Unknown::Algebraic(v) => match causal.states.iter().position(|&s| s == v) {
            Some(i) => Source::State(i),
            None => Source::Register(model.unknown_reg(u)),
        },
        Unknown::Derivative(_) => Source::Register(model.unknown_reg(u)),
    }
}
