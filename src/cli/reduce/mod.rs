//! `mocca reduce`: term-ranking model reduction (SPEC §11). Simulates the model, ranks the
//! terms of its equations, applies the operations in rank order under the matching guard
//! (and, with `--verify`, the error bound), and writes the reduced model as Modelica.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;

use clap::{Args, ValueEnum};
use faer::dyn_stack::{MemBuffer, StackReq};
use serde_json::{Value, json};

mod activity;

use super::Format;
use super::model::{ModelArgs, load_and_flatten};
use super::simulate::{Integrator, MethodArg};
use super::table::{Align, print_table};
use crate::causal::Point;
use crate::dae::Dae;
use crate::diagnostics::Diagnostic;
use crate::expr::{ExprId, ExprPool};
use crate::numfmt::Number;
use crate::reduce::guard::{Matched, keeps_perfect_matching};
use crate::reduce::initial::InitialChanges;
use crate::reduce::onestep::{Linearised, change, reach, scales, step_factor};
use crate::reduce::operation::{Reduced, apply};
use crate::reduce::plot::{Response, write as write_plot};
use crate::reduce::sample::{
    Measured, SampleError, Sampled, Settings, error_percent, sample, sample_observed,
};
use crate::reduce::statistical::{Figures, RelativeTo, figures, verdict};
use crate::reduce::terms::{Described, candidates, describe, has_component, is_constant, values};
use crate::reduce::{Operation, TermRef};
use crate::simulate::linear::PivotingLu;
use crate::source::SourceMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MetricArg {
    Statistical,
    Onestep,
    Activity,
}

/// `--relative-to`: what `statistical`'s figures are relative to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RelativeToArg {
    Mean,
    Sum,
}

impl RelativeToArg {
    fn relative_to(self) -> RelativeTo {
        match self {
            RelativeToArg::Mean => RelativeTo::Mean,
            RelativeToArg::Sum => RelativeTo::Sum,
        }
    }

    fn name(self) -> &'static str {
        match self {
            RelativeToArg::Mean => "mean",
            RelativeToArg::Sum => "sum",
        }
    }
}

/// `--error-on`: the variables whose errors count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ErrorOnArg {
    States,
    Unknowns,
}

impl ErrorOnArg {
    pub fn measured(self) -> Measured {
        match self {
            ErrorOnArg::States => Measured::States,
            ErrorOnArg::Unknowns => Measured::Unknowns,
        }
    }
}

impl MetricArg {
    fn name(self) -> &'static str {
        match self {
            MetricArg::Statistical => "statistical",
            MetricArg::Onestep => "onestep",
            MetricArg::Activity => "activity",
        }
    }
}

