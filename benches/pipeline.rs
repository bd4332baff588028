//! Throughput and scaling of the front half of the pipeline on generated RC chains:
//! lexing, parsing, flattening, and structure (alias elimination, matching, BLT, causal form,
//! Jacobian). Run: `cargo bench --bench pipeline`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mocca::causal::causal_form;
use mocca::frontend::flatten_sources;
use mocca::generate::{rc_chain, rc_chain_in_template, rc_chain_stages_for};
use mocca::jacobian::ode_jacobian;
use mocca::source::SourceMap;
use mocca::structure;
use mocca::syntax::{lexer::Lexer, parse_file};

// The allocator the `mocca` binary runs with.
mocca::install_allocator!();

const SIZES: [usize; 3] = [10_000, 100_000, 1_000_000];

fn lex_and_parse(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse");
    group.sample_size(10);
    for equations in SIZES {
        let text = rc_chain(rc_chain_stages_for(equations));
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::new("lex", equations), &text, |b, text| {
            b.iter(|| Lexer::new(text).count())
        });
        let mut sources = SourceMap::new();
        let id = sources.add("chain.mo", text.clone());
        group.bench_with_input(BenchmarkId::new("lex+parse", equations), &id, |b, &id| {
            b.iter(|| parse_file(&sources, id).ast.is_some())
        });
    }
    group.finish();
}

fn flatten_and_structure(c: &mut Criterion) {
    let mut group = c.benchmark_group("pipeline");
    group.sample_size(10);
    for equations in SIZES {
        let text = rc_chain(rc_chain_stages_for(equations));
        group.throughput(Throughput::Elements(equations as u64));
        let flatten = || {
            let mut sources = SourceMap::new();
            let id = sources.add("chain.mo", text.clone());
            flatten_sources(sources, &[id], None, &[])
                .ok()
                .expect("flattens")
                .dae
        };
        group.bench_function(BenchmarkId::new("flatten", equations), |b| b.iter(flatten));
        // The same model with its source and ground inherited: a million-element class
        // naming elements of its base (a lookup that must not scan the class).
        if equations <= 100_000 {
            let templated = rc_chain_in_template(rc_chain_stages_for(equations));
            group.bench_function(BenchmarkId::new("flatten-inherited", equations), |b| {
                b.iter(|| {
                    let mut sources = SourceMap::new();
                    let id = sources.add("chain.mo", templated.clone());
                    flatten_sources(sources, &[id], None, &[]).is_ok()
                })
            });
        }
        let dae = flatten();
        group.bench_function(BenchmarkId::new("structure+jacobian", equations), |b| {
            b.iter(|| {
                let (mut reduced, _) = structure::prepare(dae.clone()).expect("index reduction");
                let s = structure::analyse(&reduced).expect("regular");
                let causal = causal_form(&mut reduced, &s);
                ode_jacobian(&mut reduced, &causal).entries.len()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, lex_and_parse, flatten_and_structure);
criterion_main!(benches);
