//! Parallelisable cycle sets (SPEC §9): the articulation points ("hubs") of the undirected
//! graph formed by the edges that lie on cycles, and the blocks (biconnected components) they
//! separate. Removing a hub leaves its blocks as subsystems that can be integrated in parallel.
//!
//! An edge `u → v` (u ≠ v) lies on a simple cycle exactly when u and v are in the same strongly
//! connected component, so no enumeration is needed. Self-loops join nothing and are left out; a
//! state whose only cycle is its self-loop is in no block.

use super::digraph::Digraph;
use super::johnson::cyclic_components;

#[derive(Clone, Debug, PartialEq)]
pub struct CycleSets {
    /// Blocks of two or more states, each sorted, in order of their least state.
    pub blocks: Vec<Vec<usize>>,
    /// Hubs (states in two or more blocks), ascending, with the indices of their blocks.
    pub hubs: Vec<(usize, Vec<usize>)>,
}

/// The cycle sets of the subgraph induced by `within`.
pub fn cycle_sets(graph: &Digraph, within: &[usize]) -> CycleSets {
    let adjacency = cycle_edges_undirected(graph, within);
    let mut blocks = biconnected_blocks(&adjacency);
    blocks.sort();
    let mut owners: Vec<Vec<usize>> = vec![Vec::new(); graph.nodes()];
    for (b, block) in blocks.iter().enumerate() {
        for &v in block {
            owners[v].push(b);
        }
    }
    let hubs = owners
        .into_iter()
        .enumerate()
        .filter(|(_, bs)| bs.len() > 1)
        .collect();
    CycleSets { blocks, hubs }
}

/// Undirected adjacency (sorted, no duplicates, no loops) of the edges inside the strongly
/// connected components of the subgraph induced by `within`.
fn cycle_edges_undirected(graph: &Digraph, within: &[usize]) -> Vec<Vec<usize>> {
    let n = graph.nodes();
    let mut component = vec![usize::MAX; n];
    let mut scratch = vec![usize::MAX; n];
    for (c, members) in cyclic_components(graph, within, &mut scratch)
        .iter()
        .enumerate()
    {
        for &v in members {
            component[v] = c;
        }
    }
    let mut adjacency = vec![Vec::new(); n];
    for (u, v) in graph.edge_list() {
        if u != v && component[u] != usize::MAX && component[u] == component[v] {
            adjacency[u].push(v);
            adjacency[v].push(u);
        }
    }
    for list in &mut adjacency {
        list.sort_unstable();
        list.dedup();
    }
    adjacency
}

/// Hopcroft–Tarjan biconnected components, iterative, as sorted node sets.
fn biconnected_blocks(adjacency: &[Vec<usize>]) -> Vec<Vec<usize>> {
    const UNSEEN: usize = usize::MAX;
    let n = adjacency.len();
    let mut discovered = vec![UNSEEN; n];
    let mut low = vec![0; n];
    let mut counter = 0;
    let mut edges: Vec<(usize, usize)> = Vec::new();
    let mut blocks = Vec::new();
    // (node, its parent or UNSEEN, next neighbour position)
    let mut frames: Vec<(usize, usize, usize)> = Vec::new();
    for root in 0..n {
        if discovered[root] != UNSEEN || adjacency[root].is_empty() {
            continue;
        }
        discovered[root] = counter;
        low[root] = counter;
        counter += 1;
        frames.push((root, UNSEEN, 0));
        while let Some(&mut (v, parent, ref mut next)) = frames.last_mut() {
            if let Some(&w) = adjacency[v].get(*next) {
                *next += 1;
                if discovered[w] == UNSEEN {
                    discovered[w] = counter;
                    low[w] = counter;
                    counter += 1;
                    edges.push((v, w));
                    frames.push((w, v, 0));
                } else if w != parent && discovered[w] < discovered[v] {
                    edges.push((v, w));
                    low[v] = low[v].min(discovered[w]);
                }
                continue;
            }
            frames.pop();
            if parent == UNSEEN {
                continue;
            }
            low[parent] = low[parent].min(low[v]);
            if low[v] >= discovered[parent] {
                blocks.push(pop_block(&mut edges, (parent, v)));
            }
        }
    }
    blocks
}

/// Pops the edge stack down to and including `last`; the nodes of those edges form a block.
fn pop_block(edges: &mut Vec<(usize, usize)>, last: (usize, usize)) -> Vec<usize> {
    let mut block = Vec::new();
    while let Some(e) = edges.pop() {
        block.push(e.0);
        block.push(e.1);
        if e == last {
            break;
        }
    }
    block.sort_unstable();
    block.dedup();
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_cycles_sharing_one_node_make_a_hub() {
        // 0↔1, 1→2→3→1 and a tail 3→4 that is on no cycle.
        let g = Digraph::from_edges(5, [(0, 1), (1, 0), (1, 2), (2, 3), (3, 1), (3, 4)]);
        let sets = cycle_sets(&g, &[0, 1, 2, 3, 4]);
        assert_eq!(sets.blocks, vec![vec![0, 1], vec![1, 2, 3]]);
        assert_eq!(sets.hubs, vec![(1, vec![0, 1])]);
        // Inside {1, 2, 3} only one block remains: no hub.
        let inner = cycle_sets(&g, &[1, 2, 3]);
        assert_eq!(inner.blocks, vec![vec![1, 2, 3]]);
        assert!(inner.hubs.is_empty());
    }
}
