//! Algorithm sections (Modelica 11.1): executed symbolically at translation time, checked
//! against the same computation written as equations, against hand-computed counts, and for
//! the specification's restrictions.

mod cli_support;

use cli_support::{csv_columns, mocca, model_file, simulate_csv};

fn columns(name: &str, text: &str, args: &[&str]) -> std::collections::BTreeMap<String, Vec<f64>> {
    let file = model_file(name, text);
    let mut all = vec!["simulate", file.to_str().expect("utf-8")];
    all.extend(args);
    let (csv, err, code) = simulate_csv(name, &all);
    assert_eq!(code, 0, "{name}: {err}");
    csv_columns(&csv)
}

const WITH_ALGORITHM: &str = "model Sums
  parameter Integer n = 6;
  Real x(start = 1, fixed = true);
  Real total, firstOver, steps, clipped;
algorithm
  // Σ i·x for i = 1..n, stopping after the first i with i² > 4n.
  total := 0;
  firstOver := 0;
  for i in 1:n loop
    total := total + i*x;
    if i*i > 4*n then
      firstOver := i;
      break;
    end if;
  end for;
  // How many halvings bring n below 1.
  steps := 0;
  clipped := n;
  while clipped >= 1 loop
    clipped := clipped / 2;
    steps := steps + 1;
  end while;
  if x > 0.5 then
    clipped := clipped + x;
  elseif x > 0.3 then
    clipped := clipped - x;
  end if;
equation
  der(x) = -x;
end Sums;
";

const WITH_EQUATIONS: &str = "model Sums
  parameter Integer n = 6;
  Real x(start = 1, fixed = true);
  Real total, firstOver, steps, clipped;
equation
  total = x + 2*x + 3*x + 4*x + 5*x;
  firstOver = 5;
  steps = 3;
  clipped = 0.75 + (if x > 0.5 then x elseif x > 0.3 then -x else 0);
  der(x) = -x;
end Sums;
";

#[test]
fn an_algorithm_with_for_while_if_and_break_computes_what_its_equations_would() {
    let args = [
        "--method",
        "bdf",
        "--stop",
        "2",
        "--vars",
        "x,total,firstOver,steps,clipped",
    ];
    let algorithm = columns("sums_algorithm", WITH_ALGORITHM, &args);
    let equations = columns("sums_equations", WITH_EQUATIONS, &args);
    for name in ["x", "total", "firstOver", "steps", "clipped"] {
        let (a, e) = (&algorithm[name], &equations[name]);
        assert_eq!(a.len(), e.len(), "{name}");
        for (k, (x, y)) in a.iter().zip(e).enumerate() {
            assert!(
                (x - y).abs() <= 1e-12 * y.abs().max(1.0),
                "{name} row {k}: {x} vs {y}"
            );
        }
    }
    // Both switch at x = 0.5 and 0.3, that is at ln 2 and ln(10/3).
    let t = &algorithm["time"];
    let after = |at: f64| t.iter().position(|&s| s > at).expect("a later row");
    let k = after(2f64.ln() + 1e-9);
    assert!((algorithm["clipped"][k] - (0.75 - algorithm["x"][k])).abs() < 1e-12);
    let k = after((10.0f64 / 3.0).ln() + 1e-9);
    assert!((algorithm["clipped"][k] - 0.75).abs() < 1e-12);
}

#[test]
fn a_when_statement_counts_each_sample_and_reads_what_it_assigned_before() {
    let text = "model Counter
  Integer n(start = 0);
  Real twice(start = 0);
algorithm
  when sample(0, 0.1) then
    n := n + 1;
    twice := 2*n;
  end when;
end Counter;
";
    let c = columns(
        "counter_statement",
        text,
        &[
            "--method", "bdf", "--stop", "1", "--step", "0.05", "--vars", "n,twice",
        ],
    );
    assert_eq!(*c["n"].last().expect("a row"), 10.0);
    // `twice` reads the n the statement before it assigned.
    assert_eq!(*c["twice"].last().expect("a row"), 20.0);
}

#[test]
fn an_initial_algorithm_fixes_the_start() {
    let text = "model Start
  parameter Real a = 3;
  Real x;
initial algorithm
  x := 0;
  for i in 1:3 loop
    x := x + a*i;
  end for;
equation
  der(x) = 0;
end Start;
";
    let c = columns("initial_algorithm", text, &["--stop", "1", "--vars", "x"]);
    assert!(c["x"].iter().all(|&x| x == 18.0), "{:?}", &c["x"][..3]);
}

