//! `mocca compare`: one model, one step, several methods side by side against a reference BDF
//! run at a tight tolerance, with the costs and errors an engineer weighs (SPEC §6, §10).

use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, ValueEnum};
use serde_json::{Value, json};

use super::Format;
use super::model::{ModelArgs, load_for_simulation};
use super::partition::{self as partitions, Chosen, PartitionArg, PartitionArgs, Subject};
use super::simulate::{Grid, GridArgs, Integrator, MethodArg, one_system_order, run_failure};
use super::table::{Align, print_table};
use crate::causal::{Causal, causal_form, initial_point};
use crate::dae::Dae;
use crate::jacobian::ode_jacobian_with;
use crate::numfmt::Number;
use crate::simulate::fixed_step::{Method, StepFailure};
use crate::simulate::results::{self, Reference};
use crate::simulate::run::{self, Exchange, Failure, Model, Options, Partition, Trajectory};
use crate::simulate::system::Stats;
use crate::structure::Unknown;

#[derive(Args, Debug)]
pub struct CompareArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The methods to compare, as `simulate --method` names them
    #[arg(
        long,
        value_name = "a,b,..",
        default_value = "mixed-euler,implicit-euler,euler,bdf"
    )]
    pub methods: String,
    #[command(flatten)]
    pub grid: GridArgs,
    /// The tolerance (relative and absolute) of the reference BDF run
    #[arg(long, default_value_t = 1e-10, allow_negative_numbers = true)]
    pub reference_tol: f64,
    /// Partition of the mixed methods (default `--partition auto` when neither it nor
    /// `--fast` is given)
    #[command(flatten)]
    pub partition: PartitionArgs,
}

/// One column of the table: a method's run, or how it failed.
struct Column {
    integrator: Integrator,
    /// States stepped implicitly.
    implicit: usize,
    outcome: Result<Outcome, String>,
}

struct Outcome {
    stats: Stats,
    rmse: Option<f64>,
    wall: f64,
}

pub fn run(args: &CompareArgs) -> ExitCode {
    let integrators = match methods(&args.methods) {
        Ok(list) => list,
        Err(m) => return super::usage_error(m),
    };
    let mixed = integrators.iter().find_map(|i| match i {
        Integrator::Mixed(m) => Some(*m),
        _ => None,
    });
    let partition_args = with_default_partition(&args.partition, mixed.is_some());
    if let Err(m) = partition_args.check(mixed) {
        return super::usage_error(m);
    }
    if partition_args.partition == PartitionArg::Weak {
        return super::usage_error("`compare` runs each method on the model as one system");
    }
    if !(args.reference_tol.is_finite() && args.reference_tol > 0.0) {
        return super::usage_error("`--reference-tol` must be a positive number");
    }
    if let Err(m) = args.grid.check() {
        return super::usage_error(m);
    }
    let (flat, structure) = match load_for_simulation(&args.model) {
        Ok(ok) => ok,
        Err(code) => return code,
    };
    let mut dae = flat.dae;
    let grid = args.grid.resolve(&dae.experiment);
    let steps = match grid.steps() {
        Ok(0) => return super::usage_error("`--stop` must be after `--start`"),
        Ok(n) => n,
        Err(m) => return super::usage_error(m),
    };
    let causal = causal_form(&mut dae, &structure);
    let (causal, weak) = one_system_order(causal, &dae, PartitionArg::None, &flat.sources);
    let jac = ode_jacobian_with(&mut dae, &causal, weak);
    let chosen = match mixed {
        Some(method) => {
            let subject = Subject {
                sources: &flat.sources,
                dae: &dae,
                causal: &causal,
                jacobian: &jac,
            };
            match partitions::choose(&partition_args, method, &subject, (grid.step, steps)) {
                Ok(c) => Some(Ok(c)),
                // Bad usage (`--fast` naming no state) ends the command.
                Err(code) if code == ExitCode::from(2) => return code,
                // Nothing to split: the mixed columns say so, the others still run.
                Err(_) => Some(Err("no partition (the error above says why)".to_string())),
            }
        }
        None => None,
    };
    let start = match initial_point(&dae) {
        Ok(p) => p,
        Err(f) => {
            let d = super::jacobian::failure(&dae, &causal.steps, &f);
            super::report(&flat.sources, &[d]);
            return ExitCode::from(1);
        }
    };
    let model = Model {
        dae: &dae,
        structure: &structure,
        causal: &causal,
        jac: &jac,
    };
    let states: Vec<Unknown> = causal
        .states
        .iter()
        .map(|&v| Unknown::Algebraic(v))
        .collect();
    let names: Vec<String> = causal
        .states
        .iter()
        .map(|&v| dae.var(v).name.clone())
        .collect();
    let options = |tol: f64| Options {
        method: Method::ImplicitEuler,
        start: grid.start,
        stop: grid.stop,
        steps,
        tol,
        partition: Partition::None,
        exchange: Exchange::GaussSeidel,
        max_step: f64::INFINITY,
    };
    let clock = Instant::now();
    let reference = match run::simulate_bdf(model, &start, &options(args.reference_tol), &states) {
        Ok(t) => t,
        Err(f) => {
            let d = run_failure(&dae, &causal, &f).with_note("in the reference BDF run");
            super::report(&flat.sources, &[d]);
            return ExitCode::from(1);
        }
    };
    let reference_wall = clock.elapsed().as_secs_f64();
    let reference = Reference {
        names: names.clone(),
        times: reference.times,
        columns: reference.columns,
    };
    let ranges = sensible_ranges(&reference.columns);
    let n = causal.states.len();
    let columns: Vec<Column> = integrators
        .iter()
        .map(|&integrator| {
            let clock = Instant::now();
            let opts = Options {
                method: match integrator {
                    Integrator::Fixed(m) => m,
                    _ => Method::ImplicitEuler,
                },
                ..options(grid.tol)
            };
            let (result, implicit) = match integrator {
                Integrator::Bdf => (run::simulate_bdf(model, &start, &opts, &states), n),
                Integrator::Mixed(method) => {
                    let chosen = chosen.as_ref().expect("a mixed method has its partition");
                    let mut partition = match chosen {
                        Ok(c) => c.partition.clone(),
                        Err(why) => {
                            return Column {
                                integrator,
                                implicit: 0,
                                outcome: Err(why.clone()),
                            };
                        }
                    };
                    partition.method = method;
                    let implicit = partition.fast().len();
                    let r = run::simulate_mixed(model, &start, &opts, &partition, &states, |_| {});
                    (r, implicit)
                }
                Integrator::Fixed(m) => {
                    let implicit = if m.is_implicit() { n } else { 0 };
                    (
                        run::simulate(model, &start, &opts, &states, |_| {}),
                        implicit,
                    )
                }
            };
            let wall = clock.elapsed().as_secs_f64();
            let outcome = judge(result, grid.step, &ranges, (&dae, &causal)).map(|t| Outcome {
                rmse: results::rmse(&results::compare(&names, &t.times, &t.columns, &reference)),
                stats: t.stats,
                wall,
            });
            Column {
                integrator,
                implicit,
                outcome,
            }
        })
        .collect();
    let report = Report {
        args,
        grid,
        n,
        columns: &columns,
        chosen: chosen.as_ref().and_then(|c| c.as_ref().ok()),
        reference_wall,
    };
    match args.model.format() {
        Format::Json => super::print_json(&report.json(&dae, &causal)),
        Format::Text => report.print(),
    }
    super::leave_allocated((flat.sources, dae, structure, causal, jac, reference));
    ExitCode::SUCCESS
}

