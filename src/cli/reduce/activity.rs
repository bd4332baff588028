//! `mocca reduce --metric activity`: the components ranked by the energy through their
//! connectors, and with `--remove-below` the least active ones removed one by one, each
//! guarded and verified.

use std::collections::BTreeMap;
use std::process::ExitCode;

use serde_json::json;

use super::super::Format;
use super::super::table::{Align, print_table};
use super::{ReduceArgs, write_outputs};
use crate::dae::Dae;
use crate::numfmt::Number;
use crate::reduce::activity::activities;
use crate::reduce::guard::keeps_perfect_matching;
use crate::reduce::removal::{Removed, remove_components};
use crate::reduce::sample::{Sampled, Settings, error_percent, sample};

/// One component's line of the table.
struct Row {
    component: String,
    activity: f64,
    relative: f64,
    accumulated: f64,
    /// With `--remove-below`, for the components it tried.
    removal: Option<Removal>,
}

/// What became of a component `--remove-below` tried to remove.
struct Removal {
    outcome: Result<(), String>,
    /// The verified error of the model without it (and those removed before), in percent.
    actual: Option<f64>,
}

pub(super) fn run(
    flat: &Dae,
    reference: &Sampled,
    settings: &Settings,
    args: &ReduceArgs,
) -> ExitCode {
    let mut rows = ranked(&activities(flat, &reference.points));
    let removed = args
        .remove_below
        .map(|pct| remove_below(flat, reference, settings, args, &mut rows, pct));
    if let Some(Some(removed)) = &removed
        && let Err(message) =
            write_outputs(flat, &removed.reduced.dae, &removed.notes, settings, args)
    {
        return super::super::failure_without_source(message, ExitCode::from(1));
    }
    let total: f64 = rows.iter().map(|r| r.activity).sum();
    match args.model.format() {
        Format::Json => super::super::print_json(&json!({
            "metric": "activity",
            "samples": args.samples,
            "total": total,
            "remove_below": args.remove_below,
            "components": rows.iter().map(|r| json!({
                "component": r.component,
                "activity": r.activity,
                "relative": r.relative,
                "accumulated": r.accumulated,
                "removed": r.removal.as_ref().map(|m| m.outcome.is_ok()),
                "actual": r.removal.as_ref().and_then(|m| m.actual),
                "outcome": r.removal.as_ref().map(outcome),
            })).collect::<Vec<_>>(),
        })),
        Format::Text => print(&rows, args, settings),
    }
    ExitCode::SUCCESS
}

/// The components by activity, most active first, with their share and the accumulated share.
fn ranked(activity: &BTreeMap<String, f64>) -> Vec<Row> {
    let mut ranked: Vec<(&String, f64)> = activity.iter().map(|(c, &a)| (c, a)).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let total: f64 = ranked.iter().map(|(_, a)| a).sum();
    let mut accumulated = 0.0;
    ranked
        .into_iter()
        .map(|(c, a)| {
            accumulated += a;
            Row {
                component: c.clone(),
                activity: a,
                relative: 100.0 * a / total,
                accumulated: 100.0 * accumulated / total,
                removal: None,
            }
        })
        .collect()
}

/// Removes the least active components that together carry less than `pct` percent of the
/// activity, least active first; one whose removal leaves no perfect matching, does not
/// simulate or errs above `--tol` stays. The model without those removed.
fn remove_below(
    flat: &Dae,
    reference: &Sampled,
    settings: &Settings,
    args: &ReduceArgs,
    rows: &mut [Row],
    pct: f64,
) -> Option<Removed> {
    let mut removed: Vec<String> = Vec::new();
    let mut last = remove_components(flat, &[]).ok();
    let mut share = 0.0;
    let mut bar = super::super::cycles::ProgressBar::new("verify");
    let total = rows.len() as u64;
    for (k, row) in rows.iter_mut().rev().enumerate() {
        share += row.relative;
        if share >= pct {
            break;
        }
        bar.update(k as u64, total, || "reduced models simulated".to_string());
        let mut trial: Vec<&str> = removed.iter().map(String::as_str).collect();
        trial.push(&row.component);
        let (outcome, actual, model) = try_removing(flat, reference, settings, args, &trial);
        if outcome.is_ok() {
            removed.push(row.component.clone());
            last = model.or(last);
        }
        row.removal = Some(Removal { outcome, actual });
    }
    bar.finish();
    last
}

type Tried = (Result<(), String>, Option<f64>, Option<Removed>);

fn try_removing(
    flat: &Dae,
    reference: &Sampled,
    settings: &Settings,
    args: &ReduceArgs,
    components: &[&str],
) -> Tried {
    let removed = match remove_components(flat, components) {
        Ok(r) => r,
        Err(why) => return (Err(format!("kept: {why}")), None, None),
    };
    if !keeps_perfect_matching(&removed.reduced.dae) {
        return (
            Err("kept: no perfect matching without it".into()),
            None,
            None,
        );
    }
    let Ok(run) = sample(&removed.reduced.dae, settings) else {
        let why = "kept: the model without it does not simulate";
        return (Err(why.into()), None, None);
    };
    let actual = error_percent(reference, &run, args.error_on.measured());
    if actual > args.tol {
        return (Err("kept: error above --tol".into()), Some(actual), None);
    }
    (Ok(()), Some(actual), Some(removed))
}

fn outcome(removal: &Removal) -> String {
    match &removal.outcome {
        Ok(()) => "removed".to_string(),
        Err(why) => why.clone(),
    }
}

fn print(rows: &[Row], args: &ReduceArgs, settings: &Settings) {
    outln!(
        "energy activity over {} samples from {} to {}: {} components",
        args.samples,
        Number(settings.start),
        Number(settings.stop),
        rows.len()
    );
    let mut header = vec!["component", "activity (J)", "relative %", "accumulated %"];
    let mut align = vec![Align::Left, Align::Right, Align::Right, Align::Right];
    if args.remove_below.is_some() {
        header.extend(["actual %", "outcome"]);
        align.extend([Align::Right, Align::Left]);
    }
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut line = vec![
                r.component.clone(),
                format!("{:.6e}", r.activity),
                format!("{:.3}", r.relative),
                format!("{:.3}", r.accumulated),
            ];
            if args.remove_below.is_some() {
                let removal = r.removal.as_ref();
                let actual = removal.and_then(|m| m.actual);
                line.push(actual.map_or("-".into(), |a| format!("{a:.3}")));
                line.push(removal.map_or(String::new(), outcome));
            }
            line
        })
        .collect();
    print_table(&header, &table, &align);
}
