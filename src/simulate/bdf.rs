//! The variable-step, variable-order stiff reference solver (SPEC §6): the numerical
//! differentiation formulas of orders 1–5 in the quasi-constant step-size form of Shampine and
//! Reichelt (MATLAB's `ode15s`, SciPy's `BDF`), with the symbolic Jacobian of the model.
//!
//! Why our own rather than diffsol: diffsol drives its own matrix and vector types and its
//! own problem builder, while the model already hands out a sparse Jacobian on a fixed
//! pattern through [`OdeSystem`]; wrapping it would copy every Jacobian into diffsol's
//! containers and hide the counters SPEC §6 asks for. The method here is the textbook one,
//! a few hundred lines, tested against analytic solutions.
//!
//! The state of the method is the array `D` of backward differences of the solution scaled
//! by the step; changing the step rescales `D` (`change_d`), changing the order uses one more
//! or one fewer difference. Each step predicts `Σ D[0..=k]`, corrects by simplified Newton
//! on `(I − c J) Δ = c f − ψ − d` with the iteration matrix refreshed only when Newton
//! struggles, estimates the local error from the correction, and adapts step and order.
//!
//! Three habits of CVODE's BDF replace SciPy's, because SciPy's refactor `I − cJ` after every
//! step and always take two Newton iterations; on the heat exchanger at N = 3000 they cut the
//! factorizations from 614 to 60 and the Newton iterations from 4954 to 2421 at the same
//! accuracy (BENCHMARKS.md):
//! - after a successful step the step size is kept unless it would grow by half or more
//!   (`KEEP_STEP_BELOW`) or the order changes, so the factorization stays valid;
//! - the contraction rate Newton showed on a factorization is remembered, so a later step's
//!   first correction can already pass the convergence test; on a model whose Jacobian is
//!   constant (affine in its states) the rate is zero from the start, the corrector equation
//!   being linear and solved in one iteration;
//! - Newton's corrections are weighed with the last accepted solution's error weights,
//!   computed in the pass that accepts it (the local error, as SciPy's, with the corrected
//!   solution's).
//!
//! Each accepted step makes one pass over the differences (update, the next prediction). A
//! Newton iteration makes none of its own: forming its right-hand side, applying the
//! correction, the new error weights and the norms are done entry by entry at the two ends
//! of the sparse solve ([`SolveEnds`]), beside the solve's chain of dependent rows, where they
//! cost little more than the solve alone.

use std::ops::Range;
use std::time::Instant;

use super::events::Watch;
use super::linear::NewtonMatrix;
use super::pair::{Pair, SharedF64, both, exclusive, share};
use super::static_lu::SolveEnds;
use super::system::{OdeSystem, Stats, pieces};
use crate::causal::EvalFailure;

const MAX_ORDER: usize = 5;
const NEWTON_MAXITER: usize = 4;
const MIN_FACTOR: f64 = 0.2;
const MAX_FACTOR: f64 = 10.0;
/// After a successful step at an unchanged order, a proposed step-size factor below this
/// keeps the step (CVODE's threshold): a too-large step then fails its error test and is
/// cut, while small changes would each cost a factorization.
const KEEP_STEP_BELOW: f64 = 1.5;
/// With breakpoints, the first step of each interval between them is at most this fraction
/// of it.
const FIRST_STEPS_PER_INTERVAL: f64 = 100.0;
/// The shortest first step, in ulps of the time: ten times the smallest step a run takes
/// (see `Bdf::step`) ten times over, so that the error test has room to shorten it.
const FLOOR_ULPS: f64 = 1e3;
/// The NDF coefficients κ_k (Shampine and Reichelt, 1997); κ = 0 would give plain BDF.
const KAPPA: [f64; MAX_ORDER + 1] = [0.0, -0.1850, -1.0 / 9.0, -0.0823, -0.0415, 0.0];

/// Tolerances and limits of one integration.
#[derive(Clone, Debug)]
pub struct BdfOptions {
    pub rtol: f64,
    pub atol: f64,
    /// Per state, the scale of its absolute tolerance (its `nominal`): state `i` is held to
    /// `atol·atol_scale[i] + rtol·|x_i|`, as DASSL in Dymola and OpenModelica do with
    /// `tolerance·nominal`. Empty: 1 for every state.
    pub atol_scale: Vec<f64>,
    /// Times at which the observer sees the solution (interpolated), ascending, within the
    /// interval; the end time is always reported.
    pub output_times: Vec<f64>,
    pub max_steps: u64,
    /// The first step; chosen from the problem when `None`.
    pub first_step: Option<f64>,
    /// The largest step (`f64::INFINITY`: unlimited).
    pub max_step: f64,
}

impl Default for BdfOptions {
    fn default() -> BdfOptions {
        BdfOptions {
            rtol: 1e-6,
            atol: 1e-8,
            atol_scale: Vec::new(),
            output_times: Vec::new(),
            max_steps: 1_000_000,
            first_step: None,
            max_step: f64::INFINITY,
        }
    }
}

/// Why an integration stopped early.
#[derive(Clone, Debug, PartialEq)]
pub enum BdfError {
    /// The model could not be evaluated at this time.
    Model { time: f64, failure: EvalFailure },
    /// The step size fell below what the arithmetic can resolve at this time.
    StepTooSmall { time: f64 },
    /// `max_steps` steps did not reach the end.
    TooManySteps { time: f64 },
    /// The interval or the options make no sense.
    BadInput(String),
}

impl std::fmt::Display for BdfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BdfError::Model { time, failure } => {
                write!(f, "the model failed at t = {time}: {failure:?}")
            }
            BdfError::StepTooSmall { time } => {
                write!(f, "the step size became too small at t = {time}")
            }
            BdfError::TooManySteps { time } => {
                write!(f, "the step limit was reached at t = {time}")
            }
            BdfError::BadInput(what) => f.write_str(what),
        }
    }
}

/// What an integration cost, and how long it took.
#[derive(Clone, Debug)]
pub struct BdfOutcome {
    pub stats: Stats,
    pub wall_seconds: f64,
    /// The state at the end time.
    pub final_state: Vec<f64>,
}

/// Integrates `der(x) = f(t, x)` from `x0` at `t0` to `t1 > t0`, reporting the solution at
/// `t0`, at each output time and at `t1` to `observer`.
pub fn integrate_bdf(
    system: &mut dyn OdeSystem,
    x0: &[f64],
    t0: f64,
    t1: f64,
    options: &BdfOptions,
    observer: &mut dyn FnMut(f64, &[f64]),
) -> Result<BdfOutcome, BdfError> {
    let matrix = NewtonMatrix::new(x0.len(), system.jacobian_pattern());
    integrate_bdf_with(system, matrix, x0, t0, t1, options, observer)
}

/// [`integrate_bdf`] with the Newton matrix analysed beforehand, for the system's size and
/// Jacobian pattern (a caller can analyse it while it compiles the system).
pub fn integrate_bdf_with(
    system: &mut dyn OdeSystem,
    matrix: NewtonMatrix,
    x0: &[f64],
    t0: f64,
    t1: f64,
    options: &BdfOptions,
    observer: &mut dyn FnMut(f64, &[f64]),
) -> Result<BdfOutcome, BdfError> {
    integrate_bdf_watched(system, matrix, (x0, t0), t1, options, observer, None)
        .map(|(outcome, _)| outcome)
}

