//! The fixed-step methods (SPEC §6) over any [`StageModel`]: `mocca simulate` steps the
//! interpreted tape with them, an emitted crate its generated code. The implicit ones solve
//! their stage equation `Y = a + γ f(τ, Y)` by simplified Newton: the Jacobian is evaluated
//! and `I − γ J` factored once per step, then reused by every iteration of that step. When the
//! Jacobian is constant (a linear model) it is evaluated and `I − γ J` factored once for the
//! whole run: the iterates are the same as with a fresh factorization every step.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    ExplicitEuler,
    ExplicitMidpoint,
    Heun,
    ImplicitEuler,
    ImplicitMidpoint,
    Trapezoidal,
}

impl Method {
    pub const ALL: [Method; 6] = [
        Method::ExplicitEuler,
        Method::ExplicitMidpoint,
        Method::Heun,
        Method::ImplicitEuler,
        Method::ImplicitMidpoint,
        Method::Trapezoidal,
    ];

    /// The classical order of accuracy.
    pub fn order(self) -> u32 {
        match self {
            Method::ExplicitEuler | Method::ImplicitEuler => 1,
            _ => 2,
        }
    }

    pub fn is_implicit(self) -> bool {
        matches!(
            self,
            Method::ImplicitEuler | Method::ImplicitMidpoint | Method::Trapezoidal
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            Method::ExplicitEuler => "euler",
            Method::ExplicitMidpoint => "midpoint",
            Method::Heun => "heun",
            Method::ImplicitEuler => "implicit-euler",
            Method::ImplicitMidpoint => "implicit-midpoint",
            Method::Trapezoidal => "trapezoidal",
        }
    }
}

/// Newton on the implicit stage gives up after this many iterations.
pub const STAGE_NEWTON_MAX: u64 = 25;

/// What the steppers count, each where its model keeps its counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// An evaluation of `f`.
    Evaluation,
    /// An evaluation of `∂f/∂x`.
    Jacobian,
    /// A factorization of `I − γJ`.
    Factorization,
    /// A Newton iteration of an implicit stage.
    NewtonIteration,
    /// A step taken.
    Step,
}

/// A Newton matrix `I − γJ` as the stage's Newton judges its iterations: the contraction
/// simplified Newton showed on the current factorization.
pub trait Factored {
    /// The contraction to judge a Newton iteration by: `observed` (this iteration's
    /// correction over the last one's, kept for this factorization when below 1), or else
    /// the one kept earlier.
    fn contraction(&mut self, observed: Option<f64>) -> Option<f64>;
}

/// An explicit ODE `der(x) = f(t, x)` as the fixed-step methods step it, with the Newton
/// matrix `M` of its implicit stages.
pub trait StageModel<M> {
    type Failure;
    fn count(&mut self, what: Count);
    /// The evaluations of `f` counted so far.
    fn evaluations(&self) -> u64;
    /// Per level of a partition (slowest first), the evaluations of `f` its steps made.
    fn level_evaluations(&mut self) -> &mut Vec<u64>;
    /// `f(t, x)` on the rows of block `rows` (every row when `None`) into `dx` at those rows.
    fn eval(
        &mut self,
        rows: Option<usize>,
        t: f64,
        x: &[f64],
        dx: &mut [f64],
    ) -> Result<(), Self::Failure>;
    /// The Jacobian entries `entries` (indices into the model's pattern; every entry when
    /// `None`) at `(t, x)`, where `f` was evaluated last, into `values`; `rows` as for
    /// [`StageModel::eval`].
    fn jacobian(
        &mut self,
        rows: Option<usize>,
        entries: Option<&[usize]>,
        at: (f64, &[f64]),
        values: &mut [f64],
    ) -> Result<(), Self::Failure>;
    /// Whether `∂f/∂x` is the same at every point.
    fn jacobian_is_constant(&self) -> bool;
    /// Factors `I − γJ` for the Jacobian values `jac` into `matrix`; false when singular.
    fn factor(&mut self, matrix: &mut M, gamma: f64, jac: &[f64]) -> bool;
    /// Solves with `matrix`'s last factorization, in place.
    fn solve(&mut self, matrix: &mut M, b: &mut [f64]);
    /// The stage's Newton did not converge at `t`; `worst` are the states with the largest
    /// last corrections, largest first.
    fn stage_failure(&self, t: f64, worst: Vec<usize>) -> Self::Failure;
    /// `I − γJ` is singular at `t`.
    fn singular(&self, t: f64) -> Self::Failure;
}

