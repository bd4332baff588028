//! Johnson's enumeration of the simple cycles of a digraph (SIAM J. Comput. 4(1), 1975),
//! iterative: explicit stacks for the circuit search, the unblocking and the strongly connected
//! components, so a cycle through 10⁵ nodes needs no call stack.
//!
//! Cycles stream to a visitor as they are found and are never stored. Components are taken one
//! at a time: the least node `s` of a component is the start, every cycle through `s` inside the
//! component is listed, then `s` is removed and the rest of the component is split again into
//! strongly connected parts. Each cycle is therefore found exactly once, from its least node in
//! that order.
//!
//! Alongside the nodes the visitor receives, for every weight layer (one per operating point),
//! the sum of the edges' weights along the cycle: with `ln|J_ij|` weights that is
//! `ln|Π J_ij|`. The sums are kept per depth of the search, so a cycle costs nothing extra to
//! weigh.
//!
//! For a sink that takes tails, the search also remembers its walks back to the start and
//! replays them (`src/analysis/chains.rs`): the same cycles in the same order, without walking the
//! returning half of each again. The checks that make a replay exact are in
//! `Search::replayable`; each is needed (the property tests fail without any one of them).

use std::time::{Duration, Instant};

use super::chains::{self, Chain, Chains};
use super::digraph::Digraph;

/// When to stop: after this many cycles and/or this much wall time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Budget {
    pub max_cycles: Option<u64>,
    pub max_time: Option<Duration>,
}

/// Why an enumeration stopped before the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Cycles,
    Time,
}

/// One cycle as it streams past: its nodes in order along the edges (the first is its least
/// node) and, per weight layer, the sum of its edges' weights.
#[derive(Clone, Copy, Debug)]
pub struct Cycle<'a> {
    /// The search path: the cycle's first nodes, in order.
    pub nodes: &'a [usize],
    /// The cycle's remaining nodes when it was replayed (see [`CycleSink::takes_tails`]), from
    /// the last one back: the cycle is `nodes` followed by `tail` reversed. Empty otherwise.
    pub tail: &'a [usize],
    pub weight_sums: &'a [f64],
}

impl Cycle<'_> {
    /// The number of nodes (and edges).
    pub fn len(&self) -> usize {
        self.nodes.len() + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The nodes in order along the edges.
    pub fn members(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes.iter().chain(self.tail.iter().rev()).copied()
    }
}

/// How far the search has gone, for progress bars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    pub starts_done: usize,
    pub starts_total: usize,
    pub cycles: u64,
}

/// What an enumeration covered.
#[derive(Clone, Debug, PartialEq)]
pub struct Enumeration {
    /// Cycles handed to the visitor.
    pub cycles: u64,
    /// `None` when every cycle was listed.
    pub stopped: Option<Stop>,
    /// Nodes on some cycle that are the least node of no unlisted cycle (every cycle from them
    /// was listed), and how many nodes are on some cycle. Equal when complete; otherwise the
    /// difference is `incomplete`.
    pub starts_done: usize,
    pub starts_total: usize,
    /// When stopped: the nodes some unlisted cycle may pass through (sorted). Every cycle
    /// through any other node was listed.
    pub incomplete: Vec<usize>,
}

impl Enumeration {
    pub fn complete(&self) -> bool {
        self.stopped.is_none()
    }
}

/// How often (in search steps) the clock is read.
const CLOCK_EVERY: u32 = 4096;

