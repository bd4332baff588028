//! LU of a sparse matrix on a fixed pattern, without row exchanges: the pattern is ordered once
//! (approximate minimum degree on `A + Aᵀ`, so the diagonal stays on the diagonal) and its fill
//! computed once (the elimination tree's, then pruned to what `A`'s own unsymmetric pattern can
//! reach); each factorization is then a straight run over known positions.
//!
//! Why: an implicit integrator refactors `I − γJ` at every change of γ (hundreds of times in a
//! BDF run) on one pattern. A general sparse LU with partial pivoting redoes its symbolic work
//! (a depth-first search per column) at every factorization, which on the heat exchanger costs
//! ten times the arithmetic. `I − γJ` is close to `I` for small γ and usually diagonally
//! dominant for large γ, so the diagonal is a good pivot; where it is not, the factorization
//! says so ([`StaticLu::factor`] returns [`Refactor::Unstable`]) and the caller falls back to a
//! pivoting LU.
//!
//! The numeric factorization and its stability test (row-wise growth) are the runtime's
//! (`mocca_runtime::sparse_factor`), the same code that emitted crates factor with.

use std::ops::Range;

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::sparse::SymbolicSparseColMat;
use faer::sparse::linalg::amd;

use super::dissection;
use mocca_runtime::sparse_factor::{Fill, factor_rows};

use super::pair::{Pair, SharedF64, both, share};

pub use mocca_runtime::sparse_factor::{MAX_GROWTH, Refactor};

/// The ordering, the fill pattern and the factors. Rows and columns below are in the permuted
/// order; `L` is stored by rows (strictly lower, unit diagonal implied), `U` by rows (strictly
/// upper) with its diagonal apart.
#[derive(Clone, Debug)]
pub struct StaticLu {
    /// `perm[new] = old`.
    perm: Vec<usize>,
    /// Where the second piece starts and the separator starts, when the order is piece,
    /// piece, separator ([`dissection`]): no row of `L` or `U` in one piece reads a column
    /// of the other.
    pieces: Option<[usize; 2]>,
    l_ptr: Vec<usize>,
    l_col: Vec<usize>,
    u_ptr: Vec<usize>,
    u_col: Vec<usize>,
    /// `L`'s values, then `U`'s (each row divided by its pivot once factored), then the
    /// diagonal (its reciprocal once factored): the layout [`StaticLu::slots`] indexes.
    values: Vec<f64>,
    /// Per entry of `L` in order, and per entry of the row of `U` it multiplies, the slot
    /// of `values` the update lands in: a factorization's row scatter and gather, resolved
    /// once.
    update_slots: Vec<usize>,
    /// The solves' intermediate vector.
    work: Vec<f64>,
}

impl StaticLu {
    /// Orders and analyses the pattern of an `n × n` matrix given as `(row, col)` entries
    /// (duplicates allowed; the diagonal is always part of it).
    pub fn new(n: usize, entries: &[(usize, usize)]) -> StaticLu {
        let (perm, pieces) = ordering(n, entries);
        let inv = inverse(&perm);
        let neighbours = symmetric_lower(n, entries, &inv);
        let (l_ptr, l_col) = lower_fill(n, &neighbours);
        let (u_ptr, u_col) = transpose(n, &l_ptr, &l_col);
        let rows = permuted_rows(n, entries, &inv);
        let [(l_ptr, l_col), (u_ptr, u_col)] =
            structural_fill(&rows, [(l_ptr, l_col), (u_ptr, u_col)]);
        let update_slots = update_slots(n, (&l_ptr, &l_col), (&u_ptr, &u_col));
        let pieces = pieces.filter(|&p| keeps_apart(p, (&l_ptr, &l_col), (&u_ptr, &u_col)));
        let len = l_col.len() + u_col.len() + n;
        let lu = StaticLu {
            perm,
            pieces,
            l_ptr,
            l_col,
            u_ptr,
            u_col,
            values: vec![0.0; len],
            update_slots,
            work: vec![0.0; n],
        };
        lu.assert_in_bounds();
        lu
    }

    /// What the solves, which index without bounds checks, rely on: every row's entries lie
    /// inside the factors and name a column below `n` on the row's side of the diagonal,
    /// `perm` names entries below `n`, and the pieces end by `n`. Checked once, here rather
    /// than per entry and solve.
    fn assert_in_bounds(&self) {
        let n = self.n();
        let triangle = |ptr: &[usize], cols: &[usize], lower: bool| {
            ptr.len() == n + 1
                && ptr[n] == cols.len()
                && (0..n).all(|i| {
                    ptr[i] <= ptr[i + 1]
                        && cols[ptr[i]..ptr[i + 1]]
                            .iter()
                            .all(|&j| if lower { j < i } else { i < j && j < n })
                })
        };
        assert!(triangle(&self.l_ptr, &self.l_col, true));
        assert!(triangle(&self.u_ptr, &self.u_col, false));
        assert!(self.perm.iter().all(|&old| old < n));
        assert!(self.pieces.is_none_or(|[a, b]| a <= b && b <= n));
        assert_eq!(self.work.len(), n);
    }

    pub fn n(&self) -> usize {
        self.perm.len()
    }

    /// The ordering and fill: `perm`, `L`'s row pointers and columns, `U`'s, and the slots of
    /// a factorization's updates (for code that factors without this analysis).
    pub fn tables(&self) -> [&[usize]; 6] {
        [
            &self.perm,
            &self.l_ptr,
            &self.l_col,
            &self.u_ptr,
            &self.u_col,
            &self.update_slots,
        ]
    }

    /// Entries of `L` and `U` together, the diagonal included: the fill.
    pub fn factor_len(&self) -> usize {
        self.values.len()
    }

