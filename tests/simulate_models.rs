//! Simulation of the shipped examples: the quarter car starts at rest and crosses its curb;
//! the weak RC ladder reproduces SPEC §10's one-step matrix and its stability boundary.

mod simulate_support;

use mocca::causal::initial_point;
use mocca::simulate::fixed_step::Method;
use mocca::simulate::run::{Exchange, Options, Partition, Trajectory, simulate};
use mocca::structure::Unknown;
use simulate_support::{Loaded, example};

fn run(m: &Loaded, options: &Options, outputs: &[Unknown]) -> Trajectory {
    let start = initial_point(&m.dae).expect("parameters");
    simulate(m.model(), &start, options, outputs, |_| {}).expect("simulates")
}

fn var(m: &Loaded, name: &str) -> mocca::expr::VarId {
    m.dae.lookup(name).unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn quarter_car_starts_at_rest_and_crosses_the_curb() {
    let m = example("quarter_car.mo", &[]);
    let (v_s, v_t) = (var(&m, "v_s"), var(&m, "v_t"));
    let (x_s, x_t, x_r) = (var(&m, "x_s"), var(&m, "x_t"), var(&m, "x_r"));
    let outputs = [
        Unknown::Derivative(v_s),
        Unknown::Derivative(v_t),
        Unknown::Algebraic(x_s),
        Unknown::Algebraic(x_t),
        Unknown::Algebraic(x_r),
    ];
    let options = Options {
        method: Method::Trapezoidal,
        start: 0.0,
        stop: 3.0,
        steps: 3000,
        tol: 1e-10,
        partition: Partition::None,
        exchange: Exchange::GaussSeidel,
        max_step: f64::INFINITY,
    };
    let r = run(&m, &options, &outputs);
    // Steady state: the accelerations vanish at t = 0 and the springs carry the weights.
    assert!(
        r.columns[0][0].abs() < 1e-8,
        "der(v_s)(0) = {}",
        r.columns[0][0]
    );
    assert!(
        r.columns[1][0].abs() < 1e-8,
        "der(v_t)(0) = {}",
        r.columns[1][0]
    );
    assert!(r.columns.iter().flatten().all(|x| x.is_finite()), "no NaN");
    // Suspension deflection x_s − x_t: at rest before the curb (t < 1) it is the static one;
    // during the curb it changes; by t = 3 it has swung back toward the static value.
    let deflection = |k: usize| r.columns[2][k] - r.columns[3][k];
    let at = |t: f64| {
        r.times
            .iter()
            .position(|&s| s >= t - 1e-9)
            .expect("time on grid")
    };
    let rest = deflection(0);
    assert!(
        (deflection(at(0.9)) - rest).abs() < 1e-9,
        "still at rest before the curb"
    );
    let swing = (at(1.0)..at(2.0))
        .map(|k| (deflection(k) - rest).abs())
        .fold(0.0, f64::max);
    assert!(
        swing > 1e-3,
        "the curb moves the suspension (swing {swing})"
    );
    assert!(
        (r.columns[4][at(3.0)] - 0.2).abs() < 1e-6,
        "the road rose by 0.2 m"
    );
    assert!(
        (deflection(at(3.0)) - rest).abs() < 0.5 * swing,
        "the deflection returns: {} vs rest {rest}, swing {swing}",
        deflection(at(3.0))
    );
}

/// The left/right implicit Euler update of SPEC §10: `G_L x' = G_R x + f`.
fn spec_map(r2: f64, c2: f64, dt: f64) -> ([[f64; 2]; 2], [[f64; 2]; 2], [f64; 2]) {
    let ([a1, a2, b2, b3], e) = simulate_support::ladder_coefficients(r2, c2, dt);
    let gl = [[1.0 + a1 + a2, 0.0], [-b2, 1.0 + b3]];
    let gr = [[1.0, a2], [0.0, 1.0 - b2]];
    (gl, gr, [a1 * e, 0.0])
}

/// `G_L⁻¹ (G_R x + f)` (G_L is lower triangular).
fn spec_step(gl: &[[f64; 2]; 2], gr: &[[f64; 2]; 2], f: &[f64; 2], x: [f64; 2]) -> [f64; 2] {
    let b0 = gr[0][0] * x[0] + gr[0][1] * x[1] + f[0];
    let b1 = gr[1][0] * x[0] + gr[1][1] * x[1] + f[1];
    let y0 = b0 / gl[0][0];
    [y0, (b1 - gl[1][0] * y0) / gl[1][1]]
}

/// Spectral radius of `G_L⁻¹ G_R`.
fn spectral_radius(gl: &[[f64; 2]; 2], gr: &[[f64; 2]; 2]) -> f64 {
    let c0 = spec_step(gl, gr, &[0.0, 0.0], [1.0, 0.0]);
    let c1 = spec_step(gl, gr, &[0.0, 0.0], [0.0, 1.0]);
    let (a, b, c, d) = (c0[0], c1[0], c0[1], c1[1]);
    let (tr, det) = (a + d, a * d - b * c);
    let disc = tr * tr / 4.0 - det;
    if disc >= 0.0 {
        (tr / 2.0 + disc.sqrt())
            .abs()
            .max((tr / 2.0 - disc.sqrt()).abs())
    } else {
        det.sqrt()
    }
}

fn weak_ladder(r2: f64, c2: f64, dt: f64, steps: u64) -> (Loaded, Trajectory) {
    let (r2s, c2s) = (r2.to_string(), c2.to_string());
    let m = example("rc_ladder_weak.mo", &[("R2.R", &r2s), ("C2.C", &c2s)]);
    let outputs = [
        Unknown::Algebraic(var(&m, "C1.v")),
        Unknown::Algebraic(var(&m, "C2.v")),
    ];
    let options = Options {
        method: Method::ImplicitEuler,
        start: 0.0,
        stop: dt * steps as f64,
        steps,
        tol: 1e-13,
        partition: Partition::Weak,
        exchange: Exchange::GaussSeidel,
        max_step: f64::INFINITY,
    };
    let r = run(&m, &options, &outputs);
    (m, r)
}

#[test]
fn weak_rc_ladder_reproduces_the_spec_one_step_map() {
    for (r2, c2, dt) in [
        (1.0, 1.0, 0.05),
        (5.0, 3.0, 0.4),
        (0.3, 10.0, 1.5),
        (0.1, 1.0, 0.02),
    ] {
        let (m, r) = weak_ladder(r2, c2, dt, 8);
        assert_eq!(m.structure.subsystems.len(), 2);
        let (gl, gr, f) = spec_map(r2, c2, dt);
        let mut x = [0.0, 0.0];
        for k in 1..r.times.len() {
            x = spec_step(&gl, &gr, &f, x);
            let got = [r.columns[0][k], r.columns[1][k]];
            for i in 0..2 {
                assert!(
                    (got[i] - x[i]).abs() <= 1e-12 * (1.0 + x[i].abs()),
                    "R2={r2} C2={c2} dt={dt} step {k}: mocca {got:?}, G_L⁻¹(G_R x + f) {x:?}"
                );
            }
        }
    }
}

#[test]
fn weak_rc_ladder_is_bounded_exactly_when_the_spectral_radius_is_below_one() {
    let mut stable = 0;
    let mut unstable = 0;
    for c2 in [1.0, 3.0, 10.0] {
        for r2 in [0.1, 0.3, 1.0, 3.0, 10.0] {
            for dt in [0.05, 0.3, 1.0, 3.0, 10.0] {
                let (gl, gr, _) = spec_map(r2, c2, dt);
                let rho = spectral_radius(&gl, &gr);
                // Stay clear of the boundary, where growth is too slow to see.
                if (rho - 1.0).abs() < 0.05 {
                    continue;
                }
                let (_, r) = weak_ladder(r2, c2, dt, 400);
                let peak = r
                    .columns
                    .iter()
                    .flatten()
                    .map(|x| x.abs())
                    .fold(0.0, f64::max);
                let bounded = peak.is_finite() && peak < 10.0;
                assert_eq!(
                    bounded,
                    rho < 1.0,
                    "R2={r2} C2={c2} dt={dt}: ρ={rho}, peak {peak}"
                );
                if bounded {
                    stable += 1;
                } else {
                    unstable += 1;
                }
            }
        }
    }
    assert!(
        stable > 5 && unstable > 5,
        "the sweep crosses the boundary ({stable}/{unstable})"
    );
}

/// x = e^(−t), read through an eliminated alias `y`: `y > 0.5` first fails on the step grid at
/// the first t_k with e^(−t_k) ≤ 0.5, i.e. after ln 2 = 0.693; the warning at x ≤ 0.8 (t ≥ 0.223)
/// is noted without stopping the run.
const DECAY_WITH_ASSERTS: &str = "
model Decay
  Real x(start = 1, fixed = true);
  Real y;
equation
  der(x) = -x;
  y = x;
  assert(y > 0.5, \"x has decayed below one half\");
  assert(x > 0.8, \"x below 0.8\", AssertionLevel.warning);
end Decay;";

#[test]
fn a_false_assert_stops_the_run_at_the_first_point_it_fails_and_warnings_do_not() {
    use mocca::simulate::run::{Failure, simulate_bdf};
    let m = simulate_support::inline(DECAY_WITH_ASSERTS);
    let start = initial_point(&m.dae).expect("parameters");
    let until = |stop: f64| Options {
        method: Method::Trapezoidal,
        start: 0.0,
        stop,
        steps: (stop * 100.0).round() as u64,
        tol: 1e-10,
        partition: Partition::None,
        exchange: Exchange::GaussSeidel,
        max_step: f64::INFINITY,
    };
    // Up to 0.6 the error-level assert holds; the warning fired first at t = 0.23.
    let ok = simulate(m.model(), &start, &until(0.6), &[], |_| {}).expect("holds up to 0.6");
    assert_eq!(ok.warnings.len(), 1);
    let (k, t) = ok.warnings[0];
    assert_eq!(m.dae.assertions[k].message, "x below 0.8");
    assert!((t - 0.23).abs() < 1e-9, "{t}");
    for (options, simulate_with) in [
        (until(1.0), "fixed step"),
        (
            Options {
                tol: 1e-8,
                ..until(1.0)
            },
            "bdf",
        ),
        (
            Options {
                partition: Partition::Weak,
                exchange: Exchange::GaussSeidel,
                max_step: f64::INFINITY,
                ..until(1.0)
            },
            "weak partition",
        ),
    ] {
        let result = if simulate_with == "bdf" {
            simulate_bdf(m.model(), &start, &options, &[])
        } else {
            simulate(m.model(), &start, &options, &[], |_| {})
        };
        match result {
            Err(Failure::Assertion(v)) => {
                assert_eq!(
                    m.dae.assertions[v.assertion].message,
                    "x has decayed below one half"
                );
                assert!((v.time - 0.7).abs() < 1e-9, "{simulate_with}: {}", v.time);
            }
            other => panic!("{simulate_with}: expected an assertion failure, got {other:?}"),
        }
    }
}

const SQRT_OF_NEGATIVE: &str = "model NF
  Real x(start = 1, fixed = true);
  Real a;
  Real b;
  Real c;
equation
  a = x + 1;
  b = sqrt(x - 0.5);
  c = b * 2 + a;
  der(x) = -c;
end NF;";

/// Once `x` falls below 0.5, `b` and everything after it is NaN: the failure names `b`'s step,
/// the first to produce one, not `c` or `der(x)` (the evaluation runs straight-line code in
/// batches and must still report the first step of the batch that failed).
#[test]
fn a_nan_is_reported_at_the_first_step_that_produces_it() {
    use mocca::causal::{EvalFailure, Step};
    use mocca::simulate::bdf::BdfError;
    use mocca::simulate::fixed_step::StepFailure;
    use mocca::simulate::run::{Failure, simulate_bdf};
    let m = simulate_support::inline(SQRT_OF_NEGATIVE);
    let start = initial_point(&m.dae).expect("parameters");
    let options = Options {
        method: Method::Trapezoidal,
        start: 0.0,
        stop: 1.0,
        steps: 100,
        tol: 1e-8,
        partition: Partition::None,
        exchange: Exchange::GaussSeidel,
        max_step: f64::INFINITY,
    };
    let b = Unknown::Algebraic(var(&m, "b"));
    let solves_b = |k: usize| match &m.causal.steps[k] {
        Step::Assign { target, .. } | Step::Newton { target, .. } => *target == b,
        _ => false,
    };
    // x(t) = 1 − … falls to 0.5 near t = 0.19.
    let (failure, time) = match simulate(m.model(), &start, &options, &[], |_| {}) {
        Err(Failure::Step(StepFailure::Eval { failure, t })) => (failure, t),
        other => panic!("fixed step: expected a NaN, got {other:?}"),
    };
    assert!(
        matches!(failure, EvalFailure::NotFinite(k) if solves_b(k)),
        "{failure:?}"
    );
    assert!((0.15..0.25).contains(&time), "{time}");
    match simulate_bdf(m.model(), &start, &options, &[]) {
        Err(Failure::Bdf(BdfError::Model { time, failure })) => {
            assert!(
                matches!(failure, EvalFailure::NotFinite(k) if solves_b(k)),
                "{failure:?}"
            );
            assert!((0.15..0.25).contains(&time), "{time}");
        }
        other => panic!("bdf: expected a NaN, got {other:?}"),
    }
}