/// [`integrate_bdf_with`] that stops at the first switch `watch` sees (located on the
/// interpolant): then the outcome's final state is the state just after the switch, and the
/// time is returned with it. The observer is told nothing at that time.
pub fn integrate_bdf_watched(
    system: &mut dyn OdeSystem,
    matrix: NewtonMatrix,
    (x0, t0): (&[f64], f64),
    t1: f64,
    options: &BdfOptions,
    observer: &mut dyn FnMut(f64, &[f64]),
    watch: Option<&mut dyn Watch>,
) -> Result<(BdfOutcome, Option<f64>), BdfError> {
    check_input(system, x0, t0, t1, options)?;
    if !matrix.fits(x0.len(), system.jacobian_pattern().len()) {
        return Err(BdfError::BadInput(
            "the Newton matrix was analysed for another system".to_string(),
        ));
    }
    let start = Instant::now();
    // The helper thread spins while the run lasts: only when the solves can be shared.
    let owners = matrix.owners();
    let first_break = system.breakpoints().iter().copied().find(|&b| b > t0);
    system.enter_interval(t0, first_break.unwrap_or(f64::INFINITY));
    Pair::with(owners.is_some(), |pair| {
        let horizon = first_break.unwrap_or(t1).min(t1);
        let bdf = Bdf::new(system, matrix, owners, pair, (x0, t0, horizon), options)?;
        run(bdf, system, (t1, watch), options, observer, start)
    })
}

/// Steps `bdf` to `t1`, reporting to `observer` as [`integrate_bdf`] says.
fn run(
    mut bdf: Bdf<'_>,
    system: &mut dyn OdeSystem,
    (t1, mut watch): (f64, Option<&mut dyn Watch>),
    options: &BdfOptions,
    observer: &mut dyn FnMut(f64, &[f64]),
    start: Instant,
) -> Result<(BdfOutcome, Option<f64>), BdfError> {
    let t0 = bdf.t;
    system.observing();
    observer(t0, &bdf.d.solution());
    let mut outputs = options
        .output_times
        .iter()
        .copied()
        .filter(|&t| t > t0 && t < t1)
        .peekable();
    let breakpoints = system.breakpoints().to_vec();
    for (a, b) in pieces(&breakpoints, t0, t1) {
        if a > t0 {
            // The right-hand side may jump here: the history before it is no basis for
            // extrapolating past it.
            system.enter_interval(a, b);
            bdf.restart(system, None, b)?;
        }
        if !breakpoints.is_empty() {
            // An input that switches on often starts from rest (a ramp, a bump), where the
            // starting step's estimate sees nothing to resolve: a first step across the
            // whole interval would sample the input only at its ends.
            bdf.limit_step((b - a) / FIRST_STEPS_PER_INTERVAL);
        }
        while bdf.t < b {
            if bdf.stats.steps >= options.max_steps {
                return Err(BdfError::TooManySteps { time: bdf.t });
            }
            let t_old = bdf.t;
            bdf.step(system, b)?;
            let mut switch = None;
            if let Some(w) = watch.as_deref_mut() {
                // The output times inside the step are probed too: a relation that switches
                // and switches back within one long step is seen where the grid samples it.
                let probes = outputs
                    .clone()
                    .take_while(|&t| t < bdf.t)
                    .filter(|&t| t > t_old);
                let first = probes
                    .chain([bdf.t])
                    .find(|&t| w.crossed(t, &bdf.interpolate(t)));
                if let Some(t_crossed) = first {
                    switch = Some(w.locate(t_old, t_crossed, &mut |t| bdf.interpolate(t)));
                }
            }
            let reached = switch.as_ref().map_or(bdf.t, |s| s.0);
            while let Some(&t) = outputs.peek().filter(|&&t| t <= reached) {
                if t > t_old {
                    system.observing();
                    observer(t, &bdf.interpolate(t));
                }
                outputs.next();
            }
            if let Some((t, final_state)) = switch {
                let outcome = BdfOutcome {
                    stats: bdf.stats,
                    wall_seconds: start.elapsed().as_secs_f64(),
                    final_state,
                };
                return Ok((outcome, Some(t)));
            }
        }
    }
    let final_state = bdf.d.solution();
    system.observing();
    observer(t1, &final_state);
    let outcome = BdfOutcome {
        stats: bdf.stats,
        wall_seconds: start.elapsed().as_secs_f64(),
        final_state,
    };
    Ok((outcome, None))
}

fn check_input(
    system: &dyn OdeSystem,
    x0: &[f64],
    t0: f64,
    t1: f64,
    options: &BdfOptions,
) -> Result<(), BdfError> {
    let bad = |what: &str| Err(BdfError::BadInput(what.to_string()));
    if x0.len() != system.dim() {
        return bad("the initial state does not match the system's size");
    }
    if !(t0.is_finite() && t1.is_finite() && t1 > t0) {
        return bad("the end time must be finite and after the start time");
    }
    if !(options.rtol > 0.0 && options.atol > 0.0) {
        return bad("the tolerances must be positive");
    }
    if options.max_step.is_nan() || options.max_step <= 0.0 {
        return bad("the largest step must be positive");
    }
    if x0.iter().any(|x| !x.is_finite()) {
        return bad("the initial state is not finite");
    }
    Ok(())
}

/// The method's constants for each order: γ_k = Σ_{j≤k} 1/j, α_k = (1 − κ_k) γ_k and the error
/// constants κ_k γ_k + 1/(k + 1).
struct Coefficients {
    gamma: [f64; MAX_ORDER + 1],
    alpha: [f64; MAX_ORDER + 1],
    error: [f64; MAX_ORDER + 1],
}

impl Coefficients {
    fn new() -> Coefficients {
        let mut gamma = [0.0; MAX_ORDER + 1];
        for k in 1..=MAX_ORDER {
            gamma[k] = gamma[k - 1] + 1.0 / k as f64;
        }
        let alpha = std::array::from_fn(|k| (1.0 - KAPPA[k]) * gamma[k]);
        let error = std::array::from_fn(|k| KAPPA[k] * gamma[k] + 1.0 / (k as f64 + 1.0));
        Coefficients {
            gamma,
            alpha,
            error,
        }
    }
}

