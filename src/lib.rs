//! mocca: a compiler for a subset of Modelica that finds a model's time scales and splits it.
//!
//! The pipeline, one module per stage (see ARCHITECTURE.md):
//! text → [`syntax`] (tokens, AST) → …

// The runtime shared with the crates `mocca emit` writes (crates/mocca-runtime).
pub use mocca_runtime::{clauses, equations, event_driver, newton, numfmt, switching};

pub mod allocator;
pub mod analysis;
pub mod causal;
pub mod cli;
pub mod dae;
pub mod diagnostics;
pub mod emit;
pub mod expr;
pub mod flatten;
pub mod frontend;
pub mod generate;
pub mod jacobian;
pub mod load;
pub mod partition;
pub mod reduce;
pub mod simulate;
pub mod source;
pub mod structure;
pub mod syntax;
