//! The ScalableTestSuite cases of `../shared/conformance/scalable` (read in place, never copied):
//! each model is loaded from the library as a whole package, flattened and analysed; its
//! states must be exactly the variables whose derivatives OpenModelica wrote to the reference
//! trajectory (`der(x[1])` columns) — up to aliases, as either side may keep either name of an
//! `a = b` pair — and what OMC recorded as parameters (including variables bound to parameter
//! expressions) must evaluate to the same values at the start. Then each case is simulated
//! with mocca's BDF over the reference's interval and its compared variables must stay within
//! the manifest's tolerances of OMC's trajectory: `|x̂ − x| ≤ absTol + relTol·max|x|` at every
//! reference time. Prints a table; `cargo test --release --test scalable -- --nocapture`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use mocca::causal::{Causal, Point, causal_form, initial_point};
use mocca::dae::{Dae, VarKind};
use mocca::diagnostics::render_plain;
use mocca::expr::{Node, VarId};
use mocca::frontend::flatten_sources;
use mocca::jacobian::ode_jacobian;
use mocca::load;
use mocca::simulate::fixed_step::Method;
use mocca::simulate::run::{self, Exchange, Model, Options, Partition};
use mocca::source::SourceMap;
use mocca::structure::{self, Unknown};

fn suite() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/scalable");
    dir.join("MANIFEST.json").exists().then_some(dir)
}