struct Bdf<'p> {
    n: usize,
    /// Two threads for the solves, the accepting pass and `f`'s long batched runs, when the
    /// Newton matrix has pieces.
    pair: Option<&'p Pair>,
    /// With a solve in pieces, the states each of its threads solves: the accepting pass
    /// splits the same way, so that each state's data stays with one processor's cache.
    /// (Split even without `pair`, so that the results do not depend on whether a second
    /// thread could be started.)
    owners: Option<[Vec<Range<usize>>; 2]>,
    t: f64,
    h: f64,
    order: usize,
    /// Scaled backward differences; difference 0 is the current solution.
    d: Differences,
    equal_steps: usize,
    rtol: f64,
    /// Per state, its absolute tolerance.
    atol: Vec<f64>,
    max_step: f64,
    newton_tol: f64,
    coef: Coefficients,
    jac: Vec<f64>,
    /// The `(row, column)` of each entry of `jac`.
    pattern: Vec<(usize, usize)>,
    /// The last two Newton iterates of a corrector with a Jacobian from an earlier step, each
    /// with `f` there (older first).
    iterates: [(Vec<f64>, Vec<f64>); 2],
    /// `J·Δy` of the check of a Jacobian along a correction.
    scratch: Vec<f64>,
    /// Whether `jac` was evaluated at the current step's prediction (always, when it is
    /// constant: evaluating it again could not help Newton).
    jac_current: bool,
    constant_jacobian: bool,
    matrix: NewtonMatrix,
    /// Whether `matrix` holds the factorization for the current `c`.
    factored: bool,
    /// Whether `y` and `psi` hold the prediction for the current step size and order (the
    /// accepting pass computes it on its way through the differences).
    predicted: bool,
    stats: Stats,
    /// A model failure met while correcting; reported if the step size then collapses.
    last_failure: Option<BdfError>,
    /// The system's guesses at the last accepted step ([`OdeSystem::guesses`]), restored
    /// after a step the error test rejects (a step too long may have carried a loop with
    /// several roots past its branch's end). Not after a Newton failure: restored there too,
    /// the switched-capacitor loops of the standard library's `CauerLowPassSC` (singular,
    /// whose free unknowns keep their guesses) stopped BDF at 27.5 s.
    accepted_guesses: Vec<f64>,
    // Work vectors, allocated once.
    f: Vec<f64>,
    psi: Vec<f64>,
    y: Vec<f64>,
    correction: Vec<f64>,
    /// The error weights `1 / (atol + rtol·|x|)` of the last accepted solution, which
    /// measure Newton's corrections (as CVODE's do: one set per step, computed in the pass
    /// that accepts it).
    weights: Vec<f64>,
    /// The error weights of the corrected solution, computed to measure the local error and
    /// taken over as `weights` when the step is accepted.
    trial_weights: Vec<f64>,
}

/// The result of one Newton solve of the corrector.
struct Corrector {
    converged: bool,
    iterations: usize,
    /// The weighted norm of the step's whole correction, with the corrected solution's error
    /// weights (in `trial_weights`): the local error, up to the order's error constant. As
    /// SciPy measures it; with the last accepted solution's weights, as CVODE does, the heat
    /// exchanger at N = 3000 ends eight times less accurate at the same tolerance.
    correction_norm: f64,
}

impl Corrector {
    fn failed(iterations: usize) -> Corrector {
        Corrector {
            converged: false,
            iterations,
            correction_norm: f64::INFINITY,
        }
    }
}

