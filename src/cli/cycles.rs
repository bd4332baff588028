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
use super::model::{ModelArgs, load_and_analyse, weak_reads_after_writers};
use super::table::{Align, print_table};
use crate::analysis::indices::{
    fast_to_slow, separability_index, stiffness_index, stiffness_ratio,
};
use crate::analysis::johnson::{Budget, Enumeration, Progress, Stop};
use crate::analysis::operating_point::{Mode, Model, PointError, PointSpec, parse_point_spec};
use crate::analysis::partition::{Level, propose};
use crate::analysis::pcs::{CycleSets, cycle_sets};
use crate::analysis::{CycleAnalysis, Values, analyse};
use crate::causal::{Causal, causal_form, initial_point};
use crate::dae::Dae;
use crate::diagnostics::Diagnostic;
use crate::jacobian::{OdeJacobian, WeakReadsAs, ode_jacobian_with};
use crate::numfmt::format_number;
use crate::source::SourceMap;

#[derive(Args, Debug)]
pub struct CyclesArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The gain bound α: the largest gain a cycle may have over one explicit Euler step
    /// (> 0, normally ≤ 1).
    #[arg(long, default_value_t = 0.5, value_parser = positive, allow_negative_numbers = true)]
    pub alpha: f64,
    #[command(flatten)]
    pub budget: BudgetArgs,
    #[command(flatten)]
    pub point: PointArgs,
    /// Weak connections: `coupled` analyses the model they join (a weak read is the variable
    /// it reads), `split` the decoupled subsystems the partitioned solver integrates (a weak
    /// read is a value held through the step).
    #[arg(long, value_enum, default_value_t = WeakArg::Coupled)]
    pub weak: WeakArg,
    /// Partition step h: states with h̄ < h are fast (default: split at the largest gap).
    #[arg(long, value_parser = positive, allow_negative_numbers = true)]
    pub step: Option<f64>,
    /// Partition levels (the split applied again inside the fast part).
    #[arg(long, default_value_t = 2)]
    pub levels: usize,
}

/// Where J is evaluated (default: the initial state).
#[derive(Args, Debug)]
pub struct PointArgs {
    /// The operating point (with `--steady`, the Newton start): `initial` (the default: the
    /// state the initial equations give, as a simulation starts), `start` (the raw start
    /// values), and/or state values `NAME=VALUE,...` set on it, e.g. `start,x=-1`.
    #[arg(long, value_name = "start|initial,NAME=VALUE,...", value_parser = parse_point_spec)]
    pub at: Option<PointSpec>,
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

/// The cycle enumeration's default budget. A dense graph has more simple cycles than any run
/// can list (16 states all coupled: about 10¹³), and a run that never ends tells nothing; 10⁷
/// cycles take seconds, so the clock is the limit only for long cycles or a slow machine.
pub const DEFAULT_BUDGET_CYCLES: u64 = 10_000_000;
pub const DEFAULT_BUDGET_SECONDS: f64 = 60.0;

/// Limits of the cycle enumeration.
#[derive(Args, Debug)]
pub struct BudgetArgs {
    /// Stop after this many cycles; `unlimited` for no limit.
    #[arg(long, value_name = "N|unlimited", default_value_t = Limit(Some(DEFAULT_BUDGET_CYCLES)), value_parser = cycle_limit)]
    pub budget_cycles: Limit<u64>,
    /// Stop after this many seconds; `unlimited` for no limit.
    #[arg(long, value_name = "SECONDS|unlimited", default_value_t = Limit(Some(DEFAULT_BUDGET_SECONDS)), value_parser = seconds_limit)]
    pub budget_seconds: Limit<f64>,
}

impl BudgetArgs {
    pub fn budget(&self) -> Budget {
        Budget {
            max_cycles: self.budget_cycles.0,
            max_time: self.budget_seconds.0.map(Duration::from_secs_f64),
        }
    }
}

/// A limit, or `None` for none (`unlimited` on the command line).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limit<T>(pub Option<T>);

impl<T: std::fmt::Display> std::fmt::Display for Limit<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(x) => write!(f, "{x}"),
            None => f.write_str(UNLIMITED),
        }
    }
}

const UNLIMITED: &str = "unlimited";

