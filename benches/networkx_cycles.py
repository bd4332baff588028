#!/usr/bin/env python3
"""networkx's simple_cycles on the graphs of `cargo bench --bench cycles`, the reference for
mocca's cycle analysis (SPEC §7).

    pip install networkx        # 3.6.1 for the figures in BENCHMARKS.md
    python3 benches/networkx_cycles.py [N ...] [--complete 10] [--repeat 5]
    python3 benches/networkx_cycles.py 3 --check-against <(target/release/mocca jacobian \
        examples/heat_exchanger.mo -p N=3 --format json)

Graphs:
- the counterflow heat exchanger of examples/heat_exchanger.mo (3N states, order
  T_a[1..N], T_w[1..N], T_b[1..N] as in mocca's causal form), built from its known structure:
  an edge i -> j wherever J_ij != 0 ("der(x_i) reads x_j"), i.e. a_i -> a_{i-1}, a_i <-> w_i,
  w_i <-> b_{N-i+1}, b_i -> b_{i-1}, and a self-loop on every state; J's values are the
  analytic ones at any point (the model is linear). 5N + N(N-1)/2 simple cycles.
- the complete digraph on K nodes without self-loops, J_ij = -(1 + (7i + 3j) mod 5) as in the
  Rust bench; sum_{k=2..K} C(K,k)(k-1)! simple cycles (1 112 073 for K = 10).

Two timings per graph:
- count: `sum(1 for _ in nx.simple_cycles(G))`, the enumeration alone;
- bounds: the same enumeration folded into per-state bounds h_i at alpha = 0.5 as mocca's
  `analyse` does (SPEC §7: ln|prod J| summed along the cycle, bound (1+alpha)/|J_ii| or
  alpha/J_ii for a self-loop and (alpha/|prod J|)^(1/L) otherwise, per-state minimum and count).
Prints a table, then min h and the sum of finite h per graph to compare with the Rust bench's
stderr line.
"""
import argparse
import json
import math
import resource
import statistics
import time

import networkx as nx

ALPHA = 0.5
M_A, M_B, M_W = 0.1, 1.0, 10.0
C_A, C_B, C_W = 4200.0, 3500.0, 3500.0
G_A, G_B = 8000.0, 8000.0
W_A, W_B = 1.0, 1.0


def heat_exchanger(n):
    """J's nonzeros {(row, col): value} of the heat exchanger with n volumes per stream."""
    ca, cw, cb = C_A * M_A / n, C_W * M_W / n, C_B * M_B / n
    ga, gb = G_A / n, G_B / n
    a = lambda i: i - 1          # noqa: E731  (1-based volume -> state index)
    w = lambda i: n + i - 1      # noqa: E731
    b = lambda i: 2 * n + i - 1  # noqa: E731
    j = {}
    for i in range(1, n + 1):
        j[a(i), a(i)] = (-W_A * C_A - ga) / ca
        j[a(i), w(i)] = ga / ca
        if i > 1:
            j[a(i), a(i - 1)] = W_A * C_A / ca
        j[w(i), w(i)] = (-ga - gb) / cw
        j[w(i), a(i)] = ga / cw
        j[w(i), b(n - i + 1)] = gb / cw
        j[b(i), b(i)] = (-W_B * C_B - gb) / cb
        j[b(i), w(n - i + 1)] = gb / cb
        if i > 1:
            j[b(i), b(i - 1)] = W_B * C_B / cb
    return 3 * n, j, 5 * n + n * (n - 1) // 2


def complete(k):
    j = {(r, c): -(1.0 + (7 * r + 3 * c) % 5) for r in range(k) for c in range(k) if r != c}
    cycles = sum(math.comb(k, m) * math.factorial(m - 1) for m in range(2, k + 1))
    return k, j, cycles


def digraph(n, j):
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(j)
    return g


def count(g):
    return sum(1 for _ in nx.simple_cycles(g))


def bounds(g, n, j):
    """Per-state h at ALPHA over every simple cycle, and the number of cycles."""
    log_abs = {e: math.log(abs(v)) for e, v in j.items()}
    diagonal = [j.get((i, i), 0.0) for i in range(n)]
    h = [math.inf] * n
    through = [0] * n
    ln_alpha = math.log(ALPHA)
    cycles = 0
    for c in nx.simple_cycles(g):
        cycles += 1
        length = len(c)
        if length == 1:
            d = diagonal[c[0]]
            bound = (1 + ALPHA) / -d if d < 0 else (ALPHA / d if d > 0 else math.inf)
        else:
            lp = log_abs[c[-1], c[0]]
            for u, v in zip(c, c[1:]):
                lp += log_abs[u, v]
            bound = math.exp((ln_alpha - lp) / length)
        for v in c:
            if bound < h[v]:
                h[v] = bound
            through[v] += 1
    return cycles, h, through


def timed(f, repeat):
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = f()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def check_against(path, n, j):
    """The edges and values of `mocca jacobian --format json` match the hand-built J."""
    entries = json.load(open(path))["entries"]
    mocca = {(e["row"], e["col"]): e["value"] for e in entries}
    assert set(mocca) == set(j), f"edge sets differ: {set(mocca) ^ set(j)}"
    for e, v in j.items():
        assert math.isclose(mocca[e], v, rel_tol=1e-12), (e, mocca[e], v)
    print(f"N={n}: {len(j)} edges and values match mocca's Jacobian")


def show(seconds):
    return f"{seconds * 1e3:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="*", type=int, default=[30, 1000])
    parser.add_argument("--complete", type=int, default=10, help="K of the complete digraph (0: none)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per timing below 10^5 cycles")
    parser.add_argument("--check-against", metavar="JACOBIAN.json",
                        help="mocca jacobian --format json of the (single) size given")
    args = parser.parse_args()
    if args.check_against:
        (n,) = args.sizes
        _, j, _ = heat_exchanger(n)
        check_against(args.check_against, n, j)
        return
    cases = [(f"heat_exchanger N={n}", *heat_exchanger(n)) for n in args.sizes]
    if args.complete:
        cases.append((f"complete K{args.complete}", *complete(args.complete)))
    print(f"networkx {nx.__version__}, alpha = {ALPHA}")
    print(f"| graph | states | edges | cycles | simple_cycles (count) | + per-state bounds |")
    print(f"| --- | ---: | ---: | ---: | ---: | ---: |")
    checks = []
    for name, n, j, expected in cases:
        g = digraph(n, j)
        repeat = args.repeat if expected < 100_000 else 1
        t_count, cycles = timed(lambda: count(g), repeat)
        assert cycles == expected, (name, cycles, expected)
        t_bounds, (cycles_b, h, through) = timed(lambda: bounds(g, n, j), repeat)
        assert cycles_b == expected
        print(f"| {name} | {n} | {g.number_of_edges()} | {cycles} | {show(t_count)} | {show(t_bounds)} |",
              flush=True)
        finite = [x for x in h if math.isfinite(x)]
        checks.append(f"{name}: {sum(through)} cycle-state incidences, min h = {min(h):.6e}, "
                      f"sum of finite h = {sum(finite):.6e}")
    for line in checks:
        print(line)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"peak RSS of the whole run: {peak / 1024:.0f} MB")


if __name__ == "__main__":
    main()
