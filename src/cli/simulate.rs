//! `mocca simulate`: initialise, integrate (fixed step or BDF), write CSV, compare with a
//! reference run, print the statistics.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, ValueEnum};
use serde_json::json;

use super::Format;
use super::jacobian::failure;
use super::model::{ModelArgs, load_for_switching, weak_reads_after_writers};
use super::partition::{self as partitions, ExchangeArg, PartitionArg, PartitionArgs, Subject};
use super::state_switch::{self, Continuation};
use crate::causal::{Causal, causal_form, initial_point};
use crate::dae::{Dae, Experiment, VarKind};
use crate::diagnostics::Diagnostic;
use crate::expr::VarId;
use crate::jacobian::{WeakReadsAs, ode_jacobian_with};
use crate::numfmt::Number;
use crate::partition::MixedMethod;
use crate::simulate::assertions::{Checked, Violation};
use crate::simulate::bdf::BdfError;
use crate::simulate::events::{EventFailure, EventStats};
use crate::simulate::fixed_step::{Method, StepFailure};
use crate::simulate::init::{InitFailure, InitialResidual};
use crate::simulate::results::{self, Reference};
use crate::simulate::run::{self, Exchange, Failure, Model, Options, Partition};
use crate::structure::Unknown;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MethodArg {
    Euler,
    Midpoint,
    Heun,
    ImplicitEuler,
    ImplicitMidpoint,
    Trapezoidal,
    /// Explicit Euler on the slow states, implicit Euler on the `--fast` ones
    MixedEuler,
    /// Explicit midpoint on the slow states, implicit midpoint on the `--fast` ones
    MixedMidpoint,
    /// Heun on the slow states, trapezoidal (Lobatto IIIA) on the `--fast` ones
    MixedTrapezoidal,
    /// The variable-step stiff reference solver; `--tol` is its relative tolerance and,
    /// times each state's nominal, its absolute one; `--step` the output interval.
    Bdf,
}

#[derive(Args, Debug)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The integration method: a fixed-step method, or `bdf` (variable step and order)
    #[arg(long, value_enum, default_value_t = MethodArg::ImplicitEuler)]
    pub method: MethodArg,
    #[command(flatten)]
    pub grid: GridArgs,
    /// The largest step `bdf` may take (default: unlimited)
    #[arg(long, value_name = "H", allow_negative_numbers = true)]
    pub max_step: Option<f64>,
    /// Write the trajectory as CSV
    #[arg(long, value_name = "FILE.csv")]
    pub out: Option<PathBuf>,
    /// Variables to record (default: the states): any variable of the model, `der(x)` of a
    /// state, or `all`
    #[arg(long, value_name = "a,b,..")]
    pub vars: Option<String>,
    /// A reference CSV (time + named columns) to compute the RMSE against
    #[arg(long, value_name = "REF.csv")]
    pub compare: Option<PathBuf>,
    #[command(flatten)]
    pub partition: PartitionArgs,
}

/// The time grid and the tolerance, as `simulate` and `compare` take them. Each not given
/// comes from the model's `experiment` annotation, else from mocca's default.
#[derive(Args, Debug)]
pub struct GridArgs {
    /// The step of the fixed-step methods, and the output interval of every method (default:
    /// the experiment's Interval, (StopTime − StartTime)/500 when it gives only a StopTime,
    /// else 0.001)
    #[arg(long, allow_negative_numbers = true)]
    pub step: Option<f64>,
    /// The start time, where initialisation happens (default: the experiment's StartTime,
    /// else 0)
    #[arg(long, allow_negative_numbers = true)]
    pub start: Option<f64>,
    /// The end time (default: the experiment's StopTime, else 1); `simulate` with `--stop`
    /// equal to `--start` computes and writes the initial state only
    #[arg(long, allow_negative_numbers = true)]
    pub stop: Option<f64>,
    /// The tolerance: of Newton on the implicit stages (relative to `1 + |x|`), and with
    /// `bdf` its relative error tolerance and, times each state's nominal, its absolute one
    /// (default: the experiment's Tolerance, else 1e-8)
    #[arg(long, allow_negative_numbers = true)]
    pub tol: Option<f64>,
}

/// The time grid and the tolerance of a run.
#[derive(Clone, Copy, Debug)]
pub struct Grid {
    pub step: f64,
    pub start: f64,
    pub stop: f64,
    pub tol: f64,
}

/// Intervals of the output grid when the experiment gives a stop time but no interval (as
/// OpenModelica's default).
const DEFAULT_INTERVALS: f64 = 500.0;

