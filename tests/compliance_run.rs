//! The run-time checks of the Modelica compliance suite (`../shared/conformance/compliance`,
//! read in place): every `shouldPass` test that carries `compareReal` checks is translated
//! (its checks rewritten with builtins, see `conformance/compliance_text.rs`), simulated to
//! the experiment's StopTime with mocca's BDF at a tight tolerance, and its asserts must hold
//! at every output point — which is exactly how the suite states its expected results.
//! Tests that must fail and translate are simulated too: a failing assert rejects them at run
//! time, as the suite intends for `Equations/Assert`.
//! Prints a table per folder; `cargo test --release --test compliance_run -- --nocapture`.

#[path = "conformance/compliance_sim.rs"]
mod compliance_sim;
#[path = "conformance/compliance_text.rs"]
mod compliance_text;

use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use compliance_sim::{Outcome, run_one};

fn suite() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/compliance");
    dir.join("MANIFEST.json").exists().then_some(dir)
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
        let model = test["qualified_name"].as_str().expect("qualified_name");
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
