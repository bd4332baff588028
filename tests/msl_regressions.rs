//! MSL examples that ran wrong or never ended, against values derived independently: the
//! library's own reference results, and closed forms. Each skips when `../shared/msl` is
//! absent.

mod cli_support;

use cli_support::{csv_columns, msl, simulate_csv};

/// `Modelica.Blocks.Examples.Filter` (39 states) never ended: its ChebyshevI coefficients come
/// from the library's root finder inlined symbolically, an expression DAG of 250 nodes that is
/// 10¹² nodes as a tree, and evaluation walked the tree; then the initial Newton system was
/// singular where the chain of `fixed = false` coefficients (`cr`, then `r = −2π·f_cut·cr`)
/// started at 0. It now runs to its stop time. Checks: every filter has unity DC gain, so the
/// well-damped ones settle on the step's final value 1.1 (offset 0.1, height 1, at t = 0.1);
/// `r = −2π·f_cut·cr` with f_cut = 2 Hz exactly; and `cr` is the real pole of the 0.5 dB
/// Chebyshev filter of order 3 normalised to its −3 dB frequency, sinh(asinh(1/ε)/3) /
/// cosh(acosh(1/ε)/3) with ε = √(10^0.05 − 1), to the accuracy of the library's own
/// normalisation search.
#[test]
fn the_filter_example_initialises_and_runs_to_its_end() {
    let Some(msl) = msl() else {
        eprintln!("skipped: ../shared/msl is absent");
        return;
    };
    let lib = msl.to_str().expect("utf-8");
    let vars =
        "CriticalDamping.y,Bessel.y,Butterworth.y,ChebyshevI.y,ChebyshevI.cr[1],ChebyshevI.r[1]";
    let (csv, err, code) = simulate_csv(
        "msl_filter",
        &[
            "simulate",
            "--lib",
            lib,
            "--model",
            "Modelica.Blocks.Examples.Filter",
            "--vars",
            vars,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let run = csv_columns(&csv);
    assert!((run["time"].last().unwrap() - 0.9).abs() < 1e-12);
    let last = |name: &str| *run[name].last().unwrap();
    for settled in ["CriticalDamping.y", "Bessel.y"] {
        assert!(
            (last(settled) - 1.1).abs() < 1e-3,
            "{settled} = {}",
            last(settled)
        );
    }
    for ringing in ["Butterworth.y", "ChebyshevI.y"] {
        assert!(
            (last(ringing) - 1.1).abs() < 0.05,
            "{ringing} = {}",
            last(ringing)
        );
    }
    let cr = last("ChebyshevI.cr[1]");
    let r = last("ChebyshevI.r[1]");
    assert!(
        (r + 2.0 * std::f64::consts::PI * 2.0 * cr).abs() < 1e-12 * r.abs(),
        "{r} {cr}"
    );
    let epsilon = (10f64.powf(0.05) - 1.0).sqrt();
    let pole = (1.0 / epsilon).asinh() / 3.0;
    let normalised = pole.sinh() / ((1.0 / epsilon).acosh() / 3.0).cosh();
    assert!(
        (cr - normalised).abs() < 5e-3 * normalised,
        "cr = {cr}, closed form {normalised}"
    );
}

/// LossyGearDemo1 at the reference's tolerance (DASSL at 1e-6) ended with Inertia2.phi =
/// 1.26e-5 against the reference's 1.662e-5: BDF held every state to an absolute 1e-6,
/// where DASSL holds it to tolerance·nominal (Inertia2.phi has nominal 0.001, w 0.01). With the
/// nominal scaling the run at 1e-6 ends within 0.2 % of the reference.
#[test]
fn lossy_gear_demo_1_matches_its_reference_at_the_reference_tolerance() {
    let Some(msl) = msl() else {
        eprintln!("skipped: ../shared/msl is absent");
        return;
    };
    let lib = msl.to_str().expect("utf-8");
    let model = "Modelica.Mechanics.Rotational.Examples.LossyGearDemo1";
    let args = [
        "simulate",
        "--lib",
        lib,
        "--model",
        model,
        "--method",
        "bdf",
        "--stop",
        "0.5",
        "--tol",
        "1e-6",
        "--vars",
        "Inertia2.phi",
    ];
    let (csv, err, code) = simulate_csv("lossy_gear_1", &args);
    assert_eq!(code, 0, "{err}");
    let phi = *csv_columns(&csv)["Inertia2.phi"].last().unwrap();
    let reference_csv =
        std::fs::read_to_string(msl.join(format!("../msl-reference/{model}/reference.csv")))
            .expect("the reference");
    let last = reference_csv.lines().last().expect("rows");
    let reference: f64 = last
        .split(',')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("phi");
    assert!(
        (phi - reference).abs() < 2e-3 * reference.abs(),
        "phi(0.5) = {phi}, reference {reference}"
    );
}

/// LossyGearDemo2 stopped at t = 0.087 s with "events accumulate": when both friction
/// elements stick, the torque split between them is not unique, and the bearing's `sa >
/// tau0` (its breakaway) crossed while both were locked. Free, the bearing slides with its
/// torque exactly at `tau0`, where `sa > tau0` is false and locked it again. A switch now
/// moves within event iteration only where its relation is past its threshold, so the
/// bearing slides. Checks: the run reaches its end, and until 0.3 s (where the reference
/// resolves a non-unique split of the torque its own way) the modes of both elements and the
/// output shaft's angle follow the library's reference.
#[test]
fn lossy_gear_demo_2_slides_at_the_breakaway_torque() {
    let Some(msl) = msl() else {
        eprintln!("skipped: ../shared/msl is absent");
        return;
    };
    let lib = msl.to_str().expect("utf-8");
    let model = "Modelica.Mechanics.Rotational.Examples.LossyGearDemo2";
    let vars = "Inertia2.phi,bearingFriction.mode,gear.mode";
    let args = [
        "simulate", "--lib", lib, "--model", model, "--method", "bdf", "--vars", vars,
    ];
    let (csv, err, code) = simulate_csv("lossy_gear_2", &args);
    assert_eq!(code, 0, "{err}");
    let run = csv_columns(&csv);
    assert!((run["time"].last().unwrap() - 0.5).abs() < 1e-12);
    let reference_csv =
        std::fs::read_to_string(msl.join(format!("../msl-reference/{model}/reference.csv")))
            .expect("the reference");
    let reference = csv_columns(&reference_csv.replace('"', ""));
    let at = |columns: &std::collections::BTreeMap<String, Vec<f64>>, name: &str, t: f64| {
        let k = columns["time"]
            .iter()
            .rposition(|&s| s <= t)
            .expect("a row");
        columns[name][k]
    };
    for t in [0.05, 0.1, 0.2, 0.25, 0.29] {
        for mode in ["bearingFriction.mode", "gear.mode"] {
            assert_eq!(at(&run, mode, t), at(&reference, mode, t), "{mode} at {t}");
        }
        let (phi, want) = (
            at(&run, "Inertia2.phi", t),
            at(&reference, "Inertia2.phi", t),
        );
        assert!(
            (phi - want).abs() < 2e-3 * want.abs().max(1e-4),
            "phi({t}) = {phi}, reference {want}"
        );
    }
}

/// `flatten` of the same Filter wrote gigabytes: the ChebyshevI coefficients' expression,
/// 250 nodes shared in memory, is 10¹² written out. It is now an error at the binding, at once.
#[test]
fn flatten_refuses_an_expression_too_large_to_write() {
    let Some(msl) = msl() else {
        eprintln!("skipped: ../shared/msl is absent");
        return;
    };
    let lib = msl.to_str().expect("utf-8");
    let (out, err, code) = cli_support::mocca(&[
        "flatten",
        "--lib",
        lib,
        "--model",
        "Modelica.Blocks.Examples.Filter",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty(), "{} bytes written", out.len());
    assert!(err.contains("more than 10⁷ nodes"), "{err}");
}
