//! The ScalableTestSuite cases of `../shared/conformance/scalable` (read in place, never copied):
//! each model is loaded from the library as a whole package, flattened and analysed; its
//! states must be exactly the variables whose derivatives OpenModelica wrote to the reference
//! trajectory (`der(x[1])` columns) — up to aliases, as either side may keep either name of an
//! `a = b` pair — and what OMC recorded as parameters (including variables bound to parameter
//! expressions) must evaluate to the same values at the start. Prints a table; `cargo test --release --test scalable -- --nocapture`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use mocca::causal::{Point, causal_form, initial_point};
use mocca::dae::{Dae, VarKind};
use mocca::diagnostics::render_plain;
use mocca::expr::{Node, VarId};
use mocca::frontend::flatten_sources;
use mocca::load;
use mocca::source::SourceMap;
use mocca::structure;

fn suite() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/scalable");
    dir.join("MANIFEST.json").exists().then_some(dir)
}

struct Case {
    name: String,
    model: String,
    reference_csv: PathBuf,
    params_json: PathBuf,
}

fn cases(dir: &Path) -> Vec<Case> {
    let text = std::fs::read_to_string(dir.join("MANIFEST.json")).expect("readable manifest");
    let manifest: serde_json::Value = serde_json::from_str(&text).expect("manifest is JSON");
    let field = |c: &serde_json::Value, k: &str| c[k].as_str().unwrap_or_default().to_string();
    manifest["cases"]
        .as_array()
        .expect("a list of cases")
        .iter()
        .map(|c| Case {
            name: field(c, "name"),
            model: field(c, "model"),
            reference_csv: dir.join(field(c, "reference_csv")),
            params_json: dir.join(field(c, "reference_params_json")),
        })
        .collect()
}

/// The reduced DAE of one case evaluated at its start values, or the rendered diagnostics.
fn analyse(dir: &Path, model: &str) -> Result<(Dae, Point), String> {
    let mut sources = SourceMap::new();
    let library = dir.join("original/ScalableTestSuite");
    let user = load::load_paths(&mut sources, &[library]).map_err(|d| d.message)?;
    let flat =
        flatten_sources(sources, &user, Some(model), &[]).map_err(|(s, d)| render_plain(&s, &d))?;
    if flat.dae.equations.len() != flat.dae.unknowns() {
        return Err("unbalanced".to_string());
    }
    let (mut reduced, _) = structure::prepare(flat.dae);
    let structure = structure::analyse(&reduced).map_err(|d| render_plain(&flat.sources, &d))?;
    let causal = causal_form(&mut reduced, &structure);
    let mut point = initial_point(&reduced).map_err(|f| format!("{f:?}"))?;
    // Without initialisation some models divide by a state that starts at zero; the steps
    // before the failing one still hold their values, which is all the parameter check needs.
    let _ = causal.evaluate(&reduced.pool, &mut point);
    Ok((reduced, point))
}

/// The variable an eliminated alias stands for (`a = ±b` → `b`), itself if not an alias.
fn representative(dae: &Dae, mut v: VarId) -> VarId {
    for _ in 0..dae.variables.len() {
        let var = dae.var(v);
        let Some(binding) = var.binding.filter(|_| var.kind == VarKind::Alias) else {
            break;
        };
        let inner = match dae.pool.node(binding) {
            Node::Neg(x) => dae.pool.node(x),
            other => other,
        };
        match inner {
            Node::Var(r) => v = r,
            _ => break,
        }
    }
    v
}

/// The state names OMC wrote derivatives of: `der(x[1])` → `x[1]`.
fn reference_states(csv: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(csv).expect("readable reference");
    let header = text.lines().next().unwrap_or_default();
    header
        .split(',')
        .map(|c| c.trim().trim_matches('"'))
        .filter_map(|c| c.strip_prefix("der(")?.strip_suffix(')'))
        .map(str::to_string)
        .collect()
}

fn states(dae: &Dae) -> BTreeSet<String> {
    dae.var_ids()
        .filter(|&v| dae.var(v).kind == VarKind::State)
        .map(|v| dae.var(v).name.clone())
        .collect()
}

/// OMC's state names, each replaced by the name mocca kept for its alias set.
fn as_kept(dae: &Dae, names: &BTreeSet<String>) -> BTreeSet<String> {
    names
        .iter()
        .map(|n| match dae.lookup(n) {
            Some(v) => dae.var(representative(dae, v)).name.clone(),
            None => n.clone(),
        })
        .collect()
}

/// Recorded parameters whose value at the start differs from OMC's (or that mocca lacks).
fn parameter_mismatches(dae: &Dae, point: &Point, params: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(params).expect("readable parameters");
    let expected: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&text).expect("parameters are a JSON object");
    let mut wrong = Vec::new();
    for (name, value) in expected {
        let want = value.as_f64().unwrap_or(f64::NAN);
        let Some(v) = dae.lookup(&name) else {
            wrong.push(format!("{name} missing"));
            continue;
        };
        let var = dae.var(v);
        let got = match var.binding.filter(|_| var.kind == VarKind::Alias) {
            Some(b) => dae.pool.eval(b, point).unwrap_or(f64::NAN),
            None => point.vars[v.0 as usize],
        };
        let close = (got - want).abs() <= 1e-9 * want.abs().max(1.0);
        if !close {
            wrong.push(format!("{name} = {got}, OMC {want}"));
        }
    }
    wrong
}

#[test]
fn every_case_has_omcs_states_and_parameter_values() {
    let Some(dir) = suite() else {
        eprintln!("skipped: ../shared/conformance/scalable is absent");
        return;
    };
    let mut failures = Vec::new();
    println!("| case | states (mocca / OMC) | parameters checked | result |");
    println!("| --- | ---: | ---: | --- |");
    for case in cases(&dir) {
        let expected = reference_states(&case.reference_csv);
        let outcome = analyse(&dir, &case.model).and_then(|(dae, point)| {
            let ours = states(&dae);
            let expected = as_kept(&dae, &expected);
            if ours != expected {
                let missing: Vec<_> = expected.difference(&ours).collect();
                let extra: Vec<_> = ours.difference(&expected).collect();
                return Err(format!(
                    "states differ: missing {missing:?}, extra {extra:?}"
                ));
            }
            let wrong = parameter_mismatches(&dae, &point, &case.params_json);
            if wrong.is_empty() {
                Ok(ours.len())
            } else {
                Err(format!("parameters differ: {wrong:?}"))
            }
        });
        let result = match &outcome {
            Ok(_) => "ok".to_string(),
            Err(e) => e.lines().next().unwrap_or_default().to_string(),
        };
        println!(
            "| {} | {} / {} | {} | {result} |",
            case.name,
            outcome.as_ref().map_or("–".to_string(), |n| n.to_string()),
            expected.len(),
            std::fs::read_to_string(&case.params_json)
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|v| v.as_object().map(|o| o.len()))
                .unwrap_or(0),
        );
        if let Err(e) = outcome {
            failures.push(format!("{}: {e}", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
