//! `mocca cycles`: cycle analysis (SPEC §7) at one α, with the indices of §8, a partition
//! proposal and the parallelisable cycle sets of §9. Also the pieces `separability` shares:
//! loading a model with its Jacobian, operating points, the budget and the progress bar.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::{Value, json};

use super::Format;
use super::model::{ModelArgs, load_and_analyse};
use crate::analysis::indices::{
    fast_to_slow, separability_index, stiffness_index, stiffness_ratio,
};
use crate::analysis::johnson::{Budget, Enumeration, Progress, Stop};
use crate::analysis::operating_point::{Model, PointError, parse_assignments};
use crate::analysis::partition::{Level, propose};
use crate::analysis::pcs::{CycleSets, cycle_sets};
use crate::analysis::{CycleAnalysis, Values, analyse};
use crate::causal::{causal_form, initial_point};
use crate::diagnostics::Diagnostic;
use crate::jacobian::ode_jacobian;

#[derive(Args, Debug)]
pub struct CyclesArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The gain bound α of SPEC §7 (> 0, normally ≤ 1).
    #[arg(long, default_value_t = 0.5, value_parser = positive)]
    pub alpha: f64,
    #[command(flatten)]
    pub budget: BudgetArgs,
    #[command(flatten)]
    pub point: PointArgs,
    /// Partition step h: states with h̄ < h are fast (default: split at the largest gap).
    #[arg(long, value_parser = positive)]
    pub step: Option<f64>,
    /// Partition levels (the split applied again inside the fast part).
    #[arg(long, default_value_t = 2)]
    pub levels: usize,
}

/// Where J is evaluated (default: the start values).
#[derive(Args, Debug)]
pub struct PointArgs {
    /// State values `NAME=VALUE,...` (others keep their start values; with `--steady`, the
    /// Newton start).
    #[arg(long, value_name = "NAME=VALUE,...")]
    pub at: Option<String>,
    /// A steady state: Newton on f(x) = 0.
    #[arg(long)]
    pub steady: bool,
    /// Rows of a reference trajectory (CSV with `time` and a column per state); the bounds
    /// are the worst case over the rows sampled.
    #[arg(long, value_name = "REF.csv", conflicts_with_all = ["steady", "at"])]
    pub trajectory: Option<PathBuf>,
    /// How many trajectory rows to sample, evenly spread.
    #[arg(long, default_value_t = 10, requires = "trajectory", value_parser = clap::value_parser!(u64).range(1..))]
    pub samples: u64,
}

/// Limits of the cycle enumeration.
#[derive(Args, Debug)]
pub struct BudgetArgs {
    /// Stop after this many cycles.
    #[arg(long)]
    pub budget_cycles: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long, value_parser = positive)]
    pub budget_seconds: Option<f64>,
}

impl BudgetArgs {
    pub fn budget(&self) -> Budget {
        Budget {
            max_cycles: self.budget_cycles,
            max_time: self.budget_seconds.map(Duration::from_secs_f64),
        }
    }
}

pub(super) fn positive(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() => Ok(x),
        _ => Err(format!("`{text}` is not a positive number")),
    }
}

/// A model's state names and J's values at the chosen operating points.
pub(super) struct Loaded {
    pub names: Vec<String>,
    pub points: Vec<Values>,
    pub point_description: String,
}

/// Loads the model and evaluates J where `point` says; on failure prints and returns the exit
/// code.
pub(super) fn load(model: &ModelArgs, point: &PointArgs) -> Result<Loaded, ExitCode> {
    let (flat, structure) = load_and_analyse(model)?;
    let sources = flat.sources;
    let mut dae = flat.dae;
    let causal = causal_form(&mut dae, &structure);
    let jacobian = ode_jacobian(&mut dae, &causal);
    let m = Model {
        dae: &dae,
        causal: &causal,
        jacobian: &jacobian,
    };
    let names = m.state_names();
    let found = operating_points(&m, point);
    let (points, point_description) = match found {
        Ok(ok) => ok,
        Err(Failure::Usage(message)) => {
            eprintln!("error: {message}");
            return Err(ExitCode::from(2));
        }
        Err(Failure::Model(d)) => {
            super::report(&sources, &[d]);
            return Err(ExitCode::from(1));
        }
    };
    super::leave_allocated((sources, dae, causal, jacobian));
    Ok(Loaded {
        names,
        points,
        point_description,
    })
}

enum Failure {
    Usage(String),
    Model(Diagnostic),
}