#[derive(Args, Debug)]
pub struct ReduceArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// How terms are ranked: `statistical`, by their relative mean and spread within their
    /// equation over the reference samples; `onestep`, by the error one Newton step of the
    /// reduced system predicts (Sherman–Morrison, one factorization of J_F per sample);
    /// `activity`, components by the energy through their connectors (no operation)
    #[arg(long, value_enum, default_value_t = MetricArg::Statistical)]
    pub metric: MetricArg,
    /// Instants of the reference run the terms are evaluated at
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(2..1_000_000))]
    pub samples: u64,
    /// `statistical`: a term's mean and spread relative to the mean of its equation's N terms
    /// (`(1/N) Σ`), or to their sum (`Σ`, N times smaller: the figures of Sodja and Žlajpah's
    /// tables)
    #[arg(long, value_enum, default_value_t = RelativeToArg::Mean)]
    pub relative_to: RelativeToArg,
    /// A term goes when its relative spread σ_r (and, to be deleted rather than frozen to its
    /// mean, its relative mean |m_r|) is below this
    #[arg(long, default_value_t = 0.1, value_parser = super::cycles::positive)]
    pub threshold: f64,
    /// The error bound, in percent of each variable's scale (its largest magnitude over the
    /// reference run): the accumulated predicted error of the operations applied (`onestep`),
    /// and each verified error (`--verify`)
    #[arg(long, value_name = "PCT", default_value_t = 5.0, value_parser = super::cycles::positive)]
    pub tol: f64,
    /// The variables the predicted and verified errors are measured on: `states`, the states
    /// as Sodja and Žlajpah measure them and the variables no state depends on (outputs, whose
    /// error no state would show); `unknowns`, every unknown, the algebraic variables too
    #[arg(long, value_enum, default_value_t = ErrorOnArg::States)]
    pub error_on: ErrorOnArg,
    /// `activity`: remove the least active components, which together carry less than PCT
    /// percent of the activity, one by one under the guard and verified against `--tol`
    #[arg(long, value_name = "PCT", value_parser = super::cycles::positive)]
    pub remove_below: Option<f64>,
    /// Only the terms of this component instance (and the instances inside it)
    #[arg(long, value_name = "NAME")]
    pub component: Option<String>,
    /// `statistical`: list every term of the equations ranked, with its |m_r| and σ_r, the
    /// candidates marked by their operation, sorted by σ_r (Sodja and Žlajpah's Table 3);
    /// only the candidates are applied
    #[arg(long)]
    pub all: bool,
    /// Simulate the reduced model after each operation, and undo one whose actual error
    /// exceeds `--tol`
    #[arg(long)]
    pub verify: bool,
    /// Write the reduced model as (flat) Modelica
    #[arg(long, value_name = "FILE.mo")]
    pub out: Option<PathBuf>,
    /// Draw the states' responses of the full and the reduced model (SVG)
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// The reference run's method: `bdf` (default) or a fixed-step method
    #[arg(long, value_enum, default_value_t = MethodArg::Bdf)]
    pub method: MethodArg,
    /// The fixed-step methods' step (default 0.001), and `onestep`'s BDF1 step h
    /// (J_F = ∂F/∂z + ∂F/∂ẋ / h). Without it, h = 5/ρ: the one-step rate 1/h is a fifth of the
    /// model's fastest rate ρ (the rule of Sodja and Žlajpah's paper), with ρ the largest
    /// |λ(∂f/∂x)| at each sample, its median over the samples
    #[arg(long, value_parser = super::cycles::positive)]
    pub step: Option<f64>,
    /// The start time (default: the model's `experiment` annotation's, else 0)
    #[arg(long, allow_negative_numbers = true)]
    pub start: Option<f64>,
    /// The end time (default: the model's `experiment` annotation's, else 1)
    #[arg(long, allow_negative_numbers = true)]
    pub stop: Option<f64>,
    /// The BDF's tolerance (relative and absolute), or the implicit methods' Newton tolerance
    #[arg(long, default_value_t = 1e-8, value_parser = super::cycles::positive)]
    pub sim_tol: f64,
}

/// One ranked operation and what became of it.
struct Entry {
    term: TermRef,
    described: Described,
    /// `statistical`'s figures.
    figures: Option<Figures>,
    /// `onestep`'s predicted error, in percent (`None` when the operation is illegal).
    predicted: Option<f64>,
    operation: Operation,
    /// The error of the reduced model with this operation, with `--verify`.
    actual: Option<f64>,
    outcome: Outcome,
}

#[derive(Clone, Copy, PartialEq)]
enum Outcome {
    Applied,
    /// The reduced model would have no perfect matching.
    Refused,
    /// `--verify`: the reduced model's error exceeded `--tol`.
    Undone,
    /// `--verify`: the reduced model did not initialise or simulate.
    Fails,
    /// `onestep`: `1 + vᵀu` vanishes at a sample, the reduced system is singular.
    Illegal,
    /// `onestep`: the change or its gradient is not a number at a sample.
    Unevaluable,
    /// `onestep`: the accumulated predicted error would exceed `--tol`.
    Bound,
    /// `statistical --all`: a term listed with its figures that is no candidate.
    NotCandidate,
}

impl Outcome {
    fn name(self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::Refused => "refused: no perfect matching",
            Outcome::Undone => "undone: error above --tol",
            Outcome::Fails => "undone: the reduced model does not simulate",
            Outcome::Illegal => "illegal: the reduced system is singular",
            Outcome::Unevaluable => "not predicted: the term cannot be evaluated at the samples",
            Outcome::Bound => "not applied: the predicted error bound is reached",
            Outcome::NotCandidate => {
                "no candidate: σ_r, or |m_r| of a constant, at --threshold or above"
            }
        }
    }
}

