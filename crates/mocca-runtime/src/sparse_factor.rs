//! The numeric factorization of the static sparse LU: `M = L U` without row exchanges on a
//! fill decided once (by `mocca simulate`'s analysis when it starts, or by `mocca emit` when it
//! writes the crate), so that every factorization is a straight run over known value slots.
//!
//! Stability test (row-wise growth): while row `i` is eliminated, every value it takes stays
//! within [`MAX_GROWTH`] times the largest entry of row `i` of the matrix. Rounding errors are
//! then at most that many times the unit roundoff relative to each row (the backward error of
//! Gaussian elimination is bounded by its intermediate quantities), whatever the multipliers:
//! a row-dominant matrix may have large multipliers and still no growth. Beyond it the
//! diagonal pivots are refused ([`Refactor::Unstable`]) and the caller falls back to a
//! pivoting LU.

use std::ops::Range;

use crate::pair::SharedF64;

/// Growth beyond this rejects the diagonal pivots: three digits of the sixteen.
pub const MAX_GROWTH: f64 = 1e3;

/// Why a factorization was not completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refactor {
    /// A pivot is zero or a value is not finite: the matrix is singular (or not a number), or
    /// nearly so.
    Singular,
    /// A row grew beyond [`MAX_GROWTH`]: the diagonal pivots are not safe here.
    Unstable,
}

/// The fill of a factorization, in the permuted numbering: `L` by rows (strictly lower, unit
/// diagonal implied) and `U` by rows (strictly upper). The values it factors are laid out as
/// `L`'s entries, then `U`'s, then the diagonal.
#[derive(Clone, Copy, Debug)]
pub struct Fill<'a> {
    pub l_ptr: &'a [usize],
    pub l_col: &'a [usize],
    pub u_ptr: &'a [usize],
    pub u_col: &'a [usize],
}

/// Factors `rows` (in order) of `values`, laid out as [`Fill`] says, each `L` entry's updates
/// landing in the next of `targets` (per entry of `L` in order, and per entry of the row of
/// `U` it multiplies, the slot the update lands in): `L` in place, `U`'s rows divided by their
/// pivot, the diagonal replaced by the pivots' reciprocals (the solves multiply by them).
///
/// # Safety
/// No other thread touches the slots of `rows`, nor writes those of the rows they read (the
/// earlier rows their `L` names) meanwhile.
pub unsafe fn factor_rows(
    fill: Fill<'_>,
    values: &[SharedF64],
    rows: Range<usize>,
    mut targets: &[usize],
) -> Result<(), Refactor> {
    let Fill {
        l_ptr,
        l_col,
        u_ptr,
        u_col,
    } = fill;
    let u_start = l_col.len();
    let diag_start = u_start + u_col.len();
    // SAFETY (every `get` and `set` below): the slots of `rows` and of the rows they read,
    // by the caller's promise.
    let get = |k: usize| unsafe { values[k].get() };
    let set = |k: usize, x: f64| unsafe { values[k].set(x) };
    for i in rows {
        let lr = l_ptr[i]..l_ptr[i + 1];
        let ur = u_start + u_ptr[i]..u_start + u_ptr[i + 1];
        let pivot = diag_start + i;
        // The plain comparison, not `f64::max`'s NaN handling (a NaN is caught below).
        let row_max = (lr.clone().chain(ur.clone())).fold(get(pivot).abs(), |m, k| {
            let v = get(k).abs();
            if v > m { v } else { m }
        });
        let limit = MAX_GROWTH * row_max;
        // Whether an update left a value past the limit. A flag rather than the running
        // maximum: each update's comparison then waits on no other.
        let mut exceeded = false;
        // Ascending columns: every update to column j comes from a row above j.
        for p in lr.clone() {
            let j = l_col[p];
            let xj = get(p);
            let l = xj * get(diag_start + j);
            if !l.is_finite() {
                return Err(Refactor::Singular);
            }
            set(p, l);
            let sources = u_start + u_ptr[j]..u_start + u_ptr[j + 1];
            let (row_targets, rest) = targets.split_at(sources.len());
            targets = rest;
            if xj != 0.0 {
                // U's rows are stored divided by their pivot: l·U(j, k) = x_j·Û(j, k).
                for (source, &target) in sources.zip(row_targets) {
                    let updated = get(target) - xj * get(source);
                    set(target, updated);
                    exceeded |= updated.abs() > limit;
                }
            }
        }
        if exceeded {
            let finite = lr
                .chain(ur.clone())
                .chain([pivot])
                .all(|k| get(k).is_finite());
            return Err(if finite {
                Refactor::Unstable
            } else {
                Refactor::Singular
            });
        }
        let x = get(pivot);
        if x == 0.0 || !x.is_finite() {
            return Err(Refactor::Singular);
        }
        // The reciprocal: the solves multiply by it (a division's latency would chain from row
        // to row).
        let inverse = 1.0 / x;
        set(pivot, inverse);
        for k in ur {
            let u = get(k) * inverse;
            set(k, u);
            if !u.is_finite() {
                return Err(Refactor::Singular);
            }
        }
    }
    Ok(())
}