fn operating_points(m: &Model<'_>, args: &PointArgs) -> Result<(Vec<Values>, String), Failure> {
    let model_error = |e: PointError| Failure::Model(point_diagnostic(m, e));
    let mut start = initial_point(m.dae).map_err(|f| model_error(PointError::Eval(f)))?;
    let mut description = "start values".to_string();
    if let Some(at) = &args.at {
        let assignments =
            parse_assignments(at).map_err(|e| Failure::Usage(format!("`--at`: {e}")))?;
        m.set_states(&mut start, &assignments)
            .map_err(|e| Failure::Usage(format!("`--at`: {e}")))?;
        description = format!("start values with {at}");
    }
    if let Some(path) = &args.trajectory {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Failure::Model(Diagnostic::error(format!(
                "cannot read `{}`: {e}",
                path.display()
            )))
        })?;
        let rows = m
            .trajectory(&start, &text, args.samples as usize)
            .map_err(|e| Failure::Model(trajectory_diagnostic(path, e)))?;
        let count = rows.len();
        let values = rows
            .into_iter()
            .map(|mut p| m.values_at(&mut p).map_err(model_error))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok((values, format!("{count} rows of {}", path.display())));
    }
    if args.steady {
        let mut steady = m.steady_state(start).map_err(model_error)?;
        let values = m.values_at(&mut steady).map_err(model_error)?;
        return Ok((vec![values], format!("steady state (from {description})")));
    }
    let values = m.values_at(&mut start).map_err(model_error)?;
    Ok((vec![values], description))
}

fn trajectory_diagnostic(path: &std::path::Path, e: PointError) -> Diagnostic {
    match e {
        PointError::Trajectory(m) => {
            Diagnostic::error(format!("trajectory `{}`: {m}", path.display()))
        }
        other => Diagnostic::error(format!("trajectory `{}`: {other:?}", path.display())),
    }
}

fn point_diagnostic(m: &Model<'_>, e: PointError) -> Diagnostic {
    let name = |i: usize| m.state_name(i).to_string();
    match e {
        PointError::Eval(f) => super::jacobian::failure(m.dae, &m.causal.steps, &f),
        PointError::NotFinite { row, col } => Diagnostic::error(format!(
            "∂der({})/∂{} is not finite at the operating point",
            name(row),
            name(col)
        )),
        PointError::Singular { iteration } => Diagnostic::error(format!(
            "no steady state: J is singular at Newton iteration {}",
            iteration + 1
        ))
        .with_note(
            "a state with no restoring term (an integrated angle or position) has no isolated \
             steady state; give an operating point with `--at` instead",
        ),
        PointError::NoSteadyState {
            iterations,
            residual,
        } => Diagnostic::error(format!(
            "no steady state: Newton did not converge in {iterations} iterations (max |f| = {residual:.3e})"
        ))
        .with_note("try another start with `--at`"),
        PointError::Trajectory(msg) => Diagnostic::error(msg),
    }
}

/// A progress bar on stderr, only on a terminal and only once the work has taken half a
/// second; nothing at all when piped.
pub(super) struct ProgressBar {
    began: Instant,
    bar: Option<indicatif::ProgressBar>,
    enabled: bool,
    label: &'static str,
}

const PROGRESS_DELAY: Duration = Duration::from_millis(500);
/// How often a wait refreshes the progress bar.
const PROGRESS_TICK: Duration = Duration::from_millis(100);

impl ProgressBar {
    pub fn new(label: &'static str) -> ProgressBar {
        ProgressBar {
            began: Instant::now(),
            bar: None,
            enabled: std::io::stderr().is_terminal(),
            label,
        }
    }

    pub fn update(&mut self, done: u64, total: u64, message: impl FnOnce() -> String) {
        if !self.enabled || self.began.elapsed() < PROGRESS_DELAY {
            return;
        }
        let label = self.label;
        let bar = self.bar.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::new(total);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{prefix} [{bar:40}] {pos}/{len} {msg} ({elapsed})",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(label);
            bar
        });
        bar.set_position(done);
        bar.set_message(message());
    }

    pub fn observe(&mut self, p: Progress) {
        self.update(p.starts_done as u64, p.starts_total as u64, || {
            format!("start nodes, {} cycles", p.cycles)
        });
    }

    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

