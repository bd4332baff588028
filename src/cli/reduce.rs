//! `mocca reduce`: term-ranking model reduction (SPEC §11). Simulates the model, ranks the
//! terms of its equations, applies the operations in rank order under the matching guard
//! (and, with `--verify`, the error bound), and writes the reduced model as Modelica.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use serde_json::{Value, json};

use super::Format;
use super::model::{ModelArgs, load_and_flatten};
use super::simulate::{Integrator, MethodArg};
use super::table::{Align, print_table};
use crate::dae::Dae;
use crate::diagnostics::Diagnostic;
use crate::numfmt::Number;
use crate::reduce::operation::{Reduced, apply, keeps_perfect_matching};
use crate::reduce::sample::{SampleError, Sampled, Settings, error_percent, sample};
use crate::reduce::statistical::{Figures, figures, verdict};
use crate::reduce::terms::{Described, candidates, describe, has_component, values};
use crate::reduce::{Operation, TermRef};
use crate::source::SourceMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MetricArg {
    Statistical,
}

#[derive(Args, Debug)]
pub struct ReduceArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// How terms are ranked: `statistical`, by their relative mean and spread within their
    /// equation over the reference samples
    #[arg(long, value_enum, default_value_t = MetricArg::Statistical)]
    pub metric: MetricArg,
    /// Instants of the reference run the terms are evaluated at
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(2..1_000_000))]
    pub samples: u64,
    /// A term goes when its relative spread σ_r (and, to be deleted rather than frozen to its
    /// mean, its relative mean |m_r|) is below this
    #[arg(long, default_value_t = 0.1, value_parser = super::cycles::positive)]
    pub threshold: f64,
    /// The error bound, in percent of each variable's scale, that `--verify` holds every
    /// applied operation to
    #[arg(long, value_name = "PCT", default_value_t = 5.0, value_parser = super::cycles::positive)]
    pub tol: f64,
    /// Only the terms of this component instance (and the instances inside it)
    #[arg(long, value_name = "NAME")]
    pub component: Option<String>,
    /// Simulate the reduced model after each operation, and undo one whose actual error
    /// exceeds `--tol`
    #[arg(long)]
    pub verify: bool,
    /// Write the reduced model as (flat) Modelica
    #[arg(long, value_name = "FILE.mo")]
    pub out: Option<PathBuf>,
    /// The reference run's method: `bdf` (default) or a fixed-step method
    #[arg(long, value_enum, default_value_t = MethodArg::Bdf)]
    pub method: MethodArg,
    /// The fixed-step methods' step
    #[arg(long, default_value_t = 1e-3, value_parser = super::cycles::positive)]
    pub step: f64,
    /// The start time
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub start: f64,
    /// The end time
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub stop: f64,
    /// The BDF's tolerance (relative and absolute), or the implicit methods' Newton tolerance
    #[arg(long, default_value_t = 1e-8, value_parser = super::cycles::positive)]
    pub sim_tol: f64,
}

/// One ranked operation and what became of it.
struct Entry {
    term: TermRef,
    described: Described,
    figures: Figures,
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
}

impl Outcome {
    fn name(self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::Refused => "refused: no perfect matching",
            Outcome::Undone => "undone: error above --tol",
            Outcome::Fails => "undone: the reduced model does not simulate",
        }
    }
}

pub fn run(args: &ReduceArgs) -> ExitCode {
    let settings = match settings(args) {
        Ok(s) => s,
        Err(m) => return super::usage_error(m),
    };
    let flat = match load_and_flatten(&args.model) {
        Ok(flat) => flat,
        Err((sources, diags)) => {
            super::report(&sources, &diags);
            return super::exit_code(&diags);
        }
    };
    super::report(&flat.sources, &flat.warnings);
    if let Some(name) = &args.component
        && !has_component(&flat.dae, name)
    {
        return super::usage_error(format!(
            "`--component`: the model has no component `{name}`"
        ));
    }
    let reference = match sample(&flat.dae, &settings) {
        Ok(s) => s,
        Err(e) => return sample_failure(&flat.sources, e, "in the reference run"),
    };
    let mut entries = rank(&flat.dae, &flat.sources, &reference, args);
    let reduced = apply_in_order(&flat.dae, &reference, &settings, args, &mut entries);
    if let Some(path) = &args.out {
        let notes = notes(&entries);
        let text = reduced.dae.modelica_with_notes(&notes).to_string();
        if let Err(message) = super::write_whole(path, |p| std::fs::write(p, &text)) {
            return super::failure_without_source(message, ExitCode::from(1));
        }
    }
    let initial: Vec<String> = reduced
        .dropped_initial
        .iter()
        .map(|&i| flat.dae.show(flat.dae.initial_equations[i].residual))
        .collect();
    match args.model.format() {
        Format::Json => super::print_json(&json!({
            "metric": "statistical",
            "samples": args.samples,
            "threshold": args.threshold,
            "tol": args.tol,
            "ranking": entries.iter().map(entry_json).collect::<Vec<_>>(),
            "dropped_initial_equations": initial,
        })),
        Format::Text => print(&entries, &initial, args),
    }
    super::leave_allocated((flat, reference, reduced));
    ExitCode::SUCCESS
}

