//! SPEC §3: `mocca flatten` prints Modelica that mocca parses back to the same DAE. Checked on
//! every bundled example and on every conformance model that flattens (read from
//! `../shared/conformance`, skipped when absent): the re-read DAE has the same variables (name,
//! kind, type), the same states, and prints to the same text (declarations with their
//! attributes and bindings, equations, assertions, initial equations).
//!
//! Run: `cargo test --release --test flatten_roundtrip -- --nocapture` prints the counts.

#[path = "conformance/compliance_text.rs"]
mod compliance_text;

use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use mocca::dae::{Dae, VarKind};
use mocca::diagnostics::render_plain;
use mocca::frontend::flatten_sources;
use mocca::source::SourceMap;

/// A model to flatten: its display name, its text, the class to flatten (default: the last).
struct Model {
    name: String,
    text: String,
    class: Option<String>,
}

fn flatten(name: &str, text: &str, class: Option<&str>) -> Result<Dae, String> {
    let mut sources = SourceMap::new();
    let id = sources.add(name.to_string(), text.to_string());
    match flatten_sources(sources, &[id], class, &[]) {
        Ok(flat) => Ok(flat.dae),
        Err((sources, diags)) => Err(render_plain(&sources, &diags)),
    }
}

/// Each variable as `name kind type`, in declaration order.
fn variables(dae: &Dae) -> Vec<String> {
    dae.variables
        .iter()
        .map(|v| format!("{} {:?} {}", v.name, v.kind, v.ty.name()))
        .collect()
}

fn states(dae: &Dae) -> Vec<&str> {
    dae.variables
        .iter()
        .filter(|v| v.kind == VarKind::State)
        .map(|v| v.name.as_str())
        .collect()
}

/// Why the flat text of `first` does not read back to the same DAE, if it does not.
fn round_trip_mismatch(model: &str, first: &Dae) -> Option<String> {
    let printed = first.to_modelica();
    let second = match flatten(&format!("{model} (flat)"), &printed, None) {
        Ok(dae) => dae,
        Err(e) => return Some(format!("the flat text is rejected:\n{e}")),
    };
    if first.equations.len() != second.equations.len() {
        return Some(format!(
            "{} equations read back as {}",
            first.equations.len(),
            second.equations.len()
        ));
    }
    if variables(first) != variables(&second) {
        return Some(first_difference(&variables(first), &variables(&second)));
    }
    if states(first) != states(&second) {
        return Some(format!(
            "states {:?} read back as {:?}",
            states(first),
            states(&second)
        ));
    }
    let reprinted = second.to_modelica();
    if printed != reprinted {
        let lines = |s: &str| s.lines().map(str::to_string).collect::<Vec<_>>();
        return Some(first_difference(&lines(&printed), &lines(&reprinted)));
    }
    None
}

fn first_difference(before: &[String], after: &[String]) -> String {
    let k = before.iter().zip(after).take_while(|(a, b)| a == b).count();
    format!(
        "first difference:\n  flattened: {}\n  read back: {}",
        before.get(k).map_or("(end)", String::as_str),
        after.get(k).map_or("(end)", String::as_str)
    )
}

fn examples() -> Vec<Model> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("examples/")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "mo"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| Model {
            name: format!("examples/{}", path.file_name().expect("a file").display()),
            text: std::fs::read_to_string(&path).expect("example readable"),
            class: None,
        })
        .collect()
}

fn conformance_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance")
}

fn manifest_tests(dir: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("MANIFEST.json")).expect("MANIFEST.json");
    let manifest: serde_json::Value = serde_json::from_str(&text).expect("a valid manifest");
    manifest["tests"].as_array().expect("`tests` list").clone()
}

