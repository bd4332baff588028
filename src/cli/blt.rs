//! `mocca blt`: the matching and the BLT blocks in evaluation order.

use std::process::ExitCode;

use serde_json::json;

use super::Format;
use super::model::{ModelArgs, load_and_analyse};
use crate::causal::{Step, causal_form};

pub fn run(args: &ModelArgs) -> ExitCode {
    let (flat, structure) = match load_and_analyse(args) {
        Ok(ok) => ok,
        Err(code) => return code,
    };
    let mut dae = flat.dae;
    let causal = causal_form(&mut dae, &structure);
    let blocks: Vec<_> = structure
        .blocks
        .iter()
        .zip(&causal.steps)
        .map(|(block, step)| {
            let solution = match step {
                Step::Assign { .. } => "assign",
                Step::Newton { .. } => "newton",
                Step::Loop { .. } => "loop",
            };
            json!({
                "equations": block.equations.iter().map(|&e| {
                    let eq = &dae.equations[e];
                    format!("{} = {}", dae.show(eq.lhs), dae.show(eq.rhs))
                }).collect::<Vec<_>>(),
                "unknowns": block.unknowns.iter().map(|u| u.name(&dae)).collect::<Vec<_>>(),
                "kind": block.kind,
                "solution": solution,
            })
        })
        .collect();
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
                let _ = writeln!(
                    w,
                    "block {:>4}  {:<6}  solve {}",
                    k + 1,
                    b["solution"].as_str().unwrap_or(""),
                    unknowns.join(", ")
                );
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