/// The integrators of a comma list of `--method` names.
fn methods(list: &str) -> Result<Vec<Integrator>, String> {
    let names: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if names.is_empty() {
        return Err("`--methods` names no method".to_string());
    }
    names
        .into_iter()
        .map(|name| {
            MethodArg::from_str(name, false)
                .map(Integrator::of)
                .map_err(|_| format!("`--methods`: `{name}` is not a method of `simulate`"))
        })
        .collect()
}

/// `--partition auto` when a mixed method is compared and neither `--fast` nor a partition
/// was given.
fn with_default_partition(args: &PartitionArgs, mixed: bool) -> PartitionArgs {
    let mut args = args.clone();
    if mixed && args.fast.is_none() && args.partition == PartitionArg::None {
        args.partition = PartitionArg::Auto;
    }
    args
}

/// How many times its reference's range a column may stray beyond that range before it has
/// left any sensible answer.
const RANGES_OFF: f64 = 10.0;

/// Per state, the values its column may take: the reference's range widened by
/// [`RANGES_OFF`] times its width (or its magnitude, for a state the reference holds
/// constant).
fn sensible_ranges(reference: &[Vec<f64>]) -> Vec<(f64, f64)> {
    let spans: Vec<(f64, f64, f64)> = reference
        .iter()
        .map(|c| {
            let lo = c.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = c.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (lo, hi, (hi - lo).max(lo.abs()).max(hi.abs()))
        })
        .collect();
    // A state the reference holds at 0 gets the widest span of the others (or 1).
    let widest = spans.iter().map(|s| s.2).fold(0.0, f64::max);
    let fallback = if widest > 0.0 { widest } else { 1.0 };
    spans
        .into_iter()
        .map(|(lo, hi, span)| {
            let span = if span > 0.0 { span } else { fallback };
            (lo - RANGES_OFF * span, hi + RANGES_OFF * span)
        })
        .collect()
}

/// A run's trajectory, or why it is no answer: a failed step, or values that are not finite
/// or leave their `ranges` (the reference's, widened), are the method's instability at this
/// step.
fn judge(
    result: Result<Trajectory, Failure>,
    step: f64,
    ranges: &[(f64, f64)],
    (dae, causal): (&Dae, &Causal),
) -> Result<Trajectory, String> {
    let unstable = |t: f64| format!("unstable at h = {} (t = {})", Number(step), Number(t));
    match result {
        Ok(t) => {
            let first_bad = t.times.iter().enumerate().find(|&(k, _)| {
                (t.columns.iter())
                    .zip(ranges)
                    .any(|(c, &(lo, hi))| !(c[k] >= lo && c[k] <= hi))
            });
            match first_bad {
                Some((_, &time)) => Err(unstable(time)),
                None => Ok(t),
            }
        }
        Err(Failure::Step(
            StepFailure::Eval { t, .. }
            | StepFailure::Stage { t, .. }
            | StepFailure::Singular { t },
        )) => Err(unstable(t)),
        Err(f) => Err(run_failure(dae, causal, &f).message),
    }
}

