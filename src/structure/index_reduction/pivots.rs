//! The column choice of dummy derivatives (Mattsson and Söderlind, 1993): Gaussian
//! elimination on the sparse Jacobian of differentiated equations with respect to candidate
//! derivatives, one pivot per row, each pivot's column becoming a dummy derivative.
//!
//! Threshold pivoting: a column may be the pivot when its value is at least [`THRESHOLD`]
//! times the largest of its row (after the elimination so far); among those, the column the
//! modeller least wants as a state's derivative (its `stateSelect` and start), then the
//! largest. The same elimination, its pivots kept among the chosen columns, measures how good
//! a choice still is at another point ([`conditioning`]).

use std::collections::BTreeMap;

/// A candidate column may be the pivot from this share of its row's largest entry.
pub const THRESHOLD: f64 = 0.5;

/// A row after elimination: column → value, in column order.
type Row = BTreeMap<usize, f64>;

/// Why no choice exists: the row (index into the rows given) that has no candidate left.
#[derive(Debug, PartialEq, Eq)]
pub struct NoPivot(pub usize);

/// Chooses one column per row. `rows` hold `(column, value)` pairs; `preference[c]` orders
/// the columns (lower: sooner a dummy). Returns each row's column, in row order.
pub fn choose(rows: &[Vec<(usize, f64)>], preference: &[u32]) -> Result<Vec<usize>, NoPivot> {
    eliminate(rows, |k, row: &Row| {
        let largest = row.values().fold(0.0f64, |m, v| m.max(v.abs()));
        let eligible = |v: f64| {
            if largest > 0.0 {
                v.abs() >= THRESHOLD * largest
            } else {
                // Every value zero at this point: by the structure and the preferences alone.
                true
            }
        };
        row.iter()
            .filter(|(_, v)| eligible(**v))
            .min_by(|(a, x), (b, y)| {
                (preference[**a].cmp(&preference[**b]))
                    .then(y.abs().total_cmp(&x.abs()))
                    .then(a.cmp(b))
            })
            .map(|(&c, _)| c)
            .ok_or(NoPivot(k))
    })
    .map(|(pivots, _)| pivots)
}

/// How well the columns of `pivots` (one per row, taken as a set: the dummy derivatives)
/// still determine their rows, judged as a block: eliminating row by row, each row's pivot
/// is the largest entry it has left in the block's columns, in any order, and the worst
/// ratio of that pivot to the largest entry of the row over all columns is the result. 1 for
/// a block as good as any choice, 0 when the block is singular. Judged pivot by pivot in the
/// order chosen, a block whose rows only need another order (a pendulum's at the bottom of
/// its swing, kept states `x, vx`) would read as singular.
pub fn conditioning(rows: &[Vec<(usize, f64)>], pivots: &[usize]) -> f64 {
    let block: std::collections::BTreeSet<usize> = pivots.iter().copied().collect();
    let mut worst = 1.0f64;
    let result = eliminate(rows, |k, row: &Row| {
        let largest = row.values().fold(0.0f64, |m, v| m.max(v.abs()));
        let pivot = row
            .iter()
            .filter(|(c, _)| block.contains(c))
            .max_by(|(a, x), (b, y)| x.abs().total_cmp(&y.abs()).then(b.cmp(a)))
            .map(|(&c, &v)| (c, v.abs()));
        match pivot {
            Some((c, value)) if value > 0.0 => {
                worst = worst.min(if largest > 0.0 { value / largest } else { 0.0 });
                Ok(c)
            }
            _ => Err(NoPivot(k)),
        }
    });
    if result.is_err() { 0.0 } else { worst }
}

