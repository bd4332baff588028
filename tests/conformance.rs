//! Conformance against other projects' Modelica test suites (read from `../shared/conformance`,
//! never copied into the repository):
//!
//! - `omc-flattening/`: OpenModelica's flattening tests. Each file must be accepted
//!   (`status: correct`) or rejected (`status: incorrect`); for accepted correct files the
//!   counts of OMC's expected flat model (variables by kind, states, scalar equations) are
//!   compared with mocca's flat DAE.
//! - `compliance/`: the Modelica Association compliance suite, `shouldPass` true or false.
//!
//! Run: `cargo test --release --test conformance -- --nocapture`. Prints a table per folder
//! and the overall rates; fails on any panic and when a rate drops below its floor.
//! See CONFORMANCE.md for the current table and the classes of failure.

#[path = "conformance/compliance_sim.rs"]
mod compliance_sim;
#[path = "conformance/compliance_text.rs"]
mod compliance_text;
#[path = "conformance/omc_counts.rs"]
mod omc_counts;

use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use mocca::dae::{Dae, VarKind};
use mocca::frontend;
use mocca::source::SourceMap;
use omc_counts::Counts;

/// Floors just under the rates reached, so regressions fail.
const FLOORS: Floors = Floors {
    core_decision: 0.98,
    core_decision_in_subset: 0.985,
    arrays_decision: 0.97,
    arrays_decision_in_subset: 0.97,
    core_counts: 0.95,
};

struct Floors {
    core_decision: f64,
    core_decision_in_subset: f64,
    arrays_decision: f64,
    arrays_decision_in_subset: f64,
    core_counts: f64,
}

/// What mocca did with one file.
struct Outcome {
    accepted: bool,
    panicked: bool,
    /// Rejected because the model needs a construct outside mocca's subset (SPEC §2).
    out_of_subset: bool,
    first_error: String,
    counts: Option<Counts>,
}

/// One test file's result.
struct Case {
    corpus: &'static str,
    folder: String,
    path: String,
    tier: String,
    expect_accept: bool,
    outcome: Outcome,
    expected_counts: Option<Counts>,
}

impl Case {
    fn decided_right(&self) -> bool {
        self.expect_accept == self.outcome.accepted
    }

    /// A correct file rejected only for constructs outside the subset.
    fn out_of_subset(&self) -> bool {
        self.expect_accept && !self.outcome.accepted && self.outcome.out_of_subset
    }

    fn counts_match(&self) -> Option<bool> {
        if !(self.expect_accept && self.outcome.accepted) {
            return None;
        }
        let (ours, theirs) = (
            self.outcome.counts.as_ref()?,
            self.expected_counts.as_ref()?,
        );
        Some(comparable(ours) == comparable(theirs))
    }
}

/// The counts compared: variables by kind, states, scalar equations, initial equations.
fn comparable(c: &Counts) -> [usize; 6] {
    [
        c.parameters,
        c.constants,
        c.others,
        c.states,
        c.equations,
        c.initial_equations,
    ]
}

fn corpus_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance")
}

#[test]
fn conformance() {
    let root = corpus_root();
    if !root.is_dir() {
        println!(
            "conformance: {} not found, skipping (the corpora are not part of the repository)",
            root.display()
        );
        return;
    }
    // Deep models recurse deeply in the flattener: give it room, as the CLI does.
    let cases = std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn(move || with_quiet_panics(|| run_all(&root)))
        .expect("spawn the conformance thread")
        .join()
        .expect("the conformance runner itself must not panic");
    print_failures(&cases);
    for corpus in ["omc-flattening", "compliance"] {
        print_table(corpus, &cases);
    }
    let rates = Rates::of(cases.iter());
    rates.print();
    let panics: Vec<&str> = cases
        .iter()
        .filter(|c| c.outcome.panicked)
        .map(|c| c.path.as_str())
        .collect();
    assert!(panics.is_empty(), "mocca panicked on {panics:?}");
    rates.check(&FLOORS);
}

