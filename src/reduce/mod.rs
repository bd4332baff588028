//! Term-ranking model reduction (SPEC §11): the reduced model is the modeller's own, with some
//! additive terms of its equations deleted or frozen to their mean.
//!
//! `terms` lists the candidate terms and evaluates them along a reference run that `sample`
//! simulates; `statistical` ranks them by their relative mean and spread within their
//! equation, `onestep` by the error one Newton step of the reduced system predicts; `activity`
//! ranks components by the energy through their connectors; `operation` rewrites the flat
//! model, `guard` keeps its matching perfect, and `initial` keeps its initial system square.

pub mod activity;
pub mod guard;
pub mod initial;
pub mod onestep;
pub mod operation;
pub mod plot;
pub mod removal;
pub mod sample;
pub mod statistical;
pub mod terms;

pub use operation::Operation;
pub use terms::TermRef;
