//! A model compiled by `mocca emit`: [`Model`] holds its registers (parameters settable until
//! it is initialised), [`Simulation`] initialises it and advances it step by step (what a rig
//! calls), [`simulate`] runs it over a grid.
//!
//! ```no_run
//! let model = emitted::Model::new();
//! let mut sim = emitted::Simulation::new(model, 0.0).expect("initialises");
//! for _ in 0..1000 {
//!     sim.step(emitted::model::STEP).expect("steps");
//! }
//! println!("{:?}", sim.states());
//! ```

pub mod clauses;
pub mod dense_lu;
pub mod equations;
pub mod event_driver;
pub mod events;
pub mod externals;
pub mod fft;
pub mod files;
pub mod fixed_step;
pub mod grid;
pub mod init;
pub mod mixed;
pub mod model;
pub mod newton;
pub mod numfmt;
pub mod pair;
pub mod pivoting_lu;
pub mod sparse_factor;
pub mod runtime;
pub mod switching;
pub mod weak;
pub mod written_lu;

pub use runtime::{
    Failure, FixedStep, Integrator, Method, MixedStepper, Model, Simulation, Stats, Stepper,
};

/// A run's settings: the defaults are those the crate was emitted with.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub start: f64,
    pub stop: f64,
    pub step: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            start: model::START,
            stop: model::STOP,
            step: model::STEP,
        }
    }
}

/// The number of steps of `settings`' grid: `(stop − start)/step` rounded, at least one.
pub fn steps(settings: Settings) -> u64 {
    (((settings.stop - settings.start) / settings.step).round() as u64).max(1)
}

/// Initialises `model` at `settings.start` and steps it to `settings.stop` by `settings.step`
/// (rounded to a whole number of steps, at least one), calling `record(t, x)` at every output
/// time with the states (in `model::STATE_NAMES` order).
pub fn simulate(
    model: &mut Model,
    settings: Settings,
    record: impl FnMut(f64, &[f64]),
) -> Result<(), Failure> {
    let mut x = model.initialize_over((settings.start, settings.stop))?;
    integrate(model, settings, &mut x, record)
}

/// Steps an initialised `model` from the state `x` over `settings`' grid.
pub fn integrate(
    model: &mut Model,
    settings: Settings,
    x: &mut [f64],
    record: impl FnMut(f64, &[f64]),
) -> Result<(), Failure> {
    let grid = (settings.start, settings.stop, steps(settings));
    let mut integrator = Integrator::new(model);
    runtime::run(model, &mut integrator, grid, x, record)
}
