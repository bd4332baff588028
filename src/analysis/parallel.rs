//! Johnson's enumeration with its start nodes shared among threads.
//!
//! The cycles whose least node is `s` are those of the strongly connected component of `s` in
//! the subgraph of the nodes `≥ s`, and listing them needs nothing from the other starts. So
//! each worker takes the next start from a shared counter, finds that component (nodes
//! reachable from `s` and reaching back, through nodes `≥ s` only) and searches it with its
//! own circuit search (`johnson::Search`) into its own sink. The cycles arrive in no fixed order, so this serves folds
//! whose result does not depend on the order (minima, counts). A budget's "the first k
//! cycles" would no longer name a definite set: when the cycle budget runs out the search
//! gives up and the caller lists the first k on one thread. A time budget cuts where the
//! clock says, on one thread or several alike.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

use super::digraph::Digraph;
use super::johnson::{Budget, CycleSink, Enumeration, Progress, Search, Stop, cyclic_components};

/// Lists every simple cycle of `graph` on `threads` threads (the caller's included), each
/// folding into its own sink made by `new_sink`, and returns the sinks. `progress` runs on the
/// calling thread, after each start node it finishes. Each thread's search keeps to
/// `budget`; `None` when there are more cycles than the budget allows (which cycles came
/// first depends on the scheduling: list them on one thread instead).
pub fn enumerate_parallel<S: CycleSink + Send>(
    graph: &Digraph,
    layers: &[&[f64]],
    threads: usize,
    budget: Budget,
    new_sink: &(dyn Fn() -> S + Sync),
    progress: &mut dyn FnMut(Progress),
) -> Option<(Enumeration, Vec<S>)> {
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
        budget,
        stopped: AtomicBool::new(false),
        cut: Mutex::new(Vec::new()),
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
    let cycles = shared.cycles.load(Relaxed);
    let cut = shared.cut.into_inner().unwrap_or_else(|e| e.into_inner());
    // Each thread keeps to the cycle budget on its own; together they may list more cycles
    // than one thread would have been allowed.
    let over_budget = budget.max_cycles.is_some_and(|max| cycles > max);
    if over_budget || cut.iter().any(|&(_, stop)| stop == Stop::Cycles) {
        return None;
    }
    let enumeration = if cut.is_empty() {
        Enumeration {
            cycles,
            stopped: None,
            starts_done: starts.len(),
            starts_total: starts.len(),
            incomplete: Vec::new(),
        }
    } else {
        let taken = shared.next.load(Relaxed).min(starts.len());
        let unfinished = cut
            .iter()
            .map(|&(s, _)| s)
            .chain(starts[taken..].iter().copied());
        cut_short(cycles, &starts, unfinished)
    };
    Some((enumeration, sinks))
}

/// The enumeration of a search stopped by the clock before `unfinished` start nodes were done.
/// An unlisted cycle has an unfinished start as its least node, so it passes only through
/// nodes from the least unfinished start up.
fn cut_short(
    cycles: u64,
    starts: &[usize],
    unfinished: impl Iterator<Item = usize>,
) -> Enumeration {
    let unfinished: Vec<usize> = unfinished.collect();
    let least = unfinished.iter().copied().min().unwrap_or(usize::MAX);
    let mut incomplete: Vec<usize> = starts.iter().copied().filter(|&v| v >= least).collect();
    incomplete.sort_unstable();
    Enumeration {
        cycles,
        stopped: Some(Stop::Time),
        starts_done: starts.len() - unfinished.len(),
        starts_total: starts.len(),
        incomplete,
    }
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
    budget: Budget,
    /// Set when a worker's budget runs out: the others take no further start.
    stopped: AtomicBool,
    /// The start nodes whose search the budget cut, and why.
    cut: Mutex<Vec<(usize, Stop)>>,
}

impl Shared<'_> {
    /// One worker: takes start nodes until none is left or a budget runs out.
    fn work<S: CycleSink>(&self, mut sink: S, progress: &mut dyn FnMut(Progress)) -> S {
        let mut search = Search::new(self.graph, self.layers, self.budget);
        let mut component = Component::new(self.graph.nodes());
        loop {
            if self.stopped.load(Relaxed) {
                return sink;
            }
            let k = self.next.fetch_add(1, Relaxed);
            let Some(&start) = self.starts.get(k) else {
                return sink;
            };
            let before = search.cycles;
            let nodes = component.of(start, self.graph, self.reverse);
            let searched = search.circuits_from(start, nodes, &mut sink);
            let found = search.cycles - before;
            if let Err(stop) = searched {
                self.cycles.fetch_add(found, Relaxed);
                self.stopped.store(true, Relaxed);
                if let Ok(mut cut) = self.cut.lock() {
                    cut.push((start, stop));
                }
                return sink;
            }
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
