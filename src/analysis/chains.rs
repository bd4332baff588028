//! Closing chains: what the circuit search remembers so that it need not walk the same path
//! back to the start again and again.
//!
//! In a graph like the heat exchanger most of Johnson's work is the returning half of each
//! cycle: from the turning point the search walks a chain of nodes back to the start, each of
//! them with exactly one way on (every other successor on the path or blocked). The next cycle
//! walks the same chain again, one node longer. Here a node `v` that left the path with
//! exactly one cycle found below it, and no block or unblock anywhere on the way, is
//! remembered as a [`Chain`]: `v`, then the chain of the one node it went on to (or the start).
//! When the search is about to enter `v` again and nothing the chain's walk read has changed,
//! it hands over the one cycle that walk would find instead of walking.
//!
//! What the walk read, and how each is checked in O(1) or in the length of the path segment
//! laid since (see [`super::johnson`] for the checks):
//! - successors found on the path: all at depths ≤ `dep_depth`, whose push `dep_stamp` still
//!   stands, so the whole path up to there is unchanged;
//! - successors found blocked, or free with all their successors on the path, and the chain's
//!   own nodes free: no block or unblock since (`generation`);
//! - the chain's own nodes not on the path now: the nodes pushed above `dep_depth` are looked up
//!   in the tail (below).
//!
//! Chains nest (`next` is the chain of the node after `v`), so they are stored once each. The
//! **tail** is the chain last replayed, laid out as a stack from the start's end: the search hands
//! it to the sink beside the path, and moving it to a nested chain pushes or pops only the
//! difference. A sink that folds per node parks a replayed cycle at the tail's top, as it does
//! at the path's, and settles the tail's nodes when they are popped ([`super::johnson::CycleSink`]).

use super::johnson::CycleSink;

/// No chain: the node closes to the start itself, or has no chain remembered.
pub(super) const NONE: u32 = u32::MAX;

/// At most this many chains (≈ 44 bytes each with one weight layer) are held at once, so
/// memory stays bounded whatever the graph: past it, no more are remembered until the next
/// start or generation.
const MAX_CHAINS: usize = 1 << 18;

/// A node that went on to exactly one cycle (see the module comment).
#[derive(Clone, Copy, Debug)]
pub(super) struct Chain {
    pub node: u32,
    /// The chain of the node it went on to, or [`NONE`] when its edge closes to the start.
    pub next: u32,
    pub dep_depth: u32,
    pub dep_stamp: u64,
    pub generation: u64,
}

/// The chains of one start node and one generation, and the tail.
pub(super) struct Chains {
    layers: usize,
    /// The generation of every chain held.
    generation: u64,
    chains: Vec<Chain>,
    /// `sums[c * layers + k]`: the weight, in layer k, of the edges from chain c's node to the
    /// start.
    sums: Vec<f64>,
    /// Per node: its latest chain, or [`NONE`].
    latest: Vec<u32>,
    /// The tail: chains from the start's end up, and their nodes.
    tail: Vec<u32>,
    tail_nodes: Vec<usize>,
    /// Per chain: its position in the tail, or [`NONE`].
    tail_position: Vec<u32>,
    /// Per node: whether it is in the tail.
    node_in_tail: Vec<bool>,
    /// Chains to push onto the tail, kept to reuse the allocation.
    pushing: Vec<u32>,
}

impl Chains {
    pub(super) fn new(nodes: usize, layers: usize) -> Chains {
        Chains {
            layers,
            generation: 0,
            chains: Vec::new(),
            sums: Vec::new(),
            latest: vec![NONE; nodes],
            tail: Vec::new(),
            tail_nodes: Vec::new(),
            tail_position: Vec::new(),
            node_in_tail: vec![false; nodes],
            pushing: Vec::new(),
        }
    }

    /// Forgets every chain (of the previous start) whose node is in `nodes`. The tail must be
    /// empty.
    pub(super) fn clear(&mut self, nodes: &[usize]) {
        debug_assert!(self.tail.is_empty());
        self.forget();
        for &v in nodes {
            self.latest[v] = NONE;
        }
    }

    fn forget(&mut self) {
        self.chains.clear();
        self.sums.clear();
        self.tail_position.clear();
    }

    /// Makes room for the chains of `generation`: those of an older one are never replayed or
    /// extended again, so they are dropped (the tail settled first, into `sink`). A
    /// node's latest chain is then found stale by its node or generation.
    pub(super) fn enter<S: CycleSink + ?Sized>(&mut self, generation: u64, sink: &mut S) {
        if self.generation != generation {
            self.pop_tail_to(0, sink);
            self.forget();
            self.generation = generation;
        }
    }

    /// `node`'s latest chain, if it is of `generation`.
    pub(super) fn latest(&self, node: usize, generation: u64) -> Option<(u32, Chain)> {
        let id = self.latest[node];
        let chain = *self.chains.get(id as usize)?;
        (chain.node as usize == node && chain.generation == generation).then_some((id, chain))
    }

    pub(super) fn chain(&self, id: u32) -> Chain {
        self.chains[id as usize]
    }

    pub(super) fn sums(&self, chain: u32) -> &[f64] {
        let first = chain as usize * self.layers;
        &self.sums[first..first + self.layers]
    }

    /// Remembers `chain`, whose edges weigh `edge` plus, when it goes on, its `next`'s sums.
    /// Returns it, or [`NONE`] when the store is full.
    pub(super) fn remember(&mut self, chain: Chain, edge: &[f64]) -> u32 {
        if self.chains.len() >= MAX_CHAINS {
            return NONE;
        }
        let id = self.chains.len() as u32;
        for (k, &w) in edge.iter().enumerate() {
            let rest = if chain.next == NONE {
                0.0
            } else {
                self.sums[chain.next as usize * self.layers + k]
            };
            self.sums.push(w + rest);
        }
        self.chains.push(chain);
        self.tail_position.push(NONE);
        self.latest[chain.node as usize] = id;
        id
    }

    /// Makes the tail chain `c`: pops down to the longest part it shares with it (each popped
    /// node settled into `sink`), then pushes the rest.
    pub(super) fn make_tail<S: CycleSink + ?Sized>(&mut self, c: u32, sink: &mut S) {
        self.pushing.clear();
        let mut shared = c;
        while shared != NONE && self.tail_position[shared as usize] == NONE {
            self.pushing.push(shared);
            shared = self.chains[shared as usize].next;
        }
        let keep = if shared == NONE {
            0
        } else {
            1 + self.tail_position[shared as usize] as usize
        };
        self.pop_tail_to(keep, sink);
        for &p in self.pushing.iter().rev() {
            let node = self.chains[p as usize].node as usize;
            self.tail_position[p as usize] = self.tail.len() as u32;
            self.tail.push(p);
            self.tail_nodes.push(node);
            self.node_in_tail[node] = true;
        }
    }

    /// Pops the tail down to `len` chains, top first.
    pub(super) fn pop_tail_to<S: CycleSink + ?Sized>(&mut self, len: usize, sink: &mut S) {
        while self.tail.len() > len {
            let c = self.tail.pop().expect("longer than len");
            let node = self.tail_nodes.pop().expect("one node per chain");
            self.tail_position[c as usize] = NONE;
            self.node_in_tail[node] = false;
            sink.leave_tail(self.tail.len(), node);
        }
    }

    /// The tail's nodes, from the start's end up (the reverse of their order along the cycle).
    pub(super) fn tail_nodes(&self) -> &[usize] {
        &self.tail_nodes
    }

    pub(super) fn in_tail(&self, node: usize) -> bool {
        self.node_in_tail[node]
    }
}