fn settings(args: &ReduceArgs) -> Result<Settings, String> {
    if !(args.start.is_finite() && args.stop.is_finite() && args.stop > args.start) {
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
        start: args.start,
        stop: args.stop,
        step: args.step,
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
        let figures = figures(&sampled);
        for &t in group {
            let f = figures[t.term];
            if let Some(operation) = verdict(&f, args.threshold) {
                entries.push(Entry {
                    term: t,
                    described: describe(flat, sources, t),
                    figures: f,
                    operation,
                    actual: None,
                    outcome: Outcome::Applied,
                });
            }
        }
    }
    entries.sort_by(|a, b| {
        a.figures
            .sigma_r
            .total_cmp(&b.figures.sigma_r)
            .then(a.term.cmp(&b.term))
    });
    entries
}

/// Applies the entries' operations one by one in rank order, each guarded and, with
/// `--verify`, checked against the bound; records each outcome. The model they leave.
fn apply_in_order(
    flat: &Dae,
    reference: &Sampled,
    settings: &Settings,
    args: &ReduceArgs,
    entries: &mut [Entry],
) -> Reduced {
    let mut applied: Vec<(TermRef, Operation)> = Vec::new();
    let mut bar = super::cycles::ProgressBar::new("verify");
    let total = entries.len() as u64;
    for (k, entry) in entries.iter_mut().enumerate() {
        applied.push((entry.term, entry.operation));
        let trial = apply(flat, &applied);
        entry.outcome = if !keeps_perfect_matching(&trial.dae) {
            Outcome::Refused
        } else if args.verify {
            bar.update(k as u64, total, || "reduced models simulated".to_string());
            entry.actual = sample(&trial.dae, settings)
                .ok()
                .map(|run| error_percent(reference, &run));
            match entry.actual {
                Some(e) if e <= args.tol => Outcome::Applied,
                Some(_) => Outcome::Undone,
                None => Outcome::Fails,
            }
        } else {
            Outcome::Applied
        };
        if entry.outcome != Outcome::Applied {
            applied.pop();
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
        "operation": e.operation.name(),
        "value": match e.operation {
            Operation::Replace(c) => Some(c),
            Operation::Delete => None,
        },
        "mean": e.figures.mean,
        "std": e.figures.std,
        "m_r": e.figures.m_r,
        "sigma_r": e.figures.sigma_r,
        "predicted": Value::Null,
        "actual": e.actual,
        "applied": e.outcome == Outcome::Applied,
        "outcome": e.outcome.name(),
    })
}

fn print(entries: &[Entry], initial: &[String], args: &ReduceArgs) {
    let applied = entries
        .iter()
        .filter(|e| e.outcome == Outcome::Applied)
        .count();
    outln!(
        "statistical ranking over {} samples, threshold {}: {} candidate operations, {applied} applied",
        args.samples,
        Number(args.threshold),
        entries.len()
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
                        Operation::Delete => "delete".to_string(),
                        Operation::Replace(c) => format!("replace by {}", Number(c)),
                    },
                    format!("{:.3e}", e.figures.m_r),
                    format!("{:.3e}", e.figures.sigma_r),
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
            Align::Left,
        ];
        print_table(&header, &rows, &align);
    }
    for eq in initial {
        outln!("dropped initial equation `{eq} = 0`: it reads a derivative the reduction removed");
    }
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
