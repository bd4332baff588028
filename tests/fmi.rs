//! FMI 2.0 co-simulation export (`mocca emit --fmu`) checked with FMPy, an independent FMI
//! master: every example's FMU passes FMPy's validation, and FMPy's simulation of it equals
//! `mocca simulate` with the same method and step; parameters set through FMI change the run
//! as `-p` does; misuse at the C boundary answers `fmi2Error`. Skipped with a message where
//! Python or FMPy is absent (CI installs FMPy).

mod cli_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use cli_support::{csv_columns, mocca, mocca_json};
use serde_json::Value;

/// One FMU built at a time: the builds share a target directory (and the machine).
static BUILDS: Mutex<()> = Mutex::new(());

fn fmpy_available() -> bool {
    let found = Command::new("python3")
        .args(["-c", "import fmpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("skipped: FMPy is not installed (pip install fmpy)");
    }
    found
}

fn work_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fmu")
}

/// Emits `model` (with `args`) as `name.fmu`; the exit code and stderr when emit refuses.
fn emit_fmu(name: &str, model: &str, args: &[&str]) -> Result<PathBuf, (i32, String)> {
    std::fs::create_dir_all(work_dir()).expect("a work directory");
    let fmu = work_dir().join(format!("{name}.fmu"));
    let fmu_text = fmu.to_str().expect("utf-8").to_string();
    let mut all = vec!["emit", model, "--fmu", &fmu_text];
    all.extend(args);
    let _one = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
    let out = Command::new(env!("CARGO_BIN_EXE_mocca"))
        .args(&all)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("CARGO_TARGET_DIR", work_dir().join("target"))
        .output()
        .expect("mocca runs");
    match out.status.code() {
        Some(0) => Ok(fmu),
        code => Err((
            code.unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )),
    }
}

/// Runs a Python program with FMPy; its stdout read as JSON.
fn python(program: &str, args: &[&str]) -> Value {
    let out = Command::new("python3")
        .arg("-c")
        .arg(program)
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON from the program")
}

/// Validates the FMU and simulates it as a co-simulation: `{"problems": [..], "columns":
/// {name: [..]}}`. Arguments: the FMU, stop, step, outputs (comma list), start values (JSON).
const VALIDATE_AND_SIMULATE: &str = r#"
import json, sys
from fmpy import simulate_fmu
from fmpy.validation import validate_fmu
fmu, stop, step, outputs, starts = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4].split(','), json.loads(sys.argv[5])
problems = validate_fmu(fmu)
result = simulate_fmu(fmu, fmi_type='CoSimulation', stop_time=stop, step_size=step,
                      output=outputs, start_values=starts)
print(json.dumps({"problems": [str(p) for p in problems],
                  "columns": {name: [float(x) for x in result[name]] for name in result.dtype.names}}))
"#;

fn fmpy_run(fmu: &Path, stop: f64, step: f64, outputs: &[String], starts: &str) -> Value {
    python(
        VALIDATE_AND_SIMULATE,
        &[
            fmu.to_str().expect("utf-8"),
            &stop.to_string(),
            &step.to_string(),
            &outputs.join(","),
            starts,
        ],
    )
}

/// `mocca simulate` of `model` with implicit Euler at `step`, the `outputs` recorded.
fn mocca_run(
    model: &str,
    extra: &[&str],
    stop: f64,
    step: f64,
    outputs: &[String],
) -> std::collections::BTreeMap<String, Vec<f64>> {
    let (stop_text, step_text, vars) = (stop.to_string(), step.to_string(), outputs.join(","));
    let mut args = vec![
        "simulate",
        model,
        "--method",
        "implicit-euler",
        "--stop",
        &stop_text,
        "--step",
        &step_text,
        "--vars",
        &vars,
    ];
    args.extend(extra);
    let name = std::path::Path::new(model)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("model");
    let (csv, err, code) = cli_support::simulate_csv(&format!("fmi_{name}"), &args);
    assert_eq!(code, 0, "{model}: {err}");
    csv_columns(&csv)
}

