//! Simulation (SPEC §6): integrators over an [`OdeSystem`], initialisation and results.
//!
//! `tape` compiles the causal form (`batch` evaluates runs of one loop equation's instances
//! together), `model` wraps it as an [`OdeSystem`], `init` solves the
//! initial system, `fixed_step` holds the fixed-step methods (with `linear` for their Newton
//! matrix), `mixed` steps a partition's levels (explicit slow levels, an implicit fast one; `rows`
//! compiles each level's rows to be evaluated alone), `partition`
//! steps weak subsystems (one after the other, or at once on two threads), `run` ties them together
//! `stability` takes the spectral radius of a weak-partitioned step,
//! `events` finds and handles the hybrid DAE's events, `assertions` checks the model's
//! `assert`s on the way (`step_checks` at every step BDF accepts), and `results` writes and compares
//! trajectories.

pub mod assertions;
pub mod batch;
pub mod bdf;
pub mod dissection;
pub mod events;
pub mod fixed_step;
pub mod functions;
pub mod init;
pub mod linear;
pub mod mixed;
pub mod model;
pub mod partition;
pub mod results;
pub mod rows;
pub mod run;
pub mod stability;
pub mod static_lu;
pub mod step_checks;
pub mod system;
pub mod tape;
pub mod writes;

pub use mocca_runtime::{dense_lu, pair};
pub use system::{OdeSystem, Stats};
