//! The run-time checks of the Modelica compliance suite (`../shared/conformance/compliance`,
//! read in place): every `shouldPass` test that carries `compareReal` checks is translated
//! (its checks rewritten with builtins, see `conformance/compliance_text.rs`), simulated to
//! the experiment's StopTime with mocca's BDF at a tight tolerance, and its asserts must hold
//! at every output point — which is exactly how the suite states its expected results.
//! Tests that must fail and translate are simulated too: a failing assert rejects them at run
//! time, as the suite intends for `Equations/Assert`.
//! Prints a table per folder; `cargo test --release --test compliance_run -- --nocapture`.

#[path = "conformance/compliance_text.rs"]
mod compliance_text;

use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use mocca::causal::{causal_form, initial_point};
use mocca::diagnostics::render_plain;
use mocca::frontend::flatten_sources;
use mocca::jacobian::ode_jacobian;
use mocca::simulate::fixed_step::Method;
use mocca::simulate::run::{self, Exchange, Failure, Model, Options, Partition};
use mocca::source::SourceMap;
use mocca::structure;

fn suite() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/compliance");
    dir.join("MANIFEST.json").exists().then_some(dir)
}

/// How far one test got.
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    /// Not translated (outside the subset, or rejected): the checks were not run.
    NotTranslated(String),
    /// Translated, but the simulation stopped before StopTime for another reason.
    NotSimulated(String),
    /// Simulated; an assert failed.
    CheckFailed(String),
    /// Simulated to StopTime with every assert holding at every output point.
    Passed,
}

/// `StopTime = 0.01` → 0.01 (the suite's default experiment is 0 → 1).
fn experiment(text: &str, key: &str) -> Option<f64> {
    let at = text.find(key)? + key.len();
    let rest = text[at..].trim_start().strip_prefix('=')?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c)))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

fn run_one(
    name: &str,
    text: String,
    model: &str,
    experiment_text: &str,
    expect_checks: bool,
) -> Outcome {
    let mut sources = SourceMap::new();
    let id = sources.add(name.to_string(), text);
    let flat = match flatten_sources(sources, &[id], Some(model), &[]) {
        Ok(flat) => flat,
        Err((s, d)) => return Outcome::NotTranslated(first_line(&render_plain(&s, &d))),
    };
    if flat.dae.equations.len() != flat.dae.unknowns() {
        return Outcome::NotTranslated("unbalanced".to_string());
    }
    let asserts = flat.dae.assertions.len();
    let mut dae = match structure::prepare(flat.dae) {
        Ok((dae, _)) => dae,
        Err(d) => return Outcome::NotTranslated(first_line(&render_plain(&flat.sources, &d))),
    };
    let structure = match structure::analyse(&dae) {
        Ok(s) => s,
        Err(d) => return Outcome::NotTranslated(first_line(&render_plain(&flat.sources, &d))),
    };
    let causal = causal_form(&mut dae, &structure);
    let jac = ode_jacobian(&mut dae, &causal);
    let start = match initial_point(&dae) {
        Ok(p) => p,
        Err(f) => return Outcome::NotTranslated(format!("parameters: {f:?}")),
    };
    let t0 = experiment(experiment_text, "StartTime").unwrap_or(0.0);
    let t1 = experiment(experiment_text, "StopTime").unwrap_or(1.0);
    let options = Options {
        method: Method::ImplicitEuler,
        start: t0,
        stop: t1,
        steps: 100,
        tol: 1e-10,
        partition: Partition::None,
        exchange: Exchange::GaussSeidel,
        max_step: f64::INFINITY,
    };
    let model = Model {
        dae: &dae,
        structure: &structure,
        causal: &causal,
        jac: &jac,
    };
    assert!(
        asserts > 0 || !expect_checks,
        "{name}: the checks were lost in translation"
    );
    match run::simulate_bdf(model, &start, &options, &[]) {
        Ok(_) => Outcome::Passed,
        Err(Failure::Assertion(v)) => {
            let a = &dae.assertions[v.assertion];
            Outcome::CheckFailed(format!("t = {}: {}", v.time, a.message))
        }
        Err(other) => Outcome::NotSimulated(format!("{other:?}")),
    }
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_string()
}

#[derive(Default)]
struct Row {
    tests: usize,
    passed: usize,
    failed: usize,
    not_simulated: usize,
    not_translated: usize,
}