struct Report<'a> {
    args: &'a CompareArgs,
    grid: Grid,
    n: usize,
    columns: &'a [Column],
    chosen: Option<&'a Chosen>,
    reference_wall: f64,
}

/// The rows of the table: a label and a cell of a column's statistics.
type Row = (&'static str, fn(&Outcome) -> String);

const ROWS: [Row; 8] = [
    ("steps", |o| o.stats.steps.to_string()),
    ("f evaluations", |o| o.stats.f_evals.to_string()),
    ("Jacobian evaluations", |o| o.stats.jac_evals.to_string()),
    ("f evals in Jacobians", |o| {
        o.stats.f_evals_in_jacobians.to_string()
    }),
    ("Newton iterations", |o| o.stats.newton_iters.to_string()),
    ("LU factorizations", |o| o.stats.factorizations.to_string()),
    ("RMSE", |o| {
        o.rmse.map_or("-".into(), |r| format!("{r:.3e}"))
    }),
    ("wall time (ms)", |o| format!("{:.3}", o.wall * 1e3)),
];

impl Report<'_> {
    fn analysis_seconds(&self) -> Option<f64> {
        self.chosen.and_then(|c| c.analysis).map(|(_, s)| s)
    }

    fn print(&self) {
        let a = self.args;
        outln!(
            "{} states, step {} from {} to {}; reference: bdf at tol {} ({:.3} s)",
            self.n,
            Number(self.grid.step),
            Number(self.grid.start),
            Number(self.grid.stop),
            Number(a.reference_tol),
            self.reference_wall
        );
        if let Some(chosen) = self.chosen {
            let partition = &chosen.partition;
            let how = if chosen.analysis.is_some() {
                "partition auto"
            } else {
                "partition --fast"
            };
            outln!(
                "mixed methods: {how}, {} fast of {} states, fast level {} step{} per step",
                partition.fast().len(),
                self.n,
                partition.finest_rate(),
                if partition.finest_rate() == 1 {
                    ""
                } else {
                    "s"
                }
            );
        }
        let mut header = vec![""];
        header.extend(self.columns.iter().map(|c| c.integrator.name()));
        let mut rows: Vec<Vec<String>> = Vec::new();
        rows.push(self.row("implicit states", |c| c.implicit.to_string()));
        for (label, cell) in ROWS {
            rows.push(self.row(label, |c| match &c.outcome {
                Ok(o) => cell(o),
                Err(_) => "-".to_string(),
            }));
        }
        let analysis = self.analysis_seconds();
        rows.push(
            self.row("cycle analysis (ms)", |c| match (c.integrator, analysis) {
                (Integrator::Mixed(_), Some(s)) => format!("{:.3}", s * 1e3),
                _ => "-".to_string(),
            }),
        );
        rows.push(self.row("result", |c| match &c.outcome {
            Ok(_) => "ok".to_string(),
            Err(why) => why.clone(),
        }));
        let mut align = vec![Align::Left];
        align.extend(self.columns.iter().map(|_| Align::Right));
        print_table(&header, &rows, &align);
    }

    fn row(&self, label: &str, cell: impl Fn(&Column) -> String) -> Vec<String> {
        std::iter::once(label.to_string())
            .chain(self.columns.iter().map(cell))
            .collect()
    }

    fn json(&self, dae: &Dae, causal: &Causal) -> Value {
        let a = self.args;
        let methods: Vec<Value> = self
            .columns
            .iter()
            .map(|c| {
                let mut v = json!({
                    "method": c.integrator.name(),
                    "implicit_states": c.implicit,
                });
                match &c.outcome {
                    Ok(o) => {
                        v["stable"] = json!(true);
                        v["stats"] = json!(o.stats);
                        v["rmse"] = json!(o.rmse);
                        v["wall_time_s"] = json!(o.wall);
                    }
                    Err(why) => {
                        v["stable"] = json!(false);
                        v["failure"] = json!(why);
                    }
                }
                if let (Integrator::Mixed(_), Some(s)) = (c.integrator, self.analysis_seconds()) {
                    v["cycle_analysis_time_s"] = json!(s);
                }
                v
            })
            .collect();
        let mut value = json!({
            "states": self.n,
            "step": self.grid.step,
            "start": self.grid.start,
            "stop": self.grid.stop,
            "reference": { "method": "bdf", "tol": a.reference_tol, "wall_time_s": self.reference_wall },
            "methods": methods,
        });
        if let Some(chosen) = self.chosen {
            value["partition"] = partitions::to_json(dae, causal, &chosen.partition, &[]);
        }
        value
    }
}
