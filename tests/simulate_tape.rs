//! The compiled tape computes what the reference evaluator computes: every unknown
//! (`Causal::evaluate`) and every Jacobian entry (`OdeJacobian::values`), on every example and
//! on a model with an algebraic loop and a nonlinear scalar equation, at start values and at
//! random states.

mod simulate_support;

use mocca::causal::initial_point;
use mocca::simulate::OdeSystem;
use mocca::simulate::model::{CompiledModel, Layout};
use simulate_support::{EXAMPLES, Loaded, Rng, example, inline};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

/// Compares tape and reference at the start values and at `random` perturbed states.
fn check(name: &str, m: &Loaded, random: usize) {
    let start = initial_point(&m.dae).expect("parameters evaluate");
    let mut model =
        CompiledModel::new(&m.dae, &m.causal, &m.jac, &start, &Layout::whole(&m.causal));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for trial in 0..=random {
        let mut reference = start.clone();
        for &s in &m.causal.states {
            let x = &mut reference.vars[s.0 as usize];
            if trial > 0 {
                *x += 0.1 * (1.0 + x.abs()) * rng.next();
            }
        }
        let x: Vec<f64> = m
            .causal
            .states
            .iter()
            .map(|s| reference.vars[s.0 as usize])
            .collect();
        // Both start from the same guesses for the Newton steps.
        model.load(&reference);
        m.causal
            .evaluate(&m.dae.pool, &mut reference)
            .unwrap_or_else(|f| panic!("{name}: reference fails: {f:?}"));
        let mut dx = vec![0.0; x.len()];
        model
            .rhs(reference.time, &x, &mut dx)
            .expect("tape evaluates");
        let tape = model.point();
        for v in m.dae.var_ids() {
            let (a, b) = (tape.vars[v.0 as usize], reference.vars[v.0 as usize]);
            assert!(
                close(a, b),
                "{name} trial {trial}: {} tape {a} reference {b}",
                m.dae.var(v).name
            );
        }
        for (i, &s) in m.causal.states.iter().enumerate() {
            let b = reference.ders[s.0 as usize];
            assert!(
                close(dx[i], b),
                "{name} trial {trial}: der({}) tape {} reference {b}",
                m.dae.var(s).name,
                dx[i]
            );
        }
        let expected = m.jac.values(&m.dae, &m.causal, &reference);
        let mut values = vec![f64::NAN; model.jacobian_pattern().len()];
        model
            .jacobian(reference.time, &x, &mut values)
            .expect("Jacobian evaluates");
        assert_eq!(
            model.jacobian_pattern().len(),
            expected.len(),
            "{name}: pattern"
        );
        for ((&(r, c), &got), &(er, ec, want)) in
            model.jacobian_pattern().iter().zip(&values).zip(&expected)
        {
            assert_eq!((r, c), (er, ec), "{name}: pattern order");
            assert!(
                close(got, want),
                "{name} trial {trial}: J[{r},{c}] tape {got} reference {want}"
            );
        }
        // A selection of entries (a partition's block) has the values of the whole Jacobian.
        for parity in 0..2 {
            let chosen: Vec<usize> = (parity..values.len()).step_by(2).collect();
            let mut some = vec![f64::NAN; chosen.len()];
            model
                .jacobian_entries(None, (reference.time, &x), &chosen, &mut some)
                .expect("entries evaluate");
            for (&e, &got) in chosen.iter().zip(&some) {
                assert_eq!(got.to_bits(), values[e].to_bits(), "{name}: entry {e}");
            }
        }
        check_rows(name, m, (reference.time, &x), (&dx, &values));
    }
}