/// Runs every test of the suite that `select` picks (by `shouldPass` and its number of checks),
/// handing each path and outcome to `seen`; `None` when the suite is absent.
fn run_selected(
    select: impl Fn(bool, usize) -> bool,
    mut seen: impl FnMut(&str, Outcome),
) -> Option<()> {
    let Some(dir) = suite() else {
        eprintln!("skipped: ../shared/conformance/compliance is absent");
        return None;
    };
    let text = std::fs::read_to_string(dir.join("MANIFEST.json")).expect("readable manifest");
    let manifest: serde_json::Value = serde_json::from_str(&text).expect("manifest is JSON");
    for test in manifest["tests"].as_array().expect("tests") {
        let should_pass = test["shouldPass"].as_bool() == Some(true);
        let checks = test["checks_struct"].as_array().map_or(0, Vec::len);
        if !select(should_pass, checks) {
            continue;
        }
        let path = test["path"].as_str().expect("path");
        let model = test["model"].as_str().expect("model");
        let source = std::fs::read_to_string(dir.join(path)).expect("readable test");
        let (prepared, _) = compliance_text::prepare(&source);
        let experiment_text = test["experiment"].as_str().unwrap_or_default();
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            run_one(path, prepared, model, experiment_text, should_pass)
        }))
        .unwrap_or_else(|_| Outcome::NotSimulated("panicked".to_string()));
        seen(path, outcome);
    }
    Some(())
}

#[test]
fn compliance_checks_hold_when_simulated() {
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut problems = Vec::new();
    let mut failures = Vec::new();
    let ran = run_selected(
        |should_pass, checks| should_pass && checks > 0,
        |path, outcome| {
            let folder = path.split('/').nth(1).unwrap_or_default().to_string();
            let row = rows.entry(folder).or_default();
            row.tests += 1;
            match &outcome {
                Outcome::Passed => row.passed += 1,
                Outcome::CheckFailed(why) => {
                    row.failed += 1;
                    failures.push(format!("{path}: {why}"));
                }
                Outcome::NotSimulated(why) => {
                    row.not_simulated += 1;
                    problems.push(format!("{path}: not simulated: {why}"));
                }
                Outcome::NotTranslated(why) => {
                    row.not_translated += 1;
                    problems.push(format!("{path}: not translated: {why}"));
                }
            }
        },
    );
    if ran.is_none() {
        return;
    }
    println!(
        "{:<22} {:>6} {:>7} {:>7} {:>14} {:>15}",
        "folder", "tests", "passed", "failed", "not simulated", "not translated"
    );
    let mut total = Row::default();
    for (folder, r) in &rows {
        println!(
            "{folder:<22} {:>6} {:>7} {:>7} {:>14} {:>15}",
            r.tests, r.passed, r.failed, r.not_simulated, r.not_translated
        );
        total.tests += r.tests;
        total.passed += r.passed;
        total.failed += r.failed;
        total.not_simulated += r.not_simulated;
        total.not_translated += r.not_translated;
    }
    println!(
        "{:<22} {:>6} {:>7} {:>7} {:>14} {:>15}",
        "total", total.tests, total.passed, total.failed, total.not_simulated, total.not_translated
    );
    for p in problems.iter().chain(&failures) {
        println!("  {p}");
    }
    // Every test that translates and simulates must satisfy its checks.
    assert!(
        failures.is_empty(),
        "checks failed:\n{}",
        failures.join("\n")
    );
    assert!(total.tests > 0);
}

#[test]
fn tests_that_must_fail_at_run_time_do() {
    let mut at_run_time = Vec::new();
    let mut accepted = Vec::new();
    let ran = run_selected(
        |should_pass, _| !should_pass,
        |path, outcome| match outcome {
            Outcome::CheckFailed(why) => at_run_time.push(format!("{path}: {why}")),
            Outcome::Passed => accepted.push(path.to_string()),
            Outcome::NotSimulated(_) | Outcome::NotTranslated(_) => {}
        },
    );
    if ran.is_none() {
        return;
    }
    println!(
        "rejected at run time by a failing assert: {}",
        at_run_time.len()
    );
    for r in &at_run_time {
        println!("  {r}");
    }
    println!(
        "translated and simulated without complaint: {}",
        accepted.len()
    );
    for a in &accepted {
        println!("  {a}");
    }
    // The assert tests that must fail do so when simulated.
    let assert_tests: Vec<&String> = accepted
        .iter()
        .filter(|p| p.contains("Equations/Assert/"))
        .collect();
    assert!(assert_tests.is_empty(), "accepted: {assert_tests:?}");
    assert!(at_run_time.iter().any(|r| r.contains("AssertFalseExp")));
}