/// The OpenModelica flattening tests and the compliance suite, as `tests/conformance.rs`
/// reads them.
fn conformance_models(root: &Path) -> Vec<Model> {
    let omc = root.join("omc-flattening");
    let mut models: Vec<Model> = manifest_tests(&omc)
        .iter()
        .map(|test| {
            let path = test["path"].as_str().expect("path");
            Model {
                name: format!("omc-flattening/{path}"),
                text: std::fs::read_to_string(omc.join(path)).expect("readable"),
                class: None,
            }
        })
        .collect();
    let compliance = root.join("compliance");
    models.extend(manifest_tests(&compliance).iter().map(|test| {
        let path = test["path"].as_str().expect("path");
        let raw = std::fs::read_to_string(compliance.join(path)).expect("readable");
        Model {
            name: format!("compliance/{path}"),
            text: compliance_text::prepare(&raw).0,
            class: Some(test["model"].as_str().expect("model").to_string()),
        }
    }));
    models
}

/// (models that flattened, mismatches as `name: why`)
fn check_all(models: &[Model]) -> (usize, Vec<String>) {
    let mut flattened = 0;
    let mut mismatches = Vec::new();
    for m in models {
        // Rejected and panicking models are the conformance test's business.
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            flatten(&m.name, &m.text, m.class.as_deref())
        }));
        let Ok(Ok(first)) = result else { continue };
        flattened += 1;
        let outcome =
            panic::catch_unwind(AssertUnwindSafe(|| round_trip_mismatch(&m.name, &first)))
                .unwrap_or_else(|_| Some("reading the flat text back panicked".to_string()));
        if let Some(why) = outcome {
            mismatches.push(format!("{}: {why}", m.name));
        }
    }
    (flattened, mismatches)
}

/// Runs `f` on a thread with the CLI's room for deep recursion.
fn with_big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("the round-trip runner itself must not panic")
}

/// Integer and Boolean values (bindings, starts, equations, a condition), strings with escape
/// sequences and a line break, attributes, weak reads, derivatives and names needing quotes.
const EVERY_PRINTED_FORM: &str = r#"
model 'Every form'
  parameter Integer n = 3 "say \"hi\" \\ once
and again";
  parameter Boolean b = n > 2;
  parameter Integer m = if b then -n else max(n, 4);
  Boolean c = true and b;
  Integer k(start = 2, fixed = true) = 2*n - abs(m) "k";
  parameter Real 'q.r'(min = 0, nominal = 2, unit = "m/s") = 1;
  Real x(start = 1, fixed = true);
  weak Real w;
  Real 'end';
equation
  der(x) = if b then -x else x;
  w = 2*last(x);
  'end' = w;
  assert(x < 10, "big \"x\"", AssertionLevel.warning);
end 'Every form';
"#;

#[test]
fn every_printed_form_reads_back_to_the_same_dae() {
    let first = flatten("every_form.mo", EVERY_PRINTED_FORM, None).expect("flattens");
    let printed = first.to_modelica();
    // Hand-written expectations of the forms the flattener's own types require.
    for line in [
        "  parameter Integer n = 3 \"say \\\"hi\\\" \\\\ once\nand again\";",
        "  parameter Integer m = if b then -n else max(n, 4);",
        "  Integer k(start = 2, fixed = true) \"k\";",
        "  k = 2 * n - abs(m);",
        "model 'Every form'",
        "  assert(x < 10.0, \"big \\\"x\\\"\", AssertionLevel.warning);",
    ] {
        assert!(printed.contains(line), "no `{line}` in\n{printed}");
    }
    assert_eq!(round_trip_mismatch("every_form.mo", &first), None);
}

#[test]
fn every_example_reads_back_to_the_same_dae() {
    let models = examples();
    let count = models.len();
    let (flattened, mismatches) = with_big_stack(move || check_all(&models));
    println!("examples: {flattened} of {count} flattened and checked");
    assert_eq!(flattened, count, "every example flattens");
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn every_conformance_model_that_flattens_reads_back_to_the_same_dae() {
    let root = conformance_root();
    if !root.is_dir() {
        println!(
            "flatten_roundtrip: {} not found, skipping (the corpora are not part of the repository)",
            root.display()
        );
        return;
    }
    let models = conformance_models(&root);
    let count = models.len();
    let (flattened, mismatches) = with_big_stack(move || check_all(&models));
    println!("conformance: {flattened} of {count} models flattened and checked");
    assert!(
        mismatches.is_empty(),
        "{} of {flattened} do not read back:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