impl GridArgs {
    /// Each setting as given, else as the model's `experiment` annotation says, else the
    /// default.
    pub fn resolve(&self, experiment: &Experiment) -> Grid {
        let start = self.start.or(experiment.start).unwrap_or(0.0);
        let stop = self.stop.or(experiment.stop).unwrap_or(1.0);
        let from_experiment = experiment.interval.or_else(|| {
            experiment
                .stop
                .map(|_| (stop - start) / DEFAULT_INTERVALS)
                .filter(|h| *h > 0.0)
        });
        Grid {
            step: self.step.or(from_experiment).unwrap_or(1e-3),
            start,
            stop,
            tol: self.tol.or(experiment.tolerance).unwrap_or(1e-8),
        }
    }

    /// Checks each value given (bad usage found before the model is loaded); the grid they
    /// make with the experiment's is checked by [`Grid::steps`].
    pub(super) fn check(&self) -> Result<(), String> {
        if [self.start, self.stop]
            .iter()
            .flatten()
            .any(|t| !t.is_finite())
        {
            return Err("`--start` and `--stop` must be numbers".to_string());
        }
        if self.step.is_some_and(|h| !(h.is_finite() && h > 0.0)) {
            return Err("`--step` must be a positive number".to_string());
        }
        if self.tol.is_some_and(|t| !(t.is_finite() && t > 0.0)) {
            return Err("`--tol` must be a positive number".to_string());
        }
        Ok(())
    }
}

impl Grid {
    /// Checks the time grid and the tolerance; the number of steps from the start to the stop.
    pub(super) fn steps(&self) -> Result<u64, String> {
        let (start, stop, step) = (self.start, self.stop, self.step);
        if !(start.is_finite() && stop.is_finite() && stop >= start) {
            return Err("`--stop` must be a number not less than `--start`".to_string());
        }
        if !(step.is_finite() && step > 0.0) {
            return Err("`--step` must be a positive number".to_string());
        }
        if !(self.tol.is_finite() && self.tol > 0.0) {
            return Err("`--tol` must be a positive number".to_string());
        }
        if stop == start {
            return Ok(0);
        }
        let steps = ((stop - start) / step).round().max(1.0);
        if steps > 1e9 {
            return Err("more than 10⁹ steps: use a larger `--step`".to_string());
        }
        let used = (stop - start) / steps;
        if (used - step).abs() > 1e-9 * step {
            // The grid is whole steps from the start to the stop: say what step that is.
            super::report(
                &crate::source::SourceMap::new(),
                &[Diagnostic::warning(format!(
                    "the step {step} does not divide the interval from {start} to {stop}: \
                     {steps} steps of {used} are taken instead"
                ))],
            );
        }
        Ok(steps as u64)
    }
}

fn usage(message: impl std::fmt::Display) -> ExitCode {
    super::usage_error(message)
}

/// How `--method` integrates.
#[derive(Clone, Copy)]
pub(super) enum Integrator {
    Fixed(Method),
    Mixed(MixedMethod),
    Bdf,
}

impl Integrator {
    pub(super) fn of(arg: MethodArg) -> Integrator {
        let fixed = match arg {
            MethodArg::Euler => Method::ExplicitEuler,
            MethodArg::Midpoint => Method::ExplicitMidpoint,
            MethodArg::Heun => Method::Heun,
            MethodArg::ImplicitEuler => Method::ImplicitEuler,
            MethodArg::ImplicitMidpoint => Method::ImplicitMidpoint,
            MethodArg::Trapezoidal => Method::Trapezoidal,
            MethodArg::MixedEuler => return Integrator::Mixed(MixedMethod::Euler),
            MethodArg::MixedMidpoint => return Integrator::Mixed(MixedMethod::Midpoint),
            MethodArg::MixedTrapezoidal => return Integrator::Mixed(MixedMethod::Trapezoidal),
            MethodArg::Bdf => return Integrator::Bdf,
        };
        Integrator::Fixed(fixed)
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Integrator::Fixed(m) => m.name(),
            Integrator::Mixed(m) => m.name(),
            Integrator::Bdf => "bdf",
        }
    }
}

/// Checks that `--method` and the partition options go together.
fn check_method(args: &SimulateArgs, integrator: Integrator) -> Result<(), &'static str> {
    let mixed = match integrator {
        Integrator::Mixed(m) => Some(m),
        Integrator::Fixed(_) | Integrator::Bdf => None,
    };
    if let (Integrator::Bdf, PartitionArg::Weak) = (integrator, args.partition.partition) {
        return Err("`--partition weak` needs a fixed-step method");
    }
    args.partition.check(mixed)
}

/// Checks the numeric flags given.
fn check_numbers(args: &SimulateArgs) -> Result<(), String> {
    if args.max_step.is_some_and(|h| h.is_nan() || h <= 0.0) {
        return Err("`--max-step` must be a positive number".to_string());
    }
    args.grid.check()
}

