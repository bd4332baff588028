//! Multirate mixed-mode integration (SPEC §10): the fast level takes m substeps per step,
//! reading the slow states held at their new value or interpolated linearly. Checked against
//! dense-algebra recurrences written from the definitions, against closed-form solutions, and
//! through the binary (`--partition auto`, `--multirate`, `--levels`, bad input).

#[path = "cli_support/mod.rs"]
mod cli_support;
#[path = "simulate_support/mod.rs"]
mod simulate_support;

use cli_support::{mocca, mocca_json as json, model_file};
use mocca::partition::{Interpolation, MixedMethod, Partition};
use mocca::simulate::fixed_step::FixedStep;
use mocca::simulate::mixed::MixedStepper;
use nalgebra::{DMatrix, DVector};
use proptest::prelude::*;
use simulate_support::Linear;

/// One step `H` of `partition`'s stepper from `x0`.
fn stepped(a: &DMatrix<f64>, partition: Partition, h: f64, x0: &[f64]) -> Vec<f64> {
    let mut system = Linear::new(a.clone());
    let mut stepper = MixedStepper::new(partition, 1e-14, &system);
    let mut x = x0.to_vec();
    stepper.step(&mut system, 0.0, h, &mut x).expect("steps");
    x
}

/// The rows and columns `rows`×`cols` of `a`.
fn block(a: &DMatrix<f64>, rows: &[usize], cols: &[usize]) -> DMatrix<f64> {
    DMatrix::from_fn(rows.len(), cols.len(), |i, j| a[(rows[i], cols[j])])
}

fn pick(x: &DVector<f64>, idx: &[usize]) -> DVector<f64> {
    DVector::from_iterator(idx.len(), idx.iter().map(|&i| x[i]))
}

/// One multirate step of `der(x) = A x` from the definitions: the slow states take one step of
/// the explicit method with the fast ones held at `x0`; the fast states take `m` steps of the
/// implicit method, each a dense solve, reading the slow states at `s(θ)` (the new value, or
/// the line from old to new).
fn multirate_step(
    a: &DMatrix<f64>,
    fast: &[usize],
    method: MixedMethod,
    (h, m, interpolation): (f64, u64, Interpolation),
    x0: &DVector<f64>,
) -> DVector<f64> {
    let n = a.nrows();
    let slow: Vec<usize> = (0..n).filter(|i| !fast.contains(i)).collect();
    let mut p = DMatrix::zeros(n, n);
    for &i in &slow {
        p[(i, i)] = 1.0;
    }
    let k1 = a * x0;
    let x1 = match method {
        MixedMethod::Euler => x0 + h * &p * &k1,
        MixedMethod::Midpoint => x0 + h * &p * (a * (x0 + h / 2.0 * &p * &k1)),
        MixedMethod::Trapezoidal => x0 + h / 2.0 * &p * (&k1 + a * (x0 + h * &p * &k1)),
    };
    let (s0, s1) = (pick(x0, &slow), pick(&x1, &slow));
    let s = |theta: f64| match interpolation {
        Interpolation::Hold => s1.clone(),
        Interpolation::Linear => (1.0 - theta) * &s0 + theta * &s1,
    };
    let (aff, afs) = (block(a, fast, fast), block(a, fast, &slow));
    let identity = DMatrix::<f64>::identity(fast.len(), fast.len());
    let dt = h / m as f64;
    let mut xf = pick(x0, fast);
    // (nalgebra cannot factor an empty matrix.)
    let substeps = if fast.is_empty() { 0 } else { m };
    for j in 0..substeps {
        let at = |c: f64| (j as f64 + c) / m as f64;
        xf = match method {
            MixedMethod::Euler => (&identity - dt * &aff)
                .lu()
                .solve(&(&xf + dt * &afs * s(at(1.0))))
                .expect("regular"),
            MixedMethod::Midpoint => {
                let y = (&identity - dt / 2.0 * &aff)
                    .lu()
                    .solve(&(&xf + dt / 2.0 * &afs * s(at(0.5))))
                    .expect("regular");
                2.0 * y - &xf
            }
            MixedMethod::Trapezoidal => {
                let now = &afs * s(at(0.0)) + &aff * &xf;
                (&identity - dt / 2.0 * &aff)
                    .lu()
                    .solve(&(&xf + dt / 2.0 * (now + &afs * s(at(1.0)))))
                    .expect("regular")
            }
        };
    }
    let mut out = x1;
    for (k, &i) in fast.iter().enumerate() {
        out[i] = xf[k];
    }
    out
}