fn cycle_limit(text: &str) -> Result<Limit<u64>, String> {
    if text == UNLIMITED {
        return Ok(Limit(None));
    }
    match text.parse::<u64>() {
        Ok(n) => Ok(Limit(Some(n))),
        Err(_) => Err(format!("`{text}` is not a count nor `{UNLIMITED}`")),
    }
}

fn seconds_limit(text: &str) -> Result<Limit<f64>, String> {
    if text == UNLIMITED {
        return Ok(Limit(None));
    }
    positive(text).map(|s| Limit(Some(s)))
}

/// What to say when a budget stopped the enumeration: how to give it more.
pub(super) fn raise_budget_advice(stop: Stop) -> String {
    let option = match stop {
        Stop::Cycles => "--budget-cycles N",
        Stop::Time => "--budget-seconds S",
    };
    format!(
        "more cycles: `{option}` (or `{UNLIMITED}`) raises the {}",
        stop_name(stop)
    )
}

pub(super) fn positive(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() => Ok(x),
        _ => Err(format!("`{text}` is not a positive number")),
    }
}

/// What the analyses make of weak connections (`--weak`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WeakArg {
    /// The model the weak connections join: a weak read is the variable it reads.
    Coupled,
    /// The decoupled subsystems: a weak read is a value held through the step.
    Split,
}

impl WeakArg {
    /// The name the output uses.
    pub fn name(self) -> &'static str {
        match self {
            WeakArg::Coupled => "coupled",
            WeakArg::Split => "split",
        }
    }
}

/// A model ready for analysis: its causal form and Jacobian for what `weak` says.
pub(super) struct Analysed {
    pub sources: SourceMap,
    pub dae: Dae,
    pub causal: Causal,
    pub jacobian: OdeJacobian,
    /// What was analysed: `split` also when `coupled` was asked for but the weak reads close a
    /// cycle (there is then no one-system order).
    pub weak: WeakArg,
}

impl Analysed {
    pub fn model(&self) -> Model<'_> {
        Model {
            dae: &self.dae,
            causal: &self.causal,
            jacobian: &self.jacobian,
        }
    }
}

/// Loads the model and builds the causal form and Jacobian `weak` asks for; on failure prints
/// and returns the exit code.
pub(super) fn analysed(model: &ModelArgs, weak: WeakArg) -> Result<Analysed, ExitCode> {
    let (flat, structure) = load_and_analyse(model)?;
    let sources = flat.sources;
    let mut dae = flat.dae;
    let causal = causal_form(&mut dae, &structure);
    let (causal, weak) = match weak {
        WeakArg::Split => (causal, WeakArg::Split),
        WeakArg::Coupled => coupled_order(causal, &dae, &sources),
    };
    let reads = match weak {
        WeakArg::Coupled => WeakReadsAs::Current,
        WeakArg::Split => WeakReadsAs::Held,
    };
    let jacobian = ode_jacobian_with(&mut dae, &causal, reads);
    super::leave_allocated(structure);
    Ok(Analysed {
        sources,
        dae,
        causal,
        jacobian,
        weak,
    })
}

/// The causal form with every weak read after the step that solves its variable, so that it
/// reads the current value; when the weak reads close a cycle there is no such order, and the
/// model is analysed split, with a warning.
fn coupled_order(causal: Causal, dae: &Dae, sources: &SourceMap) -> (Causal, WeakArg) {
    let consequence = "there is no order in which each reads its variable's current value, \
                       so the decoupled subsystems are analysed (`--weak split`)";
    match weak_reads_after_writers(causal, dae, sources, consequence) {
        Ok(ordered) => (ordered, WeakArg::Coupled),
        Err(causal) => (causal, WeakArg::Split),
    }
}

/// A model's state names and J's values at the chosen operating points.
pub(super) struct Loaded {
    pub names: Vec<String>,
    pub points: Vec<Values>,
    pub point: PointChoice,
    pub weak: WeakArg,
}

/// Which operating points were used: a short name for scripts and a description for people.
pub(super) struct PointChoice {
    /// `initial`, `start`, `steady` or `trajectory`.
    pub kind: &'static str,
    pub description: String,
    /// The distinct modes of a hybrid model at the points, in the points' order; empty for a
    /// model without discrete-time variables.
    pub modes: Vec<Mode>,
}

