//! Clocks of synchronous models (Modelica 16): each clock operator and the inference of
//! clocked partitions, against values derived by hand at the ticks from the specification's
//! semantics, and the inference errors at their spans.

mod cli_support;

use std::collections::BTreeMap;

use cli_support::{mocca, model_file};

/// `text` simulated to `stop` by explicit Euler at step 0.05: each variable of `vars` as its
/// last value at each time in ms (the value after any tick there).
fn after_ticks(name: &str, text: &str, stop: &str, vars: &[&str]) -> Vec<BTreeMap<i64, f64>> {
    let file = model_file(name, text);
    let out = file.with_extension("csv");
    let joined = vars.join(",");
    let args = [
        "simulate",
        file.to_str().expect("utf-8"),
        "--method",
        "euler",
        "--step",
        "0.05",
        "--stop",
        stop,
        "--vars",
        &joined,
        "--out",
        out.to_str().expect("utf-8"),
    ];
    let (_, err, code) = mocca(&args);
    assert_eq!(code, 0, "{err}");
    let csv = std::fs::read_to_string(&out).expect("the CSV");
    let mut last = vec![BTreeMap::new(); vars.len()];
    for line in csv.lines().skip(1) {
        let mut cells = line.split(',').map(|c| c.parse::<f64>().expect("a number"));
        let ms = (cells.next().expect("time") * 1000.0).round() as i64;
        for (column, y) in last.iter_mut().zip(cells) {
            column.insert(ms, y);
        }
    }
    last
}

/// [`after_ticks`] of one variable.
fn one_column(name: &str, text: &str, stop: &str, var: &str) -> BTreeMap<i64, f64> {
    after_ticks(name, text, stop, &[var]).remove(0)
}

/// The value `f(k)` expected on [k·period, (k + 1)·period) for every recorded time.
fn assert_per_tick(column: &BTreeMap<i64, f64>, period_ms: i64, f: impl Fn(i64) -> f64) {
    for (&ms, &y) in column {
        assert_eq!(y, f(ms / period_ms), "at {ms} ms");
    }
}

