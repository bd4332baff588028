//! The partition options `simulate` and `compare` share: which states a mixed method steps
//! implicitly (`--fast`, or `--partition auto` from cycle analysis), at which rate
//! (`--multirate`, `--levels`), and how the levels read each other (`--interpolate`).

use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, ValueEnum};
use serde_json::json;

use super::cycles::{DEFAULT_BUDGET_CYCLES, DEFAULT_BUDGET_SECONDS, chosen_point};
use crate::analysis::analyse;
use crate::analysis::johnson::Budget;
use crate::analysis::operating_point::Model;
use crate::causal::{Causal, Point};
use crate::dae::Dae;
use crate::diagnostics::Diagnostic;
use crate::jacobian::OdeJacobian;
use crate::numfmt::Number;
use crate::partition::{Interpolation, MixedMethod, Partition};
use crate::simulate::stability::{MixedStep, StepMap, allowed_radius};
use crate::source::SourceMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PartitionArg {
    None,
    Weak,
    Auto,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExchangeArg {
    GaussSeidel,
    Jacobi,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum InterpolateArg {
    Hold,
    Linear,
}

#[derive(Args, Clone, Debug)]
pub struct PartitionArgs {
    /// `none`: the model as one system; `weak`: each weak subsystem stepped on its own;
    /// `auto`: a mixed method's fast states from cycle analysis at the initial state (h̄ <
    /// `--step` at `--alpha`)
    #[arg(long, value_enum, default_value_t = PartitionArg::None)]
    pub partition: PartitionArg,
    /// How the subsystems of `--partition weak` exchange weak values within a step:
    /// `gauss-seidel` one after the other, each reading the values published before it in the
    /// same step; `jacobi` every one from the previous step's values, at once on two threads
    #[arg(long, value_enum, default_value_t = ExchangeArg::GaussSeidel)]
    pub exchange: ExchangeArg,
    /// The fast states of a mixed method (stepped implicitly; the others explicitly): names
    /// or globs with `*`, e.g. `'T_a[*],x'`
    #[arg(long, value_name = "a,b*,..")]
    pub fast: Option<String>,
    /// `--partition auto`: the gain bound α of cycle analysis
    #[arg(long, value_parser = super::cycles::positive, allow_negative_numbers = true)]
    pub alpha: Option<f64>,
    /// `--partition auto`: the levels (the split applied again inside the fast part at
    /// `--step`/m, `--step`/m², …; needs `--multirate m`)
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..100))]
    pub levels: Option<u64>,
    /// The fast level takes m steps per `--step` (each level m times as many as the one
    /// before)
    #[arg(long, value_name = "m", value_parser = clap::value_parser!(u64).range(1..1_000_000))]
    pub multirate: Option<u64>,
    /// How a level reads the slower levels over their step: `linear` between their old and new
    /// values, or `hold` their new value
    #[arg(long, value_enum)]
    pub interpolate: Option<InterpolateArg>,
    /// Print the states of each level of the partition
    #[arg(long)]
    pub verbose: bool,
}

const DEFAULT_ALPHA: f64 = 0.5;

impl PartitionArgs {
    /// Checks that the options go together for a run with `mixed` (a mixed method or none).
    pub fn check(&self, mixed: Option<MixedMethod>) -> Result<(), &'static str> {
        let weak = self.partition == PartitionArg::Weak;
        let auto = self.partition == PartitionArg::Auto;
        if self.exchange == ExchangeArg::Jacobi && !weak {
            return Err(
                "`--exchange jacobi` needs `--partition weak` (it says how weak \
                        subsystems exchange values)",
            );
        }
        // With `--partition weak`, a mixed method splits each subsystem: by `--fast`, or by
        // cycle analysis of the split model when `--fast` is not given.
        let analysed = auto || (weak && mixed.is_some() && self.fast.is_none());
        match mixed {
            Some(_) if !(auto || weak) && self.fast.is_none() => {
                Err("mixed methods need `--fast` or `--partition auto`")
            }
            Some(_) if auto && self.fast.is_some() => {
                Err("`--fast` names the fast states itself: leave out `--partition auto`")
            }
            None if auto || self.fast.is_some() => Err(
                "`--fast` and `--partition auto` need a mixed method (mixed-euler, \
                 mixed-midpoint, mixed-trapezoidal)",
            ),
            None if self.multirate.is_some() || self.interpolate.is_some() => {
                Err("`--multirate` and `--interpolate` need a mixed method")
            }
            _ if !analysed && (self.alpha.is_some() || self.levels.is_some()) => Err(
                "`--alpha` and `--levels` need `--partition auto` (or a mixed method with \
                 `--partition weak` and no `--fast`)",
            ),
            _ if self.levels.unwrap_or(1) > 1 && self.multirate.unwrap_or(1) == 1 => Err(
                "`--levels` above 1 needs `--multirate` m > 1 (each level steps m times as often)",
            ),
            _ => Ok(()),
        }
    }

    fn interpolation(&self) -> Interpolation {
        match self.interpolate {
            Some(InterpolateArg::Hold) => Interpolation::Hold,
            Some(InterpolateArg::Linear) | None => Interpolation::Linear,
        }
    }
}

