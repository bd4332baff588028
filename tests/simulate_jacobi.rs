//! `--partition weak` with the Jacobi exchange: its one-step map on the weak RC ladder of SPEC
//! §10, its stability limit beside Gauss–Seidel's, the same results on two threads as on one,
//! and the command line.
//!
//! # The Jacobi step of the weak RC ladder
//!
//! Left subsystem {R1, C1, R2}, state V_B, reads `last(C2.p.v)` = V_C of the previous step;
//! right subsystem {C2, R3}, state V_C, reads `last(R2.n.i)`, the current of R2 that the left
//! subsystem computed and published. With `a1 = Δt/(R1 C1)`, `a2 = Δt/(R2 C1)`,
//! `b2 = Δt/(R2 C2)`, `b3 = Δt/(R3 C2)` and implicit Euler on each side, a Jacobi step from
//! `k` to `k + 1` is
//!
//! - left: `(1 + a1 + a2) V_B⁺ = V_B + a2 V_C + a1 E`; evaluated at its new state it computes
//!   the current `i2⁺ = (V_B⁺ − V_C)/R2`, with the V_C it read (the previous step's);
//! - right, from what was published at the end of the previous step, `i2`:
//!   `C2 (V_C⁺ − V_C)/Δt = i2 − V_C⁺/R3`, i.e. `(1 + b3) V_C⁺ = V_C + b2 J` with `J = R2 i2`;
//! - then `i2⁺` is published: `J⁺ = V_B⁺ − V_C`.
//!
//! So the exchanged current is a third component of the state, `z = (V_B, V_C, J)`, and
//! `z⁺ = M z + f` with `p = 1/(1 + a1 + a2)`, `q = 1/(1 + b3)`:
//!
//! ```text
//!     | p          a2 p        0    |        | a1 p E |
//! M = | 0          q           b2 q |,   f = | 0      |
//!     | p    −(1 + a1) p       0    |        | a1 p E |
//! ```
//!
//! (`J⁺ = V_B⁺ − V_C = p (V_B + a2 V_C + a1 E) − V_C`, and `a2 p − 1 = −(1 + a1) p`.) Its
//! characteristic polynomial, expanding `det(λI − M)` along the first row and using
//! `p (1 + a1 + a2) = 1`, is
//!
//! `χ(λ) = λ³ − (p + q) λ² + p q (1 + b2 (1 + a1)) λ − b2 p q`.
//!
//! Gauss–Seidel (SPEC §10) reads the new current in the same step and needs no third
//! component: `G_L x⁺ = G_R x + f` with `G_L = [[1 + a1 + a2, 0], [−b2, 1 + b3]]`,
//! `G_R = [[1, a2], [0, 1 − b2]]`.
//!
//! Over SPEC §10's sweep (R1 = 0.1, C1 = 1, R3 = 1, C2 ∈ {1, 3, 10}, R2 ∈ [0.1, 10]) both
//! schemes are stable for every Δt from R2 = 1 on; below, each has a finite limit and Jacobi's
//! is about half of Gauss–Seidel's: R2 = 0.1, C2 = 1: 0.2212 against 0.4; R2 = 0.3, C2 = 3:
//! 1.982 against 3.920; R2 = 0.1, C2 = 10: 2.485 against 4.878.

mod cli_support;
mod simulate_support;

use std::ops::ControlFlow;

use cli_support::mocca;
use mocca::causal::initial_point;
use mocca::simulate::Stats;
use mocca::simulate::fixed_step::Method;
use mocca::simulate::init::initialise;
use mocca::simulate::model::{CompiledModel, Layout};
use mocca::simulate::partition::Partitioned;
use mocca::simulate::run::{Exchange, Failure, Options, Partition, Trajectory, simulate};
use mocca::structure::Unknown;
use simulate_support::{Loaded, example};

const R1: f64 = 0.1;
const C1: f64 = 1.0;
const R3: f64 = 1.0;
const E: f64 = 1.0;

/// `(a1, a2, b2, b3)` of the ladder.
fn coefficients(r2: f64, c2: f64, dt: f64) -> (f64, f64, f64, f64) {
    (
        dt / (R1 * C1),
        dt / (r2 * C1),
        dt / (r2 * c2),
        dt / (R3 * c2),
    )
}