fn linear_case() -> impl Strategy<Value = (DMatrix<f64>, Vec<bool>, Vec<f64>, u64, bool)> {
    (2usize..6).prop_flat_map(|n| {
        (
            proptest::collection::vec(-3.0f64..3.0, n * n),
            proptest::collection::vec(any::<bool>(), n),
            proptest::collection::vec(-2.0f64..2.0, n),
            1u64..5,
            any::<bool>(),
        )
            .prop_map(move |(a, fast, x0, m, hold)| {
                (DMatrix::from_row_slice(n, n, &a), fast, x0, m, hold)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Every mixed method, rate and interpolation, on random linear systems and splits.
    #[test]
    fn one_multirate_step_equals_the_dense_recurrence(
        (a, fast, x0, m, hold) in linear_case(),
    ) {
        let fast: Vec<usize> = (0..fast.len()).filter(|&i| fast[i]).collect();
        let interpolation = if hold { Interpolation::Hold } else { Interpolation::Linear };
        let h = 0.05;
        for method in MixedMethod::ALL {
            let partition = Partition::two_level(method, a.nrows(), fast.iter().copied(), m)
                .with_interpolation(interpolation);
            let got = stepped(&a, partition, h, &x0);
            let want = multirate_step(&a, &fast, method, (h, m, interpolation), &DVector::from_column_slice(&x0));
            for (g, w) in got.iter().zip(want.iter()) {
                prop_assert!((g - w).abs() <= 1e-11 * (1.0 + w.abs()), "{}: {got:?} vs {want}", method.name());
            }
        }
    }
}

/// Three levels (slow, middle, fast) of mixed Euler with rate 2 and held values: the slow state
/// steps once by `H`, the middle one twice by `H/2` (explicitly), the fast one four times by
/// `H/4` (implicitly), each reading the slower ones' new values.
#[test]
fn three_levels_step_at_rates_one_m_and_m_squared() {
    let a = DMatrix::from_row_slice(3, 3, &[-1.0, 0.5, 0.2, 1.0, -8.0, 0.5, 3.0, 2.0, -90.0]);
    let h_bar = [1.0, 0.3, 0.01];
    let partition = Partition::from_bounds(MixedMethod::Euler, &h_bar, 0.4, 2, 2)
        .with_interpolation(Interpolation::Hold);
    let rates: Vec<u64> = partition.levels().iter().map(|l| l.rate).collect();
    assert_eq!(rates, [1, 2, 4]);
    let x0 = [1.0, -1.0, 2.0];
    let got = stepped(&a, partition, 0.4, &x0);
    let mut x = x0;
    let f = |x: &[f64; 3], i: usize| (0..3).map(|j| a[(i, j)] * x[j]).sum::<f64>();
    x[0] += 0.4 * f(&x, 0);
    for _ in 0..2 {
        x[1] += 0.2 * f(&x, 1);
        for _ in 0..2 {
            // x₂' = x₂ + 0.1 (a₂₀ x₀ + a₂₁ x₁ + a₂₂ x₂')
            x[2] = (x[2] + 0.1 * (a[(2, 0)] * x[0] + a[(2, 1)] * x[1])) / (1.0 - 0.1 * a[(2, 2)]);
        }
    }
    for (g, w) in got.iter().zip(&x) {
        assert!((g - w).abs() <= 1e-13 * (1.0 + w.abs()), "{got:?} vs {x:?}");
    }
}

/// `der(s) = −μ s`, `der(f) = −λ f + s`: the slow state reads no fast one, so every mixed
/// method keeps its order under multirate with linear interpolation (the error at t = 1 falls
/// by 2^order as the step halves, m fixed).
#[test]
fn multirate_keeps_the_orders_one_two_two_with_linear_interpolation() {
    let (mu, lambda): (f64, f64) = (0.7, 40.0);
    let a = DMatrix::from_row_slice(2, 2, &[-mu, 0.0, 1.0, -lambda]);
    let x0 = [1.0, 0.5];
    let exact_f = (-lambda).exp() * x0[1] + ((-mu).exp() - (-lambda).exp()) / (lambda - mu) * x0[0];
    let exact = [(-mu).exp() * x0[0], exact_f];
    for (method, order) in [
        (MixedMethod::Euler, 1.0),
        (MixedMethod::Midpoint, 2.0),
        (MixedMethod::Trapezoidal, 2.0),
    ] {
        let error = |steps: u64| {
            let mut system = Linear::new(a.clone());
            let partition = Partition::two_level(method, 2, [1], 4);
            let mut stepper = MixedStepper::new(partition, 1e-14, &system);
            let h = 1.0 / steps as f64;
            let mut x = x0.to_vec();
            for k in 0..steps {
                stepper
                    .step(&mut system, k as f64 * h, h, &mut x)
                    .expect("steps");
            }
            (x[0] - exact[0]).abs().max((x[1] - exact[1]).abs())
        };
        let (e1, e2, e3) = (error(40), error(80), error(160));
        for ratio in [e1 / e2, e2 / e3] {
            let seen = ratio.log2();
            assert!(
                (seen - order).abs() < 0.2,
                "{}: order {seen} (errors {e1:e} {e2:e} {e3:e})",
                method.name()
            );
        }
    }
}

/// Per level, the evaluations of `f` its steps made: m substeps of the fast level cost m
/// Newton solves each step.
#[test]
fn statistics_count_each_levels_evaluations() {
    let a = DMatrix::from_row_slice(2, 2, &[-1.0, 0.5, 2.0, -50.0]);
    let mut system = Linear::new(a);
    let partition = Partition::two_level(MixedMethod::Euler, 2, [1], 5);
    let mut stepper = MixedStepper::new(partition, 1e-12, &system);
    let mut x = vec![1.0, 1.0];
    for k in 0..10 {
        stepper
            .step(&mut system, k as f64 * 0.1, 0.1, &mut x)
            .expect("steps");
    }
    let stats = stepper.stats();
    assert_eq!(stats.steps, 10);
    assert_eq!(
        stats.level_f_evals[0], 10,
        "one explicit Euler evaluation a step"
    );
    assert_eq!(stats.level_f_evals[1], stats.newton_iters);
    assert!(stats.newton_iters >= 50, "{stats:?}");
    assert_eq!(stats.f_evals, 10 + stats.newton_iters);
}

/// `--partition auto` takes the first level of the proposal `mocca cycles --step` prints.
#[test]
fn auto_partition_is_the_cycle_analysis_proposal_at_the_step() {
    for (n, step) in [("10", "0.04"), ("30", "0.01")] {
        let heat = ["examples/heat_exchanger.mo", "-p"];
        let param = format!("N={n}");
        let cycles = json(&[
            "cycles", heat[0], heat[1], &param, "--step", step, "--format", "json",
        ]);
        let run = json(&[
            "simulate",
            heat[0],
            heat[1],
            &param,
            "--method",
            "mixed-euler",
            "--partition",
            "auto",
            "--step",
            step,
            "--stop",
            "0.2",
            "--format",
            "json",
        ]);
        let sorted = |v: &serde_json::Value| {
            let mut names: Vec<String> = v
                .as_array()
                .expect("names")
                .iter()
                .map(|s| s.as_str().expect("name").to_string())
                .collect();
            names.sort();
            names
        };
        let proposal = &cycles["partition"][0];
        let parts = &run["partition"];
        assert_eq!(sorted(&parts[0]["states"]), sorted(&proposal["fast"]));
        assert_eq!(sorted(&parts[1]["states"]), sorted(&proposal["slow"]));
        assert_eq!(parts[0]["method"], "implicit-euler");
        assert!(!sorted(&parts[0]["states"]).is_empty());
        assert_eq!(run["cycle_analysis"]["alpha"], 0.5);
    }
}

#[test]
fn multirate_levels_are_reported_with_their_rates() {
    let run = json(&[
        "simulate",
        "examples/heat_exchanger.mo",
        "--method",
        "mixed-euler",
        "--fast",
        "T_a[*]",
        "--multirate",
        "4",
        "--interpolate",
        "hold",
        "--step",
        "0.04",
        "--stop",
        "0.4",
        "--format",
        "json",
    ]);
    let parts = &run["partition"];
    assert_eq!(parts[0]["rate"], 4);
    assert_eq!(parts[1]["rate"], 1);
    assert_eq!(parts[1]["f_evals"], 10);
    assert_eq!(run["stats"]["steps"], 10);
}

#[test]
fn auto_with_nothing_fast_says_so_and_steps_explicitly() {
    let (out, err, code) = mocca(&[
        "simulate",
        "examples/heat_exchanger.mo",
        "--method",
        "mixed-euler",
        "--partition",
        "auto",
        "--step",
        "0.0001",
        "--stop",
        "0.001",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("no state is fast"), "{err}");
    assert!(out.contains("0 fast states"), "{out}");
}

#[test]
fn bad_partitions_are_refused() {
    let heat = "examples/heat_exchanger.mo";
    let usage: [&[&str]; 7] = [
        &[
            "--method",
            "mixed-euler",
            "--fast",
            "T_a[1]",
            "--multirate",
            "0",
        ],
        &["--method", "implicit-euler", "--multirate", "2"],
        &[
            "--method",
            "mixed-euler",
            "--fast",
            "T_a[1]",
            "--levels",
            "2",
        ],
        &[
            "--method",
            "mixed-euler",
            "--partition",
            "auto",
            "--levels",
            "2",
        ],
        &[
            "--method",
            "mixed-euler",
            "--fast",
            "T_a[1]",
            "--alpha",
            "0.3",
        ],
        &[
            "--method",
            "mixed-euler",
            "--partition",
            "auto",
            "--fast",
            "T_a[1]",
        ],
        &["--method", "euler", "--partition", "auto"],
    ];
    for extra in usage {
        let mut args = vec!["simulate", heat, "--stop", "0.01"];
        args.extend(extra);
        let (_, err, code) = mocca(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.starts_with("error"), "{args:?}: {err}");
    }
    // No cycle bounds any state: no state is fast, every one is stepped explicitly, as where
    // every bound is above the step.
    let ramp = model_file(
        "ramp",
        "model Ramp Real x(start = 0, fixed = true); equation der(x) = 1; end Ramp;",
    );
    let (_, err, code) = mocca(&[
        "simulate",
        ramp.to_str().expect("path"),
        "--method",
        "mixed-euler",
        "--partition",
        "auto",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.starts_with("warning") && err.contains("no state is fast"),
        "{err}"
    );
    // I − hJ of the fast block is singular at h = 0.1 when J = 10.
    let growth = model_file(
        "growth",
        "model Growth Real x(start = 1, fixed = true); equation der(x) = 10*x; end Growth;",
    );
    let (_, err, code) = mocca(&[
        "simulate",
        growth.to_str().expect("path"),
        "--method",
        "mixed-euler",
        "--fast",
        "x",
        "--step",
        "0.1",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("singular"), "{err}");
}

/// CSV rows as numbers (after the header).
fn rows(csv: &str) -> Vec<Vec<f64>> {
    csv.lines()
        .skip(1)
        .map(|l| l.split(',').map(|v| v.parse().expect("number")).collect())
        .collect()
}

/// Each weak subsystem steps with its share of the partition: on SPEC §10's weak RC ladder
/// with C1.v fast and C2.v slow under mixed Euler, the left side is implicit Euler,
/// `(1 + a1 + a2) V_B' = V_B + a2 V_C + a1 E`, and the right side explicit Euler fed by the
/// current of R2 the left side published, `V_C' = (1 − b2 − b3) V_C + b2 V_B'`.
#[test]
fn weak_subsystems_step_with_their_share_of_the_partition() {
    let ([a1, a2, b2, b3], e) = simulate_support::ladder_coefficients(2.0, 3.0, 0.05);
    let (csv, err, code) = cli_support::simulate_csv(
        "weak_mixed",
        &[
            "simulate",
            "examples/rc_ladder_weak.mo",
            "-p",
            "R2.R=2",
            "-p",
            "C2.C=3",
            "--partition",
            "weak",
            "--method",
            "mixed-euler",
            "--fast",
            "C1.v",
            "--step",
            "0.05",
            "--stop",
            "2",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (mut vb, mut vc) = (0.0, 0.0);
    let rows = rows(&csv);
    assert_eq!(rows.len(), 41);
    for row in &rows[1..] {
        vb = (vb + a2 * vc + a1 * e) / (1.0 + a1 + a2);
        vc = (1.0 - b2 - b3) * vc + b2 * vb;
        assert!(
            (row[1] - vb).abs() < 1e-12 && (row[2] - vc).abs() < 1e-12,
            "{row:?} vs {vb} {vc}"
        );
    }
    // Every state fast is implicit Euler on each side, every state slow explicit Euler.
    for (fast, alone) in [("C1.v,C2.v", "implicit-euler"), ("", "euler")] {
        let mut mixed = vec![
            "simulate",
            "examples/rc_ladder_weak.mo",
            "--partition",
            "weak",
            "--step",
            "0.05",
        ];
        let mut single = mixed.clone();
        single.extend(["--method", alone]);
        if fast.is_empty() {
            // Cycle analysis of the split model: h̄ = 0.136 (C1.v) and 1.5 (C2.v), both
            // above the step, so nothing is fast.
            mixed.extend(["--method", "mixed-euler"]);
        } else {
            mixed.extend(["--method", "mixed-euler", "--fast", fast]);
        }
        let a = cli_support::simulate_csv("weak_mixed_a", &mixed);
        let b = cli_support::simulate_csv("weak_mixed_b", &single);
        assert_eq!((a.2, b.2), (0, 0), "{} {}", a.1, b.1);
        assert_eq!(a.0, b.0, "{fast}");
    }
}
