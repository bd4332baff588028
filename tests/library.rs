//! Libraries: `--lib DIR` and `MODELICAPATH` find a model's top-level package (and the
//! packages its `uses` annotation names) so that `--model` needs no FILE; the Modelica
//! Standard Library 4.0.0 (`../shared/msl`) loads, and each of its examples with reference
//! results ends with a result or a diagnostic.

mod cli_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use cli_support::{mocca, temp_path};

/// A library folder: `Circuits 1.0/` (a versioned package directory whose `uses` names
/// `Units`), `Units.mo` (a one-file package) and `Unused/`, which nothing uses.
fn library() -> PathBuf {
    let root = temp_path("libraries");
    let circuits = root.join("Circuits 1.0");
    std::fs::create_dir_all(circuits.join("Examples")).expect("folders");
    std::fs::write(
        circuits.join("package.mo"),
        "package Circuits annotation(uses(Units(version = \"1.0\"))); end Circuits;",
    )
    .expect("written");
    std::fs::write(
        circuits.join("Examples/package.mo"),
        "within Circuits; package Examples end Examples;",
    )
    .expect("written");
    std::fs::write(
        circuits.join("Examples/RC.mo"),
        "within Circuits.Examples;
         model RC
           parameter Units.Time tau = 2;
           Real v(start = 1, fixed = true);
         equation
           tau*der(v) = -v;
         end RC;",
    )
    .expect("written");
    std::fs::write(
        root.join("Units.mo"),
        "package Units type Time = Real(unit = \"s\"); end Units;",
    )
    .expect("written");
    std::fs::create_dir_all(root.join("Unused")).expect("folder");
    std::fs::write(
        root.join("Unused/package.mo"),
        "package Unused this is not Modelica",
    )
    .expect("written");
    root
}

fn mocca_with_path(modelicapath: &Path, args: &[&str]) -> (String, String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_mocca"))
        .args(args)
        .env(
            "MODELICAPATH",
            format!("/nonexistent:{}", modelicapath.display()),
        )
        .output()
        .expect("mocca runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().expect("an exit code"),
    )
}

#[test]
fn a_library_model_needs_no_file_with_lib_or_modelicapath() {
    let root = library();
    let lib = root.to_str().expect("utf-8");
    let model = "Circuits.Examples.RC";
    let (out, err, code) = mocca(&["check", "--lib", lib, "--model", model]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("model RC: balanced"), "{out}");
    // The run decays as exp(-t/τ) with τ from the library's parameter.
    let csv = temp_path("library_rc.csv");
    let out = csv.to_str().expect("utf-8");
    let (_, err, code) = mocca_with_path(
        &root,
        &[
            "simulate", "--model", model, "--method", "bdf", "--tol", "1e-10", "--stop", "2",
            "--out", out,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&csv).expect("CSV written");
    let v = cli_support::csv_columns(&text)["v"]
        .last()
        .copied()
        .expect("rows");
    assert!((v - (-1.0f64).exp()).abs() < 1e-7, "{v}");
}

#[test]
fn no_input_is_bad_usage_and_a_missing_library_is_named() {
    let (_, err, code) = mocca(&["check"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--model NAME"), "{err}");
    let (_, err, code) = mocca(&["parse"]);
    assert_eq!(code, 2, "{err}");
    let root = library();
    let lib = root.to_str().expect("utf-8");
    let (_, err, code) = mocca(&["check", "--lib", lib, "--model", "Nowhere.M"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("no library has the package `Nowhere`") && err.contains(lib),
        "{err}"
    );
}

fn msl() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/msl");
    dir.join("Modelica/package.mo").is_file().then_some(dir)
}

#[test]
fn the_standard_library_loads_and_its_chua_circuit_is_balanced() {
    let Some(msl) = msl() else {
        eprintln!("skipped: ../shared/msl is absent");
        return;
    };
    let lib = msl.to_str().expect("utf-8");
    let model = "Modelica.Electrical.Analog.Examples.ChuaCircuit";
    let (out, err, code) = mocca(&["check", "--lib", lib, "--model", model]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("model ChuaCircuit: balanced"), "{out}");
    assert!(out.contains("states                    3"), "{out}");
}

#[test]
fn every_example_with_reference_results_ends_with_a_result_or_a_diagnostic() {
    let Some(msl) = msl() else {
        eprintln!("skipped: ../shared/msl is absent");
        return;
    };
    let lib = msl.to_str().expect("utf-8");
    let reference = msl.join("../msl-reference");
    let mut examples: Vec<String> = std::fs::read_dir(&reference)
        .expect("msl-reference")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    examples.sort();
    assert!(examples.len() >= 70, "{examples:?}");
    for model in &examples {
        // `mocca` fails the test if the process dies by a signal (a panic aborts).
        let (_, err, code) = mocca(&["check", "--lib", lib, "--model", model]);
        assert!(
            code == 0 || (code == 1 && err.contains("error")),
            "{model}: {code} {err}"
        );
        assert!(!err.contains("panicked"), "{model}: {err}");
    }
}
