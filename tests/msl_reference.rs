//! The Modelica Standard Library's examples against its maintainers' reference results
//! (`../shared/msl-reference`, Dymola with DASSL), judged as they judge them: every compared
//! signal inside the csv-compare tube around the reference (half-width in time
//! 0.002·max(t_end − t_start, |t_start|), half-height 0.002·max(y_max − y_min, |y_min|,
//! 0.001)). Each example runs as a user runs it: `simulate --lib ../shared/msl --model M
//! --method bdf`, the experiment annotation giving start, stop, interval and tolerance.
//!
//! `cargo test --release --test msl_reference -- --nocapture` prints the table per package
//! (CONFORMANCE.md holds the current one). `MSL_METHOD=implicit-euler` (any `--method`) runs
//! them with that method at their output interval instead and only prints the tables: which
//! examples a fixed-step method matches (`tests/data/msl_emitted.txt` lists those the emitted
//! crates are tested on).

mod cli_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cli_support::{csv_columns, outside_tube, temp_path};

/// The method the examples run with: `bdf` unless `MSL_METHOD` names another.
fn method() -> String {
    std::env::var("MSL_METHOD").unwrap_or_else(|_| "bdf".to_string())
}

/// How one example fared.
enum Verdict {
    Matches,
    /// The signal with the most points outside the tube, and that count.
    Differs {
        signal: String,
        outside: usize,
        points: usize,
    },
    /// The first line of the first diagnostic.
    Fails(String),
}

fn shared() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    dir.join("msl-reference").is_dir().then_some(dir)
}

fn judge(shared: &Path, model: &str) -> Verdict {
    let dir = shared.join("msl-reference").join(model);
    let signals: Vec<String> = std::fs::read_to_string(dir.join("comparisonSignals.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        // A signal the library's maintainers commented out is not compared.
        .filter(|s| !s.is_empty() && *s != "time" && !s.starts_with("//"))
        .map(str::to_string)
        .collect();
    let experiment: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("experiment.json")).unwrap_or_default(),
    )
    .unwrap_or_default();
    let span = (
        experiment["StartTime"].as_f64().unwrap_or(0.0),
        experiment["StopTime"].as_f64().unwrap_or(1.0),
    );
    let out = temp_path(&format!("{model}.csv"));
    let lib = shared.join("msl");
    let vars = signals.join(",");
    let Some((err, code)) = mocca_within(
        model,
        &[
            "simulate",
            "--lib",
            lib.to_str().expect("utf-8"),
            "--model",
            model,
            "--method",
            &method(),
            "--vars",
            &vars,
            "--out",
            out.to_str().expect("utf-8"),
        ],
    ) else {
        return Verdict::Fails(format!("did not finish within {} s", TIME_LIMIT.as_secs()));
    };
    // A panic exits with 101: only a result (0) or a diagnostic (1) will do.
    assert!(code == 0 || code == 1, "{model}: exit {code}: {err}");
    if code != 0 {
        let first = err
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ")
            .to_string();
        return Verdict::Fails(first);
    }
    let ours = csv_columns(&std::fs::read_to_string(&out).unwrap_or_default());
    let _ = std::fs::remove_file(&out);
    // The reference's header quotes its names.
    let reference_text = std::fs::read_to_string(dir.join("reference.csv")).unwrap_or_default();
    let reference = csv_columns(&reference_text.replace('"', ""));
    let mut worst: Option<(String, usize)> = None;
    for signal in &signals {
        let (Some(ys), Some(ry)) = (ours.get(signal), reference.get(signal)) else {
            return Verdict::Fails(format!("no column `{signal}`"));
        };
        let outside = outside_tube(&ours["time"], ys, (&reference["time"], ry), span);
        if outside > 0 && worst.as_ref().is_none_or(|(_, n)| outside > *n) {
            worst = Some((signal.clone(), outside));
        }
    }
    match worst {
        None => Verdict::Matches,
        Some((signal, outside)) => Verdict::Differs {
            signal,
            outside,
            points: ours["time"].len(),
        },
    }
}

/// How long one example may run: one that has not finished by then counts as failing (the
/// whole suite is to run in CI in under two minutes).
const TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs mocca with its output in files (a pipe could fill and stall it): stderr and the
/// exit code, or `None` when it was still running after [`TIME_LIMIT`] and was stopped. A
/// process that dies by a signal fails the test.
fn mocca_within(name: &str, args: &[&str]) -> Option<(String, i32)> {
    let stderr_path = temp_path(&format!("{name}.stderr"));
    let stderr = std::fs::File::create(&stderr_path).expect("a file for stderr");
    // The files an example writes (`writeRealMatrix`, `print` to a file) land beside its
    // stderr, not in the repository.
    let written = stderr_path.parent().expect("a temporary directory");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mocca"))
        .args(args)
        .current_dir(written)
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("mocca runs");
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("mocca's status") {
            break status;
        }
        if started.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let _ = std::fs::remove_file(&stderr_path);
    let Some(code) = status.code() else {
        panic!("mocca {args:?} died by a signal ({status}): {err}");
    };
    Some((err, code))
}