/// The causal form to simulate and what its weak reads stand for. Simulated as one system,
/// `last(v)` reads `v` itself: the steps are ordered so that it reads `v` of the same
/// evaluation, and the Jacobian differentiates through it. Partitioned, weak reads are held.
pub(super) fn one_system_order(
    causal: Causal,
    dae: &Dae,
    partition: PartitionArg,
    sources: &crate::source::SourceMap,
) -> (Causal, WeakReadsAs) {
    if partition == PartitionArg::Weak {
        return (causal, WeakReadsAs::Held);
    }
    let consequence = "simulated as one system, some of them read the previous evaluation's \
                       value (`--partition weak` exchanges them once per step)";
    match weak_reads_after_writers(causal, dae, sources, consequence) {
        Ok(ordered) => (ordered, WeakReadsAs::Current),
        Err(causal) => (causal, WeakReadsAs::Held),
    }
}

pub fn run(args: &SimulateArgs) -> ExitCode {
    let integrator = Integrator::of(args.method);
    if let Err(m) = check_method(args, integrator) {
        return usage(m);
    }
    if let Err(m) = check_numbers(args) {
        return usage(m);
    }
    if let Some(path) = &args.out
        && let Err(message) = super::check_writable(path)
    {
        return super::failure_without_source(message, ExitCode::from(1));
    }
    let reference = match args.compare.as_deref().map(read_reference).transpose() {
        Ok(r) => r,
        Err(m) => return usage(m),
    };
    let (flat, structure, rechoice) = match load_for_switching(&args.model) {
        Ok(ok) => ok,
        Err(code) => return code,
    };
    let mut dae = flat.dae;
    let grid = args.grid.resolve(&dae.experiment);
    let steps = match grid.steps() {
        Ok(n) => n,
        Err(m) => return usage(m),
    };
    let (causal, weak) = one_system_order(
        causal_form(&mut dae, &structure),
        &dae,
        args.partition.partition,
        &flat.sources,
    );
    let jac = ode_jacobian_with(&mut dae, &causal, weak);
    // Compared without `--vars`: the reference's columns that name something the model has.
    let compared = match (&args.vars, &reference) {
        (None, Some(r)) => Some(compared_columns(&dae, &causal, r)),
        _ => args.vars.clone(),
    };
    let (names, outputs) = match outputs(&dae, &causal, compared.as_deref()) {
        Ok(o) => o,
        Err(m) => return usage(m),
    };
    let chosen = match integrator {
        Integrator::Mixed(method) => {
            let subject = Subject {
                sources: &flat.sources,
                dae: &dae,
                causal: &causal,
                jacobian: &jac,
            };
            match partitions::choose(&args.partition, method, &subject, (grid.step, steps)) {
                Ok(chosen) => Some(chosen),
                Err(code) => return code,
            }
        }
        Integrator::Fixed(_) | Integrator::Bdf => None,
    };
    let start = match initial_point(&dae) {
        Ok(p) => p,
        Err(f) => return fail(&flat.sources, &failure(&dae, &causal.steps, &f)),
    };
    let options = Options {
        method: match integrator {
            Integrator::Fixed(m) => m,
            Integrator::Mixed(_) | Integrator::Bdf => Method::ImplicitEuler,
        },
        start: grid.start,
        stop: grid.stop,
        steps,
        tol: grid.tol,
        partition: match args.partition.partition {
            PartitionArg::None => Partition::None,
            PartitionArg::Weak => Partition::Weak,
            PartitionArg::Auto => Partition::None,
        },
        exchange: match args.partition.exchange {
            ExchangeArg::GaussSeidel => Exchange::GaussSeidel,
            ExchangeArg::Jacobi => Exchange::Jacobi,
        },
        max_step: args.max_step.unwrap_or(f64::INFINITY),
    };
    // The trajectory is kept only for `--out` and `--compare`: recording every state at every
    // step costs as much as a cheap model's evaluation.
    let recorded: &[Unknown] = if args.out.is_some() || reference.is_some() {
        &outputs
    } else {
        &[]
    };
    let bar = progress_bar(steps);
    let clock = Instant::now();
    let model = Model {
        dae: &dae,
        structure: &structure,
        causal: &causal,
        jac: &jac,
    };
    let show = |done: u64| {
        if let Some(bar) = &bar
            && (done.is_multiple_of(64) || bar.position() == 0)
        {
            if bar.position() == 0 {
                bar.set_message("integrating");
            }
            bar.set_position(done);
        }
    };
    let result = match (integrator, &chosen) {
        (Integrator::Bdf, _) => run::simulate_bdf_observed(model, &start, &options, recorded, show),
        (_, Some(c)) => run::simulate_mixed(model, &start, &options, &c.partition, recorded, show),
        (_, None) => run::simulate(model, &start, &options, recorded, show),
    };
    let method_name = integrator.name();
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let mut switches = Vec::new();
    let trajectory = match (result, rechoice.as_deref()) {
        (Ok(t), _) => t,
        (Err(Failure::StateSwitch(stopped)), Some(rechoice))
            if chosen.is_none()
                && options.partition == Partition::None
                && dae.hybrid.is_empty() =>
        {
            let continuation = Continuation {
                options,
                bdf: matches!(integrator, Integrator::Bdf),
                names: &names,
                sources: &flat.sources,
            };
            match state_switch::go_on(&dae, rechoice, *stopped, &continuation) {
                Ok((t, made)) => {
                    switches = made;
                    t
                }
                Err(d) => return fail(&flat.sources, &d),
            }
        }
        (Err(f), _) => return fail(&flat.sources, &run_failure(&dae, &causal, &f)),
    };
    // The runs after a switch of states included.
    let wall = clock.elapsed().as_secs_f64();
    let mut warnings: Vec<Diagnostic> = trajectory
        .warnings
        .iter()
        .map(|&(k, time)| {
            let a = &dae.assertions[k];
            Diagnostic::warning(format!("assertion false at time {time}: {}", a.text()))
                .at(a.span, "this condition (AssertionLevel.warning)")
        })
        .collect();
    warnings.extend(event_notes(&trajectory.events));
    warnings.extend(singular_loop_warning(
        &dae,
        &causal.steps,
        trajectory.singular_loop,
    ));
    warnings.extend(defaulted_starts(&dae, &causal));
    warnings.extend(released_starts(&dae));
    super::report(&flat.sources, &warnings);
    if let Some(path) = &args.out
        && let Err(message) = super::write_whole(path, |p| write_out(p, &names, &trajectory))
    {
        return super::failure_without_source(message, ExitCode::from(1));
    }
    let errors = reference
        .as_ref()
        .map(|r| results::compare(&names, &trajectory.times, &trajectory.columns, r));
    let stats = &trajectory.stats;
    match args.model.format() {
        Format::Json => {
            let mut value = json!({
                "stats": {
                    "steps": stats.steps,
                    "rejected_steps": stats.rejected_steps,
                    "f_evals": stats.f_evals,
                    "jac_evals": stats.jac_evals,
                    "f_evals_in_jacobians": stats.f_evals_in_jacobians,
                    "newton_iters": stats.newton_iters,
                    "factorizations": stats.factorizations,
                    "init_newton_iters": trajectory.init_iterations,
                    "wall_time_s": wall,
                    "integration_time_s": trajectory.integration_seconds,
                },
                "method": method_name,
                "linear_solver": if trajectory.sparse { "sparse" } else { "dense" },
            });
            if let Some(c) = &chosen {
                let levels = &stats.level_f_evals;
                value["partition"] = partitions::to_json(&dae, &causal, &c.partition, levels);
                if let Some((alpha, seconds)) = c.analysis {
                    value["cycle_analysis"] = json!({ "alpha": alpha, "time_s": seconds });
                }
            }
            if options.partition == Partition::Weak {
                value["exchange"] = json!(options.exchange.name());
            }
            if !dae.hybrid.is_empty() {
                value["events"] = json!(trajectory.events);
                if let Some(t) = &trajectory.events.terminated {
                    value["terminated"] = json!({
                        "time": t.time,
                        "message": crate::dae::unescape(&t.message),
                    });
                }
            }
            if !switches.is_empty() {
                value["state_switches"] = json!(switches);
            }
            if let Some((time, k)) = trajectory.singular_loop {
                let unknowns: Vec<String> = causal.steps[k]
                    .targets()
                    .iter()
                    .map(|u| u.name(&dae))
                    .collect();
                value["singular_loop"] = json!({ "time": time, "unknowns": unknowns });
            }
            if let Some(errors) = &errors {
                value["rmse"] = json!(results::rmse(errors));
                value["errors"] = json!(errors);
            }
            super::print_json(&value);
        }
        Format::Text => {
            if steps == 0 {
                outln!(
                    "{method_name} at {}: initialisation only",
                    Number(grid.start)
                );
            } else {
                outln!(
                    "{} from {} to {}, output every {} ({} intervals)",
                    method_name,
                    Number(grid.start),
                    Number(grid.stop),
                    Number(options.step()),
                    steps
                );
            }
            if let Some(c) = &chosen {
                let verbose = args.partition.verbose;
                for line in partitions::describe(&dae, &causal, c, &stats.level_f_evals, verbose) {
                    outln!("{line}");
                }
            }
            if options.partition == Partition::Weak {
                outln!(
                    "exchange: {}, {} subsystems",
                    options.exchange.name(),
                    structure.subsystems.len()
                );
            }
            outln!("  steps                 {}", stats.steps);
            outln!("  rejected steps        {}", stats.rejected_steps);
            outln!("  f evaluations         {}", stats.f_evals);
            outln!("  Jacobian evaluations  {}", stats.jac_evals);
            outln!("  f evals in Jacobians  {}", stats.f_evals_in_jacobians);
            outln!("  Newton iterations     {}", stats.newton_iters);
            outln!("  LU factorizations     {}", stats.factorizations);
            if !dae.hybrid.is_empty() {
                let events = &trajectory.events;
                outln!(
                    "  events                {} state, {} time, {} extra iteration rounds",
                    events.state_events,
                    events.time_events,
                    events.iterations
                );
            }
            if let Some(last) = switches.last() {
                let times = match switches.len() {
                    1 => "once".to_string(),
                    n => format!("{n} times"),
                };
                outln!(
                    "  states chosen again   {times}, last at {}: {}",
                    Number(last.time),
                    last.states.join(", ")
                );
            }
            outln!("  wall time             {wall:.3} s");
            outln!(
                "  integration time      {:.3} s",
                trajectory.integration_seconds
            );
            if let Some(errors) = &errors {
                match results::rmse(errors) {
                    Some(r) => outln!("RMSE {r:.6e} over {} variables", errors.len()),
                    None => outln!("no variable in common with the reference"),
                }
                for e in errors {
                    outln!(
                        "  {:<24} rmse {:.6e}  max {:.6e}",
                        e.name,
                        e.rmse,
                        e.max_abs
                    );
                }
            }
        }
    }
    super::leave_allocated((flat.sources, dae, structure, causal, jac, trajectory));
    ExitCode::SUCCESS
}

