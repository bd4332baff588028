//! `mocca suggest-weak`: every `connect` of the model, in each orientation, tried as a weak
//! cut and ranked by how the decoupled scheme would run at the step the user has in mind:
//! the subsystems it gives, the spectral radius of the partitioned step (SPEC §10) at the
//! operating points and the largest stable step, the error of the one-step lag and the
//! Newton cost saved. `--apply K` writes the source with the K-th cut made weak.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use clap::Args;
use serde_json::{Value, json};

use super::Format;
use super::cycles::{Failure, PointArgs, chosen_point, point_diagnostic, positive};
use super::model::{ModelArgs, load_model_sources};
use super::partition::ExchangeArg;
use super::table::{Align, print_table};
use crate::analysis::operating_point::{Model, PointError};
use crate::causal::{Causal, Point, causal_form, initial_point};
use crate::dae::{Dae, VarKind};
use crate::diagnostics::Diagnostic;
use crate::frontend::{ConnectSite, Loaded};
use crate::jacobian::{OdeJacobian, WeakReadsAs, ode_jacobian_with};
use crate::numfmt::format_number;
use crate::simulate::fixed_step::Method;
use crate::simulate::run::Exchange;
use crate::simulate::stability::{
    DecoupledStep, Limit, Scheme, StepMap, is_stable, stability_limit,
};
use crate::source::SourceMap;
use crate::structure::Structure;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemeMethod {
    ImplicitEuler,
    ImplicitMidpoint,
    Trapezoidal,
}

impl SchemeMethod {
    fn method(self) -> Method {
        match self {
            SchemeMethod::ImplicitEuler => Method::ImplicitEuler,
            SchemeMethod::ImplicitMidpoint => Method::ImplicitMidpoint,
            SchemeMethod::Trapezoidal => Method::Trapezoidal,
        }
    }
}

#[derive(Args, Debug)]
pub struct SuggestWeakArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The step H the decoupled scheme is to run at (> 0).
    #[arg(long, value_parser = positive, allow_negative_numbers = true)]
    pub step: f64,
    /// Each subsystem's method.
    #[arg(long, value_enum, default_value_t = SchemeMethod::ImplicitEuler)]
    pub method: SchemeMethod,
    /// How the subsystems exchange weak values within a step (as `simulate --exchange`).
    #[arg(long, value_enum, default_value_t = ExchangeArg::GaussSeidel)]
    pub exchange: ExchangeArg,
    #[command(flatten)]
    pub point: PointArgs,
    /// Write the source with `weak` on the K-th candidate's `connect` (needs `--out`).
    #[arg(long, value_name = "K", requires = "out", value_parser = clap::value_parser!(u64).range(1..))]
    pub apply: Option<u64>,
    /// Where `--apply` writes the edited source.
    #[arg(long, value_name = "FILE.mo", requires = "apply")]
    pub out: Option<PathBuf>,
}

/// One cut: a `connect`, which side is weak in the potential and which in the flow.
struct Cut<'s> {
    site: &'s ConnectSite,
    /// `(side, variable)` weak in the potential, then in the flow; `a_first` when the
    /// connect's first side is the potential-weak one.
    potential: (String, String),
    flow: (String, String),
    a_first: bool,
}

/// What trying a cut gave.
enum Outcome {
    Ranked(Assessment),
    /// The cut does not give a model mocca can split: why.
    Rejected(String),
}

struct Assessment {
    subsystems: Vec<(usize, usize)>,
    radius: f64,
    limit: Limit,
    coupling_error: f64,
    states: usize,
    warnings: Vec<String>,
}

impl Assessment {
    fn stable(&self) -> bool {
        is_stable(self.radius)
    }

    /// Dense LU work before (one system of every state) and after (each subsystem's).
    fn flops(&self) -> (f64, f64) {
        let cube = |n: usize| (n as f64).powi(3) / 3.0;
        let after = self
            .subsystems
            .iter()
            .map(|&(states, _)| cube(states))
            .sum();
        (cube(self.states), after)
    }
}

