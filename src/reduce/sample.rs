//! The reference run a reduction ranks against, and the verification runs of reduced models:
//! a flat model simulated as one system, every variable sampled at evenly spread instants.

use crate::causal::{Causal, EvalFailure, Point, WeakCycle, causal_form, initial_point};
use crate::dae::{Dae, VarKind};
use crate::diagnostics::Diagnostic;
use crate::expr::Node;
use crate::jacobian::{OdeJacobian, WeakReadsAs, ode_jacobian_with};
use crate::simulate::fixed_step::Method;
use crate::simulate::run::{self, Exchange, Failure, Model, Options, Partition};
use crate::simulate::stability::spectral_radius;
use crate::structure::Unknown;

use super::terms::AliasDerivatives;

/// How to simulate: a fixed-step method at `step`, or the BDF at `tol`.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// `None`: the BDF.
    pub method: Option<Method>,
    pub start: f64,
    pub stop: f64,
    pub step: f64,
    pub tol: f64,
    /// Instants sampled, the first at `start` and the last at `stop` (at least 2).
    pub samples: usize,
}

/// A simulated model: its prepared form (whose pool evaluates the flat model's expressions)
/// and every variable and derivative at each sampled instant.
pub struct Sampled {
    pub prepared: Dae,
    pub points: Vec<Point>,
    causal: Causal,
    jacobian: OdeJacobian,
}

impl Sampled {
    /// The model's fastest rate over the run: at each sample the largest modulus of an
    /// eigenvalue of the ODE Jacobian `∂f/∂x` (see [`spectral_radius`]), and its median over
    /// the samples, so a short stiffening (a curb) does not set it; `None` when every sample's
    /// is 0 (or none can be evaluated).
    pub fn fastest_rate(&self) -> Option<f64> {
        let n = self.causal.states.len();
        let mut rates: Vec<f64> = (self.points.iter())
            .map(|p| {
                let entries = self.jacobian.values(&self.prepared, &self.causal, p);
                spectral_radius(&entries, n)
            })
            .filter(|rate| rate.is_finite() && *rate > 0.0)
            .collect();
        rates.sort_by(f64::total_cmp);
        let middle = rates.len() / 2;
        match rates.len() {
            0 => None,
            k if k % 2 == 1 => Some(rates[middle]),
            _ => Some(0.5 * (rates[middle - 1] + rates[middle])),
        }
    }

    /// Per variable of the prepared model: whether its errors are `measured`.
    pub fn measured(&self, measured: Measured) -> Vec<bool> {
        let dae = &self.prepared;
        let kind = |v: usize| dae.variables[v].kind;
        let drives = match measured {
            Measured::States => self.drive_derivatives(),
            Measured::Unknowns => vec![false; dae.variables.len()],
        };
        let mut included: Vec<bool> = (0..dae.variables.len())
            .map(|v| match kind(v) {
                VarKind::State => true,
                VarKind::Algebraic => !drives[v],
                _ => false,
            })
            .collect();
        // Nothing reads an alias (it was substituted), but the reduction may change its own
        // equation: it counts as what it stands for does (a constant one, substituted where it
        // was read, as a driver).
        for v in dae.var_ids().filter(|&v| dae.var(v).kind == VarKind::Alias) {
            let Some(binding) = dae.var(v).binding else {
                continue;
            };
            let mut reads_included = false;
            dae.pool.visit_leaves(binding, |leaf| {
                if let Node::Var(w) = leaf {
                    reads_included |= included[w.0 as usize];
                }
            });
            included[v.0 as usize] = measured == Measured::Unknowns || reads_included;
        }
        included
    }

    /// Per variable: whether a state's derivative depends on it, through the causal form's
    /// steps taken backwards from the derivatives.
    fn drive_derivatives(&self) -> Vec<bool> {
        let n = self.prepared.variables.len();
        let (mut drives, mut rate_needed) = (vec![false; n], vec![false; n]);
        for &x in &self.causal.states {
            rate_needed[x.0 as usize] = true;
        }
        for step in self.causal.steps.iter().rev() {
            let needed = step.targets().iter().any(|t| match *t {
                Unknown::Derivative(v) => rate_needed[v.0 as usize],
                Unknown::Algebraic(v) => drives[v.0 as usize],
            });
            if !needed {
                continue;
            }
            for &e in step.exprs() {
                self.prepared.pool.visit_leaves(e, |leaf| match leaf {
                    Node::Var(v) => drives[v.0 as usize] = true,
                    Node::Der(v) => rate_needed[v.0 as usize] = true,
                    _ => {}
                });
            }
        }
        drives
    }
}

/// Why a model could not be simulated.
#[derive(Debug)]
pub enum SampleError {
    /// Structural analysis refused the model.
    Structure(Vec<Diagnostic>),
    /// A parameter or start value could not be evaluated.
    Start(EvalFailure),
    /// The simulation failed (with the prepared model and causal form its diagnostic names).
    Run(Box<(Failure, Dae, crate::causal::Causal)>),
}

/// Simulates `flat` as `settings` say and samples it.
pub fn sample(flat: &Dae, settings: &Settings) -> Result<Sampled, SampleError> {
    sample_observed(flat, settings, |_, _| {})
}

