//! Linear solves for Newton: `M = I − γ J` factored once per step and reused across the
//! step's Newton iterations (simplified Newton). Small systems use a dense LU with partial
//! pivoting (no allocation after construction); systems above [`DENSE_LIMIT`] states use a
//! sparse LU on the fixed pattern of `M`: [`StaticLu`]'s diagonal pivots, ordered and analysed
//! once, and from the first time those are refused (a row grows too much) the runtime's sparse
//! LU with threshold partial pivoting in the same column order (the one fallback emitted
//! crates have too).
//!
//! Why 64: a dense LU costs `n³/3` flops per factorization (about 87 000 at n = 64, well under a
//! millisecond) and needs no symbolic analysis, while model Jacobians are sparse (a few entries
//! per row), so past a few dozen states the sparse LU's cost, which grows with the fill rather
//! than with `n³`, is the smaller one.

use std::ops::Range;

use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::sparse::linalg::lu::{LuRef, NumericLu, SymbolicLu, factorize_symbolic_lu};
use faer::sparse::{Argsort, SparseColMat, SymbolicSparseColMat};
use faer::{Conj, Par};

pub use super::dense_lu::DenseLu;
use super::pair::{Pair, share};
use super::static_lu::{InPlace, Refactor, SolveEnds, StaticLu};
use mocca_runtime::pivoting_lu::PivotingLu as FallbackLu;

/// Above this many unknowns, the sparse LU.
pub const DENSE_LIMIT: usize = 64;

/// Whether Newton's matrix for `n` unknowns is factored by the sparse LU.
pub fn is_sparse(n: usize) -> bool {
    n > DENSE_LIMIT
}

/// faer's sparse LU with partial pivoting on a fixed pattern, for any square sparse matrix,
/// such as a reduction's `J_F`, solved for many columns.
/// The numeric factors and the scratch space are kept and refilled.
pub struct PivotingLu {
    symbolic: SymbolicSparseColMat<usize>,
    argsort: Argsort<usize>,
    analysis: SymbolicLu<usize>,
    values: Vec<f64>,
    numeric: NumericLu<usize, f64>,
    /// `numeric` holds the factors of the last successful factorization.
    factored: bool,
    scratch: MemBuffer,
}

impl PivotingLu {
    /// For `n × n` matrices with the entries `entries` (duplicates allowed, summed).
    pub fn new(n: usize, entries: &[(usize, usize)]) -> PivotingLu {
        let pairs: Vec<faer::sparse::Pair<usize, usize>> = entries
            .iter()
            .map(|&(row, col)| faer::sparse::Pair { row, col })
            .collect();
        let (symbolic, argsort) = SymbolicSparseColMat::try_new_from_indices(n, n, &pairs)
            .expect("a pattern of in-range indices");
        let analysis = factorize_symbolic_lu(symbolic.as_ref(), Default::default())
            .expect("symbolic LU of a square pattern");
        let scratch = MemBuffer::new(StackReq::any_of(&[
            analysis.factorize_numeric_lu_scratch::<f64>(Par::Seq, Default::default()),
            analysis.solve_in_place_scratch::<f64>(1, Par::Seq),
        ]));
        PivotingLu {
            symbolic,
            argsort,
            analysis,
            values: vec![0.0; pairs.len()],
            numeric: NumericLu::new(),
            factored: false,
            scratch,
        }
    }

    /// Factors the matrix with `value(k)` at entry `k` (duplicates summed); false when it is
    /// singular or a value is not finite.
    pub fn factor(&mut self, value: impl Fn(usize) -> f64) -> bool {
        for (k, v) in self.values.iter_mut().enumerate() {
            *v = value(k);
        }
        self.factored = false;
        if self.values.iter().any(|x| !x.is_finite()) {
            return false;
        }
        let Ok(m) =
            SparseColMat::new_from_argsort(self.symbolic.clone(), &self.argsort, &self.values)
        else {
            return false;
        };
        self.factored = self
            .analysis
            .factorize_numeric_lu(
                &mut self.numeric,
                m.as_ref(),
                Par::Seq,
                MemStack::new(&mut self.scratch),
                Default::default(),
            )
            .is_ok();
        self.factored
    }

    /// Solves in place with the last factorization (nothing when it failed).
    pub fn solve(&mut self, b: &mut [f64]) {
        self.solve_columns(b, 1);
    }

