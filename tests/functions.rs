//! Functions (Modelica 12), records, matrix constructors and the start policies, checked
//! against values computed here independently: a table interpolation against its closed
//! form, several outputs against their formulas, BDF on an inlined right-hand side against
//! the exact solution (which needs the inlined function's Jacobian), record values field by
//! field.

mod cli_support;

use cli_support::{csv_columns, mocca, model_file, simulate_csv};

fn columns(name: &str, text: &str, args: &[&str]) -> std::collections::BTreeMap<String, Vec<f64>> {
    let file = model_file(name, text);
    let mut all = vec!["simulate", file.to_str().expect("utf-8")];
    if !args.contains(&"--vars") {
        all.extend(["--vars", "all"]);
    }
    all.extend(args);
    let (csv, err, code) = simulate_csv(name, &all);
    assert_eq!(code, 0, "{name}: {err}");
    csv_columns(&csv)
}

/// `Modelica.Math.Vectors.interpolate` as the standard library writes it: a `while` search
/// whose turns depend on the abscissa, so every path of the search is followed.
const INTERPOLATE: &str = "function interp
  input Real x[:];
  input Real y[size(x, 1)];
  input Real xi;
  input Integer iLast = 1;
  output Real yi;
  output Integer iNew = 1;
protected
  Integer i;
  Integer nx = size(x, 1);
  Real x1; Real x2; Real y1; Real y2;