impl<'p> Bdf<'p> {
    fn new(
        system: &mut dyn OdeSystem,
        matrix: NewtonMatrix,
        owners: Option<[Vec<Range<usize>>; 2]>,
        pair: Option<&'p Pair>,
        (x0, t0, horizon): (&[f64], f64, f64),
        options: &BdfOptions,
    ) -> Result<Bdf<'p>, BdfError> {
        let n = x0.len();
        let pattern_len = system.jacobian_pattern().len();
        let mut bdf = Bdf {
            n,
            pair,
            owners,
            t: t0,
            h: 0.0,
            order: 1,
            d: Differences::new(n),
            equal_steps: 0,
            rtol: options.rtol,
            atol: (0..n)
                .map(|i| options.atol * options.atol_scale.get(i).copied().unwrap_or(1.0))
                .collect(),
            max_step: options.max_step,
            newton_tol: (10.0 * f64::EPSILON / options.rtol).max(options.rtol.sqrt().min(0.03)),
            coef: Coefficients::new(),
            jac: vec![0.0; pattern_len],
            pattern: system.jacobian_pattern().to_vec(),
            iterates: Default::default(),
            scratch: Vec::new(),
            jac_current: false,
            constant_jacobian: system.jacobian_is_constant(),
            matrix,
            factored: false,
            predicted: false,
            stats: Stats::default(),
            last_failure: None,
            accepted_guesses: Vec::new(),
            f: vec![0.0; n],
            psi: vec![0.0; n],
            y: vec![0.0; n],
            correction: vec![0.0; n],
            weights: vec![0.0; n],
            trial_weights: vec![0.0; n],
        };
        bdf.d.rows_mut()[0].copy_from_slice(x0);
        bdf.restart(system, options.first_step, horizon)?;
        Ok(bdf)
    }

    /// Shortens the next step to at most `h` (the step is order 1 and unused yet: called
    /// right after a start).
    fn limit_step(&mut self, h: f64) {
        if self.h > h {
            self.change_d(h / self.h);
        }
    }

    /// Starts again at order 1 from the current time and solution, with `first_step` or one
    /// chosen from the problem (probing no further than `horizon`), and a fresh Jacobian.
    fn restart(
        &mut self,
        system: &mut dyn OdeSystem,
        first_step: Option<f64>,
        horizon: f64,
    ) -> Result<(), BdfError> {
        let x0 = self.d.solution();
        self.d = Differences::new(self.n);
        self.d.rows_mut()[0].copy_from_slice(&x0);
        self.order = 1;
        self.equal_steps = 0;
        self.factored = false;
        self.predicted = false;
        self.last_failure = None;
        self.weights = (x0.iter().zip(&self.atol))
            .map(|(&x, &atol)| error_weight((atol, self.rtol), x))
            .collect();
        let mut f0 = vec![0.0; self.n];
        Self::rhs((&mut self.stats, self.pair), system, self.t, &x0, &mut f0)?;
        let h = match first_step {
            Some(h) if h > 0.0 => h,
            _ => {
                let h = self.initial_step(system, (&x0, &f0), horizon)?;
                // The probe left the model evaluated away from the start: an algebraic loop
                // would start its next solve there (another operating point of transistors,
                // say). Evaluate it at the start again.
                Self::rhs((&mut self.stats, self.pair), system, self.t, &x0, &mut f0)?;
                h
            }
        };
        // A start whose derivatives are enormous (ideal switches closing on capacitors) is
        // estimated a step of a few ulps of `t`, below the smallest step: the error test
        // shortens a step that is too long, so start from one it can shorten.
        let floor = FLOOR_ULPS * (next_up(self.t) - self.t);
        self.h = h.max(floor).min(self.max_step);
        for (d, &f) in self.d.rows_mut()[1].iter_mut().zip(&f0) {
            *d = f * self.h;
        }
        if self.constant_jacobian && self.jac_current {
            return Ok(());
        }
        self.jacobian(system, self.t, &x0)
    }

    /// `f(t, x)` into `out`, counted (its long batched runs on `pair`'s two threads).
    fn rhs(
        (stats, pair): (&mut Stats, Option<&Pair>),
        system: &mut dyn OdeSystem,
        t: f64,
        x: &[f64],
        out: &mut [f64],
    ) -> Result<(), BdfError> {
        stats.f_evals += 1;
        system
            .rhs_on(t, x, out, pair)
            .map_err(|failure| BdfError::Model { time: t, failure })
    }

    fn jacobian(&mut self, system: &mut dyn OdeSystem, t: f64, x: &[f64]) -> Result<(), BdfError> {
        self.stats.jac_evals += 1;
        system
            .jacobian(t, x, &mut self.jac)
            .map_err(|failure| BdfError::Model { time: t, failure })?;
        self.jac_current = true;
        self.factored = false;
        Ok(())
    }

    /// The weighted root-mean-square norm of `v`.
    fn norm(v: &[f64], weights: &[f64]) -> f64 {
        Self::root_mean(weighted_squares(v, weights), v.len())
    }

    /// `√(sum / n)`, the root mean square of `n` squares summing to `sum` (0 when n = 0).
    fn root_mean(sum: f64, n: usize) -> f64 {
        if n == 0 {
            return 0.0;
        }
        (sum / n as f64).sqrt()
    }

    /// Hairer, Nørsett and Wanner's starting step (Solving ODEs I, II.4), for order 1, its
    /// probe no further than `horizon`.
    fn initial_step(
        &mut self,
        system: &mut dyn OdeSystem,
        (x0, f0): (&[f64], &[f64]),
        horizon: f64,
    ) -> Result<f64, BdfError> {
        if self.n == 0 {
            return Ok(1.0);
        }
        let weights = &self.weights;
        let d0 = Self::norm(x0, weights);
        let d1 = Self::norm(f0, weights);
        // The probe stays within the largest step and the interval: a state that barely moves
        // (a slow temperature) would otherwise send it far past the next breakpoint, where
        // the model may not evaluate at all.
        let h0 = if d0 < 1e-5 || d1 < 1e-5 {
            1e-6
        } else {
            0.01 * d0 / d1
        }
        .min(self.max_step)
        .min((horizon - self.t).max(f64::MIN_POSITIVE));
        let x1: Vec<f64> = x0.iter().zip(f0).map(|(x, f)| x + h0 * f).collect();
        let mut f1 = vec![0.0; self.n];
        let probed = Self::rhs(
            (&mut self.stats, self.pair),
            system,
            self.t + h0,
            &x1,
            &mut f1,
        );
        if probed.is_err() {
            // The model does not evaluate there: start short, the error test lengthens.
            return Ok(h0 * 1e-3);
        }
        let diff: Vec<f64> = f1.iter().zip(f0).map(|(a, b)| a - b).collect();
        let d2 = Self::norm(&diff, weights) / h0;
        let h1 = if d1 <= 1e-15 && d2 <= 1e-15 {
            (h0 * 1e-3).max(1e-6)
        } else {
            (0.01 / d1.max(d2)).sqrt()
        };
        Ok((100.0 * h0).min(h1))
    }

    /// Rescales the differences for a step `factor` times the current one.
    fn change_d(&mut self, factor: f64) {
        at_order!(self.order, rescale_at(&mut self.d, factor));
        self.h *= factor;
        self.equal_steps = 0;
        self.factored = false;
        self.predicted = false;
    }

    /// One accepted step towards `t_end` (never past it).
    fn step(&mut self, system: &mut dyn OdeSystem, t_end: f64) -> Result<(), BdfError> {
        let min_step = 10.0 * (next_up(self.t) - self.t);
        system.guesses(&mut self.accepted_guesses);
        loop {
            if self.h < min_step {
                // A model that failed on the way is the likelier cause.
                return Err(self
                    .last_failure
                    .take()
                    .unwrap_or(BdfError::StepTooSmall { time: self.t }));
            }
            self.last_failure = None;
            if self.t + self.h > t_end {
                let factor = (t_end - self.t) / self.h;
                self.change_d(factor);
            }
            let t_new = if self.t + self.h >= t_end {
                t_end
            } else {
                self.t + self.h
            };
            if !self.predicted {
                self.predict();
            }
            // Newton moves `y` away from the prediction.
            self.predicted = false;
            let c = self.h / self.coef.alpha[self.order];
            let corrector = loop {
                if !self.factored {
                    self.stats.factorizations += 1;
                    self.factored = self.matrix.factor(c, &self.jac);
                }
                let corrector = if self.factored {
                    self.correct(system, t_new, c)?
                } else {
                    Corrector::failed(0)
                };
                if corrector.converged || self.jac_current {
                    break corrector;
                }
                self.predict();
                let prediction = std::mem::take(&mut self.y);
                let refreshed = self.jacobian(system, t_new, &prediction);
                self.y = prediction;
                if let Err(e) = refreshed {
                    // The model does not evaluate at the prediction: retry smaller.
                    self.last_failure = Some(e);
                    break Corrector::failed(0);
                }
            };
            if !corrector.converged {
                self.stats.rejected_steps += 1;
                self.change_d(0.5);
                continue;
            }
            let safety = 0.9 * (2 * NEWTON_MAXITER + 1) as f64
                / (2 * NEWTON_MAXITER + corrector.iterations) as f64;
            let error_norm = self.coef.error[self.order] * corrector.correction_norm;
            if error_norm > 1.0 {
                system.set_guesses(&self.accepted_guesses);
                self.stats.rejected_steps += 1;
                let factor =
                    (safety * error_norm.powf(-1.0 / (self.order as f64 + 1.0))).max(MIN_FACTOR);
                self.change_d(factor);
                continue;
            }
            self.accept(t_new, safety, error_norm);
            return Ok(());
        }
    }

    /// The predictor `Σ D[0..=k]` into `y`, and ψ = (Σ γ_j D[j]) / α_k.
    fn predict(&mut self) {
        let (y, psi) = (&mut self.y, &mut self.psi);
        at_order!(self.order, predict_at(&self.coef, &self.d, y, psi));
        self.predicted = true;
    }

    /// Simplified Newton on the corrector, from the prediction in `y`; leaves the solution in
    /// `y` and the total correction in `correction`.
    fn correct(
        &mut self,
        system: &mut dyn OdeSystem,
        t_new: f64,
        c: f64,
    ) -> Result<Corrector, BdfError> {
        let mut previous_norm: Option<f64> = None;
        // With a Jacobian from an earlier step: the iterates and `f` there are kept, to check
        // it along the last correction.
        let checks_jacobian = !self.jac_current && !self.constant_jacobian;
        for k in 0..NEWTON_MAXITER {
            self.stats.newton_iters += 1;
            let evaluated = Self::rhs(
                (&mut self.stats, self.pair),
                system,
                t_new,
                &self.y,
                &mut self.f,
            );
            if let Err(e) = evaluated {
                // A failed evaluation inside Newton means the prediction strayed: retry smaller.
                self.last_failure = Some(e);
                return Ok(Corrector::failed(k + 1));
            }
            if checks_jacobian {
                self.iterates.swap(0, 1);
                let now = &mut self.iterates[1];
                now.0.clone_from(&self.y);
                now.1.clone_from(&self.f);
            }
            // The first iteration starts from no correction: `correction` is not read.
            let sums = match k {
                0 => self.newton_iteration::<true>(c),
                _ => self.newton_iteration::<false>(c),
            };
            // Applied before it is judged: a diverging iteration's result is discarded whole.
            let Some([sum, error_sum]) = sums else {
                return Ok(Corrector::failed(k + 1));
            };
            let norm = Self::root_mean(sum, self.n);
            let observed = previous_norm.map(|p| norm / p);
            // A constant Jacobian makes the model affine in its states and the corrector
            // equation linear: the factorization, always of the current `c`, solves it in one
            // iteration, exact but for rounding. The contraction is zero; a second iteration
            // would only confirm it (one per factorization: 42 of 380 at N = 300).
            let rate = match observed {
                None if self.constant_jacobian => Some(0.0),
                _ => self.matrix.contraction(observed),
            };
            if let Some(rate) = observed
                && (rate >= 1.0
                    || rate.powi((NEWTON_MAXITER - k) as i32) / (1.0 - rate) * norm
                        > self.newton_tol)
            {
                break;
            }
            let converged =
                norm == 0.0 || rate.is_some_and(|r| r / (1.0 - r) * norm < self.newton_tol);
            if converged {
                if checks_jacobian && k > 0 && self.jacobian_disagrees(c) {
                    // Converged only in the eyes of a Jacobian the model no longer has.
                    return Ok(Corrector::failed(k + 1));
                }
                return Ok(Corrector {
                    converged: true,
                    iterations: k + 1,
                    correction_norm: Self::root_mean(error_sum, self.n),
                });
            }
            previous_norm = Some(norm);
        }
        Ok(Corrector::failed(NEWTON_MAXITER))
    }

    /// Whether the Jacobian predicts the change of `f` between the last two Newton iterates
    /// (`iterates`) so badly that the iteration's convergence says nothing: `c·(J·Δy − Δf)` above the
    /// error tolerance (weighted norm over 1). A Jacobian taken where a block's root was
    /// degenerate (`der(x) = sin(der(x) + 1) − x` at `der(x) = −1`: ∂der(x)/∂x = −10¹¹)
    /// makes every correction vanish, and the corrector "converges" on the predictor while
    /// the residual is not small; a fresh Jacobian sees the model as it is.
    fn jacobian_disagrees(&mut self, c: f64) -> bool {
        let [(y0, f0), (y1, f1)] = &self.iterates;
        let mut predicted = std::mem::take(&mut self.scratch);
        predicted.clear();
        predicted.resize(self.n, 0.0);
        for (&(row, col), &value) in self.pattern.iter().zip(&self.jac) {
            predicted[row] += value * (y1[col] - y0[col]);
        }
        let sum: f64 = (0..self.n)
            .map(|i| (c * (predicted[i] - (f1[i] - f0[i])) * self.weights[i]).powi(2))
            .sum();
        self.scratch = predicted;
        Self::root_mean(sum, self.n) > 1.0
    }

    /// One simplified Newton iteration: solves `(I − c J) Δ = c f − ψ − correction` (the
    /// correction taken as zero on the `FIRST` iteration) and adds `Δ` to `y` and to the
    /// correction, with the right-hand side formed and `Δ` applied inside the solve's loops.
    /// Returns the weighted sums of squares of `Δ` (last accepted weights) and of the whole
    /// correction (the corrected solution's weights, left in `trial_weights`); `None` when `f`
    /// is not finite.
    fn newton_iteration<const FIRST: bool>(&mut self, c: f64) -> Option<[f64; 2]> {
        let mut pass = NewtonPass::<FIRST> {
            c,
            atol: &self.atol,
            rtol: self.rtol,
            f: &self.f,
            psi: &self.psi,
            weights: &self.weights,
            y: share(&mut self.y),
            correction: share(&mut self.correction),
            trial_weights: share(&mut self.trial_weights),
        };
        let [a, b] = self.matrix.solve_fused(&mut pass, self.pair);
        (!(a.not_finite || b.not_finite))
            .then_some([a.delta + b.delta, a.correction + b.correction])
    }

    /// Takes the step: updates the differences, then maybe the order and the step size.
    fn accept(&mut self, t_new: f64, safety: f64, error_norm: f64) {
        let k = self.order;
        self.stats.steps += 1;
        self.equal_steps += 1;
        self.t = t_new;
        self.jac_current = self.constant_jacobian;
        std::mem::swap(&mut self.weights, &mut self.trial_weights);
        let [lower, higher] = self.update_differences();
        self.predicted = true;
        if self.equal_steps < k + 1 {
            return;
        }
        let error_of =
            |order: usize, sum: f64| self.coef.error[order] * Self::root_mean(sum, self.n);
        let lower = if k > 1 {
            error_of(k - 1, lower)
        } else {
            f64::INFINITY
        };
        let higher = if k < MAX_ORDER {
            error_of(k + 1, higher)
        } else {
            f64::INFINITY
        };
        let factors = [
            lower.powf(-1.0 / k as f64),
            error_norm.powf(-1.0 / (k as f64 + 1.0)),
            higher.powf(-1.0 / (k as f64 + 2.0)),
        ];
        let (best, &factor) = factors
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .unwrap_or((1, &1.0));
        let order = (k + best).saturating_sub(1).clamp(1, MAX_ORDER);
        let factor = (safety * factor)
            .min(MAX_FACTOR)
            .min(self.max_step / self.h);
        if order == k && factor < KEEP_STEP_BELOW {
            return;
        }
        self.order = order;
        self.change_d(factor);
    }

    /// One pass over the differences: adds the step's correction, predicts the next step at
    /// this order and step size, and returns the weighted sums of squares of the differences
    /// the neighbouring orders' error estimates need (k and k + 2).
    fn update_differences(&mut self) -> [f64; 2] {
        let (order, coef) = (self.order, &self.coef);
        let out = Accepted {
            rows: self.d.rows_mut(),
            correction: &self.correction,
            weights: &self.weights,
            y: &mut self.y,
            psi: &mut self.psi,
        };
        let Some([first, second]) = &self.owners else {
            return at_order!(order, update_at(coef, out));
        };
        let shared = out.share();
        let update = |runs: &[Range<usize>]| {
            let mut sums = [0.0; 2];
            for run in runs {
                // SAFETY: the two threads' runs have no state in common, and the exclusive
                // borrows keep other threads out.
                let part = unsafe { shared.exclusive(run.clone()) };
                let [lower, higher] = at_order!(order, update_at(coef, part));
                sums = [sums[0] + lower, sums[1] + higher];
            }
            sums
        };
        let (a, b) = both(self.pair, || update(first), || update(second));
        [a[0] + b[0], a[1] + b[1]]
    }

    /// The interpolating polynomial of the last step at `t` (between the previous and the
    /// current time).
    fn interpolate(&self, t: f64) -> Vec<f64> {
        let mut p = [0.0; DIFFERENCES];
        let mut product = 1.0;
        for (j, pj) in p.iter_mut().enumerate().take(self.order) {
            let shift = self.t - self.h * j as f64;
            product *= (t - shift) / (self.h * (j as f64 + 1.0));
            *pj = product;
        }
        let mut values = self.d.solution();
        for (j, &pj) in p.iter().enumerate().take(self.order) {
            for (value, &d) in values.iter_mut().zip(self.d.row(j + 1)) {
                *value += d * pj;
            }
        }
        values
    }
}