struct Case {
    name: String,
    model: String,
    reference_csv: PathBuf,
    params_json: PathBuf,
    compare_vars: Vec<String>,
    rel_tol: f64,
    abs_tol: f64,
    /// `startTime = 0.0, stopTime = 2.0, numberOfIntervals = 500, tolerance = 1e-6, …`
    simulation_options: String,
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
            compare_vars: c["compare_vars"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            rel_tol: c["compare_relTol"].as_f64().unwrap_or(0.01),
            abs_tol: c["compare_absTol"].as_f64().unwrap_or(1e-4),
            simulation_options: field(c, "simulation_options"),
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
    let (mut reduced, _) = structure::prepare(flat.dae).expect("index reduction");
    let structure = structure::analyse(&reduced).map_err(|d| render_plain(&flat.sources, &d))?;
    let causal = causal_form(&mut reduced, &structure);
    let mut point = initial_point(&reduced).map_err(|f| format!("{f:?}"))?;
    // Without initialisation some models divide by a state that starts at zero; the steps
    // before the failing one still hold their values, which is all the parameter check needs.
    let _ = causal.evaluate(&reduced.pool, &mut point);
    Ok((reduced, point))
}

/// The variable an eliminated alias stands for (`a = ±b` → `(b, ±1)`), itself if not an alias.
fn representative(dae: &Dae, mut v: VarId) -> (VarId, f64) {
    let mut sign = 1.0;
    for _ in 0..dae.variables.len() {
        let var = dae.var(v);
        let Some(binding) = var.binding.filter(|_| var.kind == VarKind::Alias) else {
            break;
        };
        let inner = match dae.pool.node(binding) {
            Node::Neg(x) => {
                sign = -sign;
                dae.pool.node(x)
            }
            other => other,
        };
        match inner {
            Node::Var(r) => v = r,
            _ => break,
        }
    }
    (v, sign)
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
            Some(v) => dae.var(representative(dae, v).0).name.clone(),
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

/// One number of OMC's `simulationOptions` string.
fn option(text: &str, key: &str) -> Option<f64> {
    let rest = &text[text.find(&format!("{key} = "))? + key.len() + 3..];
    rest.split(',').next()?.trim().parse().ok()
}

/// The reference trajectory: times and the named columns.
fn reference(csv: &Path, names: &[String]) -> (Vec<f64>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(csv).expect("readable reference");
    let mut lines = text.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split(',')
        .map(|c| c.trim().trim_matches('"'))
        .collect();
    let index: Vec<usize> = names
        .iter()
        .map(|n| {
            header
                .iter()
                .position(|h| h == n)
                .expect("a compared column")
        })
        .collect();
    let (mut times, mut columns) = (Vec::new(), vec![Vec::new(); names.len()]);
    for line in lines {
        let row: Vec<f64> = line
            .split(',')
            .map(|x| x.trim().parse().unwrap_or(f64::NAN))
            .collect();
        times.push(row[0]);
        for (column, &i) in columns.iter_mut().zip(&index) {
            column.push(row[i]);
        }
    }
    (times, columns)
}

/// The unknown mocca computes for an OMC name (`der(x)` or a variable, through its alias), with
/// the sign relating them.
fn unknown(dae: &Dae, causal: &Causal, name: &str) -> Option<(Unknown, f64)> {
    let (inner, derivative) = match name.strip_prefix("der(").and_then(|s| s.strip_suffix(')')) {
        Some(inner) => (inner, true),
        None => (name, false),
    };
    let (v, sign) = representative(dae, dae.lookup(inner)?);
    match derivative {
        true if causal.states.contains(&v) => Some((Unknown::Derivative(v), sign)),
        true => None,
        false => Some((Unknown::Algebraic(v), sign)),
    }
}

/// Simulates one case with BDF on the reference's grid; the largest violation of the
/// tolerance tube (≤ 1 passes), or why it could not run.
fn trajectory_error(dir: &Path, case: &Case) -> Result<f64, String> {
    let mut sources = SourceMap::new();
    let user = load::load_paths(&mut sources, &[dir.join("original/ScalableTestSuite")])
        .map_err(|d| d.message)?;
    let flat = flatten_sources(sources, &user, Some(&case.model), &[])
        .map_err(|(s, d)| render_plain(&s, &d))?;
    let (mut dae, _) = structure::prepare(flat.dae).expect("index reduction");
    let structure = structure::analyse(&dae).map_err(|d| render_plain(&flat.sources, &d))?;
    let causal = causal_form(&mut dae, &structure);
    let jac = ode_jacobian(&mut dae, &causal);
    let start = initial_point(&dae).map_err(|f| format!("{f:?}"))?;
    let opts = &case.simulation_options;
    let (t0, t1) = (
        option(opts, "startTime").unwrap_or(0.0),
        option(opts, "stopTime").unwrap_or(1.0),
    );
    let options = Options {
        method: Method::ImplicitEuler,
        start: t0,
        stop: t1,
        steps: option(opts, "numberOfIntervals").unwrap_or(500.0) as u64,
        // A decade tighter than OMC's DASSL run, so the comparison measures the model.
        tol: option(opts, "tolerance").unwrap_or(1e-6) / 10.0,
        partition: Partition::None,
        exchange: Exchange::GaussSeidel,
        max_step: f64::INFINITY,
    };
    let mut outputs = Vec::new();
    let mut signs = Vec::new();
    for name in &case.compare_vars {
        let (u, sign) = unknown(&dae, &causal, name).ok_or(format!("`{name}` not computed"))?;
        outputs.push(u);
        signs.push(sign);
    }
    let model = Model {
        dae: &dae,
        structure: &structure,
        causal: &causal,
        jac: &jac,
    };
    let run = run::simulate_bdf(model, &start, &options, &outputs).map_err(|f| format!("{f:?}"))?;
    let (times, columns) = reference(&case.reference_csv, &case.compare_vars);
    let mut worst: f64 = 0.0;
    for ((ours, theirs), sign) in run.columns.iter().zip(&columns).zip(&signs) {
        let range = theirs.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let allowed = case.abs_tol + case.rel_tol * range;
        for (&t, &x) in times.iter().zip(theirs) {
            let at = interpolate(&run.times, ours, t) * sign;
            worst = worst.max((at - x).abs() / allowed);
        }
    }
    Ok(worst)
}

fn interpolate(times: &[f64], values: &[f64], t: f64) -> f64 {
    let k = times.partition_point(|&s| s < t).clamp(1, times.len() - 1);
    let (a, b) = (times[k - 1], times[k]);
    let w = if b > a { (t - a) / (b - a) } else { 1.0 };
    values[k - 1] + w * (values[k] - values[k - 1])
}

#[test]
fn every_case_reproduces_omcs_trajectory_within_its_tolerances() {
    let Some(dir) = suite() else {
        eprintln!("skipped: ../shared/conformance/scalable is absent");
        return;
    };
    println!("| case | compared | worst error / allowed | result |");
    println!("| --- | --- | ---: | --- |");
    let mut failures = Vec::new();
    for case in cases(&dir) {
        let outcome = trajectory_error(&dir, &case);
        let (ratio, result) = match &outcome {
            Ok(r) if *r <= 1.0 => (format!("{r:.1e}"), "ok".to_string()),
            Ok(r) => (format!("{r:.1e}"), "outside the tolerance".to_string()),
            Err(e) => (
                "–".to_string(),
                e.lines().next().unwrap_or_default().to_string(),
            ),
        };
        println!(
            "| {} | {} | {ratio} | {result} |",
            case.name,
            case.compare_vars.join(", ")
        );
        if result != "ok" {
            failures.push(format!("{}: {result}", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