fn read_reference(path: &std::path::Path) -> Result<Reference, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    results::read_csv(&text).map_err(|e| format!("`{}`: {e}", path.display()))
}

fn write_out(path: &std::path::Path, names: &[String], t: &run::Trajectory) -> std::io::Result<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    results::write_csv(&mut file, names, &t.times, &t.columns)?;
    std::io::Write::flush(&mut file)
}

/// The recorded variables: the states by default, `all` for every variable, else the names
/// given (`der(x)` of a state allowed).
fn outputs(
    dae: &Dae,
    causal: &Causal,
    vars: Option<&str>,
) -> Result<(Vec<String>, Vec<Unknown>), String> {
    let chosen: Vec<VarId> = match vars.map(str::trim) {
        None => causal.states.clone(),
        Some("all") => dae.var_ids().collect(),
        Some(list) if split_names(list).is_empty() => {
            return Err("`--vars` names no variable (give names, or `all`)".to_string());
        }
        Some(list) => {
            let mut names = Vec::new();
            let mut unknowns = Vec::new();
            for name in split_names(list) {
                let (name, unknown) = named_output(dae, causal, &name)?;
                names.push(name);
                unknowns.push(unknown);
            }
            return Ok((names, unknowns));
        }
    };
    let names = chosen.iter().map(|&v| dae.var(v).name.clone()).collect();
    Ok((names, chosen.into_iter().map(Unknown::Algebraic).collect()))
}