fn assert_same(what: &str, fmpy: &Value, mocca: &std::collections::BTreeMap<String, Vec<f64>>) {
    for (name, ours) in mocca {
        let theirs: Vec<f64> = fmpy["columns"][name]
            .as_array()
            .unwrap_or_else(|| panic!("{what}: FMPy has no `{name}`"))
            .iter()
            .map(|x| x.as_f64().expect("a number"))
            .collect();
        assert_eq!(theirs.len(), ours.len(), "{what}: rows of `{name}`");
        for (k, (a, b)) in theirs.iter().zip(ours).enumerate() {
            assert!(
                (a - b).abs() <= 1e-10 * (1.0 + b.abs()),
                "{what}: `{name}` row {k}: FMPy {a}, mocca {b}"
            );
        }
    }
}

#[test]
fn every_examples_fmu_validates_and_runs_in_fmpy_as_mocca_simulates_it() {
    if !fmpy_available() {
        return;
    }
    let (stop, step) = (0.5, 0.005);
    let mut tried = 0;
    let mut examples: Vec<PathBuf> = std::fs::read_dir("examples")
        .expect("the examples")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "mo"))
        .collect();
    examples.sort();
    for path in examples {
        let model = path.to_str().expect("utf-8");
        let name = path.file_stem().and_then(|s| s.to_str()).expect("a name");
        let grid = [
            "--method",
            "implicit-euler",
            "--stop",
            "0.5",
            "--step",
            "0.005",
        ];
        let fmu = match emit_fmu(name, model, &grid) {
            Ok(fmu) => fmu,
            // The emitted runtime has no events yet: emit refuses such models by name.
            Err((code, err)) => {
                assert!(code == 1 && err.contains("events"), "{model}: {err}");
                continue;
            }
        };
        let check = mocca_json(&["check", model, "--format", "json"]);
        let states: Vec<String> = check["state_names"]
            .as_array()
            .expect("state names")
            .iter()
            .map(|s| s.as_str().expect("a name").to_string())
            .collect();
        let fmpy = fmpy_run(&fmu, stop, step, &states, "{}");
        assert_eq!(fmpy["problems"], serde_json::json!([]), "{model}");
        assert_same(model, &fmpy, &mocca_run(model, &[], stop, step, &states));
        tried += 1;
    }
    assert!(tried >= 8, "{tried} examples exported");
}

/// The RC ladder's FMU, implicit Euler at 0.01 up to 1.
fn rc_ladder_fmu(name: &str) -> PathBuf {
    let grid = [
        "--method",
        "implicit-euler",
        "--stop",
        "1",
        "--step",
        "0.01",
    ];
    emit_fmu(name, "examples/rc_ladder.mo", &grid).expect("emits")
}

