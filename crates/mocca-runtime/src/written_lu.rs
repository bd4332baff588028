//! The static sparse LU as `mocca emit` writes it into a crate: the ordering and fill decided
//! at emit time (`mocca simulate`'s analysis of the same pattern), the triangular solves
//! written as straight-line code, and, for a matrix in two pieces and a separator, both
//! pieces factored and solved at once on a pair's two threads. The elimination itself is
//! [`crate::sparse_factor::factor_rows`], the one `simulate` runs. It depends on `std` only.

use crate::pair::{Pair, both, share};
use crate::sparse_factor::{Fill, Refactor, factor_rows};

/// The ordering and fill of a sparse Newton matrix, decided when the crate was written:
/// `perm[new] = old`, `L` and `U` by rows (permuted numbering), the slot of each update of a
/// factorization, and per entry of `M` (the Jacobian's, then the diagonal) its slot.
pub struct SparseTables {
    pub perm: &'static [usize],
    pub l_ptr: &'static [usize],
    pub l_col: &'static [usize],
    pub u_ptr: &'static [usize],
    pub u_col: &'static [usize],
    pub update_slots: &'static [usize],
    pub slots: &'static [usize],
    pub solve: Solve,
}

/// A whole solve: factors, right-hand side (the solution on return), work space.
pub type WholeSolve = fn(&[f64], &mut [f64], &mut [f64]);
/// A piece's forward rows: factors, its part of the permuted right-hand side.
pub type ForwardRows = fn(&[f64], &mut [f64]);
/// The separator's rows: factors, the two pieces' parts, its own part.
pub type SeparatorRows = fn(&[f64], &[f64], &[f64], &mut [f64]);
/// A piece's backward rows: factors, the separator's part, its own part.
pub type BackwardRows = fn(&[f64], &[f64], &mut [f64]);

/// The triangular solves as straight-line code.
pub enum Solve {
    Whole(WholeSolve),
    /// The rows ordered piece, piece, separator, no row of one piece reading the other's.
    Pieces(&'static Pieces),
}

/// The solves of a matrix in pieces over the permuted right-hand side, split where the second
/// piece and the separator start: each piece's forward rows, the separator's rows forward and
/// backward (reading both pieces), each piece's backward rows (reading the separator).
pub struct Pieces {
    pub starts: [usize; 2],
    pub forward: [ForwardRows; 2],
    pub separator: SeparatorRows,
    pub backward: [BackwardRows; 2],
}

/// LU without row exchanges on the fixed fill of [`SparseTables`].
pub struct WrittenLu {
    t: &'static SparseTables,
    values: Vec<f64>,
    work: Vec<f64>,
    /// With pieces, where the second piece's rows and the separator's start in
    /// `t.update_slots` (checked to keep the pieces apart).
    update_starts: Option<[usize; 2]>,
}

impl WrittenLu {
    pub fn new(t: &'static SparseTables) -> WrittenLu {
        let n = t.perm.len();
        let update_starts = match t.solve {
            Solve::Pieces(p) => kept_apart(t, p.starts),
            Solve::Whole(_) => None,
        };
        WrittenLu {
            t,
            values: vec![0.0; t.l_col.len() + t.u_col.len() + n],
            work: vec![0.0; n],
            update_starts,
        }
    }

    /// The column order of its fill (`perm[new] = old`), for a pivoting LU to take.
    pub fn order(&self) -> &'static [usize] {
        self.t.perm
    }

