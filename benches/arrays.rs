//! Array equations and bindings against their for-loop form: `der(x) = -x` and
//! `for i in 1:N loop der(x[i]) = -x[i]; end for` should cost the same per element, as should a
//! literal array binding `parameter Real p[N] = {1, 2, …}`. Each is flattened and analysed as
//! `mocca check` does (alias elimination, index reduction, matching, BLT, subsystems).
//! Run: `cargo bench --bench arrays`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mocca::frontend::flatten_sources;
use mocca::source::SourceMap;
use mocca::structure;

// The allocator the `mocca` binary runs with.
mocca::install_allocator!();

const SIZES: [usize; 2] = [100_000, 1_000_000];

fn model(declarations: &str, equations: &str) -> String {
    format!("model M\n{declarations}\nequation\n{equations}\nend M;\n")
}

/// The three forms at `n` elements: (name, model text).
fn forms(n: usize) -> [(&'static str, String); 3] {
    let state = format!("  Real x[{n}](each start = 1);");
    let literal: Vec<String> = (1..=n).map(|k| k.to_string()).collect();
    [
        ("array-equation", model(&state, "  der(x) = -x;")),
        (
            "for-loop",
            model(
                &state,
                &format!("  for i in 1:{n} loop der(x[i]) = -x[i]; end for;"),
            ),
        ),
        (
            "literal-binding",
            model(
                &format!("  parameter Real p[{n}] = {{{}}};", literal.join(", ")),
                "",
            ),
        ),
    ]
}

/// Flattens and analyses `text`, as `mocca check` does; the number of equations.
fn check(text: &str) -> usize {
    let mut sources = SourceMap::new();
    let id = sources.add("arrays.mo", text.to_string());
    let dae = flatten_sources(sources, &[id], None, &[])
        .ok()
        .expect("flattens")
        .dae;
    let (reduced, _) = structure::prepare(dae).expect("index reduction");
    structure::analyse(&reduced).expect("regular");
    reduced.equations.len()
}

fn arrays(c: &mut Criterion) {
    let mut group = c.benchmark_group("arrays");
    group.sample_size(10);
    for n in SIZES {
        group.throughput(Throughput::Elements(n as u64));
        for (form, text) in forms(n) {
            group.bench_with_input(BenchmarkId::new(form, n), &text, |b, text| {
                b.iter(|| check(text))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, arrays);
criterion_main!(benches);