pub fn run(args: &ReduceArgs) -> ExitCode {
    for path in args.out.iter().chain(&args.plot) {
        if let Err(message) = super::check_writable(path) {
            return super::failure_without_source(message, ExitCode::from(1));
        }
    }
    let flat = match load_and_flatten(&args.model) {
        Ok(flat) => flat,
        Err((sources, diags)) => {
            super::report(&sources, &diags);
            return super::exit_code(&diags);
        }
    };
    super::report(&flat.sources, &flat.warnings);
    let settings = match settings(args, &flat.dae.experiment) {
        Ok(s) => s,
        Err(m) => return super::usage_error(m),
    };
    if let Some(name) = &args.component
        && !has_component(&flat.dae, name)
    {
        return super::usage_error(format!(
            "`--component`: the model has no component `{name}`"
        ));
    }
    let mut bar = super::cycles::ProgressBar::new("reference");
    let reference = sample_observed(&flat.dae, &settings, |done, total| {
        bar.update(done, total, || "steps".to_string())
    });
    bar.finish();
    let mut reference = match reference {
        Ok(s) => s,
        Err(e) => return sample_failure(&flat.sources, e, "in the reference run"),
    };
    let clock = std::time::Instant::now();
    let ranked = match args.metric {
        MetricArg::Statistical => Ok((rank(&flat.dae, &flat.sources, &reference, args), None)),
        MetricArg::Onestep => rank_onestep(&flat.dae, &flat.sources, &mut reference, args)
            .map(|(entries, h)| (entries, Some(h))),
        MetricArg::Activity => {
            let code = activity::run(&flat.dae, &reference, &settings, args);
            super::leave_allocated((flat, reference));
            return code;
        }
    };
    let (mut entries, h) = match ranked {
        Ok(ranked) => ranked,
        Err(message) => return super::failure_without_source(message, ExitCode::from(1)),
    };
    let ranking_seconds = clock.elapsed().as_secs_f64();
    let reduced = apply_in_order(&flat.dae, &reference, &settings, args, &mut entries);
    if let Err(message) = write_outputs(&flat.dae, &reduced.dae, &notes(&entries), &settings, args)
    {
        return super::failure_without_source(message, ExitCode::from(1));
    }
    let initial = InitialReport::of(&flat.dae, &reduced.initial);
    match args.model.format() {
        Format::Json => super::print_json(&json!({
            "metric": args.metric.name(),
            "samples": args.samples,
            "threshold": args.threshold,
            "tol": args.tol,
            "ranking_time_s": ranking_seconds,
            "h": h.map(|h| h.step),
            "fastest_rate": h.and_then(|h| h.fastest),
            "error_on": args.error_on.measured().name(),
            "relative_to": args.relative_to.name(),
            "ranking": entries.iter().map(entry_json).collect::<Vec<_>>(),
            "dropped_initial_equations": initial.dropped,
            "steady_state_initial": initial.steady_state,
        })),
        Format::Text => print(&entries, &initial, args, h),
    }
    super::leave_allocated((flat, reference, reduced));
    ExitCode::SUCCESS
}

/// The reference run's settings, the interval defaulting to the model's `experiment`.
fn settings(args: &ReduceArgs, experiment: &crate::dae::Experiment) -> Result<Settings, String> {
    if args.remove_below.is_some() && args.metric != MetricArg::Activity {
        return Err("`--remove-below` goes with `--metric activity`".to_string());
    }
    if args.all && args.metric != MetricArg::Statistical {
        return Err(
            "`--all` goes with `--metric statistical` (`onestep` ranks every term already)"
                .to_string(),
        );
    }
    let start = args.start.or(experiment.start).unwrap_or(0.0);
    let stop = args.stop.or(experiment.stop).unwrap_or(1.0);
    if !(start.is_finite() && stop.is_finite() && stop > start) {
        return Err("`--stop` must be a number after `--start`".to_string());
    }
    let method = match Integrator::of(args.method) {
        Integrator::Bdf => None,
        Integrator::Fixed(m) => Some(m),
        Integrator::Mixed(_) => {
            return Err("the reference run takes `bdf` or a single fixed-step method".into());
        }
    };
    Ok(Settings {
        method,
        start,
        stop,
        step: args.step.unwrap_or(1e-3),
        tol: args.sim_tol,
        samples: args.samples as usize,
    })
}