    /// Factors the matrix whose `k`-th entry (by `t.slots`) is `value(k)`: with pieces, the
    /// two pieces' rows at once on `pair`'s two threads, then the separator's (the same
    /// operations, row by row, as in one pass).
    pub fn factor(
        &mut self,
        value: impl Fn(usize) -> f64,
        pair: Option<&Pair>,
    ) -> Result<(), Refactor> {
        let t = self.t;
        self.values.fill(0.0);
        for (k, &slot) in t.slots.iter().enumerate() {
            self.values[slot] += value(k);
        }
        if self.values.iter().any(|v| !v.is_finite()) {
            return Err(Refactor::Singular);
        }
        let n = t.perm.len();
        let values = share(&mut self.values);
        let fill = Fill {
            l_ptr: t.l_ptr,
            l_col: t.l_col,
            u_ptr: t.u_ptr,
            u_col: t.u_col,
        };
        let (Some([ua, ub]), Solve::Pieces(p)) = (self.update_starts, &t.solve) else {
            // SAFETY: one thread.
            return unsafe { factor_rows(fill, values, 0..n, t.update_slots) };
        };
        let [a, b] = p.starts;
        let (first, second) = both(
            pair,
            // SAFETY: each piece's rows read and write only their own slots (`kept_apart`).
            || unsafe { factor_rows(fill, values, 0..a, &t.update_slots[..ua]) },
            || unsafe { factor_rows(fill, values, a..b, &t.update_slots[ua..ub]) },
        );
        // The first failure in row order, as one pass reports.
        first.and(second)?;
        // SAFETY: one thread again.
        unsafe { factor_rows(fill, values, b..n, &t.update_slots[ub..]) }
    }

    /// Solves in place; with pieces, the two pieces at once on `pair`'s two threads (safe
    /// code: each piece's function has its own part of the vector).
    pub fn solve(&mut self, rhs: &mut [f64], pair: Option<&Pair>) {
        let t = self.t;
        let p = match t.solve {
            Solve::Pieces(p) => p,
            Solve::Whole(solve) => return solve(&self.values, rhs, &mut self.work),
        };
        let y = &mut self.work;
        for (yi, &old) in y.iter_mut().zip(t.perm) {
            *yi = rhs[old];
        }
        let [a, b] = p.starts;
        let (first, rest) = y.split_at_mut(a);
        let (second, separator) = rest.split_at_mut(b - a);
        let v = &self.values[..];
        both(
            pair,
            || (p.forward[0])(v, first),
            || (p.forward[1])(v, second),
        );
        (p.separator)(v, first, second, separator);
        let separator = &*separator;
        both(
            pair,
            || (p.backward[0])(v, separator, first),
            || (p.backward[1])(v, separator, second),
        );
        for (&yi, &old) in y.iter().zip(t.perm) {
            rhs[old] = yi;
        }
    }
}

/// Where the second piece's and the separator's updates start in `t.update_slots`, when the
/// rows of each piece (`[a, b]`: where the second piece and the separator start) read only
/// their own piece's rows (`L`) and write only their own slots (the updates, and `U`'s columns
/// their own piece's or the separator's): what factoring and solving the two at once relies
/// on, checked once here rather than trusted.
fn kept_apart(t: &SparseTables, [a, b]: [usize; 2]) -> Option<[usize; 2]> {
    let n = t.perm.len();
    let u_start = t.l_col.len();
    let diag_start = u_start + t.u_col.len();
    if !(a <= b && b <= n) {
        return None;
    }
    let piece = |i: usize| usize::from(i >= a) + usize::from(i >= b);
    let mut owner = vec![usize::MAX; diag_start + n];
    for i in 0..n {
        let ur = u_start + t.u_ptr[i]..u_start + t.u_ptr[i + 1];
        for k in (t.l_ptr[i]..t.l_ptr[i + 1])
            .chain(ur)
            .chain([diag_start + i])
        {
            owner[k] = i;
        }
    }
    let mut next = 0;
    let mut starts = [0; 2];
    for i in 0..b {
        if i == a {
            starts[0] = next;
        }
        let own = piece(i);
        let upper = &t.u_col[t.u_ptr[i]..t.u_ptr[i + 1]];
        if !upper
            .iter()
            .all(|&k| k < n && (piece(k) == own || piece(k) == 2))
        {
            return None;
        }
        for p in t.l_ptr[i]..t.l_ptr[i + 1] {
            let j = t.l_col[p];
            if j >= i || piece(j) != own {
                return None;
            }
            let updates = t.u_ptr[j + 1] - t.u_ptr[j];
            let lands = t.update_slots.get(next..next + updates)?;
            if !lands.iter().all(|&k| owner.get(k) == Some(&i)) {
                return None;
            }
            next += updates;
        }
    }
    starts[1] = next;
    Some(starts)
}