/// The chosen partition and how it was found.
pub struct Chosen {
    pub partition: Partition,
    /// `--partition auto`: the α and the seconds cycle analysis took.
    pub analysis: Option<(f64, f64)>,
}

/// What a model offers the partition choice.
pub struct Subject<'a> {
    pub sources: &'a SourceMap,
    pub dae: &'a Dae,
    pub causal: &'a Causal,
    pub jacobian: &'a OdeJacobian,
}

/// The partition of a mixed method: `--fast`, or cycle analysis at the initial state with
/// `--partition auto`. Prints what went wrong and returns the exit code on failure.
pub fn choose(
    args: &PartitionArgs,
    method: MixedMethod,
    subject: &Subject<'_>,
    (step, steps): (f64, u64),
) -> Result<Chosen, ExitCode> {
    let rate = args.multirate.unwrap_or(1);
    let n = subject.causal.states.len();
    let (partition, analysis) = match &args.fast {
        Some(list) => {
            let fast =
                fast_states(subject.dae, subject.causal, list).map_err(super::usage_error)?;
            (Partition::two_level(method, n, fast, rate), None)
        }
        None => {
            let alpha = args.alpha.unwrap_or(DEFAULT_ALPHA);
            let clock = Instant::now();
            let (h_bar, point, values) = step_bounds(subject, alpha)?;
            let seconds = clock.elapsed().as_secs_f64();
            let levels = args.levels.unwrap_or(1) as usize;
            let partition = Partition::from_bounds(method, &h_bar, step, levels, rate)
                .with_interpolation(args.interpolation());
            let explicit_step = ExplicitStep {
                point: &point,
                jacobian: &values,
                h_bar: &h_bar,
                step,
                steps,
            };
            let partition = stabilise(subject, partition, &explicit_step);
            if partition.fast().is_empty() {
                let note = format!(
                    "partition auto: no state has h̄ < {} at α = {alpha}: no state is fast, \
                     every one is stepped explicitly",
                    Number(step / rate.pow(levels as u32 - 1) as f64)
                );
                super::report(subject.sources, &[Diagnostic::warning(note)]);
            }
            (partition, Some((alpha, seconds)))
        }
    };
    Ok(Chosen {
        partition: partition.with_interpolation(args.interpolation()),
        analysis,
    })
}

/// What the check of a partition's explicit levels reads: the operating point and J's values
/// there, the step bounds, the step and the run's number of steps.
struct ExplicitStep<'a> {
    point: &'a Point,
    jacobian: &'a [(usize, usize, f64)],
    h_bar: &'a [f64],
    step: f64,
    steps: u64,
}

/// Rounds of moving one cluster of equal bounds before each round moves twice as many states.
const CLUSTER_ROUNDS: usize = 8;

