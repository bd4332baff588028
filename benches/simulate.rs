//! Simulation throughput: the counterflow heat exchanger (`examples/heat_exchanger.mo`, 3N
//! states) for N = 30, 300, 3000 with implicit Euler at a fixed h = 0.1 s over 100 s (1000
//! steps; stream a's time constant `c_a·M_a/N / (w_a·c_a + G_a/N)` is about 3 ms at N = 30, so
//! this is the stiff regime the implicit method is for). Measures initialisation plus integration (compilation of the tape
//! and the symbolic LU analysis included); parsing and structure are outside the timing.
//!
//! `cargo bench --bench simulate`

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use mocca::causal::{causal_form, initial_point};
use mocca::frontend::flatten_sources;
use mocca::jacobian::ode_jacobian;
use mocca::load;
use mocca::simulate::fixed_step::Method;
use mocca::simulate::run::{Model, Options, Partition, simulate};
use mocca::source::SourceMap;
use mocca::structure;

// The allocator the `mocca` binary runs with.
mocca::install_allocator!();

fn heat_exchanger(c: &mut Criterion) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/heat_exchanger.mo");
    let mut group = c.benchmark_group("simulate_heat_exchanger_implicit_euler_h0.1_100s");
    group.sample_size(10);
    for n in [30, 300, 3000] {
        let mut sources = SourceMap::new();
        let ids = load::load_paths(&mut sources, std::slice::from_ref(&path)).expect("example");
        let params = [("N".to_string(), n.to_string())];
        let flat =
            flatten_sources(sources, &ids, None, &params).unwrap_or_else(|_| panic!("flattens"));
        let (mut dae, _) = structure::prepare(flat.dae);
        let s = structure::analyse(&dae).unwrap_or_else(|_| panic!("analyses"));
        let causal = causal_form(&mut dae, &s);
        let jac = ode_jacobian(&mut dae, &causal);
        let start = initial_point(&dae).expect("parameters");
        let options = Options {
            method: Method::ImplicitEuler,
            start: 0.0,
            stop: 100.0,
            steps: 1000,
            tol: 1e-8,
            partition: Partition::None,
        };
        let model = Model {
            dae: &dae,
            structure: &s,
            causal: &causal,
            jac: &jac,
        };
        group.bench_function(format!("N={n}"), |b| {
            b.iter(|| simulate(model, &start, &options, &[], |_| {}).expect("simulates"))
        });
    }
    group.finish();
}

criterion_group!(benches, heat_exchanger);
criterion_main!(benches);
