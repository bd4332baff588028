//! `mocca check`: parse, flatten, and check balance.

use std::process::ExitCode;

use serde_json::json;

use super::Format;
use super::model::{ModelArgs, load_and_flatten};
use crate::dae::{Dae, VarKind};
use crate::diagnostics::Diagnostic;
use crate::source::{SourceMap, Span};
use crate::structure::{self, IndexReduction};

/// `mocca check`: one model, or with `--all` every example of a package.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Check every model, block and class of the package `--model` names that has an
    /// `experiment` annotation, and print a table: each with its result or first diagnostic.
    #[arg(long)]
    pub all: bool,
    /// With `--all`, the seconds one model may take before it is reported as past the limit.
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0, requires = "all",
          value_parser = positive_seconds)]
    pub time_limit: f64,
}

fn positive_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(s),
        _ => Err("expected a positive number of seconds".to_string()),
    }
}

pub fn run(args: &CheckArgs) -> ExitCode {
    if args.all {
        return super::check_all::run(&args.model, args.time_limit);
    }
    check_model(&args.model)
}

fn check_model(args: &ModelArgs) -> ExitCode {
    let flat = match load_and_flatten(args) {
        Ok(flat) => flat,
        Err((sources, diags)) => {
            super::report(&sources, &diags);
            return super::exit_code(&diags);
        }
    };
    let crate::frontend::Flat {
        sources,
        dae,
        warnings: mut diags,
    } = flat;
    let (equations, unknowns) = (dae.equations.len(), dae.unknowns());
    // Counts of the flat model, taken before the structure passes rewrite it in place.
    let flat_counts = FlatCounts::of(&dae);
    let without_value: Vec<String> = dae
        .parameters_without_value()
        .map(|v| dae.var(v).name.clone())
        .collect();
    let mut subsystems = Vec::new();
    let mut aliases = 0;
    let mut reduction = IndexReduction {
        index: 1,
        ..IndexReduction::default()
    };
    let dae = if equations != unknowns {
        diags.push(imbalance(&dae));
        dae
    } else {
        match structure::prepare(dae.clone()) {
            Ok((reduced, done)) => {
                aliases = reduced.count(VarKind::Alias);
                reduction = done;
                match structure::analyse(&reduced) {
                    Ok(s) => {
                        diags.extend(s.warnings);
                        subsystems = s.subsystems;
                    }
                    Err(mut errors) => diags.append(&mut errors),
                }
                reduced
            }
            Err(mut errors) => {
                diags.append(&mut errors);
                dae
            }
        }
    };
    let states: Vec<&str> = dae
        .variables
        .iter()
        .filter(|v| v.kind == VarKind::State)
        .map(|v| v.name.as_str())
        .collect();
    let names = |vs: &[crate::expr::VarId]| -> Vec<&str> {
        vs.iter().map(|&v| dae.var(v).name.as_str()).collect()
    };
    let dummies = names(&reduction.dummy_derivatives);
    let demoted = names(&reduction.demoted);
    let differentiated: Vec<(String, u32, Span)> = reduction
        .differentiated
        .iter()
        .map(|&(e, times)| {
            let span = dae.equations[e].span;
            (equation_text(&sources, &dae, e), times, span)
        })
        .collect();
    // In JSON the diagnostics go into the one object printed below.
    if args.format() == Format::Text {
        super::report(&sources, &diags);
    }
    let subsystem_states: Vec<Vec<&str>> = subsystems
        .iter()
        .map(|s| s.states.iter().map(|&v| dae.var(v).name.as_str()).collect())
        .collect();
    let FlatCounts {
        algebraic,
        parameters,
        constants,
        inputs,
        initial_equations,
        discrete,
        when_clauses,
    } = flat_counts;
    match args.format() {
        Format::Json => super::print_json(&json!({
            "errors": crate::diagnostics::to_json(&sources, &diags)["errors"],
            "model": dae.model,
            "equations": equations,
            "unknowns": unknowns,
            "states": states.len(),
            "state_names": states,
            "index": reduction.index,
            "differentiated": differentiated
                .iter()
                .map(|(text, times, span)| json!({
                    "equation": text,
                    "times": times,
                    "source": super::flatten::position(&sources, *span),
                }))
                .collect::<Vec<_>>(),
            "demoted_states": demoted,
            "algebraic": algebraic,
            "parameters": parameters,
            "parameters_without_value": without_value,
            "constants": constants,
            "inputs": inputs,
            "initial_equations": initial_equations,
            "discrete": discrete,
            "when_clauses": when_clauses,
            "balanced": equations == unknowns,
            "aliases": aliases,
            "dummy_derivatives": dummies,
            "subsystems": subsystems.len(),
            "subsystem_states": subsystem_states,
        })),
        Format::Text => {
            let verdict = if equations == unknowns {
                "balanced"
            } else {
                "NOT balanced"
            };
            outln!("model {}: {verdict}", dae.model);
            outln!("  equations          {equations:>8}");
            outln!("  unknowns           {unknowns:>8}");
            outln!("  states             {:>8}", states.len());
            outln!("  index              {:>8}", reduction.index);
            outln!(
                "  parameters         {parameters:>8}{}",
                without_value_note(&without_value)
            );
            outln!("  initial equations  {initial_equations:>8}");
            if !discrete.is_empty() || when_clauses > 0 {
                outln!(
                    "  discrete           {:>8}  ({})",
                    discrete.len(),
                    shortened(&discrete)
                );
                outln!("  when clauses       {when_clauses:>8}");
            }
            outln!("  aliases eliminated {aliases:>8}");
            if !differentiated.is_empty() {
                outln!(
                    "  index reduction    {}",
                    explanation(&reduction, &differentiated, &states, &dummies)
                );
            }
            outln!("  subsystems         {:>8}", subsystems.len());
            const SHOWN: usize = 8;
            for (k, states) in subsystem_states.iter().enumerate() {
                let more = match states.len() {
                    n if n > SHOWN => format!(", … ({n} states)"),
                    _ => String::new(),
                };
                let shown = &states[..states.len().min(SHOWN)];
                outln!("    {}: {}{more}", k + 1, shown.join(", "));
            }
        }
    }
    let code = super::exit_code(&diags);
    super::leave_allocated((sources, dae, subsystems));
    code
}