    /// Solves for `columns` right-hand sides at once, stored one after the other in `b`
    /// (column-major); many columns share each pass over the factors.
    pub fn solve_columns(&mut self, b: &mut [f64], columns: usize) {
        // The scratch made at construction serves one column.
        if columns > 1 {
            grow_scratch(&self.analysis, &mut self.scratch, columns);
        }
        let factors = self.factored.then_some((&self.analysis, &self.numeric));
        solve_with(factors, b, columns, &mut self.scratch);
    }

    /// [`PivotingLu::solve_columns`] with the caller's scratch memory (grown as needed), so
    /// that threads share one factorization.
    pub fn solve_columns_in(&self, b: &mut [f64], columns: usize, scratch: &mut MemBuffer) {
        grow_scratch(&self.analysis, scratch, columns);
        let factors = self.factored.then_some((&self.analysis, &self.numeric));
        solve_with(factors, b, columns, scratch);
    }
}

/// Solves in place with `factors`, an analysis and the factors computed from it (nothing
/// without them, after a failed factorization), in `scratch` grown for `columns`.
fn solve_with(
    factors: Option<(&SymbolicLu<usize>, &NumericLu<usize, f64>)>,
    b: &mut [f64],
    columns: usize,
    scratch: &mut MemBuffer,
) {
    if let Some((analysis, numeric)) = factors {
        let n = b.len() / columns;
        let rhs = faer::MatMut::from_column_major_slice_mut(b, n, columns);
        // `numeric` holds factors computed from `analysis`.
        LuRef::new_unchecked(analysis, numeric).solve_in_place_with_conj(
            Conj::No,
            rhs,
            Par::Seq,
            MemStack::new(scratch),
        );
    }
}

/// Grows `scratch` to what factoring and solving `columns` right-hand sides need.
fn grow_scratch(analysis: &SymbolicLu<usize>, scratch: &mut MemBuffer, columns: usize) {
    let needed = StackReq::any_of(&[
        analysis.factorize_numeric_lu_scratch::<f64>(Par::Seq, Default::default()),
        analysis.solve_in_place_scratch::<f64>(columns, Par::Seq),
    ]);
    if scratch.len() < needed.unaligned_bytes_required() {
        *scratch = MemBuffer::new(needed);
    }
}

/// The sparse path: diagonal pivots on the fixed fill pattern, and the runtime's pivoting LU
/// from the first time they are refused.
struct SparseLu {
    /// `M`'s entries: the Jacobian's, then the diagonal.
    entries: Vec<(usize, usize)>,
    fixed: StaticLu,
    /// Per entry, its slot in `fixed`'s values.
    slots: Vec<usize>,
    pivoting: Option<FallbackLu>,
}

impl SparseLu {
    fn factor(&mut self, value: impl Fn(usize) -> f64) -> bool {
        if self.pivoting.is_none() {
            let loaded = self.fixed.factor(|v| {
                for (k, &slot) in self.slots.iter().enumerate() {
                    v[slot] += value(k);
                }
            });
            match loaded {
                Ok(()) => return true,
                Err(Refactor::Singular) => return false,
                Err(Refactor::Unstable) => {
                    let (n, order) = (self.fixed.n(), self.fixed.tables()[0]);
                    self.pivoting = Some(FallbackLu::new(n, &self.entries, order));
                }
            }
        }
        self.pivoting.as_mut().is_some_and(|lu| lu.factor(value))
    }

    fn solve_fused<E: SolveEnds + Sync>(
        &mut self,
        ends: &mut E,
        work: &mut [f64],
        pair: Option<&Pair>,
    ) -> [E::Sums; 2] {
        match &mut self.pivoting {
            Some(lu) => [
                solve_gathered(ends, work, |b| lu.solve(b)),
                E::Sums::default(),
            ],
            None => self.fixed.solve_pieces(ends, pair),
        }
    }
}

/// Solves `(I − γ J) x = b` for a Jacobian on a fixed pattern.
pub struct NewtonMatrix {
    n: usize,
    kind: Kind,
    /// The contraction simplified Newton showed on the current factorization (the ratio of
    /// successive corrections), once seen: it holds for later iterations and steps on the
    /// same factorization, so that one correction can suffice.
    contraction: Option<f64>,
    /// The right-hand side of a solve that is not fused.
    work: Vec<f64>,
}

enum Kind {
    /// The LU and, per Jacobian entry, its slot in the row-major matrix.
    Dense(DenseLu, Vec<usize>),
    Sparse(Box<SparseLu>),
}