/// Compiled with the even and the odd states as blocks of rows evaluated alone, each block's
/// derivatives and Jacobian block are the whole model's, bit for bit.
fn check_rows(name: &str, m: &Loaded, (t, x): (f64, &[f64]), (dx, jac): (&[f64], &[f64])) {
    let n = x.len();
    if n < 2 {
        return;
    }
    let blocks: Vec<Vec<usize>> = (0..2).map(|p| (p..n).step_by(2).collect()).collect();
    let start = initial_point(&m.dae).expect("parameters evaluate");
    let layout = mocca::simulate::rows::layout(&m.dae, &m.causal, &blocks);
    let mut model = CompiledModel::new(&m.dae, &m.causal, &m.jac, &start, &layout);
    let pattern = model.jacobian_pattern().to_vec();
    for block in &blocks {
        let rows = model.rows_block(block);
        assert!(rows.is_some(), "{name}: the block is compiled");
        let mut got = vec![f64::NAN; n];
        model.rhs_rows(rows, t, x, &mut got).expect("rows evaluate");
        for &i in block {
            assert_eq!(got[i].to_bits(), dx[i].to_bits(), "{name}: der row {i}");
        }
        let entries: Vec<usize> = (0..pattern.len())
            .filter(|&e| block.contains(&pattern[e].0) && block.contains(&pattern[e].1))
            .collect();
        let mut values = vec![f64::NAN; entries.len()];
        model
            .jacobian_entries(rows, (t, x), &entries, &mut values)
            .expect("block Jacobian evaluates");
        for (&e, &v) in entries.iter().zip(&values) {
            assert_eq!(v.to_bits(), jac[e].to_bits(), "{name}: J {:?}", pattern[e]);
        }
    }
    // The whole model compiled so is the whole model still. Its loops are solved again from
    // the roots the blocks left, and Newton takes the rounding-level correction it finds
    // there: the same root, to an ulp.
    let mut whole = vec![f64::NAN; pattern.len()];
    model.jacobian(t, x, &mut whole).expect("J evaluates");
    for (e, (&got, &want)) in whole.iter().zip(jac).enumerate() {
        assert!(
            got.to_bits().abs_diff(want.to_bits()) <= 2,
            "{name}: whole J {:?}: {got} against {want}",
            pattern[e]
        );
    }
}

#[test]
fn tape_equals_reference_on_every_example() {
    for name in EXAMPLES {
        let m = example(name, &[]);
        check(name, &m, 5);
    }
}

#[test]
fn tape_equals_reference_through_loops_and_scalar_newton() {
    let m = inline(
        "model Loopy
           Real x(start = 1);
           Real y(start = 0.5);
           Real a; Real b; Real c;
         equation
           der(x) = -a*x + b;
           der(y) = c - y;
           a + 0.5*sin(b) = x;
           b - 0.3*a*a = y;
           c + exp(c) = x*y + 2;
         end Loopy;",
    );
    let loops = m
        .causal
        .steps
        .iter()
        .filter(|s| matches!(s, mocca::causal::Step::Loop { .. }))
        .count();
    let newtons = m
        .causal
        .steps
        .iter()
        .filter(|s| matches!(s, mocca::causal::Step::Newton { .. }))
        .count();
    assert_eq!(
        (loops, newtons),
        (1, 1),
        "the model exercises both solved step kinds"
    );
    assert!(
        m.jac.entries.iter().any(|e| e.expr.is_none()),
        "some entries pass through the loop"
    );
    check("Loopy", &m, 20);
}

/// What the compiler rewrites: `a + (−b)` is one subtraction (also with the negation first,
/// and with the negation shared by two sums), `a / p` by a parameter is a product with its
/// reciprocal, and an assignment's last instruction writes its target directly, so a later
/// step reusing that expression (`y`'s right-hand side inside `der(x)`) reads the target.
#[test]
fn tape_equals_reference_through_its_rewrites() {
    let m = inline(
        "model Rewrites
           parameter Real c = 3;
           parameter Real k = 0.7;
           Real x(start = 1.5);
           Real z(start = -0.4);
           Real y;
         equation
           y = k*x + z;
           der(x) = (-(k*x + z) + 2*y - x)/c;
           der(z) = (x - z)/k + (-z + sin(x))/c - z/(x*x + 1);
         end Rewrites;",
    );
    check("Rewrites", &m, 20);
}