/// The Jacobi step `z⁺ = M z + f` derived above, `z = (V_B, V_C, R2·i_R2)`.
fn jacobi_map(r2: f64, c2: f64, dt: f64) -> ([[f64; 3]; 3], [f64; 3]) {
    let (a1, a2, b2, b3) = coefficients(r2, c2, dt);
    let (p, q) = (1.0 / (1.0 + a1 + a2), 1.0 / (1.0 + b3));
    let m = [
        [p, a2 * p, 0.0],
        [0.0, q, b2 * q],
        [p, -(1.0 + a1) * p, 0.0],
    ];
    (m, [a1 * p * E, 0.0, a1 * p * E])
}

/// The coefficients `[c2, c1, c0]` of `χ(λ) = λ³ + c2 λ² + c1 λ + c0` derived above.
fn jacobi_characteristic(r2: f64, c2: f64, dt: f64) -> [f64; 3] {
    let (a1, a2, b2, b3) = coefficients(r2, c2, dt);
    let (p, q) = (1.0 / (1.0 + a1 + a2), 1.0 / (1.0 + b3));
    [-(p + q), p * q * (1.0 + b2 * (1.0 + a1)), -b2 * p * q]
}

/// The largest modulus of the roots of `λ² + e1 λ + e0`.
fn quadratic_radius(e1: f64, e0: f64) -> f64 {
    let disc = e1 * e1 - 4.0 * e0;
    if disc < 0.0 {
        return e0.sqrt();
    }
    ((-e1 + disc.sqrt()) / 2.0)
        .abs()
        .max(((-e1 - disc.sqrt()) / 2.0).abs())
}

/// The spectral radius of Jacobi's `M`: the cubic's real root (by bisection, it changes sign
/// over the Cauchy bound), the other two from the quadratic left after dividing it out.
fn jacobi_radius(r2: f64, c2: f64, dt: f64) -> f64 {
    let [k2, k1, k0] = jacobi_characteristic(r2, c2, dt);
    let chi = |l: f64| ((l + k2) * l + k1) * l + k0;
    let bound = 1.0 + k2.abs().max(k1.abs()).max(k0.abs());
    let (mut lo, mut hi) = (-bound, bound);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if chi(mid) < 0.0 { lo = mid } else { hi = mid }
    }
    let r = (lo + hi) / 2.0;
    // χ(λ) = (λ − r)(λ² + (k2 + r) λ + k1 + r (k2 + r)).
    r.abs().max(quadratic_radius(k2 + r, k1 + r * (k2 + r)))
}

/// The spectral radius of Gauss–Seidel's `G_L⁻¹ G_R` (SPEC §10), from its trace and determinant.
fn gauss_seidel_radius(r2: f64, c2: f64, dt: f64) -> f64 {
    let (a1, a2, b2, b3) = coefficients(r2, c2, dt);
    let (d, e) = (1.0 + a1 + a2, 1.0 + b3);
    // G_L⁻¹ = [[1/d, 0], [b2/(d e), 1/e]].
    let m11 = 1.0 / d;
    let m12 = a2 / d;
    let m21 = b2 / (d * e);
    let m22 = (b2 * a2 / d + 1.0 - b2) / e;
    quadratic_radius(-(m11 + m22), m11 * m22 - m12 * m21)
}

/// The smallest Δt where `radius` crosses 1 (a log scan from 10⁻⁴ to 10³, then bisection), or
/// `None` when it stays below 1 over the scan.
fn stability_limit(radius: impl Fn(f64) -> f64) -> Option<f64> {
    let grid = |k: i32| 1e-4 * 10f64.powf(f64::from(k) / 200.0);
    let k = (1..=1400).find(|&k| radius(grid(k)) > 1.0)?;
    let (mut lo, mut hi) = (grid(k - 1), grid(k));
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if radius(mid) > 1.0 {
            hi = mid
        } else {
            lo = mid
        }
    }
    Some(lo)
}

fn options(exchange: Exchange, method: Method, dt: f64, steps: u64) -> Options {
    Options {
        method,
        start: 0.0,
        stop: dt * steps as f64,
        steps,
        tol: 1e-13,
        partition: Partition::Weak,
        exchange,
        max_step: f64::INFINITY,
    }
}

