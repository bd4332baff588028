//! `mocca emit` (SPEC §12): a standalone Rust crate that integrates the model with a fixed
//! step, in straight-line code generated from the same compiled form `mocca simulate`
//! interprets. The crate depends on `std` only: `Cargo.toml`, `src/lib.rs` (the [`Model`]
//! API a rig embeds), `src/main.rs` (the runner), `src/runtime.rs` (the integrators, written
//! once for every model) and the generated `src/model.rs`.
//!
//! `code` is the builder the generated text goes through, `rust` turns instructions and
//! expressions into Rust, `model` writes `model.rs`; the other files are templates.
//!
//! [`Model`]: template/lib.rs

mod code;
pub mod fmu;
mod functions;
pub mod model;
mod program;
mod rust;
pub mod ssp;

use crate::causal::{Causal, Point};
use crate::dae::Dae;
use crate::jacobian::OdeJacobian;
use crate::partition::Partition;
use crate::simulate::fixed_step::Method;
use crate::simulate::model::{CompiledModel, Layout};
use crate::simulate::partition::weak_layout;
use crate::simulate::run::{Exchange, level_rows};
use crate::structure::Structure;

const RUNTIME: &str = include_str!("template/runtime.rs");
const EVENTS: &str = include_str!("template/events.rs");
const LIB: &str = include_str!("template/lib.rs");
const MAIN: &str = include_str!("template/main.rs");
const CARGO: &str = include_str!("template/Cargo.toml");

/// What the crate runs: a single method or a partition's levels, whether weak subsystems step
/// apart, its default grid `(start, stop, step)` and the Newton tolerance of its implicit
/// stages.
#[derive(Clone, Copy)]
pub struct Settings<'a> {
    pub method: Stepping<'a>,
    /// Weak subsystems stepped apart (`--partition weak`), exchanging as said.
    pub weak: Option<(&'a Structure, Exchange)>,
    pub grid: (f64, f64, f64),
    pub tol: f64,
    pub events: EventMode,
}

/// How the crate handles a relation that switches inside a step.
pub use mocca_runtime::grid::EventMode;

#[derive(Clone, Copy, Debug)]
pub enum Stepping<'a> {
    Single(Method),
    Mixed(&'a Partition),
}

/// The crate's files, by path inside it, in a fixed order.
pub fn crate_files(
    dae: &Dae,
    causal: &Causal,
    jac: &OdeJacobian,
    start: &Point,
    settings: Settings<'_>,
) -> Vec<(String, String)> {
    let (method, partition) = match settings.method {
        Stepping::Single(m) => (m, None),
        Stepping::Mixed(p) => (p.method.fast(), Some(p)),
    };
    // Compiled as `simulate` compiles it: a partition's levels evaluate their rows alone;
    // weak subsystems step on a second program whose weak reads are exchanged.
    let layout = match (partition, settings.weak) {
        (Some(p), None) => level_rows(dae, causal, p),
        _ => Layout::whole(causal),
    };
    let compiled = CompiledModel::new(dae, causal, jac, start, &layout);
    let weak = settings
        .weak
        .map(|(structure, exchange)| (weak_layout((dae, structure, causal, jac), start), exchange));
    let input = model::Input {
        dae,
        causal,
        compiled: &compiled,
        method: variant(method),
        single: method,
        implicit: partition.is_none() && method.is_implicit(),
        grid: settings.grid,
        tol: settings.tol,
        events: settings.events,
        partition,
        weak: weak.as_ref().map(|(layout, exchange)| (layout, *exchange)),
    };
    let model = model::model_rs(&input);
    let binary = binary_name(&dae.model);
    // Cargo tells packages apart by name and version: two emitted crates sharing a target
    // directory (a sweep over parameters, tests) must not share a name, or one's build is
    // taken for the other's.
    let package = format!("{binary}-{:016x}", fnv1a(model.as_bytes()));
    let mut files = vec![
        (
            "Cargo.toml".to_string(),
            CARGO
                .replace("{BIN}", &binary)
                .replace("{PACKAGE}", &package),
        ),
        ("src/events.rs".to_string(), EVENTS.to_string()),
        ("src/lib.rs".to_string(), LIB.to_string()),
        ("src/main.rs".to_string(), MAIN.to_string()),
        ("src/model.rs".to_string(), model),
        ("src/runtime.rs".to_string(), RUNTIME.to_string()),
    ];
    // The shared runtime, as it is: the emitted code solves as `simulate` does.
    files.extend(
        mocca_runtime::SOURCES
            .iter()
            .map(|(path, text)| (path.to_string(), text.to_string())),
    );
    files.sort();
    files
}

/// The binary's name: the model's, lower case, other characters than letters and digits as
/// `_`.
pub fn binary_name(model: &str) -> String {
    let name: String = model
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        name
    } else {
        format!("model_{name}")
    }
}

/// The 64-bit FNV-1a hash of `bytes` (stable across runs and machines).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

pub(crate) fn variant(method: Method) -> &'static str {
    match method {
        Method::ExplicitEuler => "ExplicitEuler",
        Method::ExplicitMidpoint => "ExplicitMidpoint",
        Method::Heun => "Heun",
        Method::ImplicitEuler => "ImplicitEuler",
        Method::ImplicitMidpoint => "ImplicitMidpoint",
        Method::Trapezoidal => "Trapezoidal",
    }
}