/// The reference's column names that `named_output` accepts, as a `--vars` list (the states
/// when none is).
fn compared_columns(dae: &Dae, causal: &Causal, reference: &Reference) -> String {
    let known: Vec<&str> = reference
        .names
        .iter()
        .map(String::as_str)
        .filter(|name| named_output(dae, causal, name).is_ok())
        .collect();
    if known.is_empty() {
        let states: Vec<&str> = causal
            .states
            .iter()
            .map(|&v| dae.var(v).name.as_str())
            .collect();
        return states.join(",");
    }
    known.join(",")
}

/// The names of a comma-separated list, without blanks; commas inside brackets separate
/// subscripts (`x[1,2]`), not names.
pub(super) fn split_names(list: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in list.chars() {
        match c {
            '[' | '(' => depth += 1,
            ']' | ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                names.push(std::mem::take(&mut current));
                continue;
            }
            c if c.is_whitespace() => continue,
            _ => {}
        }
        current.push(c);
    }
    names.push(current);
    names.retain(|n| !n.is_empty());
    names
}

/// `name` without the quotes of a quoted name (`'x[1,2]'`).
pub(super) fn unquote(name: &str) -> &str {
    name.strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .unwrap_or(name)
}

/// What `name` (`x`, `'x[1,2]'`, `der(x)`) records, and its column's name (the flat name,
/// unquoted).
pub(super) fn named_output(
    dae: &Dae,
    causal: &Causal,
    name: &str,
) -> Result<(String, Unknown), String> {
    let (inner, derivative) = match name.strip_prefix("der(").and_then(|s| s.strip_suffix(')')) {
        Some(inner) => (inner, true),
        None => (name, false),
    };
    let unquoted = unquote(inner);
    let v = dae
        .lookup(unquoted)
        .ok_or_else(|| format!("`{inner}` is not a variable of the model"))?;
    let flat = &dae.var(v).name;
    if !derivative {
        return Ok((flat.clone(), Unknown::Algebraic(v)));
    }
    if !causal.states.contains(&v) {
        // A dummy derivative of index reduction.
        if let Some(dummy) = dae.lookup(name) {
            return Ok((name.to_string(), Unknown::Algebraic(dummy)));
        }
        return Err(format!(
            "`{inner}` is not a state, so `{name}` is not computed"
        ));
    }
    Ok((format!("der({flat})"), Unknown::Derivative(v)))
}

