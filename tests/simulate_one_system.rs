//! A model with weak couplings simulated as one system (`--partition none`): `last(v)` reads
//! `v` of the same evaluation, so the right-hand side is a function of the time and the
//! states, and the Jacobian differentiates through the weak reads.

mod simulate_support;

use mocca::causal::{Causal, initial_point};
use mocca::expr::Node;
use mocca::jacobian::{WeakReadsAs, ode_jacobian_with};
use mocca::simulate::OdeSystem;
use mocca::simulate::fixed_step::Method;
use mocca::simulate::model::{CompiledModel, Layout};
use mocca::simulate::run::{Exchange, Options, Partition, simulate_bdf};
use mocca::structure::Unknown;
use simulate_support::{Loaded, Rng, example, inline};

/// The power shaft with its steps ordered for one system and its Jacobian through the weak
/// reads (what `mocca simulate` does without `--partition weak`).
fn one_system() -> Loaded {
    let mut m = example("power_shaft.mo", &[]);
    let causal = std::mem::replace(
        &mut m.causal,
        Causal {
            steps: Vec::new(),
            states: Vec::new(),
            block_of_step: Vec::new(),
        },
    );
    m.causal = causal
        .with_weak_reads_after_writers(&m.dae)
        .unwrap_or_else(|_| panic!("the shaft's weak reads close no cycle"));
    m.jac = ode_jacobian_with(&mut m.dae, &m.causal, WeakReadsAs::Current);
    m
}

/// The position of the step whose expressions read `last` of some variable, and of the
/// step that solves that variable.
fn reads_and_writers(m: &Loaded) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    for (k, step) in m.causal.steps.iter().enumerate() {
        for &e in step.exprs() {
            m.dae.pool.visit_leaves(e, |leaf| {
                let Node::Last(v) = leaf else { return };
                let writer = m.causal.steps.iter().position(|s| {
                    s.targets()
                        .into_iter()
                        .any(|u| mocca::causal::leaf(u) == Node::Var(v))
                });
                if let Some(w) = writer {
                    pairs.push((k, w));
                }
            });
        }
    }
    pairs
}

#[test]
fn every_weak_read_comes_after_its_writer() {
    let before = reads_and_writers(&example("power_shaft.mo", &[]));
    assert!(
        before.iter().any(|&(reader, writer)| reader < writer),
        "the causal order reads `last(elec.shaft.tau)` before solving it: {before:?}"
    );
    let after = reads_and_writers(&one_system());
    assert!(!after.is_empty());
    assert!(
        after.iter().all(|&(reader, writer)| reader > writer),
        "{after:?}"
    );
}

#[test]
fn weak_reads_closing_a_cycle_keep_the_order() {
    // x's equation reads last(y) and y's reads x: no order reads both current.
    let m = inline(
        "model Cycle
           Real s(start = 1);
           weak Real y;
           Real x;
         equation
           der(s) = -x;
           x = s + y;
           y = 2*x;
         end Cycle;",
    );
    let steps = m.causal.steps.len();
    let Err(cycle) = m.causal.with_weak_reads_after_writers(&m.dae) else {
        panic!("`x = s + y` and `y = 2*x` close a cycle through the weak `y`");
    };
    assert_eq!(cycle.causal.steps.len(), steps, "the form unchanged");
    // The equation named is the one with the weak read: `x = s + y`.
    let mut names = Vec::new();
    m.dae
        .pool
        .visit_leaves(m.dae.equations[cycle.equation].residual, |l| {
            if let Node::Var(v) = l {
                names.push(m.dae.var(v).name.to_string());
            }
        });
    names.sort();
    assert_eq!(names, ["s", "x", "y"]);
}

/// Evaluating at another state in between does not change `f` at a state (with the causal
/// order, the shaft's torque lagged one evaluation), and the Jacobian matches central
/// differences of `f`, through the weak reads.
#[test]
fn the_right_hand_side_is_a_function_and_the_jacobian_its_derivative() {
    let m = one_system();
    let start = initial_point(&m.dae).expect("parameters evaluate");
    let mut model =
        CompiledModel::new(&m.dae, &m.causal, &m.jac, &start, &Layout::whole(&m.causal));
    let n = model.dim();
    let x0 = model.state_values();
    let mut rng = Rng(0x5851_f42d_4c95_7f2d);
    let x1: Vec<f64> = x0
        .iter()
        .map(|x| x + 0.3 * (1.0 + x.abs()) * rng.next())
        .collect();
    let f = |model: &mut CompiledModel, x: &[f64]| {
        let mut dx = vec![0.0; n];
        model.rhs(0.5, x, &mut dx).expect("evaluates");
        dx
    };
    let first = f(&mut model, &x1);
    f(&mut model, &x0);
    assert_eq!(
        first,
        f(&mut model, &x1),
        "f depends on the previous evaluation"
    );
    let mut values = vec![0.0; model.jacobian_pattern().len()];
    model.jacobian(0.5, &x1, &mut values).expect("evaluates");
    let pattern = model.jacobian_pattern().to_vec();
    for col in 0..n {
        let step = 1e-6 * (1.0 + x1[col].abs());
        let (mut up, mut down) = (x1.clone(), x1.clone());
        up[col] += step;
        down[col] -= step;
        let (fu, fd) = (f(&mut model, &up), f(&mut model, &down));
        for row in 0..n {
            let fd_value = (fu[row] - fd[row]) / (2.0 * step);
            let entry = pattern.iter().position(|&e| e == (row, col));
            let value = entry.map_or(0.0, |k| values[k]);
            assert!(
                (value - fd_value).abs() <= 1e-5 * (1.0 + fd_value.abs()),
                "J[{row},{col}] = {value} against {fd_value}"
            );
        }
    }
}

/// BDF as one system: it gets through the run (with the weak reads lagging it hit its step
/// limit) and agrees with itself at a tighter tolerance.
#[test]
fn bdf_simulates_the_shaft_as_one_system() {
    let m = one_system();
    let start = initial_point(&m.dae).expect("parameters evaluate");
    let states: Vec<Unknown> = m
        .causal
        .states
        .iter()
        .map(|&v| Unknown::Algebraic(v))
        .collect();
    let run = |tol: f64| {
        let options = Options {
            method: Method::ImplicitEuler,
            start: 0.0,
            stop: 10.0,
            steps: 10,
            tol,
            partition: Partition::None,
            exchange: Exchange::GaussSeidel,
            max_step: f64::INFINITY,
        };
        simulate_bdf(m.model(), &start, &options, &states).expect("simulates")
    };
    let (loose, tight) = (run(1e-6), run(1e-10));
    assert!(loose.stats.steps < 5000, "{} steps", loose.stats.steps);
    for (a, b) in loose.columns.iter().zip(&tight.columns) {
        let (x, y) = (a[a.len() - 1], b[b.len() - 1]);
        assert!((x - y).abs() <= 1e-3 * (1.0 + y.abs()), "{x} against {y}");
    }
}