    /// Where entry `(row, col)` of the unpermuted matrix lives in the value array loaded by
    /// [`StaticLu::factor`]. The entry must be in the pattern given to [`StaticLu::new`].
    pub fn slots(&self, entries: &[(usize, usize)]) -> Vec<usize> {
        let inv = inverse(&self.perm);
        let u_start = self.l_col.len();
        let diag_start = u_start + self.u_col.len();
        let find = |cols: &[usize], offset: usize, c: usize| {
            offset
                + cols
                    .binary_search(&c)
                    .expect("an entry of the analysed pattern")
        };
        entries
            .iter()
            .map(|&(row, col)| {
                let (i, j) = (inv[row], inv[col]);
                match i.cmp(&j) {
                    std::cmp::Ordering::Equal => diag_start + i,
                    std::cmp::Ordering::Greater => {
                        let r = self.l_ptr[i]..self.l_ptr[i + 1];
                        find(&self.l_col[r.clone()], r.start, j)
                    }
                    std::cmp::Ordering::Less => {
                        let r = self.u_ptr[i]..self.u_ptr[i + 1];
                        find(&self.u_col[r.clone()], u_start + r.start, j)
                    }
                }
            })
            .collect()
    }

    /// Factors the matrix whose entries are loaded by `load`, which receives the value array
    /// zeroed and adds each entry at its slot (see [`StaticLu::slots`]).
    pub fn factor(&mut self, load: impl FnOnce(&mut [f64])) -> Result<(), Refactor> {
        self.values.fill(0.0);
        load(&mut self.values);
        if self.values.iter().any(|v| !v.is_finite()) {
            return Err(Refactor::Singular);
        }
        let fill = Fill {
            l_ptr: &self.l_ptr,
            l_col: &self.l_col,
            u_ptr: &self.u_ptr,
            u_col: &self.u_col,
        };
        let rows = 0..self.perm.len();
        // SAFETY: one thread, the values borrowed exclusively here.
        unsafe { factor_rows(fill, share(&mut self.values), rows, &self.update_slots) }
    }

    /// Solves `A x = b` in place with the last successful factorization.
    pub fn solve(&mut self, b: &mut [f64]) {
        self.solve_fused(&mut InPlace(share(b)));
    }

    /// Where the second piece and the separator start (permuted rows), when the order has
    /// pieces and is large enough for two threads to pay ([`MIN_THREADED_ROWS`]).
    pub fn threaded_pieces(&self) -> Option<[usize; 2]> {
        self.pieces.filter(|_| self.n() >= MIN_THREADED_ROWS)
    }

    /// With pieces, the entries (unpermuted, as ascending runs) each thread of
    /// [`StaticLu::solve_pieces`] solves: the first piece's and the separator's, and the
    /// second piece's.
    pub fn owners(&self) -> Option<[Vec<Range<usize>>; 2]> {
        let [a, b] = self.threaded_pieces()?;
        let first = self.perm[..a].iter().chain(&self.perm[b..]).copied();
        Some([runs(first.collect()), runs(self.perm[a..b].to_vec())])
    }

    /// Solves `A x = b`, reading `b` and handing out `x` entry by entry through `ends` (see
    /// [`SolveEnds`]): each entry of `b` before the rows that need it, each entry of `x` as
    /// soon as back substitution has it. Returns what `ends` accumulated over `x`.
    pub fn solve_fused<E: SolveEnds>(&mut self, ends: &mut E) -> E::Sums {
        let n = self.n();
        assert_eq!(ends.size(), n, "the ends of a solve of {n} unknowns");
        let (factors, y) = self.factors();
        let ends = &*ends;
        // SAFETY: in bounds (the assertion above; `y` has `n` entries). One thread, and the
        // exclusive borrows keep the others out of `y` and `ends`.
        unsafe {
            let sums = factors.forward(0..n, ends, y, E::Sums::default());
            factors.backward(0..n, ends, y, sums)
        }
    }

    /// [`StaticLu::solve_fused`] piece by piece: with `pair`, the two pieces at once on its
    /// two threads, the separator on this one; without, the two pieces' rows in turns on this
    /// thread. Returns the sums over the first piece and the separator, and over the second
    /// piece; the same, bit for bit, with `pair` or without. Without pieces, the whole
    /// solve's sums and nothing.
    pub fn solve_pieces<E: SolveEnds + Sync>(
        &mut self,
        ends: &mut E,
        pair: Option<&Pair>,
    ) -> [E::Sums; 2] {
        let Some([a, b]) = self.pieces else {
            return [self.solve_fused(ends), E::Sums::default()];
        };
        let n = self.n();
        assert_eq!(ends.size(), n, "the ends of a solve of {n} unknowns");
        let (factors, y) = self.factors();
        let ends = &*ends;
        let zero = E::Sums::default();
        // SAFETY (each block below): in bounds, by the assertion above, the pieces' bounds
        // checked at analysis (`assert_in_bounds`) and `y` having `n` entries.
        if pair.is_none() {
            // SAFETY: one thread, and the exclusive borrows keep the others out.
            return unsafe { factors.interleaved(ends, y, [a, b]) };
        }
        // SAFETY (each block): the two threads take rows of different pieces, whose rows of
        // `L` read only their own piece's entries of `y` and whose rows of `U` read only their
        // own piece's and the separator's, which neither writes then (`keeps_apart`,
        // checked at analysis); `perm` hands each row's entry of `ends` to the row's thread
        // alone. The exclusive borrows keep other threads out.
        let (first, second) = both(
            pair,
            move || unsafe { factors.forward(0..a, ends, y, zero) },
            move || unsafe { factors.forward(a..b, ends, y, zero) },
        );
        // SAFETY: one thread, the other having joined.
        let first = unsafe {
            let first = factors.forward(b..n, ends, y, first);
            factors.backward(b..n, ends, y, first)
        };
        let (first, second) = both(
            pair,
            move || unsafe { factors.backward(0..a, ends, y, first) },
            move || unsafe { factors.backward(a..b, ends, y, second) },
        );
        [first, second]
    }

