//! Libraries: `--lib DIR` and `MODELICAPATH` find a model's top-level package (and the
//! packages its `uses` annotation names) so that `--model` needs no FILE; the Modelica
//! Standard Library 4.0.0 (`../shared/msl`) loads (its examples against their reference
//! results: `tests/msl_reference.rs`); a model's `experiment` annotation gives `simulate` its
//! defaults; replaceable components redeclared.

mod cli_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use cli_support::{csv_columns, mocca, msl, temp_path};

/// A library folder: `Circuits 1.0/` (a versioned package directory whose `uses` names
/// `Units`), `Units.mo` (a one-file package) and `Unused/`, which nothing uses.
fn library() -> PathBuf {
    let root = temp_path("libraries");
    let circuits = root.join("Circuits 1.0");
    std::fs::create_dir_all(circuits.join("Examples")).expect("folders");
    std::fs::write(
        circuits.join("package.mo"),
        "package Circuits annotation(version = \"1.0\", uses(Units(version = \"1.0\"))); end Circuits;",
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

/// Chua's circuit as the standard library's example writes it, integrated by classical
/// Runge–Kutta: (L.i, C1.v, C2.v) at `stop`.
fn chua_by_rk4(stop: f64) -> [f64; 3] {
    let (c1, c2, l, g, ga, gb, ve, r0) =
        (10.0, 100.0, 18.0, 0.565, -0.757576, -0.409091, 1.0, 12.5e-3);
    let nonlinear = |v: f64| {
        if v < -ve {
            gb * (v + ve) - ga * ve
        } else if v > ve {
            gb * (v - ve) + ga * ve
        } else {
            ga * v
        }
    };
    let f = |y: [f64; 3]| {
        let [i, v1, v2] = y;
        let through_g = g * (v2 - v1);
        [
            (v2 - r0 * i) / l,
            (through_g - nonlinear(v1)) / c1,
            (-through_g - i) / c2,
        ]
    };
    let h = 1e-3;
    let mut y = [0.0, 4.0, 0.0];
    let add =
        |y: [f64; 3], k: [f64; 3], s: f64| [y[0] + s * k[0], y[1] + s * k[1], y[2] + s * k[2]];
    for _ in 0..(stop / h).round() as usize {
        let k1 = f(y);
        let k2 = f(add(y, k1, h / 2.0));
        let k3 = f(add(y, k2, h / 2.0));
        let k4 = f(add(y, k3, h));
        for j in 0..3 {
            y[j] += h / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]);
        }
    }
    y
}

#[test]
fn the_standard_librarys_chua_circuit_follows_its_equations() {
    let Some(msl) = msl() else {
        eprintln!("skipped: ../shared/msl is absent");
        return;
    };
    let lib = msl.to_str().expect("utf-8");
    let model = "Modelica.Electrical.Analog.Examples.ChuaCircuit";
    let csv = temp_path("chua.csv");
    let out = csv.to_str().expect("utf-8");
    let args = [
        "simulate",
        "--lib",
        lib,
        "--model",
        model,
        "--method",
        "bdf",
        "--tol",
        "1e-10",
        "--stop",
        "100",
        "--step",
        "1",
        "--vars",
        "L.i,C1.v,C2.v",
        "--out",
        out,
    ];
    let (_, err, code) = mocca(&args);
    assert_eq!(code, 0, "{err}");
    let columns = cli_support::csv_columns(&std::fs::read_to_string(&csv).expect("CSV"));
    let exact = chua_by_rk4(100.0);
    for (name, x) in ["L.i", "C1.v", "C2.v"].into_iter().zip(exact) {
        let got = *columns[name].last().expect("rows");
        assert!(
            (got - x).abs() < 1e-5 * (1.0 + x.abs()),
            "{name}: {got} against {x}"
        );
    }
}