fn run_all(root: &Path) -> Vec<Case> {
    let mut cases = run_omc(&root.join("omc-flattening"));
    cases.extend(run_compliance(&root.join("compliance")));
    cases
}

fn run_omc(dir: &Path) -> Vec<Case> {
    let manifest = read_json(&dir.join("MANIFEST.json"));
    let tests = manifest["tests"].as_array().expect("`tests` list");
    let mut cases = Vec::new();
    for test in tests {
        let path = test["path"].as_str().expect("path").to_string();
        let text = read_text(&dir.join(&path));
        let expect_accept = test["status"].as_str() == Some("correct");
        let expected_counts = if expect_accept {
            test["expected_result"].as_str().and_then(omc_counts::count)
        } else {
            None
        };
        cases.push(Case {
            corpus: "omc-flattening",
            folder: path.split('/').next().unwrap_or("").to_string(),
            tier: test["tier"].as_str().unwrap_or("core").to_string(),
            outcome: flatten_text(&path, text, None, Acceptance::Flattens),
            path,
            expect_accept,
            expected_counts,
        });
    }
    cases
}

fn run_compliance(dir: &Path) -> Vec<Case> {
    let manifest = read_json(&dir.join("MANIFEST.json"));
    let tests = manifest["tests"].as_array().expect("`tests` list");
    let mut cases = Vec::new();
    for test in tests {
        let path = test["path"].as_str().expect("path").to_string();
        let model = test["qualified_name"].as_str().expect("qualified_name");
        let (text, _) = compliance_text::prepare(&read_text(&dir.join(&path)));
        let folder = path.split('/').nth(1).unwrap_or("").to_string();
        let expect_accept = test["shouldPass"].as_bool() == Some(true);
        let mut outcome = flatten_text(&path, text.clone(), Some(model), Acceptance::Translates);
        if !expect_accept && outcome.accepted {
            let experiment = test["experiment"].as_str().unwrap_or_default();
            reject_at_run_time(&mut outcome, &path, text, model, experiment);
        }
        cases.push(Case {
            corpus: "compliance",
            folder,
            tier: test["bucket"].as_str().unwrap_or("core").to_string(),
            outcome,
            path,
            expect_accept,
            expected_counts: None,
        });
    }
    cases
}

/// A test that must fail and translates is run as the suite runs it: an assert that fails
/// before StopTime rejects it (`Equations/Assert`).
fn reject_at_run_time(
    outcome: &mut Outcome,
    path: &str,
    text: String,
    model: &str,
    experiment: &str,
) {
    let run = panic::catch_unwind(AssertUnwindSafe(|| {
        compliance_sim::run_one(path, text, model, experiment, false)
    }));
    match run {
        Ok(compliance_sim::Outcome::CheckFailed(why)) => {
            outcome.accepted = false;
            outcome.first_error = format!("at run time: {why}");
        }
        Ok(_) => {}
        Err(_) => outcome.panicked = true,
    }
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&read_text(path)).expect("a valid manifest")
}

fn read_text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// What "accepted" means for a corpus.
#[derive(Clone, Copy, PartialEq)]
enum Acceptance {
    /// OMC's flattening tests: the model flattens (their expected results need not be
    /// balanced, e.g. `ConnectArrays1` has 11 equations for 10 unknowns).
    Flattens,
    /// The compliance suite's `shouldPass`: the model translates, which in Modelica includes
    /// being balanced (as many equations as unknowns), as `mocca check` requires.
    Translates,
}