pub fn run(args: &SuggestWeakArgs) -> ExitCode {
    if let Some(path) = &args.out
        && let Err(message) = super::check_writable(path)
    {
        return super::failure_without_source(message, ExitCode::from(1));
    }
    let (loaded, warnings) = match load_model_sources(&args.model) {
        Ok(ok) => ok,
        Err((sources, diags)) => {
            super::report(&sources, &diags);
            return super::exit_code(&diags);
        }
    };
    super::report(&loaded.sources, &warnings);
    let model_name = args.model.model.as_deref();
    let (dae, flat_warnings) = match loaded.flatten(model_name) {
        Ok(ok) => ok,
        Err(diags) => {
            super::report(&loaded.sources, &diags);
            return super::exit_code(&diags);
        }
    };
    super::report(&loaded.sources, &flat_warnings);
    let sites: Vec<ConnectSite> = dae
        .model_span
        .map(|span| loaded.connects_of(span))
        .unwrap_or_default()
        .into_iter()
        .filter(|site| !site.weak)
        .collect();
    if sites.is_empty() {
        let d = Diagnostic::error(format!(
            "`{}` has no `connect` of its own that is not weak already: there is nothing to cut",
            dae.model
        ));
        let d = match dae.model_span {
            Some(span) => d.at(span, "this model"),
            None => d,
        };
        super::report(&loaded.sources, &[d]);
        return ExitCode::from(1);
    }
    let (cuts, skipped) = cuts(&dae, &sites);
    let points = match operating_points(dae, &args.point) {
        Ok(points) => points,
        Err(failure) => return failure.report(&loaded.sources),
    };
    let scheme = Scheme {
        method: args.method.method(),
        exchange: match args.exchange {
            ExchangeArg::GaussSeidel => Exchange::GaussSeidel,
            ExchangeArg::Jacobi => Exchange::Jacobi,
        },
    };
    let outcomes = on_every_processor(&cuts, |cut| {
        assess(&loaded, model_name, cut, &points, scheme, args.step)
    });
    let mut tried: Vec<(Cut<'_>, Outcome)> = cuts.into_iter().zip(outcomes).collect();
    tried.sort_by(|a, b| rank(&a.1, &b.1));
    if let Some(k) = args.apply {
        let out = args.out.as_ref().expect("clap requires --out with --apply");
        return apply(&loaded.sources, &tried, k as usize, out);
    }
    match args.model.format() {
        Format::Json => super::print_json(&json_report(&loaded.sources, &tried, &skipped, args)),
        Format::Text => print_report(&loaded.sources, &tried, &skipped, args),
    }
    ExitCode::SUCCESS
}

/// `assess` of every cut, the cuts shared out among the processors as they finish; the
/// outcomes in the cuts' order, whatever thread computed them.
fn on_every_processor(
    cuts: &[Cut<'_>],
    assess: impl Fn(&Cut<'_>) -> Outcome + Sync,
) -> Vec<Outcome> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Option<Outcome>>> = Mutex::new((0..cuts.len()).map(|_| None).collect());
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(cut) = cuts.get(i) else { break };
            let outcome = assess(cut);
            done.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(outcome);
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..threads.min(cuts.len()) {
            // A thread that cannot start leaves its share to the others.
            let _ = std::thread::Builder::new()
                .stack_size(super::STACK_BYTES)
                .spawn_scoped(scope, work);
        }
        work();
    });
    let done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    done.into_iter()
        .zip(cuts)
        .map(|(outcome, cut)| outcome.unwrap_or_else(|| assess(cut)))
        .collect()
}

