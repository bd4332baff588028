//! FMI 2.0 co-simulation export (`mocca emit --fmu`) checked with FMPy, an independent FMI
//! master: every example's FMU passes FMPy's validation, and FMPy's simulation of it equals
//! `mocca simulate` with the same method and step; parameters set through FMI change the run
//! as `-p` does; misuse at the C boundary answers `fmi2Error`. Skipped with a message where
//! Python or FMPy is absent (CI installs FMPy).

mod cli_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use cli_support::{csv_columns, mocca, mocca_json, outside_tube};
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
    emit_to(&work_dir().join(format!("{name}.fmu")), model, args)
}

/// `mocca emit model --fmu target args…`, one build at a time: `target`, or the exit code
/// and stderr when emit refuses.
fn emit_to(target: &Path, model: &str, args: &[&str]) -> Result<PathBuf, (i32, String)> {
    std::fs::create_dir_all(work_dir()).expect("a work directory");
    let target_text = target.to_str().expect("utf-8").to_string();
    let mut all = vec!["emit", model, "--fmu", &target_text];
    all.extend(args);
    let _one = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
    let out = Command::new(env!("CARGO_BIN_EXE_mocca"))
        .args(&all)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("CARGO_TARGET_DIR", work_dir().join("target"))
        .output()
        .expect("mocca runs");
    match out.status.code() {
        Some(0) => Ok(target.to_path_buf()),
        code => Err((
            code.unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )),
    }
}

/// Runs a Python program with FMPy; the last line of its stdout read as JSON.
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
    // FMPy's default logger prints the FMU's messages on stdout before the JSON.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).expect("JSON from the program")
}

/// Validates the FMU and simulates it as a co-simulation: `{"problems": [..], "columns":
/// {name: [..]}}`. Arguments: the FMU, stop, step, outputs (comma list; empty: the FMU's
/// outputs, FMPy's default), start values (JSON).
const VALIDATE_AND_SIMULATE: &str = r#"
import json, sys
from fmpy import simulate_fmu
from fmpy.validation import validate_fmu
fmu, stop, step, outputs, starts = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4].split(',') if sys.argv[4] else None, json.loads(sys.argv[5])
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

