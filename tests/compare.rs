//! `mocca compare`: its figures are those of separate `simulate` runs against a BDF reference
//! written to CSV, explicit Euler beyond its stability limit is reported unstable, and bad
//! input is refused.

#[path = "cli_support/mod.rs"]
mod cli_support;

use cli_support::{mocca, mocca_json as json, temp_path};

const HEAT_30: [&str; 7] = [
    "examples/heat_exchanger.mo",
    "-p",
    "N=30",
    "--step",
    "0.01",
    "--stop",
    "10",
];

/// The RMSE of each method equals `simulate --compare` against `simulate --method bdf --tol
/// 1e-10 --out`, and the statistics are `simulate`'s.
#[test]
fn compare_agrees_with_separate_simulate_runs() {
    let mut args = vec!["compare"];
    args.extend(HEAT_30);
    args.extend(["--methods", "mixed-euler,implicit-euler,euler,bdf"]);
    args.extend(["--format", "json"]);
    let table = json(&args);
    let reference = temp_path("compare_reference.csv");
    let path = reference.to_str().expect("path");
    let mut bdf = vec!["simulate"];
    bdf.extend(HEAT_30);
    bdf.extend(["--method", "bdf", "--tol", "1e-10", "--out", path]);
    let (_, err, code) = mocca(&bdf);
    assert_eq!(code, 0, "{err}");
    let methods = table["methods"].as_array().expect("methods");
    assert_eq!(methods.len(), 4);
    for (column, method) in methods.iter().zip(["mixed-euler", "implicit-euler"]) {
        let mut run = vec!["simulate"];
        run.extend(HEAT_30);
        run.extend(["--method", method, "--compare", path, "--format", "json"]);
        if method == "mixed-euler" {
            run.extend(["--partition", "auto"]);
        }
        let single = json(&run);
        assert_eq!(column["method"], method);
        assert_eq!(column["stable"], true);
        let (a, b) = (
            column["rmse"].as_f64().expect("rmse"),
            single["rmse"].as_f64().expect("rmse"),
        );
        assert!((a - b).abs() <= 1e-9 * b, "{method}: {a} vs {b}");
        for counter in [
            "steps",
            "f_evals",
            "jac_evals",
            "newton_iters",
            "factorizations",
        ] {
            assert_eq!(
                column["stats"][counter], single["stats"][counter],
                "{method} {counter}"
            );
        }
    }
    // Mixed mode: about implicit Euler's error, with a third of the states implicit.
    let rmse = |k: usize| methods[k]["rmse"].as_f64().expect("rmse");
    assert!(rmse(0) <= 1.5 * rmse(1), "{} vs {}", rmse(0), rmse(1));
    assert_eq!(methods[0]["implicit_states"], 30);
    assert_eq!(methods[1]["implicit_states"], 90);
    // Explicit Euler at h = 0.01 is beyond the fast stream's stability limit.
    assert_eq!(methods[2]["stable"], false);
    let failure = methods[2]["failure"].as_str().expect("failure");
    assert!(failure.starts_with("unstable at h = 0.01"), "{failure}");
    assert!(rmse(3) < 1e-4 * rmse(1));
    assert!(
        table["methods"][0]["cycle_analysis_time_s"]
            .as_f64()
            .is_some()
    );
}

#[test]
fn the_text_table_has_a_column_per_method_and_names_instability() {
    let mut args = vec!["compare"];
    args.extend(HEAT_30);
    let (out, err, code) = mocca(&args);
    assert_eq!(code, 0, "{err}");
    let header = out.lines().nth(2).expect("header");
    let columns: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(columns, ["mixed-euler", "implicit-euler", "euler", "bdf"]);
    assert!(out.contains("unstable at h = 0.01"), "{out}");
    assert!(
        out.contains("partition auto, 30 fast of 90 states"),
        "{out}"
    );
}

#[test]
fn bad_compare_input_is_refused() {
    let heat = "examples/heat_exchanger.mo";
    let cases: [&[&str]; 5] = [
        &["--methods", "euler,rk4"],
        &["--methods", ""],
        &["--methods", "euler", "--fast", "T_a[1]"],
        &["--reference-tol", "0"],
        &["--partition", "weak"],
    ];
    for extra in cases {
        let mut args = vec!["compare", heat, "--stop", "0.1"];
        args.extend(extra);
        let (_, err, code) = mocca(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.starts_with("error"), "{args:?}: {err}");
    }
}

/// Explicit Euler on der(x) = −1000·x at h = 0.01 multiplies x by −9 each step: after 100
/// steps |x| ≈ 10⁹⁵, finite but no answer. The column is unstable at the first output time its
/// value leaves ten times the reference's range (|x| ≤ 1: beyond 11 at the second step, 81),
/// not "ok" with an RMSE of 10⁹⁴; implicit Euler is ok.
#[test]
fn a_column_that_leaves_the_references_range_is_unstable() {
    let model = cli_support::model_file(
        "stiff_decay",
        "model StiffDecay\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -1000*x;\nend StiffDecay;\n",
    );
    let table = json(&[
        "compare",
        model.to_str().unwrap(),
        "--step",
        "0.01",
        "--stop",
        "1",
        "--methods",
        "euler,implicit-euler",
        "--format",
        "json",
    ]);
    let methods = table["methods"].as_array().expect("methods");
    assert_eq!(methods[0]["stable"], false, "{table}");
    let why = methods[0]["failure"].as_str().expect("failure");
    assert!(why.contains("unstable at h = 0.01 (t = 0.02)"), "{why}");
    assert_eq!(methods[1]["stable"], true, "{table}");
}

/// A model whose digraph has no cycle has no fast state for `--partition auto`: a warning
/// says so and the mixed method steps every state explicitly (it used to print an error and
/// exit 0).
#[test]
fn a_model_without_cycles_steps_the_mixed_method_explicitly() {
    let model = cli_support::model_file(
        "no_cycles",
        "model NoCycles\n  Real x(start = 0, fixed = true);\n  Real y(start = 0, fixed = true);\nequation\n  der(x) = 1;\n  der(y) = x;\nend NoCycles;\n",
    );
    let (out, err, code) = mocca(&[
        "compare",
        model.to_str().unwrap(),
        "--step",
        "0.01",
        "--stop",
        "1",
        "--methods",
        "euler,mixed-euler",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.starts_with("warning") && err.contains("no state is fast"),
        "{err}"
    );
    let report: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let methods = report["methods"].as_array().expect("methods");
    // With no fast state, mixed Euler is explicit Euler on every state: the same errors.
    assert_eq!(methods[1]["implicit_states"], 0, "{out}");
    assert_eq!(methods[0]["rmse"], methods[1]["rmse"], "{out}");
}