/// A progress bar on a terminal, nothing when piped. It ticks on its own (spinner and elapsed
/// time) from the start, so a run that compiles, initialises or crawls between two output
/// points still shows that it is alive, and what it is doing.
fn progress_bar(steps: u64) -> Option<indicatif::ProgressBar> {
    std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(steps);
        let template = "{spinner} {msg} [{elapsed_precise}] {wide_bar} {pos}/{len} output points";
        if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar.set_message("compiling and initialising");
        bar.enable_steady_tick(std::time::Duration::from_millis(250));
        bar
    })
}

fn fail(sources: &crate::source::SourceMap, d: &Diagnostic) -> ExitCode {
    super::report(sources, std::slice::from_ref(d));
    ExitCode::from(1)
}

/// Names the block, equations, variables and time of a failed run.
pub(super) fn run_failure(dae: &Dae, causal: &Causal, f: &Failure) -> Diagnostic {
    match f {
        Failure::Init(init) => init_failure(dae, causal, init),
        Failure::Step(StepFailure::Eval { failure: e, t }) => {
            let d = failure(dae, &causal.steps, e);
            d.with_note(format!("at time {t}"))
        }
        Failure::Step(StepFailure::Stage { t, worst }) => {
            let names: Vec<String> = worst
                .iter()
                .filter_map(|&i| causal.states.get(i))
                .map(|&v| format!("`{}`", dae.var(v).name))
                .collect();
            Diagnostic::error(format!(
                "Newton on the implicit stage did not converge at time {t}"
            ))
            .with_note(format!("largest corrections in {}", names.join(", ")))
            .with_note("try a smaller `--step` or a larger `--tol`")
        }
        Failure::Step(StepFailure::Singular { t }) => {
            Diagnostic::error(format!("the Newton matrix I − γJ is singular at time {t}"))
                .with_note("try a smaller `--step`")
        }
        Failure::Bdf(BdfError::Model { time, failure: e }) => {
            failure(dae, &causal.steps, e).with_note(format!("at time {time}"))
        }
        Failure::Bdf(other) => {
            Diagnostic::error(format!("BDF stopped: {other}")).with_note("try a larger `--tol`")
        }
        Failure::Assertion(v) => assertion_failure(dae, v),
        Failure::StateSwitch(s) => assertion_failure(dae, &s.violation).with_note(
            "the states are chosen again as the model runs only by `simulate` of a model without \
             events, as one system (no `--partition`, no mixed method)",
        ),
        Failure::Event(EventFailure::Eval { failure: e, t }) => {
            failure(dae, &causal.steps, e).with_note(format!("at the event at time {t}"))
        }
        Failure::Event(other) => event_failure(dae, other),
    }
}

/// An algebraic loop solved where its Jacobian is singular: its solutions may be a manifold
/// (two friction elements stuck in series share a torque any way), of which Newton took the
/// one keeping some unknowns at their values; another tool may take another.
fn singular_loop_warning(
    dae: &Dae,
    steps: &[crate::causal::Step],
    at: Option<(f64, usize)>,
) -> Option<Diagnostic> {
    let (time, k) = at?;
    let targets = steps[k].targets();
    let mut names: Vec<String> = (targets.iter().take(6))
        .map(|u| format!("`{}`", u.name(dae)))
        .collect();
    if targets.len() > names.len() {
        names.push(format!("{} more", targets.len() - names.len()));
    }
    let equation = match &steps[k] {
        crate::causal::Step::Loop { equations, .. } => *equations.first()?,
        _ => return None,
    };
    let warning = Diagnostic::warning(format!(
        "the algebraic loop solving {} is singular at its solution (first at time {time}): it \
         may have many solutions, and mocca keeps some of these unknowns at their values",
        names.join(", ")
    ));
    Some(
        warning
            .at(dae.equations[equation].span, "an equation of the loop")
            .with_note(
                "another tool may pick another solution, and the results differ from then on",
            ),
    )
}