/// The operating points, as `cycles` takes them (the initial state by default, `--at`,
/// `--steady`, or rows of `--trajectory`), each as the states' values by name.
fn operating_points(mut dae: Dae, args: &PointArgs) -> Result<Vec<Vec<(String, f64)>>, Failure> {
    let (dae_prepared, structure) = prepared(std::mem::take(&mut dae))
        .map_err(|diags| Failure::Model(diags.into_iter().next().expect("an error")))?;
    dae = dae_prepared;
    let causal = causal_form(&mut dae, &structure);
    let causal = causal
        .with_weak_reads_after_writers(&dae)
        .unwrap_or_else(|cycle| cycle.causal);
    let jacobian = ode_jacobian_with(&mut dae, &causal, WeakReadsAs::Current);
    let m = Model {
        dae: &dae,
        causal: &causal,
        jacobian: &jacobian,
    };
    let model_error = |e| Failure::Model(point_diagnostic(&m, e));
    let points: Vec<Point> = if let Some(path) = &args.trajectory {
        let start = initial_point(&dae).map_err(|f| model_error(PointError::Eval(f)))?;
        let text = std::fs::read_to_string(path).map_err(|e| {
            Failure::Model(Diagnostic::error(format!(
                "cannot read `{}`: {e}",
                path.display()
            )))
        })?;
        m.trajectory(&start, &text, args.samples as usize)
            .map_err(model_error)?
    } else {
        let (point, _) = chosen_point(&m, &args.at.clone().unwrap_or_default())?;
        if args.steady {
            vec![m.steady_state(point).map_err(model_error)?]
        } else {
            vec![point]
        }
    };
    let names = m.state_names();
    Ok(points
        .iter()
        .map(|p| {
            (causal.states.iter().zip(&names))
                .map(|(v, name)| (name.clone(), p.vars[v.0 as usize]))
                .collect()
        })
        .collect())
}

fn prepared(dae: Dae) -> Result<(Dae, Structure), Vec<Diagnostic>> {
    let (dae, _) = crate::structure::prepare(dae)?;
    let structure = crate::structure::analyse(&dae)?;
    Ok((dae, structure))
}

/// Each site in both orientations (its connector's variables read off the flat model `dae`);
/// the sites that cannot be cut, with why.
fn cuts<'s>(dae: &Dae, sites: &'s [ConnectSite]) -> (Vec<Cut<'s>>, Vec<(&'s ConnectSite, String)>) {
    let mut cuts = Vec::new();
    let mut skipped = Vec::new();
    for site in sites {
        let (potential, flow) = match connector_pair(dae, site) {
            Ok(pair) => pair,
            Err(why) => {
                skipped.push((site, why));
                continue;
            }
        };
        let (a, b) = (site.a.dotted(), site.b.dotted());
        for a_first in [true, false] {
            let (p_side, f_side) = if a_first { (&a, &b) } else { (&b, &a) };
            cuts.push(Cut {
                site,
                potential: (p_side.clone(), potential.clone()),
                flow: (f_side.clone(), flow.clone()),
                a_first,
            });
        }
    }
    (cuts, skipped)
}

/// The connector's potential and flow variable: a cut needs exactly one of each.
fn connector_pair(dae: &Dae, site: &ConnectSite) -> Result<(String, String), String> {
    let subscripted =
        |r: &crate::syntax::ast::ComponentRef| r.parts.iter().any(|p| !p.subscripts.is_empty());
    if subscripted(&site.a) || subscripted(&site.b) {
        return Err("a `connect` of array elements is not tried".into());
    }
    let prefix = format!("{}.", site.a.dotted());
    let (mut potentials, mut flows) = (Vec::new(), Vec::new());
    for v in dae.var_ids() {
        let var = dae.var(v);
        let Some(field) = var.name.strip_prefix(&prefix) else {
            continue;
        };
        if field.contains(['.', '[']) || matches!(var.kind, VarKind::Parameter | VarKind::Constant)
        {
            continue;
        }
        match var.flow {
            true => flows.push(field.to_string()),
            false => potentials.push(field.to_string()),
        }
    }
    match (potentials.as_slice(), flows.as_slice()) {
        ([p], [f]) => Ok((p.clone(), f.clone())),
        _ => Err(format!(
            "its connector has {} potential and {} flow variables; a cut needs one of each",
            potentials.len(),
            flows.len()
        )),
    }
}