/// Where the search hands its cycles (see [`enumerate`] for a closure).
pub trait CycleSink {
    /// One cycle; its nodes are the whole search path.
    fn cycle(&mut self, cycle: Cycle<'_>);

    /// The node at `depth` of the search path leaves it: every cycle through it while it was
    /// on the path has been handed over. A fold that updates each node of each cycle can
    /// instead gather per depth and settle here, O(1) per cycle instead of O(length).
    fn leave(&mut self, _depth: usize, _node: usize) {}

    /// Whether cycles may come with a tail: the search then replays the walks back to the
    /// start it remembers (`src/analysis/chains.rs`) instead of walking them, and hands their nodes
    /// over as `Cycle::tail`, a stack that outlives the cycle like the path does.
    fn takes_tails(&self) -> bool {
        false
    }

    /// The node at `position` of the tail leaves it, as [`CycleSink::leave`] for the path:
    /// every cycle through it while it was in the tail has been handed over.
    fn leave_tail(&mut self, _position: usize, _node: usize) {}
}

impl CycleSink for dyn FnMut(Cycle<'_>) + '_ {
    fn cycle(&mut self, cycle: Cycle<'_>) {
        self(cycle)
    }
}

/// Lists every simple cycle of `graph`, self-loops included, calling `visit` on each and
/// `progress` after each start node. `layers[k][e]` is edge `e`'s weight in layer `k`.
pub fn enumerate(
    graph: &Digraph,
    layers: &[&[f64]],
    budget: Budget,
    visit: &mut dyn FnMut(Cycle<'_>),
    progress: &mut dyn FnMut(Progress),
) -> Enumeration {
    enumerate_into(graph, layers, budget, visit, progress)
}

/// [`enumerate`] into a [`CycleSink`]. When the budget stops the search, every node still on
/// the path leaves it before this returns.
pub fn enumerate_into<S: CycleSink + ?Sized>(
    graph: &Digraph,
    layers: &[&[f64]],
    budget: Budget,
    sink: &mut S,
    progress: &mut dyn FnMut(Progress),
) -> Enumeration {
    let n = graph.nodes();
    let all: Vec<usize> = (0..n).collect();
    let mut pending = cyclic_components(graph, &all, &mut vec![usize::MAX; n]);
    pending.reverse(); // popped in the order found
    let starts_total = pending.iter().map(Vec::len).sum();
    let mut search = Search::new(graph, layers, budget);
    let mut scratch_index = vec![usize::MAX; n];
    let mut starts_done = 0;
    while let Some(component) = pending.pop() {
        let start = component[0];
        if let Err(stop) = search.circuits_from(start, &component, sink) {
            let mut incomplete: Vec<usize> =
                pending.into_iter().flatten().chain(component).collect();
            incomplete.sort_unstable();
            return Enumeration {
                cycles: search.cycles,
                stopped: Some(stop),
                starts_done,
                starts_total,
                incomplete,
            };
        }
        let rest = &component[1..];
        let mut parts = cyclic_components(graph, rest, &mut scratch_index);
        // The start, and the rest's nodes no longer on any cycle: none is least in an unlisted
        // cycle.
        let acyclic = rest.len() - parts.iter().map(Vec::len).sum::<usize>();
        starts_done += 1 + acyclic;
        progress(Progress {
            starts_done,
            starts_total,
            cycles: search.cycles,
        });
        parts.reverse();
        pending.extend(parts);
    }
    Enumeration {
        cycles: search.cycles,
        stopped: None,
        starts_done,
        starts_total,
        incomplete: Vec::new(),
    }
}

/// A node on the search path: the next of its out-edges to try, where they end, and whether
/// a cycle was closed below it.
#[derive(Clone, Copy)]
struct Frame {
    next: u32,
    end: u32,
    closed: bool,
}

impl Frame {
    fn new((next, end): (u32, u32)) -> Frame {
        Frame {
            next,
            end,
            closed: false,
        }
    }
}

/// Beside a node's [`Frame`], when chains are remembered: what its walk found below, the
/// deepest path node it read (see [`super::chains`]) and the generation at its entry.
#[derive(Clone, Copy)]
struct Walk {
    below: Below,
    dep: u32,
    generation: u64,
}

impl Walk {
    fn new(generation: u64) -> Walk {
        Walk {
            below: Below::Nothing,
            dep: 0,
            generation,
        }
    }
}

/// The cycles found below a node on the path, as far as remembering a chain cares.
#[derive(Clone, Copy)]
enum Below {
    Nothing,
    /// One cycle, through this out-edge and then the chain (or [`chains::NONE`]: the edge
    /// closes to the start).
    One {
        edge: u32,
        chain: u32,
    },
    /// More than one, or one that left no chain.
    Other,
}

impl Below {
    fn and(self, edge: u32, chain: u32) -> Below {
        match self {
            Below::Nothing => Below::One { edge, chain },
            _ => Below::Other,
        }
    }
}

/// The digraph as the circuit search walks it: no self-loops (a self-loop is a cycle only on
/// the start node, listed apart, and elsewhere a blocked edge that every visit would test),
/// 32-bit indices, each node's in-edges for UNBLOCK, and the edges' weights stored edge by
/// edge so that one descent reads one place.
struct SearchGraph {
    offsets: Vec<u32>,
    targets: Vec<u32>,
    /// `weights[e * layers + k]`: edge e's weight in layer k.
    weights: Vec<f64>,
    /// Per node, the sources of its in-edges, in compressed rows ("in-slots").
    in_offsets: Vec<u32>,
    sources: Vec<u32>,
    /// Per out-edge, its in-slot.
    in_slot: Vec<u32>,
    /// Per node, its self-loop's weights, if it has one.
    self_loops: Vec<Option<Vec<f64>>>,
}

impl SearchGraph {
    fn new(graph: &Digraph, layers: &[&[f64]]) -> SearchGraph {
        let n = graph.nodes();
        let index = |x: usize| u32::try_from(x).expect("fewer than 2³² nodes and edges");
        let mut offsets = Vec::with_capacity(n + 1);
        let mut targets = Vec::with_capacity(graph.edges());
        let mut weights = Vec::with_capacity(graph.edges() * layers.len());
        let mut self_loops = vec![None; n];
        offsets.push(0);
        for (v, self_loop) in self_loops.iter_mut().enumerate() {
            for e in graph.out_edges(v) {
                let edge_weights = layers.iter().map(|layer| layer[e]);
                if graph.target(e) == v {
                    *self_loop = Some(edge_weights.collect());
                } else {
                    targets.push(index(graph.target(e)));
                    weights.extend(edge_weights);
                }
            }
            offsets.push(index(targets.len()));
        }
        let mut in_offsets = vec![0u32; n + 1];
        for &w in &targets {
            in_offsets[w as usize + 1] += 1;
        }
        for v in 0..n {
            in_offsets[v + 1] += in_offsets[v];
        }
        let mut fill = in_offsets.clone();
        let mut sources = vec![0; targets.len()];
        let mut in_slot = vec![0; targets.len()];
        for v in 0..n {
            for e in offsets[v]..offsets[v + 1] {
                let w = targets[e as usize] as usize;
                sources[fill[w] as usize] = index(v);
                in_slot[e as usize] = fill[w];
                fill[w] += 1;
            }
        }
        SearchGraph {
            offsets,
            targets,
            weights,
            in_offsets,
            sources,
            in_slot,
            self_loops,
        }
    }

    fn out_edges(&self, v: usize) -> (u32, u32) {
        (self.offsets[v], self.offsets[v + 1])
    }

    fn successors(&self, v: usize) -> &[u32] {
        &self.targets[self.offsets[v] as usize..self.offsets[v + 1] as usize]
    }

    /// The in-slots of `v`'s in-edges.
    fn in_slots(&self, v: usize) -> std::ops::Range<usize> {
        self.in_offsets[v] as usize..self.in_offsets[v + 1] as usize
    }

    /// Edge `edge`'s weight in each of the `layers` layers.
    fn weights(&self, edge: u32, layers: usize) -> &[f64] {
        let first = edge as usize * layers;
        &self.weights[first..first + layers]
    }
}

/// A node that may be entered.
const FREE: u8 = 0;
/// Johnson's blocked mark: no path to the start avoiding the search path, until unblocked.
const BLOCKED: u8 = 1;
/// On the search path.
const ON_PATH: u8 = 2;

/// A dead end whose successors are all on the search path is left free (not blocked and
/// waiting) when it has at most this many successors: testing it again is a scan this short,
/// and blocking it would cost marks on its edges and an UNBLOCK cascade when the path moves.
const LAZY_DEAD_END_DEGREE: usize = 4;

/// What entering a free node would find.
enum Prospect {
    /// Some successor is free or the start: enter.
    Open,
    /// Every successor is blocked or on the path: block it and wait.
    Dead,
    /// Every successor is on the path and there are few: skip it, leave it free.
    DeadWhileOnPath,
}

/// The state of Johnson's circuit search, reused across start nodes.
pub(super) struct Search {
    graph: SearchGraph,
    layers: usize,
    /// Per node: [`FREE`], [`BLOCKED`] (Johnson's blocked mark) or [`ON_PATH`] (blocked too, as
    /// Johnson's path nodes are). Nodes outside the component are always blocked, so one test
    /// keeps the search inside it.
    state: Vec<u8>,
    /// Johnson's B lists, one mark per edge: `v` is in `B(w)` (to be unblocked with `w`) when
    /// the mark of edge `v → w` equals `epoch`. B(w) only ever holds predecessors of w, so the
    /// marks are a set without duplicates or lists to allocate, and a new epoch per start
    /// empties them all at once. Marks are stored by in-slot, so UNBLOCK reads w's in a row.
    waits: Vec<u32>,
    epoch: u32,
    /// Per node: whether it was last seen a dead end (nothing found below it). Only such
    /// nodes are tested before being entered; the others, usually open again, are entered
    /// directly, and a dead end among them is found by the search below it, as Johnson finds
    /// every dead end. A hint: either value gives the same cycles.
    seen_dead: Vec<bool>,
    /// The work list of UNBLOCK, kept to reuse its allocation.
    unblocking: Vec<u32>,
    path: Vec<usize>,
    /// One per node of `path` but the top one, whose frame is held apart.
    frames: Vec<Frame>,
    /// The same for the walks, when chains are remembered.
    walks: Vec<Walk>,
    /// Per depth, per layer: the weight sum of the path so far.
    sums: Vec<f64>,
    closing: Vec<f64>,
    pub(super) cycles: u64,
    budget: Budget,
    began: Instant,
    steps: u32,
    chains: Chains,
    /// Per depth of the path: the stamp of the push that put its node there (never reused).
    stamps: Vec<u64>,
    next_stamp: u64,
    /// Per node on the path: its depth.
    depth_of: Vec<u32>,
    /// Counts the blocks and the unblocks that freed anything: a chain remembered in another
    /// generation is not replayed.
    generation: u64,
}

impl Search {
    pub(super) fn new(graph: &Digraph, layers: &[&[f64]], budget: Budget) -> Search {
        let n = graph.nodes();
        let graph = SearchGraph::new(graph, layers);
        Search {
            waits: vec![0; graph.targets.len()],
            graph,
            layers: layers.len(),
            state: vec![BLOCKED; n],
            seen_dead: vec![true; n],
            epoch: 0,
            unblocking: Vec::new(),
            path: Vec::new(),
            frames: Vec::new(),
            walks: Vec::new(),
            sums: Vec::new(),
            closing: vec![0.0; layers.len()],
            cycles: 0,
            budget,
            began: Instant::now(),
            steps: 0,
            chains: Chains::new(n, layers.len()),
            stamps: Vec::new(),
            next_stamp: 0,
            depth_of: vec![0; n],
            generation: 0,
        }
    }

    /// Lists every cycle through `start` inside `component` (which holds `start`).
    pub(super) fn circuits_from<S: CycleSink + ?Sized>(
        &mut self,
        start: usize,
        component: &[usize],
        sink: &mut S,
    ) -> Result<(), Stop> {
        self.epoch = match self.epoch.checked_add(1) {
            Some(epoch) => epoch,
            None => {
                self.waits.fill(0);
                1
            }
        };
        for &v in component {
            self.state[v] = FREE;
        }
        self.path.clear();
        self.frames.clear();
        self.walks.clear();
        self.sums.clear();
        self.sums.resize(self.layers, 0.0);
        self.chains.clear(component);
        self.stamps.clear();
        let result = if sink.takes_tails() {
            self.push::<true>(start);
            self.search::<S, true>(start, sink)
        } else {
            self.push::<false>(start);
            self.search::<S, false>(start, sink)
        };
        if result.is_err() {
            for (depth, &v) in self.path.iter().enumerate().rev() {
                sink.leave(depth, v);
            }
        }
        self.chains.pop_tail_to(0, sink);
        for &v in component {
            self.state[v] = BLOCKED;
        }
        result
    }

    /// The circuit search from `start`, already on the path; the top frame lives in locals.
    /// With `REPLAY`, chains are remembered and replayed (the sink takes tails).
    fn search<S: CycleSink + ?Sized, const REPLAY: bool>(
        &mut self,
        start: usize,
        sink: &mut S,
    ) -> Result<(), Stop> {
        let mut top = Frame::new(self.graph.out_edges(start));
        let mut walk = Walk::new(self.generation);
        // The start's self-loop comes first, as in a scan of its edges in target order: the
        // edges to smaller nodes lead out of the component.
        if self.graph.self_loops[start].is_some() {
            top.closed = true;
            self.emit_self_loop(start, sink)?;
        }
        let mut v = start;
        loop {
            if top.next < top.end {
                let edge = top.next;
                top.next += 1;
                let w = self.graph.targets[edge as usize] as usize;
                if w == start {
                    top.closed = true;
                    walk.below = walk.below.and(edge, chains::NONE);
                    self.emit(edge, sink)?;
                } else if self.state[w] == FREE {
                    self.tick()?;
                    if REPLAY && let Some(chain) = self.replayable(w, sink) {
                        self.replay(chain, edge, sink)?;
                        top.closed = true;
                        walk.below = walk.below.and(edge, chain);
                        continue;
                    }
                    // With chains, always tested: entering a dead end blocks it, and a block
                    // invalidates every chain remembered.
                    if REPLAY || self.seen_dead[w] {
                        match self.prospect(w, start) {
                            Prospect::Open => self.seen_dead[w] = false,
                            Prospect::Dead => {
                                // What descending would do, without the path push and pop.
                                self.block_and_wait(w);
                                continue;
                            }
                            Prospect::DeadWhileOnPath => {
                                if REPLAY {
                                    walk.dep = walk.dep.max(self.deepest_successor(w, v));
                                }
                                continue;
                            }
                        }
                    }
                    self.frames.push(top);
                    if REPLAY {
                        self.walks.push(walk);
                        walk = Walk::new(self.generation);
                    }
                    self.descend::<REPLAY>(w, edge);
                    v = w;
                    top = Frame::new(self.graph.out_edges(w));
                } else if REPLAY && self.state[w] == ON_PATH {
                    walk.dep = walk.dep.max(self.depth_of[w]);
                }
                continue;
            }
            let depth = self.path.len() - 1;
            self.path.pop();
            if REPLAY {
                self.stamps.pop();
            }
            self.sums.truncate(self.sums.len() - self.layers);
            sink.leave(depth, v);
            if top.closed {
                self.unblock(v);
            } else {
                self.block_lazy_dead_ends(v, start);
                self.seen_dead[v] = true;
                self.block_and_wait(v);
            }
            let Some(parent) = self.frames.pop() else {
                return Ok(());
            };
            let closed = top.closed;
            top = parent;
            top.closed |= closed;
            if REPLAY {
                let below = walk;
                walk = self.walks.pop().expect("one walk per frame");
                if closed {
                    walk.below = match self.remember(v, depth, &below, sink) {
                        chains::NONE => Below::Other,
                        chain => walk.below.and(top.next - 1, chain),
                    };
                }
            }
            v = self.path[depth - 1];
        }
    }

    /// Whether the free node `w` is worth entering. Once on the path, a dead end would find
    /// every successor blocked and none of them `start`: no cycle below it. Dead ends are
    /// common (in the heat exchanger every wall volume on the returning half of a long cycle is
    /// one, its two neighbours on the path), and spotting one costs a scan of its edges only.
    #[inline(always)]
    fn prospect(&self, w: usize, start: usize) -> Prospect {
        let successors = self.graph.successors(w);
        let mut all_on_path = true;
        for &x in successors {
            let x = x as usize;
            if x == start || self.state[x] == FREE {
                return Prospect::Open;
            }
            all_on_path &= self.state[x] == ON_PATH;
        }
        if all_on_path && successors.len() <= LAZY_DEAD_END_DEGREE {
            Prospect::DeadWhileOnPath
        } else {
            Prospect::Dead
        }
    }

    /// `v` leaves the path without a cycle below it and is about to wait on its successors.
    /// A successor left free as a dead end while its successors were on the path is blocked
    /// now, as Johnson would have, so that UNBLOCK reaches `v` through it. (No unblocking ran
    /// since v entered the path, for it would have closed v, so every free successor but the
    /// start is such a node, its successors still on the path.)
    fn block_lazy_dead_ends(&mut self, v: usize, start: usize) {
        let (first, end) = self.graph.out_edges(v);
        for edge in first..end {
            let w = self.graph.targets[edge as usize] as usize;
            if w != start && self.state[w] == FREE {
                self.block_and_wait(w);
            }
        }
    }

    #[inline(always)]
    fn descend<const REPLAY: bool>(&mut self, w: usize, edge: u32) {
        let k = self.layers;
        let top = self.sums.len() - k;
        let weights = self.graph.weights(edge, k);
        for (layer, &weight) in weights.iter().enumerate() {
            let s = self.sums[top + layer] + weight;
            self.sums.push(s);
        }
        self.push::<REPLAY>(w);
    }

    #[inline(always)]
    fn push<const REPLAY: bool>(&mut self, w: usize) {
        if REPLAY {
            self.depth_of[w] = self.path.len() as u32;
            self.stamps.push(self.next_stamp);
            self.next_stamp += 1;
        }
        self.path.push(w);
        self.state[w] = ON_PATH;
    }

    /// The deepest of the path nodes a dead end `w` hangs off, but `v` (whose chain reads
    /// them; `v` is the chain's own).
    fn deepest_successor(&self, w: usize, v: usize) -> u32 {
        self.graph
            .successors(w)
            .iter()
            .map(|&x| x as usize)
            .filter(|&x| x != v)
            .map(|x| self.depth_of[x])
            .max()
            .unwrap_or(0)
    }

    /// `v`, at `depth`, left the path having found cycles: remembers its chain if it found
    /// exactly one and blocked or unblocked nothing on the way. Returns the chain or
    /// [`chains::NONE`].
    fn remember<S: CycleSink + ?Sized>(
        &mut self,
        v: usize,
        depth: usize,
        walk: &Walk,
        sink: &mut S,
    ) -> u32 {
        let Below::One { edge, chain: next } = walk.below else {
            return chains::NONE;
        };
        if walk.generation != self.generation {
            return chains::NONE;
        }
        // (`next`, if any, is of this generation too: it was remembered after v's entry.)
        self.chains.enter(self.generation, sink);
        let mut dep = walk.dep;
        if let Some(rest) = (next != chains::NONE).then(|| self.chains.chain(next)) {
            // What the rest read at v's depth is v itself; below, the whole path is kept.
            dep = dep.max(rest.dep_depth.min(depth as u32 - 1));
        }
        if dep + 1 == depth as u32 {
            // It reads v's parent, so it is replayed only if v is entered again from deeper
            // down while the parent is still on the path: rare (in a complete digraph, where
            // every chain is of this kind, never), so it is not kept.
            return chains::NONE;
        }
        let chain = Chain {
            node: v as u32,
            next,
            dep_depth: dep,
            dep_stamp: self.stamps[dep as usize],
            generation: self.generation,
        };
        let weights = self.graph.weights(edge, self.layers);
        self.chains.remember(chain, weights)
    }

    /// `w`'s latest chain, if entering `w` now would walk it again: nothing it read has
    /// changed and none of its nodes is on the path. Makes it the tail.
    fn replayable<S: CycleSink + ?Sized>(&mut self, w: usize, sink: &mut S) -> Option<u32> {
        let (id, chain) = self.chains.latest(w, self.generation)?;
        let dep = chain.dep_depth as usize;
        if self.stamps.get(dep) != Some(&chain.dep_stamp) {
            return None;
        }
        self.chains.make_tail(id, sink);
        // The path up to `dep` is the one the chain was walked beside, so only the nodes
        // pushed since can be the chain's; check whichever list is shorter.
        let pushed_since = &self.path[dep + 1..];
        let tail = self.chains.tail_nodes();
        let clear = if pushed_since.len() <= tail.len() {
            pushed_since.iter().all(|&x| !self.chains.in_tail(x))
        } else {
            tail.iter().all(|&x| self.state[x] != ON_PATH)
        };
        clear.then_some(id)
    }

    /// Hands over the cycle of the path, `edge` and the chain `chain` (the tail), unless the
    /// budget is spent.
    fn replay<S: CycleSink + ?Sized>(
        &mut self,
        chain: u32,
        edge: u32,
        sink: &mut S,
    ) -> Result<(), Stop> {
        let k = self.layers;
        let top = self.sums.len() - k;
        let weights = self.graph.weights(edge, k);
        let rest = self.chains.sums(chain);
        for layer in 0..k {
            self.closing[layer] = self.sums[top + layer] + weights[layer] + rest[layer];
        }
        self.hand_over(sink, true)
    }

    /// Hands the path closed by `edge` to the sink, unless the budget is spent.
    fn emit<S: CycleSink + ?Sized>(&mut self, edge: u32, sink: &mut S) -> Result<(), Stop> {
        let k = self.layers;
        let top = self.sums.len() - k;
        let weights = self.graph.weights(edge, k);
        for (layer, &weight) in weights.iter().enumerate() {
            self.closing[layer] = self.sums[top + layer] + weight;
        }
        self.hand_over(sink, false)
    }

    /// Hands the cycle `[start]` to the sink, unless the budget is spent.
    fn emit_self_loop<S: CycleSink + ?Sized>(
        &mut self,
        start: usize,
        sink: &mut S,
    ) -> Result<(), Stop> {
        if let Some(weights) = &self.graph.self_loops[start] {
            self.closing.copy_from_slice(weights);
        }
        self.hand_over(sink, false)
    }

    /// The path (followed by the tail, if `with_tail`), weighed in `closing`, to the sink.
    fn hand_over<S: CycleSink + ?Sized>(
        &mut self,
        sink: &mut S,
        with_tail: bool,
    ) -> Result<(), Stop> {
        if self.budget.max_cycles.is_some_and(|max| self.cycles >= max) {
            return Err(Stop::Cycles);
        }
        self.tick()?;
        self.cycles += 1;
        let tail = if with_tail {
            self.chains.tail_nodes()
        } else {
            &[]
        };
        sink.cycle(Cycle {
            nodes: &self.path,
            tail,
            weight_sums: &self.closing,
        });
        Ok(())
    }

    /// Johnson's UNBLOCK of `v`, leaving the path, with a work list instead of recursion.
    /// Only blocked nodes are unblocked in the cascade: one on the path stays there.
    fn unblock(&mut self, v: usize) {
        self.state[v] = FREE;
        // Usually nothing waits on v: settle that without the work list.
        let slots = self.graph.in_slots(v);
        if self.waits[slots].iter().all(|&mark| mark != self.epoch) {
            return;
        }
        self.generation += 1;
        self.unblocking.clear();
        self.release_waiting(v);
        while let Some(u) = self.unblocking.pop() {
            let u = u as usize;
            if self.state[u] == BLOCKED {
                self.state[u] = FREE;
                self.release_waiting(u);
            }
        }
    }

    /// Clears the marks of the nodes waiting on `u` and puts them on UNBLOCK's work list.
    fn release_waiting(&mut self, u: usize) {
        for slot in self.graph.in_slots(u) {
            if self.waits[slot] == self.epoch {
                self.waits[slot] = 0;
                self.unblocking.push(self.graph.sources[slot]);
            }
        }
    }

    /// No cycle was closed below v: v is blocked until one of its successors is unblocked.
    /// (A mark on an edge leaving the component is never read: its target stays blocked.)
    fn block_and_wait(&mut self, v: usize) {
        self.generation += 1;
        self.state[v] = BLOCKED;
        let (first, end) = self.graph.out_edges(v);
        for &slot in &self.graph.in_slot[first as usize..end as usize] {
            self.waits[slot as usize] = self.epoch;
        }
    }

    fn tick(&mut self) -> Result<(), Stop> {
        self.steps += 1;
        if self.steps < CLOCK_EVERY {
            return Ok(());
        }
        self.steps = 0;
        match self.budget.max_time {
            Some(limit) if self.began.elapsed() >= limit => Err(Stop::Time),
            _ => Ok(()),
        }
    }
}

/// The strongly connected components of the subgraph induced by `nodes` that hold a cycle
/// (two or more nodes, or one with a self-loop), each sorted ascending, in order of their least
/// node. Iterative Tarjan over the CSR edges (no allocation per node). `index` is scratch of
/// the graph's size, all `usize::MAX`, and is left that way.
pub fn cyclic_components(graph: &Digraph, nodes: &[usize], index: &mut [usize]) -> Vec<Vec<usize>> {
    const UNSEEN: usize = usize::MAX - 1;
    for &v in nodes {
        index[v] = UNSEEN;
    }
    let inside = |index: &[usize], w: usize| index[w] != usize::MAX;
    let mut low = vec![0usize; nodes.len()];
    let mut order = Vec::with_capacity(nodes.len()); // local number → node
    let mut on_stack = Vec::with_capacity(nodes.len());
    let mut stack: Vec<usize> = Vec::new();
    let mut frames: Vec<(usize, usize)> = Vec::new();
    let mut components = Vec::new();
    for &root in nodes {
        if index[root] != UNSEEN {
            continue;
        }
        let visit = |v: usize,
                     index: &mut [usize],
                     order: &mut Vec<usize>,
                     low: &mut Vec<usize>,
                     on_stack: &mut Vec<bool>,
                     stack: &mut Vec<usize>| {
            index[v] = order.len();
            low[order.len()] = order.len();
            order.push(v);
            on_stack.push(true);
            stack.push(v);
        };
        visit(root, index, &mut order, &mut low, &mut on_stack, &mut stack);
        frames.push((root, graph.out_edges(root).start));
        while let Some(&mut (v, ref mut next)) = frames.last_mut() {
            if *next < graph.out_edges(v).end {
                let w = graph.target(*next);
                *next += 1;
                if !inside(index, w) {
                    continue;
                }
                if index[w] == UNSEEN {
                    visit(w, index, &mut order, &mut low, &mut on_stack, &mut stack);
                    frames.push((w, graph.out_edges(w).start));
                } else if on_stack[index[w]] {
                    low[index[v]] = low[index[v]].min(index[w]);
                }
                continue;
            }
            frames.pop();
            let iv = index[v];
            if let Some(&(parent, _)) = frames.last() {
                let ip = index[parent];
                low[ip] = low[ip].min(low[iv]);
            }
            if low[iv] == iv {
                let mut component = Vec::new();
                loop {
                    let w = stack.pop().expect("v is on the stack");
                    on_stack[index[w]] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                let cyclic = component.len() > 1 || graph.edge(v, v).is_some();
                if cyclic {
                    component.sort_unstable();
                    components.push(component);
                }
            }
        }
    }
    for &v in nodes {
        index[v] = usize::MAX;
    }
    components.sort_unstable_by_key(|c| c[0]);
    components
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_cycles(n: usize, edges: &[(usize, usize)]) -> Vec<Vec<usize>> {
        let g = Digraph::from_edges(n, edges.iter().copied());
        let mut found = Vec::new();
        let e = enumerate(
            &g,
            &[],
            Budget::default(),
            &mut |c| found.push(c.nodes.to_vec()),
            &mut |_| {},
        );
        assert!(e.complete());
        assert_eq!(e.cycles as usize, found.len());
        found
    }

    #[test]
    fn lists_self_loops_two_cycles_and_a_triangle_once_each() {
        let cycles = all_cycles(3, &[(0, 0), (0, 1), (1, 0), (1, 2), (2, 0)]);
        assert_eq!(cycles, vec![vec![0], vec![0, 1], vec![0, 1, 2]]);
    }

    #[test]
    fn weight_sums_add_along_the_cycle() {
        let g = Digraph::from_edges(2, [(0, 1), (1, 0)]);
        let w = [1.5, 2.0];
        let mut sums = Vec::new();
        enumerate(
            &g,
            &[&w],
            Budget::default(),
            &mut |c| sums.push(c.weight_sums[0]),
            &mut |_| {},
        );
        assert_eq!(sums, vec![3.5]);
    }

    #[test]
    fn a_cycle_budget_stops_and_names_the_unfinished_nodes() {
        // Two disjoint 2-cycles: {0,1} first, then {2,3}; a budget of one cycle finishes the
        // first component only.
        let g = Digraph::from_edges(4, [(0, 1), (1, 0), (2, 3), (3, 2)]);
        let e = enumerate(
            &g,
            &[],
            Budget {
                max_cycles: Some(1),
                max_time: None,
            },
            &mut |_| {},
            &mut |_| {},
        );
        assert_eq!(e.stopped, Some(Stop::Cycles));
        assert_eq!(e.cycles, 1);
        assert_eq!(e.incomplete, vec![2, 3]);
    }

    #[test]
    fn a_ring_of_a_hundred_thousand_nodes_is_one_cycle_without_recursion() {
        let n = 100_000;
        let cycles = all_cycles(n, &(0..n).map(|i| (i, (i + 1) % n)).collect::<Vec<_>>());
        assert_eq!(cycles.len(), 1);
        assert_eq!(cycles[0].len(), n);
    }
}