impl PointChoice {
    /// Notes the mode at an evaluated point, once per distinct mode.
    pub fn note_mode(&mut self, m: &Model<'_>, point: &crate::causal::Point) {
        let mode = m.mode(point);
        if !mode.is_empty() && !self.modes.contains(&mode) {
            self.modes.push(mode);
        }
    }

    /// The description with the mode it was analysed in: "the initial state, mode
    /// `off = true, n = 0`".
    pub fn text(&self) -> String {
        let show = |mode: &Mode| -> String {
            let pairs: Vec<String> = mode.iter().map(|(n, v)| format!("{n} = {v}")).collect();
            format!("`{}`", pairs.join(", "))
        };
        match self.modes.as_slice() {
            [] => self.description.clone(),
            [one] => format!("{}, mode {}", self.description, show(one)),
            many => {
                let shown: Vec<String> = many.iter().map(show).collect();
                format!("{}, modes {}", self.description, shown.join("; "))
            }
        }
    }

    /// The modes for JSON: one object of name → value per mode.
    pub fn modes_json(&self) -> Value {
        self.modes
            .iter()
            .map(|mode| {
                mode.iter()
                    .map(|(n, v)| (n.clone(), Value::String(v.clone())))
                    .collect::<serde_json::Map<_, _>>()
                    .into()
            })
            .collect::<Vec<Value>>()
            .into()
    }
}

/// Loads the model and evaluates J where `point` says; on failure prints and returns the exit
/// code.
pub(super) fn load(
    model: &ModelArgs,
    point: &PointArgs,
    weak: WeakArg,
) -> Result<Loaded, ExitCode> {
    let analysed = analysed(model, weak)?;
    let m = analysed.model();
    let names = m.state_names();
    let (points, choice) =
        operating_points(&m, point).map_err(|failure| failure.report(&analysed.sources))?;
    let weak = analysed.weak;
    super::leave_allocated(analysed);
    Ok(Loaded {
        names,
        points,
        point: choice,
        weak,
    })
}

pub(super) enum Failure {
    Usage(String),
    Model(Diagnostic),
}

impl Failure {
    /// Prints the failure; returns its exit code (2 for bad usage, 1 for the model).
    pub fn report(self, sources: &SourceMap) -> ExitCode {
        match self {
            Failure::Usage(message) => super::usage_error(message),
            Failure::Model(d) => {
                super::report(sources, &[d]);
                ExitCode::from(1)
            }
        }
    }
}

/// The point `spec` names, every unknown evaluated there, and its description.
pub(super) fn chosen_point(
    m: &Model<'_>,
    spec: &PointSpec,
) -> Result<(crate::causal::Point, PointChoice), Failure> {
    let model_error = |e: PointError| Failure::Model(point_diagnostic(m, e));
    let start = initial_point(m.dae).map_err(|f| model_error(PointError::Eval(f)))?;
    let mut point = m.base_point(spec.base, start).map_err(model_error)?;
    m.set_states(&mut point, &spec.states)
        .map_err(|e| Failure::Usage(format!("`--at`: {e}")))?;
    let mut description = spec.base.description().to_string();
    if !spec.states.is_empty() {
        let set: Vec<String> = spec
            .states
            .iter()
            .map(|(name, x)| format!("{name}={}", format_number(*x)))
            .collect();
        description = format!("{description} with {}", set.join(","));
    }
    let choice = PointChoice {
        kind: spec.base.name(),
        description,
        modes: Vec::new(),
    };
    Ok((point, choice))
}

