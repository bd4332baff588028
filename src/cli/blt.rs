//! `mocca blt`: the matching and the BLT blocks in evaluation order.

use std::process::ExitCode;

use serde_json::json;

use super::Format;
use super::model::{ModelArgs, load_and_analyse};
use crate::causal::{Step, causal_form};
use crate::dae::hybrid::Action;
use crate::dae::{Dae, VarKind};
use crate::structure::{BlockKind, Unknown};

pub fn run(args: &ModelArgs) -> ExitCode {
    let (flat, structure) = match load_and_analyse(args) {
        Ok(ok) => ok,
        Err(code) => return code,
    };
    let mut dae = flat.dae;
    let causal = causal_form(&mut dae, &structure);
    let continuous = causal
        .steps
        .iter()
        .zip(&causal.block_of_step)
        .map(|(step, &b)| {
            let (solution, kind) = match step {
                Step::Assign { .. } => ("assign", BlockKind::Explicit),
                Step::Newton { .. } => ("newton", BlockKind::Explicit),
                Step::Loop { .. } => ("loop", BlockKind::Loop),
            };
            let unknowns = step.targets();
            json!({
                "equations": step.equations().iter().map(|&e| {
                    let eq = &dae.equations[e];
                    format!("{} = {}", dae.show(eq.lhs), dae.show(eq.rhs))
                }).collect::<Vec<_>>(),
                "unknowns": unknowns.iter().map(|u| u.name(&dae)).collect::<Vec<_>>(),
                "kind": kind,
                "solution": solution,
                "discrete": is_discrete(&dae, &unknowns),
                "loop_size": structure.blocks[b].unknowns.len(),
            })
        });
    let blocks: Vec<_> = continuous.chain(when_blocks(&dae)).collect();
    match args.format() {
        Format::Json => super::print_json(
            &json!({ "blocks": blocks, "subsystems": structure.subsystems.len() }),
        ),
        Format::Text => {
            use std::io::Write as _;
            let mut w = super::buffered_stdout();
            for (k, b) in blocks.iter().enumerate() {
                let unknowns: Vec<&str> = b["unknowns"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|u| u.as_str())
                    .collect();
                let _ = writeln!(w, "block {:>4}  {}", k + 1, block_heading(b, &unknowns));
                for eq in b["equations"].as_array().into_iter().flatten() {
                    let _ = writeln!(w, "             {}", eq.as_str().unwrap_or(""));
                }
            }
            let _ = w.flush();
        }
    }
    super::report(&flat.sources, &structure.warnings);
    super::leave_allocated((flat.sources, dae, structure, causal, blocks));
    ExitCode::SUCCESS
}

/// What a block solves and how: "assign  solve x", "newton  solve a, b  (discrete)",
/// "at events  assign n; reinit v".
fn block_heading(b: &serde_json::Value, unknowns: &[&str]) -> String {
    if b["kind"] == json!("when") {
        let names = |key: &str| -> Vec<&str> {
            b[key]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|u| u.as_str())
                .collect()
        };
        let mut what = Vec::new();
        if !unknowns.is_empty() {
            what.push(format!("assign {}", unknowns.join(", ")));
        }
        let reinit = names("reinit");
        if !reinit.is_empty() {
            what.push(format!("reinit {}", reinit.join(", ")));
        }
        return format!("at events  {}", what.join("; "));
    }
    let discrete = if b["discrete"] == json!(true) {
        "  (discrete)"
    } else {
        ""
    };
    let size = b["loop_size"].as_u64().unwrap_or(0) as usize;
    let torn = if b["kind"] == json!("loop") && size > unknowns.len() {
        format!("  (tearing variables of a loop of {size}; assignments follow)")
    } else {
        String::new()
    };
    format!(
        "{:<6}  solve {}{discrete}{torn}",
        b["solution"].as_str().unwrap_or(""),
        unknowns.join(", ")
    )
}

/// Whether a block computes only discrete-time variables (Boolean, Integer, `discrete`):
/// its values change only at events.
fn is_discrete(dae: &Dae, unknowns: &[Unknown]) -> bool {
    unknowns.iter().all(|u| match u {
        Unknown::Algebraic(v) => dae.var(*v).kind == VarKind::Discrete,
        _ => false,
    })
}

/// A block per `when` clause, after the continuous ones: it runs at events and assigns its
/// variables (and re-initialises states).
fn when_blocks(dae: &Dae) -> impl Iterator<Item = serde_json::Value> + '_ {
    dae.hybrid.whens.iter().map(|w| {
        let (mut assigned, mut reinit): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
        let mut note = |action: &Action| {
            let (var, list) = match *action {
                Action::Assign { var, .. } => (var, &mut assigned),
                Action::Reinit { var, .. } => (var, &mut reinit),
                _ => return,
            };
            let name = dae.var(var).name.clone();
            if !list.contains(&name) {
                list.push(name);
            }
        };
        for branch in &w.branches {
            Action::walk(&branch.actions, &mut note);
        }
        json!({
            "equations": dae.when_lines(w),
            "unknowns": assigned,
            "reinit": reinit,
            "kind": "when",
            "solution": "events",
            "discrete": true,
        })
    })
}
