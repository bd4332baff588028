//! Shared by the simulation tests: load a model (an example or inline text) through the
//! pipeline up to the causal form and its Jacobian.
#![allow(dead_code)]

use std::path::Path;

use mocca::causal::{Causal, causal_form};
use mocca::dae::Dae;
use mocca::diagnostics::render_plain;
use mocca::frontend::flatten_sources;
use mocca::jacobian::{OdeJacobian, ode_jacobian};
use mocca::load;
use mocca::source::{FileId, SourceMap};
use mocca::structure::{self, Structure};

pub struct Loaded {
    pub dae: Dae,
    pub structure: Structure,
    pub causal: Causal,
    pub jac: OdeJacobian,
}

impl Loaded {
    pub fn model(&self) -> mocca::simulate::run::Model<'_> {
        mocca::simulate::run::Model {
            dae: &self.dae,
            structure: &self.structure,
            causal: &self.causal,
            jac: &self.jac,
        }
    }
}

pub fn example_path(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

pub fn example(name: &str, params: &[(&str, &str)]) -> Loaded {
    let mut sources = SourceMap::new();
    let ids = load::load_paths(&mut sources, &[example_path(name)]).expect("example exists");
    pipeline(sources, &ids, params)
}

pub fn inline(text: &str) -> Loaded {
    let mut sources = SourceMap::new();
    let id = sources.add("test.mo", text);
    pipeline(sources, &[id], &[])
}

fn pipeline(sources: SourceMap, ids: &[FileId], params: &[(&str, &str)]) -> Loaded {
    let params: Vec<(String, String)> = params
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let flat = match flatten_sources(sources, ids, None, &params) {
        Ok(flat) => flat,
        Err((s, d)) => panic!("{}", render_plain(&s, &d)),
    };
    let (mut dae, _) = structure::prepare(flat.dae).expect("index reduction");
    let structure =
        structure::analyse(&dae).unwrap_or_else(|d| panic!("{}", render_plain(&flat.sources, &d)));
    let causal = causal_form(&mut dae, &structure);
    let jac = ode_jacobian(&mut dae, &causal);
    Loaded {
        dae,
        structure,
        causal,
        jac,
    }
}

/// A deterministic pseudo-random stream in [-1, 1) (xorshift), so failures reproduce.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

pub const EXAMPLES: [&str; 9] = [
    "dc_motor.mo",
    "half_car.mo",
    "heat_exchanger.mo",
    "power_shaft.mo",
    "quarter_car.mo",
    "quarter_car_components.mo",
    "rc_ladder.mo",
    "rc_ladder_weak.mo",
    "two_masses.mo",
];

/// `der(x) = A x` for a dense matrix `A`, every entry in the Jacobian's pattern.
pub struct Linear {
    a: nalgebra::DMatrix<f64>,
    pattern: Vec<(usize, usize)>,
}

impl Linear {
    pub fn new(a: nalgebra::DMatrix<f64>) -> Linear {
        let n = a.nrows();
        let pattern = (0..n).flat_map(|r| (0..n).map(move |c| (r, c))).collect();
        Linear { a, pattern }
    }
}

impl mocca::simulate::OdeSystem for Linear {
    fn dim(&self) -> usize {
        self.a.nrows()
    }
    fn rhs(&mut self, _: f64, x: &[f64], dx: &mut [f64]) -> Result<(), mocca::causal::EvalFailure> {
        let ax = &self.a * nalgebra::DVector::from_column_slice(x);
        dx.copy_from_slice(ax.as_slice());
        Ok(())
    }
    fn jacobian_pattern(&self) -> &[(usize, usize)] {
        &self.pattern
    }
    fn jacobian(
        &mut self,
        _: f64,
        _: &[f64],
        values: &mut [f64],
    ) -> Result<(), mocca::causal::EvalFailure> {
        for (v, &(r, c)) in values.iter_mut().zip(&self.pattern) {
            *v = self.a[(r, c)];
        }
        Ok(())
    }
    fn jacobian_is_constant(&self) -> bool {
        true
    }
}

/// SPEC §10's weak RC ladder (R1 = 0.1, C1 = 1, R3 = 1, E = 1) at step `dt`:
/// `(a1, a2, b2, b3) = (Δt/(R1 C1), Δt/(R2 C1), Δt/(R2 C2), Δt/(R3 C2))` and `E`.
pub fn ladder_coefficients(r2: f64, c2: f64, dt: f64) -> ([f64; 4], f64) {
    let (r1, c1, r3, e) = (0.1, 1.0, 1.0, 1.0);
    let coefficients = [
        dt / (r1 * c1),
        dt / (r2 * c1),
        dt / (r2 * c2),
        dt / (r3 * c2),
    ];
    (coefficients, e)
}