fn operating_points(
    m: &Model<'_>,
    args: &PointArgs,
) -> Result<(Vec<Values>, PointChoice), Failure> {
    let model_error = |e: PointError| Failure::Model(point_diagnostic(m, e));
    if let Some(path) = &args.trajectory {
        let start = initial_point(m.dae).map_err(|f| model_error(PointError::Eval(f)))?;
        let text = std::fs::read_to_string(path).map_err(|e| {
            Failure::Model(Diagnostic::error(format!(
                "cannot read `{}`: {e}",
                path.display()
            )))
        })?;
        let rows = m
            .trajectory(&start, &text, args.samples as usize)
            .map_err(|e| Failure::Model(trajectory_diagnostic(path, e)))?;
        let mut choice = PointChoice {
            kind: "trajectory",
            description: format!("{} rows of {}", rows.len(), path.display()),
            modes: Vec::new(),
        };
        let values = rows
            .into_iter()
            .map(|mut p| {
                let values = m.values_at(&mut p).map_err(model_error)?;
                choice.note_mode(m, &p);
                Ok(values)
            })
            .collect::<Result<Vec<_>, _>>()?;
        return Ok((values, choice));
    }
    let (mut point, choice) = chosen_point(m, &args.at.clone().unwrap_or_default())?;
    if args.steady {
        let mut steady = m.steady_state(point).map_err(model_error)?;
        let values = m.values_at(&mut steady).map_err(model_error)?;
        let mut choice = PointChoice {
            kind: "steady",
            description: format!("steady state (from {})", choice.description),
            modes: Vec::new(),
        };
        choice.note_mode(m, &steady);
        return Ok((vec![values], choice));
    }
    let values = m.values_at(&mut point).map_err(model_error)?;
    let mut choice = choice;
    choice.note_mode(m, &point);
    Ok((vec![values], choice))
}

fn trajectory_diagnostic(path: &std::path::Path, e: PointError) -> Diagnostic {
    match e {
        PointError::Trajectory(m) => {
            Diagnostic::error(format!("trajectory `{}`: {m}", path.display()))
        }
        other => Diagnostic::error(format!("trajectory `{}`: {other:?}", path.display())),
    }
}

pub(super) fn point_diagnostic(m: &Model<'_>, e: PointError) -> Diagnostic {
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
        PointError::Init(f) => super::simulate::init_failure(m.dae, m.causal, &f)
            .with_note("the operating point is the initial state; `--at start` takes the start values as they are"),
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
        return super::usage_error("`--levels` must be at least 1");
    }
    let loaded = match load(&args.model, &args.point, args.weak) {
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
    budget: Budget,
    point: &'a PointChoice,
    weak: WeakArg,
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
            budget: args.budget.budget(),
            point: &loaded.point,
            weak: loaded.weak,
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
            "operating_point": self.point.kind,
            "operating_points": self.point.description,
            "modes": self.point.modes_json(),
            "weak": self.weak.name(),
            "cycles": e.cycles,
            "complete": e.complete(),
            "budget": {
                "stopped": e.stopped.map(stop_name),
                "start_nodes_done": e.starts_done,
                "start_nodes": e.starts_total,
                "incomplete_states": named(&e.incomplete),
                "max_cycles": self.budget.max_cycles,
                "max_seconds": self.budget.max_time.map(|t| t.as_secs_f64()),
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
            "{} states, {} cycles{}, α = {}, at {}, weak connections {}",
            names.len(),
            e.cycles,
            if e.complete() {
                ""
            } else {
                " (budget hit: incomplete)"
            },
            format_number(self.alpha),
            self.point.text(),
            self.weak.name()
        );
        let rows: Vec<Vec<String>> = self
            .order()
            .into_iter()
            .map(|i| {
                let h = self.h_bar()[i];
                let shown = if h.is_finite() {
                    format_number(h)
                } else {
                    "∞ (no cycle)".to_string()
                };
                let flag = if incomplete[i] {
                    "(incomplete: h̄ may be too large)"
                } else {
                    ""
                };
                let cycles = self.analysis.bounds.cycles_through[i].to_string();
                vec![names[i].clone(), shown, cycles, flag.to_string()]
            })
            .collect();
        print_table(
            &["state", "h̄", "cycles", ""],
            &rows,
            &[Align::Left, Align::Right, Align::Right, Align::Left],
        );
        if let Some(stop) = e.stopped {
            outln!(
                "budget hit ({}): {} of {} start nodes done, {} states incomplete",
                stop_name(stop),
                e.starts_done,
                e.starts_total,
                e.incomplete.len()
            );
            outln!("{}", raise_budget_advice(stop));
        }
        match &self.ratio {
            Ok(r) => outln!("stiffness ratio σ_R     {}", format_number(*r)),
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
                format_number(l.threshold),
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
    x.map(format_number)
        .unwrap_or_else(|| format!("undefined: {why}"))
}
