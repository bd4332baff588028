//! `mocca suggest-weak` against the closed form of SPEC §10 (the RC ladder's `ρ(G_L⁻¹ G_R)`
//! and its stability boundary), against `simulate --partition weak` of the applied cut, on
//! the power shaft, and on bad input.

mod cli_support;
mod simulate_support;

use cli_support::{csv_columns, mocca, mocca_json, model_file, simulate_csv, temp_path};
use serde_json::Value;

/// `ρ(G_L⁻¹ G_R)` of the weak RC ladder stepped by implicit Euler, left first (SPEC §10).
fn closed_form_radius(r2: f64, c2: f64, h: f64) -> f64 {
    let (r1, c1, r3) = (0.1, 1.0, 1.0);
    let (a1, a2, b2, b3) = (h / (r1 * c1), h / (r2 * c1), h / (r2 * c2), h / (r3 * c2));
    // G_L = [[p, 0], [q, r]], G_R = [[1, a2], [0, 1 − b2]].
    let (p, q, r) = (1.0 + a1 + a2, -b2, 1.0 + b3);
    let inv = [[1.0 / p, 0.0], [-q / (p * r), 1.0 / r]];
    let gr = [[1.0, a2], [0.0, 1.0 - b2]];
    let m = |i: usize, j: usize| inv[i][0] * gr[0][j] + inv[i][1] * gr[1][j];
    let (trace, det) = (m(0, 0) + m(1, 1), m(0, 0) * m(1, 1) - m(0, 1) * m(1, 0));
    let disc = trace * trace / 4.0 - det;
    if disc >= 0.0 {
        let s = disc.sqrt();
        (trace / 2.0 + s).abs().max((trace / 2.0 - s).abs())
    } else {
        det.sqrt()
    }
}

/// The step at which the closed form's radius first reaches 1, searching up from `h`
/// (`None` when it stays below 1 up to 10⁶).
fn closed_form_limit(r2: f64, c2: f64) -> Option<f64> {
    let (mut low, mut high) = (1e-3, 1e-3);
    while closed_form_radius(r2, c2, high) < 1.0 {
        low = high;
        high *= 2.0;
        if high > 1e6 {
            return None;
        }
    }
    for _ in 0..100 {
        let middle = 0.5 * (low + high);
        if closed_form_radius(r2, c2, middle) < 1.0 {
            low = middle;
        } else {
            high = middle;
        }
    }
    Some(low)
}