fn ladder_model(r2: f64, c2: f64) -> Loaded {
    let (r2, c2) = (r2.to_string(), c2.to_string());
    example("rc_ladder_weak.mo", &[("R2.R", &r2), ("C2.C", &c2)])
}

/// The ladder simulated with `exchange`, recording `names`.
fn ladder(
    r2: f64,
    c2: f64,
    options: &Options,
    names: &[&str],
) -> (Loaded, Result<Trajectory, Failure>) {
    let m = ladder_model(r2, c2);
    let outputs: Vec<Unknown> = names
        .iter()
        .map(|n| Unknown::Algebraic(m.dae.lookup(n).unwrap_or_else(|| panic!("no {n}"))))
        .collect();
    let start = initial_point(&m.dae).expect("parameters");
    let r = simulate(m.model(), &start, options, &outputs, |_| {});
    (m, r)
}

#[test]
fn the_characteristic_polynomial_is_that_of_the_jacobi_matrix() {
    for (r2, c2, dt) in [(0.1, 1.0, 0.3), (5.0, 3.0, 0.4), (0.3, 10.0, 1.5)] {
        let (m, _) = jacobi_map(r2, c2, dt);
        let [k2, k1, k0] = jacobi_characteristic(r2, c2, dt);
        for l in [-1.3, -0.2, 0.0, 0.7, 2.0] {
            let a = |i: usize, j: usize| f64::from(u8::from(i == j)) * l - m[i][j];
            let det = a(0, 0) * (a(1, 1) * a(2, 2) - a(1, 2) * a(2, 1))
                - a(0, 1) * (a(1, 0) * a(2, 2) - a(1, 2) * a(2, 0))
                + a(0, 2) * (a(1, 0) * a(2, 1) - a(1, 1) * a(2, 0));
            let chi = ((l + k2) * l + k1) * l + k0;
            assert!((det - chi).abs() < 1e-12, "λ = {l}: det {det}, χ {chi}");
        }
    }
}

#[test]
fn a_jacobi_step_of_the_weak_rc_ladder_is_the_derived_three_component_map() {
    for (r2, c2, dt) in [
        (1.0, 1.0, 0.05),
        (5.0, 3.0, 0.4),
        (0.3, 10.0, 1.5),
        (0.1, 1.0, 0.02),
    ] {
        let options = options(Exchange::Jacobi, Method::ImplicitEuler, dt, 8);
        let (m, r) = ladder(r2, c2, &options, &["C1.v", "C2.v", "R2.i"]);
        let r = r.expect("simulates");
        assert_eq!(m.structure.subsystems.len(), 2);
        let z = |k: usize| [r.columns[0][k], r.columns[1][k], r2 * r.columns[2][k]];
        let (map, f) = jacobi_map(r2, c2, dt);
        let mut moved = false;
        for k in 1..r.times.len() {
            let (before, got) = (z(k - 1), z(k));
            for i in 0..3 {
                let want: f64 = (0..3).map(|j| map[i][j] * before[j]).sum::<f64>() + f[i];
                assert!(
                    (got[i] - want).abs() <= 1e-12 * (1.0 + want.abs()),
                    "R2={r2} C2={c2} dt={dt} step {k}: mocca {got:?}, M z + f component {i} {want}"
                );
                moved |= got[i] != before[i];
            }
        }
        assert!(moved, "the run goes somewhere");
    }
}

/// The largest distance from the steady state of the ladder over the run (infinite when the
/// run failed or overflowed).
fn largest_deviation(r2: f64, c2: f64, exchange: Exchange, dt: f64, steps: u64) -> (f64, f64) {
    let options = options(exchange, Method::ImplicitEuler, dt, steps);
    let (_, r) = ladder(r2, c2, &options, &["C1.v", "C2.v"]);
    let Ok(r) = r else {
        return (f64::INFINITY, f64::INFINITY);
    };
    let i = E / (R1 + r2 + R3);
    let steady = [E - R1 * i, R3 * i];
    let deviation = |k: usize| {
        let d = (0..2).map(|c| (r.columns[c][k] - steady[c]).abs());
        d.fold(0.0, f64::max)
    };
    let peak = (0..r.times.len()).map(deviation).fold(0.0, f64::max);
    let last = deviation(r.times.len() - 1);
    if peak.is_nan() {
        return (f64::INFINITY, f64::INFINITY);
    }
    (peak, last)
}

