//! `mocca check`: parse, flatten, and check balance.

use std::process::ExitCode;

use serde_json::json;

use super::Format;
use super::model::{ModelArgs, load_and_flatten};
use crate::dae::{Dae, VarKind};
use crate::diagnostics::Diagnostic;
use crate::structure;

pub fn run(args: &ModelArgs) -> ExitCode {
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
    let mut dummies: Vec<String> = Vec::new();
    let mut states = dae.count(VarKind::State);
    let dae = if equations != unknowns {
        diags.push(imbalance(&dae));
        dae
    } else {
        let (reduced, demoted) = structure::prepare(dae);
        aliases = reduced.count(VarKind::Alias);
        dummies = demoted
            .iter()
            .map(|&v| reduced.var(v).name.clone())
            .collect();
        states = reduced.count(VarKind::State);
        match structure::analyse(&reduced) {
            Ok(s) => {
                diags.extend(s.warnings);
                subsystems = s.subsystems;
            }
            Err(mut errors) => diags.append(&mut errors),
        }
        reduced
    };
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
    } = flat_counts;
    match args.format() {
        Format::Json => super::print_json(&json!({
            "errors": crate::diagnostics::to_json(&sources, &diags)["errors"],
            "model": dae.model,
            "equations": equations,
            "unknowns": unknowns,
            "states": states,
            "algebraic": algebraic,
            "parameters": parameters,
            "parameters_without_value": without_value,
            "constants": constants,
            "inputs": inputs,
            "initial_equations": initial_equations,
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
            outln!("  states             {states:>8}");
            outln!(
                "  parameters         {parameters:>8}{}",
                without_value_note(&without_value)
            );
            outln!("  initial equations  {initial_equations:>8}");
            outln!("  aliases eliminated {aliases:>8}");
            if !dummies.is_empty() {
                outln!(
                    "  states demoted     {:>8}  ({})",
                    dummies.len(),
                    dummies.join(", ")
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
}

impl FlatCounts {
    fn of(dae: &Dae) -> Self {
        FlatCounts {
            algebraic: dae.count(VarKind::Algebraic) + dae.count(VarKind::Discrete),
            parameters: dae.count(VarKind::Parameter),
            constants: dae.count(VarKind::Constant),
            inputs: dae.count(VarKind::Input),
            initial_equations: dae.initial_equations.len(),
        }
    }
}

fn imbalance(dae: &Dae) -> Diagnostic {
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