pub fn run(args: &CyclesArgs) -> ExitCode {
    if args.levels == 0 {
        eprintln!("error: `--levels` must be at least 1");
        return ExitCode::from(2);
    }
    let loaded = match load(&args.model, &args.point) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let n = loaded.names.len();
    let mut bar = ProgressBar::new("cycles");
    let budget = args.budget.budget();
    let deadline = budget.max_time.map(|limit| Instant::now() + limit);
    // σ_R needs every eigenvalue of J (cubic in the largest strongly connected block) and
    // nothing from the cycles: it runs beside the enumeration instead of after it, on a thread
    // of its own that a time budget may leave behind.
    let values = loaded.points[0].clone();
    let (sender, ratio) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(stiffness_ratio(n, &values).map_err(|e| e.to_string()));
    });
    let analysis = analyse(n, &loaded.points, args.alpha, budget, &mut |p| {
        bar.observe(p)
    });
    let starts = analysis.enumeration.starts_total as u64;
    let ratio = loop {
        let wait = deadline.map_or(PROGRESS_TICK, |d| {
            d.saturating_duration_since(Instant::now())
                .min(PROGRESS_TICK)
        });
        match ratio.recv_timeout(wait) {
            Ok(ratio) => break ratio,
            Err(RecvTimeoutError::Disconnected) => {
                break Err("the eigenvalue computation failed".to_string());
            }
            Err(RecvTimeoutError::Timeout) if deadline.is_some_and(|d| Instant::now() >= d) => {
                break Err(
                    "not computed within the time budget (σ_R needs every eigenvalue of J)"
                        .to_string(),
                );
            }
            Err(RecvTimeoutError::Timeout) => bar.update(starts, starts, || {
                "start nodes; eigenvalues of J for σ_R".into()
            }),
        }
    };
    bar.finish();
    let report = Report::new(&loaded, &analysis, ratio, args);
    match args.model.format() {
        Format::Json => super::print_json(&report.json(&loaded.names)),
        Format::Text => report.print(&loaded.names),
    }
    super::leave_allocated(loaded);
    ExitCode::SUCCESS
}

/// Everything `cycles` prints, computed once for both formats.
struct Report<'a> {
    alpha: f64,
    points: &'a str,
    analysis: &'a CycleAnalysis,
    ratio: Result<f64, String>,
    partition: Vec<Level>,
    whole: CycleSets,
    fast: Option<CycleSets>,
}