#[test]
fn a_parameter_set_through_fmi_changes_the_run_as_p_does() {
    if !fmpy_available() {
        return;
    }
    let fmu = rc_ladder_fmu("rc_ladder_parameters");
    let outputs = ["C1.v".to_string(), "C2.v".to_string()];
    let fmpy = fmpy_run(&fmu, 1.0, 0.01, &outputs, r#"{"R2.R": 5.0, "C2.C": 3.0}"#);
    let ours = mocca_run(
        "examples/rc_ladder.mo",
        &["-p", "R2.R=5", "-p", "C2.C=3"],
        1.0,
        0.01,
        &outputs,
    );
    assert_same("R2.R = 5, C2.C = 3", &fmpy, &ours);
    let default = mocca_run("examples/rc_ladder.mo", &[], 1.0, 0.01, &outputs);
    assert!((default["C2.v"][100] - ours["C2.v"][100]).abs() > 1e-3);
}

/// Misuse through FMPy's low-level API: each call must fail with `fmi2Error` (FMPy raises)
/// and log a message, and the process must live on.
const MISUSE: &str = r#"
import json, sys
from ctypes import byref
from fmpy import read_model_description, extract, calloc, free
from fmpy.fmi2 import (FMU2Slave, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE,
                       fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE)
from fmpy.logging import addLoggerProxy
fmu = sys.argv[1]
md = read_model_description(fmu)
messages = []
def logger(env, name, status, category, message):
    messages.append(message.decode())
callbacks = fmi2CallbackFunctions()
callbacks.logger = fmi2CallbackLoggerTYPE(logger)
callbacks.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
callbacks.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
addLoggerProxy(byref(callbacks))
slave = FMU2Slave(guid=md.guid, unzipDirectory=extract(fmu),
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName='misuse')
slave.instantiate(callbacks=callbacks, loggingOn=True)
failed = {}
def attempt(name, call):
    try:
        call()
        failed[name] = False
    except Exception:
        failed[name] = True
attempt("doStep before initialization", lambda: slave.doStep(0.0, 0.01))
attempt("unknown value reference", lambda: slave.getReal([999999]))
attempt("NaN parameter", lambda: slave.setReal([1], [float('nan')]))
slave.setupExperiment(startTime=0.0)
slave.enterInitializationMode()
slave.exitInitializationMode()
attempt("negative step", lambda: slave.doStep(0.0, -1.0))
attempt("step from the wrong time", lambda: slave.doStep(5.0, 0.01))
attempt("integer get", lambda: slave.getInteger([0]))
slave.doStep(0.0, 0.01)
slave.terminate()
slave.freeInstance()
print(json.dumps({"failed": failed, "messages": messages}))
"#;

#[test]
fn misuse_at_the_fmi_boundary_answers_an_error_with_a_message() {
    if !fmpy_available() {
        return;
    }
    let fmu = rc_ladder_fmu("rc_ladder_misuse");
    let report = python(MISUSE, &[fmu.to_str().expect("utf-8")]);
    for (what, failed) in report["failed"].as_object().expect("attempts") {
        assert_eq!(failed, true, "{what} was accepted");
    }
    let messages: Vec<&str> = report["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m.as_str().expect("text"))
        .collect();
    for expected in [
        "only after initialization",
        "unknown value reference 999999",
        "cannot be set to NaN",
        "not a positive number",
        "but the FMU is at",
        "fmi2GetInteger is not supported",
    ] {
        assert!(
            messages.iter().any(|m| m.contains(expected)),
            "no message with `{expected}` in {messages:?}"
        );
    }
}

#[test]
fn emit_fmu_refuses_a_model_with_events_and_an_unwritable_path() {
    std::fs::create_dir_all(work_dir()).expect("a work directory");
    let (_, err, code) = mocca(&[
        "emit",
        "examples/bouncing_ball.mo",
        "--fmu",
        work_dir().join("ball.fmu").to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("events"), "{err}");
    let (_, err, code) = mocca(&[
        "emit",
        "examples/rc_ladder.mo",
        "--fmu",
        "/nonexistent-folder/rc.fmu",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cannot write"), "{err}");
}

/// One `fmi2DoStep` of 0.05 on an FMU emitted with step 0.01: C1.v after it.
const ONE_LONG_STEP: &str = r#"
import json, sys
from fmpy import read_model_description, extract
from fmpy.fmi2 import FMU2Slave
md = read_model_description(sys.argv[1])
slave = FMU2Slave(guid=md.guid, unzipDirectory=extract(sys.argv[1]),
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName='long')
slave.instantiate()
slave.setupExperiment(startTime=0.0)
slave.enterInitializationMode()
slave.exitInitializationMode()
slave.doStep(0.0, 0.05)
vr = [v.valueReference for v in md.modelVariables if v.name == 'C1.v']
print(json.dumps({"C1.v": slave.getReal(vr)[0]}))
slave.terminate()
slave.freeInstance()
"#;

#[test]
fn a_communication_step_of_several_steps_takes_them_all() {
    if !fmpy_available() {
        return;
    }
    let fmu = rc_ladder_fmu("rc_ladder_long_step");
    let report = python(ONE_LONG_STEP, &[fmu.to_str().expect("utf-8")]);
    let ours = mocca_run(
        "examples/rc_ladder.mo",
        &[],
        1.0,
        0.01,
        &["C1.v".to_string()],
    );
    let after_five = ours["C1.v"][5];
    let theirs = report["C1.v"].as_f64().expect("a value");
    assert!(
        (theirs - after_five).abs() <= 1e-12,
        "{theirs} vs {after_five}"
    );
}

/// Validates the FMU and simulates it as Model Exchange with FMPy's explicit Euler:
/// `{"problems": [..], "columns": {..}}`.
/// Arguments: the FMU, stop, step, outputs (comma list).
const MODEL_EXCHANGE: &str = r#"
import json, sys
from fmpy import simulate_fmu
from fmpy.validation import validate_fmu
fmu, stop, step, outputs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4].split(',')
problems = validate_fmu(fmu)
result = simulate_fmu(fmu, fmi_type='ModelExchange', solver='Euler', stop_time=stop,
                      step_size=step, output_interval=step, output=outputs)
print(json.dumps({"problems": [str(p) for p in problems],
                  "columns": {name: [float(x) for x in result[name]] for name in result.dtype.names}}))
"#;

#[test]
fn model_exchange_integrated_by_fmpy_euler_is_mocca_euler() {
    if !fmpy_available() {
        return;
    }
    let (stop, step) = (0.5, 0.005);
    // Models without time events: FMPy records an event as an extra row.
    for name in ["rc_ladder", "two_masses", "heat_exchanger", "power_shaft"] {
        let model = format!("examples/{name}.mo");
        let grid = [
            "--method",
            "euler",
            "--stop",
            "0.5",
            "--step",
            "0.005",
            "--fmi-type",
            "me",
        ];
        let fmu = emit_fmu(&format!("{name}_me"), &model, &grid).expect("emits");
        let check = mocca_json(&["check", &model, "--format", "json"]);
        let states: Vec<String> = check["state_names"]
            .as_array()
            .expect("state names")
            .iter()
            .map(|s| s.as_str().expect("a name").to_string())
            .collect();
        let fmpy = python(
            MODEL_EXCHANGE,
            &[
                fmu.to_str().expect("utf-8"),
                &stop.to_string(),
                &step.to_string(),
                &states.join(","),
            ],
        );
        assert_eq!(fmpy["problems"], serde_json::json!([]), "{model}");
        let (stop_text, step_text, vars) = (stop.to_string(), step.to_string(), states.join(","));
        let args = [
            "simulate", &model, "--method", "euler", "--stop", &stop_text, "--step", &step_text,
            "--vars", &vars,
        ];
        let (csv, err, code) = cli_support::simulate_csv(&format!("fmi_me_{name}"), &args);
        assert_eq!(code, 0, "{model}: {err}");
        assert_same(
            &format!("{model} (Model Exchange)"),
            &fmpy,
            &csv_columns(&csv),
        );
    }
}

#[test]
fn a_weak_partitioned_fmu_runs_in_fmpy_as_simulate_partition_weak() {
    if !fmpy_available() {
        return;
    }
    let model = "examples/rc_ladder_weak.mo";
    let grid = [
        "--partition",
        "weak",
        "--method",
        "implicit-euler",
        "--stop",
        "1",
        "--step",
        "0.01",
    ];
    let fmu = emit_fmu("rc_ladder_weak_partitioned", model, &grid).expect("emits");
    let outputs = ["C1.v".to_string(), "C2.v".to_string()];
    let fmpy = fmpy_run(&fmu, 1.0, 0.01, &outputs, "{}");
    assert_eq!(fmpy["problems"], serde_json::json!([]));
    let ours = mocca_run(model, &["--partition", "weak"], 1.0, 0.01, &outputs);
    assert_same("rc_ladder_weak, --partition weak", &fmpy, &ours);
}