/// How index reduction made the model index 1: "index 3: differentiated `x^2 + y^2 = L^2`
/// twice, `der(x) = vx` once; states x, vx; dummy derivatives der(y), der(vy)", each list cut
/// after a few.
fn explanation(
    reduction: &IndexReduction,
    differentiated: &[(String, u32, Span)],
    states: &[&str],
    dummies: &[&str],
) -> String {
    let times = |n: u32| match n {
        1 => "once".to_string(),
        2 => "twice".to_string(),
        n => format!("{n} times"),
    };
    let equations: Vec<String> = differentiated
        .iter()
        .map(|(text, n, _)| format!("{text} {}", times(*n)))
        .collect();
    format!(
        "index {}: differentiated {}; states {}; dummy derivatives {}",
        reduction.index,
        shortened(&equations),
        shortened(states),
        shortened(dummies)
    )
}

/// The first few items joined, with how many there are when not all are shown.
fn shortened<S: AsRef<str>>(items: &[S]) -> String {
    const SHOWN: usize = 6;
    let shown: Vec<&str> = items.iter().take(SHOWN).map(AsRef::as_ref).collect();
    match items.len() {
        0 => "none".to_string(),
        n if n > SHOWN => format!("{}, … ({n} in all)", shown.join(", ")),
        _ => shown.join(", "),
    }
}

/// An equation as written in the source (blanks run together), or as flattened when it
/// has no source text of its own.
fn equation_text(sources: &SourceMap, dae: &Dae, e: usize) -> String {
    let eq = &dae.equations[e];
    let text = sources.snippet(eq.span);
    if text.is_empty() {
        return format!("`{} = {}`", dae.show(eq.lhs), dae.show(eq.rhs));
    }
    let words: Vec<&str> = text.trim_end_matches(';').split_whitespace().collect();
    match &*eq.component {
        "" => format!("`{}`", words.join(" ")),
        component => format!("`{}` of {component}", words.join(" ")),
    }
}

/// Shown after the parameter count: how many parameters have no value, and the first few.
fn without_value_note(names: &[String]) -> String {
    const SHOWN: usize = 8;
    match names.len() {
        0 => String::new(),
        n => {
            let more = if n > SHOWN { ", …" } else { "" };
            let shown = names[..n.min(SHOWN)].join(", ");
            format!("  ({n} without a value: {shown}{more})")
        }
    }
}

/// What `check` reports of the model as flattened (before alias elimination).
struct FlatCounts {
    algebraic: usize,
    parameters: usize,
    constants: usize,
    inputs: usize,
    initial_equations: usize,
    /// The discrete-time variables' names.
    discrete: Vec<String>,
    when_clauses: usize,
}

impl FlatCounts {
    fn of(dae: &Dae) -> Self {
        FlatCounts {
            algebraic: dae.count(VarKind::Algebraic) + dae.count(VarKind::Discrete),
            parameters: dae.count(VarKind::Parameter),
            constants: dae.count(VarKind::Constant),
            inputs: dae.count(VarKind::Input),
            initial_equations: dae.initial_equations.len(),
            discrete: dae
                .discrete_variables()
                .map(|v| dae.var(v).name.clone())
                .collect(),
            when_clauses: dae.hybrid.whens.len(),
        }
    }
}

pub(super) fn imbalance(dae: &Dae) -> Diagnostic {
    let (equations, unknowns) = (dae.equations.len(), dae.unknowns());
    let what = if equations < unknowns {
        format!("{} equation(s) short", unknowns - equations)
    } else {
        format!("{} equation(s) too many", equations - unknowns)
    };
    let mut d = Diagnostic::error(format!(
        "model `{}` is not balanced: {equations} equations for {unknowns} unknowns ({what})",
        dae.model
    ));
    if let Some(span) = dae.model_span {
        d = d.at(span, what);
    }
    for c in dae.unbalanced_components() {
        let detail = if c.shortfall() > 0 {
            format!("{} equation(s) short", c.shortfall())
        } else {
            format!("{} equation(s) too many", -c.shortfall())
        };
        d = d.with_note(format!(
            "component `{}`: {} equations + {} connector flows for {} unknowns ({detail})",
            c.component, c.equations, c.flows, c.unknowns
        ));
    }
    d
}
