//! Simulation (SPEC §6): integrators over an [`OdeSystem`], initialisation and results.

pub mod bdf;
pub mod fixed_step;
pub mod linear;
pub mod model;
pub mod system;
pub mod tape;

pub use system::{OdeSystem, Stats};
