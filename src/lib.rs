//! mocca: a compiler for a subset of Modelica that finds a model's time scales and splits it.
//!
//! The pipeline, one module per stage (see ARCHITECTURE.md):
//! text → [`syntax`] (tokens, AST) → …

pub mod allocator;
pub mod analysis;
pub mod causal;
pub mod clauses;
pub mod cli;
pub mod dae;
pub mod diagnostics;
pub mod emit;
pub mod event_driver;
pub mod expr;
pub mod flatten;
pub mod frontend;
pub mod generate;
pub mod jacobian;
pub mod load;
pub mod newton;
pub mod numfmt;
pub mod partition;
pub mod reduce;
pub mod simulate;
pub mod source;
pub mod structure;
pub mod switching;
pub mod syntax;

// The path the shared files (`clauses`) name it by, in mocca as in the crates it emits.
use simulate::dense_lu;