#[test]
fn jacobi_and_gauss_seidel_are_stable_below_their_limits_and_grow_above() {
    let steps = 400;
    // Where both limits are finite: (R2, C2, Jacobi's limit, Gauss–Seidel's limit).
    for (r2, c2, jacobi_expected, gs_expected) in [
        (0.1, 1.0, 0.2212, 0.4),
        (0.3, 3.0, 1.982, 3.920),
        (0.1, 10.0, 2.485, 4.878),
    ] {
        let jacobi = stability_limit(|dt| jacobi_radius(r2, c2, dt)).expect("a Jacobi limit");
        let gs = stability_limit(|dt| gauss_seidel_radius(r2, c2, dt)).expect("a G–S limit");
        assert!(
            (jacobi / jacobi_expected - 1.0).abs() < 1e-3 && (gs / gs_expected - 1.0).abs() < 1e-3,
            "R2={r2} C2={c2}: limits {jacobi} (Jacobi), {gs} (Gauss–Seidel)"
        );
        for (exchange, limit, radius) in [
            (
                Exchange::Jacobi,
                jacobi,
                &jacobi_radius as &dyn Fn(f64, f64, f64) -> f64,
            ),
            (Exchange::GaussSeidel, gs, &gauss_seidel_radius),
        ] {
            let (below, above) = (0.8 * limit, 1.25 * limit);
            assert!(radius(r2, c2, below) < 1.0 && radius(r2, c2, above) > 1.0);
            let (peak, last) = largest_deviation(r2, c2, exchange, below, steps);
            assert!(
                peak < 2.0 && last < 1e-6,
                "{exchange:?} R2={r2} C2={c2} at 0.8 × its limit {limit}: peak {peak}, last {last}"
            );
            let (peak, _) = largest_deviation(r2, c2, exchange, above, steps);
            assert!(
                peak > 1e6,
                "{exchange:?} R2={r2} C2={c2} at 1.25 × its limit {limit}: peak {peak}"
            );
        }
        // Between the two limits Gauss–Seidel decays where Jacobi grows.
        let between = 1.25 * jacobi;
        assert!(between < 0.8 * gs);
        let (_, last) = largest_deviation(r2, c2, Exchange::GaussSeidel, between, steps);
        assert!(
            last < 1e-6,
            "R2={r2} C2={c2}: Gauss–Seidel at {between}: {last}"
        );
    }
    // From R2 = 1 on both are stable for every step (none crosses 1 up to Δt = 1000).
    for c2 in [1.0, 3.0, 10.0] {
        for r2 in [1.0, 3.0, 10.0] {
            assert_eq!(stability_limit(|dt| jacobi_radius(r2, c2, dt)), None);
            assert_eq!(stability_limit(|dt| gauss_seidel_radius(r2, c2, dt)), None);
        }
    }
}

/// Every variable and derivative the model passed to `record` holds after each step, as bits,
/// and the counters: a Jacobi run on one thread or, with `threads`, on two.
fn jacobi_run(m: &Loaded, options: &Options, threads: bool) -> (Vec<Vec<u64>>, Stats) {
    let start = initial_point(&m.dae).expect("parameters");
    let whole = Layout::whole(&m.causal);
    let mut model = CompiledModel::new(&m.dae, &m.causal, &m.jac, &start, &whole);
    model.enter_interval_from(options.start);
    let (x, _) = initialise(&m.dae, &m.causal, &mut model, options.start).expect("initialises");
    let point = model.point();
    let model = (&m.dae, &m.structure, &m.causal, &m.jac);
    let mut split = Partitioned::new(model, &point, options, None, threads);
    let mut points = Vec::new();
    let record = |model: &CompiledModel, t: f64| {
        let p = model.point();
        let values = p.vars.iter().chain(&p.ders).chain([&t]);
        points.push(values.map(|x| x.to_bits()).collect());
        ControlFlow::Continue(())
    };
    split
        .run(options, &x, record, &mut |_| {})
        .expect("simulates");
    (points, split.stats())
}