/// Flattens the model with the cut made weak and assesses the decoupled scheme at `step`.
fn assess(
    loaded: &Loaded,
    model: Option<&str>,
    cut: &Cut<'_>,
    points: &[Vec<(String, f64)>],
    scheme: Scheme,
    step: f64,
) -> Outcome {
    let weak = if cut.a_first {
        [cut.potential.1.as_str(), cut.flow.1.as_str()]
    } else {
        [cut.flow.1.as_str(), cut.potential.1.as_str()]
    };
    let first_error = |diags: Vec<Diagnostic>| {
        let d = diags
            .into_iter()
            .find(|d| d.is_error())
            .map_or_else(|| "the model does not flatten".to_string(), |d| d.message);
        Outcome::Rejected(d)
    };
    let dae = match loaded.flatten_with_weak(model, cut.site.span, weak) {
        Ok((dae, _)) => dae,
        Err(diags) => return first_error(diags),
    };
    let (mut dae, structure) = match prepared(dae) {
        Ok(ok) => ok,
        Err(diags) => return first_error(diags),
    };
    if structure.subsystems.len() < 2 {
        return Outcome::Rejected("the model stays one subsystem: the cut splits nothing".into());
    }
    let causal = causal_form(&mut dae, &structure);
    let held = ode_jacobian_with(&mut dae, &causal, WeakReadsAs::Held);
    let coupled = causal.clone().with_weak_reads_after_writers(&dae).ok();
    let current = coupled
        .as_ref()
        .map(|c| ode_jacobian_with(&mut dae, c, WeakReadsAs::Current));
    let evaluation = coupled.as_ref().unwrap_or(&causal);
    let cut_points: Vec<Point> = match points
        .iter()
        .map(|p| point_of(&dae, evaluation, p))
        .collect::<Result<_, String>>()
    {
        Ok(points) => points,
        Err(why) => return Outcome::Rejected(why),
    };
    let model = (&dae, &structure, &causal, &held);
    let mut steps: Vec<DecoupledStep> = (cut_points.iter())
        .map(|p| DecoupledStep::new(model, p, scheme))
        .collect();
    let mut radius_at = |h: f64| -> Result<f64, String> {
        let mut worst: f64 = 0.0;
        for s in &mut steps {
            let r =
                (s.spectral_radius(h)).map_err(|f| format!("the partitioned step fails: {f:?}"))?;
            worst = worst.max(r);
        }
        Ok(worst)
    };
    let radius = match radius_at(step) {
        Ok(r) => r,
        Err(why) => return Outcome::Rejected(why),
    };
    let limit = match stability_limit((step, radius), &mut radius_at) {
        Ok(limit) => limit,
        Err(why) => return Outcome::Rejected(why),
    };
    let coupling_error = match &current {
        Some(current) => (cut_points.iter())
            .map(|p| lag_error(&dae, (&causal, &held), (evaluation, current), p, step))
            .fold(0.0, f64::max),
        None => f64::NAN,
    };
    Outcome::Ranked(Assessment {
        subsystems: (structure.subsystems.iter())
            .map(|s| (s.states.len(), s.equations))
            .collect(),
        radius,
        limit,
        coupling_error,
        states: causal.states.len(),
        warnings: structure
            .warnings
            .iter()
            .map(|w| w.message.clone())
            .collect(),
    })
}

/// The cut model's start point with the operating point's states set by name, every unknown
/// evaluated there.
fn point_of(dae: &Dae, causal: &Causal, states: &[(String, f64)]) -> Result<Point, String> {
    let mut point = initial_point(dae).map_err(|f| format!("{f:?}"))?;
    for (name, value) in states {
        if let Some(v) = dae.lookup(name) {
            point.vars[v.0 as usize] = *value;
        }
    }
    causal
        .evaluate(&dae.pool, &mut point)
        .map_err(|f| format!("the cut model does not evaluate at the operating point: {f:?}"))?;
    Ok(point)
}