    /// The factors for a solve, and its intermediate vector.
    fn factors(&mut self) -> (Factors<'_>, &[SharedF64]) {
        let u_start = self.l_col.len();
        let diag_start = u_start + self.u_col.len();
        let (l_vals, rest) = self.values.split_at(u_start);
        let (u_vals, inv_diag) = rest.split_at(diag_start - u_start);
        let factors = Factors {
            perm: &self.perm,
            l: (&self.l_ptr, &self.l_col, l_vals),
            u: (&self.u_ptr, &self.u_col, u_vals),
            inv_diag,
        };
        (factors, share(&mut self.work))
    }
}

/// One triangular factor stored by rows: row pointers, columns, values.
type Triangle<'a> = (&'a [usize], &'a [usize], &'a [f64]);

/// The factors of [`StaticLu`], shared by the threads of a solve. In bounds as
/// [`StaticLu::assert_in_bounds`] checks: its solves index the factors, `perm`, the
/// intermediate vector `y` and the ends without checks, so `y` and the ends have `n` entries
/// and the rows solved are below `n`.
#[derive(Clone, Copy)]
struct Factors<'a> {
    perm: &'a [usize],
    l: Triangle<'a>,
    /// `Û`: `U`'s rows divided by their pivots.
    u: Triangle<'a>,
    /// The pivots' reciprocals.
    inv_diag: &'a [f64],
}

impl Factors<'_> {
    /// Forward substitution `L y = b` over `rows`, which read only rows solved before them.
    ///
    /// # Safety
    /// `rows` below `n`, and `y` and `ends` of `n` entries. No other thread meanwhile writes
    /// an entry of `y` these rows read, or touches the entries of `y` and `ends` these rows
    /// write (`perm[i]` for `ends`).
    unsafe fn forward<E: SolveEnds>(
        &self,
        rows: Range<usize>,
        ends: &E,
        y: &[SharedF64],
        mut sums: E::Sums,
    ) -> E::Sums {
        for i in rows {
            // SAFETY: the entries are this thread's alone, by the caller's promise.
            unsafe {
                let b = ends.rhs(*self.perm.get_unchecked(i), &mut sums);
                y.get_unchecked(i).set(self.forward_substituted(i, b, y));
            }
        }
        sums
    }

    /// Back substitution `U x = y` over `rows`, last first, which read only rows solved
    /// before them; hands each `x_i` to `ends`.
    ///
    /// # Safety
    /// As for [`Factors::forward`].
    unsafe fn backward<E: SolveEnds>(
        &self,
        rows: Range<usize>,
        ends: &E,
        y: &[SharedF64],
        mut sums: E::Sums,
    ) -> E::Sums {
        for i in rows.rev() {
            // SAFETY: the entries are this thread's alone, by the caller's promise.
            unsafe {
                let x = self.back_substituted(i, y);
                y.get_unchecked(i).set(x);
                ends.solution(*self.perm.get_unchecked(i), x, &mut sums);
            }
        }
        sums
    }

    /// Row `i` of the forward substitution, from entry `b` of the right-hand side.
    ///
    /// # Safety
    /// As for [`eliminated`].
    #[inline(always)]
    unsafe fn forward_substituted(&self, i: usize, b: f64, y: &[SharedF64]) -> f64 {
        // SAFETY: by the caller's promise. `L`'s columns ascend: the row solved just before,
        // which the processor waits for, comes last.
        unsafe { eliminated(self.l, i, b, y, Columns::Ascending) }
    }

    /// Row `i` of the back substitution.
    ///
    /// # Safety
    /// As for [`eliminated`].
    #[inline(always)]
    unsafe fn back_substituted(&self, i: usize, y: &[SharedF64]) -> f64 {
        // U = D·Û with Û's rows stored: the pivot's product is off the chain of rows. `Û`'s
        // columns ascend, so the row solved just before is the row's first: taken last, the
        // rest of the row's sum is ready when it is.
        // SAFETY: by the caller's promise.
        unsafe {
            let start = y.get_unchecked(i).get() * *self.inv_diag.get_unchecked(i);
            eliminated(self.u, i, start, y, Columns::Descending)
        }
    }

    /// [`StaticLu::solve_fused`] over pieces `[a, b]` on this thread: the rows of the two
    /// pieces, which read nothing of each other, taken in turns, so that the processor
    /// overlaps their two chains of rows (each row waits for one just solved). Returns the
    /// sums over the first piece and the separator, and over the second piece, each
    /// accumulated in the order a thread of [`StaticLu::solve_pieces`] accumulates it.
    ///
    /// # Safety
    /// `a ≤ b ≤ n`, and `y` and `ends` of `n` entries. No other thread touches `y` or `ends`
    /// meanwhile.
    unsafe fn interleaved<E: SolveEnds>(
        &self,
        ends: &E,
        y: &[SharedF64],
        [a, b]: [usize; 2],
    ) -> [E::Sums; 2] {
        let n = self.perm.len();
        let turns = a.min(b - a);
        let [mut first, mut second] = [E::Sums::default(); 2];
        // SAFETY (each block): one thread, by the caller's promise; each piece's rows read
        // only their own piece's rows and the separator's (`keeps_apart`), solved before them.
        for k in 0..turns {
            let (i, j) = (k, a + k);
            unsafe {
                let bi = ends.rhs(*self.perm.get_unchecked(i), &mut first);
                let bj = ends.rhs(*self.perm.get_unchecked(j), &mut second);
                y.get_unchecked(i).set(self.forward_substituted(i, bi, y));
                y.get_unchecked(j).set(self.forward_substituted(j, bj, y));
            }
        }
        unsafe {
            first = self.forward(turns..a, ends, y, first);
            second = self.forward(a + turns..b, ends, y, second);
            first = self.forward(b..n, ends, y, first);
            first = self.backward(b..n, ends, y, first);
            first = self.backward(turns..a, ends, y, first);
            second = self.backward(a + turns..b, ends, y, second);
        }
        for k in (0..turns).rev() {
            let (i, j) = (k, a + k);
            unsafe {
                let xi = self.back_substituted(i, y);
                let xj = self.back_substituted(j, y);
                y.get_unchecked(i).set(xi);
                y.get_unchecked(j).set(xj);
                ends.solution(*self.perm.get_unchecked(i), xi, &mut first);
                ends.solution(*self.perm.get_unchecked(j), xj, &mut second);
            }
        }
        [first, second]
    }
}