/// Warning-level asserts of `when` clauses that were false, and `terminate`'s message.
fn event_notes(events: &EventStats) -> Vec<Diagnostic> {
    let warnings = events.warnings.iter().map(|w| {
        let text = crate::dae::unescape(&w.message);
        Diagnostic::warning(format!(
            "assertion false at the event at time {}: {text}",
            w.time
        ))
        .at(w.span, "this condition (AssertionLevel.warning)")
    });
    let terminated = events.terminated.iter().map(|t| {
        let text = crate::dae::unescape(&t.message);
        Diagnostic::note(format!(
            "the model terminated the run at time {}: {text}",
            t.time
        ))
        .at(t.span, "`terminate`")
    });
    warnings.chain(terminated).collect()
}

/// Event iteration that did not settle, at what kept changing; chattering, at its relation.
fn event_failure(dae: &Dae, failure: &EventFailure) -> Diagnostic {
    let d = Diagnostic::error(failure.to_string());
    let (spans, label): (Vec<crate::source::Span>, _) = match failure {
        EventFailure::Iteration { changing, .. } | EventFailure::Loop { changing, .. } => {
            (changing.iter().map(|&(_, s)| s).collect(), "keeps changing")
        }
        EventFailure::Stuck { span, .. } => (
            span.iter().copied().collect(),
            "its condition holds on after the event",
        ),
        EventFailure::Chattering { span, .. } => (
            span.iter().copied().collect(),
            "its relation keeps switching",
        ),
        EventFailure::Assertion { span, .. } => (vec![*span], "this condition is false"),
        EventFailure::Write { span, .. } => (vec![*span], "written here"),
        EventFailure::Eval { .. } => (Vec::new(), ""),
    };
    match spans.split_first() {
        Some((&first, rest)) => rest.iter().fold(d.at(first, label), |d, &s| {
            d.with_secondary(s, "keeps changing too")
        }),
        None => match dae.hybrid.whens.first() {
            Some(w) => d.at(w.span, "the model's events"),
            None => d,
        },
    }
}

/// An error-level `assert` that was false, at the assert.
fn assertion_failure(dae: &Dae, v: &Violation) -> Diagnostic {
    if let Checked::StateChoice { conditioning } = v.checked {
        return state_choice_failure(dae, v, conditioning).with_note(
            "the choice was made at the start values; start nearer to where the model runs, or \
             give the variables whose derivatives should stay `stateSelect = StateSelect.prefer` \
             and the others `StateSelect.avoid`",
        );
    }
    let a = &dae.assertions[v.assertion];
    let d = Diagnostic::error(format!("assertion failed at time {}: {}", v.time, a.text()));
    match v.unevaluable {
        Some(e) => d
            .at(a.span, "the condition cannot be evaluated")
            .with_note(format!("{e:?}")),
        None => d.at(a.span, "this condition is false"),
    }
}

/// An over-determined start after index reduction: the constraints it differentiated tie
/// the variables, so conditions given on all of them conflict. Points at the other
/// conditions and at the constraints.
fn with_reduced_constraints(
    dae: &Dae,
    mut d: Diagnostic,
    surplus: &[InitialResidual],
) -> Diagnostic {
    let mut constraints: Vec<crate::source::Span> = dae
        .equations
        .iter()
        .filter(|eq| eq.origin == crate::dae::EquationOrigin::Differentiated)
        .map(|eq| eq.span)
        .collect();
    if constraints.is_empty() {
        return d;
    }
    constraints.sort_by_key(|s| (s.file, s.start));
    constraints.dedup();
    const SHOWN: usize = 4;
    for &span in constraints.iter().take(SHOWN) {
        d = d.with_secondary(span, "a constraint index reduction differentiated");
    }
    let fixed = dae.var_ids().filter(|&v| {
        let var = dae.var(v);
        (var.kind == VarKind::State || var.is_fixed_algebraic())
            && !surplus.contains(&InitialResidual::Fixed(v))
    });
    for v in fixed.take(SHOWN) {
        d = d.with_secondary(dae.var(v).span, "conflicting with this condition");
    }
    d.with_note(format!(
        "the constraints leave {} states free to start; fix those (`check` names them) and let the constraints give the others",
        dae.count(crate::dae::VarKind::State)
    ))
}