/// Examples that once stopped early or went wrong, each fixed where it failed: events at
/// coincident instants (the thyristor rectifiers, the chopper), Newton stalling on a loop of
/// transistors after an input's jump (the NOR gates, solved along the Newton homotopy), and a
/// magnetic circuit whose loop mixes fluxes of 1e-6 with reluctances of 1e5 (its fluxes were
/// taken as converged at 0; now solved to each unknown's scale, the loop torn), and the same
/// circuit driven by a filtered position whose state divides from its start value of 0, and a
/// Schmitt trigger whose loop must keep its branch through rejected steps and in its rows.
const MUST_MATCH: [&str; 12] = [
    "Modelica.Electrical.Analog.Examples.HeatingNPN_NORGate",
    "Modelica.Electrical.Analog.Examples.HeatingPNP_NORGate",
    "Modelica.Electrical.PowerConverters.Examples.ACDC.Rectifier1Pulse.Thyristor1Pulse_R",
    "Modelica.Electrical.PowerConverters.Examples.ACDC.RectifierBridge2Pulse.ThyristorBridge2Pulse_RLV",
    "Modelica.Electrical.PowerConverters.Examples.ACDC.RectifierCenterTap2Pulse.ThyristorCenterTap2Pulse_RL",
    "Modelica.Electrical.PowerConverters.Examples.ACDC.RectifierCenterTap2Pulse.ThyristorCenterTap2Pulse_RLV",
    "Modelica.Electrical.PowerConverters.Examples.DCDC.ChopperStepDown.ChopperStepDown_RL",
    "Modelica.Electrical.PowerConverters.Examples.ACDC.RectifierBridge2mPulse.ThyristorBridge2mPulse_RL",
    "Modelica.Electrical.Machines.Examples.SynchronousMachines.SMR_DOL",
    "Modelica.Magnetic.FluxTubes.Examples.SolenoidActuator.ComparisonPullInStroke",
    "Modelica.Magnetic.FluxTubes.Examples.SolenoidActuator.ComparisonQuasiStatic",
    "Modelica.Electrical.Analog.Examples.OpAmps.SignalGenerator",
];

#[test]
fn the_standard_librarys_examples_against_their_reference_results() {
    let Some(shared) = shared() else {
        eprintln!("skipped: ../shared/msl-reference is absent");
        return;
    };
    let mut models: Vec<String> = std::fs::read_dir(shared.join("msl-reference"))
        .expect("msl-reference")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    models.sort();
    let mut by_package: BTreeMap<String, Vec<(String, Verdict)>> = BTreeMap::new();
    for model in models {
        let package = model.split('.').take(3).collect::<Vec<_>>().join(".");
        let verdict = judge(&shared, &model);
        by_package
            .entry(package)
            .or_default()
            .push((model, verdict));
    }
    let mut matches = 0;
    let mut total = 0;
    println!("| package | examples | match | differ | fail |\n| --- | ---: | ---: | ---: | ---: |");
    for (package, results) in &by_package {
        let count = |f: fn(&Verdict) -> bool| results.iter().filter(|(_, v)| f(v)).count();
        let m = count(|v| matches!(v, Verdict::Matches));
        let d = count(|v| matches!(v, Verdict::Differs { .. }));
        println!(
            "| {package} | {} | {m} | {d} | {} |",
            results.len(),
            results.len() - m - d
        );
        matches += m;
        total += results.len();
    }
    println!("\n| example | result |\n| --- | --- |");
    for (model, verdict) in by_package.values().flatten() {
        let text = match verdict {
            Verdict::Matches => "matches".to_string(),
            Verdict::Differs {
                signal,
                outside,
                points,
            } => {
                format!("differs: `{signal}`, {outside} of {points} points outside the tube")
            }
            Verdict::Fails(first) => format!("fails: {}", first.replace('|', "\\\\|")),
        };
        println!("| {model} | {text} |");
    }
    println!("\n{matches} of {total} match");
    if method() != "bdf" {
        return;
    }
    let failing: Vec<&String> = (by_package.values().flatten())
        .filter(|(model, verdict)| {
            MUST_MATCH.contains(&model.as_str()) && !matches!(verdict, Verdict::Matches)
        })
        .map(|(model, _)| model)
        .collect();
    assert!(failing.is_empty(), "no longer match: {failing:?}");
    // The floor as it stands: a regression below it fails.
    assert!(matches >= 129, "{matches} of {total} match");
}