/// The order a row's entries are summed in.
#[derive(Clone, Copy)]
enum Columns {
    Ascending,
    Descending,
}

/// `start − Σ_j T(i, j)·y_j` over row `i` of the triangle `T`, its columns taken in `order`.
///
/// # Safety
/// `i` is a row of `T`, in bounds as [`StaticLu::assert_in_bounds`] checks, and `y` has an
/// entry per column. No other thread writes the entries of `y` the row reads meanwhile.
#[inline(always)]
unsafe fn eliminated(
    (ptr, cols, vals): Triangle<'_>,
    i: usize,
    start: f64,
    y: &[SharedF64],
    order: Columns,
) -> f64 {
    // SAFETY (all three): in bounds by the caller's promise.
    let r = unsafe { *ptr.get_unchecked(i)..*ptr.get_unchecked(i + 1) };
    let entries = unsafe {
        vals.get_unchecked(r.clone())
            .iter()
            .zip(cols.get_unchecked(r))
    };
    let step = |s: f64, (&t, &j): (&f64, &usize)| s - t * unsafe { y.get_unchecked(j).get() };
    match order {
        Columns::Ascending => entries.fold(start, step),
        Columns::Descending => entries.rev().fold(start, step),
    }
}

/// Where a solve reads its right-hand side and puts its solution, entry by entry. A
/// triangular solve waits on a chain of rows, each on one just solved; work the caller does
/// per entry at either end (forming the right-hand side, using the solution) is off that
/// chain, so fused into the solve it runs in the processor's idle slots instead of in passes
/// of its own.
///
/// A solve in pieces calls these from two threads at once, for different entries; each
/// entry's two calls come from one thread. Implementations may rely on that for entry-wise
/// data shared between the threads ([`SharedF64`]).
pub trait SolveEnds {
    /// What the caller sums over the solution's entries (per thread; the caller adds them).
    type Sums: Default + Copy + Send;
    /// How many entries the ends have; a solve checks that it is its matrix's size.
    fn size(&self) -> usize;
    /// Entry `i` of the right-hand side; each is asked for once.
    ///
    /// # Safety
    /// `i < self.size()`. No other thread calls `rhs` or `solution` for entry `i` meanwhile.
    unsafe fn rhs(&self, i: usize, sums: &mut Self::Sums) -> f64;
    /// Entry `i` of the solution, given once and final, and the sums so far.
    ///
    /// # Safety
    /// As for [`SolveEnds::rhs`].
    unsafe fn solution(&self, i: usize, x: f64, sums: &mut Self::Sums);
}

/// A right-hand side overwritten by the solution.
pub struct InPlace<'a>(pub &'a [SharedF64]);

impl SolveEnds for InPlace<'_> {
    type Sums = ();

    fn size(&self) -> usize {
        self.0.len()
    }

    unsafe fn rhs(&self, i: usize, _: &mut ()) -> f64 {
        // SAFETY: entry `i` is this thread's alone, by the caller's promise.
        unsafe { self.0[i].get() }
    }

    unsafe fn solution(&self, i: usize, x: f64, _: &mut ()) {
        // SAFETY: as in `rhs`.
        unsafe { self.0[i].set(x) }
    }
}

/// Whether the factors' rows of each piece (`[a, b]`: where the second piece and the
/// separator start) read no entry of the other piece: `L`'s only their own piece's, `U`'s
/// only their own piece's and the separator's. The solves in pieces rely on it.
fn keeps_apart(
    [a, b]: [usize; 2],
    (l_ptr, l_col): (&[usize], &[usize]),
    (u_ptr, u_col): (&[usize], &[usize]),
) -> bool {
    let piece = |i: usize| usize::from(i >= a) + usize::from(i >= b);
    (0..b).all(|i| {
        let own = piece(i);
        let lower = &l_col[l_ptr[i]..l_ptr[i + 1]];
        let upper = &u_col[u_ptr[i]..u_ptr[i + 1]];
        lower.iter().all(|&j| piece(j) == own)
            && upper.iter().all(|&k| piece(k) == own || piece(k) == 2)
    })
}

/// For each entry `(i, j)` of `L` in order, the slots of row `i`'s entries that row `j` of `U`
/// updates, in `U`'s column order ([`StaticLu::update_slots`]). Every update lands inside the
/// fill, which is closed under elimination.
fn update_slots(
    n: usize,
    (l_ptr, l_col): (&[usize], &[usize]),
    (u_ptr, u_col): (&[usize], &[usize]),
) -> Vec<usize> {
    let u_start = l_col.len();
    let diag_start = u_start + u_col.len();
    let mut slot = vec![usize::MAX; n];
    let mut slots = Vec::new();
    for i in 0..n {
        let (lr, ur) = (l_ptr[i]..l_ptr[i + 1], u_ptr[i]..u_ptr[i + 1]);
        for p in lr.clone() {
            slot[l_col[p]] = p;
        }
        slot[i] = diag_start + i;
        for q in ur.clone() {
            slot[u_col[q]] = u_start + q;
        }
        for &j in &l_col[lr.clone()] {
            slots.extend(u_col[u_ptr[j]..u_ptr[j + 1]].iter().map(|&k| slot[k]));
        }
        for &k in l_col[lr].iter().chain(&u_col[ur]).chain([&i]) {
            slot[k] = usize::MAX;
        }
    }
    debug_assert!(
        slots.iter().all(|&s| s != usize::MAX),
        "an update outside the fill"
    );
    slots
}

/// `inv[old] = new` for `perm[new] = old`.
fn inverse(perm: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; perm.len()];
    for (new, &old) in perm.iter().enumerate() {
        inv[old] = new;
    }
    inv
}