/// A first-order estimate of what the one-step lag costs: the cut entries of J (those the
/// weak reads carry, the difference between J with weak reads current and held), over one
/// step H, relative to the states' scales: `H · maxᵢ Σⱼ |ΔJᵢⱼ| sⱼ / sᵢ`, with `s` a state's
/// `nominal`, else `max(|x|, 1)`.
fn lag_error(
    dae: &Dae,
    (split, held): (&Causal, &OdeJacobian),
    (coupled, current): (&Causal, &OdeJacobian),
    point: &Point,
    step: f64,
) -> f64 {
    let n = split.states.len();
    let mut delta = vec![0.0; n * n];
    for (r, c, v) in current.values(dae, coupled, point) {
        delta[r * n + c] += v;
    }
    for (r, c, v) in held.values(dae, split, point) {
        delta[r * n + c] -= v;
    }
    let scale: Vec<f64> = (split.states.iter())
        .map(|&v| {
            let nominal = dae
                .var(v)
                .nominal
                .and_then(|e| dae.pool.eval(e, point).ok());
            nominal.map_or(point.vars[v.0 as usize].abs().max(1.0), f64::abs)
        })
        .collect();
    (0..n)
        .map(|i| {
            let lagged: f64 = (0..n).map(|j| delta[i * n + j].abs() * scale[j]).sum();
            step * lagged / scale[i]
        })
        .fold(0.0, f64::max)
}

/// Stable at H first, then the smaller lag error, then the larger saving; rejected last.
fn rank(a: &Outcome, b: &Outcome) -> std::cmp::Ordering {
    match (a, b) {
        (Outcome::Ranked(a), Outcome::Ranked(b)) => (b.stable().cmp(&a.stable()))
            .then(a.coupling_error.total_cmp(&b.coupling_error))
            .then(a.radius.total_cmp(&b.radius)),
        (Outcome::Ranked(_), Outcome::Rejected(_)) => std::cmp::Ordering::Less,
        (Outcome::Rejected(_), Outcome::Ranked(_)) => std::cmp::Ordering::Greater,
        (Outcome::Rejected(_), Outcome::Rejected(_)) => std::cmp::Ordering::Equal,
    }
}

fn connect_text(cut: &Cut<'_>) -> String {
    format!("connect({}, {})", cut.site.a.dotted(), cut.site.b.dotted())
}

fn limit_json(limit: Limit) -> Value {
    match limit {
        Limit::Below(h) => json!(h),
        Limit::Unbounded => json!("unbounded"),
        Limit::Unstable => json!(0.0),
    }
}

fn limit_text(limit: Limit, step: f64) -> String {
    match limit {
        Limit::Below(h) => format_number(h),
        Limit::Unbounded => format!("> {}", format_number(step * 2f64.powi(20))),
        Limit::Unstable => "none".into(),
    }
}