/// The error weight `1 / (atol + rtol·|x|)` of a solution component `x`.
#[inline(always)]
fn error_weight((atol, rtol): (f64, f64), x: f64) -> f64 {
    1.0 / (atol + rtol * x.abs())
}

/// The number of independent partial sums a long weighted sum keeps: one accumulator makes
/// the sum a chain of dependent additions, several cycles per element.
const LANES: usize = 4;

/// Calls `body(i, lane)` for `i` in `0..n`, with `lane = i mod LANES` in the full blocks, in
/// a shape the compiler unrolls into independent lanes.
#[inline(always)]
fn in_lanes(n: usize, mut body: impl FnMut(usize, usize)) {
    let (whole, rest) = blocks(n);
    for base in whole {
        for lane in 0..LANES {
            body(base + lane, lane);
        }
    }
    for (lane, i) in rest.enumerate() {
        body(i, lane);
    }
}

/// One Newton iteration's work at the ends of its solve (see [`Bdf::newton_iteration`]).
/// Each thread of a solve in pieces reads and writes its own rows' entries.
struct NewtonPass<'a, const FIRST: bool> {
    c: f64,
    atol: &'a [f64],
    rtol: f64,
    f: &'a [f64],
    psi: &'a [f64],
    weights: &'a [f64],
    y: &'a [SharedF64],
    correction: &'a [SharedF64],
    trial_weights: &'a [SharedF64],
}

