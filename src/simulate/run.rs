//! One simulation from a causal model: compile, initialise, integrate with a fixed step (as one
//! system or weak subsystem by subsystem) or with the variable-step BDF, record the chosen
//! variables.

use std::ops::ControlFlow;
use std::time::Instant;

use crate::causal::{Causal, Point};
use crate::dae::{Dae, VarKind};
use crate::expr::ExprId;
use crate::jacobian::OdeJacobian;
use crate::structure::{Structure, Unknown};

use super::assertions::{Checked, Checker, Violation};
use super::bdf::{BdfError, BdfOptions, integrate_bdf_watched};
use super::events::{EventFailure, EventStats, Events, Watch};
use super::fixed_step::{FixedStep, Method, StepFailure, Stepper};
use super::init::{InitFailure, initialise};
use super::linear::NewtonMatrix;
use super::mixed::MixedStepper;
use super::model::{CompiledModel, Layout};
use super::partition::Partitioned;
use super::step_checks::StepChecks;
use super::system::{OdeSystem, Stats};
use mocca_runtime::event_driver::EventModel;
use mocca_runtime::grid::{self, EventMode, GridSystem, Side, split_step};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partition {
    /// The model as one system (weak reads see the values being computed).
    None,
    /// Each weak subsystem stepped on its own (SPEC §2.1, §10), exchanging weak values as
    /// `Options::exchange` says.
    Weak,
}

/// When a weakly partitioned run's subsystems see each other's new weak values (SPEC §10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exchange {
    /// One after the other: a subsystem reads the values the subsystems before it published
    /// in the same step.
    GaussSeidel,
    /// All from the values published at the end of the previous step, so the subsystems
    /// step independently (at once, on two threads).
    Jacobi,
}

impl Exchange {
    pub fn name(self) -> &'static str {
        match self {
            Exchange::GaussSeidel => "gauss-seidel",
            Exchange::Jacobi => "jacobi",
        }
    }
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
    /// How weak subsystems exchange values (with `Partition::Weak`).
    pub exchange: Exchange,
    /// The BDF's largest step (unlimited when infinite).
    pub max_step: f64,
}

impl Options {
    /// The step of the output grid, `(stop − start)/steps`.
    pub fn step(&self) -> f64 {
        (self.stop - self.start) / self.steps as f64
    }

    /// The `k`-th output time, `start + k·(stop − start)/steps`: computed, not accumulated,
    /// and rounded to 15 significant digits, so that a grid of 0.1 reads 0.3, not
    /// 0.30000000000000004 (a change of at most a few ulps).
    pub fn time(&self, k: u64) -> f64 {
        grid::grid_time(self.start, self.stop, self.steps, k)
    }
}

/// What a run produced: the time grid, one column per recorded unknown, and the counters.
#[derive(Clone, Debug, PartialEq)]
pub struct Trajectory {
    pub times: Vec<f64>,
    pub columns: Vec<Vec<f64>>,
    pub stats: Stats,
    /// Newton iterations spent on the initial system.
    pub init_iterations: u64,
    /// Whether the implicit stages used the sparse LU.
    pub sparse: bool,
    /// Warning-level assertions that were false: (index into `Dae::assertions`, first time).
    pub warnings: Vec<(usize, f64)>,
    /// Seconds spent integrating from the initial state to the end, recording included;
    /// compiling the model, analysing its Newton matrix and initialising it excluded.
    pub integration_seconds: f64,
    /// The events met on the way.
    pub events: EventStats,
    /// The first time and step where an algebraic loop was solved on a singular Jacobian
    /// (see [`CompiledModel::singular_loop`]).
    pub singular_loop: Option<(f64, usize)>,
}