/// The candidate operations of the terms, ranked by σ_r (ties in model order).
fn rank(flat: &Dae, sources: &SourceMap, reference: &Sampled, args: &ReduceArgs) -> Vec<Entry> {
    let terms = candidates(flat, args.component.as_deref());
    let mut entries = Vec::new();
    // Figures relative to every term of the equation, constant ones included.
    for group in terms.chunk_by(|a, b| a.equation == b.equation) {
        let equation = group[0].equation;
        let sampled: Vec<Vec<f64>> = (0..flat.equations[equation].terms.len())
            .map(|term| {
                let t = TermRef { equation, term };
                values(flat, &reference.prepared, t, &reference.points)
            })
            .collect();
        let figures = figures(&sampled, args.relative_to.relative_to());
        for &t in group {
            let f = figures[t.term];
            let verdict = verdict(&f, args.threshold, is_constant(flat, t));
            if verdict.is_none() && !args.all {
                continue;
            }
            entries.push(Entry {
                term: t,
                described: describe(flat, sources, t),
                figures: Some(f),
                predicted: None,
                operation: verdict.unwrap_or(Operation::Delete),
                actual: None,
                outcome: match verdict {
                    Some(_) => Outcome::Applied,
                    None => Outcome::NotCandidate,
                },
            });
        }
    }
    let sigma = |e: &Entry| e.figures.map_or(f64::INFINITY, |f| f.sigma_r);
    entries.sort_by(|a, b| sigma(a).total_cmp(&sigma(b)).then(a.term.cmp(&b.term)));
    entries
}

/// The candidate operations ranked by the error one Newton step of the reduced system predicts
/// (SPEC §11): per term, deleting it, or else replacing it by its mean; illegal operations last.
fn rank_onestep(
    flat: &Dae,
    sources: &SourceMap,
    reference: &mut Sampled,
    args: &ReduceArgs,
) -> Result<(Vec<Entry>, Step), String> {
    let h = onestep_step(reference, args)?;
    let pool = &mut reference.prepared.pool;
    let lin = Linearised::new(flat, pool, h.step)
        .ok_or("the flat model has not as many equations as unknowns")?;
    let measured = reference.measured(args.error_on.measured());
    let scales = scales(&lin, &reference.points, &measured);
    let terms = candidates(flat, args.component.as_deref());
    // Per term: the change and its gradient for deleting it and for replacing it by its mean.
    let mut options: Vec<Operations> = Vec::with_capacity(terms.len());
    for &t in &terms {
        let sampled = values(flat, &reference.prepared, t, &reference.points);
        let mean = sampled.iter().sum::<f64>() / sampled.len() as f64;
        let pool = &mut reference.prepared.pool;
        let term = flat.equations[t.equation].terms[t.term].expr;
        let gradient = lin.gradient(pool, term);
        let candidate = |pool: &mut ExprPool, op| Candidate {
            op,
            change: change(pool, flat, t, op),
            gradient: gradient.clone(),
            sign: -flat.equations[t.equation].terms[t.term].sign,
            worst: Ok(0.0),
        };
        let delete = candidate(pool, Operation::Delete);
        let mut replace = candidate(pool, Operation::Replace(mean));
        if is_constant(flat, t) {
            // Its mean is itself: deleting it is its one operation.
            replace.worst = Err(Outcome::Illegal);
        }
        options.push((t, [delete, replace]));
    }
    let pool = &reference.prepared.pool;
    let n = lin.unknowns.len();
    let mut lu = PivotingLu::new(n, lin.pattern());
    let threads = std::thread::available_parallelism().map_or(1, |c| c.get());
    for point in &reference.points {
        let values = lin.values_at(pool, point);
        if !lu.factor(|k| values[k]) {
            return Err(format!(
                "J_F is singular at time {}: the one-step prediction needs it regular",
                point.time
            ));
        }
        // Per equation: `u = J_F⁻¹ e_l` and how far it reaches relative to the scales, solved
        // for a batch of equations at once, the batches shared out among the processors.
        let mut groups: Vec<&mut [Operations]> = options
            .chunk_by_mut(|a, b| a.0.equation == b.0.equation)
            .collect();
        let batches = groups.len().div_ceil(SOLVE_BATCH);
        let queue = Mutex::new(groups.chunks_mut(SOLVE_BATCH));
        let work = || {
            let mut scratch = MemBuffer::new(StackReq::EMPTY);
            loop {
                let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                let Some(batch) = next else { break };
                predict_batch(&lu, batch, &scales, (pool, point), &mut scratch);
            }
        };
        std::thread::scope(|scope| {
            for _ in 1..threads.min(batches) {
                // A thread that cannot start leaves its share to the others.
                let _ = std::thread::Builder::new()
                    .stack_size(super::STACK_BYTES)
                    .spawn_scoped(scope, work);
            }
            work();
        });
    }
    let mut entries: Vec<Entry> = options
        .into_iter()
        .map(|(t, [delete, replace])| {
            let chosen = match (delete.worst, replace.worst) {
                (Ok(d), Ok(r)) if d > args.tol && r < d => replace,
                (Err(_), Ok(_)) => replace,
                _ => delete,
            };
            Entry {
                term: t,
                described: describe(flat, sources, t),
                figures: None,
                predicted: chosen.worst.ok(),
                operation: chosen.op,
                actual: None,
                outcome: chosen.worst.err().unwrap_or(Outcome::Applied),
            }
        })
        .collect();
    let key = |e: &Entry| e.predicted.unwrap_or(f64::INFINITY);
    entries.sort_by(|a, b| key(a).total_cmp(&key(b)).then(a.term.cmp(&b.term)));
    Ok((entries, h))
}