/// FMPy's columns equal mocca's at FMPy's rows (its communication points: mocca's rows just
/// before an event, and those of an event inside a step, are not among them).
fn assert_same(what: &str, fmpy: &Value, mocca: &std::collections::BTreeMap<String, Vec<f64>>) {
    let column = |name: &str| -> Vec<f64> {
        (fmpy["columns"][name].as_array())
            .unwrap_or_else(|| panic!("{what}: FMPy has no `{name}`"))
            .iter()
            .map(|x| x.as_f64().expect("a number"))
            .collect()
    };
    let times = &mocca["time"];
    // Per FMPy row, mocca's last row at its time.
    let rows: Vec<usize> = (column("time").iter())
        .map(|&t| {
            (times
                .iter()
                .rposition(|&s| (s - t).abs() <= 1e-12 * (1.0 + t.abs())))
            .unwrap_or_else(|| panic!("{what}: mocca has no row at t = {t}"))
        })
        .collect();
    for (name, ours) in mocca {
        let theirs = column(name);
        assert_eq!(theirs.len(), rows.len(), "{what}: rows of `{name}`");
        for (k, (a, &row)) in theirs.iter().zip(&rows).enumerate() {
            let b = ours[row];
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
        let fmu = emit_fmu(name, model, &grid).unwrap_or_else(|(_, err)| panic!("{model}: {err}"));
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
    assert!(tried >= 13, "{tried} examples exported");
}

/// Implicit Euler at 0.01 up to 1.
const IMPLICIT_EULER_TO_1: [&str; 6] = [
    "--method",
    "implicit-euler",
    "--stop",
    "1",
    "--step",
    "0.01",
];

/// The RC ladder's FMU, implicit Euler at 0.01 up to 1.
fn rc_ladder_fmu(name: &str) -> PathBuf {
    emit_fmu(name, "examples/rc_ladder.mo", &IMPLICIT_EULER_TO_1).expect("emits")
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
fn emit_fmu_refuses_an_unwritable_path() {
    std::fs::create_dir_all(work_dir()).expect("a work directory");
    let (_, err, code) = mocca(&[
        "emit",
        "examples/rc_ladder.mo",
        "--fmu",
        "/nonexistent-folder/rc.fmu",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cannot write"), "{err}");
}

/// The start of a Python program: the FMU `sys.argv[1]` as `slave` (its description `md`,
/// `vr` its value references by name) initialised at time 0. What follows it ends with
/// `slave.terminate()` and `slave.freeInstance()`.
const STARTED_SLAVE: &str = r#"
import json, sys
from fmpy import read_model_description, extract
from fmpy.fmi2 import FMU2Slave
md = read_model_description(sys.argv[1])
vr = {v.name: v.valueReference for v in md.modelVariables}
slave = FMU2Slave(guid=md.guid, unzipDirectory=extract(sys.argv[1]),
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName='test')
slave.instantiate()
slave.setupExperiment(startTime=0.0)
slave.enterInitializationMode()
slave.exitInitializationMode()
"#;

/// After [`STARTED_SLAVE`]: one `fmi2DoStep` of 0.05 on an FMU emitted with step 0.01, C1.v
/// after it.
const ONE_LONG_STEP: &str = r#"
slave.doStep(0.0, 0.05)
print(json.dumps({"C1.v": slave.getReal([vr['C1.v']])[0]}))
slave.terminate()
slave.freeInstance()
"#;

#[test]
fn a_communication_step_of_several_steps_takes_them_all() {
    if !fmpy_available() {
        return;
    }
    let fmu = rc_ladder_fmu("rc_ladder_long_step");
    let program = format!("{STARTED_SLAVE}{ONE_LONG_STEP}");
    let report = python(&program, &[fmu.to_str().expect("utf-8")]);
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

/// Emits `model` with `--fmu DIR` (and `args`, `--partition weak` among them) into `name/`:
/// the directory, or the exit code and stderr when emit refuses.
fn emit_system(name: &str, model: &str, args: &[&str]) -> Result<PathBuf, (i32, String)> {
    let all = [args, &["--force"]].concat();
    emit_to(&work_dir().join(name), model, &all)
}

/// Validates the SSP's FMUs and runs it with FMPy's SSP master: `{"problems": {fmu: [..]},
/// "columns": {"component.connector": [..]}}`. Arguments: the SSP, stop, step, the FMUs
/// (comma list), parameter values to change (JSON, by `component.parameter`).
///
/// FMPy's `simulate_ssp` starts every connection at 0.0 and steps Jacobi: every component
/// steps from the connectors' values, then the connections pass the outputs on. Its input
/// connectors are started here at the FMUs' input start values (the consistent initial
/// values mocca writes), as a master that initialises inputs from their start values does;
/// its row at time t holds the values after the step from t.
const RUN_SSP: &str = r#"
import json, sys
import fmpy.ssp.simulation as sim
from fmpy.ssp.ssd import read_ssv
from fmpy.validation import validate_fmu
ssp, stop, step, fmus, changed = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4].split(','), json.loads(sys.argv[5])
problems = {f: [str(p) for p in validate_fmu(f)] for f in fmus}
instantiate = sim.instantiate_fmu
def instantiate_with_input_starts(component, *args, **kwargs):
    instantiate(component, *args, **kwargs)
    for connector in component.connectors:
        if connector.kind == 'input':
            connector.value = sim.get_value(component, connector.name)
sim.instantiate_fmu = instantiate_with_input_starts
parameters = read_ssv(ssp, 'resources/parameters.ssv')
names = [p.name for p in parameters.parameters]
for p in parameters.parameters:
    p.value = changed.get(p.name, p.value)
result = sim.simulate_ssp(ssp, stop_time=stop, step_size=step, parameter_set=parameters)
print(json.dumps({"problems": problems, "parameters": names,
                  "columns": {n: [float(x) for x in result[n]] for n in result.dtype.names}}))
"#;

fn fmpy_ssp_run(dir: &Path, ssp: &str, (stop, step): (f64, f64), changed: &str) -> Value {
    let fmus: Vec<String> = ["subsystem1.fmu", "subsystem2.fmu"]
        .iter()
        .map(|f| dir.join(f).to_str().expect("utf-8").to_string())
        .collect();
    python(
        RUN_SSP,
        &[
            dir.join(ssp).to_str().expect("utf-8"),
            &stop.to_string(),
            &step.to_string(),
            &fmus.join(","),
            changed,
        ],
    )
}

/// FMPy's SSP run equals `mocca simulate --partition weak --exchange jacobi` (`extra` given
/// to it too): every connector of every component, FMPy's row at t against mocca's at
/// t + step. Returns the number of connectors compared.
fn assert_ssp_is_jacobi(
    model: &str,
    fmpy: &Value,
    (stop, step): (f64, f64),
    extra: &[&str],
) -> usize {
    let columns = fmpy["columns"].as_object().expect("columns");
    let mut vars: Vec<String> = columns
        .keys()
        .filter(|k| *k != "time")
        .map(|k| {
            k.split_once('.')
                .expect("component.connector")
                .1
                .to_string()
        })
        .collect();
    vars.sort();
    vars.dedup();
    let mut args = vec!["--partition", "weak", "--exchange", "jacobi"];
    args.extend(extra);
    let ours = mocca_run(model, &args, stop, step, &vars);
    for (name, theirs) in columns.iter().filter(|(k, _)| *k != "time") {
        let var = name.split_once('.').expect("component.connector").1;
        let ours = &ours[var];
        let theirs = theirs.as_array().expect("values");
        // FMPy adds up its steps: it may take one past `stop` when the sum falls short.
        assert!(theirs.len() + 1 >= ours.len(), "{model}: rows of `{name}`");
        for (k, x) in theirs.iter().take(ours.len() - 1).enumerate() {
            let (a, b) = (x.as_f64().expect("a number"), ours[k + 1]);
            assert!(
                (a - b).abs() <= 1e-10 * (1.0 + b.abs()),
                "{model}: `{name}` after step {k}: FMPy {a}, mocca {b}"
            );
        }
    }
    columns.len() - 1
}

#[test]
fn the_weak_rc_ladder_and_power_shaft_as_ssps_run_in_fmpy_as_simulate_partition_weak_jacobi() {
    if !fmpy_available() {
        return;
    }
    for (name, model, grid) in [
        (
            "rc_ladder_weak_ssp",
            "examples/rc_ladder_weak.mo",
            (1.0, 0.01),
        ),
        ("power_shaft_ssp", "examples/power_shaft.mo", (0.5, 0.001)),
    ] {
        let (stop, step) = (grid.0.to_string(), grid.1.to_string());
        let args = ["--partition", "weak", "--method", "implicit-euler"];
        let args = [&args[..], &["--stop", &stop, "--step", &step]].concat();
        let dir = emit_system(name, model, &args).expect("emits");
        let ssp = std::fs::read_dir(&dir)
            .expect("the directory")
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .into_string()
                    .expect("utf-8")
            })
            .find(|f| f.ends_with(".ssp"))
            .expect("an SSP");
        let fmpy = fmpy_ssp_run(&dir, &ssp, grid, "{}");
        for problems in fmpy["problems"].as_object().expect("per FMU").values() {
            assert_eq!(problems, &serde_json::json!([]), "{model}");
        }
        let connectors = assert_ssp_is_jacobi(model, &fmpy, grid, &[]);
        assert!(connectors >= 4, "{model}: {connectors} connectors");
    }
}

/// Events in subsystem FMUs: the weak relay model (`tests/data/relay_weak.mo`) as an SSP. The
/// first subsystem's FMU holds the relay (its two relations as event indicators) and the
/// sampled counter, and handles them inside `fmi2DoStep`: the first capacitor's voltage,
/// `C1.v = R2·R2.i + C2.v` with the `C2.v` the master held over the step, swings between the
/// relay's thresholds 0.6 and 0.8 (without its events it would settle at 0.95). FMPy's run
/// stays within 2e-3 of `simulate --partition weak --exchange jacobi` (not to rounding: where
/// `simulate` locates an event it steps both subsystems to it and publishes the weak values
/// there, where a master steps the other FMU over its whole step).
#[test]
fn the_weak_relays_subsystem_fmus_handle_their_events_in_fmpy() {
    if !fmpy_available() {
        return;
    }
    let model = "tests/data/relay_weak.mo";
    let grid = (1.0, 0.01);
    let args = ["--partition", "weak", "--method", "implicit-euler"];
    let args = [&args[..], &["--stop", "1", "--step", "0.01"]].concat();
    let dir = emit_system("relay_weak_ssp", model, &args).expect("emits");
    let fmpy = fmpy_ssp_run(&dir, "relayweak.ssp", grid, "{}");
    for problems in fmpy["problems"].as_object().expect("per FMU").values() {
        assert_eq!(problems, &serde_json::json!([]));
    }
    let column = |name: &str| -> Vec<f64> {
        (fmpy["columns"][name].as_array().expect(name).iter())
            .map(|x| x.as_f64().expect("a number"))
            .collect()
    };
    let (r2_i, c2_v) = (column("subsystem1.R2.i"), column("subsystem2.C2.v"));
    let held = std::iter::once(0.0).chain(c2_v.iter().copied());
    let c1_v: Vec<f64> = r2_i.iter().zip(held).map(|(i, v)| i + v).collect();
    let first = c1_v.iter().position(|&v| v > 0.75).expect("C1 charges");
    let swing = &c1_v[first..];
    assert!(swing.iter().all(|v| (0.58..0.82).contains(v)), "{swing:?}");
    let crossings = swing
        .windows(2)
        .filter(|w| (w[0] < 0.7) != (w[1] < 0.7))
        .count();
    assert!(crossings >= 4, "{crossings} swings: {swing:?}");
    let ours = mocca_run(
        model,
        &["--partition", "weak", "--exchange", "jacobi"],
        1.0,
        0.01,
        &["C2.v".into()],
    );
    // mocca's rows by time, the last of each (after an event); FMPy's row at t is the state
    // after the step from t.
    let at: std::collections::BTreeMap<u64, f64> = (ours["time"].iter().zip(&ours["C2.v"]))
        .map(|(t, v)| ((t * 1e6).round() as u64, *v))
        .collect();
    let times = column("time");
    for (t, v) in times.iter().zip(&c2_v).take(99) {
        let want = at[&(((t + 0.01) * 1e6).round() as u64)];
        assert!(
            (v - want).abs() < 2e-3,
            "C2.v after the step from {t}: FMPy {v}, mocca {want}"
        );
    }
}

/// SPEC §10's weak RC ladder at R2 = 0.1, C2 = 1, exchanged Jacobi: its step map's spectral
/// radius reaches 1 at Δt = 0.2212 (the closed form `tests/simulate_jacobi.rs` derives).
const JACOBI_LIMIT: f64 = 0.2212;

#[test]
fn the_rc_ladders_ssp_with_r2_set_in_its_parameters_is_stable_below_the_jacobi_limit_only() {
    if !fmpy_available() {
        return;
    }
    let model = "examples/rc_ladder_weak.mo";
    let changed = r#"{"subsystem1.R2.R": 0.1}"#;
    for factor in [0.8, 1.25] {
        let step = factor * JACOBI_LIMIT;
        let grid = (300.0 * step, step);
        // The FMUs step at most their emitted step inside a communication step: one step each.
        let step_text = step.to_string();
        let args = [
            "--partition",
            "weak",
            "--method",
            "implicit-euler",
            "--step",
            &step_text,
        ];
        let dir = emit_system(&format!("rc_ladder_weak_{factor}"), model, &args).expect("emits");
        let fmpy = fmpy_ssp_run(&dir, "rcladderweak.ssp", grid, changed);
        let names = fmpy["parameters"].as_array().expect("the parameter set");
        assert!(
            names.contains(&serde_json::json!("subsystem1.R2.R")),
            "{names:?}"
        );
        let largest = fmpy["columns"]["subsystem2.C2.v"]
            .as_array()
            .expect("C2.v")
            .iter()
            .map(|x| x.as_f64().expect("a number").abs())
            .fold(0.0, f64::max);
        if factor < 1.0 {
            assert!(
                largest < 2.0,
                "{factor}× the limit: |C2.v| reaches {largest}"
            );
            // The parameter set through the SSP acts as `-p` does.
            let short = (100.0 * step, step);
            let fmpy = fmpy_ssp_run(&dir, "rcladderweak.ssp", short, changed);
            assert_ssp_is_jacobi(model, &fmpy, short, &["-p", "R2.R=0.1"]);
        } else {
            assert!(
                largest > 1e3,
                "{factor}× the limit: |C2.v| only reaches {largest}"
            );
        }
    }
}

#[test]
fn emit_fmu_dir_refuses_what_it_cannot_split() {
    let dir = work_dir().join("refused");
    let dir = dir.to_str().expect("utf-8");
    let (_, err, code) = mocca(&["emit", "examples/rc_ladder_weak.mo", "--fmu", dir]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--partition weak"), "{err}");
    let (_, err, code) = mocca(&[
        "emit",
        "examples/rc_ladder_weak.mo",
        "--fmu",
        dir,
        "--partition",
        "auto",
        "--method",
        "mixed-euler",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("every stage"), "{err}");
    let (_, err, code) = mocca(&[
        "emit",
        "examples/rc_ladder.mo",
        "--fmu",
        dir,
        "--partition",
        "weak",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("one subsystem"), "{err}");
    // A `when` clause of the first subsystem that reads the second's capacitor joins them.
    let relay = include_str!("data/relay_weak.mo").replace(
        "when sample(0, 0.25) then",
        "when C2.v > 0.1 then\n    reinit(C1.v, 0);\n  end when;\n  when sample(0, 0.25) then",
    );
    let joined = cli_support::model_file("relay_joined", &relay);
    let joined = joined.to_str().expect("utf-8");
    let (_, err, code) = mocca(&["emit", joined, "--fmu", dir, "--partition", "weak"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("the events of one subsystem read `C2.v`")
            && err.contains("this `when` clause reads it"),
        "{err}"
    );
    assert!(!Path::new(dir).exists(), "nothing written");
}

/// After [`STARTED_SLAVE`]: steps the FMU 50 times by 0.01, sets `R2.R` to 5 (a tunable
/// parameter), steps 50 more; C1.v and C2.v after each step, each parameter's variability,
/// and whether setting the parameter named by the second argument (if any) during the run
/// failed.
const TUNE_DURING_RUN: &str = r#"
fixed = sys.argv[2]
variability = {v.name: v.variability for v in md.modelVariables if v.causality == 'parameter'}
rows = []
for k in range(100):
    if k == 50:
        slave.setReal([vr['R2.R']], [5.0])
    slave.doStep(0.01 * k, 0.01)
    rows.append(slave.getReal([vr['C1.v'], vr['C2.v']]))
refused = False
if fixed:
    try:
        slave.setReal([vr[fixed]], [3.0])
    except Exception:
        refused = True
slave.terminate()
slave.freeInstance()
print(json.dumps({"rows": rows, "variability": variability, "refused": refused}))
"#;

/// Implicit Euler on SPEC §10's RC ladder (E = 1, R1 = 0.1, C1 = C2 = 1, R3 = 1) from rest:
/// `(I − hA) x⁺ = x + h b`, R2 = 1 for 50 steps of 0.01 and 5 for 50 more, solved by
/// Cramer's rule.
fn rc_ladder_tuned_by_hand() -> Vec<[f64; 2]> {
    let (r1, r3, h) = (0.1, 1.0, 0.01);
    let mut x = [0.0f64; 2];
    let mut rows = Vec::new();
    for k in 0..100 {
        let r2 = if k < 50 { 1.0 } else { 5.0 };
        let a = [
            [-(1.0 / r1 + 1.0 / r2), 1.0 / r2],
            [1.0 / r2, -(1.0 / r2 + 1.0 / r3)],
        ];
        let m = [
            [1.0 - h * a[0][0], -h * a[0][1]],
            [-h * a[1][0], 1.0 - h * a[1][1]],
        ];
        let rhs = [x[0] + h / r1, x[1]];
        let det = m[0][0] * m[1][1] - m[0][1] * m[1][0];
        x = [
            (rhs[0] * m[1][1] - m[0][1] * rhs[1]) / det,
            (m[0][0] * rhs[1] - rhs[0] * m[1][0]) / det,
        ];
        rows.push(x);
    }
    rows
}

#[test]
fn a_tunable_parameter_changes_the_run_from_where_it_is_set() {
    if !fmpy_available() {
        return;
    }
    let fmu = rc_ladder_fmu("rc_ladder_tuned");
    let program = format!("{STARTED_SLAVE}{TUNE_DURING_RUN}");
    let report = python(&program, &[fmu.to_str().expect("utf-8"), ""]);
    assert_eq!(report["variability"]["R2.R"], "tunable");
    let rows = report["rows"].as_array().expect("rows");
    for (k, (row, exact)) in rows.iter().zip(rc_ladder_tuned_by_hand()).enumerate() {
        for (i, x) in row.as_array().expect("C1.v, C2.v").iter().enumerate() {
            let x = x.as_f64().expect("a number");
            assert!(
                (x - exact[i]).abs() <= 1e-12,
                "step {k}, state {i}: FMU {x}, by hand {}",
                exact[i]
            );
        }
    }
}

/// The FMU of the model `text` (written to `name.mo`), emitted with `args`.
fn emit_inline_fmu(name: &str, text: &str, args: &[&str]) -> PathBuf {
    std::fs::create_dir_all(work_dir()).expect("a work directory");
    let model = work_dir().join(format!("{name}.mo"));
    std::fs::write(&model, text).expect("writes the model");
    emit_fmu(name, model.to_str().expect("utf-8"), args).expect("emits")
}

/// A parameter that sizes an array: the translation used its value.
const SIZED: &str = "
model Sized
  parameter Integer n = 2;
  parameter Real k = 2;
  parameter Real scale = 1;
  parameter Real gain[n] = fill(k, n);
  Real x[n](each start = 1, each fixed = true);
equation
  for i in 1:n loop
    der(x[i]) = -scale*gain[i]*x[i];
  end for;
end Sized;";

#[test]
fn a_parameter_the_translation_used_stays_fixed_during_a_run() {
    if !fmpy_available() {
        return;
    }
    let fmu = emit_inline_fmu("sized", SIZED, &IMPLICIT_EULER_TO_1);
    let program = format!("{STARTED_SLAVE}{TUNE_DURING_RUN}")
        .replace("vr['R2.R']", "vr['scale']")
        .replace("vr['C1.v'], vr['C2.v']", "vr['x[1]'], vr['x[2]']");
    let report = python(&program, &[fmu.to_str().expect("utf-8"), "k"]);
    assert_eq!(report["variability"]["scale"], "tunable");
    // `k` fills `gain` through `fill(k, n)`, evaluated to size it.
    assert_eq!(
        report["variability"]["k"], "fixed",
        "{}",
        report["variability"]
    );
    assert_eq!(report["refused"], true);
    // x' = −scale·k·x: scale 1 for 50 steps of 0.01, then 5.
    let rows = report["rows"].as_array().expect("rows");
    let mut x = 1.0f64;
    for (k, row) in rows.iter().enumerate() {
        let rate = if k < 50 { 2.0 } else { 10.0 };
        x /= 1.0 + 0.01 * rate;
        let got = row[0].as_f64().expect("a number");
        assert!((got - x).abs() <= 1e-12, "step {k}: FMU {got}, by hand {x}");
    }
}

/// A model whose variables and parameters carry units.
const WITH_UNITS: &str = "
model WithUnits
  parameter Real R(unit = \"Ohm\") = 2;
  parameter Real C(unit = \"F\") = 0.5;
  Real v(unit = \"V\", start = 1, fixed = true);
  Real i(unit = \"A\");
equation
  C*der(v) = -i;
  v = R*i;
end WithUnits;";

const UNITS: &str = r#"
import json, sys
from fmpy import read_model_description
from fmpy.validation import validate_fmu
md = read_model_description(sys.argv[1])
print(json.dumps({"problems": [str(p) for p in validate_fmu(sys.argv[1])],
                  "definitions": sorted(u.name for u in md.unitDefinitions),
                  "units": {v.name: v.unit for v in md.modelVariables}}))
"#;

#[test]
fn units_reach_the_model_description() {
    if !fmpy_available() {
        return;
    }
    let fmu = emit_inline_fmu("with_units", WITH_UNITS, &[]);
    let report = python(UNITS, &[fmu.to_str().expect("utf-8")]);
    assert_eq!(report["problems"], serde_json::json!([]));
    assert_eq!(
        report["definitions"],
        serde_json::json!(["A", "F", "Ohm", "V"])
    );
    for (name, unit) in [("R", "Ohm"), ("C", "F"), ("v", "V"), ("i", "A")] {
        assert_eq!(report["units"][name], unit, "{name}");
    }
}

/// Top-level outputs, one of them an alias of the state.
const WITH_OUTPUTS: &str = "
model WithOutputs
  output Real y \"twice x\";
  output Real z;
  Real x(start = 1, fixed = true);
equation
  der(x) = -x;
  y = 2*x;
  z = x;
end WithOutputs;";

#[test]
fn the_models_outputs_are_the_fmus_and_fmpy_records_them_by_default() {
    if !fmpy_available() {
        return;
    }
    let fmu = emit_inline_fmu("with_outputs", WITH_OUTPUTS, &IMPLICIT_EULER_TO_1);
    let fmpy = fmpy_run(&fmu, 1.0, 0.01, &[], "{}");
    let columns = fmpy["columns"].as_object().expect("columns");
    let names: Vec<&str> = columns.keys().map(String::as_str).collect();
    assert_eq!(names, ["time", "y", "z"], "FMPy records the outputs");
    // Implicit Euler: x after k steps is 1.01⁻ᵏ.
    for (k, (y, z)) in columns["y"]
        .as_array()
        .expect("y")
        .iter()
        .zip(columns["z"].as_array().expect("z"))
        .enumerate()
    {
        let x = 1.01f64.powi(-(k as i32));
        assert!(
            (y.as_f64().expect("y") - 2.0 * x).abs() < 1e-12,
            "y at step {k}"
        );
        assert!((z.as_f64().expect("z") - x).abs() < 1e-12, "z at step {k}");
    }
}

/// Simulates a Model Exchange FMU with FMPy's CVode: `{"problems": [..], "indicators": n,
/// "last": {name: value}, "columns": {name: [..]}}` (the time among the columns). Arguments:
/// the FMU, stop, outputs, output interval, relative tolerance.
const MODEL_EXCHANGE_CVODE: &str = r#"
import json, sys
from fmpy import simulate_fmu, read_model_description
from fmpy.validation import validate_fmu
fmu, stop, outputs = sys.argv[1], float(sys.argv[2]), sys.argv[3].split(',')
interval, tolerance = float(sys.argv[4]), float(sys.argv[5])
problems = validate_fmu(fmu)
result = simulate_fmu(fmu, fmi_type='ModelExchange', solver='CVode', stop_time=stop,
                      output_interval=interval, relative_tolerance=tolerance, output=outputs)
print(json.dumps({"problems": [str(p) for p in problems],
                  "indicators": read_model_description(fmu).numberOfEventIndicators,
                  "last": {name: float(result[name][-1]) for name in outputs},
                  "columns": {n: [float(x) for x in result[n]] for n in ['time'] + outputs}}))
"#;

/// [`MODEL_EXCHANGE_CVODE`] of `fmu` to `stop`, its last values only needed: every 0.01,
/// relative tolerance 1e-10.
fn cvode_to(fmu: &Path, stop: &str, outputs: &str) -> Value {
    python(
        MODEL_EXCHANGE_CVODE,
        &[fmu.to_str().expect("utf-8"), stop, outputs, "0.01", "1e-10"],
    )
}

/// A Model Exchange FMU declares an event indicator per relation (two per stepwise
/// function: the ends of the range its value holds on) and settles the switches in
/// `fmi2NewDiscreteStates`: FMPy's CVode, locating the indicators' sign changes, ends where
/// the closed forms say. A switch in `if` (x falls at −1 to 0.5, then at −0.2), a sliding mass
/// that sticks (at t = v0·m/(μmg − F), having moved v0·t/2), and `floor(2x)` of x = 3(1 − e^−t)
/// integrated (it steps at t_k = −ln(1 − k/6)).
#[test]
fn a_model_exchange_fmu_has_the_event_indicators_of_its_relations() {
    if !fmpy_available() {
        return;
    }
    let switch = "model SwitchInIf
      Real x(start = 1, fixed = true);
    equation
      der(x) = if x > 0.5 then -1 else -0.2;
    end SwitchInIf;";
    let floor = "model FloorOfState
      Real x(start = 0, fixed = true);
      Real y(start = 0, fixed = true);
    equation
      der(x) = 3 - x;
      der(y) = floor(2*x);
    end FloorOfState;";
    let t_stick = 2.0 / (0.3 * 9.81 - 1.0);
    let t_k = |k: f64| -(1.0 - k / 6.0_f64).ln();
    let y_end = (t_k(2.0) - t_k(1.0)) + 2.0 * (t_k(3.0) - t_k(2.0)) + 3.0 * (1.0 - t_k(3.0));
    let cases = [
        ("me_switch", switch, 1, "x", 0.5 - 0.2 * 1.5),
        ("me_slide", include_str!("data/slide.mo"), 1, "x", t_stick),
        ("me_floor", floor, 2, "y", y_end),
    ];
    for (name, text, indicators, output, want) in cases {
        let file = cli_support::model_file(name, text);
        let model = file.to_str().expect("utf-8");
        let grid = ["--step", "0.01", "--stop", "2", "--fmi-type", "me"];
        let fmu = emit_fmu(name, model, &grid).expect("emits");
        let stop = if name == "me_floor" { "1" } else { "2" };
        let fmpy = cvode_to(&fmu, stop, output);
        assert_eq!(fmpy["problems"], serde_json::json!([]), "{name}");
        assert_eq!(fmpy["indicators"], indicators, "{name}");
        let got = fmpy["last"][output].as_f64().expect("a number");
        assert!(
            (got - want).abs() < 1e-6,
            "{name}: {output} = {got}, closed form {want}"
        );
    }
}

/// The bouncing ball's height and speed at `t` in closed form: dropped from 1 m, each impact
/// returning `e` of the speed.
fn bouncing_ball_at(t: f64) -> (f64, f64) {
    let (g, e): (f64, f64) = (9.81, 0.8);
    let first = (2.0 / g).sqrt();
    if t < first {
        return (1.0 - g * t * t / 2.0, -g * t);
    }
    let (mut tau, mut speed) = (t - first, e * g * first);
    loop {
        let flight = 2.0 * speed / g;
        if tau < flight {
            return (speed * tau - g * tau * tau / 2.0, speed - g * tau);
        }
        tau -= flight;
        speed *= e;
    }
}

/// The bouncing ball (`when h < 0 then reinit(v, -e*pre(v))`) as a Model Exchange FMU: one
/// event indicator, FMPy validates it, and its CVode run ends at t = 3 (after six bounces)
/// within 1e-6 of the closed form, as `mocca simulate --method bdf` does.
#[test]
fn the_bouncing_balls_model_exchange_fmu_bounces_as_the_closed_form_says() {
    if !fmpy_available() {
        return;
    }
    let model = "examples/bouncing_ball.mo";
    let grid = ["--step", "0.01", "--stop", "3", "--fmi-type", "me"];
    let fmu = emit_fmu("me_ball", model, &grid).expect("emits");
    let fmpy = cvode_to(&fmu, "3", "h,v");
    assert_eq!(fmpy["problems"], serde_json::json!([]));
    assert_eq!(fmpy["indicators"], 1);
    let (h, v) = bouncing_ball_at(3.0);
    let bdf = cli_support::simulate_csv(
        "fmi_ball_bdf",
        &[
            "simulate", model, "--method", "bdf", "--tol", "1e-10", "--stop", "3", "--step", "0.01",
        ],
    );
    assert_eq!(bdf.2, 0, "{}", bdf.1);
    let columns = csv_columns(&bdf.0);
    let last = |name: &str| *columns[name].last().expect("rows");
    for (name, want) in [("h", h), ("v", v)] {
        let got = fmpy["last"][name].as_f64().expect("a number");
        assert!(
            (got - want).abs() < 1e-6,
            "FMPy {name} = {got}, closed form {want}"
        );
        let ours = last(name);
        assert!(
            (ours - want).abs() < 1e-6,
            "BDF {name} = {ours}, closed form {want}"
        );
    }
}

/// An MSL example with events as a Model Exchange FMU: `CoupledClutches` (three clutches that
/// stick and slide, their modes through `pre`: 27 event indicators), validated by FMPy and
/// integrated by its CVode, which locates the switches through the indicators and settles
/// them through `fmi2NewDiscreteStates`: every compared signal stays inside the csv-compare
/// tube of the library's reference result (Dymola's), as `mocca simulate`'s run does.
#[test]
fn an_msl_model_exchange_fmu_with_events_stays_in_its_references_tube() {
    let Some(msl) = cli_support::msl_or_skip() else {
        return;
    };
    if !fmpy_available() {
        return;
    }
    let example = "Modelica.Mechanics.Rotational.Examples.CoupledClutches";
    let reference = msl
        .join("../msl-reference")
        .join(example)
        .join("reference.csv");
    let Ok(reference) = std::fs::read_to_string(&reference) else {
        eprintln!("skipped: ../shared/msl-reference is absent");
        return;
    };
    let reference = csv_columns(&reference.replace('"', ""));
    let lib = format!("--lib={}", msl.to_str().expect("utf-8"));
    let fmu = emit_fmu(
        "me_clutches",
        &lib,
        &["--model", example, "--fmi-type", "me"],
    )
    .unwrap_or_else(|(_, err)| panic!("{err}"));
    let signals = [
        "J1.w",
        "clutch1.w_rel",
        "clutch2.w_rel",
        "clutch3.w_rel",
        "J1.phi",
    ];
    let outputs = signals.join(",");
    let fmpy = python(
        MODEL_EXCHANGE_CVODE,
        &[
            fmu.to_str().expect("utf-8"),
            "1.5",
            &outputs,
            "0.001",
            "1e-8",
        ],
    );
    assert_eq!(fmpy["problems"], serde_json::json!([]));
    assert_eq!(fmpy["indicators"], 27);
    let column = |name: &str| -> Vec<f64> {
        (fmpy["columns"][name].as_array().expect("a column").iter())
            .map(|x| x.as_f64().expect("a number"))
            .collect()
    };
    let times = column("time");
    assert!(times.len() > 1500, "{} rows", times.len());
    for name in signals {
        let outside = outside_tube(
            &times,
            &column(name),
            (&reference["time"], &reference[name]),
            (0.0, 1.5),
        );
        assert_eq!(outside, 0, "`{name}`: {outside} points outside the tube");
    }
}