/// The diagnostics of `mocca check` on `text`, which must fail with exit code 1.
fn check_fails(name: &str, text: &str) -> String {
    let file = model_file(name, text);
    let (_, err, code) = mocca(&["check", file.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{err}");
    err
}

/// A clocked counter: `n = previous(n) + 1` at every tick of `Clock(0.1)`, from the first
/// tick at time 0, held into continuous time: n is k + 1 on [0.1·k, 0.1·(k + 1)).
#[test]
fn a_clocked_partition_runs_at_its_ticks() {
    let text = "model Counter\n  Integer n(start = 0);\n  Real y;\nequation\n  when Clock(0.1) then\n    n = previous(n) + 1;\n  end when;\n  y = hold(n * 1.0);\nend Counter;\n";
    let y = &one_column("counter", text, "0.5", "y");
    assert_per_tick(y, 100, |k| (k + 1) as f64);
}

/// `sample(u, c)` takes u's left limit at a tick (16.5.1): a step of u at the tick 0.2 is
/// sampled at the next tick, 0.3; at the first tick, the start, u's value then (3, not the
/// start value 0 of the Integer).
#[test]
fn sample_takes_the_left_limit_at_a_tick() {
    let text = "model Left\n  Real u = if time < 0.2 then 0 else 1;\n  Integer i = if time < 0.25 then 3 else 4;\n  Real s;\n  Integer j;\n  Real y;\n  Real z;\nequation\n  s = sample(u, Clock(0.1));\n  j = sample(i, Clock(0.1));\n  y = hold(s);\n  z = hold(j * 1.0);\nend Left;\n";
    let columns = after_ticks("left_limit", text, "0.5", &["y", "z"]);
    assert_per_tick(&columns[0], 100, |k| if k >= 3 { 1.0 } else { 0.0 });
    assert_per_tick(&columns[1], 100, |k| if k >= 3 { 4.0 } else { 3.0 });
}

/// A clocked partition's equations run in the order their data dependencies give, not as
/// written: `b = a + 1` reads the `a` of the same tick, so b is k + 2 at tick k.
#[test]
fn clocked_equations_are_sorted_by_dependency() {
    let text = "model Order\n  Integer a(start = 0);\n  Integer b;\n  Real y;\nequation\n  when Clock(0.1) then\n    b = a + 1;\n    a = previous(a) + 1;\n  end when;\n  y = hold(b * 1.0);\nend Order;\n";
    let y = &one_column("order", text, "0.5", "y");
    assert_per_tick(y, 100, |k| (k + 2) as f64);
}

/// A clocked if-equation whose branches solve for their variables in different orders: a
/// counter going up to 3 and back down to 0, its direction the previous tick's:
/// 1, 2, 3, 2, 1, 0, 1, 2, … at the ticks.
#[test]
fn a_clocked_if_equation_is_solved_branch_by_branch() {
    let text = "model Triangle\n  Integer n(start = 0);\n  Boolean up(start = true);\n  Integer step;\n  Real y;\nequation\n  step = sample(1, Clock(0.1));\n  if previous(up) then\n    n = previous(n) + step;\n    up = n < 3;\n  else\n    up = previous(n) - step <= 0;\n    n = previous(n) - step;\n  end if;\n  y = hold(n * 1.0);\nend Triangle;\n";
    let y = &one_column("triangle", text, "1.0", "y");
    let wave = [1.0, 2.0, 3.0, 2.0, 1.0, 0.0];
    assert_per_tick(y, 100, |k| wave[k as usize % 6]);
}

/// `when Clock() then` takes its clock from the partition it shares a variable with
/// (16.7): `v = 2·u` ticks with u's `Clock(0.2)`, u the left limit of time, so v is 0.4·k.
#[test]
fn an_inferred_clock_takes_its_partitions_clock() {
    let text = "model Inferred\n  Real u;\n  Real v;\n  Real y;\nequation\n  u = sample(time, Clock(0.2));\n  when Clock() then\n    v = 2 * u;\n  end when;\n  y = hold(v);\nend Inferred;\n";
    let y = &one_column("inferred", text, "1.0", "y");
    for (&ms, &value) in y {
        let k = ms / 200;
        assert!(
            (value - 0.4 * k as f64).abs() < 1e-12,
            "at {ms} ms: {value}"
        );
    }
}

/// A partition that no clock reaches is an inference error at the partition.
#[test]
fn a_partition_without_a_clock_is_an_error_at_its_span() {
    let err = check_fails(
        "no_clock",
        "model NoClock\n  Integer n(start = 0);\nequation\n  when Clock() then\n    n = previous(n) + 1;\n  end when;\nend NoClock;\n",
    );
    assert!(
        err.contains("the clock of this clocked partition cannot be inferred"),
        "{err}"
    );
    assert!(err.contains("when Clock() then"), "{err}");
}

/// Two clocks given to one partition are an error naming both (16.7.5).
#[test]
fn two_clocks_on_one_partition_are_an_error() {
    let err = check_fails(
        "two_clocks",
        "model TwoClocks\n  Real a;\n  Real b;\nequation\n  a = sample(time, Clock(0.1));\n  b = sample(time, Clock(0.3)) + a;\nend TwoClocks;\n",
    );
    assert!(err.contains("given two different clocks"), "{err}");
}

/// `superSample(u)` without a factor takes its partition's clock from elsewhere (16.5.2):
/// `a = superSample(u)` shares `c` with `superSample(u, 3)`, so both tick every 0.1 with u's
/// value from its last tick of `Clock(0.3)` (0.3·⌊k/3⌋ at the fast tick k, the left limit
/// of time), and c = a + b is 0.6·⌊k/3⌋; `interval()` in c's partition is 0.1.
#[test]
fn a_super_sample_without_its_factor_takes_its_partitions_clock() {
    let text = "model Up\n  Real u;\n  Real a;\n  Real b;\n  Real c;\n  Real e;\n  Real y;\n  Real z;\nequation\n  u = sample(time, Clock(0.3));\n  a = superSample(u);\n  b = superSample(u, 3);\n  c = a + b;\n  e = interval() + c;\n  y = hold(c);\n  z = hold(e);\nend Up;\n";
    let columns = after_ticks("super_sample", text, "1.0", &["y", "z"]);
    for ((&ms, &y), &z) in columns[0].iter().zip(columns[1].values()) {
        let k = ms / 100;
        assert!((y - 0.6 * (k / 3) as f64).abs() < 1e-9, "y at {ms} ms: {y}");
        assert!((z - y - 0.1).abs() < 1e-9, "z at {ms} ms: {z}");
    }
}

/// An `if` inside `when` whose condition is a parameter chooses at translation: the branch
/// not taken leaves no clock of its own (here `superSample(u, 1)`, which would clash with the
/// partition's `superSample(u, 3)`), so v ticks with w every 0.1 and c = 0.6·⌊k/3⌋.
#[test]
fn a_parameter_if_inside_when_leaves_no_clock_from_its_other_branch() {
    let text = "model Choose\n  parameter Boolean infer = true;\n  Real u;\n  Real v;\n  Real w;\n  Real c;\n  Real y;\nequation\n  u = sample(time, Clock(0.3));\n  when Clock() then\n    if infer then\n      v = superSample(u);\n    else\n      v = superSample(u, 1);\n    end if;\n  end when;\n  w = superSample(u, 3);\n  c = v + w;\n  y = hold(c);\nend Choose;\n";
    let y = &one_column("choose", text, "1.0", "y");
    for (&ms, &value) in y {
        let k = ms / 100;
        assert!(
            (value - 0.6 * (k / 3) as f64).abs() < 1e-9,
            "at {ms} ms: {value}"
        );
    }
}

/// `firstTick()` is true at its partition's first tick only (16.5.3): n starts from 10 there
/// and counts up by one at each later tick, so n is 10 + k on [0.1·k, 0.1·(k + 1)).
#[test]
fn first_tick_is_true_at_the_first_tick_only() {
    let text = "model First\n  Boolean f;\n  Integer n(start = 0);\n  Real y;\nequation\n  when Clock(0.1) then\n    f = firstTick();\n    n = if f then 10 else previous(n) + 1;\n  end when;\n  y = hold(n * 1.0);\nend First;\n";
    let y = &one_column("first_tick", text, "0.5", "y");
    assert_per_tick(y, 100, |k| (10 + k) as f64);
}

/// The discretised partition `der(x) = -x + u` (`der(x) = u` for the trapezoid) on `Clock(Clock(0.1), solverMethod)`, u the
/// sampled time, and the values 16.8.2's formulas give at tick k: x keeps its start 1 at the
/// first tick, then `step(x_{k-1}, t_{k-1}, t_k)` takes it from one tick to the next.
fn assert_discretised(method: &str, step: impl Fn(f64, f64, f64) -> f64) {
    let der = if method == "ImplicitTrapezoid" {
        "u"
    } else {
        "-x + u"
    };
    let text = format!(
        "model Discretised\n  Clock c = Clock(Clock(0.1), solverMethod = \"{method}\");\n  Real u = sample(time, c);\n  Real x(start = 1);\nequation\n  der(x) = {der};\nend Discretised;\n"
    );
    let x = &one_column(&format!("discretised_{method}"), &text, "0.5", "x");
    let mut expected = vec![1.0];
    for k in 1..=5 {
        let t = |k: usize| 0.1 * k as f64;
        expected.push(step(expected[k - 1], t(k - 1), t(k)));
    }
    assert_eq!(x.len(), 11, "x at 0, 0.05, …, 0.5");
    for (&ms, &value) in x {
        let want = expected[(ms / 100) as usize];
        assert!(
            (value - want).abs() < 1e-12,
            "{method} at {ms} ms: {value}, not {want}"
        );
    }
}

/// `"ExplicitEuler"`: x_k = x_{k-1} + h·der(x)_{k-1}, der(x)_{k-1} = -x_{k-1} + t_{k-1}.
#[test]
fn explicit_euler_discretises_a_clocked_partition() {
    assert_discretised("ExplicitEuler", |x, t0, _| x + 0.1 * (-x + t0));
}

/// `"ImplicitEuler"`: x_k = x_{k-1} + h·der(x)_k, der(x)_k = -x_k + t_k, a linear equation
/// in x_k: x_k = (x_{k-1} + h·t_k)/(1 + h).
#[test]
fn implicit_euler_discretises_a_clocked_partition() {
    assert_discretised("ImplicitEuler", |x, _, t1| (x + 0.1 * t1) / 1.1);
}

/// `"ImplicitTrapezoid"`: x_k = x_{k-1} + h/2·(der(x)_k + der(x)_{k-1}), exact for
/// der(x) = t: x = 1 + t²/2 at every tick.
#[test]
fn the_implicit_trapezoid_discretises_a_clocked_partition() {
    assert_discretised("ImplicitTrapezoid", |x, t0, t1| x + 0.05 * (t0 + t1));
}

/// A clocked partition reading `der` needs a solver method (16.8.3); a method mocca does not
/// integrate by is named as such at its span.
#[test]
fn a_derivative_in_a_clocked_partition_needs_a_known_solver_method() {
    let cases = [
        (
            "Clock(0.1)",
            "needs its partition's clock to carry a solver method",
            "der(x) = u",
        ),
        (
            "Clock(Clock(0.1), solverMethod = \"ExplicitRungeKutta4\")",
            "\"ExplicitRungeKutta4\" is not supported",
            "\"ExplicitRungeKutta4\"",
        ),
    ];
    assert_each_fails("no_solver", &cases, |clock| {
        format!(
            "model NoSolver\n  Real u = sample(time, {clock});\n  Real x(start = 1);\nequation\n  der(x) = u;\nend NoSolver;\n"
        )
    });
}

/// Each `(piece, message, at)` of `cases` put into `model` fails `check` with `message`,
/// quoting `at` (where it points).
fn assert_each_fails(name: &str, cases: &[(&str, &str, &str)], model: impl Fn(&str) -> String) {
    for (k, &(piece, message, at)) in cases.iter().enumerate() {
        let err = check_fails(&format!("{name}_{k}"), &model(piece));
        assert!(err.contains(message), "{piece}: {err}");
        assert!(err.contains(at), "{piece}: {err}");
    }
}

/// Clocks derived from the event clock `Clock(sample(0.05, 0.1))` (ticks at 0.05, 0.15, …):
/// `subSample(c, 2)` ticks at its first tick and every second (0.05, 0.25, 0.45),
/// `shiftSample(c, 2)` from its third on (0.25, 0.35, …), each counting its own ticks;
/// `interval()` on the event clock is its `startInterval` (0) at the first tick and the
/// time since the previous tick after it, and `hold` gives h's start before the first.
#[test]
fn clocks_derived_from_an_event_clock_tick_at_its_counted_ticks() {
    let text = "model EventSub\n  Clock c = Clock(sample(0.05, 0.1));\n  Integer n(start = 0);\n  Integer m(start = 0);\n  Real h(start = -1);\n  Real yn;\n  Real ym;\n  Real yh;\nequation\n  when subSample(c, 2) then\n    n = previous(n) + 1;\n  end when;\n  when shiftSample(c, 2) then\n    m = previous(m) + 1;\n  end when;\n  when c then\n    h = interval();\n  end when;\n  yn = hold(n * 1.0);\n  ym = hold(m * 1.0);\n  yh = hold(h);\nend EventSub;\n";
    let columns = after_ticks("event_sub", text, "0.6", &["yn", "ym", "yh"]);
    let ticks_until = |ms: i64, at: &[i64]| at.iter().filter(|&&t| t <= ms).count() as f64;
    assert_eq!(columns[0].len(), 13, "yn at 0, 0.05, …, 0.6");
    for (&ms, &n) in &columns[0] {
        assert_eq!(n, ticks_until(ms, &[50, 250, 450]), "n at {ms} ms");
        assert_eq!(
            columns[1][&ms],
            ticks_until(ms, &[250, 350, 450, 550]),
            "m at {ms} ms"
        );
        let h = match ms {
            ..50 => -1.0,
            50..150 => 0.0,
            _ => 0.1,
        };
        assert!(
            (columns[2][&ms] - h).abs() < 1e-12,
            "h at {ms} ms: {}",
            columns[2][&ms]
        );
    }
}

/// An event clock cannot be super-sampled, and is shifted by whole ticks only (16.5.2).
#[test]
fn an_event_clock_is_neither_super_sampled_nor_shifted_by_a_fraction() {
    let cases = [
        (
            "superSample(c, 2)",
            "cannot be super-sampled",
            "superSample(c, 2)",
        ),
        (
            "shiftSample(c, 1, 3)",
            "shifts by whole ticks",
            "shiftSample(c, 1, 3)",
        ),
        (
            "backSample(c, 1)",
            "`backSample` of an event clock",
            "backSample(c, 1)",
        ),
    ];
    assert_each_fails("event_super", &cases, |clock| {
        format!(
            "model EventSuper\n  Clock c = Clock(sample(0.05, 0.1));\n  Integer n(start = 0);\nequation\n  when {clock} then\n    n = previous(n) + 1;\n  end when;\nend EventSuper;\n"
        )
    });
}

/// `firstTick()` in an if-equation's condition: the condition is first tried as a constant,
/// which must leave no clock operator behind (a stray `firstTick` made a partition of its
/// own, without a clock). c is false at the first tick, then whether u changed.
#[test]
fn first_tick_in_an_if_equation_condition_makes_no_stray_partition() {
    let text = "model IfFirst\n  Integer u = sample(integer(time * 5), Clock(0.1));\n  Boolean c;\n  Real y;\nequation\n  if firstTick() then\n    c = false;\n  else\n    c = not (u == previous(u));\n  end if;\n  y = hold(if c then 1.0 else 0.0);\nend IfFirst;\n";
    let y = &one_column("if_first", text, "0.5", "y");
    // u = ⌊5t⌋ at the ticks' left limits, 0, 0, 0, 1, 1, 2 at t = 0, 0.1, …, 0.5 (at 0.2
    // and 0.4 it is sampled just before it switches): it changes at the ticks 0.3 and 0.5.
    let u = |k: i64| if k == 0 { 0 } else { (k - 1) / 2 };
    assert_per_tick(
        y,
        100,
        |k| if k > 0 && u(k) != u(k - 1) { 1.0 } else { 0.0 },
    );
}

/// y at 0, 0.05, …, 1 is 0.3·⌊k/3⌋ + 0.1·k on the 0.1 s tick k: a signal of a 0.3 s clock
/// read on a 0.1 s one, plus the sampled time.
fn assert_slow_and_fast(y: &BTreeMap<i64, f64>) {
    assert_eq!(y.len(), 21, "y at 0, 0.05, …, 1");
    for (&ms, &value) in y {
        let k = ms / 100;
        let want = 0.3 * (k / 3) as f64 + 0.1 * k as f64;
        assert!(
            (value - want).abs() < 1e-9,
            "at {ms} ms: {value}, not {want}"
        );
    }
}

/// `noClock(v)` takes its clock from its partition and v's value from v's last tick
/// (16.5.2): v = subSample(u, 3) ticks every 0.3 s with u = the sampled time, w ticks with u
/// every 0.1 s, so w = 0.3·⌊k/3⌋ + 0.1·k at the tick k (v's tick at the same instant first).
#[test]
fn no_clock_reads_the_last_tick_of_its_argument() {
    let text = "model NoClock\n  Real u;\n  Real v;\n  Real w;\n  Real y;\nequation\n  u = sample(time, Clock(0.1));\n  v = subSample(u, 3);\n  w = noClock(v) + u;\n  y = hold(w);\nend NoClock;\n";
    let y = &one_column("no_clock_op", text, "1.0", "y");
    assert_slow_and_fast(y);
}

/// `cycles` analyses the continuous part, with a clocked partition already split from it:
/// the sampled PI controller around the plant `der(phi) = w`, `J·der(w) = tau − d·w −
/// m·sin(phi)` holds its torque between ticks, so the states are phi and w and the cycles
/// the plant's two (w on itself through the friction, phi–w), not a loop through the
/// controller; the partition's values are part of the mode the analysis is taken in.
#[test]
fn cycles_see_a_clocked_partition_as_split_from_the_plant() {
    let file = model_file(
        "clocked_cycles",
        "model ClockedPlant\n  parameter Real J = 0.01;\n  parameter Real d = 0.05;\n  Real phi(start = 0, fixed = true);\n  Real w(start = 0, fixed = true);\n  Real tau;\n  Real e;\n  Real x(start = 0);\n  Real u;\nequation\n  der(phi) = w;\n  J*der(w) = tau - d*w - 0.5*sin(phi);\n  e = sample(10 - w, Clock(0.001));\n  x = previous(x) + e*interval(e)/0.05;\n  u = 2*(e + x);\n  tau = hold(u);\nend ClockedPlant;\n",
    );
    let (out, err, code) = mocca(&["cycles", file.to_str().expect("utf-8"), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let states: Vec<&str> = (json["states"].as_array().expect("states").iter())
        .map(|s| s["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(states, ["phi", "w"]);
    assert_eq!(json["cycles"], 2);
    let mode = json["modes"][0].as_object().expect("a mode");
    assert!(mode.contains_key("x") && mode.contains_key("u"), "{mode:?}");
}

/// A clock inferred backwards through `superSample` (16.7.5): u = sample(time) has no clock
/// of its own, v = superSample(u, 3) shares w's `Clock(0.1)`, so u ticks every 0.3 s and
/// w = 0.3·⌊k/3⌋ + 0.1·k at the fast tick k.
#[test]
fn a_clock_is_inferred_back_through_super_sample() {
    let text = "model Backward\n  Real u;\n  Real v;\n  Real w;\n  Real y;\nequation\n  u = sample(time);\n  v = superSample(u, 3);\n  w = v + sample(time, Clock(0.1));\n  y = hold(w);\nend Backward;\n";
    let y = &one_column("backward", text, "1.0", "y");
    assert_slow_and_fast(y);
}

/// Clocked equations no order of assignments solves (16.7.4 sorts them as continuous ones):
/// `x³ + x = u + 1` (no unknown to isolate), `a + b = u`, `a − b = 1` (a loop of two),
/// `p = q` (two unknowns alone) with `2q = u`, and `z = 0.5·z + u` (an unknown that reads
/// itself): at each tick of `Clock(0.1)`, with u the sampled time 0.1·k, x is the real root
/// of the cubic (checked by its residual and by bisection), a = (u + 1)/2, b = (u − 1)/2,
/// p = q = u/2, z = 2u.
#[test]
fn clocked_loops_are_solved_at_each_tick() {
    let text = "model ClockedLoops\n  Clock c = Clock(0.1);\n  Real u = sample(time, c);\n  Real x(start = 0.5);\n  Real a, b, p, q, z;\nequation\n  x^3 + x = u + 1;\n  a + b = u;\n  a - b = 1;\n  p = q;\n  2*q = u;\n  z = 0.5*z + u;\nend ClockedLoops;\n";
    let vars = ["x", "a", "b", "p", "q", "z"];
    let columns = after_ticks("clocked_loops", text, "0.5", &vars);
    let cubic_root = |u: f64| {
        let (mut lo, mut hi) = (0.0, 2.0);
        for _ in 0..200 {
            let mid: f64 = 0.5 * (lo + hi);
            if mid.powi(3) + mid > u + 1.0 {
                hi = mid
            } else {
                lo = mid
            }
        }
        lo
    };
    for (&ms, &x) in &columns[0] {
        let u = 0.1 * (ms / 100) as f64;
        let near = |got: f64, want: f64, what: &str| {
            assert!(
                (got - want).abs() < 1e-12,
                "{what} at {ms} ms: {got}, not {want}"
            );
        };
        near(x, cubic_root(u), "x");
        near(columns[1][&ms], (u + 1.0) / 2.0, "a");
        near(columns[2][&ms], (u - 1.0) / 2.0, "b");
        near(columns[3][&ms], u / 2.0, "p");
        near(columns[4][&ms], u / 2.0, "q");
        near(columns[5][&ms], 2.0 * u, "z");
    }
}

/// `"ImplicitEuler"` on `der(x) = −u·x³` (u = 1 sampled on the clock), whose step `x_k = x_{k-1} − h·x_k³` is a cubic in
/// x_k: solved by Newton at each tick, equal to the root bisection finds from x_{k-1}.
#[test]
fn implicit_euler_solves_a_nonlinear_step_at_each_tick() {
    let text = "model ImplicitCubic\n  Clock c = Clock(Clock(0.1), solverMethod = \"ImplicitEuler\");\n  Real u = sample(1.0, c);\n  Real x(start = 2);\nequation\n  der(x) = -u*x^3;\nend ImplicitCubic;\n";
    let x = &one_column("implicit_cubic", text, "0.5", "x");
    let mut expected = vec![2.0];
    for k in 1..=5 {
        let before: f64 = expected[k - 1];
        let (mut lo, mut hi) = (0.0, before);
        for _ in 0..200 {
            let mid: f64 = 0.5 * (lo + hi);
            if mid - before + 0.1 * mid.powi(3) > 0.0 {
                hi = mid
            } else {
                lo = mid
            }
        }
        expected.push(lo);
    }
    for (&ms, &value) in x {
        let want = expected[(ms / 100) as usize];
        assert!(
            (value - want).abs() < 1e-12,
            "at {ms} ms: {value}, not {want}"
        );
    }
}

/// A constraint between states of a discretised partition (an inverse plant `y` made to
/// follow a filter's `x`) is reduced as in a continuous model: `y = x` differentiated gives
/// `v`, and explicit Euler integrates the one state left, so at tick k x = 2 - 0.9^k and
/// v = der(x) + 3x = 2 + 2x, whichever of x and y stays a state.
#[test]
fn a_discretised_partition_has_its_index_reduced() {
    let text = "model InverseFilter\n  Clock c = Clock(Clock(0.1), solverMethod = \"ExplicitEuler\");\n  Real u = sample(2.0, c);\n  Real x(start = 1, fixed = true);\n  Real y(start = 1);\n  Real v;\nequation\n  der(x) = u - x;\n  y = x;\n  der(y) = -3*y + v;\nend InverseFilter;\n";
    let columns = after_ticks("inverse_filter", text, "0.5", &["x", "v"]);
    let x = |k: i64| 2.0 - 0.9f64.powi(k as i32);
    for (&ms, (&x_now, &v_now)) in columns[0]
        .keys()
        .zip(columns[0].values().zip(columns[1].values()))
    {
        let k = ms / 100;
        assert!(
            (x_now - x(k)).abs() < 1e-12,
            "x at {ms} ms: {x_now}, not {}",
            x(k)
        );
        let v = 2.0 + 2.0 * x(k);
        assert!((v_now - v).abs() < 1e-12, "v at {ms} ms: {v_now}, not {v}");
    }
}

/// Clocked equations that do not determine their unknowns one for one are an error at the
/// equation left over (here the partition has one equation too many for `y`).
#[test]
fn an_overdetermined_clocked_partition_is_an_error_at_its_equation() {
    let text = "model Over\n  Real u = sample(time, Clock(0.1));\n  Real y;\nequation\n  2*y = u;\n  3*y = u;\nend Over;\n";
    let err = check_fails("over_clocked", text);
    assert!(err.contains("do not determine their"), "{err}");
}
