//! Mixed-mode integration (SPEC §10): one step of each mixed method on `der(x) = A x` against
//! the closed forms, the all-slow and all-fast partitions against the explicit and implicit
//! methods bit for bit, the orders of convergence, and `mocca simulate --fast`.

mod cli_support;
mod simulate_support;

use cli_support::{mocca, mocca_json as json, model_file, simulate_csv};
use mocca::causal::initial_point;
use mocca::partition::{MixedMethod, Partition as Levels};
use mocca::simulate::Stats;
use mocca::simulate::fixed_step::{FixedStep, Method, Stepper};
use mocca::simulate::mixed::MixedStepper;
use mocca::simulate::run::{Exchange, Options, Partition, Trajectory, simulate, simulate_mixed};
use mocca::structure::Unknown;
use nalgebra::{DMatrix, DVector};
use proptest::prelude::*;
use simulate_support::{Linear, Loaded, inline};

/// The states a selector marks fast (`true`).
fn fast_indices(fast: &[bool]) -> Vec<usize> {
    (0..fast.len()).filter(|&i| fast[i]).collect()
}

/// `P`: the diagonal selector of the slow states (1 where `fast` is false).
fn slow_selector(fast: &[bool]) -> DMatrix<f64> {
    DMatrix::from_diagonal(&DVector::from_iterator(
        fast.len(),
        fast.iter().map(|&f| if f { 0.0 } else { 1.0 }),
    ))
}

/// One step of `method` from `x0` by the SPEC's closed form, with `P` selecting the slow
/// states: `(I − h P̄ A) x₁ = (I + h P A) x₀` for Euler, `(I − (h/2) P̄ A) x₁ = (I + (h/2)(I +
/// P) A + (h²/2)(P A)²) x₀` for midpoint and trapezoidal.
fn closed_form(
    method: MixedMethod,
    a: &DMatrix<f64>,
    fast: &[bool],
    h: f64,
    x0: &[f64],
) -> Vec<f64> {
    let n = a.nrows();
    let id = DMatrix::<f64>::identity(n, n);
    let p = slow_selector(fast);
    let p_bar = &id - &p;
    let pa = &p * a;
    let (lhs, rhs) = match method {
        MixedMethod::Euler => (&id - h * &p_bar * a, &id + h * &pa),
        MixedMethod::Midpoint | MixedMethod::Trapezoidal => (
            &id - (h / 2.0) * &p_bar * a,
            &id + (h / 2.0) * (&id + &p) * a + (h * h / 2.0) * &pa * &pa,
        ),
    };
    let b = rhs * DVector::from_column_slice(x0);
    lhs.lu()
        .solve(&b)
        .expect("I − γ P̄ A is regular")
        .as_slice()
        .to_vec()
}

/// `der(x) = A x + c + t d`: a linear system driven by inputs affine in time.
struct Affine {
    linear: Linear,
    c: DVector<f64>,
    d: DVector<f64>,
}

impl mocca::simulate::OdeSystem for Affine {
    fn dim(&self) -> usize {
        self.c.len()
    }
    fn rhs(&mut self, t: f64, x: &[f64], dx: &mut [f64]) -> Result<(), mocca::causal::EvalFailure> {
        self.linear.rhs(t, x, dx)?;
        for (i, v) in dx.iter_mut().enumerate() {
            *v += self.c[i] + t * self.d[i];
        }
        Ok(())
    }
    fn jacobian_pattern(&self) -> &[(usize, usize)] {
        self.linear.jacobian_pattern()
    }
    fn jacobian(
        &mut self,
        t: f64,
        x: &[f64],
        v: &mut [f64],
    ) -> Result<(), mocca::causal::EvalFailure> {
        self.linear.jacobian(t, x, v)
    }
    fn jacobian_is_constant(&self) -> bool {
        true
    }
}

/// The affine terms the inputs `b(t) = c + t d` add to the closed form of one step from `t0`
/// (derived from the methods' definitions as SPEC §10's linear case is): Euler
/// `h P b(t0) + h P̄ b(t0 + h)`; midpoint `h b(t0 + h/2) + (h²/2) P A P b(t0)`; trapezoidal
/// `(h/2)(b(t0) + b(t0 + h)) + (h²/2) P A P b(t0)`.
fn input_terms(
    method: MixedMethod,
    (a, fast): (&DMatrix<f64>, &[bool]),
    (c, d): (&DVector<f64>, &DVector<f64>),
    (t0, h): (f64, f64),
) -> DVector<f64> {
    let n = a.nrows();
    let p = slow_selector(fast);
    let p_bar = DMatrix::<f64>::identity(n, n) - &p;
    let b = |t: f64| c + t * d;
    let pap = &p * a * &p;
    match method {
        MixedMethod::Euler => h * &p * b(t0) + h * &p_bar * b(t0 + h),
        MixedMethod::Midpoint => h * b(t0 + h / 2.0) + (h * h / 2.0) * &pap * b(t0),
        MixedMethod::Trapezoidal => (h / 2.0) * (b(t0) + b(t0 + h)) + (h * h / 2.0) * &pap * b(t0),
    }
}