#[test]
fn the_experiment_annotation_gives_the_run_its_defaults_and_options_override_them() {
    let file = cli_support::model_file(
        "experiment",
        "model Decay
           Real x(start = 1, fixed = true);
         equation
           der(x) = -x;
           annotation(
             Icon(graphics = {Line(points = {{0, 0}, {1, 1}})}),
             Documentation(info = \"<html>(</html>\"),
             experiment(StartTime = 0.5, StopTime = 2.5, Tolerance = 1e-9),
             __Vendor(run = function f(x = 1)));
         end Decay;",
    );
    // The annotations mocca does not read are skipped whole, a construct it does not build
    // (a function partial application) included.
    let path = file.to_str().expect("utf-8");
    let (_, err, code) = mocca(&["parse", path]);
    assert_eq!(code, 0, "{err}");
    // StopTime without Interval: 500 intervals, as OpenModelica takes them.
    let (csv, err, code) =
        cli_support::simulate_csv("experiment", &["simulate", path, "--method", "bdf"]);
    assert_eq!(code, 0, "{err}");
    let columns = cli_support::csv_columns(&csv);
    let times = &columns["time"];
    assert_eq!(
        (times[0], *times.last().expect("rows"), times.len()),
        (0.5, 2.5, 501)
    );
    let x = *columns["x"].last().expect("rows");
    assert!((x - (-2.0f64).exp()).abs() < 1e-7, "{x}");
    let value = cli_support::mocca_json(&[
        "simulate", path, "--stop", "1", "--step", "0.1", "--format", "json",
    ]);
    assert_eq!(value["stats"]["steps"], 5, "{value}");
    // A start past the experiment's stop, with no stop given, is bad usage.
    let (_, err, code) = mocca(&["simulate", path, "--start", "3"]);
    assert_eq!(code, 2, "{err}");
}

/// A replaceable source redeclared in an `extends` modification and in a component's.
const REDECLARED: &str = "package RD
  partial block Source
    output Real y;
    parameter Real offset = 0;
  end Source;
  block Const
    extends Source;
    parameter Real k = 1;
  equation
    y = offset + k;
  end Const;
  block Ramp
    extends Source;
    parameter Real rate = 1;
  equation
    y = offset + rate*time;
  end Ramp;
  model Holder
    parameter Real offset = 0;
    replaceable Const src(final offset = offset) constrainedby Source;
    Real x(start = 0, fixed = true);
  equation
    der(x) = src.y;
  end Holder;
  model UseRamp
    extends Holder(offset = 1, redeclare Ramp src(rate = 2));
  end UseRamp;
  model UseBoth
    Holder ramped(redeclare RD.Ramp src(rate = 4));
    Holder plain;
  end UseBoth;
end RD;
";

#[test]
fn a_redeclared_component_takes_its_new_type_and_keeps_the_declarations_modifiers() {
    let file = cli_support::model_file("redeclared", REDECLARED);
    let path = file.to_str().expect("utf-8");
    // x' = 1 + 2t: x(1) = 2 (the offset reaches the ramp through the original's modifier).
    let (csv, err, code) = cli_support::simulate_csv(
        "redeclared",
        &[
            "simulate",
            path,
            "--model",
            "RD.UseRamp",
            "--method",
            "bdf",
            "--tol",
            "1e-10",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let x = *cli_support::csv_columns(&csv)["x"].last().expect("rows");
    assert!((x - 2.0).abs() < 1e-8, "{x}");
    let (flat, err, code) = mocca(&["flatten", path, "--model", "RD.UseBoth"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        flat.contains("'ramped.src.y' = 'ramped.src.offset' + 'ramped.src.rate' * time"),
        "{flat}"
    );
    assert!(
        flat.contains("'plain.src.y' = 'plain.src.offset' + 'plain.src.k'"),
        "{flat}"
    );
}

/// The class modification of a constraining clause (`constrainedby Source(offset = 3)`)
/// applies to the declaration and to a redeclaration, under the declaration's own
/// modifiers (Modelica 7.3.2); it was dropped, and `offset` kept its default 0.
#[test]
fn a_constraining_clauses_modification_applies_under_the_declarations_own() {
    let text = REDECLARED
        .replacen("package RD", "package CB", 1)
        .replace("end RD;", "")
        .replace(
            "replaceable Const src(final offset = offset) constrainedby Source;",
            "replaceable Const src constrainedby Source(offset = 3);",
        )
        + "  model Own\n    replaceable Const src(offset = 5) constrainedby Source(offset = 3);\n  end Own;\nend CB;\n";
    let file = cli_support::model_file("constrained", &text);
    let path = file.to_str().expect("utf-8");
    for (model, offset, equation) in [
        ("CB.Holder", "3.0", "'src.y' = 'src.offset' + 'src.k'"),
        ("CB.Own", "5.0", "'src.y' = 'src.offset' + 'src.k'"),
        (
            "CB.UseRamp",
            "3.0",
            "'src.y' = 'src.offset' + 'src.rate' * time",
        ),
    ] {
        let (flat, err, code) = mocca(&["flatten", path, "--model", model]);
        assert_eq!(code, 0, "{model}: {err}");
        let binding = format!("parameter Real 'src.offset' = {offset};");
        assert!(flat.contains(&binding), "{model}: {flat}");
        assert!(flat.contains(equation), "{model}: {flat}");
    }
}

#[test]
fn an_initial_algorithm_sets_what_a_when_clause_assigns() {
    // The standard library's Trapezoid starts its period count this way.
    let file = cli_support::model_file(
        "initial_count",
        "model Count
           parameter Real period = 0.25;
           Integer count;
           Real x(start = 0, fixed = true);
         initial algorithm
           count := integer((time + 1)/period);
         equation
           der(x) = count;
           when integer((time + 1)/period) > pre(count) then
             count = pre(count) + 1;
           end when;
         end Count;",
    );
    let path = file.to_str().expect("utf-8");
    let (csv, err, code) = cli_support::simulate_csv(
        "initial_count",
        &[
            "simulate", path, "--method", "bdf", "--step", "0.05", "--vars", "count,x",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let columns = cli_support::csv_columns(&csv);
    // count is 4 at the start (not its start value 0), 8 at 1: ∫ count = 4·0.25 + 5·0.25 + 6·0.25 + 7·0.25.
    assert_eq!(columns["count"][0], 4.0, "{csv}");
    assert_eq!(*columns["count"].last().expect("rows"), 8.0, "{csv}");
    let x = *columns["x"].last().expect("rows");
    assert!((x - 5.5).abs() < 1e-6, "{x}");
}

#[test]
fn enumeration_values_are_their_literals_ordinals() {
    let file = cli_support::model_file(
        "enumerations",
        "package E
           type Init = enumeration(NoInit \"none\", SteadyState, InitialState);
           model Lag
             parameter Init initType = Init.InitialState;
             parameter StateSelect select = StateSelect.prefer;
             Real x(start = 2, stateSelect = select);
           initial equation
             if initType == Init.SteadyState then
               der(x) = 0;
             elseif initType == Init.InitialState then
               x = 3;
             end if;
           equation
             der(x) = 1 - x;
           end Lag;
           model Steady
             Lag lag(initType = Init.SteadyState);
           end Steady;
         end E;",
    );
    let path = file.to_str().expect("utf-8");
    let first = |model: &str| {
        let (csv, err, code) = cli_support::simulate_csv(
            model,
            &[
                "simulate", path, "--model", model, "--stop", "0", "--vars", "all",
            ],
        );
        assert_eq!(code, 0, "{err}");
        cli_support::csv_columns(&csv)
    };
    let lag = first("E.Lag");
    assert_eq!(lag["x"][0], 3.0);
    assert_eq!(lag["initType"][0], 3.0, "InitialState is the third literal");
    let steady = first("E.Steady");
    assert!(
        (steady["lag.x"][0] - 1.0).abs() < 1e-8,
        "der(x) = 0 at x = 1"
    );
}

#[test]
fn an_encapsulated_class_sees_its_imports_and_not_the_classes_around_it() {
    let file = cli_support::model_file(
        "encapsulated",
        "package P
           constant Real k = 2;
           package Interfaces
             partial model Decaying
               Real x(start = 1, fixed = true);
             end Decaying;
           end Interfaces;
           encapsulated model Inner
             import P.k;
             import P.Interfaces.Decaying;
             extends Decaying;
           equation
             der(x) = -k*x;
           end Inner;
           encapsulated model Outside
             Real x(start = 1, fixed = true);
           equation
             der(x) = -k*x;
           end Outside;
         end P;",
    );
    let path = file.to_str().expect("utf-8");
    let (out, err, code) = mocca(&["check", path, "--model", "P.Inner"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("balanced"), "{out}");
    let (_, err, code) = mocca(&["check", path, "--model", "P.Outside"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("unknown name `k`"), "{err}");
}

/// `examples/msl/rc_ladder_weak.mo` builds the weak RC ladder from the standard library's
/// Analog components: it runs (one system and split at its weak connection) exactly as
/// `examples/rc_ladder_weak.mo`, built from the bundled stdlib, and has its time scales.
#[test]
fn the_weak_rc_ladder_of_standard_library_components_runs_as_the_bundled_one() {
    let Some(msl) = msl() else {
        eprintln!("skipped: ../shared/msl is absent");
        return;
    };
    let lib = msl.to_str().expect("utf-8");
    let run = |file: &str, extra: &[&str]| {
        let out = temp_path(&format!("{}-{}.csv", file.replace('/', "_"), extra.len()));
        let mut args = vec![
            "simulate", file, "--lib", lib, "--stop", "5", "--step", "0.01",
        ];
        args.extend(extra);
        args.extend(["--out", out.to_str().expect("utf-8")]);
        let (_, err, code) = mocca(&args);
        assert_eq!(code, 0, "{file}: {err}");
        let text = std::fs::read_to_string(&out).expect("the csv");
        let _ = std::fs::remove_file(&out);
        text
    };
    for extra in [&[][..], &["--partition", "weak"][..]] {
        let ours = run("examples/msl/rc_ladder_weak.mo", extra);
        let bundled = run("examples/rc_ladder_weak.mo", extra);
        let (ours, bundled) = (csv_columns(&ours), csv_columns(&bundled));
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            bundled.keys().collect::<Vec<_>>()
        );
        for (name, values) in &ours {
            let gap = (values.iter().zip(&bundled[name]))
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            // The same arithmetic in another order: last-bit differences.
            assert!(gap < 1e-12, "{extra:?}: `{name}` differs by {gap}");
        }
    }
    let h_bounds = |file: &str| {
        let (out, err, code) = mocca(&["cycles", file, "--lib", lib, "--format", "json"]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("json");
        v["states"].clone()
    };
    assert_eq!(
        h_bounds("examples/msl/rc_ladder_weak.mo"),
        h_bounds("examples/rc_ladder_weak.mo")
    );
}

/// A package of three examples with an `experiment` annotation (one of them not balanced),
/// a partial one and one without the annotation, which `--all` leaves out.
fn suite() -> PathBuf {
    let root = temp_path("check_all");
    std::fs::create_dir_all(&root).expect("folder");
    std::fs::write(
        root.join("Suite.mo"),
        "package Suite
           model Decay
             Real x(start = 1, fixed = true);
           equation
             der(x) = -x;
             annotation(experiment(StopTime = 1));
           end Decay;
           model Short
             Real x;
             Real y;
           equation
             x = 1;
             annotation(experiment(StopTime = 1));
           end Short;
           partial model Base
             annotation(experiment(StopTime = 1));
           end Base;
           model NoRun
             Real x = 1;
           end NoRun;
           package Inner
             model Pair
               Real x(start = 1, fixed = true);
               Real v(start = 0, fixed = true);
             equation
               der(x) = v;
               der(v) = -x;
               annotation(experiment(StopTime = 2));
             end Pair;
           end Inner;
         end Suite;",
    )
    .expect("written");
    root
}

#[test]
fn check_all_checks_every_example_of_a_package_and_names_each_failure() {
    let root = suite();
    let lib = root.to_str().expect("utf-8");
    let args = [
        "check", "--lib", lib, "--model", "Suite", "--all", "--format", "json",
    ];
    let (out, err, code) = mocca(&args);
    assert_eq!(code, 1, "one example fails: {err}");
    let json: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let rows = json["models"].as_array().expect("models");
    let names: Vec<&str> = rows.iter().map(|r| r["model"].as_str().unwrap()).collect();
    assert_eq!(names, ["Suite.Decay", "Suite.Short", "Suite.Inner.Pair"]);
    assert_eq!(rows[0]["result"], "ok");
    assert_eq!(rows[0]["states"], 1);
    assert_eq!(rows[2]["states"], 2);
    assert_eq!(rows[1]["result"], "error");
    let message = rows[1]["message"].as_str().expect("a message");
    assert!(message.contains("not balanced"), "{message}");
    assert!(
        rows[1]["place"].as_str().unwrap().contains("Suite.mo:"),
        "{out}"
    );
    assert_eq!(
        (json["ok"].as_u64(), json["errors"].as_u64()),
        (Some(2), Some(1))
    );
    // The text table has a row per model and the totals.
    let (out, _, _) = mocca(&args[..6]);
    assert!(
        out.lines()
            .any(|l| l.starts_with("Suite.Short") && l.contains("not balanced")),
        "{out}"
    );
    assert!(out.contains("3 models: 2 ok, 1 with an error"), "{out}");
    // A package without examples, and `--all` without `--model`.
    let (_, err, code) = mocca(&["check", "--lib", lib, "--model", "Suite.NoRun", "--all"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("no model in `Suite.NoRun` has an `experiment`"),
        "{err}"
    );
    let file = root.join("Suite.mo");
    let (_, err, code) = mocca(&["check", file.to_str().unwrap(), "--all"]);
    assert_eq!(code, 2, "{err}");
    for bad in ["nan", "0", "inf"] {
        let args = [
            "check",
            "--lib",
            lib,
            "--model",
            "Suite",
            "--all",
            "--time-limit",
            bad,
        ];
        let (_, err, code) = mocca(&args);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("positive number of seconds"), "{err}");
    }
}

/// Every model of the standard library that has an `experiment` annotation ends with a result
/// or a diagnostic: no internal error, none past the time limit.
#[test]
fn check_all_of_the_standard_library_ends_every_model_with_a_result_or_a_diagnostic() {
    let Some(msl) = msl() else {
        eprintln!("skipped: ../shared/msl is absent");
        return;
    };
    let lib = msl.to_str().expect("utf-8");
    let args = [
        "check", "--lib", lib, "--model", "Modelica", "--all", "--format", "json",
    ];
    let (out, err, _) = mocca(&args);
    let json: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let rows = json["models"].as_array().expect("models");
    assert!(rows.len() > 500, "{} models", rows.len());
    let broken: Vec<String> = rows
        .iter()
        .filter(|r| !matches!(r["result"].as_str(), Some("ok" | "error")))
        .map(|r| format!("{} {} {}", r["model"], r["result"], r["message"]))
        .collect();
    assert!(broken.is_empty(), "{broken:#?}\n{err}");
    // The reference examples of the Analog package check.
    let chua = rows
        .iter()
        .find(|r| r["model"] == "Modelica.Electrical.Analog.Examples.ChuaCircuit")
        .expect("ChuaCircuit is an example");
    assert_eq!(
        (chua["result"].as_str(), chua["states"].as_u64()),
        (Some("ok"), Some(3))
    );
}

/// A `uses` annotation asking for another version than the library found loads it with a
/// warning that names both.
#[test]
fn a_uses_annotation_of_another_version_is_warned_about() {
    let root = library();
    let lib = root.to_str().expect("utf-8");
    let user = |version: &str| {
        let text = format!(
            "model Run
               Circuits.Examples.RC rc;
               annotation(uses(Circuits(version = \"{version}\")));
             end Run;"
        );
        cli_support::model_file(&format!("uses_{version}"), &text)
    };
    let asked = user("2.0");
    let (_, err, code) = mocca(&["check", asked.to_str().expect("utf-8"), "--lib", lib]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("version 2.0 of `Circuits` is asked for") && err.contains("is version 1.0"),
        "{err}"
    );
    let same = user("1.0");
    let (_, err, code) = mocca(&["check", same.to_str().expect("utf-8"), "--lib", lib]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("asked for"), "{err}");
}

/// A model without a `uses` annotation that calls a library function by its full name: the
/// library is looked up in `--lib` on that first reference (Modelica 13.3.3), as with `uses`.
/// interpolate({0, 1, 2}, {0, 10, 40}, 1.5) = 25 by linear interpolation.
#[test]
fn a_library_name_without_uses_is_loaded_from_the_library_path() {
    let Some(msl) = msl() else {
        eprintln!("skipped: ../shared/msl is absent");
        return;
    };
    let msl = msl.to_str().expect("utf-8").to_string();
    let file = cli_support::model_file(
        "no_uses",
        "model NoUses
  Real y;
equation
  y = Modelica.Math.Vectors.interpolate({0, 1, 2}, {0, 10, 40}, 1.5);
end NoUses;
",
    );
    let (csv, err, code) = cli_support::simulate_csv(
        "no_uses",
        &[
            "simulate",
            file.to_str().unwrap(),
            "--lib",
            &msl,
            "--stop",
            "0.1",
            "--step",
            "0.1",
            "--vars",
            "y",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let y = &csv_columns(&csv)["y"];
    assert!(y.iter().all(|&v| (v - 25.0).abs() < 1e-12), "{y:?}");
}