/// `entries` sorted, as runs of consecutive ones.
fn runs(mut entries: Vec<usize>) -> Vec<Range<usize>> {
    entries.sort_unstable();
    let mut runs: Vec<Range<usize>> = Vec::new();
    for i in entries {
        match runs.last_mut() {
            Some(run) if run.end == i => run.end += 1,
            _ => runs.push(i..i + 1),
        }
    }
    runs
}

/// Below this many rows pieces are not looked for: the two chains of rows a solve then
/// interleaves are too short to matter.
pub const MIN_PIECES_ROWS: usize = 256;

/// Below this many rows a solve in pieces runs on one thread, its pieces' rows interleaved:
/// there the second thread's hand-overs cost more than it saves. (The heat exchanger's BDF
/// run, one thread interleaved against two: 41 against 54-67 ms at 3 000 rows,
/// 56 against 59-66 ms at 3 600; 82-87 against 75-82 ms at 4 500, 139-141 against
/// 111-114 ms at 6 000 and 307-309 against 219-228 ms at 9 000.)
pub const MIN_THREADED_ROWS: usize = 4096;

/// The rows' order (`perm[new] = old`): two pieces then their separator, each in minimum
/// degree order, when the pattern has them and is large; else minimum degree.
///
/// Each piece is ordered with its rows nearest the separator numbered first: faer's
/// minimum degree takes the last of equally good rows first, so it then eliminates the piece
/// from its far end towards the separator. The other way round, a row next to the separator
/// goes early and its fill carries a separator column from row to row along the whole piece
/// (on the heat exchanger at N = 3000, 30 % more fill; this way, 0.2 %).
fn ordering(n: usize, entries: &[(usize, usize)]) -> (Vec<usize>, Option<[usize; 2]>) {
    let found = (n >= MIN_PIECES_ROWS)
        .then(|| dissection::pieces(n, entries))
        .flatten();
    let Some(p) = found else {
        return (minimum_degree(n, entries), None);
    };
    let mut perm = Vec::with_capacity(n);
    for rows in [&p.first, &p.second, &p.separator] {
        perm.extend(ordered_within(n, rows, entries));
    }
    let a = p.first.len();
    (perm, Some([a, a + p.second.len()]))
}

/// `rows` in the minimum degree order of the entries among them.
fn ordered_within(n: usize, rows: &[usize], entries: &[(usize, usize)]) -> Vec<usize> {
    let mut local = vec![usize::MAX; n];
    for (k, &row) in rows.iter().enumerate() {
        local[row] = k;
    }
    let among: Vec<(usize, usize)> = entries
        .iter()
        .map(|&(row, col)| (local[row], local[col]))
        .filter(|&(i, j)| i != usize::MAX && j != usize::MAX)
        .collect();
    let order = minimum_degree(rows.len(), &among);
    order.into_iter().map(|k| rows[k]).collect()
}

/// Approximate minimum degree ordering of `A + Aᵀ` (faer's AMD): `perm[new] = old`.
fn minimum_degree(n: usize, entries: &[(usize, usize)]) -> Vec<usize> {
    let mut perm = vec![0usize; n];
    if n == 0 {
        return perm;
    }
    let pairs: Vec<faer::sparse::Pair<usize, usize>> = entries
        .iter()
        .map(|&(row, col)| faer::sparse::Pair { row, col })
        .collect();
    let ordered = SymbolicSparseColMat::try_new_from_indices(n, n, &pairs).is_ok_and(|(a, _)| {
        let mut inv = vec![0usize; n];
        let mut mem = MemBuffer::new(amd::order_scratch::<usize>(n, a.compute_nnz()));
        let control = amd::Control::default();
        amd::order(
            &mut perm,
            &mut inv,
            a.as_ref(),
            control,
            MemStack::new(&mut mem),
        )
        .is_ok()
    });
    if !ordered {
        // Out of memory or an index out of range cannot come from a valid pattern; the
        // natural order is still a correct (if slower) one.
        perm.iter_mut().enumerate().for_each(|(i, p)| *p = i);
    }
    perm
}

/// Per permuted row `i`, the permuted columns `j < i` of `A + Aᵀ`, sorted and deduplicated.
fn symmetric_lower(n: usize, entries: &[(usize, usize)], inv: &[usize]) -> Vec<Vec<usize>> {
    let mut lower = vec![Vec::new(); n];
    for &(row, col) in entries {
        let (i, j) = (inv[row], inv[col]);
        if i != j {
            lower[i.max(j)].push(i.min(j));
        }
    }
    for row in &mut lower {
        row.sort_unstable();
        row.dedup();
    }
    lower
}

/// The pattern of `L` (rows, strictly lower) for a symmetric pattern given by its lower rows:
/// the elimination tree, and per row the nodes reached climbing it from the row's entries
/// (CSparse's `ereach`). Time proportional to the fill.
fn lower_fill(n: usize, lower: &[Vec<usize>]) -> (Vec<usize>, Vec<usize>) {
    const NONE: usize = usize::MAX;
    let mut parent = vec![NONE; n];
    let mut ancestor = vec![NONE; n];
    for (k, row) in lower.iter().enumerate() {
        for &start in row {
            // Climb with path compression to the root below k, which becomes k's child.
            let mut i = start;
            while i != NONE && i < k {
                let next = ancestor[i];
                ancestor[i] = k;
                if next == NONE {
                    parent[i] = k;
                }
                i = next;
            }
        }
    }
    let mut mark = vec![NONE; n];
    let mut ptr = Vec::with_capacity(n + 1);
    let mut cols = Vec::new();
    ptr.push(0);
    for (k, row) in lower.iter().enumerate() {
        mark[k] = k;
        let start = cols.len();
        for &j in row {
            let mut i = j;
            while i != NONE && mark[i] != k {
                mark[i] = k;
                cols.push(i);
                i = parent[i];
            }
        }
        cols[start..].sort_unstable();
        ptr.push(cols.len());
    }
    (ptr, cols)
}

