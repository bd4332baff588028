//! Simulation (SPEC §6): integrators over an [`OdeSystem`], initialisation and results.

pub mod system;

pub use system::{OdeSystem, Stats};