impl Trajectory {
    /// This run followed by `later`, which goes on from where it stopped: the rows joined and
    /// the counters added.
    pub fn append(&mut self, later: Trajectory) {
        self.times.extend(later.times);
        for (column, more) in self.columns.iter_mut().zip(later.columns) {
            column.extend(more);
        }
        self.stats.steps += later.stats.steps;
        self.stats.rejected_steps += later.stats.rejected_steps;
        self.stats.add_work(&later.stats);
        self.init_iterations += later.init_iterations;
        self.sparse |= later.sparse;
        let warnings = std::mem::take(&mut self.warnings);
        self.warnings = earliest(warnings.into_iter().chain(later.warnings));
        self.integration_seconds += later.integration_seconds;
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    Init(InitFailure),
    Step(StepFailure),
    Bdf(BdfError),
    /// An error-level `assert` was false at a recorded point.
    Assertion(Violation),
    Event(EventFailure),
    /// Index reduction's choice of states no longer suits the model at a recorded point: the
    /// run stopped there, so that it can go on with states chosen there (SPEC §4).
    StateSwitch(Box<StateSwitch>),
}

impl From<EventFailure> for Failure {
    fn from(failure: EventFailure) -> Failure {
        Failure::Event(failure)
    }
}

/// Where a run stopped because its choice of states no longer suits: the violation, the
/// point (every variable and derivative) there, and what was recorded before it.
#[derive(Clone, Debug, PartialEq)]
pub struct StateSwitch {
    pub violation: Violation,
    pub point: Point,
    pub before: Trajectory,
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
    progress: impl FnMut(u64),
) -> Result<Trajectory, Failure> {
    simulate_with(m, start, options, None, outputs, progress)
}

/// [`simulate`] with the mixed-mode and multirate methods of `levels` (SPEC §10) in place of
/// `options.method`: the model as one system, or with `options.partition` weak each weak
/// subsystem with its share of `levels`.
pub fn simulate_mixed(
    m: Model<'_>,
    start: &Point,
    options: &Options,
    levels: &crate::partition::Partition,
    outputs: &[Unknown],
    progress: impl FnMut(u64),
) -> Result<Trajectory, Failure> {
    simulate_with(m, start, options, Some(levels), outputs, progress)
}

fn simulate_with(
    m: Model<'_>,
    start: &Point,
    options: &Options,
    levels: Option<&crate::partition::Partition>,
    outputs: &[Unknown],
    mut progress: impl FnMut(u64),
) -> Result<Trajectory, Failure> {
    let Model {
        dae,
        structure,
        causal,
        jac,
    } = m;
    let layout = match (levels, options.partition) {
        (Some(levels), Partition::None) => level_rows(dae, causal, levels),
        _ => Layout::whole(causal),
    };
    let mut model = CompiledModel::new(dae, causal, jac, start, &layout);
    model.enter_interval_from(options.start);
    let mut events = events_from_start(dae, causal, &mut model, options)?;
    let (mut x, init_iterations) =
        initialise(dae, causal, &mut model, options.start).map_err(Failure::Init)?;
    let clock = Instant::now();
    let sources: Vec<Source> = outputs
        .iter()
        .map(|&u| source(dae, causal, &model, u))
        .collect();
    let mut recorder = Recorder::new(dae, sources, options.steps as usize + 1);
    start_events(events.as_mut(), &mut model, options, &mut x)?;
    // The weak subsystems' own model, which solves their loops.
    let mut split_singular = None;
    let ran = match (levels, options.partition) {
        (Some(levels), Partition::None) => {
            let stepper = MixedStepper::new(levels.clone(), options.tol, &model);
            let run = (&mut model, &mut recorder, x);
            run_one_system(stepper, run, (options, events.as_mut()), &mut progress)
        }
        (None, Partition::None) => {
            let stepper = Stepper::new(options.method, options.tol, &model);
            let run = (&mut model, &mut recorder, x);
            run_one_system(stepper, run, (options, events.as_mut()), &mut progress)
        }
        (_, Partition::Weak) => {
            let point = model.point();
            let model = (dae, structure, causal, jac);
            let mut split = Partitioned::new(model, &point, options, levels, events.is_none());
            let ended = match events.as_mut() {
                Some(events) => {
                    let mut system = WeakSystem {
                        split: &mut split,
                        causal,
                        recorder: &mut recorder,
                    };
                    let run = (options, Some(events));
                    run_grid(&mut system, run, &mut x, &mut progress)
                }
                None => {
                    // After each step the partitioned model holds every value, states included.
                    let result = split.run(
                        options,
                        &x,
                        |model, t| recorder.at_registers(model, t, causal),
                        &mut progress,
                    );
                    (result.map_err(Failure::Step)).and_then(|()| recorder.violation())
                }
            };
            split_singular = split.model().singular_loop();
            ((split.stats(), split.sparse()), ended)
        }
    };
    let ((stats, sparse), ended) = ran;
    let integration = clock.elapsed().as_secs_f64();
    if let Err(failure) = ended {
        return Err(recorder.stopped(failure, (stats, init_iterations, integration)));
    }
    let mut trajectory = recorder.finish(stats, init_iterations, sparse, integration);
    let singular = [first_singular_loop(&model, events.as_ref()), split_singular];
    trajectory.singular_loop = singular
        .into_iter()
        .flatten()
        .min_by(|a, b| a.0.total_cmp(&b.0));
    trajectory.events = events.map(|e| e.stats()).unwrap_or_default();
    Ok(trajectory)
}

/// The model as one system with the rows of each level that has states evaluable alone (the
/// whole model when one level has them all).
pub fn level_rows(dae: &Dae, causal: &Causal, levels: &crate::partition::Partition) -> Layout {
    let blocks: Vec<Vec<usize>> = levels
        .levels()
        .iter()
        .map(|l| l.states.clone())
        .filter(|states| !states.is_empty())
        .collect();
    if blocks.len() < 2 {
        return Layout::whole(causal);
    }
    super::rows::layout(dae, causal, &blocks)
}

/// Steps the model as one system from the initial state `x` over the output grid, recording
/// every point (and two at each event); the counters and whether the Newton matrix was sparse,
/// with how the run ended.
fn run_one_system<'d>(
    mut stepper: impl FixedStep,
    (model, recorder, mut x): (&mut CompiledModel, &mut Recorder<'d>, Vec<f64>),
    run: (&Options, Option<&mut Events<'d>>),
    progress: &mut impl FnMut(u64),
) -> ((Stats, bool), Result<(), Failure>) {
    let mut system = OneSystem {
        stepper: &mut stepper,
        model,
        recorder,
    };
    let ended = run_grid(&mut system, run, &mut x, progress);
    ((stepper.stats().clone(), stepper.sparse()), ended)
}

/// Steps `system` from the initial state `x` over the output grid with the runtime's grid
/// loop, crossings located.
fn run_grid<'d, S: GridSystem<Events = Events<'d>, Error = Failure>>(
    system: &mut S,
    (options, events): (&Options, Option<&mut Events<'d>>),
    x: &mut [f64],
    progress: &mut impl FnMut(u64),
) -> Result<(), Failure> {
    let grid = (options.start, options.stop, options.steps);
    grid::run(system, events, grid, EventMode::Locate, x, &mut |k, _| {
        progress(k)
    })
}

/// The model as one system, its stepper and what records it.
struct OneSystem<'r, 'd, S> {
    stepper: &'r mut S,
    model: &'r mut CompiledModel,
    recorder: &'r mut Recorder<'d>,
}

impl<'d, S: FixedStep> GridSystem for OneSystem<'_, 'd, S> {
    type Events = Events<'d>;
    type Error = Failure;

    fn breakpoints(&self) -> Vec<f64> {
        self.model.breakpoints().to_vec()
    }

    fn step_over(
        &mut self,
        breakpoints: &[f64],
        span: (f64, f64),
        x: &mut [f64],
    ) -> Result<(), Failure> {
        step_to(self.stepper, self.model, breakpoints, span, x).map_err(Failure::Step)
    }

    fn checkpoint(&self) -> Vec<f64> {
        // One-step methods: the states are all a step starts from.
        Vec::new()
    }

    fn rewind(&mut self, _: &[f64]) {}

    fn records_last_step(&self) -> bool {
        false
    }

    fn record(&mut self, (t, side): (f64, Side), x: &[f64]) -> Result<(), Failure> {
        self.recorder.at_states(self.model, t, x, side)
    }

    fn resume(&mut self, events: &Events<'d>, t: f64) {
        hold(self.model, &events.point, t);
    }
}

/// The weak subsystems, stepped by the partitioned method (SPEC §10), and what records them.
struct WeakSystem<'r, 'd> {
    split: &'r mut Partitioned,
    causal: &'r Causal,
    recorder: &'r mut Recorder<'d>,
}

impl<'d> GridSystem for WeakSystem<'_, 'd> {
    type Events = Events<'d>;
    type Error = Failure;

    fn breakpoints(&self) -> Vec<f64> {
        self.split.model().breakpoints().to_vec()
    }

    fn step_over(
        &mut self,
        breakpoints: &[f64],
        span: (f64, f64),
        x: &mut [f64],
    ) -> Result<(), Failure> {
        (self.split.step_over(breakpoints, span, x)).map_err(Failure::Step)
    }

    fn checkpoint(&self) -> Vec<f64> {
        self.split.exchanged()
    }

    fn rewind(&mut self, saved: &[f64]) {
        self.split.set_exchanged(saved);
    }

    fn records_last_step(&self) -> bool {
        true
    }

    fn record(&mut self, (t, _): (f64, Side), _: &[f64]) -> Result<(), Failure> {
        // After each step the partitioned model holds every value, states included: those
        // of the step that ended, before any event there.
        match self
            .recorder
            .at_registers(self.split.model(), t, self.causal)
        {
            ControlFlow::Continue(()) => Ok(()),
            ControlFlow::Break(()) => self.recorder.violation(),
        }
    }

    fn resume(&mut self, events: &Events<'d>, t: f64) {
        self.split.resume(&events.point, t);
    }
}

/// Steps from `t` by `h`, ending a step at each breakpoint on the way.
fn step_to(
    stepper: &mut impl FixedStep,
    model: &mut CompiledModel,
    breakpoints: &[f64],
    (t, h): (f64, f64),
    x: &mut [f64],
) -> Result<(), StepFailure> {
    for (a, b, step) in split_step(breakpoints, t, h) {
        model.enter_interval(a, b);
        stepper.step(model, a, step, x)?;
    }
    Ok(())
}

/// The variable-step reference run: BDF with `options.tol` as relative and absolute
/// tolerance, the solution reported on the fixed grid of `options.steps` intervals.
pub fn simulate_bdf(
    m: Model<'_>,
    start: &Point,
    options: &Options,
    outputs: &[Unknown],
) -> Result<Trajectory, Failure> {
    simulate_bdf_observed(m, start, options, outputs, |_| {})
}

/// Per state, the magnitude of its `nominal` (1 without one, or where it is 0 or not finite).
fn nominals(dae: &Dae, causal: &Causal, point: &Point) -> Vec<f64> {
    (causal.states.iter())
        .map(|&v| {
            let nominal = (dae.var(v).nominal).and_then(|e| dae.pool.eval(e, point).ok());
            nominal
                .map(f64::abs)
                .filter(|n| n.is_finite() && *n > 0.0)
                .unwrap_or(1.0)
        })
        .collect()
}

/// [`simulate_bdf`], calling `progress` with the count of output intervals done as the run
/// passes each output time.
pub fn simulate_bdf_observed(
    m: Model<'_>,
    start: &Point,
    options: &Options,
    outputs: &[Unknown],
    progress: impl FnMut(u64),
) -> Result<Trajectory, Failure> {
    bdf_from(m, (start, options.start), options, outputs, progress)
}

/// [`simulate_bdf`] going on from `begin` inside the output grid of `options` (where an
/// earlier run stopped): `start` is the point there, the first row recorded, then the grid's
/// times after it.
pub fn simulate_bdf_from(
    m: Model<'_>,
    (start, begin): (&Point, f64),
    options: &Options,
    outputs: &[Unknown],
) -> Result<Trajectory, Failure> {
    bdf_from(m, (start, begin), options, outputs, |_| {})
}

fn bdf_from(
    m: Model<'_>,
    (start, begin): (&Point, f64),
    options: &Options,
    outputs: &[Unknown],
    mut progress: impl FnMut(u64),
) -> Result<Trajectory, Failure> {
    let mut model = CompiledModel::new(m.dae, m.causal, m.jac, start, &Layout::whole(m.causal));
    // Analysed on this thread, after the compile. On a second thread the two would overlap,
    // but on the two-processor machines measured each runs about half as fast while the
    // other runs, and starting the thread costs 50-100 us: the setup takes longer in most
    // runs (BENCHMARKS.md).
    let matrix = NewtonMatrix::new(m.causal.states.len(), model.jacobian_pattern());
    model.enter_interval_from(begin);
    let atol_scale = nominals(m.dae, m.causal, &model.point());
    let mut events = events_from_start(m.dae, m.causal, &mut model, options)?;
    let (mut x, init_iterations) =
        initialise(m.dae, m.causal, &mut model, begin).map_err(Failure::Init)?;
    start_events(events.as_mut(), &mut model, options, &mut x)?;
    let grid: Vec<f64> = (1..options.steps).map(|k| options.time(k)).collect();
    let mut segments = vec![Segment {
        held: events.as_ref().map(|e| e.point.clone()),
        states: Vec::with_capacity(options.steps as usize + 1),
    }];
    let mut stats = Stats::default();
    let mut wall_seconds = 0.0;
    let mut matrix = Some(matrix);
    let mut recorded = 0u64;
    let mut t = begin;
    let mut failure = None;
    // Warning-level asserts seen false between output points.
    let mut step_warnings = Vec::new();
    let terminated = |events: &Option<Events<'_>>| events.as_ref().is_some_and(Events::terminated);
    while options.steps > 0 && t < options.stop && !terminated(&events) {
        // A breakpoint is an event too: a relation of time that switches there may change a
        // Boolean that a `when` clause watches for its edge.
        let timed = events.as_ref().map_or(f64::INFINITY, |e| {
            e.next_time_event(t)
                .min(grid::next_after(model.breakpoints(), t))
        });
        let end = timed.min(options.stop);
        let first = grid.partition_point(|&g| g <= t);
        let bdf = BdfOptions {
            rtol: options.tol,
            atol: options.tol,
            atol_scale: atol_scale.clone(),
            output_times: grid[first..grid.partition_point(|&g| g < end)].to_vec(),
            max_step: options.max_step,
            ..BdfOptions::default()
        };
        let matrix = matrix
            .take()
            .unwrap_or_else(|| NewtonMatrix::new(x.len(), model.jacobian_pattern()));
        let states = &mut segments.last_mut().expect("a segment").states;
        let observed_before = states.len();
        let mut observe = |t: f64, x: &[f64]| {
            states.push((t, x.to_vec(), Vec::new()));
            recorded += 1;
            progress(recorded.min(options.steps + 1) - 1);
        };
        let mut checks = StepChecks::watch(m.dae, m.causal, events.as_mut(), || model.point());
        let watch = checks.as_mut().map(|c| c as &mut dyn Watch);
        let run =
            integrate_bdf_watched(&mut model, matrix, (&x, t), end, &bdf, &mut observe, watch);
        let violation = checks.and_then(|c| {
            step_warnings.extend(c.warnings());
            c.violation
        });
        let (outcome, switch) = match run {
            Ok(done) => done,
            Err(e) => {
                failure = Some(Failure::Bdf(e));
                break;
            }
        };
        // Each observed point keeps the guesses the run had there, for its row to be
        // evaluated on the same branch of a loop with several roots.
        let states = &mut segments.last_mut().expect("a segment").states;
        for (row, guesses) in states[observed_before..]
            .iter_mut()
            .zip(model.take_observed())
        {
            row.2 = guesses;
        }
        stats.steps += outcome.stats.steps;
        stats.rejected_steps += outcome.stats.rejected_steps;
        stats.add_work(&outcome.stats);
        wall_seconds += outcome.wall_seconds;
        x = outcome.final_state;
        let at = match switch {
            Some(at) => {
                // The row before the event (a time event's is the segment's last); an output
                // time the event falls on is that row, once.
                if states.last().is_some_and(|row| row.0 == at) {
                    states.pop();
                }
                states.push((at, x.clone(), current_guesses(&model)));
                at
            }
            None if end == timed => end,
            None => break,
        };
        if let Some(v) = violation {
            failure = Some(Failure::Assertion(v));
            break;
        }
        let events = events.as_mut().expect("an event needs events");
        if let Err(e) = events.at(at, &mut x, switch.is_none()) {
            failure = Some(Failure::Event(e));
            break;
        }
        model.load(&events.point);
        model.enter_interval_from(at);
        // Each segment's first row is the one after the event, but for the last at the end.
        let at_end = at >= options.stop || events.terminated();
        segments.push(Segment {
            held: Some(events.point.clone()),
            states: if at_end {
                vec![(at, x.clone(), current_guesses(&model))]
            } else {
                Vec::new()
            },
        });
        t = at;
        if at_end {
            break;
        }
    }
    if let Some(events) = events.as_mut()
        && failure.is_none()
    {
        let end = if events.terminated() { t } else { options.stop };
        match events.terminal(end, &mut x) {
            Ok(true) => segments.push(Segment {
                held: Some(events.point.clone()),
                states: vec![(end, x.clone(), current_guesses(&model))],
            }),
            Ok(false) => {}
            Err(e) => failure = Some(Failure::Event(e)),
        }
    }
    if options.steps == 0 || begin >= options.stop {
        // Initialisation only (or going on from the stop time): the initial state is the
        // whole trajectory.
        let guesses = current_guesses(&model);
        segments[0].states.push((begin, x.clone(), guesses));
    }
    let sources: Vec<Source> = outputs
        .iter()
        .map(|&u| source(m.dae, m.causal, &model, u))
        .collect();
    let points = segments.iter().map(|s| s.states.len()).sum();
    let mut recorder = Recorder::new(m.dae, sources, points);
    // The points before a failure first: an assertion or a choice of states violated there
    // explains the failure.
    for (k, segment) in segments.iter().enumerate() {
        if let Some(held) = &segment.held {
            model.load(held);
        }
        // A segment that another follows ends at the event between them.
        let event_at_end = k + 1 < segments.len();
        for (j, (t, x, guesses)) in segment.states.iter().enumerate() {
            let side = if event_at_end && j + 1 == segment.states.len() {
                Side::Before
            } else {
                Side::After
            };
            model.set_guesses(guesses);
            if let Err(failure) = recorder.at_states(&mut model, *t, x, side) {
                return Err(recorder.stopped(failure, (stats, init_iterations, wall_seconds)));
            }
        }
    }
    if let Some(failure) = failure {
        return Err(failure);
    }
    let sparse = super::linear::is_sparse(x.len());
    let mut trajectory = recorder.finish(stats, init_iterations, sparse, wall_seconds);
    trajectory.warnings = earliest(trajectory.warnings.into_iter().chain(step_warnings));
    trajectory.singular_loop = first_singular_loop(&model, events.as_ref());
    trajectory.events = events.map(|e| e.stats()).unwrap_or_default();
    Ok(trajectory)
}

/// The events of a run (`None` without), the model holding the switches' values at the start
/// values, for the initialisation to start from.
fn events_from_start<'d>(
    dae: &'d Dae,
    causal: &'d Causal,
    model: &mut CompiledModel,
    options: &Options,
) -> Result<Option<Events<'d>>, Failure> {
    let span = (options.start, options.stop);
    let Some(mut events) = Events::new(dae, causal, model, span) else {
        return Ok(None);
    };
    events
        .free_at_start(options.start, &model.state_values())
        .map_err(Failure::Event)?;
    hold(model, &events.point, options.start);
    Ok(Some(events))
}