/// `f` on the rows of `rows`, counted.
pub fn eval<M, S: StageModel<M>>(
    model: &mut S,
    rows: Option<usize>,
    t: f64,
    x: &[f64],
    dx: &mut [f64],
) -> Result<(), S::Failure> {
    model.count(Count::Evaluation);
    model.eval(rows, t, x, dx)
}

/// An implicit stage `Y_B = base_B + γ f_B(τ, Y)` over a block B of the states.
#[derive(Clone, Copy)]
pub struct StageEquation<'a> {
    /// Indexed by state; only the block's entries are read.
    pub base: &'a [f64],
    pub tau: f64,
    pub gamma: f64,
}

/// Simplified Newton on an implicit stage over a block B of the states (all of them, or a
/// partition's fast part), the other states held: the block `J_BB` of the Jacobian is
/// evaluated and `I − γ J_BB` factored at the first iterate, then reused by every iteration of
/// the stage. When the Jacobian is constant (a linear model) it is evaluated and factored once
/// for the whole run: the iterates are the same as with a fresh factorization every stage.
pub struct StageNewton<M> {
    /// The block's states, ascending (indices into the system's states).
    block: Vec<usize>,
    /// Per entry of `J_BB`'s pattern, the index of that entry in the system's pattern
    /// (ascending); `None` when the block is every state (`J_BB` is the whole Jacobian).
    entries: Option<Vec<usize>>,
    /// The system's block of rows for the block's states, when it evaluates them alone.
    rows: Option<usize>,
    /// `J_BB`'s values.
    jac: Vec<f64>,
    delta: Vec<f64>,
    pub matrix: M,
    /// The γ of the factorization in `matrix`, when that factorization holds a constant
    /// Jacobian and may serve later stages.
    constant_factored: Option<f64>,
}

impl<M: Factored> StageNewton<M> {
    /// Newton over every one of `n` states, the Jacobian's pattern `entries` long.
    pub fn whole(n: usize, entries: usize, matrix: M) -> StageNewton<M> {
        StageNewton {
            block: (0..n).collect(),
            entries: None,
            rows: None,
            jac: vec![0.0; entries],
            delta: vec![0.0; n],
            matrix,
            constant_factored: None,
        }
    }

    /// Newton over `block` (ascending state indices), `J_BB` the Jacobian's entries
    /// `entries`, the model's rows `rows` evaluating the block alone where it can.
    pub fn block(
        block: Vec<usize>,
        entries: Vec<usize>,
        rows: Option<usize>,
        matrix: M,
    ) -> StageNewton<M> {
        StageNewton {
            delta: vec![0.0; block.len()],
            jac: vec![0.0; entries.len()],
            entries: Some(entries),
            rows,
            block,
            matrix,
            constant_factored: None,
        }
    }

    /// The next stage factors afresh: a parameter or an input the Jacobian reads changed, so
    /// a factorization kept for the run no longer holds.
    pub fn forget_factorization(&mut self) {
        self.constant_factored = None;
    }

    /// Solves `equation` for the block's entries of `stage`, starting from its values (the
    /// other entries are held); `fx` receives `f` at the iterates. The Jacobian is taken at
    /// the first iterate, right after `f` was evaluated there, so the model reuses that
    /// evaluation. Newton stops when every correction, or once Newton's contraction rate `ρ`
    /// is known every correction times `ρ / (1 − ρ)` (the error it leaves), is below
    /// `tol · (1 + |Y_i|)`.
    pub fn solve<S: StageModel<M>>(
        &mut self,
        model: &mut S,
        tol: f64,
        equation: StageEquation<'_>,
        stage: &mut [f64],
        fx: &mut [f64],
    ) -> Result<(), S::Failure> {
        let StageEquation { base, tau, gamma } = equation;
        let mut previous_size = None;
        for iteration in 0..STAGE_NEWTON_MAX {
            model.count(Count::NewtonIteration);
            eval(model, self.rows, tau, stage, fx)?;
            if iteration == 0 && self.constant_factored != Some(gamma) {
                self.factor(model, tau, stage, gamma)?;
            }
            // G(Y) = Y − base − γ f(τ, Y); solve (I − γ J_BB) Δ = −G_B.
            let size = if self.entries.is_none() {
                for (((d, &b), &f), &y) in self.delta.iter_mut().zip(base).zip(&*fx).zip(&*stage) {
                    *d = b + gamma * f - y;
                }
                model.solve(&mut self.matrix, &mut self.delta);
                correct_whole(stage, &self.delta, tol)
            } else {
                for (d, &i) in self.delta.iter_mut().zip(&self.block) {
                    *d = base[i] + gamma * fx[i] - stage[i];
                }
                model.solve(&mut self.matrix, &mut self.delta);
                correct(stage, &self.delta, &self.block, tol)
            };
            let left = match self.matrix.contraction(previous_size.map(|p| size / p)) {
                Some(rate) if rate < 1.0 => size * rate / (1.0 - rate),
                _ => size,
            };
            if size <= 1.0 || left <= 1.0 {
                return Ok(());
            }
            previous_size = Some(size);
        }
        let worst = largest(&self.delta, 3);
        Err(model.stage_failure(tau, worst.into_iter().map(|k| self.block[k]).collect()))
    }