impl NewtonMatrix {
    /// For `n` unknowns and the Jacobian pattern `(row, col)`.
    pub fn new(n: usize, pattern: &[(usize, usize)]) -> NewtonMatrix {
        if !is_sparse(n) {
            let slots = pattern.iter().map(|&(r, c)| r * n + c).collect();
            return NewtonMatrix {
                n,
                kind: Kind::Dense(DenseLu::new(n), slots),
                contraction: None,
                work: vec![0.0; n],
            };
        }
        let entries: Vec<(usize, usize)> = pattern
            .iter()
            .copied()
            .chain((0..n).map(|i| (i, i)))
            .collect();
        let fixed = StaticLu::new(n, &entries);
        let slots = fixed.slots(&entries);
        NewtonMatrix {
            n,
            kind: Kind::Sparse(Box::new(SparseLu {
                entries,
                fixed,
                slots,
                pivoting: None,
            })),
            contraction: None,
            work: vec![0.0; n],
        }
    }

    /// Whether this matrix was analysed for `n` unknowns and a Jacobian pattern of
    /// `pattern_len` entries.
    pub fn fits(&self, n: usize, pattern_len: usize) -> bool {
        self.n == n
            && match &self.kind {
                Kind::Dense(_, slots) => slots.len() == pattern_len,
                Kind::Sparse(s) => s.entries.len() == pattern_len + n,
            }
    }

    pub fn is_sparse(&self) -> bool {
        matches!(self.kind, Kind::Sparse(_))
    }

    /// Factors `I − γ J` for the Jacobian values `jac` (one per pattern entry); false when
    /// singular.
    pub fn factor(&mut self, gamma: f64, jac: &[f64]) -> bool {
        self.contraction = None;
        match &mut self.kind {
            Kind::Dense(lu, slots) => {
                lu.clear();
                for (&slot, &x) in slots.iter().zip(jac) {
                    lu.subtract_at(slot, gamma * x);
                }
                for i in 0..self.n {
                    lu.add(i, i, 1.0);
                }
                lu.factor()
            }
            Kind::Sparse(s) => s.factor(|k| jac.get(k).map_or(1.0, |&x| -gamma * x)),
        }
    }

    /// The contraction to judge a Newton iteration by: `observed` (this iteration's
    /// correction over the last one's, kept for this factorization when below 1), or else
    /// the one kept earlier.
    pub fn contraction(&mut self, observed: Option<f64>) -> Option<f64> {
        if let Some(rate) = observed.filter(|&r| r < 1.0) {
            self.contraction = Some(rate);
        }
        observed.or(self.contraction)
    }

    /// Solves with the last factorization, in place.
    pub fn solve(&mut self, b: &mut [f64]) {
        debug_assert_eq!(b.len(), self.n);
        self.solve_fused(&mut InPlace(share(b)), None);
    }

    /// Which entries each thread of a solve in pieces solves (see [`StaticLu::owners`]);
    /// `None` when a solve runs on one thread.
    pub fn owners(&self) -> Option<[Vec<Range<usize>>; 2]> {
        match &self.kind {
            Kind::Sparse(s) => s.fixed.owners(),
            Kind::Dense(..) => None,
        }
    }

    /// Solves with the last factorization, reading the right-hand side and handing out the
    /// solution through `ends` (fused into the sparse solve's loops; around the others), and
    /// returns what `ends` summed over the solution, in two parts: the pieces' (see
    /// [`StaticLu::solve_pieces`], on `pair`'s two threads), or the whole and nothing.
    pub fn solve_fused<E: SolveEnds + Sync>(
        &mut self,
        ends: &mut E,
        pair: Option<&Pair>,
    ) -> [E::Sums; 2] {
        let work = &mut self.work;
        match &mut self.kind {
            Kind::Dense(lu, _) => [
                solve_gathered(ends, work, |b| lu.solve(b)),
                E::Sums::default(),
            ],
            Kind::Sparse(s) => s.solve_fused(ends, work, pair),
        }
    }
}

/// A solve by `solve` in place, with the right-hand side gathered from `ends` into `work`
/// first and the solution handed out after.
fn solve_gathered<E: SolveEnds>(
    ends: &mut E,
    work: &mut [f64],
    solve: impl FnOnce(&mut [f64]),
) -> E::Sums {
    assert_eq!(
        ends.size(),
        work.len(),
        "the ends of a solve of {} unknowns",
        work.len()
    );
    let mut sums = E::Sums::default();
    for (i, b) in work.iter_mut().enumerate() {
        // SAFETY: in bounds (the assertion above). One thread, and the exclusive borrow keeps
        // the others out of `ends`.
        *b = unsafe { ends.rhs(i, &mut sums) };
    }
    solve(work);
    for (i, &x) in work.iter().enumerate() {
        // SAFETY: as above.
        unsafe { ends.solution(i, x, &mut sums) };
    }
    sums
}