/// `partition` with its explicit levels checked at the step (a cycle bound is a gain bound,
/// not a proof of stability): while the spectral radius of the mixed step exceeds what the
/// model's own flow allows ([`allowed_radius`]), the fastest explicit states by h̄ move to
/// the implicit level, a cluster of equal bounds at a time (the states of one fast mode share
/// their bound; moving only some of them can leave a stable step that trades the mode's
/// energy into the others), and after [`CLUSTER_ROUNDS`] rounds twice as many each round. A
/// warning gives the figures when states moved, or when the step cannot be checked.
fn stabilise(subject: &Subject<'_>, partition: Partition, at: &ExplicitStep<'_>) -> Partition {
    let model = (subject.dae, subject.causal, subject.jacobian);
    let allowed = allowed_radius(at.jacobian, at.h_bar.len(), at.step, at.steps);
    let fast = partition.fast().to_vec();
    let mut explicit: Vec<usize> = (0..at.h_bar.len()).filter(|i| !fast.contains(i)).collect();
    explicit.sort_by(|&a, &b| at.h_bar[a].total_cmp(&at.h_bar[b]).then(a.cmp(&b)));
    let (mut partition, mut moved, mut rounds) = (partition, Vec::new(), 0usize);
    let mut radii = Vec::new();
    while !explicit.is_empty() {
        let radius = match MixedStep::new(model, at.point, &partition).spectral_radius(at.step) {
            Ok(r) => r,
            Err(e) => {
                let note = format!(
                    "partition auto: the explicit levels' step at h = {} cannot be checked for \
                     stability (the step fails at the initial state: {e:?}); they are stepped \
                     as cycle analysis chose them",
                    Number(at.step)
                );
                super::report(subject.sources, &[Diagnostic::warning(note)]);
                return partition;
            }
        };
        radii.push(radius);
        if radius <= allowed {
            break;
        }
        let least = rounds
            .checked_sub(CLUSTER_ROUNDS)
            .map_or(1, |r| 1usize << r.min(30));
        let bound = |k: usize| at.h_bar[explicit[k]];
        let cluster = (1..explicit.len())
            .find(|&k| k >= least && bound(k) > bound(k - 1) * (1.0 + 1e-9))
            .unwrap_or(explicit.len());
        moved.extend(explicit.drain(..cluster));
        rounds += 1;
        partition = partition.with_fast(&moved);
    }
    if !moved.is_empty() {
        let names: Vec<&str> = (moved.iter())
            .map(|&i| subject.dae.var(subject.causal.states[i]).name.as_str())
            .collect();
        let after = match (explicit.is_empty(), radii.last()) {
            (false, Some(&r)) => format!("the explicit step's radius is now {}", Number(r)),
            _ => "every state is now implicit".to_string(),
        };
        let note = format!(
            "partition auto: the explicit step at h = {} has spectral radius {}, above the {} \
             the model's own flow allows (cycle bounds are gain bounds, not stability): {} \
             moved to the implicit level; {after}",
            Number(at.step),
            Number(radii[0]),
            Number(allowed),
            names.join(", ")
        );
        super::report(subject.sources, &[Diagnostic::warning(note)]);
    }
    partition
}

/// Each state's step bound h̄ at α (SPEC §7) at the initial state, with the point and J's
/// values there; a model whose cycles bound no state has nothing to split.
#[allow(clippy::type_complexity)]
fn step_bounds(
    subject: &Subject<'_>,
    alpha: f64,
) -> Result<(Vec<f64>, Point, Vec<(usize, usize, f64)>), ExitCode> {
    let m = Model {
        dae: subject.dae,
        causal: subject.causal,
        jacobian: subject.jacobian,
    };
    let (mut point, _) =
        chosen_point(&m, &Default::default()).map_err(|f| f.report(subject.sources))?;
    let values = m
        .values_at(&mut point)
        .map_err(|e| super::cycles::Failure::Model(super::cycles::point_diagnostic(&m, e)))
        .map_err(|f| f.report(subject.sources))?;
    let budget = Budget {
        max_cycles: Some(DEFAULT_BUDGET_CYCLES),
        max_time: Some(std::time::Duration::from_secs_f64(DEFAULT_BUDGET_SECONDS)),
    };
    let analysis = analyse(
        subject.causal.states.len(),
        std::slice::from_ref(&values),
        alpha,
        budget,
        &mut |_| {},
    );
    if !analysis.enumeration.complete() {
        let note = "partition auto: the cycle enumeration stopped at its budget; the fast \
                    states are those of the cycles found (`mocca cycles` lists them)";
        super::report(subject.sources, &[Diagnostic::warning(note)]);
    }
    // No cycle bounds any state (h̄ = ∞ for all): no state is fast, as where every bound is
    // above the step; `choose` says so.
    let h_bar = analysis.bounds.h_bar;
    Ok((h_bar, point, values))
}

