//! `mocca jacobian`: the symbolic ODE Jacobian ∂f/∂x and its values at an operating point.

use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use super::Format;
use super::cycles::{Analysed, PointChoice, WeakArg, analysed, chosen_point};
use super::model::ModelArgs;
use super::table::{Align, write_table};
use crate::analysis::operating_point::{PointSpec, parse_point_spec};
use crate::causal::{EvalFailure, Step};
use crate::dae::Dae;
use crate::diagnostics::Diagnostic;
use crate::jacobian::OdeJacobian;
use crate::numfmt::format_number;

/// One entry of the JSON output (SPEC §14); fields in the order they are printed.
#[derive(Serialize)]
struct Entry {
    col: usize,
    expr: String,
    row: usize,
    /// 0 for an entry that cancels.
    value: f64,
    /// An entry whose terms cancel to rounding noise: the value the rounding left.
    #[serde(skip_serializing_if = "Option::is_none")]
    cancelled: Option<f64>,
}

#[derive(Serialize)]
struct Output<'a> {
    entries: &'a [Entry],
    modes: serde_json::Value,
    operating_point: &'a str,
    operating_point_description: &'a str,
    states: &'a [&'a str],
    weak: &'a str,
}

#[derive(Args, Debug)]
pub struct JacobianArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The operating point: `initial` (the default: the state the initial equations give, as
    /// a simulation starts), `start` (the raw start values), and/or state values
    /// `NAME=VALUE,...` set on it, e.g. `start,x=-1`.
    #[arg(long, value_name = "start|initial,NAME=VALUE,...", value_parser = parse_point_spec)]
    pub at: Option<PointSpec>,
    /// Weak connections: `coupled` differentiates through them (a weak read is the variable
    /// it reads), `split` holds weak reads (the partitioned solver's subsystems).
    #[arg(long, value_enum, default_value_t = WeakArg::Coupled)]
    pub weak: WeakArg,
}

pub fn run(args: &JacobianArgs) -> ExitCode {
    let analysed = match analysed(&args.model, args.weak) {
        Ok(ok) => ok,
        Err(code) => return code,
    };
    let (mut point, mut choice) =
        match chosen_point(&analysed.model(), &args.at.clone().unwrap_or_default()) {
            Ok(ok) => ok,
            Err(failure) => return failure.report(&analysed.sources),
        };
    let Analysed {
        sources,
        dae,
        causal,
        jacobian: jac,
        weak,
    } = analysed;
    if let Err(f) = causal.evaluate(&dae.pool, &mut point) {
        return fail(&sources, &failure(&dae, &causal.steps, &f));
    }
    choice.note_mode(
        &crate::analysis::operating_point::Model {
            dae: &dae,
            causal: &causal,
            jacobian: &jac,
        },
        &point,
    );
    // The entries' text and their values read the model only: one thread each.
    let (values, texts) = std::thread::scope(|scope| {
        let texts = std::thread::Builder::new()
            .stack_size(super::STACK_BYTES)
            .spawn_scoped(scope, || entry_texts(&dae, &jac));
        let values = jac.scaled_values(&dae, &causal, &point);
        let texts = match texts {
            Ok(handle) => handle.join().ok(),
            Err(_) => None,
        };
        (values, texts.unwrap_or_else(|| entry_texts(&dae, &jac)))
    });
    let states: Vec<&str> = causal
        .states
        .iter()
        .map(|&v| dae.var(v).name.as_str())
        .collect();
    let entries: Vec<Entry> = jac
        .entries
        .iter()
        .zip(&values)
        .zip(texts)
        .map(|((e, &(_, _, value)), expr)| Entry {
            col: e.col,
            expr,
            row: e.row,
            value: if value.cancels() { 0.0 } else { value.value },
            cancelled: value.cancels().then_some(value.value),
        })
        .collect();
    match args.model.format() {
        Format::Json => super::print_json(&Output {
            entries: &entries,
            modes: choice.modes_json(),
            operating_point: choice.kind,
            operating_point_description: &choice.description,
            states: &states,
            weak: weak.name(),
        }),
        Format::Text => print_text(&entries, &states, &choice, weak),
    }
    super::leave_allocated((sources, dae, causal, jac, entries));
    ExitCode::SUCCESS
}