/// Flattens one file's text, catching panics.
fn flatten_text(name: &str, text: String, model: Option<&str>, acceptance: Acceptance) -> Outcome {
    if std::env::var_os("CONFORMANCE_TRACE").is_some() {
        eprintln!("conformance: {name}");
    }
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut sources = SourceMap::new();
        let id = sources.add(name.to_string(), text);
        frontend::flatten_sources(sources, &[id], model, &[])
    }));
    match result {
        Ok(Ok(flat)) => {
            let (equations, unknowns) = (flat.dae.equations.len(), flat.dae.unknowns());
            let balanced = equations == unknowns;
            Outcome {
                accepted: balanced || acceptance == Acceptance::Flattens,
                panicked: false,
                out_of_subset: false,
                first_error: if balanced {
                    String::new()
                } else {
                    format!("not balanced: {equations} equations, {unknowns} unknowns")
                },
                counts: Some(counts_of(&flat.dae)),
            }
        }
        Ok(Err((_, diags))) => {
            let errors: Vec<&str> = diags
                .iter()
                .filter(|d| d.is_error())
                .map(|d| d.message.as_str())
                .collect();
            Outcome {
                accepted: false,
                panicked: false,
                out_of_subset: errors.iter().any(|m| outside_subset(m)),
                first_error: errors.first().copied().unwrap_or("").to_string(),
                counts: None,
            }
        }
        Err(_) => Outcome {
            accepted: false,
            panicked: true,
            out_of_subset: false,
            first_error: format!(
                "PANIC: {}",
                LAST_PANIC.lock().map(|p| p.clone()).unwrap_or_default()
            ),
            counts: None,
        },
    }
}

/// A diagnostic saying the model uses a construct SPEC §2 leaves out of the subset.
fn outside_subset(message: &str) -> bool {
    message.contains("not supported")
}

fn counts_of(dae: &Dae) -> Counts {
    let count = |k: VarKind| dae.count(k);
    let (parameters, constants) = (count(VarKind::Parameter), count(VarKind::Constant));
    Counts {
        parameters,
        constants,
        others: dae.variables.len() - parameters - constants,
        states: count(VarKind::State),
        equations: dae.equations.len(),
        initial_equations: dae.initial_equations.len(),
        assertions: dae.assertions.len(),
    }
}

static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

/// Runs `f` with a panic hook that records the message instead of printing it.
fn with_quiet_panics<T>(f: impl FnOnce() -> T) -> T {
    let previous = panic::take_hook();
    panic::set_hook(Box::new(|info| {
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = info.to_string();
        }
    }));
    let result = f();
    panic::set_hook(previous);
    result
}

fn print_failures(cases: &[Case]) {
    println!("\nFiles not decided as expected or with differing counts:");
    for c in cases {
        let verdict = if c.outcome.panicked {
            "PANIC"
        } else if c.out_of_subset() {
            "out of subset"
        } else if !c.decided_right() && c.expect_accept {
            "rejected, should accept"
        } else if !c.decided_right() {
            "accepted, should reject"
        } else if c.counts_match() == Some(false) {
            "counts differ"
        } else {
            continue;
        };
        println!("  {:<70} {verdict}", format!("{}/{}", c.corpus, c.path));
        if !c.outcome.first_error.is_empty() {
            println!(
                "      {}",
                c.outcome.first_error.lines().next().unwrap_or("")
            );
        }
        if c.counts_match() == Some(false)
            && let (Some(o), Some(e)) = (&c.outcome.counts, &c.expected_counts)
        {
            println!(
                "      [par, const, other, states, eqs, init] mocca {:?} omc {:?}",
                comparable(o),
                comparable(e)
            );
        }
    }
}

#[derive(Default)]
struct Row {
    files: usize,
    expect_accept: usize,
    accepted: usize,
    expect_reject: usize,
    rejected: usize,
    out_of_subset: usize,
    compared: usize,
    counts_match: usize,
    panics: usize,
}

impl Row {
    fn add(&mut self, c: &Case) {
        self.files += 1;
        if c.expect_accept {
            self.expect_accept += 1;
            self.accepted += usize::from(c.outcome.accepted);
        } else {
            self.expect_reject += 1;
            self.rejected += usize::from(!c.outcome.accepted);
        }
        self.out_of_subset += usize::from(c.out_of_subset());
        if let Some(m) = c.counts_match() {
            self.compared += 1;
            self.counts_match += usize::from(m);
        }
        self.panics += usize::from(c.outcome.panicked);
    }
}

