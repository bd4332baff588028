//! The BDF reference solver against problems with known solutions.

use mocca::causal::EvalFailure;
use mocca::simulate::OdeSystem;
use mocca::simulate::bdf::{BdfError, BdfOptions, BdfOutcome, integrate_bdf, integrate_bdf_with};
use mocca::simulate::linear::NewtonMatrix;

/// `der(x) = A x` for a constant matrix given by its nonzero entries.
struct Linear {
    n: usize,
    pattern: Vec<(usize, usize)>,
    values: Vec<f64>,
}

impl Linear {
    fn new(n: usize, entries: &[(usize, usize, f64)]) -> Linear {
        Linear {
            n,
            pattern: entries.iter().map(|&(r, c, _)| (r, c)).collect(),
            values: entries.iter().map(|&(_, _, v)| v).collect(),
        }
    }
}

impl OdeSystem for Linear {
    fn dim(&self) -> usize {
        self.n
    }
    fn rhs(&mut self, _: f64, x: &[f64], dx: &mut [f64]) -> Result<(), EvalFailure> {
        dx.iter_mut().for_each(|d| *d = 0.0);
        for (&(r, c), &v) in self.pattern.iter().zip(&self.values) {
            dx[r] += v * x[c];
        }
        Ok(())
    }
    fn jacobian_pattern(&self) -> &[(usize, usize)] {
        &self.pattern
    }
    fn jacobian(&mut self, _: f64, _: &[f64], values: &mut [f64]) -> Result<(), EvalFailure> {
        values.copy_from_slice(&self.values);
        Ok(())
    }
}

/// Robertson's chemical kinetics, the classic stiff test.
struct Robertson;