    /// Evaluates the Jacobian at `(t, x)` and factors `I − γ J_BB`.
    fn factor<S: StageModel<M>>(
        &mut self,
        model: &mut S,
        t: f64,
        x: &[f64],
        gamma: f64,
    ) -> Result<(), S::Failure> {
        model.count(Count::Jacobian);
        model.jacobian(self.rows, self.entries.as_deref(), (t, x), &mut self.jac)?;
        model.count(Count::Factorization);
        if model.factor(&mut self.matrix, gamma, &self.jac) {
            self.constant_factored = model.jacobian_is_constant().then_some(gamma);
            Ok(())
        } else {
            self.constant_factored = None;
            Err(model.singular(t))
        }
    }
}

/// Adds the corrections `delta` to the block's entries of `stage`; the largest correction in
/// units of its tolerance `tol · (1 + |Y_i|)`, NaN (and the entries after it left) at the first
/// that is not a number.
fn correct(stage: &mut [f64], delta: &[f64], block: &[usize], tol: f64) -> f64 {
    let mut size = 0.0f64;
    for (&d, &i) in delta.iter().zip(block) {
        stage[i] += d;
        let scaled = d.abs() / (tol * (1.0 + stage[i].abs()));
        if scaled.is_nan() {
            return f64::NAN;
        }
        size = size.max(scaled);
    }
    size
}

/// [`correct`] over every state: without a correction that is no number (checked first, in a
/// pass the processor vectorises) the same values in one vectorised pass.
fn correct_whole(stage: &mut [f64], delta: &[f64], tol: f64) -> f64 {
    let scaled = |d: f64, y: f64| d.abs() / (tol * (1.0 + (y + d).abs()));
    let nan = delta
        .iter()
        .zip(&*stage)
        .fold(false, |nan, (&d, &y)| nan | scaled(d, y).is_nan());
    if nan {
        let block: Vec<usize> = (0..stage.len()).collect();
        return correct(stage, delta, &block, tol);
    }
    let mut size = 0.0f64;
    for (y, &d) in stage.iter_mut().zip(delta) {
        *y += d;
        // Both finite here: the plain comparison is `max`'s.
        let s = d.abs() / (tol * (1.0 + y.abs()));
        size = if s > size { s } else { size };
    }
    size
}

/// Indices of the `k` largest magnitudes, largest first (NaN counts as largest).
pub fn largest(v: &[f64], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    let key = |i: usize| {
        if v[i].is_nan() {
            f64::INFINITY
        } else {
            v[i].abs()
        }
    };
    idx.sort_by(|&a, &b| key(b).total_cmp(&key(a)).then(a.cmp(&b)));
    idx.truncate(k);
    idx
}

/// What a fixed-step stepper works with, allocated once: its stage vectors and Newton on the
/// states its implicit stages solve.
pub struct StageWork<M> {
    /// Newton on the stage stops when every correction, or once Newton's contraction rate
    /// `ρ` is known every correction times `ρ / (1 − ρ)` (the error it leaves), is below
    /// `tol · (1 + |Y_i|)`.
    pub tol: f64,
    pub k1: Vec<f64>,
    pub k2: Vec<f64>,
    pub stage: Vec<f64>,
    pub base: Vec<f64>,
    /// Newton over the implicit states; none when there are none.
    pub newton: Option<StageNewton<M>>,
}

