//! Simulation throughput: the counterflow heat exchanger (`examples/heat_exchanger.mo`, 3N
//! states) for N = 30, 300, 3000 with implicit Euler at a fixed h = 0.1 s over 100 s (1000
//! steps; stream a's time constant `c_a·M_a/N / (w_a·c_a + G_a/N)` is about 3 ms at N = 30, so
//! this is the stiff regime the implicit method is for). Measures initialisation plus integration (compilation of the tape
//! and the symbolic LU analysis included); parsing and structure are outside the timing.
//!
//! The BDF group runs the same sizes with `simulate_bdf` at rtol = atol = 1e-6, the setting
//! BENCHMARKS.md compares with SciPy's `solve_ivp(method="BDF")`.
//!
//! `cargo bench --bench simulate`

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use mocca::causal::{Point, causal_form, initial_point};
use mocca::frontend::flatten_sources;
use mocca::jacobian::ode_jacobian;
use mocca::load;
use mocca::simulate::fixed_step::Method;
use mocca::simulate::run::{Exchange, Model, Options, Partition, simulate, simulate_bdf};
use mocca::source::SourceMap;
use mocca::structure;

// The allocator the `mocca` binary runs with.
mocca::install_allocator!();

fn implicit_euler(c: &mut Criterion) {
    heat_exchanger(
        c,
        "implicit_euler_h0.1_100s",
        1000,
        1e-8,
        simulate_implicit_euler,
    );
}

fn bdf(c: &mut Criterion) {
    heat_exchanger(c, "bdf_tol1e-6_100s", 1, 1e-6, simulate_bdf_only);
}

fn simulate_implicit_euler(model: Model<'_>, start: &Point, options: &Options) {
    simulate(model, start, options, &[], |_| {}).expect("simulates");
}

fn simulate_bdf_only(model: Model<'_>, start: &Point, options: &Options) {
    simulate_bdf(model, start, options, &[]).expect("simulates");
}

fn heat_exchanger(
    c: &mut Criterion,
    name: &str,
    steps: u64,
    tol: f64,
    run: fn(Model<'_>, &Point, &Options),
) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/heat_exchanger.mo");
    let mut group = c.benchmark_group(format!("simulate_heat_exchanger_{name}"));
    group.sample_size(10);
    for n in [30, 300, 3000] {
        let mut sources = SourceMap::new();
        let ids = load::load_paths(&mut sources, std::slice::from_ref(&path)).expect("example");
        let params = [("N".to_string(), n.to_string())];
        let flat =
            flatten_sources(sources, &ids, None, &params).unwrap_or_else(|_| panic!("flattens"));
        let (mut dae, _) = structure::prepare(flat.dae).expect("index reduction");
        let s = structure::analyse(&dae).unwrap_or_else(|_| panic!("analyses"));
        let causal = causal_form(&mut dae, &s);
        let jac = ode_jacobian(&mut dae, &causal);
        let start = initial_point(&dae).expect("parameters");
        let options = Options {
            method: Method::ImplicitEuler,
            start: 0.0,
            stop: 100.0,
            steps,
            tol,
            partition: Partition::None,
            exchange: Exchange::GaussSeidel,
            max_step: f64::INFINITY,
        };
        let model = Model {
            dae: &dae,
            structure: &s,
            causal: &causal,
            jac: &jac,
        };
        group.bench_function(format!("N={n}"), |b| {
            b.iter(|| run(model, &start, &options))
        });
    }
    group.finish();
}

criterion_group!(benches, implicit_euler, bdf);
criterion_main!(benches);