/// The candidate that cuts `R2.n`–`C2.p`, weak in R2's potential and C2's flow, and its rank.
fn ladder_cut(report: &Value) -> (usize, &Value) {
    report["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .enumerate()
        .find(|(_, c)| {
            c["connect"] == "connect(R2.n, C2.p)" && c["orientation"]["potential"] == "R2.n.v"
        })
        .map(|(k, c)| (k + 1, c))
        .expect("the R2–C2 cut is a candidate")
}

fn suggest(r2: f64, c2: f64, step: f64) -> Value {
    mocca_json(&[
        "suggest-weak",
        "examples/rc_ladder.mo",
        "--step",
        &step.to_string(),
        "-p",
        &format!("R2.R={r2}"),
        "-p",
        &format!("C2.C={c2}"),
        "--format",
        "json",
    ])
}

#[test]
fn the_rc_ladders_predicted_radius_and_limit_are_the_closed_forms() {
    for c2 in [1.0, 3.0, 10.0] {
        for r2 in [0.1, 0.3, 1.0, 3.0, 10.0] {
            let step = 0.1;
            let report = suggest(r2, c2, step);
            let (_, cut) = ladder_cut(&report);
            let radius = cut["spectral_radius"].as_f64().expect("a radius");
            let exact = closed_form_radius(r2, c2, step);
            assert!(
                (radius - exact).abs() < 1e-8 * exact,
                "R2 = {r2}, C2 = {c2}: {radius} vs {exact}"
            );
            assert_eq!(cut["stable"], exact < 1.0);
            match closed_form_limit(r2, c2) {
                Some(limit) => {
                    let predicted = cut["max_step"].as_f64().expect("a finite limit");
                    assert!(
                        (predicted - limit).abs() < 1e-6 * limit,
                        "R2 = {r2}, C2 = {c2}: {predicted} vs {limit}"
                    );
                }
                None => assert_eq!(cut["max_step"], "unbounded", "R2 = {r2}, C2 = {c2}"),
            }
            let subsystems = cut["subsystems"].as_array().expect("subsystems");
            assert_eq!(subsystems.len(), 2);
        }
    }
}

/// `simulate --partition weak` of `path` by implicit Euler, 400 steps of `step`.
fn weak_run(name: &str, path: &str, extra: &[&str], step: f64) -> (String, String, i32) {
    let (step, stop) = (step.to_string(), (400.0 * step).to_string());
    let mut args = vec![
        "simulate",
        path,
        "--partition",
        "weak",
        "--method",
        "implicit-euler",
        "--step",
        &step,
        "--stop",
        &stop,
    ];
    args.extend(extra);
    simulate_csv(name, &args)
}

#[test]
fn the_applied_cut_changes_only_its_connect_and_runs_stable_below_the_limit_only() {
    let (r2, c2) = (0.1, 1.0);
    let report = suggest(r2, c2, 0.1);
    let (rank, cut) = ladder_cut(&report);
    let limit = cut["max_step"].as_f64().expect("a finite limit");
    let out = temp_path("rc_ladder_applied.mo");
    let path = out.to_str().expect("utf-8");
    let (_, err, code) = mocca(&[
        "suggest-weak",
        "examples/rc_ladder.mo",
        "--step",
        "0.1",
        "-p",
        "R2.R=0.1",
        "--apply",
        &rank.to_string(),
        "--out",
        path,
    ]);
    assert_eq!(code, 0, "{err}");
    let original = std::fs::read_to_string("examples/rc_ladder.mo").expect("the example");
    let applied = std::fs::read_to_string(&out).expect("the applied file");
    assert_eq!(
        applied
            .replacen("R2.n(weak v)", "R2.n", 1)
            .replacen("C2.p(weak i)", "C2.p", 1),
        original
    );
    let changed: Vec<&str> = applied
        .lines()
        .zip(original.lines())
        .filter(|(a, b)| a != b)
        .map(|(a, _)| a)
        .collect();
    assert_eq!(changed, ["  connect(R2.n(weak v), C2.p(weak i));"]);
    for (factor, stable) in [(0.8, true), (1.25, false)] {
        let step = factor * limit;
        let (csv, err, code) = weak_run("rc_ladder_applied", path, &["-p", "R2.R=0.1"], step);
        let largest = if code == 0 {
            let c = csv_columns(&csv);
            (c["C1.v"].iter().chain(&c["C2.v"]))
                .map(|v| {
                    if v.is_finite() {
                        v.abs()
                    } else {
                        f64::INFINITY
                    }
                })
                .fold(0.0, f64::max)
        } else {
            f64::INFINITY
        };
        // The source is 1 V: a stable run stays near it (its transient overshoots a little),
        // an unstable one grows without end over 400 steps.
        if stable {
            assert!(largest < 2.0, "{factor}× the limit: {largest}; {err}");
        } else {
            assert!(largest > 1e3, "{factor}× the limit grows: {largest}");
        }
    }
}

#[test]
fn the_power_shafts_shipped_cut_ranks_first_and_the_opposite_says_why_not() {
    let shipped = std::fs::read_to_string("examples/power_shaft.mo").expect("the example");
    let unmarked = shipped.replace(
        "connect(mech.shaft(weak tau), elec.shaft(weak phi));",
        "connect(mech.shaft, elec.shaft);",
    );
    assert_ne!(unmarked, shipped);
    let path = model_file("power_shaft_unmarked", &unmarked);
    let report = mocca_json(&[
        "suggest-weak",
        path.to_str().expect("utf-8"),
        "--step",
        "0.01",
        "--format",
        "json",
    ]);
    let candidates = report["candidates"].as_array().expect("candidates");
    assert_eq!(candidates.len(), 2, "{report:#}");
    let (first, second) = (&candidates[0], &candidates[1]);
    assert_eq!(first["orientation"]["potential"], "elec.shaft.phi");
    assert_eq!(first["orientation"]["flow"], "mech.shaft.tau");
    assert_eq!(first["stable"], true);
    assert_eq!(second["orientation"]["potential"], "mech.shaft.phi");
    let why = second["rejected"]
        .as_str()
        .expect("the opposite is rejected");
    assert!(
        why.contains("mech.shaft.phi") || why.contains("elec.shaft.phi"),
        "{why}"
    );
}

#[test]
fn a_model_without_connect_and_a_bad_step_are_refused_clearly() {
    let path = model_file(
        "no_connect",
        "model Decay\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -x;\nend Decay;\n",
    );
    let file = path.to_str().expect("utf-8");
    let (_, err, code) = mocca(&["suggest-weak", file, "--step", "0.1"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("nothing to cut") && err.contains("Decay"),
        "{err}"
    );
    for step in ["0", "-1", "nan"] {
        let (_, err, code) = mocca(&["suggest-weak", "examples/rc_ladder.mo", "--step", step]);
        assert_eq!(code, 2, "--step {step}: {err}");
    }
    let (_, err, code) = mocca(&["suggest-weak", "examples/rc_ladder.mo"]);
    assert_eq!(code, 2, "no --step: {err}");
    let (_, err, code) = mocca(&[
        "suggest-weak",
        "examples/rc_ladder.mo",
        "--step",
        "0.1",
        "--apply",
        "99",
        "--out",
        temp_path("never.mo").to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(!temp_path("never.mo").exists());
}

/// An RC chain of 80 stages cut in the middle: its decoupled step has more states than the
/// dense limit, so suggest-weak estimates its spectral radius in a Krylov subspace. The
/// estimate is checked against the eigenvalues of the whole step matrix.
#[test]
fn the_krylov_estimate_of_a_large_step_matrix_is_its_spectral_radius() {
    use mocca::simulate::fixed_step::Method;
    use mocca::simulate::run::Exchange;
    use mocca::simulate::stability::{DENSE_UP_TO, DecoupledStep, KRYLOV, Scheme, StepMap};
    let text = mocca::generate::rc_chain(80).replace(
        "connect(R40.n, C40.p);",
        "connect(R40.n(weak v), C40.p(weak i));",
    );
    let m = simulate_support::inline(&text);
    assert_eq!(m.structure.subsystems.len(), 2);
    let mut point = mocca::causal::initial_point(&m.dae).expect("a start point");
    // Away from rest, so that every mode moves.
    for (k, v) in m.causal.states.iter().enumerate() {
        point.vars[v.0 as usize] = (k as f64 * 0.37).sin();
    }
    m.causal
        .evaluate(&m.dae.pool, &mut point)
        .expect("evaluates");
    let scheme = Scheme {
        method: Method::ImplicitEuler,
        exchange: Exchange::GaussSeidel,
    };
    let mut step = DecoupledStep::new((&m.dae, &m.structure, &m.causal, &m.jac), &point, scheme);
    for h in [0.1, 1.0, 10.0] {
        let matrix = step.matrix(h).expect("steps");
        assert!(matrix.nrows() > DENSE_UP_TO);
        let dense = (matrix.complex_eigenvalues().iter())
            .map(|z| z.norm())
            .fold(0.0, f64::max);
        let krylov = step.krylov_radius(h, KRYLOV).expect("steps");
        assert!(
            (krylov - dense).abs() < 1e-4,
            "h = {h}: {krylov} vs {dense}"
        );
    }
}

/// Two inertias joined by a spring and turning freely: the scheme keeps the free body's
/// modes of eigenvalue 1 (its angle grows with its speed, as the exact solution's does).
const FREE_SHAFT: &str = "
model FreeShaft \"Two inertias joined by a spring, turning freely\"
  Mocca.Rotational.Inertia left(J = 1, phi(start = 0, fixed = true), w(start = 1, fixed = true));
  Mocca.Rotational.Spring spring(c = 100);
  Mocca.Rotational.Inertia right(J = 2, phi(start = 0, fixed = true), w(start = 0, fixed = true));
equation
  connect(left.flange_b, spring.flange_a);
  connect(spring.flange_b, right.flange_a);
end FreeShaft;
";

#[test]
fn a_free_bodys_modes_of_eigenvalue_one_are_not_taken_for_instability() {
    let path = model_file("free_shaft", FREE_SHAFT);
    let file = path.to_str().expect("utf-8");
    let report = mocca_json(&["suggest-weak", file, "--step", "0.01", "--format", "json"]);
    let candidates = report["candidates"].as_array().expect("candidates");
    let ranked: Vec<&Value> = candidates
        .iter()
        .filter(|c| c["rejected"].is_null())
        .collect();
    assert_eq!(ranked.len(), 2, "{report:#}");
    for c in &ranked {
        assert_eq!(c["stable"], true, "{c:#}");
    }
    // The cut between the spring and the lighter inertia has a real limit: the applied cut
    // runs stable below it and grows without end above it.
    let (rank, cut) = candidates
        .iter()
        .enumerate()
        .find(|(_, c)| {
            c["connect"] == "connect(left.flange_b, spring.flange_a)" && c["rejected"].is_null()
        })
        .expect("the cut at the lighter inertia is ranked");
    let limit = cut["max_step"].as_f64().expect("a finite limit");
    let out = temp_path("free_shaft_applied.mo");
    let applied = out.to_str().expect("utf-8");
    let args = [
        "suggest-weak",
        file,
        "--step",
        "0.01",
        "--apply",
        &(rank + 1).to_string(),
    ];
    let (_, err, code) = mocca(&[&args[..], &["--out", applied]].concat());
    assert_eq!(code, 0, "{err}");
    for (factor, stable) in [(0.8, true), (1.25, false)] {
        let step = factor * limit;
        let (csv, err, code) = weak_run("free_shaft_applied", applied, &["--vars", "left.w"], step);
        assert_eq!(code, 0, "{err}");
        let w = &csv_columns(&csv)["left.w"];
        let late = w[w.len() / 2..].iter().fold(0.0f64, |m, x| m.max(x.abs()));
        // Momentum is conserved: a stable run settles at the common speed 1/3.
        if stable {
            assert!(late < 1.0, "{factor}× the limit: {late}");
        } else {
            assert!(late > 1e3, "{factor}× the limit: {late}");
        }
    }
}