/// `onestep`'s BDF1 step and where it comes from.
#[derive(Clone, Copy)]
struct Step {
    step: f64,
    /// Without `--step`: the model's fastest rate (the median over the samples).
    fastest: Option<f64>,
}

impl Step {
    fn describe(&self) -> String {
        match self.fastest {
            None => format!("h = {} (--step)", Number(self.step)),
            Some(rate) => format!(
                "h = {} (1/h a fifth of the fastest rate, {} /s: the median over the samples of \
                 the largest |λ(∂f/∂x)|)",
                Number(rounded(self.step)),
                Number(rounded(rate)),
            ),
        }
    }
}

/// `--step`, or `h = 5/ρ` with `ρ` the fastest rate of the reference run.
fn onestep_step(reference: &Sampled, args: &ReduceArgs) -> Result<Step, String> {
    if let Some(step) = args.step {
        return Ok(Step {
            step,
            fastest: None,
        });
    }
    match reference.fastest_rate() {
        Some(rate) => Ok(Step {
            step: crate::reduce::onestep::default_step(rate),
            fastest: Some(rate),
        }),
        None => Err(
            "the model's Jacobian ∂f/∂x is zero at every sample, so it has no time constant to \
             take the one-step h from: give `--step`"
                .to_string(),
        ),
    }
}

/// One term's two operations, deleting it and replacing it by its mean.
type Operations = (TermRef, [Candidate; 2]);

/// Takes in one sample for a batch of equations' operations: solves `u = J_F⁻¹ e_l` for each
/// equation `l` with `lu`'s factors at the sample, and lets each operation observe it.
fn predict_batch(
    lu: &PivotingLu,
    batch: &mut [&mut [Operations]],
    scales: &[f64],
    (pool, point): (&ExprPool, &Point),
    scratch: &mut MemBuffer,
) {
    let n = scales.len();
    let mut u = vec![0.0; n * batch.len()];
    for (k, group) in batch.iter().enumerate() {
        u[k * n + group[0].0.equation] = 1.0;
    }
    lu.solve_columns_in(&mut u, batch.len(), scratch);
    for (k, group) in batch.iter_mut().enumerate() {
        let column = &u[k * n..(k + 1) * n];
        let r = reach(column, scales);
        for (_, pair) in group.iter_mut() {
            for c in pair.iter_mut() {
                c.observe(pool, point, (column, r));
            }
        }
    }
}

