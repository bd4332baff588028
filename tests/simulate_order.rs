//! Each fixed-step method shows its theoretical order (1, 2, 2, 1, 2, 2) on a damped
//! oscillator with a known solution: halving h divides the error at t = 2 by about 2^p.

mod simulate_support;

use mocca::causal::initial_point;
use mocca::simulate::fixed_step::Method;
use mocca::simulate::run::{Exchange, Options, Partition, simulate};
use mocca::structure::Unknown;
use simulate_support::inline;

const OSCILLATOR: &str = "model Oscillator
  parameter Real w = 2;
  parameter Real z = 0.1;
  Real x(start = 1, fixed = true);
  Real v(start = 0, fixed = true);
equation
  der(x) = v;
  der(v) = -w*w*x - 2*z*w*v;
end Oscillator;";

/// x(t) and v(t) of `x'' + 2ζω x' + ω² x = 0`, `x(0) = 1`, `v(0) = 0`.
fn exact(t: f64) -> (f64, f64) {
    let (w, z) = (2.0f64, 0.1f64);
    let wd = w * (1.0 - z * z).sqrt();
    let decay = (-z * w * t).exp();
    let x = decay * ((wd * t).cos() + z * w / wd * (wd * t).sin());
    let v = -decay * (w * w / wd) * (wd * t).sin();
    (x, v)
}

fn error(method: Method, steps: u64) -> f64 {
    let m = inline(OSCILLATOR);
    let start = initial_point(&m.dae).expect("parameters");
    let x = m.dae.lookup("x").expect("x");
    let v = m.dae.lookup("v").expect("v");
    let options = Options {
        method,
        start: 0.0,
        stop: 2.0,
        steps,
        tol: 1e-13,
        partition: Partition::None,
        exchange: Exchange::GaussSeidel,
        max_step: f64::INFINITY,
    };
    let outputs = [Unknown::Algebraic(x), Unknown::Algebraic(v)];
    let run = simulate(m.model(), &start, &options, &outputs, |_| {}).expect("simulates");
    let (xe, ve) = exact(2.0);
    let last = run.times.len() - 1;
    assert!((run.times[last] - 2.0).abs() < 1e-12);
    (run.columns[0][last] - xe)
        .abs()
        .max((run.columns[1][last] - ve).abs())
}

#[test]
fn every_method_has_its_order() {
    for method in Method::ALL {
        let errors: Vec<f64> = [100, 200, 400].iter().map(|&n| error(method, n)).collect();
        for pair in errors.windows(2) {
            let observed = (pair[0] / pair[1]).log2();
            let expected = method.order() as f64;
            assert!(
                (observed - expected).abs() < 0.15,
                "{}: observed order {observed:.3}, expected {expected} (errors {errors:?})",
                method.name()
            );
        }
    }
}

/// A pendulum: the same shape as the oscillator, but `∂f/∂x` depends on x.
const PENDULUM: &str = "model Pendulum
  parameter Real g = 9.81;
  Real phi(start = 1, fixed = true);
  Real w(start = 0, fixed = true);
equation
  der(phi) = w;
  der(w) = -g*sin(phi) - 0.1*w;
end Pendulum;";

/// Linear but time-varying: `∂f/∂x = −(1 + t)`.
const TIME_VARYING: &str = "model Decay
  Real x(start = 1, fixed = true);
equation
  der(x) = -(1 + time)*x;
end Decay;";

fn run_implicit(model: &str, method: Method) -> mocca::simulate::system::Stats {
    let m = inline(model);
    let start = initial_point(&m.dae).expect("parameters");
    let options = Options {
        method,
        start: 0.0,
        stop: 1.0,
        steps: 50,
        tol: 1e-10,
        partition: Partition::None,
        exchange: Exchange::GaussSeidel,
        max_step: f64::INFINITY,
    };
    let run = simulate(m.model(), &start, &options, &[], |_| {}).expect("simulates");
    assert_eq!(run.stats.steps, 50);
    run.stats
}

#[test]
fn implicit_methods_factor_a_constant_jacobian_once_and_converge_in_few_iterations() {
    for method in [
        Method::ImplicitEuler,
        Method::ImplicitMidpoint,
        Method::Trapezoidal,
    ] {
        let stats = run_implicit(OSCILLATOR, method);
        // Linear: ∂f/∂x holds parameters only, so one evaluation and one factorization serve
        // all 50 steps.
        assert_eq!(stats.jac_evals, 1, "{}", method.name());
        assert_eq!(stats.factorizations, 1, "{}", method.name());
        // Exact Jacobian: Newton converges in one correction. The first step checks that by a
        // second iteration whose correction is zero; the contraction it shows on the
        // factorization lets every later step stop after its first.
        assert_eq!(stats.newton_iters, 51, "{}", method.name());
        let extra = if method == Method::Trapezoidal { 50 } else { 0 };
        assert_eq!(stats.f_evals, 51 + extra, "{}", method.name());
        // Nonlinear, or varying with time: a fresh Jacobian every step, and each fresh
        // factorization's contraction measured again (at least two iterations).
        for model in [PENDULUM, TIME_VARYING] {
            let stats = run_implicit(model, method);
            assert_eq!(stats.jac_evals, 50, "{}", method.name());
            assert_eq!(stats.factorizations, 50, "{}", method.name());
            assert!(stats.newton_iters >= 100, "{}", method.name());
        }
    }
}