algorithm
  assert(nx > 0, \"The table vectors must have at least 1 entry.\");
  if nx == 1 then
    yi := y[1];
  else
    i := min(max(iLast, 1), nx - 1);
    if xi >= x[i] then
      while i < nx and xi >= x[i] loop
        i := i + 1;
      end while;
      i := i - 1;
    else
      while i > 1 and xi < x[i] loop
        i := i - 1;
      end while;
    end if;
    x1 := x[i]; x2 := x[i + 1]; y1 := y[i]; y2 := y[i + 1];
    yi := y1 + (y2 - y1)*(xi - x1)/(x2 - x1);
  end if;
  iNew := i;
end interp;
";

/// The table's linear interpolation, extrapolated from the end segments.
fn piecewise(xs: &[f64], ys: &[f64], x: f64) -> f64 {
    let i = (1..xs.len() - 1).rev().find(|&k| x >= xs[k]).unwrap_or(0);
    ys[i] + (ys[i + 1] - ys[i]) * (x - xs[i]) / (xs[i + 1] - xs[i])
}

#[test]
fn a_search_loop_on_a_varying_value_interpolates_like_the_closed_form() {
    let text = format!(
        "{INTERPOLATE}
model T
  parameter Real tab[:, 2] = [0, 1; 1, 3; 2, 2; 4, 0];
  parameter Real atHalf = interp(tab[:, 1], tab[:, 2], 1.5);
  Real x(start = -1, fixed = true);
  Real y, constant15;
equation
  der(x) = 1;
  y = interp(tab[:, 1], tab[:, 2], x);
  constant15 = atHalf;
end T;
"
    );
    let c = columns("interp", &text, &["--stop", "6"]);
    let (xs, ys) = ([0.0, 1.0, 2.0, 4.0], [1.0, 3.0, 2.0, 0.0]);
    for (k, (&x, &y)) in c["x"].iter().zip(&c["y"]).enumerate() {
        let expected = piecewise(&xs, &ys, x);
        assert!(
            (y - expected).abs() < 1e-9,
            "row {k}: y({x}) = {y}, expected {expected}"
        );
    }
    assert!(c["constant15"].iter().all(|&v| (v - 2.5).abs() < 1e-12));
}

const OUTPUTS: &str = "function polar
  input Real x;
  input Real y;
  output Real r;
  output Real phi;
algorithm
  r := sqrt(x^2 + y^2);
  phi := atan2(y, x);
end polar;

function fact
  input Integer n;
  output Integer f;
algorithm
  f := if n <= 1 then 1 else n*fact(n - 1);
end fact;
";

#[test]
fn several_outputs_recursion_and_named_arguments() {
    let text = format!(
        "{OUTPUTS}
model P
  parameter Integer f5 = fact(5);
  Real r, phi, r2, phi2, five;
algorithm
  (r2, phi2) := polar(y = sin(time), x = cos(time) + 2);
equation
  (r, phi) = polar(cos(time) + 2, sin(time));
  five = f5;
end P;
"
    );
    let c = columns("outputs", &text, &["--stop", "3"]);
    for (k, &t) in c["time"].iter().enumerate() {
        let (x, y) = (t.cos() + 2.0, t.sin());
        assert!((c["r"][k] - x.hypot(y)).abs() < 1e-12);
        assert!((c["phi"][k] - y.atan2(x)).abs() < 1e-12);
        assert!((c["r2"][k] - c["r"][k]).abs() < 1e-12);
        assert!((c["phi2"][k] - c["phi"][k]).abs() < 1e-12);
        assert_eq!(c["five"][k], 120.0);
    }
}

/// `der(x) = −g(x)` with `g(x) = x²` behind a function with a branch: BDF at a tight
/// tolerance follows `1/(1 + t)` only with the right Jacobian of the inlined body.
#[test]
fn bdf_on_an_inlined_function_follows_the_exact_solution() {
    let text = "function g
  input Real x;
  output Real y;
algorithm
  if x >= 0 then
    y := x*x;
  else
    y := -x*x;
  end if;
end g;
model Decay
  Real x(start = 1, fixed = true);
equation
  der(x) = -g(x);
end Decay;
";
    let c = columns(
        "decay",
        text,
        &["--method", "bdf", "--tol", "1e-9", "--stop", "5"],
    );
    for (&t, &x) in c["time"].iter().zip(&c["x"]) {
        let exact = 1.0 / (1.0 + t);
        assert!((x - exact).abs() < 1e-6, "x({t}) = {x}, exact {exact}");
    }
}

#[test]
fn an_external_c_function_is_an_error_naming_it() {
    let file = model_file(
        "external",
        "function cfun
  input Real u;
  output Real y;
external \"C\" y = my_c_function(u);
end cfun;
model E
  Real y = cfun(time);
end E;
",
    );
    let (_, err, code) = mocca(&["check", file.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("`cfun` is an external function"), "{err}");
}

#[test]
fn a_function_assert_false_at_translation_time_is_an_error() {
    let file = model_file(
        "fassert",
        "function half
  input Real u;
  output Real y;
algorithm
  assert(u > 0, \"u must be positive\");
  y := u/2;
end half;
model A
  parameter Real p = half(-1);
  Real y = p*time;
end A;
",
    );
    let (_, err, code) = mocca(&["check", file.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("u must be positive"), "{err}");
}

const RECORDS: &str = "record Medium
  parameter Real rho = 1;
  parameter Real cp = 2;
end Medium;
record Water
  extends Medium(rho = 995.6, cp = 4177);
end Water;
model Pipe
  parameter Medium medium;
  Real q = medium.rho*medium.cp*time;
end Pipe;
model R
  parameter Medium water = Water();
  parameter Medium custom = Medium(cp = 7);
  parameter Medium positional = Medium(3, 4);
  Pipe pipe(medium = water);
  Pipe other(medium = custom, medium(rho = 5));
  Real a = positional.rho + positional.cp;
end R;
";

#[test]
fn record_values_bind_every_field() {
    let c = columns("records", RECORDS, &["--stop", "1"]);
    let last = c["time"].len() - 1;
    let t = c["time"][last];
    assert!((c["pipe.q"][last] - 995.6 * 4177.0 * t).abs() < 1e-6);
    // `medium(rho = 5)` written on the field wins over the record's value.
    assert!((c["other.q"][last] - 5.0 * 7.0 * t).abs() < 1e-9);
    assert_eq!(c["a"][last], 7.0);
}

/// Records as function inputs, outputs and protected variables, nested and with array
/// fields: read field by field, assigned whole or by field, built by constructors, returned
/// to a record's binding and to a record equation (Modelica 12.6, 10.6.2).
const RECORDS_IN_FUNCTIONS: &str = "package P
  record Brush
    parameter Real V = 2;
    parameter Real ILinear = 0.5;
  end Brush;
  record Pair
    Real a;
    Real b[2];
    Brush brush;
  end Pair;
  function drop
    input Brush p;
    input Real i;
    output Real v;
  algorithm
    v := if i > p.ILinear then p.V else if i < -p.ILinear then -p.V else p.V*i/p.ILinear;
  end drop;
  function makePair
    input Real x;
    output Pair q;
  protected
    Brush br;
  algorithm
    br := Brush(V = 3*x);
    q.a := x^2;
    q.b := {x, 2*x};
    q.brush := br;
  end makePair;
  function sumPair
    input Pair q;
    output Real s;
  algorithm
    s := q.a + q.b[1] + q.b[2] + q.brush.V + q.brush.ILinear;
  end sumPair;
  record Sample
    Real a;
    Real b[2];
  end Sample;
  function sample
    input Real x;
    output Sample q;
  protected
    Pair pair;
  algorithm
    pair := makePair(x);
    q := Sample(a = pair.a, b = pair.b);
  end sample;
  function split
    input Real x;
    output Sample q;
    output Real twice;
  algorithm
    q := sample(x);
    twice := 2*x;
  end split;
  model M
    parameter Brush brush(V = 1);
    parameter Pair pp = makePair(2);
    Sample varying;
    Sample second;
    Sample copy;
    Real twice;
    Real x(start = 0, fixed = true);
    Real v;
    Real s;
  equation
    der(x) = 1;
    v = drop(brush, x - 1);
    s = sumPair(makePair(x));
    varying = sample(x);
    copy = varying;
    (second, twice) = split(x + 1);
  end M;
end P;
";

#[test]
fn records_are_function_inputs_outputs_and_locals() {
    let args = ["--model", "P.M", "--stop", "2", "--step", "0.25"];
    let c = columns("records_in_functions", RECORDS_IN_FUNCTIONS, &args);
    for (k, &t) in c["time"].iter().enumerate() {
        let x = t;
        let i = x - 1.0;
        let v = if i > 0.5 {
            1.0
        } else if i < -0.5 {
            -1.0
        } else {
            i / 0.5
        };
        assert!((c["v"][k] - v).abs() < 1e-12, "v at {t}: {}", c["v"][k]);
        let s = x * x + 6.0 * x + 0.5;
        assert!((c["s"][k] - s).abs() < 1e-9, "s at {t}: {}", c["s"][k]);
        assert!((c["varying.b[2]"][k] - 2.0 * x).abs() < 1e-12);
        assert!((c["varying.a"][k] - x * x).abs() < 1e-12);
        assert_eq!(c["copy.b[2]"][k], c["varying.b[2]"][k]);
        assert!((c["second.a"][k] - (x + 1.0).powi(2)).abs() < 1e-9);
        assert!((c["twice"][k] - 2.0 * (x + 1.0)).abs() < 1e-12);
    }
    let last = c["time"].len() - 1;
    assert_eq!(c["pp.a"][last], 4.0);
    assert_eq!(c["pp.b[2]"][last], 4.0);
    assert_eq!(c["pp.brush.V"][last], 6.0);
    // Not assigned by `makePair`: the field's declared default.
    assert_eq!(c["pp.brush.ILinear"][last], 0.5);
}

/// What records in functions do not cover yet is an error at its span.
#[test]
fn records_in_functions_that_are_not_covered_are_errors() {
    let cases = [
        (
            "record_array",
            "record R Real a; end R;\nfunction f input Real x; output Real y; protected R r[2]; algorithm y := x; end f;\nmodel M Real y = f(time); end M;\n",
            "arrays of records in functions",
        ),
        (
            "record_as_number",
            "record R Real a; end R;\nfunction f input Real x; output R r; algorithm r.a := x; end f;\nmodel M Real y = f(time); end M;\n",
            "returns a record",
        ),
        (
            "no_such_field",
            "record R Real a; end R;\nfunction f input R r; output Real y; algorithm y := r.b; end f;\nmodel M R r(a = 1); Real y = f(r); end M;\n",
            "not a field of this record",
        ),
    ];
    for (name, text, expected) in cases {
        let file = model_file(name, text);
        let (_, err, code) = mocca(&["check", file.to_str().expect("utf-8")]);
        assert_eq!(code, 1, "{name}: {err}");
        assert!(err.contains(expected), "{name}: {err}");
    }
}

#[test]
fn a_matrix_constructor_takes_vectors_as_columns() {
    let text = "model M
  parameter Real t[:] = {2, 4, 6, 8};
  parameter Integer n = size(t, 1);
  parameter Real a[:, 2] = [t[1], 0; t, {mod(i, 2.0) for i in 1:n}];
  parameter Real b[2, 3] = [[1, 2; 3, 4], {5, 6}];
  Real s = a[1, 1] + 10*a[3, 1] + 100*a[5, 2] + 1000*b[2, 3];
end M;
";
    let c = columns("matrix", text, &["--stop", "1"]);
    assert_eq!(c["s"][0], 2.0 + 10.0 * 4.0 + 0.0 + 6000.0);
    let file = model_file(
        "ragged",
        "model G\n  Real a[2, 2] = [1, 2; {3, 4}];\nend G;\n",
    );
    let (_, err, code) = mocca(&["check", file.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{err}");
}

/// `parameter Real p(fixed = false)` is found by the initial system: the mean of two
/// temperatures, the `TwoMasses` example's projected final temperature.
#[test]
fn a_free_parameter_is_solved_at_the_start_and_stays_constant() {
    let text = "model Two
  parameter Real mean(fixed = false);
  Real a(start = 100, fixed = true), b(start = 0, fixed = true);
equation
  der(a) = b - a;
  der(b) = a - b;
initial equation
  mean = (a + b)/2;
end Two;
";
    let c = columns("free", text, &["--stop", "2"]);
    assert!(
        c["mean"].iter().all(|&m| (m - 50.0).abs() < 1e-9),
        "{:?}",
        &c["mean"][..3]
    );
}

#[test]
fn an_under_determined_start_fixes_unwritten_states_with_a_warning() {
    let file = model_file(
        "under",
        "model U
  Real a(start = 3), b(start = 1, fixed = false);
equation
  der(a) = -a;
  der(b) = a - b;
initial equation
  b = 2;
end U;
",
    );
    let path = file.to_str().expect("utf-8");
    let (csv, err, code) = simulate_csv("under", &["simulate", path, "--stop", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("`a` fixed at their start values"), "{err}");
    let c = csv_columns(&csv);
    assert_eq!((c["a"][0], c["b"][0]), (3.0, 2.0));
}

/// `v = R(T)·i` with `R` and `i` starting at 0 has a singular Jacobian at the guess; Newton
/// steps off it and finds the solution.
#[test]
fn newton_steps_off_a_singular_guess() {
    let text = "model Heated
  Real R, i, T;
  Real v = 10*sin(time) + 1;
equation
  R = 100*(1 + 0.001*(T - 293));
  v = R*i;
  T = 293 + 50*i*v;
end Heated;
";
    let c = columns("heated", text, &["--stop", "1"]);
    let rows = c["R"].iter().zip(&c["i"]).zip(c["T"].iter().zip(&c["v"]));
    for ((&r, &i), (&t, &v)) in rows {
        assert!((v - r * i).abs() < 1e-8 && (r - 100.0 * (1.0 + 0.001 * (t - 293.0))).abs() < 1e-8);
    }
}

/// A conditional input relayed through a protected input, as the standard library's
/// sources write it: the relay is not a second source of its set.
#[test]
fn a_protected_relay_input_is_not_a_second_source() {
    let text = "connector RealInput = input Real;
connector RealOutput = output Real;
block Source
  RealOutput y = 2*time;
end Source;
block Gain
  parameter Boolean useInput = true;
  RealInput u if useInput;
  RealOutput y;
protected
  RealInput u_internal;
equation
  connect(u, u_internal);
  if not useInput then
    u_internal = 1;
  end if;
  y = 3*u_internal;
end Gain;
model Top
  Source s;
  Gain g;
equation
  connect(s.y, g.u);
end Top;
";
    let c = columns("relay", text, &["--stop", "1"]);
    for (k, &t) in c["time"].iter().enumerate() {
        assert!((c["g.y"][k] - 6.0 * t).abs() < 1e-12);
    }
}

/// The standard library's tables, their C functions written in Rust: linear and constant
/// segments extrapolated on the line through the last two points, a 1-D table of `2t`.
#[test]
fn the_standard_librarys_tables_interpolate_their_matrix() {
    let msl = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/msl");
    if !msl.is_dir() {
        eprintln!("skipped: no ../shared/msl");
        return;
    }
    let text = "model Tab
  Modelica.Blocks.Sources.CombiTimeTable lin(table = [0, 0; 1, 1; 2, 4; 3, 9],
    extrapolation = Modelica.Blocks.Types.Extrapolation.LastTwoPoints);
  Modelica.Blocks.Sources.CombiTimeTable steps(table = [0, 0; 1, 1; 2, 4; 3, 9],
    smoothness = Modelica.Blocks.Types.Smoothness.ConstantSegments);
  Modelica.Blocks.Tables.CombiTable1Ds curve(table = [0, 0; 1, 1; 2, 4; 3, 9]);
equation
  curve.u = 2*time;
  annotation(uses(Modelica(version = \"4.0.0\")));
end Tab;
";
    let lib = msl.to_str().expect("utf-8");
    let vars = "lin.y[1],steps.y[1],curve.y[1]";
    let args = [
        "--lib", lib, "--model", "Tab", "--stop", "4", "--step", "0.01", "--vars", vars,
    ];
    let c = columns("tables", text, &args);
    let (xs, ys) = ([0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 4.0, 9.0]);
    let times = &c["time"];
    for (k, &t) in times.iter().enumerate() {
        if times.get(k + 1) == Some(&t) {
            continue; // an event's left limit: the row after it holds the value from there on
        }
        let step = if t > 3.0 {
            9.0 + 5.0 * (t - 3.0)
        } else {
            ys[t.floor() as usize]
        };
        assert!(
            (c["lin.y[1]"][k] - piecewise(&xs, &ys, t)).abs() < 1e-9,
            "lin at {t}"
        );
        assert!((c["steps.y[1]"][k] - step).abs() < 1e-9, "steps at {t}");
        let u = 2.0 * t;
        assert!(
            (c["curve.y[1]"][k] - piecewise(&xs, &ys, u)).abs() < 1e-9,
            "curve at {u}"
        );
    }
}

/// The cubic Hermite interpolant on `[x0, x1]` with values `y0, y1` and slopes `m0, m1`, by
/// the Hermite basis.
fn hermite((x0, x1): (f64, f64), (y0, y1): (f64, f64), (m0, m1): (f64, f64), x: f64) -> f64 {
    let h = x1 - x0;
    let s = (x - x0) / h;
    let (s2, s3) = (s * s, s * s * s);
    (2.0 * s3 - 3.0 * s2 + 1.0) * y0
        + (s3 - 2.0 * s2 + s) * h * m0
        + (-2.0 * s3 + 3.0 * s2) * y1
        + (s3 - s2) * h * m1
}

/// A table with `ContinuousDerivative` smoothness is Akima's spline: through
/// (0, 0), (1, 0), (2, 1), (3, 1) the secants are 0, 1, 0, and Akima's rule (with the secants
/// continued past the ends) gives the slopes −½, ½, ½, −½ by hand. Beyond the ends the
/// last-two-points extrapolation follows the tangent there.
#[test]
fn a_continuous_derivative_table_is_akimas_spline() {
    let msl = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/msl");
    if !msl.is_dir() {
        eprintln!("skipped: no ../shared/msl");
        return;
    }
    let text = "model Akima
  Modelica.Blocks.Tables.CombiTable1Ds curve(table = [0, 0; 1, 0; 2, 1; 3, 1],
    smoothness = Modelica.Blocks.Types.Smoothness.ContinuousDerivative,
    extrapolation = Modelica.Blocks.Types.Extrapolation.LastTwoPoints);
equation
  curve.u = time - 0.5;
  annotation(uses(Modelica(version = \"4.0.0\")));
end Akima;
";
    let lib = msl.to_str().expect("utf-8");
    let args = [
        "--lib",
        lib,
        "--model",
        "Akima",
        "--stop",
        "4",
        "--step",
        "0.125",
        "--vars",
        "curve.y[1]",
    ];
    let c = columns("akima", text, &args);
    let (xs, ys, ms) = (
        [0.0, 1.0, 2.0, 3.0],
        [0.0, 0.0, 1.0, 1.0],
        [-0.5, 0.5, 0.5, -0.5],
    );
    for (k, &t) in c["time"].iter().enumerate() {
        let u: f64 = t - 0.5;
        let expected = match u {
            u if u < 0.0 => ys[0] + ms[0] * u,
            u if u > 3.0 => ys[3] + ms[3] * (u - 3.0),
            u => {
                let i = (u.floor() as usize).min(2);
                hermite(
                    (xs[i], xs[i + 1]),
                    (ys[i], ys[i + 1]),
                    (ms[i], ms[i + 1]),
                    u,
                )
            }
        };
        let y = c["curve.y[1]"][k];
        assert!(
            (y - expected).abs() < 1e-12,
            "at u = {u}: {y}, expected {expected}"
        );
    }
}

/// `x[i]` with an Integer subscript that changes during the run (Modelica 10.5): the element
/// the subscript names at each instant.
#[test]
fn a_subscript_that_varies_selects_its_element_at_each_instant() {
    let text = "model Pick
  Real x[3] = {10*time, 20*time, 30*time};
  Integer i = if time < 1 then 1 elseif time < 2 then 2 else 3;
  Real y = x[i];
end Pick;
";
    let c = columns("pick", text, &["--stop", "3", "--step", "0.25"]);
    let times = &c["time"];
    for (k, &t) in times.iter().enumerate() {
        if times.get(k + 1) == Some(&t) {
            continue; // an event's left limit
        }
        let i = if t < 1.0 {
            1.0
        } else if t < 2.0 {
            2.0
        } else {
            3.0
        };
        assert!(
            (c["y"][k] - 10.0 * i * t).abs() < 1e-9,
            "y({t}) = {}",
            c["y"][k]
        );
    }
}

/// A function whose output size and recursion follow an Integer parameter, as the standard
/// library's `symmetricOrientation(m)`: the Integer argument is taken at its value, so the
/// branches for other phase counts (which index out of range) are not followed.
#[test]
fn an_integer_argument_of_parameters_decides_sizes_branches_and_recursion() {
    let model = "model Orient
  function orientation
    input Integer m;
    output Real o[m];
  algorithm
    if mod(m, 2) == 0 then
      if m == 2 then
        o[1] := 0;
        o[2] := 0.5;
      else
        o[1:integer(m/2)] := orientation(integer(m/2));
        o[integer(m/2) + 1:m] := orientation(integer(m/2)) - fill(1/m, integer(m/2));
      end if;
    else
      o := {(k - 1)*2/m for k in 1:m};
    end if;
  end orientation;
  parameter Integer m = 6;
  parameter Real p[m] = orientation(m);
  Real x[m](each start = 0, each fixed = true);
equation
  der(x) = p;
end Orient;
";
    // m = 6: the first half is orientation(3) = (0, 2/3, 4/3), the second that less 1/6.
    let third = 2.0 / 3.0;
    let expected = [
        0.0,
        third,
        2.0 * third,
        -1.0 / 6.0,
        third - 1.0 / 6.0,
        2.0 * third - 1.0 / 6.0,
    ];
    let c = columns("orient", model, &["--stop", "1", "--step", "0.5"]);
    for (k, want) in expected.iter().enumerate() {
        let x = *c[&format!("x[{}]", k + 1)].last().expect("rows");
        assert!(
            (x - want).abs() < 1e-12,
            "x[{}] = {x}, expected {want}",
            k + 1
        );
    }
}

/// String parameters choose structure: compared with literals and with each other in a
/// conditional component's condition and in an if-equation, also through
/// `Modelica.Utilities.Strings.substring`.
#[test]
fn string_parameters_compared_at_translation_time_choose_the_structure() {
    let model = "model Terminal
  function substring
    input String string;
    input Integer startIndex;
    input Integer endIndex;
    output String result;
  external \"C\" result = ModelicaStrings_substring(string, startIndex, endIndex);
  end substring;
  model Part
    Real y;
  equation
    y = 1;
  end Part;
  parameter String group = \"Dy05\";
  parameter String first = substring(group, 1, 1);
  parameter String connection(start = \"D\");
  Part delta if connection <> \"Y\";
  Part star if first == \"Y\";
  Real z;
equation
  if first + \"x\" == \"Dx\" and connection >= \"D\" then
    z = 2;
  else
    z = 3;
  end if;
end Terminal;
";
    let file = cli_support::model_file("terminal", model);
    let (out, err, code) = mocca(&["flatten", file.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("delta.y"), "{out}");
    assert!(!out.contains("star.y"), "{out}");
    let c = columns("terminal", model, &["--stop", "1", "--step", "0.5"]);
    assert_eq!(c["z"].last().copied(), Some(2.0));
    // A String that is not known at translation time is named.
    let varying = model.replace(
        "parameter String connection(start = \"D\");",
        "String connection;",
    );
    let file = cli_support::model_file("terminal_varying", &varying);
    let (_, err, code) = mocca(&["check", file.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not known at translation time"), "{err}");
}

/// `Complex` arithmetic through its operator record (Modelica 14): `+`, `-`, `*`, `/`,
/// unary minus, a Real operand converted by `'constructor'`, a record `if`, a function of
/// a record (`ComplexMath.abs`) and a record equation, against complex arithmetic here.
#[test]
fn complex_arithmetic_runs_through_its_operator_record() {
    let Some(msl) = cli_support::msl_or_skip() else {
        return;
    };
    let text = "model CX
  Complex a = Complex(1, 2);
  Complex b(re = time, im = 1);
  Complex s = a + b;
  Complex p = a*b;
  Complex q = a/b;
  Complex n = -a - b;
  Complex r = 2*a;
  Complex c = if time > 0.6 then a else b;
  Complex e;
  Complex w;
  Real m = Modelica.ComplexMath.abs(p);
equation
  e = p*Complex(0, 1) + Complex(time);
algorithm
  w := a*b;
end CX;
";
    let lib = msl.to_str().expect("utf-8");
    let vars = "s.re,s.im,p.re,p.im,q.re,q.im,n.re,n.im,r.re,r.im,c.re,c.im,e.re,e.im,w.re,w.im,m";
    let args = [
        "--lib", lib, "--model", "CX", "--stop", "1", "--step", "0.25", "--vars", vars,
    ];
    let c = columns("complex", text, &args);
    let mul = |(a, b): (f64, f64), (x, y): (f64, f64)| (a * x - b * y, a * y + b * x);
    for (k, &t) in c["time"].iter().enumerate() {
        let (a, b) = ((1.0, 2.0), (t, 1.0));
        let p = mul(a, b);
        let d = t * t + 1.0;
        let q = ((a.0 * t + a.1) / d, (a.1 * t - a.0) / d);
        let chosen = if t > 0.6 { a } else { b };
        let e = mul(p, (0.0, 1.0));
        let expected = [
            ("s", (a.0 + b.0, a.1 + b.1)),
            ("p", p),
            ("q", q),
            ("n", (-a.0 - b.0, -a.1 - b.1)),
            ("r", (2.0, 4.0)),
            ("c", chosen),
            ("e", (e.0 + t, e.1)),
            ("w", p),
        ];
        for (name, (re, im)) in expected {
            let (got_re, got_im) = (c[&format!("{name}.re")][k], c[&format!("{name}.im")][k]);
            assert!(
                (got_re - re).abs() < 1e-12,
                "{name}.re at {t}: {got_re}, not {re}"
            );
            assert!(
                (got_im - im).abs() < 1e-12,
                "{name}.im at {t}: {got_im}, not {im}"
            );
        }
        assert!((c["m"][k] - p.0.hypot(p.1)).abs() < 1e-12);
    }
}

/// A connector declared as a short class of a record (`connector ComplexOutput = output
/// Complex`) is a connector, so `connect` joins its fields.
#[test]
fn a_connector_of_a_record_type_connects_its_fields() {
    let text = "record R Real a; Real b; end R;
connector RIn = input R;
connector ROut = output R;
block Src ROut y; equation y.a = time; y.b = 2; end Src;
block Sink RIn u; Real s = u.a + u.b; end Sink;
model M Src src; Sink sink; equation connect(src.y, sink.u); end M;
";
    let c = columns(
        "record_connector",
        text,
        &["--model", "M", "--stop", "1", "--step", "0.5"],
    );
    for (k, &t) in c["time"].iter().enumerate() {
        assert_eq!(c["sink.s"][k], t + 2.0, "at {t}");
    }
}

/// An array of records bound to an array of record constructors binds each element, also
/// through a record passed on whole (`Use u(cell = data)`).
#[test]
fn an_array_of_records_binds_each_element() {
    let text = "record RC parameter Real R = 1; parameter Real C = 1; end RC;
record Cell parameter RC rc[2] = {RC(R = 2), RC(C = 3)}; end Cell;
model Use parameter Cell cell; Real s = cell.rc[1].R + 10*cell.rc[2].C + 100*cell.rc[2].R; end Use;
model Top
  parameter Cell data(rc = {RC(R = 5), RC(R = 7, C = 9)});
  Use u(cell = data);
  Use plain;
end Top;
";
    let c = columns("record_arrays", text, &["--model", "Top", "--stop", "1"]);
    assert_eq!(c["u.s"][0], 5.0 + 10.0 * 9.0 + 100.0 * 7.0);
    assert_eq!(c["plain.s"][0], 2.0 + 10.0 * 3.0 + 100.0 * 1.0);
}

/// Arrays of `Complex` records in equations: an element's equation (`c[i] = Complex(…)`),
/// a whole array bound to an array constructor with an iterator over a package's record
/// constant (`{i*(j*w)^(i-1) for i in 1:3}`, `j` the imaginary unit of
/// `Modelica.ComplexMath`), a field across the array (`sum(c.re)`), and a record
/// equation of arrays (`e = d`); against complex arithmetic by hand.
#[test]
fn arrays_of_records_take_equations_element_by_element() {
    let Some(msl) = cli_support::msl_or_skip() else {
        return;
    };
    let text = "model AR
  import Modelica.ComplexMath.j;
  Complex c[3];
  Complex d[3];
  Complex e[3];
  Real s;
  Real w = 1 + time;
equation
  for i in 1:3 loop
    c[i] = Complex(i*w, 1);
  end for;
  d = {i*(j*w)^(i-1) for i in 1:3};
  e = d;
  s = sum(c.re) + sum(d.im);
end AR;
";
    let lib = msl.to_str().expect("utf-8");
    let c = columns(
        "record_array_equations",
        text,
        &["--lib", lib, "--stop", "1"],
    );
    for (k, &w) in c["w"].iter().enumerate() {
        // i·(jw)^(i−1): 1, 2jw, −3w².
        let d = [(1.0, 0.0), (0.0, 2.0 * w), (-3.0 * w * w, 0.0)];
        for (i, (re, im)) in d.iter().enumerate() {
            let at = |field: &str| c[&format!("e[{}].{field}", i + 1)][k];
            assert!(
                (at("re") - re).abs() < 1e-9 && (at("im") - im).abs() < 1e-9,
                "e[{}]",
                i + 1
            );
            assert_eq!(c[&format!("c[{}].re", i + 1)][k], (i + 1) as f64 * w);
        }
        let s = 6.0 * w + 2.0 * w;
        assert!((c["s"][k] - s).abs() < 1e-9, "s = {} at w = {w}", c["s"][k]);
    }
}

/// Relations of operator records call their overloaded operators (`'=='`, `'<>'` of
/// `Complex`, Modelica 14.3): Booleans, true where the fields agree. The model has no
/// `uses` and no import: `Complex` is found in the library path by its name.
#[test]
fn a_relation_of_operator_records_calls_its_operator() {
    let Some(msl) = cli_support::msl_or_skip() else {
        return;
    };
    let text = "model EQ
  Complex a = Complex(1, 2);
  Complex b(re = time, im = 2);
  Boolean same = a == b;
  Boolean differ = a <> b;
  Boolean never = a == Complex(1, -2);
end EQ;
";
    let lib = msl.to_str().expect("utf-8");
    let args = ["--lib", lib, "--stop", "2", "--step", "0.25"];
    let c = columns("record_relations", text, &args);
    for (k, &t) in c["time"].iter().enumerate() {
        let same = if t == 1.0 { 1.0 } else { 0.0 };
        assert_eq!((c["same"][k], c["differ"][k]), (same, 1.0 - same), "at {t}");
        assert_eq!(c["never"][k], 0.0);
    }
}

/// The cube root by Newton's iteration to a tolerance: a `while` whose turns depend on the
/// state, which no inlining can follow, so the function is kept as code.
const CUBE_ROOT: &str = include_str!("data/cube_root.mo");

/// The same root as the largest real root of a polynomial given by its coefficients (an
/// input of unknown size), Horner's scheme inside Newton's iteration.
const POLY_ROOT: &str = "function polyRoot
  input Real c[:];
  input Real x0;
  output Real x;
protected
  Real p = 1;
  Real dp;
algorithm
  x := x0;
  while abs(p) > 1e-12 loop
    p := 0;
    dp := 0;
    for i in 1:size(c, 1) loop
      dp := dp*x + p;
      p := p*x + c[i];
    end for;
    x := x - p/dp;
  end while;
end polyRoot;
";

/// `der(x) = −∛x` from `x(0) = 8`: `x(t) = (4 − 2t/3)^(3/2)`.
fn cube_root_decay(t: f64) -> f64 {
    (4.0 - 2.0 * t / 3.0).powf(1.5)
}

/// The root again as a record's field: Newton on `p·T³ = a` inside a function taking and
/// returning a record (a protected record's field default starts it), with `p = 1`.
const RECORD_ROOT: &str = "record State
  Real p;
  Real T;
  Real v[2];
end State;
record Guess
  Real T = 1;
end Guess;
function solveT
  input State s;
  input Real a;
  output State r;
  output Integer iterations;
protected
  Real err;
  Guess g;
algorithm
  r := s;
  r.T := g.T;
  err := r.p*r.T^3 - a;
  iterations := 0;
  while abs(err) > 1e-12 loop
    r.T := r.T - err/(3*r.p*r.T^2);
    err := r.p*r.T^3 - a;
    iterations := iterations + 1;
  end while;
  r.v := {r.T, 2*r.T};
end solveT;
model Decay
  Real x(start = 8, fixed = true);
  Real r;
  State s0(p = 1, T = 0, v = {0, 0});
  State s1;
  Integer n;
equation
  (s1, n) = solveT(s0, x);
  r = s1.v[2]/2;
  der(x) = -r;
end Decay;
";

/// The models of the three root finders: `der(x) = −root`.
fn root_models() -> [(&'static str, String); 3] {
    let model = |function: &str, call: &str| {
        format!(
            "{function}
model Decay
  Real x(start = 8, fixed = true);
  Real r;
equation
  r = {call};
  der(x) = -r;
end Decay;
"
        )
    };
    [
        ("cube_root", model(CUBE_ROOT, "cubeRoot(x)")),
        ("poly_root", model(POLY_ROOT, "polyRoot({1, 0, 0, -x}, 2)")),
        ("record_root", RECORD_ROOT.to_string()),
    ]
}

#[test]
fn an_iterative_function_is_kept_as_code_and_follows_the_exact_solution() {
    for (name, text) in root_models() {
        let c = columns(
            name,
            &text,
            &["--method", "bdf", "--tol", "1e-10", "--stop", "3"],
        );
        for (k, (&t, &x)) in c["time"].iter().zip(&c["x"]).enumerate() {
            let exact = cube_root_decay(t);
            assert!(
                (x - exact).abs() < 1e-6,
                "{name}: x({t}) = {x}, exact {exact}"
            );
            assert!((c["r"][k] - x.cbrt()).abs() < 1e-9, "{name}: r = ∛x at {t}");
        }
    }
}

/// The symbolic Jacobian differentiates a kept call through its tangent function: exactly
/// `−1/(3∛x²)`, and within truncation of a central difference of the closed form.
#[test]
fn the_jacobian_of_a_kept_call_is_exact() {
    for (name, text) in root_models() {
        let file = model_file(name, &text);
        let json = cli_support::mocca_json(&[
            "jacobian",
            file.to_str().expect("utf-8"),
            "--format",
            "json",
        ]);
        let value = json["entries"][0]["value"].as_f64().expect("an entry");
        let rhs = |x: f64| -x.cbrt();
        let h = 1e-5;
        let difference = (rhs(8.0 + h) - rhs(8.0 - h)) / (2.0 * h);
        assert!((value + 1.0 / 12.0).abs() < 1e-13, "{name}: {value}");
        assert!(
            (value - difference).abs() < 1e-9,
            "{name}: {value} vs {difference}"
        );
        assert!(
            json["entries"][0]["expr"]
                .as_str()
                .is_some_and(|e| e.contains(".tangent("))
        );
    }
}

/// A recursion on a varying value: kept as code, it calls itself at run time.
#[test]
fn a_recursion_on_a_varying_value_calls_itself() {
    let text = "function tri
  input Real x;
  output Real y;
algorithm
  if x <= 0 then
    y := 0;
  else
    y := x + tri(x - 1);
  end if;
end tri;
model R
  Real y;
equation
  y = tri(0.5 + 3*time);
end R;
";
    let c = columns("recursion", text, &["--stop", "2", "--step", "0.01"]);
    for (&t, &y) in c["time"].iter().zip(&c["y"]) {
        let x = 0.5 + 3.0 * t;
        let brute: f64 = (0..).map(|k| x - k as f64).take_while(|&v| v > 0.0).sum();
        assert!(
            (y - brute).abs() < 1e-12,
            "tri({x}) = {y}, brute force {brute}"
        );
    }
}

/// A table search over more entries than inlining follows: the kept function reads the
/// table at varying subscripts and interpolates as the closed form does.
#[test]
fn a_search_over_a_long_table_is_kept_as_code() {
    let n = 300;
    let xs: Vec<f64> = (0..n).map(|k| k as f64 / 30.0).collect();
    let ys: Vec<f64> = xs.iter().map(|x| x.sin()).collect();
    let rows: Vec<String> = (xs.iter().zip(&ys))
        .map(|(x, y)| format!("{x:?}, {y:?}"))
        .collect();
    let text = format!(
        "{INTERPOLATE}
model T
  parameter Real tab[:, 2] = [{}];
  Real x(start = -1, fixed = true);
  Real y;
equation
  der(x) = 1;
  y = interp(tab[:, 1], tab[:, 2], x);
end T;
",
        rows.join("; ")
    );
    let c = columns("long_table", &text, &["--stop", "12", "--step", "0.05"]);
    for (&x, &y) in c["x"].iter().zip(&c["y"]) {
        let expected = piecewise(&xs, &ys, x);
        assert!(
            (y - expected).abs() < 1e-12,
            "y({x}) = {y}, expected {expected}"
        );
    }
}

/// A kept function's `assert` failing at run time fails the step at the calling equation,
/// with a note naming the function; no result is written.
#[test]
fn a_failed_assert_in_a_kept_function_is_an_error_naming_it() {
    let text = "model Halves
  function g
    input Real a;
    output Real y;
  algorithm
    y := a;
    while y > 1 loop
      y := y/2;
    end while;
    assert(y > 0.6, \"y too small\");
  end g;
  Real x(start = 5, fixed = true);
equation
  der(x) = -g(x);
end Halves;
";
    let file = model_file("kept_assert", text);
    let out = cli_support::temp_path("kept_assert.csv");
    let _ = std::fs::remove_file(&out);
    let (_, err, code) = mocca(&[
        "simulate",
        file.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("der(x) = -g(x)"), "{err}");
    assert!(err.contains("`Halves.g`, kept as code"), "{err}");
    assert!(!out.exists(), "nothing written");
}

/// The standard library's xorshift64*, xorshift128+ and xorshift1024* (their C functions
/// written in Rust) draw the reference's numbers to the last bit: the reference of
/// `GenerateRandomNumbers` has its first draw at time 0 (its tool fires `sample(0, T)` after
/// initialization, where mocca follows Modelica 8.6 and fires nothing), so our draw at
/// `k·T` is its draw at `(k − 1)·T`.
#[test]
fn the_standard_librarys_random_generators_draw_the_reference_numbers() {
    let (Some(msl), Some(reference)) = (cli_support::msl(), msl_reference_csv()) else {
        eprintln!("skipped: no ../shared/msl or its reference results");
        return;
    };
    let lib = msl.to_str().expect("utf-8");
    let text = include_str!("data/random_generators.mo");
    let args = [
        "--lib",
        lib,
        "--stop",
        "1",
        "--step",
        "0.05",
        "--vars",
        "r64,r128,r1024",
    ];
    let ours = columns("random_generators", text, &args);
    let expected = csv_columns(&reference);
    // The value after each instant's event: the last row at that time.
    let after = |c: &std::collections::BTreeMap<String, Vec<f64>>, name: &str, t: f64| {
        let rows = c["time"].iter().zip(&c[name]);
        let at: Vec<f64> = rows
            .filter(|(s, _)| (**s - t).abs() < 1e-9)
            .map(|(_, v)| *v)
            .collect();
        *at.last().unwrap_or_else(|| panic!("no row at {t}"))
    };
    for name in ["r64", "r128", "r1024"] {
        for k in 1..=20 {
            let t = 0.05 * k as f64;
            let (got, want) = (after(&ours, name, t), after(&expected, name, t - 0.05));
            assert_eq!(got, want, "{name} at {t}");
            assert!(got > 0.0 && got < 1.0);
        }
    }
}

fn msl_reference_csv() -> Option<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/msl-reference/Modelica.Math.Random.Examples.GenerateRandomNumbers");
    let text = std::fs::read_to_string(dir.join("reference.csv")).ok()?;
    Some(text.replace('"', ""))
}

/// A foreign function mocca implements, declared otherwise than it implements it (here its
/// outputs swapped), is an error naming both, not a call with its outputs mixed up.
#[test]
fn an_implemented_foreign_function_declared_otherwise_is_an_error() {
    let text = "model Swapped
  function draw
    input Integer stateIn[2];
    output Integer stateOut[2];
    output Real result;
    external \"C\" ModelicaRandom_xorshift64star(stateIn, stateOut, result);
  end draw;
  discrete Integer s[2](each start = 1, each fixed = true);
  discrete Real r(start = 0, fixed = true);
algorithm
  when sample(0.1, 0.1) then
    (s, r) := draw(pre(s));
  end when;
end Swapped;
";
    let file = model_file("native_declared_otherwise", text);
    let (out, err, code) = mocca(&["check", file.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("`Swapped.draw` calls `ModelicaRandom_xorshift64star`"),
        "{err}"
    );
    assert!(err.contains(":12:"), "{err}");
}

/// A kept function's `derivative` annotation (Modelica 12.7.1) is what the Jacobian
/// differentiates its calls by: here a derivative declared as twice the true one, so the
/// entry is −2/12 at x = 8, not the tangent's −1/12; `noDerivative` inputs pass no
/// differential. A derivative of the wrong inputs is an error at the annotation.
#[test]
fn a_declared_derivative_is_what_the_jacobian_calls() {
    let model = |derivative: &str, inputs: &str| {
        format!(
            "model Declared
  function cubeRoot
    input Real a;
    input Real scale;
    output Real y;
  protected
    Real err;
  algorithm
    y := 1;
    err := y^3 - a;
    while abs(err) > 1e-12 loop
      y := y - err/(3*y^2);
      err := y^3 - a;
    end while;
    y := scale*y;
    annotation({derivative});
  end cubeRoot;
  function cubeRootTwice
    {inputs}
    output Real dy;
  algorithm
    dy := 2*scale*da/(3*cubeRoot(a, 1)^2);
  end cubeRootTwice;
  Real x(start = 8, fixed = true);
equation
  der(x) = -cubeRoot(x, 1);
end Declared;
"
        )
    };
    let declared = model(
        "derivative(noDerivative = scale) = cubeRootTwice",
        "input Real a; input Real scale; input Real da;",
    );
    let file = model_file("declared_derivative", &declared);
    let path = file.to_str().expect("utf-8");
    let json = cli_support::mocca_json(&["jacobian", path, "--format", "json"]);
    let entry = &json["entries"][0];
    let value = entry["value"].as_f64().expect("an entry");
    assert!((value + 2.0 / 12.0).abs() < 1e-12, "{entry}");
    assert!(
        entry["expr"]
            .as_str()
            .is_some_and(|e| e.contains("cubeRootTwice")),
        "{entry}"
    );
    // Without `noDerivative`, the derivative needs a differential of `scale` too.
    let wrong = model(
        "derivative = cubeRootTwice",
        "input Real a; input Real scale; input Real da;",
    );
    let file = model_file("declared_derivative_wrong", &wrong);
    let (out, err, code) = mocca(&["check", file.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("has 3 inputs; it needs 4"), "{err}");
    assert!(err.contains(":16:"), "{err}");
}

const FFT_DECAY: &str = include_str!("data/fft_decay.mo");

/// `realFFT`'s amplitudes and phases (degrees) of `u` by the definition of the discrete
/// Fourier transform, as the library normalises them: the mean first, |X|/nf after.
fn fft_by_definition(u: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let n = u.len();
    let nf = n / 2 + 1;
    let mean = u.iter().sum::<f64>() / n as f64;
    let (mut amplitudes, mut phases) = (vec![mean], vec![0.0]);
    for k in 1..nf {
        let (mut re, mut im) = (0.0, 0.0);
        for (j, v) in u.iter().enumerate() {
            let angle = -2.0 * std::f64::consts::PI * (j * k) as f64 / n as f64;
            re += (v - mean) * angle.cos();
            im += (v - mean) * angle.sin();
        }
        if 2 * k == n {
            im = 0.0;
        }
        amplitudes.push(re.hypot(im) / nf as f64);
        phases.push(im.atan2(re).to_degrees());
    }
    (amplitudes, phases)
}

fn fft_decay_signal(x: f64) -> Vec<f64> {
    (1..=20)
        .map(|i| x * (0.3 * i as f64).sin() + 0.1 * i as f64)
        .collect()
}

/// `Modelica.Math.FastFourierTransform.realFFT` on a signal of a state: its foreign FFT
/// (`ModelicaFFT_kiss_fftr`, in Rust) gives the transform's definition at every output
/// time, and the Jacobian differentiates through the FFT's tangent exactly (against a
/// central difference of the definition).
#[test]
fn the_fft_of_a_varying_signal_is_the_discrete_fourier_transform() {
    let Some(msl) = cli_support::msl_or_skip() else {
        return;
    };
    let lib = msl.to_str().expect("utf-8");
    let c = columns("fft_decay", FFT_DECAY, &["--lib", lib, "--stop", "1"]);
    for (k, &x) in c["x"].iter().enumerate().step_by(50) {
        let (amplitudes, phases) = fft_by_definition(&fft_decay_signal(x));
        for i in 0..11 {
            let (a, p) = (
                c[&format!("A[{}]", i + 1)][k],
                c[&format!("Phi[{}]", i + 1)][k],
            );
            assert!((a - amplitudes[i]).abs() < 1e-12, "A[{}] = {a}", i + 1);
            assert!((p - phases[i]).abs() < 1e-9, "Phi[{}] = {p}", i + 1);
        }
        assert_eq!(c["info"][k], 0.0);
    }
    let file = model_file("fft_decay", FFT_DECAY);
    let json = cli_support::mocca_json(&[
        "jacobian",
        file.to_str().expect("utf-8"),
        "--lib",
        lib,
        "--format",
        "json",
    ]);
    let value = json["entries"][0]["value"].as_f64().expect("an entry");
    let rhs = |x: f64| -fft_by_definition(&fft_decay_signal(x)).0[2];
    let h = 1e-6;
    let difference = (rhs(1.0 + h) - rhs(1.0 - h)) / (2.0 * h);
    assert!((value - difference).abs() < 1e-8, "{value} vs {difference}");
}

/// `f(u1, u2) = 1 + 2·u1 − u2 + u1·u2/2`, the function `tables_2d.mo` tabulates: bilinear,
/// so bilinear interpolation (and its extrapolation) of its grid is the function itself.
fn bilinear_f(u1: f64, u2: f64) -> f64 {
    1.0 + 2.0 * u1 - u2 + 0.5 * u1 * u2
}

/// The largest grid point at or below `v` (the grid's first below it).
fn grid_floor(grid: &[f64], v: f64) -> f64 {
    grid.iter()
        .rev()
        .copied()
        .find(|&g| g <= v)
        .unwrap_or(grid[0])
}

/// The standard library's 2-D tables (`CombiTable2Ds`, `CombiTable2Dv`, their C functions
/// written in Rust) on a grid of a bilinear function, against that function: bilinear
/// interpolation and `LastTwoPoints` extrapolation give it everywhere, `HoldLastPoint` at
/// the clamped inputs, `Periodic` at the wrapped ones, constant segments at the grid point
/// below inside the grid (bilinear outside); the grid's corners as `u_min`, `u_max`.
#[test]
fn two_dimensional_tables_interpolate_their_grid() {
    let Some(msl) = cli_support::msl_or_skip() else {
        return;
    };
    let lib = msl.to_str().expect("utf-8");
    let vars = "x,lin.y,hold.y,steps.y,wrap.y,vec.y[1],vec.y[2],lin.u_min[1],lin.u_max[2]";
    let text = include_str!("data/tables_2d.mo");
    let c = columns("tables_2d", text, &["--lib", lib, "--vars", vars]);
    let (g1, g2) = ([0.0, 1.0, 3.0], [-1.0, 0.0, 2.0, 5.0]);
    let clamp = |v: f64, g: &[f64]| v.clamp(g[0], g[g.len() - 1]);
    let wrap = |v: f64, g: &[f64]| {
        let period = g[g.len() - 1] - g[0];
        v - ((v - g[0]) / period).floor() * period
    };
    let times = &c["time"];
    let mut outside = 0;
    for (k, &t) in times.iter().enumerate() {
        if times.get(k + 1) == Some(&t) {
            continue; // an event's left limit (a periodic table's wrap)
        }
        let (u1, u2) = (c["x"][k], 2.0 * c["x"][k] - 1.0);
        let inside = (0.0..=3.0).contains(&u1) && (-1.0..=5.0).contains(&u2);
        outside += usize::from(!inside);
        let steps = if inside {
            bilinear_f(grid_floor(&g1, u1), grid_floor(&g2, u2))
        } else {
            bilinear_f(u1, u2)
        };
        let (w1, w2) = (wrap(u1, &g1), wrap(u2, &g2));
        let expected = [
            ("lin.y", bilinear_f(u1, u2)),
            ("vec.y[1]", bilinear_f(u1, u2)),
            ("vec.y[2]", bilinear_f(0.5, 4.0)),
            ("hold.y", bilinear_f(clamp(u1, &g1), clamp(u2, &g2))),
            ("steps.y", steps),
            ("wrap.y", bilinear_f(w1, w2)),
        ];
        for (name, value) in expected {
            assert!(
                (c[name][k] - value).abs() < 1e-9,
                "{name} at u = ({u1}, {u2}): {} vs {value}",
                c[name][k]
            );
        }
    }
    assert!(outside > 100, "the inputs leave the grid");
    assert_eq!((c["lin.u_min[1]"][0], c["lin.u_max[2]"][0]), (0.0, 5.0));
}

/// A 2-D table's spline (bivariate Akima) is refused, naming what is supported.
#[test]
fn a_two_dimensional_spline_table_is_an_error() {
    let Some(msl) = cli_support::msl_or_skip() else {
        return;
    };
    let text = "model S
  Modelica.Blocks.Tables.CombiTable2Ds t(table = [0, 1, 2; 1, 1, 2; 2, 3, 4],
    smoothness = Modelica.Blocks.Types.Smoothness.ContinuousDerivative);
equation
  t.u1 = time;
  t.u2 = time;
end S;
";
    let file = model_file("table_2d_spline", text);
    let lib = msl.to_str().expect("utf-8");
    let (_, err, code) = mocca(&["simulate", file.to_str().expect("utf-8"), "--lib", lib]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("bivariate Akima") && err.contains("LinearSegments"),
        "{err}"
    );
}

/// `Modelica.Blocks.Sources.TimeTable`, whose coefficients a `when` statement computes by a
/// function searching the table with a `while` loop over a subscript that varies (`table[next,
/// 1]`): inlined it cannot run, so it is kept as code. Its output is the piecewise linear
/// interpolation of the table, a jump at the repeated time, the last interval extended.
#[test]
fn a_time_table_searches_its_rows_in_a_kept_function() {
    let Some(msl) = cli_support::msl_or_skip() else {
        return;
    };
    let text = "model TT
  Modelica.Blocks.Sources.TimeTable tt(table = [0, 0; 1, 1; 2, 4; 2, 2; 3, 3], offset = 0.5);
end TT;
";
    let lib = msl.to_str().expect("utf-8");
    let args = [
        "--lib", lib, "--stop", "4", "--step", "0.01", "--vars", "tt.y",
    ];
    let c = columns("time_table", text, &args);
    let times = &c["time"];
    for (k, &t) in times.iter().enumerate() {
        if times.get(k + 1) == Some(&t) {
            continue; // an event's left limit
        }
        let expected = 0.5
            + match t {
                t if t < 1.0 => t,
                t if t < 2.0 => 1.0 + 3.0 * (t - 1.0),
                t => t,
            };
        assert!(
            (c["tt.y"][k] - expected).abs() < 1e-9,
            "tt.y({t}) = {}, expected {expected}",
            c["tt.y"][k]
        );
    }
}

/// The functions of `Modelica.Utilities.Strings` on strings known at translation time:
/// their values against the strings counted by hand (a size among them), and the String
/// results (`replace`, `repeat`) compared.
#[test]
fn the_string_utilities_evaluate_known_strings() {
    let Some(msl) = cli_support::msl_or_skip() else {
        return;
    };
    let lib = msl.to_str().expect("utf-8");
    let vars = "n,k,last,many,blank,same,order,y";
    let text = include_str!("data/string_functions.mo");
    let c = columns(
        "string_functions",
        text,
        &["--lib", lib, "--stop", "0.01", "--vars", vars],
    );
    let name = "Hello World";
    let expected = [
        ("n", name.len() as f64),
        ("k", 7.0),
        ("last", 8.0),
        ("many", 3.0),
        ("blank", 1.0),
        ("same", 1.0),
        ("order", 1.0),
        ("y", 1.0),
    ];
    for (var, value) in expected {
        assert_eq!(c[var][0], value, "{var}");
    }
}

/// The model of `tests/data/writes.mo` writing into a directory of its own, named `name`.
fn writes_model(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = cli_support::temp_path(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a directory to write into");
    let text = include_str!("data/writes.mo").replace("DIR", dir.to_str().expect("utf-8"));
    (model_file(name, &text), dir)
}

/// Little-endian doubles from `bytes`.
fn doubles(bytes: &[u8]) -> Vec<f64> {
    let eight = bytes.chunks_exact(8);
    eight
        .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect()
}

#[test]
fn writes_at_events_print_lines_and_store_a_mat_file() {
    let (model, dir) = writes_model("writes");
    let args = [
        "simulate",
        model.to_str().expect("utf-8"),
        "--method",
        "bdf",
    ];
    let (_, err, code) = mocca(&[&args[..], &["--tol", "1e-9", "--stop", "1.1"]].concat());
    assert_eq!(code, 0, "{err}");
    // x = exp(−t) at the samples 0.25, 0.5, 0.75, 1 (printf("%.4g") of each).
    let log = std::fs::read_to_string(dir.join("log.txt")).expect("the log was written");
    let expected = [
        "n = 1, x = 0.7788 (above half)",
        "n = 2, x = 0.6065 (above half)",
        "n = 3, x = 0.4724",
        "n = 4, x = 0.3679",
    ];
    assert_eq!(log.lines().collect::<Vec<_>>(), expected);
    // A level 5 MAT file: its header's version and byte order, the matrix [t, x; n, 2x] at
    // t = 0.5 column by column at its end.
    let mat = std::fs::read(dir.join("m.mat")).expect("the matrix was written");
    assert_eq!(&mat[124..128], &[0, 1, b'I', b'M']);
    assert_eq!(&mat[..10], b"MATLAB 5.0");
    let x = (-0.5f64).exp();
    let values = doubles(&mat[mat.len() - 32..]);
    for (got, want) in values.iter().zip([0.5, 2.0, x, 2.0 * x]) {
        assert!((got - want).abs() < 1e-6, "{values:?}");
    }
    // Run again, the log starts anew: the first sample removes it.
    let (_, err, code) = mocca(&[&args[..], &["--stop", "0.6"]].concat());
    assert_eq!(code, 0, "{err}");
    let log = std::fs::read_to_string(dir.join("log.txt")).expect("the log was written");
    assert_eq!(log.lines().count(), 2, "{log}");
}

#[test]
fn a_write_outside_a_when_or_reading_a_later_assignment_is_an_error() {
    let declared = include_str!("data/writes.mo")
        .split("model Writes")
        .next()
        .expect("functions");
    let outside =
        format!("{declared}model W\n  Real x = time;\nalgorithm\n  print(\"x\", \"\");\nend W;\n");
    let file = model_file("write_outside", &outside);
    let (_, err, code) = mocca(&["simulate", file.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("writes while the model runs"), "{err}");
    let later = format!(
        "{declared}model L\n  Integer n(start = 0, fixed = true);\nalgorithm\n  when sample(0.1, 0.1) then\n    print(\"n = \" + String(n), \"\");\n    n := pre(n) + 1;\n  end when;\nend L;\n"
    );
    let file = model_file("write_later", &later);
    let (_, err, code) = mocca(&["simulate", file.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("which a later statement of its `when` assigns"),
        "{err}"
    );
}

#[test]
fn the_library_s_fft_example_stores_its_amplitudes_and_phases() {
    let Some(msl) = cli_support::msl_or_skip() else {
        return;
    };
    let dir = cli_support::temp_path("real_fft1");
    std::fs::create_dir_all(&dir).expect("a directory");
    let csv = dir.join("out.csv");
    let model = "Modelica.Math.FastFourierTransform.Examples.RealFFT1";
    let lib = msl.to_str().expect("utf-8");
    let out = csv.to_str().expect("utf-8");
    // The example's 21 frequencies up to 4 Hz.
    let nfi = 21;
    let names = (1..=nfi).flat_map(|i| [format!("Ai[{i}]"), format!("Phii[{i}]")]);
    let vars = names.collect::<Vec<_>>().join(",");
    let args = [
        "simulate", "--model", model, "--lib", lib, "--method", "bdf", "--out", out, "--vars",
        &vars,
    ];
    let (_, err, code) = cli_support::mocca_in(&dir, &args);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("... FFT result computed at time = 5 s stored on file: "),
        "{err}"
    );
    let columns = csv_columns(&std::fs::read_to_string(&csv).expect("CSV"));
    // MAT format 4: five integers (type, rows, columns, imaginary, name length), the name,
    // the values column by column: rows [f, 0, 0; f, A, φ; f, 0, 0] per frequency.
    let mat = std::fs::read(dir.join("RealFFT1_resultFFT.mat")).expect("the FFT's file");
    let header: Vec<i32> = (mat[..20].chunks_exact(4))
        .map(|b| i32::from_le_bytes(b.try_into().expect("4 bytes")))
        .collect();
    assert_eq!(header, [0, 3 * nfi as i32, 3, 0, 4], "{header:?}");
    assert_eq!(&mat[20..24], b"FFT\0");
    let values = doubles(&mat[24..]);
    let rows = 3 * nfi;
    for i in 0..nfi {
        let amplitude = *columns[&format!("Ai[{}]", i + 1)].last().expect("a value");
        let phase = *columns[&format!("Phii[{}]", i + 1)]
            .last()
            .expect("a value");
        let middle = 3 * i + 1;
        assert_eq!(values[rows + middle], amplitude, "amplitude {i}");
        assert_eq!(values[2 * rows + middle], phase, "phase {i}");
        assert!((values[middle] - 4.0 * i as f64 / (nfi - 1) as f64).abs() < 1e-12);
    }
}