/// Equations whose `J_F⁻¹ e_l` one pass over the factors solves.
const SOLVE_BATCH: usize = 64;

/// One operation of `onestep`: its change `δ`, the gradient of its term, and its worst predicted
/// error so far (`None` once it was illegal at a sample).
struct Candidate {
    op: Operation,
    change: ExprId,
    gradient: Vec<(usize, ExprId)>,
    /// `∇δ = sign · ∇t`: −(the term's sign in the residual) for both operations.
    sign: f64,
    /// The largest predicted error so far, or why there is none.
    worst: Result<f64, Outcome>,
}

impl Candidate {
    /// Takes in one sample: `u = J_F⁻¹ e_l` of the term's equation and its reach.
    fn observe(&mut self, pool: &ExprPool, point: &Point, (u, reach): (&[f64], f64)) {
        let Ok(worst) = self.worst else {
            return;
        };
        let delta = pool.eval(self.change, point).unwrap_or(f64::NAN);
        let v: Vec<(usize, f64)> = self
            .gradient
            .iter()
            .map(|&(i, e)| (i, self.sign * pool.eval(e, point).unwrap_or(f64::NAN)))
            .collect();
        if delta.is_nan() || v.iter().any(|(_, x)| x.is_nan()) {
            self.worst = Err(Outcome::Unevaluable);
            return;
        }
        self.worst = match step_factor(u, delta, &v) {
            Some(f) => Ok(worst.max(100.0 * f.abs() * reach)),
            None => Err(Outcome::Illegal),
        };
    }
}

/// Applies the entries' operations one by one in rank order, each guarded, until their
/// accumulated predicted error reaches the bound or, with `--verify`, each kept while the
/// verified error stays within it; records each outcome. The model they leave.
fn apply_in_order(
    flat: &Dae,
    reference: &Sampled,
    settings: &Settings,
    args: &ReduceArgs,
    entries: &mut [Entry],
) -> Reduced {
    let mut applied: Vec<(TermRef, Operation)> = Vec::new();
    // The fast guard, rebuilt after an operation only the full analysis could accept.
    let mut fast = Matched::new(flat);
    let mut bar = super::cycles::ProgressBar::new("verify");
    let total = entries.len() as u64;
    let mut accumulated = 0.0;
    for (k, entry) in entries.iter_mut().enumerate() {
        if matches!(
            entry.outcome,
            Outcome::Illegal | Outcome::Unevaluable | Outcome::NotCandidate
        ) {
            continue;
        }
        // Verified, an operation is judged by its actual error: the prediction only orders.
        if let Some(p) = entry.predicted
            && accumulated + p > args.tol
            && !args.verify
        {
            entry.outcome = Outcome::Bound;
            continue;
        }
        applied.push((entry.term, entry.operation));
        let e = entry.term.equation;
        let changes: Vec<(usize, Operation)> = applied
            .iter()
            .filter(|(t, _)| t.equation == e)
            .map(|&(t, op)| (t.term, op))
            .collect();
        // The fast guard's verdict, `None` where only the full analysis can tell.
        let guard = fast.as_mut().map(|m| m.check(flat, e, &changes));
        // The whole reduced model, built once when the full guard or `--verify` needs it.
        let trial = (guard.is_none() || args.verify && matches!(guard, Some(Some(_))))
            .then(|| apply(flat, &applied));
        let structural = match &guard {
            Some(kept) => kept.is_some(),
            None => (trial.as_ref()).is_some_and(|t| keeps_perfect_matching(&t.dae)),
        };
        entry.outcome = match &trial {
            _ if !structural => Outcome::Refused,
            Some(trial) if args.verify => {
                bar.update(k as u64, total, || "reduced models simulated".to_string());
                entry.actual = sample(&trial.dae, settings)
                    .ok()
                    .map(|run| error_percent(reference, &run, args.error_on.measured()));
                match entry.actual {
                    Some(e) if e <= args.tol => Outcome::Applied,
                    Some(_) => Outcome::Undone,
                    None => Outcome::Fails,
                }
            }
            _ => Outcome::Applied,
        };
        if entry.outcome != Outcome::Applied {
            applied.pop();
            continue;
        }
        accumulated += entry.predicted.unwrap_or(0.0);
        match (guard.flatten(), fast.as_mut(), trial) {
            (Some(kept), Some(m), _) => m.commit(e, *kept),
            (_, _, Some(trial)) => fast = Matched::new(&trial.dae),
            _ => fast = None,
        }
    }
    bar.finish();
    apply(flat, &applied)
}

