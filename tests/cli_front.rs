//! The command line on models with user errors and front-end limits: exit codes, messages at
//! their spans, and what `check` lists.

mod cli_support;

use cli_support::{mocca, model_file};

#[test]
fn check_lists_the_parameters_without_a_value() {
    let path = model_file(
        "without_value",
        "model M\n  parameter Real b;\n  parameter Real k(start = 2);\n  parameter Real c[2];\n  Real x(start = 1);\nequation\n  der(x) = -b * x - k - c[1];\nend M;\n",
    );
    let file = path.to_str().unwrap();
    let (text, stderr, code) = mocca(&["check", file]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        text.contains("parameters                4  (3 without a value: b, c[1], c[2])"),
        "{text}"
    );
    assert!(
        stderr
            .contains("warning: parameter `b` has neither a binding nor a start value: 0 is used")
            && stderr.contains("without_value.mo:2:18"),
        "{stderr}"
    );
    let (json, _, code) = mocca(&["check", file, "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(
        v["parameters_without_value"],
        serde_json::json!(["b", "c[1]", "c[2]"])
    );
}

#[test]
fn an_override_of_a_component_is_an_error_naming_it() {
    let path = model_file(
        "override_component",
        "model R\n  parameter Real R = 1;\n  Real v;\nequation\n  v = R;\nend R;\nmodel Top\n  R R1;\nend Top;\n",
    );
    let file = path.to_str().unwrap();
    let (_, stderr, code) = mocca(&["check", file, "-p", "R1=5"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(
            "error: `R1` is a component (a model `R`), not a variable, so it cannot be given a value"
        ) && stderr.contains("override_component.mo:8:5"),
        "{stderr}"
    );
    // Its parameter can be overridden.
    let (text, stderr, code) = mocca(&["flatten", file, "-p", "R1.R=5"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(text.contains("parameter Real 'R1.R' = 5.0;"), "{text}");
}

/// Sizes are counted before anything is allocated: a 10¹⁰-element declaration is an error at
/// once, instead of running for half a minute up to 11 GB and aborting.
#[test]
fn a_declaration_over_the_size_limit_is_an_error_before_allocating() {
    let path = model_file(
        "too_large",
        "model M\n  Real x[100000, 100000];\nequation\n  x = fill(1, 100000, 100000);\nend M;\n",
    );
    let started = std::time::Instant::now();
    let (_, stderr, code) = mocca(&["check", path.to_str().unwrap()]);
    assert_eq!(code, 1, "{stderr}");
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    assert!(
        stderr.contains("error: `x` has 10000000000 elements, more than the limit of 100000000")
            && stderr.contains("too_large.mo:2:8")
            && stderr.contains("`--max-size N` raises the limit"),
        "{stderr}"
    );
    // The model as a whole: 60 + 60 scalars against a limit of 100, then raised.
    let two = model_file(
        "two_arrays",
        "model M\n  Real a[60] = fill(1, 60);\n  Real b[60] = fill(2, 60);\nend M;\n",
    );
    let two = two.to_str().unwrap();
    let (_, stderr, code) = mocca(&["check", two, "--max-size", "100"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("`b` has 60 elements, which make the model larger than the limit of 100")
            && stderr.contains("two_arrays.mo:3:8"),
        "{stderr}"
    );
    let (_, stderr, code) = mocca(&["check", two, "--max-size", "120"]);
    assert_eq!(code, 0, "{stderr}");
    // An array expression too.
    let fill = model_file(
        "large_fill",
        "model M\n  Real s = sum(fill(1, 20, 20));\nend M;\n",
    );
    let (_, stderr, code) = mocca(&["check", fill.to_str().unwrap(), "--max-size", "100"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("this array would have 400 elements, more than the limit of 100")
            && stderr.contains("large_fill.mo:2:16"),
        "{stderr}"
    );
}

/// `-p k=abc` is an error naming `abc`, and only that: no warning that `k` has no value.
#[test]
fn a_bad_override_value_is_an_error_only() {
    let path = model_file(
        "bad_value",
        "model P\n  parameter Real k = 2;\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -k*x;\nend P;\n",
    );
    let (_, err, code) = mocca(&["simulate", path.to_str().unwrap(), "-p", "k=abc"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("unknown name `abc`"), "{err}");
    assert!(!err.contains("warning"), "{err}");
}

/// An unbalanced model is one equation short in `simulate` as in `check`.
#[test]
fn simulate_says_an_unbalanced_model_is_short_as_check_does() {
    let path = model_file(
        "unbalanced",
        "model Unb\n  Real v1(start = 1, fixed = true);\n  Real v3(start = 1, fixed = true);\nequation\n  der(v1) = -v1;\nend Unb;\n",
    );
    for command in ["check", "simulate", "cycles"] {
        let (_, err, code) = mocca(&[command, path.to_str().unwrap()]);
        assert_eq!(code, 1, "{command}: {err}");
        assert!(
            err.contains("is not balanced: 1 equations for 2 unknowns (1 equation(s) short)"),
            "{command}: {err}"
        );
    }
}

/// A `--step` that does not divide the interval is said on stderr with the step taken.
#[test]
fn a_step_that_does_not_divide_the_interval_is_said() {
    let path = model_file(
        "decay",
        "model Decay\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -x;\nend Decay;\n",
    );
    let file = path.to_str().unwrap();
    let (_, err, code) = mocca(&["simulate", file, "--stop", "1", "--step", "0.3"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("the step 0.3 does not divide") && err.contains("3 steps of 0.333"),
        "{err}"
    );
    let (_, err, _) = mocca(&["simulate", file, "--stop", "1", "--step", "0.25"]);
    assert!(!err.contains("does not divide"), "{err}");
}

/// Booleans are not numbers (Modelica 3.4: the arithmetic operators take Real and Integer).
#[test]
fn a_boolean_in_arithmetic_is_a_type_error() {
    let path = model_file(
        "bool_sum",
        "model B\n  Real y;\nequation\n  y = true + 1;\nend B;\n",
    );
    let (_, err, code) = mocca(&["check", path.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("`+` takes numbers, not a Boolean operand"),
        "{err}"
    );
}

/// `emit --help` lists the methods emit takes: not `bdf`.
#[test]
fn emit_lists_no_method_it_refuses() {
    let (out, _, code) = mocca(&["emit", "--help"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("implicit-euler") && out.contains("mixed-trapezoidal"),
        "{out}"
    );
    assert!(!out.contains("- bdf"), "{out}");
    let (_, err, code) = mocca(&["emit", "x.mo", "--method", "bdf", "--out", "/tmp/never"]);
    assert_eq!(code, 2, "{err}");
}