impl OdeSystem for Robertson {
    fn dim(&self) -> usize {
        3
    }
    fn rhs(&mut self, _: f64, y: &[f64], dy: &mut [f64]) -> Result<(), EvalFailure> {
        dy[0] = -0.04 * y[0] + 1e4 * y[1] * y[2];
        dy[2] = 3e7 * y[1] * y[1];
        dy[1] = -dy[0] - dy[2];
        Ok(())
    }
    fn jacobian_pattern(&self) -> &[(usize, usize)] {
        &[(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (2, 1)]
    }
    fn jacobian(&mut self, _: f64, y: &[f64], v: &mut [f64]) -> Result<(), EvalFailure> {
        v.copy_from_slice(&[
            -0.04,
            1e4 * y[2],
            1e4 * y[1],
            0.04,
            -1e4 * y[2] - 6e7 * y[1],
            -1e4 * y[1],
            6e7 * y[1],
        ]);
        Ok(())
    }
}

fn options(rtol: f64, atol: f64) -> BdfOptions {
    BdfOptions {
        rtol,
        atol,
        ..BdfOptions::default()
    }
}

fn run(system: &mut dyn OdeSystem, x0: &[f64], t1: f64, o: &BdfOptions) -> Vec<f64> {
    integrate_bdf(system, x0, 0.0, t1, o, &mut |_, _| {})
        .expect("integrates")
        .final_state
}

#[test]
fn exponential_decay_matches_the_exact_solution() {
    let mut s = Linear::new(1, &[(0, 0, -2.0)]);
    let x = run(&mut s, &[1.0], 3.0, &options(1e-8, 1e-12));
    let exact = (-6.0f64).exp();
    assert!((x[0] - exact).abs() < 1e-8, "{} vs {exact}", x[0]);
}

/// der(x1) = -x1, der(x2) = 999 x1 - 1000 x2 (eigenvalues −1 and −1000).
fn stiff_pair() -> Linear {
    Linear::new(2, &[(0, 0, -1.0), (1, 0, 999.0), (1, 1, -1000.0)])
}

/// Integrates the stiff pair from (1, 2) to t = 10 and checks the closed form
/// x1 = e^{-t}, x2 = e^{-t} + (x2(0) − 1) e^{-1000 t}.
fn stiff_pair_run(system: &mut dyn OdeSystem) -> BdfOutcome {
    let out = integrate_bdf(
        system,
        &[1.0, 2.0],
        0.0,
        10.0,
        &options(1e-6, 1e-10),
        &mut |_, _| {},
    )
    .expect("integrates");
    let e = (-10.0f64).exp();
    assert!((out.final_state[0] - e).abs() < 1e-6 * e.max(1e-4) + 1e-9);
    assert!((out.final_state[1] - e).abs() < 1e-6 * e.max(1e-4) + 1e-9);
    out
}

#[test]
fn stiff_linear_system_matches_its_closed_form_with_few_steps() {
    let out = stiff_pair_run(&mut stiff_pair());
    // An explicit method would need t·1000/2 = 5000 steps for stability alone.
    assert!(out.stats.steps < 500, "{} steps", out.stats.steps);
    assert!(out.stats.jac_evals >= 1);
    assert_eq!(out.stats.f_evals_in_jacobians, 0);
}

#[test]
fn robertson_matches_published_values_at_t_40() {
    let y = run(
        &mut Robertson,
        &[1.0, 0.0, 0.0],
        40.0,
        &options(1e-6, 1e-10),
    );
    // Hairer & Wanner, Solving ODEs II, and the SUNDIALS example output.
    let expected = [0.7158271, 9.185535e-6, 0.2841637];
    for (got, want) in y.iter().zip(expected) {
        assert!((got - want).abs() <= 1e-4 * want, "{got} vs {want}");
    }
}

#[test]
fn the_error_shrinks_with_the_tolerance() {
    let exact = [1.0f64.cos(), -1.0f64.sin()];
    // An undamped oscillator: der(x) = v, der(v) = −x from (1, 0); at t = 1, (cos 1, −sin 1).
    let error = |tol: f64| {
        let mut s = Linear::new(2, &[(0, 1, 1.0), (1, 0, -1.0)]);
        let x = run(&mut s, &[1.0, 0.0], 1.0, &options(tol, tol));
        (x[0] - exact[0]).abs().max((x[1] - exact[1]).abs())
    };
    let (coarse, fine) = (error(1e-4), error(1e-8));
    assert!(coarse < 1e-2, "{coarse}");
    assert!(fine < coarse / 100.0, "{fine} vs {coarse}");
}

#[test]
fn output_times_are_honoured_and_interpolated() {
    let mut s = Linear::new(1, &[(0, 0, -1.0)]);
    let mut seen = Vec::new();
    let o = BdfOptions {
        output_times: vec![0.5, 1.0, 1.5],
        ..options(1e-9, 1e-12)
    };
    integrate_bdf(&mut s, &[1.0], 0.0, 2.0, &o, &mut |t, x| {
        seen.push((t, x[0]))
    })
    .unwrap();
    let times: Vec<f64> = seen.iter().map(|p| p.0).collect();
    assert_eq!(times, [0.0, 0.5, 1.0, 1.5, 2.0]);
    for (t, x) in seen {
        assert!((x - (-t).exp()).abs() < 1e-7, "at {t}: {x}");
    }
}

/// Fails once time passes 1.
struct Failing;

impl OdeSystem for Failing {
    fn dim(&self) -> usize {
        1
    }
    fn rhs(&mut self, t: f64, x: &[f64], dx: &mut [f64]) -> Result<(), EvalFailure> {
        if t > 1.0 {
            return Err(EvalFailure::NotFinite(3));
        }
        dx[0] = -x[0];
        Ok(())
    }
    fn jacobian_pattern(&self) -> &[(usize, usize)] {
        &[(0, 0)]
    }
    fn jacobian(&mut self, _: f64, _: &[f64], v: &mut [f64]) -> Result<(), EvalFailure> {
        v[0] = -1.0;
        Ok(())
    }
}

#[test]
fn a_failing_model_is_an_error_naming_the_time() {
    let err = integrate_bdf(
        &mut Failing,
        &[1.0],
        0.0,
        2.0,
        &options(1e-6, 1e-9),
        &mut |_, _| {},
    )
    .unwrap_err();
    match err {
        BdfError::Model { time, failure } => {
            assert!(time > 1.0 && time < 1.1, "{time}");
            assert_eq!(failure, EvalFailure::NotFinite(3));
        }
        other => panic!("{other:?}"),
    }
    let bad = integrate_bdf(
        &mut Failing,
        &[1.0],
        1.0,
        0.0,
        &options(1e-6, 1e-9),
        &mut |_, _| {},
    );
    assert!(matches!(bad, Err(BdfError::BadInput(_))));
}

#[test]
fn large_sparse_systems_use_the_sparse_path() {
    // A 2000-state diffusion chain: der(x_i) = x_{i−1} − 2 x_i + x_{i+1} (x_0 = x_{n+1} = 0),
    // stiff (eigenvalues down to −4). Its total Σ x_i decays; compare with the
    // closed form of the lowest mode started alone: x_i(0) = sin(iπ/(n+1)).
    let n = 2000;
    let mut entries = Vec::new();
    for i in 0..n {
        if i > 0 {
            entries.push((i, i - 1, 1.0));
        }
        entries.push((i, i, -2.0));
        if i + 1 < n {
            entries.push((i, i + 1, 1.0));
        }
    }
    let mut s = Linear::new(n, &entries);
    let theta = std::f64::consts::PI / (n as f64 + 1.0);
    let x0: Vec<f64> = (1..=n).map(|i| (i as f64 * theta).sin()).collect();
    let lambda = -2.0 + 2.0 * theta.cos();
    let t1 = 1.0e5;
    let x = run(&mut s, &x0, t1, &options(1e-6, 1e-12));
    let decay = (lambda * t1).exp();
    let mid = n / 2;
    assert!(
        (x[mid] - x0[mid] * decay).abs() < 1e-4 * x0[mid] * decay,
        "{} vs {}",
        x[mid],
        x0[mid] * decay
    );
}

/// [`Linear`] that says its Jacobian is constant.
struct ConstantLinear(Linear);

impl OdeSystem for ConstantLinear {
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn rhs(&mut self, t: f64, x: &[f64], dx: &mut [f64]) -> Result<(), EvalFailure> {
        self.0.rhs(t, x, dx)
    }
    fn jacobian_pattern(&self) -> &[(usize, usize)] {
        self.0.jacobian_pattern()
    }
    fn jacobian(&mut self, t: f64, x: &[f64], values: &mut [f64]) -> Result<(), EvalFailure> {
        self.0.jacobian(t, x, values)
    }
    fn jacobian_is_constant(&self) -> bool {
        true
    }
}

#[test]
fn a_linear_model_keeps_its_matrix_and_converges_in_one_iteration() {
    // The stiff pair above. With the exact (constant) Jacobian the corrector equation is
    // linear and one iteration solves it, on a new matrix too (its contraction is zero, not
    // measured by a second iteration); a step size kept while it would change by less than
    // half keeps the matrix. The closed form still holds (`stiff_pair_run` checks it).
    let out = stiff_pair_run(&mut ConstantLinear(stiff_pair()));
    let st = &out.stats;
    let trials = st.steps + st.rejected_steps;
    assert_eq!(st.newton_iters, trials, "{st:?}");
    assert!(st.factorizations * 3 < st.steps, "{st:?}");
    assert_eq!(st.jac_evals, 1, "{st:?}");
}

#[test]
fn a_newton_matrix_analysed_beforehand_gives_the_same_run_and_must_fit() {
    let mut system = stiff_pair();
    let own = stiff_pair_run(&mut system);
    let mut with = |matrix| {
        let o = options(1e-6, 1e-10);
        integrate_bdf_with(
            &mut system,
            matrix,
            &[1.0, 2.0],
            0.0,
            10.0,
            &o,
            &mut |_, _| {},
        )
    };
    let given = with(NewtonMatrix::new(2, &own_pattern())).expect("integrates");
    assert_eq!(given.final_state, own.final_state);
    assert_eq!(given.stats, own.stats);
    // A matrix for another pattern is refused, not used.
    let refused = with(NewtonMatrix::new(2, &[(0, 0)]));
    assert!(matches!(refused, Err(BdfError::BadInput(_))));
}

/// The stiff pair's Jacobian pattern.
fn own_pattern() -> Vec<(usize, usize)> {
    stiff_pair().pattern
}

/// A chain `x_0 → x_1 → … → x_(n−1)`, each draining into the next at rate 1, long enough
/// that the Newton matrix is solved in two pieces: interleaved on one thread at 1 000
/// states, on two threads at 5 000.
#[test]
fn a_chain_solved_in_two_pieces_matches_the_poisson_solution() {
    for (n, threads) in [(1000, false), (5000, true)] {
        let mut entries: Vec<(usize, usize, f64)> = (0..n).map(|i| (i, i, -1.0)).collect();
        entries.extend((1..n).map(|i| (i, i - 1, 1.0)));
        let mut system = Linear::new(n, &entries);
        let matrix = NewtonMatrix::new(n, &system.pattern);
        assert_eq!(matrix.owners().is_some(), threads, "{n} states");
        let mut x0 = vec![0.0; n];
        x0[0] = 1.0;
        let t1 = 8.0;
        let o = options(1e-8, 1e-12);
        let outcome = integrate_bdf_with(&mut system, matrix, &x0, 0.0, t1, &o, &mut |_, _| {})
            .expect("integrates");
        // x_k(t) = e^(−t) t^k / k!, by the recurrence from x_(k−1).
        let mut exact = (-t1).exp();
        for (k, &x) in outcome.final_state.iter().enumerate().take(40) {
            assert!((x - exact).abs() < 1e-6, "x_{k}: {x} against {exact}");
            exact *= t1 / (k + 1) as f64;
        }
        assert!(outcome.final_state[40..].iter().all(|x| x.abs() < 1e-6));
    }
}

/// A start whose derivative is enormous (a fast mode of 10⁻¹⁰ s, as an ideal switch closing
/// on a capacitor makes) far from t = 0: the first step's estimate falls below the smallest
/// step the time's precision allows, and the run starts from one the error test can shorten.
#[test]
fn a_start_far_from_zero_with_an_enormous_derivative_runs() {
    let mut s = Linear::new(1, &[(0, 0, -1e10)]);
    let out = integrate_bdf(
        &mut s,
        &[1.0],
        1.0,
        2.0,
        &options(1e-8, 1e-12),
        &mut |_, _| {},
    )
    .expect("integrates");
    assert!(out.final_state[0].abs() < 1e-10, "{}", out.final_state[0]);
}
