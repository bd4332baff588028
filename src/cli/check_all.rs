//! `mocca check --all`: every model of a package that has an `experiment` annotation, checked
//! one by one from one parse of the library, as a table. Each model ends with a result or its
//! first diagnostic; a model that panics or runs past the time limit is a row that says so,
//! and the others go on.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use super::Format;
use super::model::{ModelArgs, load_model_sources};
use crate::dae::VarKind;
use crate::diagnostics::{self, Diagnostic};
use crate::frontend::Loaded;
use crate::source::SourceMap;
use crate::structure;

/// How one model came out.
enum Outcome {
    /// Flattened, balanced, index-reduced and sorted.
    Checked {
        equations: usize,
        states: usize,
        index: u32,
    },
    /// The first error, with its place (`file:line`) when it has one.
    Failed {
        message: String,
        place: Option<String>,
    },
    /// An internal error: a defect of mocca, never of the model.
    Panicked(String),
    /// Still running when the time limit passed.
    TimedOut,
}

impl Outcome {
    fn result(&self) -> &'static str {
        match self {
            Outcome::Checked { .. } => "ok",
            Outcome::Failed { .. } => "error",
            Outcome::Panicked(_) => "internal error",
            Outcome::TimedOut => "time limit",
        }
    }
}

struct Row {
    model: String,
    outcome: Outcome,
    seconds: f64,
}