impl<M: Factored> StageWork<M> {
    /// Work space for `n` states, Newton `newton` on the implicit ones.
    pub fn new(n: usize, tol: f64, newton: Option<StageNewton<M>>) -> StageWork<M> {
        StageWork {
            tol,
            k1: vec![0.0; n],
            k2: vec![0.0; n],
            stage: vec![0.0; n],
            base: vec![0.0; n],
            newton,
        }
    }

    pub fn forget_factorization(&mut self) {
        if let Some(newton) = &mut self.newton {
            newton.forget_factorization();
        }
    }

    /// Solves `Y_I = base_I + γ f_I(τ, Y)` on the implicit states into `stage`, starting
    /// from its current value (the other entries held); nothing without implicit states.
    pub fn solve<S: StageModel<M>>(
        &mut self,
        model: &mut S,
        tau: f64,
        gamma: f64,
    ) -> Result<(), S::Failure> {
        let Some(newton) = self.newton.as_mut() else {
            return Ok(());
        };
        let equation = StageEquation {
            base: &self.base,
            tau,
            gamma,
        };
        newton.solve(model, self.tol, equation, &mut self.stage, &mut self.k2)
    }
}

/// One method over every state of a system; allocates its work space once.
pub struct Stepper<M> {
    pub method: Method,
    pub work: StageWork<M>,
}

#[derive(Clone, Copy)]
enum Slot {
    K1,
    K2,
}

impl<M: Factored> Stepper<M> {
    /// `method` over `n` states; `newton` solves its implicit stages (every state).
    pub fn new(method: Method, n: usize, tol: f64, newton: Option<StageNewton<M>>) -> Stepper<M> {
        Stepper {
            method,
            work: StageWork::new(n, tol, newton.filter(|_| method.is_implicit())),
        }
    }

    fn f<S: StageModel<M>>(
        &mut self,
        model: &mut S,
        t: f64,
        x: &[f64],
        out: Slot,
    ) -> Result<(), S::Failure> {
        let dx = match out {
            Slot::K1 => &mut self.work.k1,
            Slot::K2 => &mut self.work.k2,
        };
        eval(model, None, t, x, dx)
    }

    /// Solves `Y = base + γ f(τ, Y)` into the stage vector, starting from `Y = x`.
    fn solve_stage<S: StageModel<M>>(
        &mut self,
        model: &mut S,
        x: &[f64],
        tau: f64,
        gamma: f64,
    ) -> Result<(), S::Failure> {
        self.work.stage.copy_from_slice(x);
        self.work.solve(model, tau, gamma)
    }

    /// Advances `x` from `t` to `t + h`.
    pub fn step<S: StageModel<M>>(
        &mut self,
        model: &mut S,
        t: f64,
        h: f64,
        x: &mut [f64],
    ) -> Result<(), S::Failure> {
        match self.method {
            Method::ExplicitEuler => {
                self.f(model, t, x, Slot::K1)?;
                axpy(x, h, &self.work.k1);
            }
            Method::ExplicitMidpoint => {
                self.f(model, t, x, Slot::K1)?;
                self.work.stage.copy_from_slice(x);
                axpy(&mut self.work.stage, h / 2.0, &self.work.k1);
                let stage = std::mem::take(&mut self.work.stage);
                let r = self.f(model, t + h / 2.0, &stage, Slot::K2);
                self.work.stage = stage;
                r?;
                axpy(x, h, &self.work.k2);
            }
            Method::Heun => {
                self.f(model, t, x, Slot::K1)?;
                self.work.stage.copy_from_slice(x);
                axpy(&mut self.work.stage, h, &self.work.k1);
                let stage = std::mem::take(&mut self.work.stage);
                let r = self.f(model, t + h, &stage, Slot::K2);
                self.work.stage = stage;
                r?;
                axpy(x, h / 2.0, &self.work.k1);
                axpy(x, h / 2.0, &self.work.k2);
            }
            Method::ImplicitEuler => {
                // X = x + h f(t + h, X)
                self.work.base.copy_from_slice(x);
                self.solve_stage(model, x, t + h, h)?;
                x.copy_from_slice(&self.work.stage);
            }
            Method::ImplicitMidpoint => {
                // Y = x + h/2 f(t + h/2, Y), X = 2Y − x
                self.work.base.copy_from_slice(x);
                self.solve_stage(model, x, t + h / 2.0, h / 2.0)?;
                for (xi, &yi) in x.iter_mut().zip(&self.work.stage) {
                    *xi = 2.0 * yi - *xi;
                }
            }
            Method::Trapezoidal => {
                // X = x + h/2 (f(t, x) + f(t + h, X)); f(t + h, X) starts the next step.
                // f(t, x) is evaluated afresh each step rather than carried over from the
                // last stage: a partitioned run changes the exchanged values between steps.
                self.f(model, t, x, Slot::K1)?;
                self.work.base.copy_from_slice(x);
                axpy(&mut self.work.base, h / 2.0, &self.work.k1);
                self.solve_stage(model, x, t + h, h / 2.0)?;
                x.copy_from_slice(&self.work.stage);
            }
        }
        model.count(Count::Step);
        Ok(())
    }
}

