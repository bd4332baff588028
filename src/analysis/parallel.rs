//! Johnson's enumeration with its start nodes shared among threads.
//!
//! The cycles whose least node is `s` are those of the strongly connected component of `s` in
//! the subgraph of the nodes `≥ s`, and listing them needs nothing from the other starts. So
//! each worker takes the next start from a shared counter, finds that component (nodes
//! reachable from `s` and reaching back, through nodes `≥ s` only) and searches it with its
//! own circuit search (`johnson::Search`) into its own sink. The cycles arrive in no fixed order, so this serves folds
//! whose result does not depend on the order (minima, counts), and only unbudgeted runs: a
//! budget's "the first k cycles" would no longer name a definite set.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use super::digraph::Digraph;
use super::johnson::{Budget, CycleSink, Enumeration, Progress, Search, cyclic_components};

/// Lists every simple cycle of `graph` on `threads` threads (the caller's included), each
/// folding into its own sink made by `new_sink`, and returns the sinks. `progress` runs on the
/// calling thread, after each start node it finishes.
pub fn enumerate_parallel<S: CycleSink + Send>(
    graph: &Digraph,
    layers: &[&[f64]],
    threads: usize,
    new_sink: &(dyn Fn() -> S + Sync),
    progress: &mut dyn FnMut(Progress),
) -> (Enumeration, Vec<S>) {
    let n = graph.nodes();
    let all: Vec<usize> = (0..n).collect();
    let starts: Vec<usize> = cyclic_components(graph, &all, &mut vec![usize::MAX; n])
        .into_iter()
        .flatten()
        .collect();
    let reverse = Digraph::from_edges(
        n,
        (0..n).flat_map(|v| graph.successors(v).iter().map(move |&w| (w, v))),
    );
    let shared = Shared {
        graph,
        reverse: &reverse,
        layers,
        starts: &starts,
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        cycles: AtomicU64::new(0),
    };
    let sinks = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads.max(1))
            .map(|_| scope.spawn(|| shared.work(new_sink(), &mut |_| {})))
            .collect();
        let mut sinks = vec![shared.work(new_sink(), progress)];
        sinks.extend(
            helpers
                .into_iter()
                .map(|h| h.join().expect("a cycle worker panicked")),
        );
        sinks
    });
    let enumeration = Enumeration {
        cycles: shared.cycles.load(Relaxed),
        stopped: None,
        starts_done: starts.len(),
        starts_total: starts.len(),
        incomplete: Vec::new(),
    };
    (enumeration, sinks)
}

/// What the workers share: the graph both ways, the start nodes (every node on a cycle) and
/// the counters.
struct Shared<'a> {
    graph: &'a Digraph,
    reverse: &'a Digraph,
    layers: &'a [&'a [f64]],
    starts: &'a [usize],
    next: AtomicUsize,
    done: AtomicUsize,
    cycles: AtomicU64,
}

impl Shared<'_> {
    /// One worker: takes start nodes until none is left.
    fn work<S: CycleSink>(&self, mut sink: S, progress: &mut dyn FnMut(Progress)) -> S {
        let mut search = Search::new(self.graph, self.layers, Budget::default());
        let mut component = Component::new(self.graph.nodes());
        loop {
            let k = self.next.fetch_add(1, Relaxed);
            let Some(&start) = self.starts.get(k) else {
                return sink;
            };
            let before = search.cycles;
            let nodes = component.of(start, self.graph, self.reverse);
            let unbudgeted = search.circuits_from(start, nodes, &mut sink);
            debug_assert!(unbudgeted.is_ok());
            let found = search.cycles - before;
            let cycles = self.cycles.fetch_add(found, Relaxed) + found;
            let done = self.done.fetch_add(1, Relaxed) + 1;
            progress(Progress {
                starts_done: done,
                starts_total: self.starts.len(),
                cycles,
            });
        }
    }
}

/// Finds the strongly connected component of `s` among the nodes `≥ s`, with scratch reused
/// from start to start.
struct Component {
    /// `forward[v] == stamp`: v is reachable from the current start.
    forward: Vec<u64>,
    /// `back[v] == stamp`: v is in the current component.
    back: Vec<u64>,
    stamp: u64,
    stack: Vec<usize>,
    nodes: Vec<usize>,
}

impl Component {
    fn new(n: usize) -> Component {
        Component {
            forward: vec![0; n],
            back: vec![0; n],
            stamp: 0,
            stack: Vec::new(),
            nodes: Vec::new(),
        }
    }

    /// The nodes `≥ s` reachable from `s` that reach `s` again (`s` included). A node on a
    /// path from a reachable node back to `s` is itself reachable, so the backward search
    /// stays among the forward-marked nodes.
    fn of(&mut self, s: usize, graph: &Digraph, reverse: &Digraph) -> &[usize] {
        self.stamp += 1;
        let stamp = self.stamp;
        self.forward[s] = stamp;
        self.stack.push(s);
        while let Some(v) = self.stack.pop() {
            for &w in graph.successors(v) {
                if w > s && self.forward[w] != stamp {
                    self.forward[w] = stamp;
                    self.stack.push(w);
                }
            }
        }
        self.nodes.clear();
        self.back[s] = stamp;
        self.stack.push(s);
        while let Some(v) = self.stack.pop() {
            self.nodes.push(v);
            for &w in reverse.successors(v) {
                if self.forward[w] == stamp && self.back[w] != stamp {
                    self.back[w] = stamp;
                    self.stack.push(w);
                }
            }
        }
        &self.nodes
    }
}