/// Per permuted row, the permuted columns of its entries.
fn permuted_rows(n: usize, entries: &[(usize, usize)], inv: &[usize]) -> Vec<Vec<usize>> {
    let mut rows = vec![Vec::new(); n];
    for &(row, col) in entries {
        rows[inv[row]].push(inv[col]);
    }
    rows
}

/// A pattern stored by rows: row pointers and column indices.
type RowPattern = (Vec<usize>, Vec<usize>);

/// Keeps, of the fill of `A + Aᵀ` (`L` and `U = Lᵀ`), the entries elimination can make
/// nonzero for `A` itself: a symbolic run of the factorization on the rows' entries `rows`.
///
/// Why: the symmetric pattern is what the elimination tree gives cheaply, but an unsymmetric
/// matrix (a chain of upstream couplings has entries on one side of the diagonal only)
/// leaves many of its entries zero at every factorization, and each solve would still
/// multiply by them.
fn structural_fill(rows: &[Vec<usize>], [l, u]: [RowPattern; 2]) -> [RowPattern; 2] {
    let n = rows.len();
    let (mut keep_l, mut keep_u) = (vec![false; l.1.len()], vec![false; u.1.len()]);
    let mut reached = vec![false; n];
    for (i, row) in rows.iter().enumerate() {
        for &j in row {
            reached[j] = true;
        }
        // Ascending columns, as in the factorization: row j of U is final when row i uses it.
        let row_l = l.0[i]..l.0[i + 1];
        for (&j, keep) in l.1[row_l.clone()].iter().zip(&mut keep_l[row_l]) {
            if reached[j] {
                *keep = true;
                let row_u = u.0[j]..u.0[j + 1];
                for (&k, &kept) in u.1[row_u.clone()].iter().zip(&keep_u[row_u]) {
                    reached[k] |= kept;
                }
            }
        }
        for q in u.0[i]..u.0[i + 1] {
            keep_u[q] = reached[u.1[q]];
        }
        for &j in row.iter().chain(&l.1[l.0[i]..l.0[i + 1]]) {
            reached[j] = false;
        }
        for &k in &u.1[u.0[i]..u.0[i + 1]] {
            reached[k] = false;
        }
        reached[i] = false;
    }
    [prune(&l, &keep_l), prune(&u, &keep_u)]
}

/// The entries of a row pattern whose flag in `keep` is set.
fn prune((ptr, cols): &RowPattern, keep: &[bool]) -> RowPattern {
    let mut kept_ptr = Vec::with_capacity(ptr.len());
    let mut kept_cols = Vec::with_capacity(cols.len());
    kept_ptr.push(0);
    for row in ptr.windows(2) {
        let r = row[0]..row[1];
        kept_cols.extend(
            cols[r.clone()]
                .iter()
                .zip(&keep[r])
                .filter(|e| *e.1)
                .map(|e| *e.0),
        );
        kept_ptr.push(kept_cols.len());
    }
    (kept_ptr, kept_cols)
}