/// A header line, then one aligned row per entry: `d der(x) / d y`, its value, its expression.
fn print_text(entries: &[Entry], states: &[&str], choice: &PointChoice, weak: WeakArg) {
    use std::io::Write as _;
    let mut w = super::buffered_stdout();
    let _ = writeln!(
        w,
        "{} states, {} nonzero entries, at {}, weak connections {}",
        states.len(),
        entries.len(),
        choice.text(),
        weak.name()
    );
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            vec![
                format!("d der({}) / d {}", states[e.row], states[e.col]),
                "=".to_string(),
                match e.cancelled {
                    Some(_) => "0 (cancels)".to_string(),
                    None => format_number(e.value),
                },
                e.expr.clone(),
            ]
        })
        .collect();
    let align = [Align::Left, Align::Left, Align::Right, Align::Left];
    write_table(&mut w, None, &rows, &align);
    for e in entries {
        if let Some(rounding) = e.cancelled {
            let _ = writeln!(
                w,
                "d der({}) / d {} cancels: its terms sum to {}, within a few ulps of their \
                 magnitude, so it is 0 at these values (cycle analysis takes no edge there)",
                states[e.row],
                states[e.col],
                format_number(rounding)
            );
        }
    }
    let _ = w.flush();
}

fn fail(sources: &crate::source::SourceMap, d: &Diagnostic) -> ExitCode {
    super::report(sources, std::slice::from_ref(d));
    ExitCode::from(1)
}

/// Names the block, equation and variables of a failed evaluation.
pub(crate) fn failure(dae: &Dae, steps: &[Step], f: &EvalFailure) -> Diagnostic {
    let (k, what) = match f {
        EvalFailure::NoConvergence { step, residual } => (
            *step,
            format!("Newton did not converge (largest residual left {residual:e})"),
        ),
        EvalFailure::NotFinite(k) => (*k, "a value became NaN or infinite".to_string()),
        EvalFailure::Parameter(v) => {
            return Diagnostic::error(format!(
                "the value of parameter `{}` cannot be computed",
                dae.var(*v).name
            ))
            .at(dae.var(*v).span, "declared here");
        }
    };
    let equations: Vec<usize> = match &steps[k] {
        Step::Assign { equation, .. } | Step::Newton { equation, .. } => vec![*equation],
        Step::Loop { equations, .. } => equations.clone(),
    };
    let names: Vec<String> = steps[k]
        .targets()
        .iter()
        .map(|u| format!("`{}`", u.name(dae)))
        .collect();
    let mut d = Diagnostic::error(format!(
        "{what} in block {} solving {}",
        k + 1,
        names.join(", ")
    ))
    .at(dae.equations[equations[0]].span, "this equation");
    for &e in &equations[1..] {
        d = d.with_secondary(dae.equations[e].span, "in the same block");
    }
    let mut called = Vec::new();
    for &e in &equations {
        for f in dae.pool.called_functions(dae.equations[e].residual) {
            let name = format!("`{}`", dae.pool.function(f).name);
            if !called.contains(&name) {
                called.push(name);
            }
        }
    }
    if matches!(f, EvalFailure::NotFinite(_)) && !called.is_empty() {
        d = d.with_note(format!(
            "the block calls {}, kept as code: a failed `assert`, a `while` loop of more than 10⁷ turns or calls nested more than 1000 deep make a call's outputs NaN",
            called.join(", ")
        ));
    }
    d
}

/// Each entry's expression as text.
fn entry_texts(dae: &Dae, jac: &OdeJacobian) -> Vec<String> {
    jac.entries
        .iter()
        .map(|e| {
            e.expr
                .map(|x| dae.show(x))
                .unwrap_or_else(|| "(algebraic loop: numeric)".to_string())
        })
        .collect()
}
