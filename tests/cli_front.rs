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