/// The initial event at the start (which may `reinit` the initialised states `x`), the model
/// then holding the values it leaves.
fn start_events(
    events: Option<&mut Events<'_>>,
    model: &mut CompiledModel,
    options: &Options,
    x: &mut [f64],
) -> Result<(), Failure> {
    if let Some(events) = events {
        events.initial(options.start, x).map_err(Failure::Event)?;
        hold(model, &events.point, options.start);
    }
    Ok(())
}

/// The model holds the values of `point` (held ones among them) from `t` on.
fn hold(model: &mut CompiledModel, point: &Point, t: f64) {
    model.load(point);
    model.enter_interval_from(t);
}

/// The points of a BDF run between two events, with the held values they were computed with.
struct Segment {
    held: Option<Point>,
    /// Time, states and the algebraic solves' guesses there (empty: none kept).
    states: Vec<(f64, Vec<f64>, Vec<f64>)>,
}

/// The guesses `model`'s algebraic solves would start from now.
fn current_guesses(model: &CompiledModel) -> Vec<f64> {
    let mut guesses = Vec::new();
    model.guesses(&mut guesses);
    guesses
}

/// Collects the recorded outputs point by point and checks the assertions at each.
struct Recorder<'a> {
    dae: &'a Dae,
    sources: Vec<Source>,
    times: Vec<f64>,
    columns: Vec<Vec<f64>>,
    checker: Checker<'a>,
    /// Whether a point must be evaluated in full (outputs other than states, or assertions).
    evaluate: bool,
    violation: Option<Violation>,
    /// The point where the choice of states was seen not to suit.
    switch_point: Option<Point>,
}