/// Eliminates row by row: `pick` names the pivot column of row `k` (as the elimination left
/// it, pivots of earlier rows removed), whose multiple is then subtracted from the later rows
/// that hold the column. Returns the pivots and the eliminated rows.
fn eliminate(
    rows: &[Vec<(usize, f64)>],
    mut pick: impl FnMut(usize, &Row) -> Result<usize, NoPivot>,
) -> Result<(Vec<usize>, Vec<Row>), NoPivot> {
    let mut work: Vec<Row> = rows
        .iter()
        .map(|r| {
            let mut row = Row::new();
            for &(c, v) in r {
                *row.entry(c).or_insert(0.0) += v;
            }
            row
        })
        .collect();
    // Later rows that hold each column.
    let mut holders: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (k, row) in work.iter().enumerate() {
        for &c in row.keys() {
            holders.entry(c).or_default().push(k);
        }
    }
    let mut pivots = Vec::with_capacity(rows.len());
    for k in 0..work.len() {
        let c = pick(k, &work[k])?;
        pivots.push(c);
        let pivot_row = std::mem::take(&mut work[k]);
        let pivot = pivot_row.get(&c).copied().unwrap_or(0.0);
        let targets: Vec<usize> = holders
            .get(&c)
            .map(|h| h.iter().copied().filter(|&r| r > k).collect())
            .unwrap_or_default();
        for r in targets {
            let Some(value) = work[r].remove(&c) else {
                continue;
            };
            if pivot == 0.0 {
                continue;
            }
            let factor = value / pivot;
            for (&col, &v) in pivot_row.range(..).filter(|(col, _)| **col != c) {
                let entry = work[r].entry(col).or_insert_with(|| {
                    holders.entry(col).or_default().push(r);
                    0.0
                });
                *entry -= factor * v;
            }
        }
        work[k] = pivot_row;
    }
    Ok((pivots, work))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pendulum's top level: rows 2x·x'' + 2y·y'' (+ …), x'' − vx', y'' − vy'; columns
    /// x'' 0, y'' 1, vx' 2, vy' 3.
    fn pendulum(x: f64, y: f64) -> Vec<Vec<(usize, f64)>> {
        vec![
            vec![(0, 2.0 * x), (1, 2.0 * y)],
            vec![(0, 1.0), (2, -1.0)],
            vec![(1, 1.0), (3, -1.0)],
        ]
    }

    #[test]
    fn the_larger_coordinate_becomes_the_dummy() {
        let even = [2, 2, 2, 2];
        assert_eq!(choose(&pendulum(0.6, -0.8), &even).unwrap()[0], 1);
        assert_eq!(choose(&pendulum(0.8, -0.6), &even).unwrap()[0], 0);
        // Near enough in size, the preference decides.
        assert_eq!(choose(&pendulum(0.6, -0.8), &[1, 2, 2, 2]).unwrap()[0], 0);
    }

    #[test]
    fn the_choice_is_nonsingular_and_its_conditioning_falls_as_the_pivot_vanishes() {
        let even = [2, 2, 2, 2];
        let pivots = choose(&pendulum(1.0, 0.0), &even).unwrap();
        assert_eq!(pivots[0], 0, "x'' at the horizontal");
        let mut columns = pivots.clone();
        columns.sort_unstable();
        columns.dedup();
        assert_eq!(columns.len(), 3, "one column per row: {pivots:?}");
        assert!(conditioning(&pendulum(1.0, 0.0), &pivots) > 0.99);
        let bottom = conditioning(&pendulum(0.01, -1.0), &pivots);
        assert!(bottom < 0.02, "{bottom}");
        assert_eq!(conditioning(&pendulum(0.0, -1.0), &pivots), 0.0);
    }

    /// States `x, vx` (dummies x'', y'', vy'): the block's determinant is 2y, so the choice
    /// is best at the bottom of the swing even though x'' pivots the constraint row in the
    /// order first chosen, and singular at the horizontal.
    #[test]
    fn the_block_is_judged_as_a_whole_not_pivot_by_pivot() {
        let pivots = [0, 1, 3];
        assert_eq!(conditioning(&pendulum(0.0, -1.0), &pivots), 1.0);
        let start = conditioning(&pendulum(0.85, -0.527), &pivots);
        assert!((start - 0.527 / 0.85).abs() < 1e-9, "{start}");
        assert_eq!(conditioning(&pendulum(1.0, 0.0), &pivots), 0.0);
        // The same columns in another row order give the same measure.
        let mut reordered = pendulum(0.3, -0.95);
        reordered.swap(0, 2);
        let (a, b) = (
            conditioning(&pendulum(0.3, -0.95), &pivots),
            conditioning(&reordered, &[3, 0, 1]),
        );
        assert!(a > 0.99 && b > 0.99, "{a} {b}");
    }

    #[test]
    fn a_row_without_candidates_has_no_pivot() {
        let rows = vec![vec![(0, 1.0)], vec![(0, 2.0)]];
        assert_eq!(choose(&rows, &[2]), Err(NoPivot(1)));
    }
}