/// [`sample`], calling `progress` with the steps (or output intervals) done and their total
/// as the run goes.
pub fn sample_observed(
    flat: &Dae,
    settings: &Settings,
    mut progress: impl FnMut(u64, u64),
) -> Result<Sampled, SampleError> {
    let (mut prepared, _) =
        crate::structure::prepare(flat.clone()).map_err(SampleError::Structure)?;
    let structure = crate::structure::analyse(&prepared).map_err(SampleError::Structure)?;
    let causal = causal_form(&mut prepared, &structure);
    let (causal, reads) = match causal.with_weak_reads_after_writers(&prepared) {
        Ok(ordered) => (ordered, WeakReadsAs::Current),
        Err(WeakCycle { causal, .. }) => (causal, WeakReadsAs::Held),
    };
    let jac = ode_jacobian_with(&mut prepared, &causal, reads);
    let start = initial_point(&prepared).map_err(SampleError::Start)?;
    let n = prepared.variables.len();
    let mut outputs: Vec<Unknown> = prepared.var_ids().map(Unknown::Algebraic).collect();
    outputs.extend(causal.states.iter().map(|&s| Unknown::Derivative(s)));
    let intervals = match settings.method {
        None => settings.samples as u64 - 1,
        Some(_) => (((settings.stop - settings.start) / settings.step).round() as u64).max(1),
    };
    let options = Options {
        method: settings.method.unwrap_or(Method::ImplicitEuler),
        start: settings.start,
        stop: settings.stop,
        steps: intervals,
        tol: settings.tol,
        partition: Partition::None,
        exchange: Exchange::GaussSeidel,
        max_step: f64::INFINITY,
    };
    let model = Model {
        dae: &prepared,
        structure: &structure,
        causal: &causal,
        jac: &jac,
    };
    let steps = options.steps;
    let show = |done| progress(done, steps);
    let result = match settings.method {
        None => run::simulate_bdf_observed(model, &start, &options, &outputs, show),
        Some(_) => run::simulate(model, &start, &options, &outputs, show),
    };
    let trajectory = match result {
        Ok(t) => t,
        Err(f) => return Err(SampleError::Run(Box::new((f, prepared, causal)))),
    };
    let rows = sample_rows(&trajectory.times, settings.samples);
    let mut points: Vec<Point> = rows
        .into_iter()
        .map(|k| {
            let mut point = Point {
                vars: trajectory.columns[..n].iter().map(|c| c[k]).collect(),
                ders: vec![f64::NAN; n],
                time: trajectory.times[k],
            };
            for (i, &s) in causal.states.iter().enumerate() {
                point.ders[s.0 as usize] = trajectory.columns[n + i][k];
            }
            point
        })
        .collect();
    let aliases = AliasDerivatives::new(&mut prepared);
    for point in &mut points {
        aliases.complete(&prepared, point);
    }
    Ok(Sampled {
        prepared,
        points,
        causal,
        jacobian: jac,
    })
}

/// The rows of the run nearest to `count` instants evenly spread over its time range.
fn sample_rows(times: &[f64], count: usize) -> Vec<usize> {
    let (first, last) = (times[0], times[times.len() - 1]);
    (0..count)
        .map(|k| {
            let t = first + (last - first) * k as f64 / (count - 1).max(1) as f64;
            let after = times.partition_point(|&s| s < t).min(times.len() - 1);
            match after {
                0 => 0,
                a if (times[a] - t).abs() < (t - times[a - 1]).abs() => a,
                a => a - 1,
            }
        })
        .collect()
}

/// The variables a reduction's errors are measured on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measured {
    /// The states, as Sodja and Žlajpah measure (what drives them shows in them), and the
    /// variables no state's derivative depends on (outputs, aliases: no state shows their
    /// error).
    States,
    /// Every unknown: states, algebraic and alias variables.
    Unknowns,
}

impl Measured {
    /// The name `--error-on` gives it.
    pub fn name(self) -> &'static str {
        match self {
            Measured::States => "states",
            Measured::Unknowns => "unknowns",
        }
    }
}

/// The scale of a variable's errors: its largest magnitude over the reference samples (1
/// where that is 0 or there are none), so an error is relative to the variable's ∞-norm over
/// the run, as the paper's are.
pub fn scale(values: impl Iterator<Item = f64>) -> f64 {
    let largest = values.fold(0.0f64, |m, x| m.max(x.abs()));
    if largest > 0.0 { largest } else { 1.0 }
}

/// The largest deviation of `run` from `reference` over the variables both have, paired by
/// name, that are `measured` in either, at the samples, in percent of each one's [`scale`]
/// over the reference samples, as the one-step prediction's.
pub fn error_percent(reference: &Sampled, run: &Sampled, measured: Measured) -> f64 {
    let (full, reduced) = (&reference.prepared, &run.prepared);
    // What the reduction made an output counts too (a weight whose force nothing reads now).
    let (in_full, in_reduced) = (reference.measured(measured), run.measured(measured));
    let mut worst = 0.0f64;
    for v in full.var_ids() {
        let Some(w) = reduced.lookup(&full.var(v).name) else {
            continue;
        };
        if !in_full[v.0 as usize] && !in_reduced[w.0 as usize] {
            continue;
        }
        let (i, j) = (v.0 as usize, w.0 as usize);
        let scale = scale(reference.points.iter().map(|p| p.vars[i]));
        for (r, p) in reference.points.iter().zip(&run.points) {
            let d = (p.vars[j] - r.vars[i]).abs() / scale;
            // A value that is no number is as far off as can be.
            worst = worst.max(if d.is_nan() { f64::INFINITY } else { d });
        }
    }
    100.0 * worst
}