#[test]
fn a_flat_model_with_an_algorithm_reads_back_to_itself() {
    let file = model_file("sums_flat", WITH_ALGORITHM);
    let (flat, err, code) = mocca(&["flatten", file.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    let again = model_file("sums_flat_again", &flat);
    let (flat_again, err, code) = mocca(&["flatten", again.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(flat, flat_again);
}

#[test]
fn what_an_algorithm_may_not_do_is_an_error_at_its_span() {
    let cases = [
        (
            "model M\n  Real x(start = 1, fixed = true);\n  Real y;\nalgorithm\n  if x > 0 then\n    when x < 0.5 then\n      y := 1;\n    end when;\n  end if;\nequation\n  der(x) = -x;\nend M;\n",
            "cannot be inside `if` or `while`",
            6,
        ),
        (
            "model M\n  Real x(start = 1, fixed = true);\n  Real y;\nalgorithm\n  y := 0;\n  while y < x loop\n    y := y + 1;\n  end while;\nequation\n  der(x) = -x;\nend M;\n",
            "not known at translation time",
            6,
        ),
        (
            "model M\n  Real x(start = 1, fixed = true);\n  Real y;\nalgorithm\n  y := 0;\n  for i in 1:3 loop\n    if x > i then\n      break;\n    end if;\n    y := y + 1;\n  end for;\nequation\n  der(x) = -x;\nend M;\n",
            "varies during the simulation",
            7,
        ),
        (
            "model M\n  parameter Real p = 1;\n  Real x(start = 1, fixed = true);\nalgorithm\n  p := 2;\nequation\n  der(x) = -x;\nend M;\n",
            "an algorithm cannot assign it",
            5,
        ),
        (
            "model M\n  Real x(start = 1, fixed = true);\n  Real y;\ninitial algorithm\n  when x > 0 then\n    y := 1;\n  end when;\nequation\n  der(x) = -x;\n  y = 0;\nend M;\n",
            "not allowed in an initial algorithm",
            5,
        ),
        (
            "model M
  discrete Real x[2](start = {1, 2}, each fixed = true);
algorithm
  when sample(0.5, 1) then
    x := {x[2], x[1]};
  end when;
end M;
",
            "read each other's targets in a cycle",
            5,
        ),
    ];
    for (k, (text, message, line)) in cases.into_iter().enumerate() {
        let file = model_file(&format!("algorithm_error_{k}"), text);
        let (out, err, code) = mocca(&["check", file.to_str().expect("utf-8")]);
        assert_eq!(code, 1, "case {k}: {out}{err}");
        assert!(err.contains(message), "case {k}: {err}");
        assert!(
            err.contains(&format!(":{line}:")),
            "case {k} at line {line}: {err}"
        );
    }
}

#[test]
fn a_when_statement_with_for_if_and_terminate_runs_as_its_equations_would() {
    let text = "model Counted
  Real x(start = 0, fixed = true);
  discrete Real y[3](each start = 0, each fixed = true);
  Integer count(start = 0, fixed = true);
equation
  der(x) = 1;
algorithm
  when sample(0, 0.25) then
    for i in 1:3 loop
      y[i] := pre(y[i]) + i;
    end for;
    if x > 1.1 then
      count := pre(count) + 10;
    else
      count := pre(count) + 1;
    end if;
    if count > 30 then
      terminate(\"count passed 30\");
    end if;
  end when;
end Counted;
";
    let file = model_file("counted", text);
    let path = file.to_str().expect("utf-8");
    let args = [
        "simulate",
        path,
        "--stop",
        "3",
        "--step",
        "0.1",
        "--vars",
        "count,y[3]",
    ];
    let (csv, err, code) = simulate_csv("counted", &args);
    assert_eq!(code, 0, "{err}");
    // Four samples up to 1.0 count 1, those from 1.25 count 10: past 30 at the seventh, 1.75.
    assert!(err.contains("count passed 30"), "{err}");
    let columns = csv_columns(&csv);
    assert_eq!(*columns["count"].last().expect("rows"), 34.0, "{csv}");
    assert_eq!(*columns["y[3]"].last().expect("rows"), 21.0, "{csv}");
    assert_eq!(*columns["time"].last().expect("rows"), 1.75, "{csv}");
}

/// Inside `when`, an array assignment and a call's outputs take every value as it was before
/// the statement, though mocca writes the elements one after another: a shift written so
/// that the first element written is read by the next one, and the outputs of a call that
/// reads a target of the same statement.
#[test]
fn a_when_statement_assigns_all_elements_from_the_values_before_it() {
    let text = "model Shifted
  function rotate
    input Real a[3];
    output Real first;
    output Real rest[2];
  algorithm
    first := a[3];
    rest := a[1:2];
  end rotate;
  function shift
    input Real a[3];
    input Real t;
    output Real first;
    output Real rest[2];
  algorithm
    first := t;
    rest := a[1:2];
  end shift;
  discrete Real x[3](start = {1, 2, 3}, each fixed = true);
  discrete Real y[3](start = {1, 2, 3}, each fixed = true);
  discrete Real z(start = 0, fixed = true);
algorithm
  when sample(0.5, 1) then
    x := {10*time, x[1], x[2]};
    (y[1], y[2:3]) := shift(y, time);
    (z, ) := rotate({x[3], y[1], z});
  end when;
end Shifted;
";
    let args = ["--stop", "2.6", "--step", "0.1", "--vars", "all"];
    let c = columns("when_shift", text, &args);
    let last = |name: &str| *c[name].last().expect("rows");
    // Shifts at 0.5, 1.5 and 2.5.
    let (x, y) = ([25.0, 15.0, 5.0], [2.5, 1.5, 0.5]);
    for k in 0..3 {
        assert!(
            (last(&format!("x[{}]", k + 1)) - x[k]).abs() < 1e-9,
            "x[{}]",
            k + 1
        );
        assert!(
            (last(&format!("y[{}]", k + 1)) - y[k]).abs() < 1e-9,
            "y[{}]",
            k + 1
        );
    }
    // z takes the previous z (the last of its own argument, read before it is written).
    assert_eq!(last("z"), 0.0);
}

/// A `when` statement writes an array element at a varying subscript (a sample buffer, as
/// the standard library's FFT blocks fill theirs): the element the index names takes the
/// value, the others keep theirs, later statements read it, and an index out of range
/// writes nothing. A shift within the buffer reads every element before any is written.
#[test]
fn a_when_statement_writes_the_element_a_varying_index_names() {
    let text = "model Buffer
  discrete Real buf[3](each start = 0, each fixed = true);
  discrete Real moved[3](start = {1, 2, 3}, each fixed = true);
  discrete Integer k(start = 0, fixed = true);
  discrete Real last(start = 0, fixed = true);
algorithm
  when sample(0.1, 0.1) then
    k := pre(k) + 1;
    buf[k] := 10*k;
    last := buf[min(k, 3)];
    moved[min(k, 2) + 1] := moved[min(k, 2)];
  end when;
end Buffer;
";
    let args = ["--stop", "0.55", "--step", "0.05", "--vars", "all"];
    let c = columns("when_buffer", text, &args);
    let at = |name: &str, t: f64| {
        let rows = c["time"].iter().zip(&c[name]);
        let v: Vec<f64> = rows
            .filter(|(s, _)| (**s - t).abs() < 1e-9)
            .map(|(_, v)| *v)
            .collect();
        *v.last().expect("a row")
    };
    // k = 1, 2, 3 fill the buffer; k = 4, 5 are out of range and write nothing.
    for (t, filled, last) in [
        (0.15, [10.0, 0.0, 0.0], 10.0),
        (0.35, [10.0, 20.0, 30.0], 30.0),
    ] {
        for (i, &b) in filled.iter().enumerate() {
            assert_eq!(
                at(&format!("buf[{}]", i + 1), t),
                b,
                "buf[{}] at {t}",
                i + 1
            );
        }
        assert_eq!(at("last", t), last, "last at {t}");
    }
    assert_eq!(at("buf[3]", 0.55), 30.0);
    // moved: k = 1 copies moved[1] into moved[2], then k ≥ 2 moved[2] into moved[3].
    let moved: Vec<f64> = (1..=3).map(|i| at(&format!("moved[{i}]"), 0.55)).collect();
    assert_eq!(moved, [1.0, 1.0, 1.0]);
}

/// `assert(false, …)` inside a `when` statement fails only where it is reached: never here
/// (the run ends normally), and at the terminal event there (an error, exit 1).
#[test]
fn an_assert_false_in_a_when_branch_fails_only_when_reached() {
    let text = |limit: f64| {
        format!(
            "model Guarded
  discrete Integer n(start = 0, fixed = true);
algorithm
  when sample(0.1, 0.1) then
    n := pre(n) + 1;
  end when;
  when terminal() then
    if n < {limit} then
      assert(false, \"too few samples\");
    end if;
  end when;
end Guarded;
"
        )
    };
    let c = columns("assert_unreached", &text(3.0), &["--stop", "1"]);
    assert!(c["time"].last().is_some_and(|&t| (t - 1.0).abs() < 1e-9));
    let file = model_file("assert_reached", &text(100.0));
    let path = file.to_str().expect("utf-8");
    let (out, err, code) = mocca(&["simulate", path, "--stop", "1"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("too few samples"), "{err}");
}