/// The rows of the transpose of a strictly lower pattern stored by rows: `U`'s rows.
fn transpose(n: usize, ptr: &[usize], cols: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let mut count = vec![0usize; n + 1];
    for &j in cols {
        count[j + 1] += 1;
    }
    for j in 0..n {
        count[j + 1] += count[j];
    }
    let t_ptr = count.clone();
    let mut t_cols = vec![0; cols.len()];
    for i in 0..n {
        for &j in &cols[ptr[i]..ptr[i + 1]] {
            t_cols[count[j]] = i;
            count[j] += 1;
        }
    }
    (t_ptr, t_cols)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    fn dense_solve(n: usize, a: &[f64], b: &[f64]) -> Vec<f64> {
        let mut lu = super::super::linear::DenseLu::new(n);
        for r in 0..n {
            for c in 0..n {
                lu.set(r, c, a[r * n + c]);
            }
        }
        assert!(lu.factor());
        let mut x = b.to_vec();
        lu.solve(&mut x);
        x
    }

    fn factor_dense(lu: &mut StaticLu, n: usize, a: &[f64], entries: &[(usize, usize)]) {
        let slots = lu.slots(entries);
        lu.factor(|v| {
            for (&(r, c), &s) in entries.iter().zip(&slots) {
                v[s] += a[r * n + c];
            }
        })
        .expect("factors");
    }

    #[test]
    fn arrow_matrix_fills_and_solves() {
        // Row 0 and column 0 full: eliminating node 0 first would fill everything; AMD puts it
        // last and there is no fill at all.
        let n = 6;
        let mut a = vec![0.0; n * n];
        let mut entries = Vec::new();
        for i in 0..n {
            a[i * n + i] = 4.0 + i as f64;
            entries.push((i, i));
            if i > 0 {
                a[i] = 1.0;
                a[i * n] = -1.0 + 0.1 * i as f64;
                entries.push((0, i));
                entries.push((i, 0));
            }
        }
        let mut lu = StaticLu::new(n, &entries);
        assert_eq!(lu.factor_len(), entries.len(), "no fill");
        factor_dense(&mut lu, n, &a, &entries);
        let b: Vec<f64> = (0..n).map(|i| 1.0 + i as f64).collect();
        let mut x = b.clone();
        lu.solve(&mut x);
        let expected = dense_solve(n, &a, &b);
        for (x, e) in x.iter().zip(&expected) {
            assert!((x - e).abs() < 1e-12, "{x} vs {e}");
        }
    }

    /// Records what a fused solve asks for and hands out.
    struct Recording {
        b: Vec<f64>,
        asked: RefCell<Vec<usize>>,
        given: RefCell<Vec<Option<f64>>>,
    }

    impl SolveEnds for Recording {
        type Sums = f64;

        fn size(&self) -> usize {
            self.b.len()
        }

        unsafe fn rhs(&self, i: usize, _: &mut f64) -> f64 {
            self.asked.borrow_mut().push(i);
            self.b[i]
        }

        unsafe fn solution(&self, i: usize, x: f64, sum: &mut f64) {
            let previous = self.given.borrow_mut()[i].replace(x);
            assert!(previous.is_none(), "entry {i} given twice");
            *sum += x;
        }
    }

    #[test]
    fn a_fused_solve_reads_and_gives_each_entry_once() {
        // A chain with a loop back (1 → 0 and 0 → 4 → 3 → 2 → 1), unsymmetric fill.
        let n = 5;
        let mut a = vec![0.0; n * n];
        let mut entries: Vec<(usize, usize)> = (0..n).map(|i| (i, i)).collect();
        for i in 0..n {
            a[i * n + i] = 3.0 + i as f64;
        }
        for (r, c, v) in [
            (0, 1, -1.0),
            (1, 2, 0.5),
            (2, 3, -0.25),
            (3, 4, 1.5),
            (4, 0, -2.0),
        ] {
            a[r * n + c] = v;
            entries.push((r, c));
        }
        let mut lu = StaticLu::new(n, &entries);
        factor_dense(&mut lu, n, &a, &entries);
        let b: Vec<f64> = (0..n).map(|i| (i as f64).cos()).collect();
        let mut ends = Recording {
            b: b.clone(),
            asked: RefCell::new(Vec::new()),
            given: RefCell::new(vec![None; n]),
        };
        let sum = lu.solve_fused(&mut ends);
        let mut asked = ends.asked.take();
        asked.sort_unstable();
        assert_eq!(
            asked,
            (0..n).collect::<Vec<_>>(),
            "each entry of b read once"
        );
        let expected = dense_solve(n, &a, &b);
        for (x, e) in ends.given.take().iter().zip(&expected) {
            let x = x.expect("every entry of x given");
            assert!((x - e).abs() < 1e-12, "{x} vs {e}");
        }
        assert!((sum - expected.iter().sum::<f64>()).abs() < 1e-12);
    }

    /// The analysis of `entries` and the outcome of factoring the matrix of `values`, one
    /// per entry.
    fn factored(entries: &[(usize, usize)], values: &[f64]) -> (StaticLu, Result<(), Refactor>) {
        let n = entries
            .iter()
            .map(|&(r, c)| r.max(c) + 1)
            .max()
            .unwrap_or(0);
        let mut lu = StaticLu::new(n, entries);
        let slots = lu.slots(entries);
        let result = lu.factor(|v| {
            for (&s, &x) in slots.iter().zip(values) {
                v[s] += x;
            }
        });
        (lu, result)
    }

    #[test]
    fn zero_diagonal_is_refused() {
        // [[0, 1], [1, 0]] needs a row exchange.
        let entries = [(0, 1), (1, 0), (0, 0), (1, 1)];
        let (_, result) = factored(&entries, &[1.0, 1.0, 0.0, 0.0]);
        assert!(result.is_err());
    }

    #[test]
    fn growth_is_unstable() {
        // [[1e-6, 1], [1, 1]]: eliminating on the tiny pivot makes the second row 1e6 large.
        let entries = [(0, 0), (0, 1), (1, 0), (1, 1)];
        let (lu, result) = factored(&entries, &[1e-6, 1.0, 1.0, 1.0]);
        // AMD may order either row first; the ordering that starts at row 1 is stable.
        let first = lu.perm[0];
        if first == 0 {
            assert_eq!(result, Err(Refactor::Unstable));
        } else {
            assert_eq!(result, Ok(()));
        }
    }

    #[test]
    fn overflow_is_singular_not_unstable() {
        // [[1, 1e300], [1e300, 1]] (symmetric, so either order): the second pivot is
        // 1 − 1e600, past the largest double. Not a growth a pivoting LU could avoid.
        let entries = [(0, 0), (0, 1), (1, 0), (1, 1)];
        let (_, result) = factored(&entries, &[1.0, 1e300, 1e300, 1.0]);
        assert_eq!(result, Err(Refactor::Singular));
    }

    /// The entries of `L` and `U` a dense symbolic elimination of the permuted pattern
    /// reaches (the oracle for [`structural_fill`]), diagonal included.
    fn dense_symbolic_fill(lu: &StaticLu, entries: &[(usize, usize)]) -> usize {
        let n = lu.n();
        let inv = inverse(&lu.perm);
        let mut nonzero = vec![vec![false; n]; n];
        for &(r, c) in entries {
            nonzero[inv[r]][inv[c]] = true;
        }
        for i in 0..n {
            nonzero[i][i] = true;
            for j in 0..i {
                if nonzero[i][j] {
                    let (above, below) = nonzero.split_at_mut(i);
                    for (target, &reached) in below[0][j + 1..].iter_mut().zip(&above[j][j + 1..]) {
                        *target |= reached;
                    }
                }
            }
        }
        nonzero.iter().flatten().filter(|&&x| x).count()
    }

    #[test]
    fn an_upstream_chain_has_no_fill_above_the_diagonal() {
        // x_i depends on x_{i−1} only: A + Aᵀ is tridiagonal, but U has nothing to hold.
        let n: usize = 8;
        let entries: Vec<(usize, usize)> = (0..n)
            .flat_map(|i| [(i, i), (i, i.saturating_sub(1))])
            .collect();
        let lu = StaticLu::new(n, &entries);
        assert_eq!(lu.factor_len(), 2 * n - 1);
        assert_eq!(lu.factor_len(), dense_symbolic_fill(&lu, &entries));
    }

    #[test]
    fn the_fill_is_what_symbolic_elimination_reaches() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |bound: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % bound as u64) as usize
        };
        for _ in 0..200 {
            let n = 2 + next(30);
            let count = n + next(3 * n);
            let entries: Vec<(usize, usize)> = (0..count).map(|_| (next(n), next(n))).collect();
            let lu = StaticLu::new(n, &entries);
            assert_eq!(
                lu.factor_len(),
                dense_symbolic_fill(&lu, &entries),
                "{entries:?}"
            );
        }
    }

    /// A ladder of `cells` rungs `a_i – w_i – b_i`, rails `a_i → a_(i+1)` and
    /// `b_(i+1) → b_i` (a counter-current heat exchanger's pattern) with the diagonal, and
    /// unsymmetric, diagonally dominant values.
    fn ladder(cells: usize) -> Vec<(usize, usize, f64)> {
        let mut entries = Vec::new();
        for i in 0..cells {
            let (a, w, b) = (3 * i, 3 * i + 1, 3 * i + 2);
            let wobble = 0.1 * (i as f64).sin();
            entries.extend([(a, a, 3.0), (w, w, 4.0 + wobble), (b, b, 3.0)]);
            entries.extend([(a, w, -0.5), (w, a, -1.0), (w, b, -1.5), (b, w, -0.5)]);
            if i + 1 < cells {
                entries.extend([(a + 3, a, -1.0 + wobble), (b, b + 3, -1.2)]);
            }
        }
        entries
    }

    /// Solves in place and folds what it reads and gives, in the order it does, into its
    /// sums: two solves with equal sums took each piece's entries in the same order.
    struct InOrder<'a>(&'a [SharedF64]);

    impl SolveEnds for InOrder<'_> {
        type Sums = f64;

        fn size(&self) -> usize {
            self.0.len()
        }

        unsafe fn rhs(&self, i: usize, sums: &mut f64) -> f64 {
            *sums = 0.5 * *sums + i as f64;
            // SAFETY: entry `i` is this thread's alone, by the caller's promise.
            unsafe { self.0[i].get() }
        }

        unsafe fn solution(&self, i: usize, x: f64, sums: &mut f64) {
            *sums = 0.5 * *sums + x;
            // SAFETY: as in `rhs`.
            unsafe { self.0[i].set(x) }
        }
    }

    #[test]
    fn a_solve_in_pieces_solves_and_is_the_same_on_one_thread_or_two() {
        // Interleaved on one thread below `MIN_THREADED_ROWS`, shared above; either way
        // the same when run on two threads.
        for cells in [MIN_PIECES_ROWS / 3 + 1, MIN_THREADED_ROWS / 3 + 1] {
            let n = 3 * cells;
            let entries = ladder(cells);
            let pattern: Vec<(usize, usize)> = entries.iter().map(|&(r, c, _)| (r, c)).collect();
            let mut lu = StaticLu::new(n, &pattern);
            let [a, b] = lu.pieces.expect("a long ladder has pieces");
            assert!(
                a > n / 3 && b - a > n / 3,
                "balanced pieces: {a}, {b} of {n}"
            );
            match lu.owners() {
                Some([first, second]) => {
                    assert!(n >= MIN_THREADED_ROWS);
                    let count = |runs: &[Range<usize>]| runs.iter().map(|r| r.len()).sum::<usize>();
                    assert_eq!(count(&first), a + n - b);
                    assert_eq!(count(&second), b - a);
                }
                None => assert!(n < MIN_THREADED_ROWS),
            }
            let slots = lu.slots(&pattern);
            lu.factor(|v| {
                for (&slot, &(_, _, x)) in slots.iter().zip(&entries) {
                    v[slot] += x;
                }
            })
            .expect("diagonally dominant");
            let rhs: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).cos()).collect();
            let solve = |lu: &mut StaticLu, pair: Option<&Pair>| {
                let mut x = rhs.clone();
                let sums = lu.solve_pieces(&mut InOrder(share(&mut x)), pair);
                (x, sums)
            };
            let alone = solve(&mut lu, None);
            let together = Pair::with(true, |pair| solve(&mut lu, pair));
            assert_eq!(alone, together, "bit for bit, sums included");
            // The residual, from the matrix's entries: an oracle independent of the factors.
            let mut residual = rhs.clone();
            for &(r, c, x) in &entries {
                residual[r] -= x * alone.0[c];
            }
            let worst = residual.iter().fold(0.0f64, |m, r| m.max(r.abs()));
            assert!(worst < 1e-12, "residual {worst}");
        }
    }

    #[test]
    fn pieces_cost_little_fill_and_keep_apart() {
        let cells = MIN_THREADED_ROWS / 3 + 1;
        let n = 3 * cells;
        let pattern: Vec<(usize, usize)> = ladder(cells).iter().map(|&(r, c, _)| (r, c)).collect();
        let lu = StaticLu::new(n, &pattern);
        let [a, b] = lu.pieces.expect("pieces");
        assert!(keeps_apart(
            [a, b],
            (&lu.l_ptr, &lu.l_col),
            (&lu.u_ptr, &lu.u_col)
        ));
        // Against the whole pattern in minimum degree order: at most 2 % more.
        let perm = minimum_degree(n, &pattern);
        let inv = inverse(&perm);
        let (l_ptr, l_col) = lower_fill(n, &symmetric_lower(n, &pattern, &inv));
        let (u_ptr, u_col) = transpose(n, &l_ptr, &l_col);
        let rows = permuted_rows(n, &pattern, &inv);
        let [(_, l), (_, u)] = structural_fill(&rows, [(l_ptr, l_col), (u_ptr, u_col)]);
        let whole = l.len() + u.len() + n;
        assert!(
            50 * lu.factor_len() <= 51 * whole,
            "fill {} against {whole}",
            lu.factor_len()
        );
        // A piece's row reading the other piece is refused.
        let (l_ptr, mut l_col) = (lu.l_ptr.clone(), lu.l_col.clone());
        let row = (a..b)
            .find(|&i| l_ptr[i + 1] > l_ptr[i])
            .expect("a row of L");
        l_col[l_ptr[row]] = 0;
        assert!(!keeps_apart(
            [a, b],
            (&l_ptr, &l_col),
            (&lu.u_ptr, &lu.u_col)
        ));
    }
}