fn mixed_step(
    method: MixedMethod,
    a: &DMatrix<f64>,
    fast: &[bool],
    h: f64,
    x0: &[f64],
) -> Vec<f64> {
    let mut system = Linear::new(a.clone());
    let split = Levels::two_level(method, a.nrows(), fast_indices(fast), 1);
    let mut stepper = MixedStepper::new(split, 1e-13, &system);
    let mut x = x0.to_vec();
    stepper.step(&mut system, 0.0, h, &mut x).expect("steps");
    x
}

/// A random `n × n` matrix with entries in [-2, 2], each diagonal entry then shifted down by
/// its row's off-diagonal magnitudes plus 1/2 (so every principal block `A_FF` is strictly
/// diagonally dominant with a negative diagonal and `I − γ A_FF` is regular), a selector and a
/// start.
fn linear_case() -> impl Strategy<Value = (DMatrix<f64>, Vec<bool>, Vec<f64>)> {
    (2usize..=6).prop_flat_map(|n| {
        (
            prop::collection::vec(-2.0f64..2.0, n * n),
            prop::collection::vec(any::<bool>(), n),
            prop::collection::vec(-1.0f64..1.0, n),
        )
            .prop_map(move |(entries, fast, x0)| {
                let mut a = DMatrix::from_row_slice(n, n, &entries);
                for i in 0..n {
                    let off: f64 = (0..n).filter(|&j| j != i).map(|j| a[(i, j)].abs()).sum();
                    a[(i, i)] -= off + 0.5 + a[(i, i)].abs();
                }
                (a, fast, x0)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn one_mixed_step_equals_the_closed_form(
        (a, fast, x0) in linear_case(),
        h in 0.01f64..0.5,
    ) {
        for method in MixedMethod::ALL {
            let stepped = mixed_step(method, &a, &fast, h, &x0);
            let exact = closed_form(method, &a, &fast, h, &x0);
            let scale = exact.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for (s, e) in stepped.iter().zip(&exact) {
                prop_assert!(
                    (s - e).abs() <= 1e-10 * scale,
                    "{}: {stepped:?} vs {exact:?}",
                    method.name()
                );
            }
        }
    }

    /// With inputs: `(I − γ P̄ A) x₁` is the closed form's right-hand side plus the affine terms.
    #[test]
    fn one_mixed_step_with_inputs_equals_the_affine_closed_form(
        (a, fast, x0) in linear_case(),
        h in 0.01f64..0.5,
        t0 in -1.0f64..1.0,
        seed in proptest::collection::vec(-1.0f64..1.0, 12),
    ) {
        let n = a.nrows();
        let c = DVector::from_iterator(n, seed.iter().copied().take(n));
        let d = DVector::from_iterator(n, seed.iter().copied().skip(6).take(n));
        for method in MixedMethod::ALL {
            let mut system = Affine { linear: Linear::new(a.clone()), c: c.clone(), d: d.clone() };
            let split = Levels::two_level(method, n, fast_indices(&fast), 1);
            let mut stepper = MixedStepper::new(split, 1e-13, &system);
            let mut x = x0.clone();
            stepper.step(&mut system, t0, h, &mut x).expect("steps");
            // The homogeneous part solved as before, the inputs' part through the same matrix.
            let homogeneous = DVector::from_column_slice(&closed_form(method, &a, &fast, h, &x0));
            let p_bar = DMatrix::<f64>::identity(n, n) - slow_selector(&fast);
            let gamma = if method == MixedMethod::Euler { h } else { h / 2.0 };
            let lhs = DMatrix::<f64>::identity(n, n) - gamma * &p_bar * &a;
            let forced = lhs
                .lu()
                .solve(&input_terms(method, (&a, &fast), (&c, &d), (t0, h)))
                .expect("regular");
            let exact = homogeneous + forced;
            let scale = exact.iter().fold(1.0f64, |m, v| m.max(v.abs()));
            for (s, e) in x.iter().zip(exact.iter()) {
                prop_assert!((s - e).abs() <= 1e-10 * scale, "{}: {x:?} vs {exact}", method.name());
            }
        }
    }
}

/// A nonlinear model with four states (a pendulum on a spring pulling a damped cart).
const NONLINEAR: &str = "model Nonlinear
  Real phi(start = 1, fixed = true);
  Real w(start = 0, fixed = true);
  Real s(start = 0.5, fixed = true);
  Real v(start = 0, fixed = true);
equation
  der(phi) = w;
  der(w) = -9.81*sin(phi) - 0.3*w + 2*(s - sin(phi));
  der(s) = v;
  der(v) = -40*(s - sin(phi)) - 5*v*abs(v);
end Nonlinear;";

fn states(m: &Loaded) -> Vec<Unknown> {
    m.causal
        .states
        .iter()
        .map(|&v| Unknown::Algebraic(v))
        .collect()
}

fn options(method: Method, stop: f64, steps: u64) -> Options {
    Options {
        method,
        start: 0.0,
        stop,
        steps,
        tol: 1e-10,
        partition: Partition::None,
        exchange: Exchange::GaussSeidel,
        max_step: f64::INFINITY,
    }
}

fn run_fixed(m: &Loaded, method: Method) -> Trajectory {
    let start = initial_point(&m.dae).expect("parameters");
    let o = options(method, 2.0, 200);
    simulate(m.model(), &start, &o, &states(m), |_| {}).expect("simulates")
}

fn run_mixed(m: &Loaded, split: &Levels) -> Trajectory {
    let start = initial_point(&m.dae).expect("parameters");
    // The method in `options` is not the one used: `split` says which.
    let o = options(Method::ExplicitEuler, 2.0, 200);
    simulate_mixed(m.model(), &start, &o, split, &states(m), |_| {}).expect("simulates")
}

#[test]
fn all_slow_is_the_explicit_method_and_all_fast_the_implicit_one_bit_for_bit() {
    let m = inline(NONLINEAR);
    let n = m.causal.states.len();
    for method in MixedMethod::ALL {
        for (fast, alone) in [(vec![], method.slow()), ((0..n).collect(), method.fast())] {
            let mixed = run_mixed(&m, &Levels::two_level(method, n, fast, 1));
            let reference = run_fixed(&m, alone);
            assert_eq!(mixed.times, reference.times);
            for (a, b) in mixed.columns.iter().zip(&reference.columns) {
                let bits = |c: &[f64]| c.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(a), bits(b), "{} vs {}", method.name(), alone.name());
            }
            assert_eq!(
                without_levels(&mixed.stats),
                reference.stats,
                "{}",
                method.name()
            );
        }
    }
}

/// A mixed partition of the nonlinear model costs, per step, one evaluation of the slow rows
/// (Euler) or two (midpoint, trapezoidal), one of the fast rows at the start of the step
/// (trapezoidal), and Newton's, one per iteration; Newton runs on the fast block only, with
/// one Jacobian and one factorization per step. Per level, the evaluations add up.
#[test]
fn mixed_statistics_count_the_fast_blocks_newton() {
    let m = inline(NONLINEAR);
    let v = m.dae.lookup("v").expect("v");
    let fast = m
        .causal
        .states
        .iter()
        .position(|&s| s == v)
        .expect("a state");
    for method in MixedMethod::ALL {
        let run = run_mixed(&m, &Levels::two_level(method, 4, [fast], 1));
        let s = &run.stats;
        let (slow, fast_start) = match method {
            MixedMethod::Euler => (1, 0),
            MixedMethod::Midpoint => (2, 0),
            MixedMethod::Trapezoidal => (2, 1),
        };
        assert_eq!(s.steps, 200);
        assert_eq!(
            s.level_f_evals,
            [slow * s.steps, fast_start * s.steps + s.newton_iters]
        );
        assert_eq!(s.f_evals, (slow + fast_start) * s.steps + s.newton_iters);
        assert_eq!(s.jac_evals, s.steps);
        assert_eq!(s.factorizations, s.steps);
        assert!(s.newton_iters >= 2 * s.steps, "{s:?}");
    }
}

/// The error at t = 1 of `method` with `steps` steps on `der(x) = A x` from `x0`, against
/// `exact`; the first state is fast, the second slow.
fn convergence_error(
    method: MixedMethod,
    a: [f64; 4],
    x0: [f64; 2],
    exact: [f64; 2],
    steps: u32,
) -> f64 {
    let mut system = Linear::new(DMatrix::from_row_slice(2, 2, &a));
    let mut stepper = MixedStepper::new(Levels::two_level(method, 2, [0], 1), 1e-13, &system);
    let mut x = x0.to_vec();
    let h = 1.0 / steps as f64;
    for k in 0..steps {
        stepper
            .step(&mut system, k as f64 * h, h, &mut x)
            .expect("steps");
    }
    (x[0] - exact[0]).abs().max((x[1] - exact[1]).abs())
}

/// The ratios of the errors with 100, 200 and 400 steps.
fn error_ratios(method: MixedMethod, a: [f64; 4], x0: [f64; 2], exact: [f64; 2]) -> Vec<f64> {
    let errors: Vec<f64> = [100, 200, 400]
        .iter()
        .map(|&n| convergence_error(method, a, x0, exact, n))
        .collect();
    errors.windows(2).map(|pair| pair[0] / pair[1]).collect()
}

/// The fast `f` reads the slow `s`, which does not read it: `der(f) = −20 f + 10 s`,
/// `der(s) = −s`, from (1, 1): `s = e^(−t)`, `f = (10/19)(e^(−t) − e^(−20t)) + e^(−20t)`.
#[test]
fn mixed_methods_converge_with_orders_one_two_two() {
    let (e1, e20) = ((-1.0f64).exp(), (-20.0f64).exp());
    let exact = [10.0 / 19.0 * (e1 - e20) + e20, e1];
    for (method, order) in [
        (MixedMethod::Euler, 1),
        (MixedMethod::Midpoint, 2),
        (MixedMethod::Trapezoidal, 2),
    ] {
        assert_eq!(method.order(), order);
        let ratios = error_ratios(method, [-20.0, 10.0, 0.0, -1.0], [1.0, 1.0], exact);
        let expected = 2f64.powi(order as i32);
        for ratio in &ratios {
            assert!(
                (ratio / expected - 1.0).abs() < 0.1,
                "{}: error ratios {ratios:?}",
                method.name()
            );
        }
    }
}

/// The closed form of SPEC §10 for midpoint and trapezoidal matches `(h²/2) A²` except for the
/// term `(h²/2) P A P̄ A`: when slow states read fast ones the composite is first order.
/// `A = [[−1, 3], [−3, −1]]` from (1, 0): `x = e^(−t) (cos 3t, −sin 3t)`.
#[test]
fn mixed_second_order_methods_are_first_order_when_slow_states_read_fast_ones() {
    let e = (-1.0f64).exp();
    let exact = [e * 3.0f64.cos(), -e * 3.0f64.sin()];
    for method in [MixedMethod::Midpoint, MixedMethod::Trapezoidal] {
        let ratios = error_ratios(method, [-1.0, 3.0, -3.0, -1.0], [1.0, 0.0], exact);
        for ratio in &ratios {
            assert!(
                (ratio / 2.0 - 1.0).abs() < 0.1,
                "{}: error ratios {ratios:?}",
                method.name()
            );
        }
    }
}

/// The whole-system stepper with every state implicit solves the same stage as the mixed one
/// with every state fast: a check that `Stepper` and `MixedStepper` share Newton.
#[test]
fn whole_system_stepper_agrees_with_all_fast_on_a_linear_system() {
    let a = DMatrix::from_row_slice(3, 3, &[-5.0, 1.0, 0.0, 2.0, -1.0, 0.5, 0.0, 1.0, -2.0]);
    for method in MixedMethod::ALL {
        let mut system = Linear::new(a.clone());
        let mut whole = Stepper::new(method.fast(), 1e-13, &system);
        let mut mixed = MixedStepper::new(Levels::two_level(method, 3, 0..3, 1), 1e-13, &system);
        let (mut x, mut y) = (vec![1.0, -0.5, 0.25], vec![1.0, -0.5, 0.25]);
        for k in 0..10 {
            whole
                .step(&mut system, k as f64 * 0.1, 0.1, &mut x)
                .expect("steps");
            mixed
                .step(&mut system, k as f64 * 0.1, 0.1, &mut y)
                .expect("steps");
        }
        assert_eq!(x, y, "{}", method.name());
        let mixed_stats = without_levels(mixed.stats());
        assert_eq!(FixedStep::stats(&whole), &mixed_stats, "{}", method.name());
    }
}

/// The counters without the per-level ones, which only a partitioned run keeps.
fn without_levels(stats: &Stats) -> Stats {
    Stats {
        level_f_evals: Vec::new(),
        ..stats.clone()
    }
}

#[test]
fn cli_reports_the_partition_of_the_heat_exchanger() {
    let value = json(&[
        "simulate",
        "examples/heat_exchanger.mo",
        "--method",
        "mixed-euler",
        "--fast",
        "T_a[*]",
        "--step",
        "0.01",
        "--stop",
        "1",
        "--format",
        "json",
    ]);
    let names =
        |prefix: &str| -> Vec<String> { (1..=10).map(|i| format!("{prefix}[{i}]")).collect() };
    let slow: Vec<String> = names("T_w").into_iter().chain(names("T_b")).collect();
    assert_eq!(value["method"], "mixed-euler");
    assert_eq!(
        value["partition"],
        serde_json::json!([
            {"states": names("T_a"), "method": "implicit-euler", "rate": 1, "f_evals": 101},
            {"states": slow, "method": "euler", "rate": 1, "f_evals": 100},
        ])
    );
    assert_eq!(value["stats"]["steps"], 100);
    // A linear model: one Jacobian of the fast block and one factorization for the run.
    assert_eq!(value["stats"]["jac_evals"], 1);
    assert_eq!(value["stats"]["factorizations"], 1);
    let (out, err, code) = mocca(&[
        "simulate",
        "examples/heat_exchanger.mo",
        "--method",
        "mixed-midpoint",
        "--fast",
        "T_a[*], T_b[1]",
        "--step",
        "0.01",
        "--stop",
        "0.1",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("11 fast states (implicit-midpoint, 1 step per step)")
            && out.contains("19 slow states (midpoint, 1 step per step)"),
        "{out}"
    );
}

/// With 90 states the whole system's Newton matrix takes the sparse LU; the 30 fast states'
/// block alone is small enough for the dense one.
#[test]
fn cli_factors_only_the_fast_block() {
    let run = |method: &str, fast: Option<&str>| {
        let mut args = vec![
            "simulate",
            "examples/heat_exchanger.mo",
            "-p",
            "N=30",
            "--method",
            method,
            "--step",
            "0.01",
            "--stop",
            "0.1",
            "--format",
            "json",
        ];
        if let Some(f) = fast {
            args.extend(["--fast", f]);
        }
        json(&args)["linear_solver"].clone()
    };
    assert_eq!(run("implicit-euler", None), "sparse");
    assert_eq!(run("mixed-euler", Some("T_a[*]")), "dense");
}

/// One step of `der(x) = −50 x + y`, `der(y) = x − y` from (1, 2) with x fast, h = 0.1: the
/// slow y by explicit Euler, y₁ = 2 + 0.1 (1 − 2) = 1.9, then x₁ = (1 + 0.1 y₁) / (1 + 5) =
/// 1.19 / 6.
#[test]
fn cli_steps_the_named_state_implicitly() {
    let path = model_file(
        "mixed_two_states",
        "model M
  Real x(start = 1, fixed = true);
  Real y(start = 2, fixed = true);
equation
  der(x) = -50*x + y;
  der(y) = x - y;
end M;",
    );
    let (csv, err, code) = simulate_csv(
        "mixed_two_states",
        &[
            "simulate",
            path.to_str().expect("utf-8"),
            "--method",
            "mixed-euler",
            "--fast",
            "x",
            "--step",
            "0.1",
            "--stop",
            "0.1",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let last: Vec<f64> = csv
        .lines()
        .last()
        .expect("a row")
        .split(',')
        .map(|v| v.parse().expect("a number"))
        .collect();
    assert!((last[0] - 0.1).abs() < 1e-12, "{csv}");
    assert!((last[1] - 1.19 / 6.0).abs() < 1e-12, "{csv}");
    assert!((last[2] - 1.9).abs() < 1e-12, "{csv}");
}

#[test]
fn cli_refuses_bad_fast_sets_as_usage_errors() {
    let heat = "examples/heat_exchanger.mo";
    let cases: [(&[&str], &str); 6] = [
        (
            &["--method", "mixed-euler", "--fast", "T_a[*],T_q"],
            "`T_q`",
        ),
        (&["--method", "mixed-euler", "--fast", "Q*"], "`Q*`"),
        (&["--method", "mixed-euler", "--fast", "N"], "`N`"),
        (&["--method", "mixed-euler"], "mixed methods need `--fast`"),
        (
            &["--method", "euler", "--fast", "T_a[1]"],
            "need a mixed method",
        ),
        (
            &["--method", "bdf", "--partition", "weak"],
            "`--partition weak`",
        ),
    ];
    for (extra, message) in cases {
        let mut args = vec!["simulate", heat, "--stop", "0.01"];
        args.extend(extra);
        let (_, err, code) = mocca(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(message), "{args:?}: {err}");
    }
}