impl<'a> Report<'a> {
    fn new(
        loaded: &'a Loaded,
        analysis: &'a CycleAnalysis,
        ratio: Result<f64, String>,
        args: &CyclesArgs,
    ) -> Report<'a> {
        let n = loaded.names.len();
        let partition = propose(&analysis.bounds.h_bar, args.step, args.levels);
        let all: Vec<usize> = (0..n).collect();
        let whole = cycle_sets(&analysis.graph, &all);
        let fast = partition.first().map(|l| {
            let mut members = l.fast.clone();
            members.sort_unstable();
            cycle_sets(&analysis.graph, &members)
        });
        Report {
            alpha: args.alpha,
            points: &loaded.point_description,
            analysis,
            ratio,
            partition,
            whole,
            fast,
        }
    }

    fn h_bar(&self) -> &[f64] {
        &self.analysis.bounds.h_bar
    }

    fn order(&self) -> Vec<usize> {
        let (finite, infinite) = fast_to_slow(self.h_bar());
        finite.into_iter().chain(infinite).collect()
    }

    fn json(&self, names: &[String]) -> Value {
        let e = &self.analysis.enumeration;
        let incomplete = incomplete_flags(e, names.len());
        let states: Vec<Value> = self
            .order()
            .into_iter()
            .map(|i| {
                json!({
                    "name": names[i],
                    "h_bound": finite_or_null(self.h_bar()[i]),
                    "cycles": self.analysis.bounds.cycles_through[i],
                    "complete": !incomplete[i],
                })
            })
            .collect();
        let named = |v: &[usize]| v.iter().map(|&i| names[i].clone()).collect::<Vec<_>>();
        json!({
            "alpha": self.alpha,
            "operating_points": self.points,
            "cycles": e.cycles,
            "complete": e.complete(),
            "budget": {
                "stopped": e.stopped.map(stop_name),
                "start_nodes_done": e.starts_done,
                "start_nodes": e.starts_total,
                "incomplete_states": named(&e.incomplete),
            },
            "states": states,
            "stiffness_ratio": self.ratio.as_ref().ok(),
            "stiffness_ratio_undefined": self.ratio.as_ref().err(),
            "stiffness_index": stiffness_index(self.h_bar()),
            "separability_index": separability_index(self.h_bar()),
            "partition": self.partition.iter().map(|l| json!({
                "threshold": l.threshold,
                "fast": named(&l.fast),
                "slow": named(&l.slow),
            })).collect::<Vec<_>>(),
            "pcs": {
                "whole": sets_json(&self.whole, names),
                "fast": self.fast.as_ref().map(|s| sets_json(s, names)),
            },
        })
    }

    fn print(&self, names: &[String]) {
        let e = &self.analysis.enumeration;
        let incomplete = incomplete_flags(e, names.len());
        outln!(
            "{} states, {} cycles{}, α = {}, at {}",
            names.len(),
            e.cycles,
            if e.complete() {
                ""
            } else {
                " (budget hit: incomplete)"
            },
            self.alpha,
            self.points
        );
        let width = names
            .iter()
            .map(|s| s.chars().count())
            .max()
            .unwrap_or(5)
            .max(5);
        outln!("  {:<width$}  {:>14}  {:>10}", "state", "h̄", "cycles");
        for i in self.order() {
            let h = self.h_bar()[i];
            let shown = if h.is_finite() {
                number(h)
            } else {
                "∞ (no cycle)".to_string()
            };
            let flag = if incomplete[i] {
                "  (incomplete: h̄ may be too large)"
            } else {
                ""
            };
            outln!(
                "  {:<width$}  {:>14}  {:>10}{}",
                names[i],
                shown,
                self.analysis.bounds.cycles_through[i],
                flag
            );
        }
        if let Some(stop) = e.stopped {
            outln!(
                "budget hit ({}): {} of {} start nodes done, {} states incomplete",
                stop_name(stop),
                e.starts_done,
                e.starts_total,
                e.incomplete.len()
            );
        }
        match &self.ratio {
            Ok(r) => outln!("stiffness ratio σ_R     {}", number(*r)),
            Err(why) => outln!("stiffness ratio σ_R     undefined: {why}"),
        }
        outln!(
            "stiffness index σ(α)    {}",
            optional(stiffness_index(self.h_bar()), "no finite h̄")
        );
        outln!(
            "separability s(α)       {}",
            optional(
                separability_index(self.h_bar()),
                "fewer than two distinct finite h̄"
            )
        );
        let named = |v: &[usize]| {
            v.iter()
                .map(|&i| names[i].as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        for (k, l) in self.partition.iter().enumerate() {
            outln!(
                "partition level {}: h̄ < {}: {} fast (implicit), {} slow (explicit)",
                k + 1,
                number(l.threshold),
                l.fast.len(),
                l.slow.len()
            );
            outln!("  fast: {}", named(&l.fast));
        }
        print_sets("cycle sets (whole graph)", &self.whole, names);
        if let Some(fast) = &self.fast {
            print_sets("cycle sets (fast part)", fast, names);
        }
    }
}

fn print_sets(title: &str, sets: &CycleSets, names: &[String]) {
    outln!(
        "{title}: {} blocks, {} hubs",
        sets.blocks.len(),
        sets.hubs.len()
    );
    for (hub, blocks) in &sets.hubs {
        let members: Vec<String> = blocks
            .iter()
            .map(|&b| {
                format!(
                    "{{{}}}",
                    sets.blocks[b]
                        .iter()
                        .map(|&v| names[v].as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
            .collect();
        outln!("  hub {}: {}", names[*hub], members.join(" "));
    }
}

fn sets_json(sets: &CycleSets, names: &[String]) -> Value {
    json!({
        "blocks": sets.blocks.iter().map(|b| b.iter().map(|&v| names[v].clone()).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "hubs": sets.hubs.iter().map(|(h, bs)| json!({"name": names[*h], "blocks": bs})).collect::<Vec<_>>(),
    })
}

pub(super) fn incomplete_flags(e: &Enumeration, n: usize) -> Vec<bool> {
    let mut flags = vec![false; n];
    for &v in &e.incomplete {
        flags[v] = true;
    }
    flags
}

pub(super) fn stop_name(stop: Stop) -> &'static str {
    match stop {
        Stop::Cycles => "cycle budget",
        Stop::Time => "time budget",
    }
}

pub(super) fn finite_or_null(x: f64) -> Value {
    if x.is_finite() { json!(x) } else { Value::Null }
}

fn optional(x: Option<f64>, why: &str) -> String {
    x.map(number).unwrap_or_else(|| format!("undefined: {why}"))
}

/// Six significant digits, in scientific notation outside [1e-3, 1e6).
pub(super) fn number(x: f64) -> String {
    if x == 0.0 {
        "0".to_string()
    } else if !(1e-3..1e6).contains(&x.abs()) {
        format!("{x:.5e}")
    } else {
        let digits = (5 - x.abs().log10().floor().max(-3.0) as i32).clamp(0, 8) as usize;
        format!("{x:.digits$}")
    }
}