/// The comment the reduced model's changed equations carry.
fn notes(entries: &[Entry]) -> BTreeMap<usize, String> {
    let mut notes: BTreeMap<usize, String> = BTreeMap::new();
    for e in entries.iter().filter(|e| e.outcome == Outcome::Applied) {
        let what = match e.operation {
            Operation::Delete => format!("deleted `{}`", e.described.text),
            Operation::Replace(c) => format!("replaced `{}` by {}", e.described.text, Number(c)),
        };
        let note = notes.entry(e.term.equation).or_insert_with(|| {
            format!("mocca reduce ({}:{}):", e.described.file, e.described.line)
        });
        note.push(' ');
        note.push_str(&what);
        note.push(';');
    }
    for note in notes.values_mut() {
        note.pop();
    }
    notes
}

fn entry_json(e: &Entry) -> Value {
    json!({
        "term": e.described.text,
        "file": e.described.file,
        "line": e.described.line,
        "component": e.described.component,
        "operation": (e.outcome != Outcome::NotCandidate).then(|| e.operation.name()),
        "value": match e.operation {
            Operation::Replace(c) => Some(c),
            Operation::Delete => None,
        },
        "candidate": e.outcome != Outcome::NotCandidate,
        "mean": e.figures.map(|f| f.mean),
        "std": e.figures.map(|f| f.std),
        "m_r": e.figures.map(|f| f.m_r),
        "sigma_r": e.figures.map(|f| f.sigma_r),
        "predicted": e.predicted,
        "actual": e.actual,
        "applied": e.outcome == Outcome::Applied,
        "outcome": e.outcome.name(),
    })
}

fn print(entries: &[Entry], initial: &InitialReport, args: &ReduceArgs, h: Option<Step>) {
    let applied = entries
        .iter()
        .filter(|e| e.outcome == Outcome::Applied)
        .count();
    let how = match args.metric {
        MetricArg::Statistical | MetricArg::Activity => {
            format!("statistical ranking, threshold {}", Number(args.threshold))
        }
        MetricArg::Onestep => format!(
            "one-step ranking, {}, bound {} %",
            h.map_or_else(String::new, |h| h.describe()),
            Number(args.tol)
        ),
    };
    let candidates = (entries.iter())
        .filter(|e| e.outcome != Outcome::NotCandidate)
        .count();
    let listed = match entries.len() - candidates {
        0 => String::new(),
        others => format!(" (and {others} terms that are no candidates)"),
    };
    outln!(
        "{how}, over {} samples: {candidates} candidate operations{listed}, {applied} applied",
        args.samples,
    );
    if !entries.is_empty() {
        let rows: Vec<Vec<String>> = entries
            .iter()
            .map(|e| {
                vec![
                    e.described.text.clone(),
                    e.described.line.to_string(),
                    e.described.component.clone(),
                    match e.operation {
                        _ if e.outcome == Outcome::NotCandidate => "-".to_string(),
                        Operation::Delete => "delete".to_string(),
                        Operation::Replace(c) => format!("replace by {}", Number(rounded(c))),
                    },
                    e.figures
                        .map_or("-".to_string(), |f| format!("{:.3e}", f.m_r)),
                    e.figures
                        .map_or("-".to_string(), |f| format!("{:.3e}", f.sigma_r)),
                    e.predicted.map_or("-".to_string(), |p| format!("{p:.3}")),
                    e.actual.map_or("-".to_string(), |a| format!("{a:.3}")),
                    e.outcome.name().to_string(),
                ]
            })
            .collect();
        let header = [
            "term",
            "line",
            "component",
            "operation",
            "m_r",
            "σ_r",
            "predicted %",
            "actual %",
            "outcome",
        ];
        let align = [
            Align::Left,
            Align::Right,
            Align::Left,
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Left,
        ];
        print_table(&header, &rows, &align);
    }
    initial.print();
}

