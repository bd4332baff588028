//! One step of dissection for chain-like patterns (a heat exchanger's cells, a ladder of RC
//! sections): a small set of rows near the middle, the separator, splits the others into two
//! pieces with no entry between them.
//!
//! Why: ordered piece, piece, separator, the factors' rows of one piece never read the
//! other's, so each triangular solve can run the two pieces at once, on two threads, or in
//! turns on one (its two chains of dependent rows then overlap in the processor), and only
//! the separator's few rows alone ([`super::static_lu::StaticLu::solve_pieces`]).
//!
//! The separator is a level of a breadth-first level structure of `A + Aᵀ` from a
//! pseudo-peripheral row (George and Liu): levels before it and after it share no entry.

/// The rows of the two pieces and of the separator; each piece's rows nearest the
/// separator first (by level).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pieces {
    pub first: Vec<usize>,
    pub second: Vec<usize>,
    pub separator: Vec<usize>,
}

/// The separator may hold at most this share of the rows (1/32).
const MAX_SEPARATOR_SHARE: usize = 32;

/// A breadth-first level structure of the symmetric pattern: `order` lists the rows level by
/// level, level `l` being `order[starts[l]..starts[l + 1]]`.
struct Levels {
    order: Vec<usize>,
    starts: Vec<usize>,
}

impl Levels {
    fn count(&self) -> usize {
        self.starts.len() - 1
    }

    fn size(&self, level: usize) -> usize {
        self.starts[level + 1] - self.starts[level]
    }
}

/// The symmetric pattern's neighbours of each row, the diagonal left out.
fn neighbours(n: usize, entries: &[(usize, usize)]) -> Vec<Vec<usize>> {
    let mut adjacent = vec![Vec::new(); n];
    for &(row, col) in entries {
        if row != col {
            adjacent[row].push(col);
            adjacent[col].push(row);
        }
    }
    for list in &mut adjacent {
        list.sort_unstable();
        list.dedup();
    }
    adjacent
}

/// The levels from `root`; `None` when some row is not reached (the pattern is not
/// connected).
fn levels_from(adjacent: &[Vec<usize>], root: usize) -> Option<Levels> {
    let n = adjacent.len();
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut starts = vec![0];
    seen[root] = true;
    order.push(root);
    while *starts.last()? < order.len() {
        let level = *starts.last()?..order.len();
        starts.push(order.len());
        for k in level {
            for &next in &adjacent[order[k]] {
                if !seen[next] {
                    seen[next] = true;
                    order.push(next);
                }
            }
        }
    }
    (order.len() == n).then_some(Levels { order, starts })
}

/// Levels from a pseudo-peripheral row: restarts from the last row reached while that makes
/// the structure deeper (a few sweeps).
fn deepest_levels(adjacent: &[Vec<usize>]) -> Option<Levels> {
    let mut levels = levels_from(adjacent, 0)?;
    for _ in 0..4 {
        let far = *levels.order.last()?;
        let next = levels_from(adjacent, far)?;
        if next.count() <= levels.count() {
            break;
        }
        levels = next;
    }
    Some(levels)
}

/// The level to cut at: the one that makes the longer piece plus twice the separator (the
/// rows one thread runs alone; a separator row is longer than most) smallest, among the
/// levels small enough to be a separator. `None` when no inner level is.
fn cut_level(levels: &Levels, n: usize) -> Option<usize> {
    (1..levels.count().saturating_sub(1))
        .filter(|&l| MAX_SEPARATOR_SHARE * levels.size(l) <= n)
        .min_by_key(|&l| {
            let before = levels.starts[l];
            let after = n - levels.starts[l + 1];
            before.max(after) + 2 * levels.size(l)
        })
}

/// The pieces of an `n × n` pattern given as `(row, col)` entries, or `None` when it has no
/// small separator (or is not connected).
pub fn pieces(n: usize, entries: &[(usize, usize)]) -> Option<Pieces> {
    if n == 0 {
        return None;
    }
    let adjacent = neighbours(n, entries);
    let levels = deepest_levels(&adjacent)?;
    let cut = cut_level(&levels, n)?;
    let (first, rest) = levels.order.split_at(levels.starts[cut]);
    let (separator, second) = rest.split_at(levels.size(cut));
    Some(Pieces {
        first: first.iter().rev().copied().collect(),
        second: second.to_vec(),
        separator: separator.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ladder of `cells` rungs `a_i – w_i – b_i` with rails `a_i – a_(i+1)` and
    /// `b_i – b_(i+1)`: rows `3i`, `3i + 1`, `3i + 2`.
    fn ladder(cells: usize) -> Vec<(usize, usize)> {
        let mut entries = Vec::new();
        for i in 0..cells {
            let (a, w, b) = (3 * i, 3 * i + 1, 3 * i + 2);
            entries.extend([(a, w), (w, a), (w, b), (b, w)]);
            if i + 1 < cells {
                entries.extend([(a + 3, a), (b, b + 3)]);
            }
        }
        entries
    }

    #[test]
    fn a_ladder_is_cut_near_its_middle_into_two_unjoined_balanced_pieces() {
        let (cells, n) = (40, 120);
        let entries = ladder(cells);
        let p = pieces(n, &entries).expect("a ladder has a small middle level");
        let mut all: Vec<usize> = [p.first.as_slice(), &p.second, &p.separator].concat();
        all.sort_unstable();
        assert_eq!(all, (0..n).collect::<Vec<_>>(), "a partition of the rows");
        assert!(p.separator.len() <= 3, "{:?}", p.separator);
        assert!(p.separator.iter().all(|&r| (15..25).contains(&(r / 3))));
        let piece = |r: usize| (p.first.contains(&r), p.second.contains(&r));
        for &(r, c) in &entries {
            let (x, y) = (piece(r), piece(c));
            assert!(
                !(x.0 && y.1 || x.1 && y.0),
                "entry ({r}, {c}) joins the pieces"
            );
        }
        for len in [p.first.len(), p.second.len()] {
            assert!((55..=62).contains(&len), "balanced pieces: {len} of {n}");
        }
    }

    #[test]
    fn no_pieces_without_a_small_inner_level() {
        // A dense block has one level past its root.
        let n = 40;
        let dense: Vec<_> = (0..n).flat_map(|i| (0..n).map(move |j| (i, j))).collect();
        assert_eq!(pieces(n, &dense), None);
        // Two chains not joined: not connected.
        let chains: Vec<_> = (0..n - 1)
            .filter(|&i| i != n / 2)
            .map(|i| (i + 1, i))
            .collect();
        assert_eq!(pieces(n, &chains), None);
    }
}