/// What a Newton iteration sums over its solution: the weighted squares of `Δ` and of the
/// correction, and whether some `f` was not finite.
#[derive(Clone, Copy, Default)]
struct NewtonSums {
    delta: f64,
    correction: f64,
    not_finite: bool,
}

/// One chain of additions per sum is enough: the solve's chain of rows is longer.
impl<const FIRST: bool> SolveEnds for NewtonPass<'_, FIRST> {
    type Sums = NewtonSums;

    fn size(&self) -> usize {
        let lengths = [
            self.f.len(),
            self.psi.len(),
            self.weights.len(),
            self.atol.len(),
        ];
        let shared = [
            self.y.len(),
            self.correction.len(),
            self.trial_weights.len(),
        ];
        lengths.into_iter().chain(shared).min().unwrap_or(0)
    }

    #[inline(always)]
    unsafe fn rhs(&self, i: usize, sums: &mut NewtonSums) -> f64 {
        // SAFETY (all three): `i` is in bounds and this thread's alone, by the caller's
        // promise. Unchecked: they run at every row of every solve, where the checks took a
        // twentieth of the time.
        let f = unsafe { *self.f.get_unchecked(i) };
        sums.not_finite |= !f.is_finite();
        let start = if FIRST {
            0.0
        } else {
            unsafe { self.correction.get_unchecked(i).get() }
        };
        self.c * f - unsafe { *self.psi.get_unchecked(i) } - start
    }

    #[inline(always)]
    unsafe fn solution(&self, i: usize, delta: f64, sums: &mut NewtonSums) {
        // SAFETY: entry `i` is in bounds and this thread's alone, by the caller's promise.
        unsafe {
            let y = self.y.get_unchecked(i).get() + delta;
            self.y.get_unchecked(i).set(y);
            let correction = if FIRST {
                delta
            } else {
                self.correction.get_unchecked(i).get() + delta
            };
            self.correction.get_unchecked(i).set(correction);
            let w = error_weight((*self.atol.get_unchecked(i), self.rtol), y);
            self.trial_weights.get_unchecked(i).set(w);
            sums.delta += (delta * *self.weights.get_unchecked(i)).powi(2);
            sums.correction += (correction * w).powi(2);
        }
    }
}

/// `Σ (v_i w_i)²`, in independent lanes.
fn weighted_squares(v: &[f64], weights: &[f64]) -> f64 {
    let n = v.len();
    let weights = &weights[..n];
    let mut sums = [0.0; LANES];
    in_lanes(n, |i, lane| sums[lane] += (v[i] * weights[i]).powi(2));
    sums.iter().sum()
}

/// `L` states side by side, one per lane: each state's arithmetic in the passes over the
/// differences is a short chain of dependent operations, and a block's chains run at once in
/// the processor's vector lanes. The passes take [`LANES`] states at a time, and the last few
/// one by one (`L = 1`), with the same code.
type Block<const L: usize> = [f64; L];

/// Differences 0 ..= MAX_ORDER + 2 of a block of states.
type BlockDifferences<const L: usize> = [Block<L>; DIFFERENCES];

/// States `base .. base + L` of `v`.
#[inline(always)]
fn load<const L: usize>(v: &[f64], base: usize) -> Block<L> {
    *v[base..].first_chunk::<L>().expect("a whole block")
}

/// Writes `block` to states `base .. base + L` of `v`.
#[inline(always)]
fn store<const L: usize>(v: &mut [f64], base: usize, block: &Block<L>) {
    *v[base..].first_chunk_mut::<L>().expect("a whole block") = *block;
}

/// Differences 0 ..= `last` of the block at `base`.
#[inline(always)]
fn load_differences<const L: usize, R: std::ops::Deref<Target = [f64]>>(
    rows: &[R; DIFFERENCES],
    last: usize,
    base: usize,
) -> BlockDifferences<L> {
    let mut d = [[0.0; L]; DIFFERENCES];
    for (block, row) in d.iter_mut().zip(rows).take(last + 1) {
        *block = load(row, base);
    }
    d
}

/// Writes differences 0 ..= `last` of the block at `base` back to `rows`.
#[inline(always)]
fn store_differences<const L: usize>(
    rows: &mut Rows<'_>,
    d: &BlockDifferences<L>,
    last: usize,
    base: usize,
) {
    for (row, block) in rows.iter_mut().zip(d).take(last + 1) {
        store(row, base, block);
    }
}

/// The per-state arithmetic of predicting and updating the differences at order `K` (a
/// constant, so that the short loops over the differences unroll), block by block.
struct Predictor<const K: usize> {
    /// γ_j / α_K for j = 0..=K (γ_0 = 0).
    psi: [f64; MAX_ORDER + 1],
}

impl<const K: usize> Predictor<K> {
    fn new(coef: &Coefficients) -> Predictor<K> {
        let to_psi = 1.0 / coef.alpha[K];
        Predictor {
            psi: std::array::from_fn(|j| if j <= K { coef.gamma[j] * to_psi } else { 0.0 }),
        }
    }

    /// The prediction `Σ D[0..=K]` and ψ = Σ γ_j D[j] / α_K of a block's differences.
    // Indexed loops (here and in `update`): in the iterator forms clippy suggests, the
    // heat exchanger's integration took 45 % longer.
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    fn predict<const L: usize>(&self, d: &BlockDifferences<L>) -> [Block<L>; 2] {
        let (mut y, mut psi) = (d[0], [0.0; L]);
        for j in 1..=K {
            for lane in 0..L {
                y[lane] += d[j][lane];
                psi[lane] += self.psi[j] * d[j][lane];
            }
        }
        [y, psi]
    }