/// The states `--fast` names: a comma list of state names and globs (`*` stands for any
/// characters); a name that is no state, or a glob that matches none, is refused.
fn fast_states(dae: &Dae, causal: &Causal, list: &str) -> Result<Vec<usize>, String> {
    let mut fast = Vec::new();
    for pattern in super::simulate::split_names(list) {
        let unquoted = super::simulate::unquote(&pattern);
        let before = fast.len();
        if unquoted.contains('*') {
            fast.extend(
                causal
                    .states
                    .iter()
                    .enumerate()
                    .filter(|&(_, &v)| glob_matches(unquoted, &dae.var(v).name))
                    .map(|(i, _)| i),
            );
        } else if let Some(v) = dae.lookup(unquoted) {
            fast.extend(causal.states.iter().position(|&s| s == v));
        }
        if fast.len() == before {
            return Err(format!("`--fast`: `{pattern}` names no state of the model"));
        }
    }
    Ok(fast)
}

/// Whether `name` matches `pattern`, where each `*` stands for any characters.
fn glob_matches(pattern: &str, name: &str) -> bool {
    let mut pieces = pattern.split('*');
    let first = pieces.next().unwrap_or("");
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let mut pieces: Vec<&str> = pieces.collect();
    let Some(last) = pieces.pop() else {
        return rest.is_empty();
    };
    for piece in pieces {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

fn state_names<'a>(dae: &'a Dae, causal: &Causal, states: &[usize]) -> Vec<&'a str> {
    states
        .iter()
        .map(|&i| dae.var(causal.states[i]).name.as_str())
        .collect()
}

/// `"partition"` of the JSON output: per level, fast first, its states (by name), method,
/// rate and, after a run, the evaluations of `f` its steps made (`level_f_evals`, slowest
/// first; none before a run).
pub fn to_json(
    dae: &Dae,
    causal: &Causal,
    partition: &Partition,
    level_f_evals: &[u64],
) -> serde_json::Value {
    let parts = partition.parts();
    let count = parts.len();
    let parts: Vec<serde_json::Value> = parts
        .iter()
        .enumerate()
        .map(|(k, part)| {
            let mut v = json!({
                "states": state_names(dae, causal, part.states),
                "method": part.method.name(),
                "rate": part.rate,
            });
            if let Some(&evals) = level_f_evals.get(count - 1 - k) {
                v["f_evals"] = json!(evals);
            }
            v
        })
        .collect();
    json!(parts)
}

/// The partition's lines of the text output: how it was found, then a line per level (fast
/// first), with its states' names when `verbose`.
pub fn describe(
    dae: &Dae,
    causal: &Causal,
    chosen: &Chosen,
    level_f_evals: &[u64],
    verbose: bool,
) -> Vec<String> {
    let partition = &chosen.partition;
    let mut lines = Vec::new();
    if let Some((alpha, seconds)) = chosen.analysis {
        lines.push(format!(
            "partition auto (cycle analysis at α = {alpha}: {seconds:.3} s), interpolation {}",
            partition.interpolation.name()
        ));
    } else {
        lines.push(format!(
            "partition --fast, interpolation {}",
            partition.interpolation.name()
        ));
    }
    let parts = partition.parts();
    let count = parts.len();
    for (k, part) in parts.iter().enumerate() {
        let speed = match count - 1 - k {
            0 => "slow".to_string(),
            _ if k == 0 => "fast".to_string(),
            level => format!("level-{level}"),
        };
        let evals = level_f_evals.get(count - 1 - k).copied().unwrap_or(0);
        lines.push(format!(
            "  {} {speed} states ({}, {} step{} per step): {evals} f evaluations",
            part.states.len(),
            part.method.name(),
            part.rate,
            if part.rate == 1 { "" } else { "s" }
        ));
        if verbose && !part.states.is_empty() {
            lines.push(format!(
                "    {}",
                state_names(dae, causal, part.states).join(", ")
            ));
        }
    }
    lines
}