fn json_report(
    sources: &SourceMap,
    tried: &[(Cut<'_>, Outcome)],
    skipped: &[(&ConnectSite, String)],
    args: &SuggestWeakArgs,
) -> Value {
    let candidates: Vec<Value> = tried
        .iter()
        .map(|(cut, outcome)| {
            let mut entry = json!({
                "connect": connect_text(cut),
                "line": sources.line(cut.site.span),
                "orientation": {
                    "potential": format!("{}.{}", cut.potential.0, cut.potential.1),
                    "flow": format!("{}.{}", cut.flow.0, cut.flow.1),
                },
            });
            match outcome {
                Outcome::Ranked(a) => {
                    let (before, after) = a.flops();
                    let more = json!({
                        "subsystems": a.subsystems.iter()
                            .map(|&(states, equations)| json!({"states": states, "equations": equations}))
                            .collect::<Vec<_>>(),
                        "spectral_radius": a.radius,
                        "stable": a.stable(),
                        "max_step": limit_json(a.limit),
                        "coupling_error": super::cycles::finite_or_null(a.coupling_error),
                        "cost": {
                            "states": a.states,
                            "dense_lu_flops_before": before,
                            "dense_lu_flops_after": after,
                        },
                        "warnings": a.warnings,
                    });
                    for (k, v) in more.as_object().expect("an object") {
                        entry[k] = v.clone();
                    }
                }
                Outcome::Rejected(why) => entry["rejected"] = json!(why),
            }
            entry
        })
        .collect();
    let skipped: Vec<Value> = skipped
        .iter()
        .map(|(site, why)| {
            json!({
                "connect": format!("connect({}, {})", site.a.dotted(), site.b.dotted()),
                "line": sources.line(site.span),
                "why": why,
            })
        })
        .collect();
    json!({
        "step": args.step,
        "method": args.method.method().name(),
        "exchange": match args.exchange {
            ExchangeArg::GaussSeidel => "gauss-seidel",
            ExchangeArg::Jacobi => "jacobi",
        },
        "candidates": candidates,
        "skipped": skipped,
    })
}

fn print_report(
    sources: &SourceMap,
    tried: &[(Cut<'_>, Outcome)],
    skipped: &[(&ConnectSite, String)],
    args: &SuggestWeakArgs,
) {
    super::print_buffered(format_args!(
        "weak cuts at step {} ({}, {}), best first:\n",
        format_number(args.step),
        args.method.method().name(),
        match args.exchange {
            ExchangeArg::GaussSeidel => "Gauss–Seidel",
            ExchangeArg::Jacobi => "Jacobi",
        }
    ));
    let mut rows = Vec::new();
    for (k, (cut, outcome)) in tried.iter().enumerate() {
        let mut row = vec![
            (k + 1).to_string(),
            connect_text(cut),
            sources.line(cut.site.span).to_string(),
            format!("{}.{}", cut.potential.0, cut.potential.1),
            format!("{}.{}", cut.flow.0, cut.flow.1),
        ];
        match outcome {
            Outcome::Ranked(a) => {
                let sizes: Vec<String> = a.subsystems.iter().map(|&(s, _)| s.to_string()).collect();
                row.extend([
                    sizes.join("+"),
                    format_number(a.radius),
                    limit_text(a.limit, args.step),
                    format_number(a.coupling_error),
                    a.warnings.first().cloned().unwrap_or_default(),
                ]);
            }
            Outcome::Rejected(why) => {
                row.extend(["-".into(), "-".into(), "-".into(), "-".into(), why.clone()]);
            }
        }
        rows.push(row);
    }
    let (left, right) = (Align::Left, Align::Right);
    print_table(
        &[
            "#",
            "connect",
            "line",
            "weak potential",
            "weak flow",
            "states",
            "ρ at H",
            "max step",
            "lag error",
            "note",
        ],
        &rows,
        &[
            right, left, right, left, left, left, right, right, right, left,
        ],
    );
    let not_tried: String = skipped
        .iter()
        .map(|(site, why)| {
            format!(
                "not tried: connect({}, {}) (line {}): {why}\n",
                site.a.dotted(),
                site.b.dotted(),
                sources.line(site.span)
            )
        })
        .collect();
    super::print_buffered(not_tried);
}

/// Writes the source with the K-th candidate's `connect` made weak: text inserted after each
/// side's reference, every other byte as it was.
fn apply(sources: &SourceMap, tried: &[(Cut<'_>, Outcome)], k: usize, out: &Path) -> ExitCode {
    let Some((cut, outcome)) = tried.get(k - 1) else {
        return super::usage_error(format!(
            "`--apply {k}`: there are {} candidates",
            tried.len()
        ));
    };
    if let Outcome::Rejected(why) = outcome {
        return super::failure_without_source(
            format!(
                "candidate {k} ({}) cannot be applied: {why}",
                connect_text(cut)
            ),
            ExitCode::from(1),
        );
    }
    let (a_weak, b_weak) = if cut.a_first {
        (&cut.potential.1, &cut.flow.1)
    } else {
        (&cut.flow.1, &cut.potential.1)
    };
    let text = sources.text(cut.site.span.file);
    let mut edited = text.to_string();
    let mut inserts = [
        (cut.site.a.span.end as usize, format!("(weak {a_weak})")),
        (cut.site.b.span.end as usize, format!("(weak {b_weak})")),
    ];
    inserts.sort_by_key(|&(at, _)| std::cmp::Reverse(at));
    for (at, insert) in inserts {
        edited.insert_str(at, &insert);
    }
    match super::write_whole(out, |path| std::fs::write(path, edited.as_bytes())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => super::failure_without_source(message, ExitCode::from(1)),
    }
}