/// Equations of `for` loops are evaluated in batches, instruction by instruction across the
/// loop, when no instance reads another's result: here the independent states `x` (one shape,
/// strides of both signs through the reversed index) beside the chain `y`, where each instance
/// reads the one before and must be evaluated in order.
#[test]
fn tape_equals_reference_through_batched_loops() {
    let m = inline(
        "model Batched
           parameter Integer n = 9;
           parameter Real c = 2.5;
           Real x[n](each start = 1);
           Real y[n];
         equation
           y[1] = x[1];
           for i in 2:n loop
             y[i] = 0.5*y[i - 1] + x[i]/c;
           end for;
           for i in 1:n loop
             der(x[i]) = (x[n - i + 1] - x[i])/c - 0.1*y[i]*sin(x[i]);
           end for;
         end Batched;",
    );
    check("Batched", &m, 20);
}

/// The interpreter reads registers unchecked; a register file too small for the tape must stop
/// it with a panic before it reads or writes out of bounds.
#[test]
#[should_panic(expected = "a register file smaller than its tape")]
fn a_register_file_smaller_than_the_tape_is_refused() {
    let m = example("heat_exchanger.mo", &[]);
    let start = initial_point(&m.dae).expect("parameters evaluate");
    let model = CompiledModel::new(&m.dae, &m.causal, &m.jac, &start, &Layout::whole(&m.causal));
    model.tape.run_setup(&mut [0.0; 2]);
}

/// A batched run long enough (here 699 and 700 instances) runs in two halves on two threads
/// when the caller has a pair: the same values bit for bit as on one thread. Each side
/// evaluates a fresh model, so an instance neither half ran would show as a start value.
#[test]
fn long_batched_runs_on_two_threads_compute_what_one_thread_computes() {
    use mocca::simulate::pair::Pair;
    let m = example("heat_exchanger.mo", &[("N", "700")]);
    let start = initial_point(&m.dae).expect("parameters evaluate");
    let fresh = || CompiledModel::new(&m.dae, &m.causal, &m.jac, &start, &Layout::whole(&m.causal));
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let x: Vec<f64> = (0..m.causal.states.len())
        .map(|_| 300.0 + 20.0 * rng.next())
        .collect();
    let mut alone = vec![0.0; x.len()];
    fresh().rhs(1.0, &x, &mut alone).expect("evaluates");
    let together = Pair::with(true, |pair| {
        let mut dx = vec![0.0; x.len()];
        fresh().rhs_on(1.0, &x, &mut dx, pair).expect("evaluates");
        dx
    });
    assert_eq!(alone, together);
    assert!(alone.iter().all(|d| d.is_finite() && *d != 0.0));
}

/// A Jacobian asked for at the point of the last evaluation reuses that evaluation only if no
/// register was written since: here a write to the state's own register (as the exchange of
/// weak values writes registers between evaluations) must not leak into the entries.
#[test]
fn a_write_between_evaluation_and_jacobian_is_not_reused() {
    let m = inline(
        "model Quadratic
           Real s(start = 2);
         equation
           der(s) = -s^2;
         end Quadratic;",
    );
    let start = initial_point(&m.dae).expect("parameters evaluate");
    let mut model =
        CompiledModel::new(&m.dae, &m.causal, &m.jac, &start, &Layout::whole(&m.causal));
    let x = [2.0];
    let mut dx = [0.0];
    model.rhs(0.0, &x, &mut dx).expect("evaluates");
    assert_eq!(dx, [-4.0]);
    let s = model.tape.var_reg(m.causal.states[0]);
    model.set_value(s, 5.0);
    let mut entries = vec![0.0; model.jacobian_pattern().len()];
    model.jacobian(0.0, &x, &mut entries).expect("evaluates");
    assert_eq!(entries, [-4.0], "∂(−s²)/∂s at s = 2");
}