fn print_table(corpus: &str, cases: &[Case]) {
    let mut rows: BTreeMap<&str, Row> = BTreeMap::new();
    let mut total = Row::default();
    for c in cases.iter().filter(|c| c.corpus == corpus) {
        rows.entry(c.folder.as_str()).or_default().add(c);
        total.add(c);
    }
    println!("\n{corpus}");
    println!(
        "| folder | files | accepted / should accept | rejected / should reject | out of subset | counts match / compared | panics |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (folder, r) in rows.iter().chain(std::iter::once((&"**total**", &total))) {
        println!(
            "| {folder} | {} | {} / {} | {} / {} | {} | {} | {} |",
            r.files,
            r.accepted,
            r.expect_accept,
            r.rejected,
            r.expect_reject,
            r.out_of_subset,
            if corpus == "compliance" {
                "–".to_string()
            } else {
                format!("{} / {}", r.counts_match, r.compared)
            },
            r.panics
        );
    }
}

/// Overall rates for one tier (core or arrays) over both corpora.
#[derive(Default)]
struct TierRates {
    files: usize,
    right: usize,
    out_of_subset: usize,
    compared: usize,
    counts_match: usize,
}

impl TierRates {
    fn decision(&self) -> f64 {
        ratio(self.right, self.files)
    }

    /// Out-of-subset files left out of the denominator.
    fn decision_in_subset(&self) -> f64 {
        ratio(self.right, self.files - self.out_of_subset)
    }

    fn counts(&self) -> f64 {
        ratio(self.counts_match, self.compared)
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

struct Rates {
    core: TierRates,
    arrays: TierRates,
}

impl Rates {
    fn of<'c>(cases: impl Iterator<Item = &'c Case>) -> Rates {
        let mut rates = Rates {
            core: TierRates::default(),
            arrays: TierRates::default(),
        };
        for c in cases {
            let t = if c.tier == "arrays" {
                &mut rates.arrays
            } else {
                &mut rates.core
            };
            t.files += 1;
            t.right += usize::from(c.decided_right());
            t.out_of_subset += usize::from(c.out_of_subset());
            if let Some(m) = c.counts_match() {
                t.compared += 1;
                t.counts_match += usize::from(m);
            }
        }
        rates
    }

    fn print(&self) {
        println!("\nBoth corpora, by tier:");
        println!(
            "| tier | files | decided as expected | out of subset | decided as expected, in subset | counts match (OMC, accepted correct) |"
        );
        println!("| --- | ---: | ---: | ---: | ---: | ---: |");
        for (name, t) in [("core", &self.core), ("arrays", &self.arrays)] {
            println!(
                "| {name} | {} | {} ({:.1} %) | {} | {:.1} % | {} / {} ({:.1} %) |",
                t.files,
                t.right,
                100.0 * t.decision(),
                t.out_of_subset,
                100.0 * t.decision_in_subset(),
                t.counts_match,
                t.compared,
                100.0 * t.counts()
            );
        }
    }

    fn check(&self, floors: &Floors) {
        let checks = [
            ("core decided", self.core.decision(), floors.core_decision),
            (
                "core decided (in subset)",
                self.core.decision_in_subset(),
                floors.core_decision_in_subset,
            ),
            (
                "arrays decided",
                self.arrays.decision(),
                floors.arrays_decision,
            ),
            (
                "arrays decided (in subset)",
                self.arrays.decision_in_subset(),
                floors.arrays_decision_in_subset,
            ),
            ("core counts", self.core.counts(), floors.core_counts),
        ];
        for (what, rate, floor) in checks {
            assert!(
                rate >= floor,
                "{what}: {:.1} % is below the floor {:.1} %",
                100.0 * rate,
                100.0 * floor
            );
        }
    }
}
