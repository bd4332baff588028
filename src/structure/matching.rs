//! Hopcroft–Karp maximum bipartite matching (equations × unknowns), O(E·√V), iterative so
//! that 10⁶-long augmenting chains cannot overflow the stack.

/// No partner.
pub const NONE: usize = usize::MAX;

/// A bipartite graph in compressed rows: `adj[offsets[e]..offsets[e+1]]` are the unknowns of
/// equation `e`.
#[derive(Clone, Debug, Default)]
pub struct Bipartite {
    pub offsets: Vec<usize>,
    pub adj: Vec<usize>,
    pub unknowns: usize,
}

impl Bipartite {
    pub fn from_rows(rows: &[Vec<usize>], unknowns: usize) -> Bipartite {
        let mut offsets = Vec::with_capacity(rows.len() + 1);
        let mut adj = Vec::new();
        offsets.push(0);
        for row in rows {
            adj.extend_from_slice(row);
            offsets.push(adj.len());
        }
        Bipartite {
            offsets,
            adj,
            unknowns,
        }
    }

    pub fn equations(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn row(&self, e: usize) -> &[usize] {
        &self.adj[self.offsets[e]..self.offsets[e + 1]]
    }
}

/// `of_equation[e]` is the unknown matched to equation `e` (or [`NONE`]); `of_unknown` the
/// converse.
#[derive(Clone, Debug)]
pub struct Matching {
    pub of_equation: Vec<usize>,
    pub of_unknown: Vec<usize>,
}

impl Matching {
    pub fn size(&self) -> usize {
        self.of_equation.iter().filter(|&&u| u != NONE).count()
    }

    pub fn is_perfect(&self) -> bool {
        self.of_equation.len() == self.of_unknown.len() && self.size() == self.of_equation.len()
    }
}

pub fn hopcroft_karp(g: &Bipartite) -> Matching {
    let n_eq = g.equations();
    let mut m = Matching {
        of_equation: vec![NONE; n_eq],
        of_unknown: vec![NONE; g.unknowns],
    };
    greedy(g, &mut m);
    let mut dist = vec![usize::MAX; n_eq];
    let mut queue = Vec::with_capacity(n_eq);
    let mut stack: Vec<(usize, usize)> = Vec::new();
    while layer(g, &m, &mut dist, &mut queue) {
        for start in 0..n_eq {
            if m.of_equation[start] == NONE {
                augment_from(g, &mut m, &mut dist, &mut stack, start);
            }
        }
    }
    m
}

/// A quick maximal matching to start from (most equations match here).
fn greedy(g: &Bipartite, m: &mut Matching) {
    for e in 0..g.equations() {
        if let Some(&u) = g.row(e).iter().find(|&&u| m.of_unknown[u] == NONE) {
            m.of_equation[e] = u;
            m.of_unknown[u] = e;
        }
    }
}

/// BFS from the free equations; true when some free unknown is reachable.
fn layer(g: &Bipartite, m: &Matching, dist: &mut [usize], queue: &mut Vec<usize>) -> bool {
    queue.clear();
    for (e, d) in dist.iter_mut().enumerate() {
        if m.of_equation[e] == NONE {
            *d = 0;
            queue.push(e);
        } else {
            *d = usize::MAX;
        }
    }
    let mut found = false;
    let mut head = 0;
    while head < queue.len() {
        let e = queue[head];
        head += 1;
        for &u in g.row(e) {
            let next = m.of_unknown[u];
            if next == NONE {
                found = true;
            } else if dist[next] == usize::MAX {
                dist[next] = dist[e] + 1;
                queue.push(next);
            }
        }
    }
    found
}

/// Iterative DFS along the BFS layers; flips the path when it reaches a free unknown.
fn augment_from(
    g: &Bipartite,
    m: &mut Matching,
    dist: &mut [usize],
    stack: &mut Vec<(usize, usize)>,
    start: usize,
) -> bool {
    stack.clear();
    stack.push((start, 0));
    while let Some(&mut (e, ref mut next)) = stack.last_mut() {
        let row = g.row(e);
        if *next == row.len() {
            dist[e] = usize::MAX;
            stack.pop();
            continue;
        }
        let u = row[*next];
        *next += 1;
        let owner = m.of_unknown[u];
        if owner == NONE {
            for &(e, next) in stack.iter() {
                let u = g.row(e)[next - 1];
                m.of_equation[e] = u;
                m.of_unknown[u] = e;
            }
            return true;
        }
        if dist[owner] == dist[e].wrapping_add(1) {
            stack.push((owner, 0));
        }
    }
    false
}