impl<'a> Recorder<'a> {
    fn new(dae: &'a Dae, sources: Vec<Source>, capacity: usize) -> Recorder<'a> {
        let checker = Checker::new(dae);
        let evaluate =
            !checker.is_empty() || sources.iter().any(|s| !matches!(s, Source::State(_)));
        Recorder {
            dae,
            columns: vec![Vec::with_capacity(capacity); sources.len()],
            sources,
            times: Vec::with_capacity(capacity),
            checker,
            evaluate,
            violation: None,
            switch_point: None,
        }
    }

    /// Records the point `(t, x)`, evaluating the model there when needed (output, not
    /// integration: not counted), with the relations of time as they are on `side` of `t`.
    fn at_states(
        &mut self,
        model: &mut CompiledModel,
        t: f64,
        x: &[f64],
        side: Side,
    ) -> Result<(), Failure> {
        if self.evaluate {
            match side {
                Side::Before => model.enter_interval_to(t),
                Side::After => model.enter_interval_from(t),
            }
            let mut dx = vec![0.0; x.len()];
            model
                .rhs(t, x, &mut dx)
                .map_err(|failure| Failure::Step(StepFailure::Eval { failure, t }))?;
            self.check(model, t)?;
        }
        self.times.push(t);
        for (column, s) in self.columns.iter_mut().zip(&self.sources) {
            column.push(match *s {
                Source::State(i) => x[i],
                Source::Register(r) => model.value(r),
                Source::Alias(e) => model.evaluate(&self.dae.pool, e),
            });
        }
        Ok(())
    }

    /// Records a point the model already holds in full; stops the run on a violation.
    fn at_registers(&mut self, model: &CompiledModel, t: f64, causal: &Causal) -> ControlFlow<()> {
        if let Err(Failure::Assertion(v)) = self.check(model, t) {
            self.violation = Some(v);
            return ControlFlow::Break(());
        }
        self.times.push(t);
        for (column, s) in self.columns.iter_mut().zip(&self.sources) {
            column.push(match *s {
                Source::State(i) => model.value(model.tape.var_reg(causal.states[i])),
                Source::Register(r) => model.value(r),
                Source::Alias(e) => model.evaluate(&self.dae.pool, e),
            });
        }
        ControlFlow::Continue(())
    }

    fn check(&mut self, model: &CompiledModel, t: f64) -> Result<(), Failure> {
        if self.checker.is_empty() {
            return Ok(());
        }
        let mut point = model.point();
        point.time = t;
        self.checker.check(&point).map_err(|v| {
            if matches!(v.checked, Checked::StateChoice { .. }) {
                self.switch_point = Some(point);
            }
            Failure::Assertion(v)
        })
    }

    /// The failure the run stopped with, `(counters, initialisation's iterations, seconds
    /// integrating)` so far: a choice of states that no longer suits becomes a
    /// [`StateSwitch`] holding what was recorded before it.
    fn stopped(mut self, failure: Failure, (stats, init, seconds): (Stats, u64, f64)) -> Failure {
        match (failure, self.switch_point.take()) {
            (Failure::Assertion(violation), Some(point))
                if matches!(violation.checked, Checked::StateChoice { .. }) =>
            {
                let before = self.finish(stats, init, false, seconds);
                Failure::StateSwitch(Box::new(StateSwitch {
                    violation,
                    point,
                    before,
                }))
            }
            (failure, _) => failure,
        }
    }

    fn violation(&mut self) -> Result<(), Failure> {
        self.violation
            .take()
            .map_or(Ok(()), |v| Err(Failure::Assertion(v)))
    }

    fn finish(
        self,
        stats: Stats,
        init_iterations: u64,
        sparse: bool,
        integration_seconds: f64,
    ) -> Trajectory {
        Trajectory {
            times: self.times,
            columns: self.columns,
            stats,
            init_iterations,
            sparse,
            warnings: self.checker.warnings(),
            integration_seconds,
            events: EventStats::default(),
            singular_loop: None,
        }
    }
}

/// Where a recorded value comes from.
#[derive(Clone, Copy)]
enum Source {
    /// Index into the state vector.
    State(usize),
    /// A register of the tape: an unknown, or a parameter, constant or input (fixed for the
    /// run).
    Register(super::tape::Reg),
    /// An alias-eliminated variable: its binding over the variable it is an alias of.
    Alias(ExprId),
}

/// Where the value of `u` is: for a variable that is not an unknown, its register or its
/// alias binding.
fn source(dae: &Dae, causal: &Causal, model: &CompiledModel, u: Unknown) -> Source {
    match u {
        Unknown::Algebraic(v) => match causal.states.iter().position(|&s| s == v) {
            Some(i) => Source::State(i),
            None => match (dae.var(v).kind, dae.var(v).binding) {
                (VarKind::Alias, Some(binding)) => Source::Alias(binding),
                _ => Source::Register(model.unknown_reg(u)),
            },
        },
        Unknown::Derivative(_) => Source::Register(model.unknown_reg(u)),
    }
}

/// Per assertion, the earliest of the times it was seen false, in the order of assertions.
/// The earlier of the integrating model's and the events' model's singular loop.
fn first_singular_loop(model: &CompiledModel, events: Option<&Events>) -> Option<(f64, usize)> {
    let at_events = events.and_then(Events::singular_loop);
    let both = [model.singular_loop(), at_events].into_iter().flatten();
    both.min_by(|a, b| a.0.total_cmp(&b.0))
}

fn earliest(warnings: impl Iterator<Item = (usize, f64)>) -> Vec<(usize, f64)> {
    let mut first = std::collections::BTreeMap::new();
    for (k, t) in warnings {
        let seen: &mut f64 = first.entry(k).or_insert(t);
        *seen = seen.min(t);
    }
    first.into_iter().collect()
}