/// `x` to 6 significant digits, as the table shows a mean (JSON and `--out` keep it whole).
fn rounded(x: f64) -> f64 {
    format!("{x:.5e}").parse().unwrap_or(x)
}

/// How the reduction changed initialisation, as the user reads it.
struct InitialReport {
    /// The dropped initial equations, as `lhs = rhs`.
    dropped: Vec<String>,
    /// The states started in steady state instead.
    steady_state: Vec<String>,
}

impl InitialReport {
    fn of(flat: &Dae, changes: &InitialChanges) -> InitialReport {
        let equation = |i: usize| {
            let eq = &flat.initial_equations[i];
            format!("{} = {}", flat.display(eq.lhs), flat.display(eq.rhs))
        };
        InitialReport {
            dropped: changes.dropped.iter().map(|&i| equation(i)).collect(),
            steady_state: changes
                .steady_state
                .iter()
                .map(|&v| flat.var(v).name.clone())
                .collect(),
        }
    }

    fn print(&self) {
        for eq in &self.dropped {
            outln!("dropped initial equation `{eq}`: it conditions a state the reduction removed");
        }
        for name in &self.steady_state {
            outln!(
                "added initial equation `der({name}) = 0`: {name} lost its condition and starts in steady state"
            );
        }
    }
}

/// What `--out` and `--plot` ask for: the reduced model as Modelica, with `notes` after the
/// equations it changed, and the full and reduced responses.
fn write_outputs(
    full: &Dae,
    reduced: &Dae,
    notes: &BTreeMap<usize, String>,
    settings: &Settings,
    args: &ReduceArgs,
) -> Result<(), String> {
    if let Some(path) = &args.out {
        let text = reduced.modelica_with_notes(notes).to_string();
        super::write_whole(path, |p| std::fs::write(p, &text))?;
    }
    if let Some(path) = &args.plot {
        plot(full, reduced, settings, path)?;
    }
    Ok(())
}

/// Points drawn per response.
const PLOT_POINTS: usize = 401;

/// Simulates the full and the reduced model finely and draws their states' responses.
fn plot(
    full: &Dae,
    reduced: &Dae,
    settings: &Settings,
    path: &std::path::Path,
) -> Result<(), String> {
    let fine = Settings {
        samples: PLOT_POINTS,
        ..*settings
    };
    let run = |dae: &Dae, which: &str| {
        sample(dae, &fine).map_err(|_| format!("the {which} model does not simulate: no plot"))
    };
    let (a, b) = (run(full, "full")?, run(reduced, "reduced")?);
    let times: Vec<f64> = a.points.iter().map(|p| p.time).collect();
    let states = full
        .var_ids()
        .filter(|&v| full.var(v).kind == crate::dae::VarKind::State);
    // The reduced model's states are paired by name: removing components renumbers them.
    let responses: Vec<Response<'_>> = states
        .map(|v| {
            let name = &full.var(v).name;
            let column = |s: &Sampled, w: Option<crate::expr::VarId>| {
                let at = |p: &Point| w.map_or(f64::NAN, |w| p.vars[w.0 as usize]);
                s.points.iter().map(at).collect()
            };
            Response {
                name,
                full: column(&a, Some(v)),
                reduced: column(&b, b.prepared.lookup(name)),
            }
        })
        .collect();
    let title = format!("{}: full (solid) and reduced (dashed)", full.model);
    super::write_whole(path, |p| {
        write_plot(p, &title, &times, &responses).map_err(std::io::Error::other)
    })
}

fn sample_failure(sources: &SourceMap, e: SampleError, context: &str) -> ExitCode {
    let diags = match e {
        SampleError::Structure(diags) => diags,
        SampleError::Start(f) => vec![Diagnostic::error(format!(
            "a parameter or start value cannot be evaluated: {f:?}"
        ))],
        SampleError::Run(boxed) => {
            let (failure, dae, causal) = *boxed;
            vec![super::simulate::run_failure(&dae, &causal, &failure)]
        }
    };
    let diags: Vec<Diagnostic> = diags.into_iter().map(|d| d.with_note(context)).collect();
    super::report(sources, &diags);
    ExitCode::from(1)
}