/// Three RC stages joined by two weak connections: three subsystems, the middle one reading
/// both others.
const THREE_STAGES: &str = "
model ThreeStages
  Mocca.Electrical.ConstantVoltage E(V = 1);
  Mocca.Electrical.Resistor R1(R = 0.1);
  Mocca.Electrical.Capacitor C1(C = 1, v(fixed = true));
  Mocca.Electrical.Resistor R2(R = 0.5);
  Mocca.Electrical.Capacitor C2(C = 2, v(fixed = true));
  Mocca.Electrical.Resistor R3(R = 0.7);
  Mocca.Electrical.Capacitor C3(C = 3, v(fixed = true));
  Mocca.Electrical.Resistor R4(R = 1);
  Mocca.Electrical.Ground ground;
equation
  connect(E.p, R1.p);
  connect(R1.n, C1.p);
  connect(C1.p, R2.p);
  connect(R2.n(weak v), C2.p(weak i));
  connect(C2.p, R3.p);
  connect(R3.n(weak v), C3.p(weak i));
  connect(C3.p, R4.p);
  connect(E.n, ground.p);
  connect(C1.n, ground.p);
  connect(C2.n, ground.p);
  connect(C3.n, ground.p);
  connect(R4.n, ground.p);
end ThreeStages;";

#[test]
fn jacobi_on_two_threads_is_jacobi_on_one_bit_for_bit() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("one processor: the threaded run is the sequential one");
    }
    let power_shaft = example("power_shaft.mo", &[]);
    let ladder = ladder_model(0.3, 3.0);
    let stages = simulate_support::inline(THREE_STAGES);
    for (name, m, dt, subsystems) in [
        ("power_shaft", &power_shaft, 1e-3, 2),
        ("ladder", &ladder, 0.1, 2),
        ("three stages", &stages, 0.1, 3),
    ] {
        assert_eq!(m.structure.subsystems.len(), subsystems, "{name}");
        for method in [Method::ImplicitEuler, Method::Heun, Method::Trapezoidal] {
            let options = options(Exchange::Jacobi, method, dt, 500);
            let (one, one_stats) = jacobi_run(m, &options, false);
            let (two, two_stats) = jacobi_run(m, &options, true);
            assert_eq!(one.len(), 501);
            assert_eq!(one_stats, two_stats, "{name} {method:?}");
            for (k, (a, b)) in one.iter().zip(&two).enumerate() {
                assert!(
                    a == b,
                    "{name} {method:?}: the recorded values differ at step {k}"
                );
            }
            let gs = options_with(&options, Exchange::GaussSeidel);
            let (gs, _) = jacobi_run(m, &gs, false);
            // In the power shaft the torque the generator sends the shaft is an output block:
            // Gauss–Seidel computes it from the angle just published, Jacobi from the angle
            // the generator was given (the previous step's), as its own integrator would.
            assert!(gs != one, "{name} {method:?}: Jacobi ran as Gauss–Seidel");
        }
    }
}

fn options_with(options: &Options, exchange: Exchange) -> Options {
    Options {
        exchange,
        ..*options
    }
}

#[test]
fn the_command_line_takes_the_exchange_with_partition_weak_only() {
    let ladder = "examples/rc_ladder_weak.mo";
    let (_, stderr, code) = mocca(&["simulate", ladder, "--exchange", "jacobi"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("`--exchange jacobi` needs `--partition weak`"),
        "{stderr}"
    );
    let weak = ["simulate", ladder, "--partition", "weak", "--step", "0.1"];
    let (text, stderr, code) = mocca(&[&weak[..], &["--exchange", "jacobi"]].concat());
    assert_eq!(code, 0, "{stderr}");
    assert!(text.contains("exchange: jacobi, 2 subsystems"), "{text}");
    for (extra, name) in [
        (&[][..], "gauss-seidel"),
        (&["--exchange", "jacobi"][..], "jacobi"),
    ] {
        let args = [&weak[..], extra, &["--format", "json"]].concat();
        let (json, stderr, code) = mocca(&args);
        assert_eq!(code, 0, "{stderr}");
        let value: serde_json::Value = serde_json::from_str(&json).expect("JSON");
        assert_eq!(value["exchange"], name, "{json}");
    }
    let (json, _, _) = mocca(&["simulate", ladder, "--format", "json"]);
    let value: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert!(value.get("exchange").is_none(), "one system: {json}");
}