/// The states index reduction chose no longer determine the others well.
pub(super) fn state_choice_failure(dae: &Dae, v: &Violation, conditioning: f64) -> Diagnostic {
    let choice = &dae.state_choices[v.assertion];
    let dummies: Vec<String> = choice
        .pivots
        .iter()
        .map(|&c| match dae.pool.node(choice.candidates[c]) {
            crate::expr::Node::Var(v) => format!("`{}`", dae.var(v).name),
            _ => format!("`{}`", dae.show(choice.candidates[c])),
        })
        .collect();
    let mut d = Diagnostic::error(format!(
        "at time {} the states chosen by index reduction no longer suit the constraint: its \
         dummy derivatives {} have become a poor choice ({conditioning:.2e} of the best)",
        v.time,
        dummies.join(", ")
    ));
    let mut equations = choice.equations.clone();
    equations.sort_unstable();
    equations.dedup();
    for e in equations {
        d = d.at(dae.equations[e].span, "differentiated to reduce the index");
    }
    d
}

/// A warning for the states an under-determined initial system fixed at their start values.
fn defaulted_starts(dae: &Dae, causal: &Causal) -> Option<Diagnostic> {
    let defaulted = crate::simulate::init::fixed_by_default(dae, causal);
    let d = start_warning(
        dae,
        &defaulted,
        |names| {
            format!(
                "the initial system has fewer conditions than free states: {names} fixed at their start values"
            )
        },
        "fixed at its start value",
    )?;
    Some(d.with_note("give them `fixed = true` or `fixed = false` to say which"))
}

/// A warning for the `fixed = true` conditions an over-determined initial system dropped.
fn released_starts(dae: &Dae) -> Option<Diagnostic> {
    let released = crate::simulate::init::released_fixed(dae);
    start_warning(
        dae,
        &released,
        |names| {
            format!(
                "the initial system has more conditions than free states: `fixed = true` of {names} dropped (index reduction made them algebraic; the constraints give them)"
            )
        },
        "its `fixed = true` dropped",
    )
}

/// A warning naming `vars` (none: no warning), at each of their declarations.
fn start_warning(
    dae: &Dae,
    vars: &[crate::expr::VarId],
    message: impl Fn(&str) -> String,
    label: &str,
) -> Option<Diagnostic> {
    let (first, rest) = vars.split_first()?;
    let names: Vec<String> = (vars.iter())
        .map(|&v| format!("`{}`", dae.var(v).name))
        .collect();
    let mut d = Diagnostic::warning(message(&names.join(", "))).at(dae.var(*first).span, label);
    for &v in rest {
        d = d.with_secondary(dae.var(v).span, label);
    }
    Some(d)
}

pub(super) fn init_failure(dae: &Dae, causal: &Causal, f: &InitFailure) -> Diagnostic {
    let span = |r: &InitialResidual| match *r {
        InitialResidual::Equation(i) => (dae.initial_equations[i].span, "initial equation"),
        InitialResidual::Fixed(v) => (dae.var(v).span, "fixed = true"),
    };
    let names = |vs: &[crate::expr::VarId]| {
        vs.iter()
            .map(|&v| format!("`{}`", dae.var(v).name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match f {
        InitFailure::Underdetermined { free, residuals } => {
            let mut d = Diagnostic::error(format!(
                "the initial system is under-determined: {} free states, {residuals} initial conditions",
                free.len()
            ))
            .with_note(format!(
                "free states (give them `fixed = true` or an initial equation): {}",
                names(free)
            ));
            for (i, &v) in free.iter().enumerate() {
                d = if i == 0 {
                    d.at(dae.var(v).span, "free state")
                } else {
                    d.with_secondary(dae.var(v).span, "free state")
                };
            }
            d
        }
        InitFailure::Overdetermined { surplus, free } => {
            let mut d = Diagnostic::error(format!(
                "the initial system is over-determined: {} more conditions than the {free} free states",
                surplus.len()
            ));
            for (i, r) in surplus.iter().enumerate() {
                let (s, what) = span(r);
                d = if i == 0 {
                    d.at(s, format!("surplus {what}"))
                } else {
                    d.with_secondary(s, format!("surplus {what}"))
                };
            }
            with_reduced_constraints(dae, d, surplus)
        }
        InitFailure::NoConvergence { worst } => {
            let mut d = Diagnostic::error("Newton on the initial system did not converge");
            for (i, r) in worst.iter().enumerate() {
                let (s, what) = span(r);
                let label = format!("{what} with a large residual");
                d = if i == 0 {
                    d.at(s, label)
                } else {
                    d.with_secondary(s, label)
                };
            }
            d
        }
        InitFailure::Eval(e) => {
            failure(dae, &causal.steps, e).with_note("while solving the initial system")
        }
    }
}
