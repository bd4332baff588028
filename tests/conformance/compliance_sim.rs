//! Simulates one test of the Modelica compliance suite to its experiment's StopTime, as the
//! suite means its tests to be run: translated, simulated, every assert holding.

use mocca::causal::{causal_form, initial_point};
use mocca::diagnostics::render_plain;
use mocca::frontend::flatten_sources;
use mocca::jacobian::ode_jacobian;
use mocca::simulate::fixed_step::Method;
use mocca::simulate::run::{self, Exchange, Failure, Model, Options, Partition};
use mocca::source::SourceMap;
use mocca::structure;

/// How far one test got.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Not translated (outside the subset, or rejected): the checks were not run.
    NotTranslated(String),
    /// Translated, but the simulation stopped before StopTime for another reason.
    NotSimulated(String),
    /// Simulated; an assert failed.
    CheckFailed(String),
    /// Simulated to StopTime with every assert holding at every output point.
    Passed,
}

/// `StopTime = 0.01` → 0.01 (the suite's default experiment is 0 → 1).
fn experiment(text: &str, key: &str) -> Option<f64> {
    let at = text.find(key)? + key.len();
    let rest = text[at..].trim_start().strip_prefix('=')?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c)))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

pub fn run_one(
    name: &str,
    text: String,
    model: &str,
    experiment_text: &str,
    expect_checks: bool,
) -> Outcome {
    let mut sources = SourceMap::new();
    let id = sources.add(name.to_string(), text);
    let flat = match flatten_sources(sources, &[id], Some(model), &[]) {
        Ok(flat) => flat,
        Err((s, d)) => return Outcome::NotTranslated(first_line(&render_plain(&s, &d))),
    };
    if flat.dae.equations.len() != flat.dae.unknowns() {
        return Outcome::NotTranslated("unbalanced".to_string());
    }
    let asserts = flat.dae.assertions.len();
    let mut dae = match structure::prepare(flat.dae) {
        Ok((dae, _)) => dae,
        Err(d) => return Outcome::NotTranslated(first_line(&render_plain(&flat.sources, &d))),
    };
    let structure = match structure::analyse(&dae) {
        Ok(s) => s,
        Err(d) => return Outcome::NotTranslated(first_line(&render_plain(&flat.sources, &d))),
    };
    let causal = causal_form(&mut dae, &structure);
    let jac = ode_jacobian(&mut dae, &causal);
    let start = match initial_point(&dae) {
        Ok(p) => p,
        Err(f) => return Outcome::NotTranslated(format!("parameters: {f:?}")),
    };
    let t0 = experiment(experiment_text, "StartTime").unwrap_or(0.0);
    let t1 = experiment(experiment_text, "StopTime").unwrap_or(1.0);
    let options = Options {
        method: Method::ImplicitEuler,
        start: t0,
        stop: t1,
        steps: 100,
        tol: 1e-10,
        partition: Partition::None,
        exchange: Exchange::GaussSeidel,
        max_step: f64::INFINITY,
    };
    let model = Model {
        dae: &dae,
        structure: &structure,
        causal: &causal,
        jac: &jac,
    };
    assert!(
        asserts > 0 || !expect_checks,
        "{name}: the checks were lost in translation"
    );
    match run::simulate_bdf(model, &start, &options, &[]) {
        Ok(_) => Outcome::Passed,
        Err(Failure::Assertion(v)) => {
            let a = &dae.assertions[v.assertion];
            Outcome::CheckFailed(format!("t = {}: {}", v.time, a.message))
        }
        Err(other) => Outcome::NotSimulated(format!("{other:?}")),
    }
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_string()
}
