//! `mocca jacobian`: the symbolic ODE Jacobian ∂f/∂x and its values at an operating point.

use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use super::Format;
use super::model::{ModelArgs, load_and_analyse};
use crate::causal::{EvalFailure, Step, causal_form, initial_point};
use crate::dae::{Dae, VarKind};
use crate::diagnostics::Diagnostic;
use crate::jacobian::{OdeJacobian, ode_jacobian};

/// One entry of the JSON output (SPEC §14); fields in the order they are printed.
#[derive(Serialize)]
struct Entry {
    col: usize,
    expr: String,
    row: usize,
    value: f64,
}

#[derive(Serialize)]
struct Output<'a> {
    entries: &'a [Entry],
    states: &'a [&'a str],
}

#[derive(Args, Debug)]
pub struct JacobianArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The operating point: state values `NAME=VALUE,...` (others keep their start values).
    #[arg(long, value_name = "NAME=VALUE,...")]
    pub at: Option<String>,
}

pub fn run(args: &JacobianArgs) -> ExitCode {
    let (flat, structure) = match load_and_analyse(&args.model) {
        Ok(ok) => ok,
        Err(code) => return code,
    };
    let mut dae = flat.dae;
    let causal = causal_form(&mut dae, &structure);
    let jac = ode_jacobian(&mut dae, &causal);
    let mut point = match initial_point(&dae) {
        Ok(p) => p,
        Err(f) => return fail(&flat.sources, &failure(&dae, &causal.steps, &f)),
    };
    if let Some(at) = &args.at {
        for item in at.split(',').filter(|s| !s.trim().is_empty()) {
            let Some((name, value)) = item.split_once('=') else {
                eprintln!("error: `--at` expects NAME=VALUE, found `{item}`");
                return ExitCode::from(2);
            };
            let (name, value) = (name.trim(), value.trim());
            let Some(v) = dae
                .lookup(name)
                .filter(|&v| dae.var(v).kind == VarKind::State)
            else {
                eprintln!("error: `{name}` is not a state of the model");
                return ExitCode::from(2);
            };
            let Ok(x) = value.parse::<f64>() else {
                eprintln!("error: `{value}` is not a number");
                return ExitCode::from(2);
            };
            point.vars[v.0 as usize] = x;
        }
    }
    if let Err(f) = causal.evaluate(&dae.pool, &mut point) {
        return fail(&flat.sources, &failure(&dae, &causal.steps, &f));
    }
    // The entries' text and their values read the model only: one thread each.
    let (values, texts) = std::thread::scope(|scope| {
        let texts = std::thread::Builder::new()
            .stack_size(super::STACK_BYTES)
            .spawn_scoped(scope, || entry_texts(&dae, &jac));
        let values = jac.values(&dae, &causal, &point);
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
            value,
        })
        .collect();
    match args.model.format() {
        Format::Json => super::print_json(&Output {
            entries: &entries,
            states: &states,
        }),
        Format::Text => {
            use std::io::Write as _;
            let mut w = super::buffered_stdout();
            let _ = writeln!(
                w,
                "{} states, {} nonzero entries",
                states.len(),
                entries.len()
            );
            for e in &entries {
                let _ = writeln!(
                    w,
                    "  d der({}) / d {}  = {:<12.6}  {}",
                    states[e.row], states[e.col], e.value, e.expr
                );
            }
            let _ = w.flush();
        }
    }
    super::leave_allocated((flat.sources, dae, structure, causal, jac, entries));
    ExitCode::SUCCESS
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