    /// Adds a step's `correction` to a block's differences 0 ..= K + 1, which makes
    /// difference K + 2 too.
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    fn update<const L: usize>(&self, d: &mut BlockDifferences<L>, correction: &Block<L>) {
        for lane in 0..L {
            d[K + 2][lane] = correction[lane] - d[K + 1][lane];
        }
        d[K + 1] = *correction;
        for i in (0..=K).rev() {
            for lane in 0..L {
                d[i][lane] += d[i + 1][lane];
            }
        }
    }
}

/// Calls `$run::<K>` for the order `$order` as a constant.
macro_rules! at_order {
    ($order:expr, $run:ident ( $($arg:expr),* )) => {
        match $order {
            1 => $run::<1>($($arg),*),
            2 => $run::<2>($($arg),*),
            3 => $run::<3>($($arg),*),
            4 => $run::<4>($($arg),*),
            _ => $run::<MAX_ORDER>($($arg),*),
        }
    };
}
use at_order;

/// The first states of the whole blocks of `n` states, and the states left after them.
fn blocks(n: usize) -> (std::iter::StepBy<Range<usize>>, Range<usize>) {
    let whole = n - n % LANES;
    ((0..whole).step_by(LANES), whole..n)
}

/// The predictor of every state at order `K` into `y` and `psi`.
fn predict_at<const K: usize>(
    coef: &Coefficients,
    d: &Differences,
    y: &mut [f64],
    psi: &mut [f64],
) {
    let predictor = Predictor::<K>::new(coef);
    let rows: [&[f64]; DIFFERENCES] = std::array::from_fn(|j| d.row(j));
    #[inline(always)]
    fn block<const K: usize, const L: usize>(
        predictor: &Predictor<K>,
        (rows, y, psi): (&[&[f64]; DIFFERENCES], &mut [f64], &mut [f64]),
        base: usize,
    ) {
        let [y_block, psi_block] = predictor.predict::<L>(&load_differences(rows, K, base));
        store(y, base, &y_block);
        store(psi, base, &psi_block);
    }
    let (whole, rest) = blocks(d.n);
    for base in whole {
        block::<K, LANES>(&predictor, (&rows, y, psi), base);
    }
    for i in rest {
        block::<K, 1>(&predictor, (&rows, y, psi), i);
    }
}

/// The work vectors the accepting pass reads (the step's correction, the new solution's error
/// weights) and writes (the next prediction), and the states' differences, which it updates.
struct Accepted<'a> {
    rows: Rows<'a>,
    correction: &'a [f64],
    weights: &'a [f64],
    y: &'a mut [f64],
    psi: &'a mut [f64],
}

/// [`Accepted`] shared between the threads of a pair, state by state.
struct SharedAccepted<'a> {
    rows: [&'a [SharedF64]; DIFFERENCES],
    correction: &'a [f64],
    weights: &'a [f64],
    y: &'a [SharedF64],
    psi: &'a [SharedF64],
}

impl<'a> Accepted<'a> {
    fn share(self) -> SharedAccepted<'a> {
        SharedAccepted {
            rows: self.rows.map(share),
            correction: self.correction,
            weights: self.weights,
            y: share(self.y),
            psi: share(self.psi),
        }
    }

    /// The accepting pass at order `K` over the block at `base`: the update and the next
    /// prediction; returns the weighted squares of differences K and K + 2.
    #[inline(always)]
    fn block<const K: usize, const L: usize>(
        &mut self,
        predictor: &Predictor<K>,
        base: usize,
    ) -> [Block<L>; 2] {
        let mut d = load_differences(&self.rows, K + 1, base);
        predictor.update::<L>(&mut d, &load(self.correction, base));
        store_differences(&mut self.rows, &d, K + 2, base);
        let [y, psi] = predictor.predict(&d);
        store(self.y, base, &y);
        store(self.psi, base, &psi);
        let w = load::<L>(self.weights, base);
        [d[K], d[K + 2]].map(|x| std::array::from_fn(|lane| (x[lane] * w[lane]).powi(2)))
    }
}

impl SharedAccepted<'_> {
    /// The states `run`, as this thread's own.
    ///
    /// # Safety
    /// No other thread touches those states' entries while the result lives.
    unsafe fn exclusive(&self, run: Range<usize>) -> Accepted<'_> {
        // SAFETY: by the caller's promise.
        unsafe {
            Accepted {
                rows: self.rows.map(|row| exclusive(&row[run.clone()])),
                correction: &self.correction[run.clone()],
                weights: &self.weights[run.clone()],
                y: exclusive(&self.y[run.clone()]),
                psi: exclusive(&self.psi[run]),
            }
        }
    }
}

/// The accepting pass at order `K` (see [`Bdf::update_differences`]), in blocks; each lane
/// sums the squares of its states (state `i` of a block in lane `i`, and so the states left
/// after the whole blocks).
fn update_at<const K: usize>(coef: &Coefficients, out: Accepted<'_>) -> [f64; 2] {
    // Checked once per pass; std caches the answer.
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2.
        return unsafe { update_at_avx2::<K>(coef, out) };
    }
    update_in_blocks::<K>(coef, out)
}

/// [`update_in_blocks`] compiled for AVX2: a block's four states in one vector register
/// instead of two (x86-64's baseline SSE2). No fused multiply-add, so that the results are
/// the same on every x86-64 processor. At N = 300 the heat exchanger's integration took
/// about 4 % less time (4.51 → 4.34 ms, best of 8 rounds in one process).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn update_at_avx2<const K: usize>(coef: &Coefficients, out: Accepted<'_>) -> [f64; 2] {
    update_in_blocks::<K>(coef, out)
}

/// The accepting pass itself (see [`update_at`]).
#[inline(always)]
fn update_in_blocks<const K: usize>(coef: &Coefficients, mut out: Accepted<'_>) -> [f64; 2] {
    let predictor = Predictor::<K>::new(coef);
    let mut sums = [[0.0; LANES]; 2];
    let (whole, rest) = blocks(out.correction.len());
    for base in whole {
        let squares = out.block::<K, LANES>(&predictor, base);
        for (sum, square) in sums.iter_mut().zip(squares) {
            for lane in 0..LANES {
                sum[lane] += square[lane];
            }
        }
    }
    for (lane, i) in rest.enumerate() {
        let squares = out.block::<K, 1>(&predictor, i);
        for (sum, [square]) in sums.iter_mut().zip(squares) {
            sum[lane] += square;
        }
    }
    sums.map(|lanes| lanes.iter().fold(0.0, |total, s| total + s))
}