pub fn run(args: &ModelArgs, time_limit: f64) -> ExitCode {
    let Some(package) = args.model.as_deref() else {
        return super::usage_error("`--all` needs `--model PACKAGE`");
    };
    let (loaded, warnings) = match load_model_sources(args) {
        Ok(loaded) => loaded,
        Err((sources, diags)) => {
            super::report(&sources, &diags);
            return super::exit_code(&diags);
        }
    };
    super::report(&loaded.sources, &warnings);
    let models = loaded.models_with_experiment(package);
    if models.is_empty() {
        let d = vec![Diagnostic::error(format!(
            "no model in `{package}` has an `experiment` annotation"
        ))];
        super::report(&loaded.sources, &d);
        return ExitCode::from(1);
    }
    let format = args.format();
    let width = models.iter().map(String::len).max().unwrap_or(5).max(5);
    if format == Format::Text {
        outln!(
            "{:<width$}  {:<14} {:>9} {:>7} {:>5} {:>8}  first diagnostic",
            "model",
            "result",
            "equations",
            "states",
            "index",
            "time (s)"
        );
    }
    let mut rows = Vec::with_capacity(models.len());
    check_each(
        Arc::new(loaded),
        models,
        Duration::from_secs_f64(time_limit),
        |row| {
            if format == Format::Text {
                print_row(&row, width);
            }
            rows.push(row);
        },
    );
    let count = |result: &str| rows.iter().filter(|r| r.outcome.result() == result).count();
    let (ok, errors) = (count("ok"), count("error"));
    let (panics, timeouts) = (count("internal error"), count("time limit"));
    match format {
        Format::Text => outln!(
            "{} models: {ok} ok, {errors} with an error, {panics} internal errors, \
             {timeouts} past the {time_limit} s limit",
            rows.len()
        ),
        Format::Json => super::print_json(&json!({
            "package": package,
            "models": rows.iter().map(row_json).collect::<Vec<_>>(),
            "ok": ok,
            "errors": errors,
            "internal_errors": panics,
            "time_limit": timeouts,
        })),
    }
    if ok == rows.len() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Checks every model on as many threads as there are processors, handing each row to `show`
/// in the models' order as soon as the rows before it are in. A model still running after
/// `limit` is a row of its own and a fresh thread takes its place.
fn check_each(
    loaded: Arc<Loaded>,
    models: Vec<String>,
    limit: Duration,
    mut show: impl FnMut(Row),
) {
    let models = Arc::new(models);
    let next = Arc::new(AtomicUsize::new(0));
    let started: Arc<Mutex<Vec<Option<Instant>>>> = Arc::new(Mutex::new(vec![None; models.len()]));
    let (sender, results) = mpsc::channel::<(usize, Row)>();
    let spawn = || -> bool {
        let (loaded, models, next, started, sender) = (
            Arc::clone(&loaded),
            Arc::clone(&models),
            Arc::clone(&next),
            Arc::clone(&started),
            sender.clone(),
        );
        std::thread::Builder::new()
            .stack_size(super::STACK_BYTES)
            .spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(model) = models.get(i) else { break };
                    let clock = Instant::now();
                    lock(&started)[i] = Some(clock);
                    let outcome = check_caught(&loaded, model);
                    let row = Row {
                        model: model.clone(),
                        outcome,
                        seconds: clock.elapsed().as_secs_f64(),
                    };
                    if sender.send((i, row)).is_err() {
                        break;
                    }
                }
            })
            .is_ok()
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    // A thread that cannot start leaves its share to the others; with none, this one works.
    if !(0..threads)
        .map(|_| spawn())
        .fold(false, |any, ok| any | ok)
    {
        for model in models.iter() {
            let clock = Instant::now();
            let outcome = check_caught(&loaded, model);
            show(Row {
                model: model.clone(),
                outcome,
                seconds: clock.elapsed().as_secs_f64(),
            });
        }
        return;
    }
    let mut done: Vec<Option<Row>> = (0..models.len()).map(|_| None).collect();
    let mut shown = 0;
    while shown < models.len() {
        match results.recv_timeout(Duration::from_millis(200)) {
            Ok((i, row)) => {
                // A late row of a model already reported as past the limit is dropped.
                done[i].get_or_insert(row);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        for (i, start) in lock(&started).iter().enumerate() {
            let overdue = start.is_some_and(|s| s.elapsed() > limit);
            if overdue && done[i].is_none() {
                done[i] = Some(Row {
                    model: models[i].clone(),
                    outcome: Outcome::TimedOut,
                    seconds: limit.as_secs_f64(),
                });
                spawn();
            }
        }
        while let Some(row) = done.get_mut(shown).and_then(Option::take) {
            show(row);
            shown += 1;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// [`check_one`], with a panic turned into a row.
fn check_caught(loaded: &Loaded, model: &str) -> Outcome {
    catch_unwind(AssertUnwindSafe(|| check_one(loaded, model))).unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Outcome::Panicked(message)
    })
}

/// What `check` of one model does: flatten, balance, index reduction, sorting.
fn check_one(loaded: &Loaded, model: &str) -> Outcome {
    let failed = |diags: &[Diagnostic]| first_error(&loaded.sources, diags);
    let dae = match loaded.flatten(Some(model)) {
        Ok((dae, _)) => dae,
        Err(diags) => return failed(&diags),
    };
    if dae.equations.len() != dae.unknowns() {
        return failed(&[super::check::imbalance(&dae)]);
    }
    let (reduced, reduction) = match structure::prepare(dae) {
        Ok(done) => done,
        Err(diags) => return failed(&diags),
    };
    if let Err(diags) = structure::analyse(&reduced) {
        return failed(&diags);
    }
    Outcome::Checked {
        equations: reduced.equations.len(),
        states: reduced.count(VarKind::State),
        index: reduction.index,
    }
}

fn first_error(sources: &SourceMap, diags: &[Diagnostic]) -> Outcome {
    let first = diags.iter().find(|d| d.is_error()).or(diags.first());
    let Some(d) = first else {
        return Outcome::Failed {
            message: "failed without a diagnostic".to_string(),
            place: None,
        };
    };
    let place = d.primary.as_ref().map(|(span, _)| {
        let (file, line, _) = diagnostics::place(sources, *span);
        match line {
            Some(line) => format!("{file}:{line}"),
            None => file,
        }
    });
    Outcome::Failed {
        message: d.message.clone(),
        place,
    }
}

fn print_row(row: &Row, width: usize) {
    let (equations, states, index, note) = match &row.outcome {
        Outcome::Checked {
            equations,
            states,
            index,
        } => (
            equations.to_string(),
            states.to_string(),
            index.to_string(),
            String::new(),
        ),
        Outcome::Failed { message, place } => {
            let at = place
                .as_ref()
                .map(|p| format!(" ({p})"))
                .unwrap_or_default();
            (
                String::new(),
                String::new(),
                String::new(),
                format!("{message}{at}"),
            )
        }
        Outcome::Panicked(message) => {
            (String::new(), String::new(), String::new(), message.clone())
        }
        Outcome::TimedOut => Default::default(),
    };
    outln!(
        "{:<width$}  {:<14} {equations:>9} {states:>7} {index:>5} {:>8.2}  {note}",
        row.model,
        row.outcome.result(),
        row.seconds
    );
}

fn row_json(row: &Row) -> serde_json::Value {
    let mut v = json!({
        "model": row.model,
        "result": row.outcome.result(),
        "seconds": row.seconds,
    });
    match &row.outcome {
        Outcome::Checked {
            equations,
            states,
            index,
        } => {
            v["equations"] = json!(equations);
            v["states"] = json!(states);
            v["index"] = json!(index);
        }
        Outcome::Failed { message, place } => {
            v["message"] = json!(message);
            v["place"] = json!(place);
        }
        Outcome::Panicked(message) => v["message"] = json!(message),
        Outcome::TimedOut => {}
    }
    v
}
