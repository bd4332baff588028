//! The runtime that `mocca simulate` and the crates `mocca emit` writes share: Newton on
//! algebraic blocks and on the loops of clocked partitions, the fixed-step and mixed-mode methods, the initial system's solve, the fixed-step run over an output grid with its events, the dense LU, the foreign functions implemented in Rust, the static sparse LU's factorization and the pivoting sparse LU it falls back to, the static LU as emitted crates have it written, the watched relations and the event driver, `when`
//! clauses, the step of weak subsystems apart, the two-thread pair and number formatting. It depends on `std` only, and each
//! module names the others by `crate::…`, so that `mocca emit` copies these files, as they
//! are, to the root of every crate it writes (`src/newton.rs`, …): the emitted code solves
//! with this source, not a copy of it.

pub mod clauses;
pub mod dense_lu;
pub mod equations;
pub mod event_driver;
pub mod externals;
pub mod fft;
pub mod files;
pub mod fixed_step;
pub mod grid;
pub mod init;
pub mod mixed;
pub mod newton;
pub mod numfmt;
pub mod pair;
pub mod pivoting_lu;
pub mod sparse_factor;
pub mod switching;
pub mod weak;
pub mod written_lu;

/// Every file of this crate that an emitted crate holds, by its path there, and its text.
pub const SOURCES: [(&str, &str); 19] = [
    ("src/clauses.rs", include_str!("clauses.rs")),
    ("src/dense_lu.rs", include_str!("dense_lu.rs")),
    ("src/equations.rs", include_str!("equations.rs")),
    ("src/event_driver.rs", include_str!("event_driver.rs")),
    ("src/externals.rs", include_str!("externals.rs")),
    ("src/fft.rs", include_str!("fft.rs")),
    ("src/files.rs", include_str!("files.rs")),
    ("src/fixed_step.rs", include_str!("fixed_step.rs")),
    ("src/grid.rs", include_str!("grid.rs")),
    ("src/init.rs", include_str!("init.rs")),
    ("src/mixed.rs", include_str!("mixed.rs")),
    ("src/newton.rs", include_str!("newton.rs")),
    ("src/numfmt.rs", include_str!("numfmt.rs")),
    ("src/pair.rs", include_str!("pair.rs")),
    ("src/pivoting_lu.rs", include_str!("pivoting_lu.rs")),
    ("src/sparse_factor.rs", include_str!("sparse_factor.rs")),
    ("src/switching.rs", include_str!("switching.rs")),
    ("src/weak.rs", include_str!("weak.rs")),
    ("src/written_lu.rs", include_str!("written_lu.rs")),
];