/// Maps every state's differences 0 ..= K to a step size `factor` times the current one:
/// `D[0..=K] := (R·U)ᵀ D[0..=K]` with `R = rescaling(K, factor)`, `U = rescaling(K, 1)`.
fn rescale_at<const K: usize>(d: &mut Differences, factor: f64) {
    let (r, u) = (rescaling(K, factor), rescaling(K, 1.0));
    let mut ru: Square = [[0.0; DIFFERENCES]; DIFFERENCES];
    for (i, row) in ru.iter_mut().enumerate().take(K + 1) {
        for (j, x) in row.iter_mut().enumerate().take(K + 1) {
            *x = (0..=K).map(|m| r[i][m] * u[m][j]).sum();
        }
    }
    #[inline(always)]
    fn block<const K: usize, const L: usize>(ru: &Square, rows: &mut Rows<'_>, base: usize) {
        let old = load_differences::<L, _>(rows, K, base);
        let mut new = [[0.0; L]; DIFFERENCES];
        for (ru_row, old) in ru.iter().zip(&old).take(K + 1) {
            for (x, &a) in new.iter_mut().zip(ru_row).take(K + 1) {
                for lane in 0..L {
                    x[lane] += a * old[lane];
                }
            }
        }
        store_differences(rows, &new, K, base);
    }
    let (whole, rest) = blocks(d.n);
    let mut rows = d.rows_mut();
    for base in whole {
        block::<K, LANES>(&ru, &mut rows, base);
    }
    for i in rest {
        block::<K, 1>(&ru, &mut rows, i);
    }
}

/// Differences 0 ..= MAX_ORDER + 2 of every state.
const DIFFERENCES: usize = MAX_ORDER + 3;

/// Every state's differences, row by row: row `j` holds difference `j` of every state, so
/// that the passes over the differences take the states in blocks, one per vector lane.
struct Differences {
    n: usize,
    values: Vec<f64>,
}

/// The rows of [`Differences`], each writable on its own.
type Rows<'a> = [&'a mut [f64]; DIFFERENCES];

impl Differences {
    fn new(n: usize) -> Differences {
        Differences {
            n,
            values: vec![0.0; DIFFERENCES * n],
        }
    }

    /// Difference `j` of every state.
    fn row(&self, j: usize) -> &[f64] {
        &self.values[j * self.n..(j + 1) * self.n]
    }

    fn rows_mut(&mut self) -> Rows<'_> {
        let n = self.n;
        let mut rest = self.values.as_mut_slice();
        std::array::from_fn(|_| {
            let (row, tail) = std::mem::take(&mut rest).split_at_mut(n);
            rest = tail;
            row
        })
    }

    /// The current solution (difference 0).
    fn solution(&self) -> Vec<f64> {
        self.row(0).to_vec()
    }
}

/// A matrix over differences 0 ..= order, held in a fixed square (zero past the order) so that
/// a step-size change allocates nothing.
type Square = [[f64; DIFFERENCES]; DIFFERENCES];

/// The matrix R with `R[i][j] = Π_{m=1..i} (m − 1 − factor·j) / m` (R[0][j] = 1), which maps
/// differences for one step size to those for `factor` times it.
fn rescaling(order: usize, factor: f64) -> Square {
    let mut r = [[0.0; DIFFERENCES]; DIFFERENCES];
    r[0][..=order].fill(1.0);
    for i in 1..=order {
        let previous = r[i - 1];
        for (j, x) in r[i].iter_mut().enumerate().take(order + 1) {
            *x = previous[j] * (i as f64 - 1.0 - factor * j as f64) / i as f64;
        }
    }
    r
}

/// The next representable number above `t`.
fn next_up(t: f64) -> f64 {
    if t.is_nan() || t == f64::INFINITY {
        return t;
    }
    if t == 0.0 {
        return f64::from_bits(1);
    }
    let bits = t.to_bits();
    f64::from_bits(if t > 0.0 { bits + 1 } else { bits - 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Backward differences 0 ..= k of `p` on the grid `t, t − h, t − 2h, …`.
    fn backward_differences(p: impl Fn(f64) -> f64, t: f64, h: f64, k: usize) -> Vec<f64> {
        let mut values: Vec<f64> = (0..=k).map(|i| p(t - i as f64 * h)).collect();
        let mut differences = vec![values[0]];
        for _ in 0..k {
            values = values.windows(2).map(|w| w[0] - w[1]).collect();
            differences.push(values[0]);
        }
        differences
    }

    /// Rescaled differences of a polynomial of degree K are the polynomial's differences on
    /// the new grid (the rescaling is exact there).
    fn check_rescaling<const K: usize>(p: impl Fn(f64) -> f64 + Copy) {
        for factor in [0.3, 0.5, 1.7, 2.0] {
            let mut d = Differences::new(1);
            for (row, x) in d
                .rows_mut()
                .iter_mut()
                .zip(backward_differences(p, 2.0, 0.1, K))
            {
                row[0] = x;
            }
            rescale_at::<K>(&mut d, factor);
            let expected = backward_differences(p, 2.0, 0.1 * factor, K);
            for (j, want) in expected.iter().enumerate() {
                let got = d.row(j)[0];
                assert!(
                    (got - want).abs() < 1e-12,
                    "order {K}, factor {factor}, difference {j}: {got} against {want}"
                );
            }
        }
    }

    /// The accepting pass's results for `n` states at order 3 from fixed pseudo-random
    /// data, through `pass`: the differences, the prediction and the two sums.
    fn accepted_by(
        n: usize,
        pass: impl FnOnce(&Coefficients, Accepted<'_>) -> [f64; 2],
    ) -> (Vec<f64>, Vec<f64>, [f64; 2]) {
        let value = |k: usize| ((k * 7919 % 1000) as f64 - 500.0) / 37.0;
        let mut d = Differences::new(n);
        for (k, x) in d.values.iter_mut().enumerate() {
            *x = value(k);
        }
        let correction: Vec<f64> = (0..n).map(|i| value(i + 5000)).collect();
        let weights: Vec<f64> = (0..n)
            .map(|i| 1.0 / (1.0 + value(i + 9000).abs()))
            .collect();
        let (mut y, mut psi) = (vec![0.0; n], vec![0.0; n]);
        let out = Accepted {
            rows: d.rows_mut(),
            correction: &correction,
            weights: &weights,
            y: &mut y,
            psi: &mut psi,
        };
        let sums = pass(&Coefficients::new(), out);
        y.extend(psi);
        (d.values, y, sums)
    }

    #[test]
    fn the_accepting_pass_is_the_same_with_avx2_or_without() {
        // 11 states: two whole blocks and three left over.
        let plain = accepted_by(11, update_in_blocks::<3>);
        let chosen = accepted_by(11, update_at::<3>);
        assert_eq!(plain, chosen);
        // And it is the pass: difference 4 (K + 1) is now the correction.
        let correction_of_state_2 = ((5002 * 7919 % 1000) as f64 - 500.0) / 37.0;
        assert_eq!(plain.0[4 * 11 + 2], correction_of_state_2);
    }

    #[test]
    fn rescaling_the_differences_resamples_the_polynomial() {
        check_rescaling::<2>(|t| 1.0 + 0.5 * t - 0.25 * t * t);
        check_rescaling::<MAX_ORDER>(|t| {
            1.0 + 0.5 * t - 0.25 * t.powi(2) + 0.125 * t.powi(3) - 0.01 * t.powi(4)
                + 0.002 * t.powi(5)
        });
    }
}