/// `y += a x`.
pub fn axpy(y: &mut [f64], a: f64, x: &[f64]) {
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

/// `y_i += a x_i` for each `i` in `indices`.
pub fn axpy_on(y: &mut [f64], a: f64, x: &[f64], indices: &[usize]) {
    for &i in indices {
        y[i] += a * x[i];
    }
}

/// `y_i = x_i` for each `i` in `indices`.
pub fn copy_on(y: &mut [f64], x: &[f64], indices: &[usize]) {
    for &i in indices {
        y[i] = x[i];
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::dense_lu::DenseLu;

    /// `der(x) = A x` for a dense `A`, its Newton matrix a dense LU, its counters its own.
    pub(crate) struct Linear {
        pub a: Vec<f64>,
        pub n: usize,
        pub counts: Vec<Count>,
        pub levels: Vec<u64>,
    }

    pub(crate) struct Matrix {
        lu: DenseLu,
        n: usize,
        contraction: Option<f64>,
    }

    impl Matrix {
        pub(crate) fn new(n: usize) -> Matrix {
            Matrix {
                lu: DenseLu::new(n),
                n,
                contraction: None,
            }
        }
    }

    impl Factored for Matrix {
        fn contraction(&mut self, observed: Option<f64>) -> Option<f64> {
            if let Some(rate) = observed.filter(|&r| r < 1.0) {
                self.contraction = Some(rate);
            }
            observed.or(self.contraction)
        }
    }

    impl Linear {
        pub(crate) fn new(a: &[f64]) -> Linear {
            let n = (a.len() as f64).sqrt() as usize;
            Linear {
                a: a.to_vec(),
                n,
                counts: Vec::new(),
                levels: Vec::new(),
            }
        }

        /// `A x`.
        pub(crate) fn apply(&self, x: &[f64]) -> Vec<f64> {
            let n = self.n;
            (0..n)
                .map(|i| (0..n).map(|j| self.a[i * n + j] * x[j]).sum())
                .collect()
        }

        pub(crate) fn counted(&self, what: Count) -> usize {
            self.counts.iter().filter(|&&c| c == what).count()
        }
    }

    impl StageModel<Matrix> for Linear {
        type Failure = String;

        fn count(&mut self, what: Count) {
            self.counts.push(what);
        }

        fn evaluations(&self) -> u64 {
            self.counted(Count::Evaluation) as u64
        }

        fn level_evaluations(&mut self) -> &mut Vec<u64> {
            &mut self.levels
        }

        fn eval(
            &mut self,
            _: Option<usize>,
            _: f64,
            x: &[f64],
            dx: &mut [f64],
        ) -> Result<(), String> {
            dx.copy_from_slice(&self.apply(x));
            Ok(())
        }

        fn jacobian(
            &mut self,
            _: Option<usize>,
            entries: Option<&[usize]>,
            _: (f64, &[f64]),
            values: &mut [f64],
        ) -> Result<(), String> {
            match entries {
                None => values.copy_from_slice(&self.a),
                Some(entries) => {
                    for (v, &e) in values.iter_mut().zip(entries) {
                        *v = self.a[e];
                    }
                }
            }
            Ok(())
        }

        fn jacobian_is_constant(&self) -> bool {
            true
        }

        fn factor(&mut self, matrix: &mut Matrix, gamma: f64, jac: &[f64]) -> bool {
            let n = matrix.n;
            matrix.lu.clear();
            for (k, &x) in jac.iter().enumerate() {
                matrix.lu.add(k / n, k % n, -gamma * x);
            }
            for i in 0..n {
                matrix.lu.add(i, i, 1.0);
            }
            matrix.contraction = None;
            matrix.lu.factor()
        }

        fn solve(&mut self, matrix: &mut Matrix, b: &mut [f64]) {
            matrix.lu.solve(b);
        }

        fn stage_failure(&self, t: f64, _: Vec<usize>) -> String {
            format!("stage at {t}")
        }

        fn singular(&self, t: f64) -> String {
            format!("singular at {t}")
        }
    }

    /// `(I − c A)⁻¹ b` by Cramer's rule (2 × 2).
    pub(crate) fn solve_shifted(a: &[f64], c: f64, b: &[f64]) -> Vec<f64> {
        let m = [1.0 - c * a[0], -c * a[1], -c * a[2], 1.0 - c * a[3]];
        let det = m[0] * m[3] - m[1] * m[2];
        vec![
            (b[0] * m[3] - m[1] * b[1]) / det,
            (m[0] * b[1] - m[2] * b[0]) / det,
        ]
    }

    pub(crate) fn close(x: &[f64], want: &[f64]) -> bool {
        x.iter()
            .zip(want)
            .all(|(a, b)| (a - b).abs() <= 1e-12 * b.abs().max(1e-300))
    }

    const A: [f64; 4] = [-1.0, 0.5, 0.2, -3.0];

    /// One step of each method against its amplification matrix applied by hand.
    #[test]
    fn one_step_is_each_methods_amplification() {
        let (h, x0) = (0.1, [1.0, -2.0]);
        let model = Linear::new(&A);
        let ax = model.apply(&x0);
        let plus =
            |c: f64, v: &[f64]| -> Vec<f64> { x0.iter().zip(v).map(|(x, v)| x + c * v).collect() };
        let a_ax = model.apply(&ax);
        let taylor2: Vec<f64> = (0..2)
            .map(|i| x0[i] + h * ax[i] + h * h / 2.0 * a_ax[i])
            .collect();
        let half = solve_shifted(&A, h / 2.0, &plus(h / 2.0, &ax));
        let expected = [
            (Method::ExplicitEuler, plus(h, &ax)),
            (Method::ExplicitMidpoint, taylor2.clone()),
            (Method::Heun, taylor2),
            (Method::ImplicitEuler, solve_shifted(&A, h, &x0)),
            (Method::ImplicitMidpoint, half.clone()),
            (Method::Trapezoidal, half),
        ];
        for (method, want) in expected {
            let mut model = Linear::new(&A);
            let newton = StageNewton::whole(2, 4, Matrix::new(2));
            let mut stepper = Stepper::new(method, 2, 1e-10, Some(newton));
            let mut x = x0.to_vec();
            stepper.step(&mut model, 0.0, h, &mut x).expect("steps");
            assert!(close(&x, &want), "{}: {x:?}, want {want:?}", method.name());
            assert_eq!(model.counted(Count::Step), 1);
        }
    }

    /// A constant Jacobian is evaluated and factored once for the whole run.
    #[test]
    fn a_constant_jacobian_is_factored_once() {
        let mut model = Linear::new(&A);
        let newton = StageNewton::whole(2, 4, Matrix::new(2));
        let mut stepper = Stepper::new(Method::ImplicitEuler, 2, 1e-10, Some(newton));
        let mut x = vec![1.0, -2.0];
        for k in 0..10 {
            stepper
                .step(&mut model, k as f64 * 0.1, 0.1, &mut x)
                .expect("steps");
        }
        assert_eq!(model.counted(Count::Jacobian), 1);
        assert_eq!(model.counted(Count::Factorization), 1);
        stepper.work.forget_factorization();
        stepper.step(&mut model, 1.0, 0.1, &mut x).expect("steps");
        assert_eq!(model.counted(Count::Factorization), 2);
    }

    /// A singular Newton matrix is the model's failure, not a panic.
    #[test]
    fn a_singular_stage_is_reported() {
        // I − h A is singular for h = 1 and A = I.
        let mut model = Linear::new(&[1.0, 0.0, 0.0, 1.0]);
        let newton = StageNewton::whole(2, 4, Matrix::new(2));
        let mut stepper = Stepper::new(Method::ImplicitEuler, 2, 1e-10, Some(newton));
        let mut x = vec![1.0, 1.0];
        let failure = stepper.step(&mut model, 0.0, 1.0, &mut x).unwrap_err();
        assert_eq!(failure, "singular at 1");
    }
}
