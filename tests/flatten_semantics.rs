//! Flattening semantics on small inline models, each checked against hand-derived results.

use mocca::dae::{Dae, EquationOrigin, VarKind};
use mocca::diagnostics::render_plain;
use mocca::frontend::flatten_sources;
use mocca::source::SourceMap;
use mocca::structure;

fn flatten(text: &str, params: &[(&str, &str)]) -> Result<Dae, String> {
    let mut sources = SourceMap::new();
    let id = sources.add("test.mo", text);
    let params: Vec<(String, String)> = params
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    match flatten_sources(sources, &[id], None, &params) {
        Ok(flat) => Ok(flat.dae),
        Err((sources, diags)) => Err(render_plain(&sources, &diags)),
    }
}

/// Flattening `text` fails (`why` says why it should) with a message holding every one of
/// `parts` (words of the message, `test.mo:line:column` of its span).
fn assert_rejected(text: &str, why: &str, parts: &[&str]) {
    let err = flatten(text, &[]).expect_err(why);
    assert!(parts.iter().all(|part| err.contains(part)), "{err}");
}

/// Every equation as `lhs = rhs` text.
fn equations(dae: &Dae) -> Vec<String> {
    dae.equations
        .iter()
        .map(|e| format!("{} = {}", dae.show(e.lhs), dae.show(e.rhs)))
        .collect()
}

const PIN_LIB: &str = "
connector Pin Real v; flow Real i; end Pin;
partial model OnePort
  Pin p, n; Real v; Real i;
equation
  v = p.v - n.v; 0 = p.i + n.i; i = p.i;
end OnePort;
model Resistor extends OnePort; parameter Real R = 1; equation R*i = v; end Resistor;
model Capacitor extends OnePort(v(start = 0)); parameter Real C = 1; equation C*der(v) = i; end Capacitor;
model Ground Pin p; equation p.v = 0; end Ground;
model Source extends OnePort; parameter Real E = 1; equation v = E; end Source;
";

fn rc_ladder(weak: bool) -> String {
    let joint = if weak {
        "connect(R2.n(weak v), C2.p(weak i));"
    } else {
        "connect(R2.n, C2.p);"
    };
    format!(
        "{PIN_LIB}
model RC
  Source E; Resistor R1(R = 0.1), R2, R3; Capacitor C1, C2; Ground g;
equation
  connect(E.p, R1.p); connect(R1.n, C1.p); connect(C1.p, R2.p);
  {joint}
  connect(C2.p, R3.p);
  connect(E.n, g.p); connect(C1.n, g.p); connect(C2.n, g.p); connect(R3.n, g.p);
end RC;"
    )
}

#[test]
fn rc_ladder_counts_and_connection_equations() {
    let dae = flatten(&rc_ladder(false), &[]).unwrap();
    // 6 two-pin components × 6 unknowns + ground's 2 = 38; every pin is connected.
    assert_eq!(dae.unknowns(), 38);
    assert_eq!(dae.equations.len(), 38);
    assert_eq!(dae.count(VarKind::State), 2);
    assert_eq!(dae.count(VarKind::Parameter), 6);
    let eqs = equations(&dae);
    // Node C without weak: one set {R2.n, C2.p, R3.p}.
    assert!(
        eqs.contains(&"'R2.n.i' + 'C2.p.i' + 'R3.p.i' = 0.0".to_string()),
        "{eqs:#?}"
    );
    assert!(!eqs.iter().any(|e| e.contains("last(")));
    let s = structure::analyse(&dae).unwrap();
    assert_eq!(s.subsystems.len(), 1);
}

#[test]
fn weak_connection_keeps_sets_apart_as_spec_2_1_says() {
    let dae = flatten(&rc_ladder(true), &[]).unwrap();
    assert_eq!(
        dae.equations.len(),
        38,
        "weak does not change the equation count"
    );
    let eqs = equations(&dae);
    // SPEC §2.1: R2.n.v = C2.p.v (last), C2.p.i + R3.p.i + R2.n.i (last) = 0, C2.p.v = R3.p.v.
    assert!(
        eqs.contains(&"'R2.n.v' = last('C2.p.v')".to_string()),
        "{eqs:#?}"
    );
    assert!(
        eqs.contains(&"'C2.p.i' + 'R3.p.i' + last('R2.n.i') = 0.0".to_string()),
        "{eqs:#?}"
    );
    assert!(eqs.contains(&"'C2.p.v' = 'R3.p.v'".to_string()), "{eqs:#?}");
    let weak_origin = dae
        .equations
        .iter()
        .filter(|e| e.origin == EquationOrigin::WeakPotential)
        .count();
    assert_eq!(weak_origin, 1);
    let s = structure::analyse(&dae).unwrap();
    let mut groups: Vec<Vec<String>> = s
        .subsystems
        .iter()
        .map(|sub| {
            sub.states
                .iter()
                .map(|&v| dae.var(v).name.clone())
                .collect()
        })
        .collect();
    groups.sort();
    assert_eq!(
        groups,
        vec![vec!["C1.v".to_string()], vec!["C2.v".to_string()]]
    );
}

#[test]
fn weak_marks_on_the_same_kind_of_variable_are_an_error() {
    let text = rc_ladder(true).replace("C2.p(weak i)", "C2.p(weak v)");
    let err = flatten(&text, &[]).unwrap_err();
    assert!(
        err.contains("weak in the potential `v` on one side and in the flow `i`"),
        "{err}"
    );
    assert!(err.contains("test.mo:"), "points at the source: {err}");
}

#[test]
fn weak_declared_on_a_components_connector() {
    let text = format!(
        "{PIN_LIB}
model Left Pin p(weak v); Pin n; Resistor r; equation connect(r.p, p); connect(r.n, n); end Left;
model Right Pin p(weak i); Capacitor c; Ground g; equation connect(c.p, p); connect(c.n, g.p); end Right;
model Top Left l; Right r; Source s; Ground g;
equation connect(l.p, r.p); connect(s.p, l.n); connect(s.n, g.p);
end Top;"
    );
    let dae = flatten(&text, &[]).unwrap();
    let eqs = equations(&dae);
    assert!(
        eqs.contains(&"'l.p.v' = last('r.p.v')".to_string()),
        "{eqs:#?}"
    );
    // The internal connections of Left and Right are ordinary.
    assert!(
        eqs.iter().filter(|e| e.contains("last(")).count() == 2,
        "{eqs:#?}"
    );
}

#[test]
fn modifiers_outermost_wins() {
    let text = "
model Base parameter Real a = 1; parameter Real b = 2; parameter Real c = 3; end Base;
model Mid extends Base(a = 10, b = 20); end Mid;
model Top Mid m(a = 100); end Top;";
    let dae = flatten(text, &[]).unwrap();
    let value = |n: &str| {
        let v = dae.lookup(n).unwrap();
        dae.pool.as_const(dae.var(v).binding.unwrap()).unwrap()
    };
    assert_eq!(value("m.a"), 100.0, "use site beats extends");
    assert_eq!(value("m.b"), 20.0, "extends beats declaration");
    assert_eq!(value("m.c"), 3.0);
}

#[test]
fn parameter_override_resizes_arrays_and_loops() {
    let text = "
model H
  parameter Integer N = 3;
  Real T[N](each start = 1);
equation
  der(T[1]) = -T[1];
  for i in 2:N loop der(T[i]) = T[i-1] - T[i]; end for;
  annotation(experiment(StopTime = 1));
end H;";
    let dae = flatten(text, &[]).unwrap();
    assert_eq!(dae.count(VarKind::State), 3);
    let dae = flatten(text, &[("N", "7")]).unwrap();
    assert_eq!(dae.count(VarKind::State), 7);
    assert_eq!(dae.equations.len(), 7);
    assert_eq!(equations(&dae)[6], "der('T[7]') = 'T[6]' - 'T[7]'");
    let start = dae.var(dae.lookup("T[4]").unwrap()).start.unwrap();
    assert_eq!(dae.pool.as_const(start), Some(1.0));
}

#[test]
fn a_bad_override_used_in_several_places_is_reported_once_and_not_as_a_cycle() {
    let text = "
model H
  parameter Integer N = 3;
  Real a[N](each start = 1);
  Real b[N](each start = 1);
equation
  for i in 1:N loop der(a[i]) = -a[i]; der(b[i]) = -b[i]; end for;
end H;";
    let report = flatten(text, &[("N", "abc")]).unwrap_err();
    assert_eq!(report.matches("unknown name `abc`").count(), 1, "{report}");
    assert!(!report.contains("depends on itself"), "{report}");
}

#[test]
fn arrays_sum_and_matrix_vector_products_scalarise() {
    let text = "
model A
  parameter Real k[3] = {1, 2, 3};
  parameter Real M[2, 2] = [1, 2; 3, 4];
  Real x[2]; Real s;
equation
  x = M * {1, 1};
  s = sum(k) + x[end];
end A;";
    let dae = flatten(text, &[]).unwrap();
    let eqs = equations(&dae);
    assert_eq!(eqs.len(), 3);
    assert_eq!(eqs[0], "'x[1]' = 'M[1,1]' + 'M[1,2]'");
    assert_eq!(eqs[2], "s = 'k[1]' + 'k[2]' + 'k[3]' + 'x[2]'");
}

#[test]
fn if_equations_with_parameter_conditions_select_a_branch() {
    let text = "
model I
  parameter Boolean on = false; Real x; Real y;
equation
  if on then x = 1; else x = 2; end if;
  if time > 1 then y = x; else y = -x; end if;
end I;";
    let dae = flatten(text, &[]).unwrap();
    let eqs = equations(&dae);
    assert_eq!(eqs[0], "x = 2.0");
    assert_eq!(eqs[1], "if time > 1.0 then y - x else y + x = 0.0");
    let dae = flatten(text, &[("on", "true")]).unwrap();
    assert_eq!(equations(&dae)[0], "x = 1.0");
}

#[test]
fn unconnected_inside_flows_are_zero_and_outside_ones_take_a_minus_sign() {
    let text = format!(
        "{PIN_LIB}
model Sub Pin p; Pin n; Resistor r; equation connect(p, r.p); connect(r.n, n); end Sub;
model Top Sub s; Ground g; equation connect(s.n, g.p); end Top;"
    );
    let dae = flatten(&text, &[]).unwrap();
    let eqs = equations(&dae);
    assert!(
        eqs.contains(&"-'s.p.i' + 's.r.p.i' = 0.0".to_string()),
        "{eqs:#?}"
    );
    assert!(eqs.contains(&"'s.p.i' = 0.0".to_string()), "{eqs:#?}");
}

#[test]
fn user_errors_are_diagnostics_at_the_source() {
    let cases = [
        (
            "model M Real x; equation connect(x, x); end M;",
            "not a connector",
        ),
        (
            "model A protected Real x = 1; end A; model M A a; Real y = a.x; end M;",
            "`x` is protected",
        ),
        (
            "model M Integer i = 7 / 2; end M;",
            "a Real value cannot be given to an Integer",
        ),
        (
            "model M parameter Real p = q; parameter Real q = p; end M;",
            "depends on itself",
        ),
        (
            "connector C Real v; flow Real i; end C; model A C c; end A; model B A a; end B; model M B b; C c; equation connect(b.a.c, c); end M;",
            "cannot reach into a component's components",
        ),
        ("model M Real x; equation x = y; end M;", "unknown name `y`"),
        (
            "model B final parameter Real a = 1; end B; model M B b(a = 2); end M;",
            "`final`",
        ),
        (
            "model B Real a; end B; model M B b(c = 2); end M;",
            "has no element `c`",
        ),
        (
            "model M Real x; equation der(x) = sin(x, x); end M;",
            "takes 1 argument",
        ),
        (
            "model M parameter Integer n = -1; Real x[n]; end M;",
            "non-negative integer",
        ),
        (
            "model M Real x; equation x = f(1); end M;",
            "unknown function `f`",
        ),
        ("model M Foo x; end M;", "type `Foo` not found"),
    ];
    for (text, expected) in cases {
        let err = flatten(text, &[]).expect_err(text);
        assert!(
            err.contains(expected),
            "{text}: expected `{expected}` in\n{err}"
        );
        assert!(err.contains("test.mo:1:"), "{text}: no location in\n{err}");
    }
}

#[test]
fn flat_output_parses_back_to_the_same_dae() {
    for text in [rc_ladder(true), rc_ladder(false)] {
        let first = flatten(&text, &[]).unwrap();
        let printed = first.to_modelica();
        let second = flatten(&printed, &[]).unwrap();
        assert_eq!(printed, second.to_modelica());
        assert_eq!(first.variables.len(), second.variables.len());
        assert_eq!(equations(&first), equations(&second));
    }
}

#[test]
fn imports_of_every_form_resolve_types_and_constants() {
    let text = "
package Lib
  package Units type Len = Real(unit = \"m\"); type Tm = Real(unit = \"s\"); end Units;
  package Consts constant Real k = 4; end Consts;
end Lib;
model M
  import U = Lib.Units;
  import Lib.Consts;
  import Lib.Units.{Tm};
  U.Len a;
  Tm t;
  parameter Real c = Consts.k;
  parameter Real p = Modelica.Constants.pi;
  Modelica.Units.SI.Voltage v;
equation
  der(a) = c; t = time; v = p;
end M;";
    let dae = flatten(text, &[]).unwrap();
    let unit = |n: &str| dae.var(dae.lookup(n).unwrap()).unit.clone();
    assert_eq!(unit("a").as_deref(), Some("m"));
    assert_eq!(unit("t").as_deref(), Some("s"));
    assert_eq!(
        unit("v").as_deref(),
        Some("V"),
        "the bundled Modelica stand-in"
    );
    let value = |n: &str| {
        let v = dae.lookup(n).unwrap();
        dae.pool.as_const(dae.var(v).binding.unwrap())
    };
    assert_eq!(value("c"), Some(4.0));
    assert_eq!(value("p"), Some(std::f64::consts::PI));
    let star = "package Lib package Units type Len = Real(unit = \"m\"); end Units; end Lib;
model M import Lib.Units.*; Len x; equation x = 1; end M;";
    let dae = flatten(star, &[]).unwrap();
    assert_eq!(dae.var(dae.lookup("x").unwrap()).unit.as_deref(), Some("m"));
    let own =
        "package Modelica package Constants constant Real pi = 3; end Constants; end Modelica;
model M parameter Real p = Modelica.Constants.pi; end M;";
    let dae = flatten(own, &[]).expect("a user's Modelica package replaces the stand-in");
    assert_eq!(
        dae.pool
            .as_const(dae.var(dae.lookup("p").unwrap()).binding.unwrap()),
        Some(3.0)
    );
    let err = flatten("model M import Nowhere.T; T x; equation x = 1; end M;", &[]).unwrap_err();
    assert!(err.contains("type `T` not found"), "{err}");
}

#[test]
fn unsupported_constructs_matter_only_in_the_classes_a_model_uses() {
    let lib = "
package Lib
  function f input Real x; output Real y; algorithm y := x; end f;
  model Good Real x(start = 1); equation der(x) = -x; end Good;
  model Bad inner Real x; equation x = 1; end Bad;
end Lib;";
    let good = format!("{lib}\nmodel Top extends Lib.Good; end Top;");
    let dae = flatten(&good, &[]).unwrap();
    assert_eq!(dae.count(VarKind::State), 1);
    let bad = format!("{lib}\nmodel Top Lib.Bad b; end Top;");
    let err = flatten(&bad, &[]).unwrap_err();
    assert!(err.contains("`inner` is not supported"), "{err}");
    assert!(
        !err.contains("algorithm"),
        "the unused function is not reported: {err}"
    );
    assert_eq!(
        err.matches("error").count(),
        1,
        "no follow-on errors: {err}"
    );
}

#[test]
fn a_scalar_types_attributes_hold_for_each_element_of_an_array() {
    let text = "
type Temp = Real(unit = \"K\", start = 300, nominal = 300);
model M
  Temp T[3];
  Temp S[2](start = {1, 2});
equation
  der(T) = -T; der(S) = -S;
end M;";
    let dae = flatten(text, &[]).unwrap();
    let start = |n: &str| {
        dae.pool
            .as_const(dae.var(dae.lookup(n).unwrap()).start.unwrap())
    };
    assert_eq!(start("T[3]"), Some(300.0));
    assert_eq!(
        start("S[1]"),
        Some(1.0),
        "an array value replaces the type's scalar one"
    );
    assert_eq!(start("S[2]"), Some(2.0));
    let nominal = dae.var(dae.lookup("T[2]").unwrap()).nominal.unwrap();
    assert_eq!(dae.pool.as_const(nominal), Some(300.0));
}

#[test]
fn cat_joins_arrays_along_a_dimension() {
    let text = "
model M
  parameter Real a[3] = cat(1, {1}, {2, 3});
  parameter Real b[2, 3] = cat(2, [1; 4], [2, 3; 5, 6]);
end M;";
    let dae = flatten(text, &[]).unwrap();
    let value = |n: &str| {
        dae.pool
            .as_const(dae.var(dae.lookup(n).unwrap()).binding.unwrap())
    };
    assert_eq!(value("a[3]"), Some(3.0));
    assert_eq!(value("b[1,2]"), Some(2.0));
    assert_eq!(value("b[2,1]"), Some(4.0));
    assert_eq!(value("b[2,3]"), Some(6.0));
    let err = flatten(
        "model M parameter Real a[2, 2] = cat(2, [1; 2], [3]); end M;",
        &[],
    )
    .unwrap_err();
    assert!(err.contains("do not fit"), "{err}");
}

#[test]
fn der_of_an_expression_follows_the_chain_rule() {
    // d/dt (J w^2 / 2 + x·time) = J w der(w) + der(x)·time + x
    let text = "
model M
  parameter Real J = 3;
  Real w(start = 1), x(start = 0), E;
equation
  der(w) = -w; der(x) = 1;
  E = der(J*w^2/2 + x*time);
end M;";
    let dae = flatten(text, &[]).unwrap();
    let e = dae.equations.last().unwrap();
    let mut point = mocca::causal::Point {
        vars: vec![0.0; dae.variables.len()],
        ders: vec![0.0; dae.variables.len()],
        time: 2.0,
    };
    let (w, x) = (dae.lookup("w").unwrap(), dae.lookup("x").unwrap());
    point.vars[dae.lookup("J").unwrap().0 as usize] = 3.0;
    point.vars[w.0 as usize] = 0.5;
    point.vars[x.0 as usize] = 4.0;
    point.ders[w.0 as usize] = -0.5;
    point.ders[x.0 as usize] = 1.0;
    let rhs = dae.pool.eval(e.rhs, &point).unwrap();
    assert!(
        (rhs - (3.0 * 0.5 * -0.5 + 1.0 * 2.0 + 4.0)).abs() < 1e-12,
        "{rhs}"
    );
}

#[test]
fn implicit_for_ranges_come_from_the_arrays_the_index_subscripts() {
    let dae = flatten(
        "model M Real x[3, 2]; Real y[2];
         equation
           for i, j loop x[i, j] = i * j + y[j]; end for;
           for j loop y[j] = j; end for;
         end M;",
        &[],
    )
    .unwrap();
    let eqs = equations(&dae);
    assert_eq!(eqs.len(), 8, "{eqs:?}");
    assert!(
        eqs.contains(&"'x[3,2]' = 6.0 + 'y[2]'".to_string()),
        "{eqs:?}"
    );
    assert!(eqs.contains(&"'y[2]' = 2.0".to_string()), "{eqs:?}");
}

#[test]
fn an_implicit_range_must_be_deducible_and_unambiguous() {
    let ambiguous = flatten(
        "model M Real x[3]; Real y[4]; equation for i loop x[i] = y[i]; end for; end M;",
        &[],
    )
    .unwrap_err();
    assert!(
        ambiguous.contains("the range of `i` is ambiguous"),
        "{ambiguous}"
    );
    let unused = flatten(
        "model M Real x; equation for i loop x = i; end for; end M;",
        &[],
    )
    .unwrap_err();
    assert!(
        unused.contains("cannot deduce the range of `i`"),
        "{unused}"
    );
}

#[test]
fn an_extends_modifier_may_modify_a_local_class() {
    // Modelica 7.2: the class modification reaches every component of that class, below the
    // component's own modifier.
    let dae = flatten(
        "model M
           model A
           protected
             model B Real x = 2.0; end B;
             B b; B c(x = 5.0);
           end A;
           extends A(B(x = 4.0));
         end M;",
        &[],
    )
    .unwrap();
    let eqs = equations(&dae);
    assert!(eqs.contains(&"'b.x' = 4.0".to_string()), "{eqs:?}");
    assert!(eqs.contains(&"'c.x' = 5.0".to_string()), "{eqs:?}");
}

#[test]
fn modifiers_must_name_elements_and_may_not_reach_protected_classes() {
    let unknown = flatten(
        "model M model A Real y = 1; end A; extends A(nonexistent = 1); end M;",
        &[],
    )
    .unwrap_err();
    assert!(
        unknown.contains("has no element `nonexistent` to modify"),
        "{unknown}"
    );
    let protected = flatten(
        "model M
           model A protected model B Real x = 2.0; end B; B b; end A;
           A a(B(x = 4.0));
         end M;",
        &[],
    )
    .unwrap_err();
    assert!(protected.contains("class `B` is protected"), "{protected}");
}

/// A parameter is fixed for the run, so its binding may not read `time` (nor a state), and
/// the error points at the parameter.
#[test]
fn a_parameter_bound_to_time_or_a_state_is_an_error() {
    let text = "model M\n  parameter Real p = 2 * time;\n  Real x(start = 1);\nequation\n  der(x) = -p * x;\nend M;\n";
    assert_rejected(
        text,
        "time in a parameter binding",
        &[
            "the value of parameter `p` depends on the continuous `time`",
            "test.mo:2:",
        ],
    );
    let state = text.replace("2 * time", "2 * x");
    assert_rejected(
        &state,
        "a state in a parameter binding",
        &["depends on the"],
    );
    assert!(flatten(&text.replace("2 * time", "2"), &[]).is_ok());
}

#[test]
fn names_in_a_base_class_see_its_bases_but_not_the_classes_extending_it() {
    // C ← B ← M: B's equation reads C's `c`; M's reads all three.
    let chain = "model C Real c; end C;\nmodel B extends C; Real b; equation b = 2 * c; end B;\nmodel M extends B; Real m; equation m = b + c; c = 1; end M;\n";
    let dae = flatten(chain, &[]).expect("bases are visible");
    assert_eq!(equations(&dae), ["b = 2.0 * c", "m = b + c", "c = 1.0"]);
    // C's binding reads M's `m`: not visible from C (Modelica 7.1).
    let upward = "model C Real c = m; end C;\nmodel M extends C; Real m = 1; end M;\n";
    assert_rejected(
        upward,
        "a base reads the derived class",
        &["`m` is declared in `M`, which extends `C`", "test.mo:1:18"],
    );
    // The same through `connect` in a base class.
    let connect = format!(
        "{PIN_LIB}model Half Pin a; equation connect(a, b); end Half;\nmodel Whole extends Half; Pin b; end Whole;\n"
    );
    assert_rejected(
        &connect,
        "a base connects a derived connector",
        &["unknown connector `b`"],
    );
}

#[test]
fn identical_declarations_in_several_bases_are_one_element_visible_from_each() {
    // OMC's DuplicateElementsValid2 in small: `x` declared identically in A, B and M.
    let text = "model A Real x = 1; Real z = x; end A;\nmodel B Real z = x; Real x = 1; end B;\nmodel M extends A; extends B; Real x = 1; end M;\n";
    let dae = flatten(text, &[]).expect("identical duplicates merge");
    assert_eq!(dae.unknowns(), 2);
    assert_eq!(equations(&dae), ["x = 1.0", "z = x"]);
}

#[test]
fn only_constants_are_found_in_enclosing_classes() {
    // B's `x` finds A's continuous `x` first, which hides the outer constant (Modelica 5.3.1).
    let text = "model Top\n  constant Real x = 4;\n  model A\n    Real x = 3;\n    model B Real y = x; end B;\n    B b;\n  end A;\n  A a;\nend Top;\n";
    assert_rejected(
        text,
        "a variable from an enclosing class",
        &[
            "`x` is found in the enclosing class `Top.A`, where it is not a constant",
            "test.mo:5:22",
        ],
    );
    // With A's `x` a constant, B reads it (3, not Top's 4).
    let dae = flatten(&text.replace("Real x = 3", "constant Real x = 3"), &[]).unwrap();
    assert!(
        equations(&dae).contains(&"'a.b.y' = 3.0".to_string()),
        "{:?}",
        equations(&dae)
    );
}

#[test]
fn time_belongs_to_models_and_blocks_not_to_connectors_or_records() {
    let connector = "connector C Real x = time; flow Real f; end C;\nmodel M C c; end M;\n";
    assert_rejected(
        connector,
        "time in a connector",
        &["`time` is not available in a connector", "test.mo:1:22"],
    );
    let record = "record R Real x = time; end R;\nmodel M R r; end M;\n";
    assert_rejected(
        record,
        "time in a record",
        &["`time` is not available in a record"],
    );
    // A modifier written in the model may bind a connector's variable to `time`.
    let from_model = "connector C Real x; flow Real f; end C;\nmodel M C c(x = time); end M;\n";
    let dae = flatten(from_model, &[]).expect("time written in the model");
    assert_eq!(equations(&dae), ["'c.x' = time", "'c.f' = 0.0"]);
}

#[test]
fn a_local_class_inherited_twice_must_be_the_same_definition() {
    let differing = "model Base model A Real x = 2; end A; end Base;\nmodel M model A Real x = 3; end A; extends Base; A a; end M;\n";
    assert_rejected(
        differing,
        "two different local classes `A`",
        &[
            "class `A` is declared twice with different definitions",
            "test.mo:1:18",
        ],
    );
    // The same text in both places is one class (Modelica 7.1).
    let same = differing.replace("x = 3", "x = 2");
    let dae = flatten(&same, &[]).expect("identical local classes");
    assert_eq!(equations(&dae), ["'a.x' = 2.0"]);
}

#[test]
fn a_type_extending_a_predefined_type_has_no_protected_section() {
    let text =
        "type T\n  extends Real;\nprotected\n  model M end M;\nend T;\nmodel U T t = 1; end U;\n";
    assert_rejected(
        text,
        "a protected element in a type",
        &["a type cannot have protected elements", "test.mo:4:3"],
    );
    let public = text.replace("protected\n", "");
    assert!(flatten(&public, &[]).is_ok());
}

/// The warnings of a model that flattens.
fn warnings(text: &str) -> String {
    let mut sources = SourceMap::new();
    let id = sources.add("test.mo", text);
    match flatten_sources(sources, &[id], None, &[]) {
        Ok(flat) => render_plain(&flat.sources, &flat.warnings),
        Err((sources, diags)) => panic!("{}", render_plain(&sources, &diags)),
    }
}

#[test]
fn an_unbalanced_connector_is_warned_about_with_its_counts() {
    // The compliance suite's SizeNestedInvalid: 3 pins (3 v, 3 i) and `x`: 4 potentials, 3 flows.
    let nested = "connector Pin Real v; flow Real i; end Pin;\nconnector Plug parameter Integer m = 3; Pin p[m]; Real x; end Plug;\nmodel M Plug p(p.v = {1, 2, 3}, x = 4); end M;\n";
    let w = warnings(nested);
    assert!(
        w.contains("connector `Plug` is unbalanced here: 4 potential and 3 flow variables")
            && w.contains("test.mo:3:14"),
        "{w}"
    );
    // Without `x` it balances, with m = 2 as with the default; inputs and parameters do not count.
    let balanced = nested.replace(" Real x;", " input Real x;");
    assert_eq!(warnings(&balanced), "");
    assert_eq!(
        warnings(
            &balanced
                .replace("m = 3", "m = 2")
                .replace("{1, 2, 3}", "{1, 2}")
        ),
        ""
    );
    // A potential-only connector (OMC's ConnectorBalance1).
    let w = warnings("connector C = Real;\nmodel M C c = 1; end M;\n");
    assert!(w.contains("1 potential and 0 flow variables"), "{w}");
}

/// Arithmetic on constants that has no real value (Modelica 3.7.1: a division by zero, a
/// function outside its domain) is an error at its span when translation meets it; it is
/// never folded to a number.
#[test]
fn constant_arithmetic_without_a_real_value_is_an_error_at_its_span() {
    let model = |binding: &str| {
        format!(
            "model M\n  parameter Real a = {binding};\n  Real x(start = 1);\nequation\n  der(x) = -a * x;\nend M;\n"
        )
    };
    for (binding, message, at) in [
        ("0/0", "division by zero", "test.mo:2:22"),
        ("2/(1 - 1)", "division by zero", "test.mo:2:22"),
        ("0^(-1)", "`0^-1` is a division by zero", "test.mo:2:22"),
        ("(-8)^0.5", "`(-8)^0.5` has no real value", "test.mo:2:22"),
        ("mod(5, 0)", "`mod` by zero", "test.mo:2:29"),
        ("div(5, 0)", "`div` by zero", "test.mo:2:29"),
        (
            "log(0)",
            "`log` is defined only for positive arguments",
            "test.mo:2:26",
        ),
    ] {
        assert_rejected(&model(binding), binding, &[message, at]);
    }
    // In an equation too, with a variable numerator.
    let equation = "model M\n  Real x(start = 1);\nequation\n  der(x) = x / 0;\nend M;\n";
    assert_rejected(equation, "x / 0", &["division by zero", "test.mo:4:12"]);
    // The same values with a real result fold to them.
    let dae = flatten(&model("0/2 + (-8)^(1/3.0 * 3) + 4^0.5"), &[]).unwrap();
    let a = dae.variables.iter().find(|v| v.name == "a").unwrap();
    assert_eq!(dae.show(a.binding.unwrap()), "-6.0");
    // A divisor that is zero only through a parameter's value is the run's business (IEEE).
    let symbolic = "model M\n  parameter Real z = 0;\n  parameter Real a = 1 / z;\nend M;\n";
    assert!(flatten(symbolic, &[]).is_ok());
}

/// A parameter with neither binding nor start value is used as 0, as OpenModelica does, and
/// as OpenModelica does, a warning at its declaration says so. One computed by the initial
/// equations (`fixed = false`) or with a start value is not warned about.
#[test]
fn a_parameter_without_a_value_is_warned_about_with_the_value_used() {
    let text = "model M\n  parameter Real b;\n  parameter Real k(start = 2);\n  parameter Real q(fixed = false);\n  parameter Boolean on;\n  Real x(start = 1);\ninitial equation\n  q = 1;\nequation\n  der(x) = -b * x - k - q;\nend M;\n";
    let w = warnings(text);
    assert!(
        w.contains("parameter `b` has neither a binding nor a start value: 0 is used")
            && w.contains("test.mo:2:18"),
        "{w}"
    );
    assert!(
        w.contains("parameter `on` has neither a binding nor a start value: false is used")
            && w.contains("test.mo:5:21"),
        "{w}"
    );
    assert_eq!(w.matches("warning:").count(), 2, "{w}");
    // An array declaration is one warning.
    let array = warnings("model M\n  parameter Real c[3];\nend M;\n");
    assert!(
        array.contains("parameter `c[1]` (and 2 more of this declaration)"),
        "{array}"
    );
    assert_eq!(array.matches("warning:").count(), 1, "{array}");
}

/// Two declarations of one name in one class are an error (Modelica 4.4.3); identical ones
/// merge only when inherited (see above).
#[test]
fn a_name_declared_twice_in_one_class_is_an_error() {
    let text = "model M\n  Real x;\n  Real x;\nequation\n  x = 1;\nend M;\n";
    assert_rejected(
        text,
        "x declared twice",
        &["`x` is declared twice in `M`", "test.mo:3:8"],
    );
    assert_rejected(
        "model M\n  Real y, y;\nequation\n  y = 1;\nend M;\n",
        "y declared twice in one clause",
        &["`y` is declared twice in `M`", "test.mo:2:11"],
    );
}

/// Arithmetic takes numbers and `and`/`or`/`not` Booleans (Modelica 10.6): a Boolean is not
/// 1 or 0.
#[test]
fn operators_on_operands_of_the_wrong_type_are_errors_at_the_operand() {
    let model = |binding: &str| {
        format!("model M\n  Boolean b = time > 1;\n  Real y = {binding};\nend M;\n")
    };
    for (binding, message, at) in [
        (
            "true + 1",
            "`+` takes numbers, not a Boolean operand",
            "test.mo:3:12",
        ),
        (
            "2 * b",
            "`*` takes numbers, not a Boolean operand",
            "test.mo:3:16",
        ),
        (
            "-(time > 1)",
            "`-` takes numbers, not a Boolean operand",
            "test.mo:3:13",
        ),
        (
            "(1 < 2) / 2",
            "`/` takes numbers, not a Boolean operand",
            "test.mo:3:12",
        ),
        (
            "if 1 and b then 1 else 0",
            "`and` takes Booleans, not an Integer operand",
            "test.mo:3:15",
        ),
    ] {
        assert_rejected(&model(binding), binding, &[message, at]);
    }
    let dae = flatten(
        &model("if b and not (time > 2) then 1 + 2 * time else 0"),
        &[],
    );
    assert!(dae.is_ok(), "{dae:?}");
}

#[test]
fn a_class_extending_itself_is_reported_as_such() {
    assert_rejected(
        "model A\n  extends A;\nend A;\n",
        "A extends A",
        &["`A` extends itself", "test.mo:2:11"],
    );
}

/// A builtin called with the wrong number of arguments says how many it takes.
#[test]
fn a_builtin_with_the_wrong_number_of_arguments_says_how_many_it_takes() {
    let model = |call: &str| format!("model M\n  Real x = {call};\nend M;\n");
    for (call, message) in [
        ("atan2(1)", "`atan2` takes 2 arguments, 1 given"),
        ("sin(1, 2)", "`sin` takes 1 argument, 2 given"),
        ("max(1, 2, 3)", "`max` takes 1 or 2 arguments, 3 given"),
        ("mod(3)", "`mod` takes 2 arguments, 1 given"),
        ("floor(1, 2)", "`floor` takes 1 argument, 2 given"),
        ("smooth(1)", "`smooth` takes 2 arguments, 1 given"),
    ] {
        assert_rejected(&model(call), call, &[message, "test.mo:2:12"]);
    }
}

/// The equations of the variables whose names start with `prefix`, as `lhs = rhs` text.
fn equations_of(dae: &Dae, prefix: &str) -> Vec<String> {
    equations(dae)
        .into_iter()
        .filter(|e| e.trim_start_matches('\'').starts_with(prefix))
        .collect()
}

/// The right sides of [`equations_of`].
fn right_sides(dae: &Dae, prefix: &str) -> Vec<String> {
    equations_of(dae, prefix)
        .iter()
        .map(|e| e.rsplit(" = ").next().expect("an equation").to_string())
        .collect()
}

/// Modelica 10.3 and 10.6: each array function against the result worked out by hand (the
/// specification's own examples where it gives them).
#[test]
fn array_functions_give_the_specifications_results() {
    let dae = flatten(
        "model M
           Real t[3,2] = transpose([1, 2, 3; 4, 5, 6]);
           Real c[3] = cross({1, 2, 3}, {4, 5, 6});
           Real k[3,3] = skew({1, 2, 3});
           Real l[5] = linspace(0, 2, 5);
           Real d[2,2] = diagonal({7, 8});
           Real o[2,3] = outerProduct({1, 2}, {3, 4, 5});
           Real s[2,2] = symmetric([1, 2; 3, 4]);
           Real v[3] = vector([1; 2; 3]);
           Real m[2,1] = matrix({5, 6});
           Real a[2,2] = array({1, 2}, {3, 4});
           Real x = scalar([[9]]);
           Real n = ndims(fill(1, 2, 3, 4));
           Real mx = max([1, 7; 3, 2]);
           Real p = product({2, 3, 4});
         end M;",
        &[],
    )
    .expect("flattens");
    let expect = |prefix: &str, values: &[&str]| {
        assert_eq!(right_sides(&dae, prefix), values, "{prefix}");
    };
    expect("t[", &["1.0", "4.0", "2.0", "5.0", "3.0", "6.0"]);
    // {2·6 − 3·5, 3·4 − 1·6, 1·5 − 2·4}
    expect("c[", &["-3.0", "6.0", "-3.0"]);
    expect(
        "k[",
        &[
            "0.0", "-3.0", "2.0", "3.0", "0.0", "-1.0", "-2.0", "1.0", "0.0",
        ],
    );
    expect("l[", &["0.0", "0.5", "1.0", "1.5", "2.0"]);
    expect("d[", &["7.0", "0.0", "0.0", "8.0"]);
    expect("o[", &["3.0", "4.0", "5.0", "6.0", "8.0", "10.0"]);
    expect("s[", &["1.0", "2.0", "2.0", "4.0"]);
    expect("v[", &["1.0", "2.0", "3.0"]);
    expect("m[", &["5.0", "6.0"]);
    expect("a[", &["1.0", "2.0", "3.0", "4.0"]);
    expect("x ", &["9.0"]);
    expect("n ", &["3.0"]);
    expect("mx ", &["7.0"]);
    expect("p ", &["24.0"]);
}

/// Array constructors with iterators and reductions (Modelica 10.3.4, 10.4.1): the last
/// iterator is the outermost dimension (`{i - j for i in 1:3, j in 1:2}` is
/// `{{i - j for i in 1:3} for j in 1:2}`, 2 × 3), ranges of any step and vectors, iterators
/// shadowing a for-loop's, and the dimensions of `[:]` from the constructor.
#[test]
fn comprehensions_and_reductions_unroll_at_translation_time() {
    let dae = flatten(
        "model M
           parameter Integer n = 3;
           Real t[:, :] = {i - j for i in 1:3, j in 1:2};
           Real h[n, n] = {1/(i + j - 1) for i in 1:n, j in 1:n};
           Real sq[:] = {i^2 for i in {1, 3, 7, 6}};
           Real r[:] = {r for r in 1.0:1.5:5.5};
           Real s = sum(i*i for i in 1:4);
           Real q = product(i for i in 2:4);
           Real m = max(i*j for i in 1:2, j in 1:3);
           Real w[3](each start = 1, each fixed = true);
           Real total = sum(w[i] for i in 1:3);
           Real z[2];
         equation
           der(w) = -w;
           for i in 1:2 loop
             z[i] = sum(i for i in 1:4) + i;
           end for;
         end M;",
        &[],
    )
    .expect("flattens");
    let rhs = |prefix: &str| right_sides(&dae, prefix);
    assert_eq!(rhs("t["), ["0.0", "1.0", "2.0", "-1.0", "0.0", "1.0"]);
    let h: Vec<f64> = rhs("h[")
        .iter()
        .map(|v| v.parse().expect("a number"))
        .collect();
    let hilbert: Vec<f64> = (1..=3)
        .flat_map(|j| (1..=3).map(move |i| 1.0 / f64::from(i + j - 1)))
        .collect();
    assert_eq!(h, hilbert);
    assert_eq!(rhs("sq["), ["1.0", "9.0", "49.0", "36.0"]);
    assert_eq!(rhs("r["), ["1.0", "2.5", "4.0", "5.5"]);
    assert_eq!(rhs("s "), ["30.0"]);
    assert_eq!(rhs("q "), ["24.0"]);
    assert_eq!(rhs("m "), ["6.0"]);
    assert_eq!(rhs("total "), ["'w[1]' + 'w[2]' + 'w[3]'"]);
    assert_eq!(equations_of(&dae, "z["), ["'z[1]' = 11.0", "'z[2]' = 12.0"]);
}

/// `A^k` of a square matrix is `A·…·A` (the identity for k = 0), against the products worked
/// out by hand; a non-square matrix, a negative or a fractional exponent is refused.
#[test]
fn matrix_powers_multiply_out() {
    let dae = flatten(
        "model M
           Real a[2,2] = [1, 2; 3, 4]^2;
           Real b[2,2] = [1, 1; 0, 1]^3;
           Real c[2,2] = [5, 6; 7, 8]^0;
         end M;",
        &[],
    )
    .expect("flattens");
    let rhs = |prefix: &str| right_sides(&dae, prefix);
    assert_eq!(rhs("a["), ["7.0", "10.0", "15.0", "22.0"]);
    assert_eq!(rhs("b["), ["1.0", "3.0", "0.0", "1.0"]);
    assert_eq!(rhs("c["), ["1.0", "0.0", "0.0", "1.0"]);
    for (power, why) in [
        ("[1, 2, 3; 4, 5, 6]^2", "not square"),
        ("[1, 2; 3, 4]^(-1)", "at least 0"),
        ("[1, 2; 3, 4]^1.5", "integer exponent"),
    ] {
        let err = flatten(&format!("model M Real a[2,2] = {power}; end M;"), &[]).expect_err(why);
        assert!(err.contains(why), "{power}: {err}");
    }
}

/// Array functions given what they cannot take are errors at the call, not panics.
#[test]
fn array_functions_refuse_what_they_cannot_take() {
    for (call, why) in [
        (
            "Real v[4] = vector([1, 2; 3, 4])",
            "at most one dimension larger than 1",
        ),
        (
            "Real c[2] = cross({1, 2}, {3, 4})",
            "two vectors of 3 elements",
        ),
        ("Real x = scalar({1, 2})", "an array of one element"),
        ("Real l[1] = linspace(0, 1, 1)", "at least 2 points"),
        (
            "Real s[2,2] = symmetric([1, 2, 3; 4, 5, 6])",
            "a square matrix",
        ),
        ("Real t[2] = transpose({1, 2})", "at least two dimensions"),
        ("Real a[2,2] = array({1, 2}, {3})", "arguments of one size"),
        ("Real y[3] = {i for i}", "needs its range"),
        ("Real y[2] = {fill(1, i) for i in 1:2}", "different sizes"),
    ] {
        let err = flatten(&format!("model M {call}; end M;"), &[]).expect_err(why);
        assert!(err.contains(why), "{call}: {err}");
    }
}

/// Modelica 4.4.5: a conditional component whose condition is false is not in the model, and
/// the `connect` equations naming it (or one of its connectors) vanish with it; with the
/// condition true it is an ordinary component. The condition is a Boolean parameter
/// expression, and nothing but `connect` may name the component.
#[test]
fn conditional_components_vanish_with_their_connections() {
    let text = format!(
        "{PIN_LIB}
model M
  parameter Boolean useR2 = false;
  Capacitor C1(v(fixed = true, start = 1));
  Resistor R1, R2 if useR2;
  Ground g;
equation
  connect(C1.p, R1.p); connect(R1.n, g.p); connect(C1.n, g.p);
  connect(C1.p, R2.p); connect(R2.n, g.p);
end M;"
    );
    let without = flatten(&text, &[]).expect("flattens");
    assert!(without.variables.iter().all(|v| !v.name.starts_with("R2.")));
    let with = flatten(&text, &[("useR2", "true")]).expect("flattens");
    let r2: Vec<&str> = with
        .variables
        .iter()
        .map(|v| v.name.as_str())
        .filter(|n| n.starts_with("R2."))
        .collect();
    assert_eq!(
        r2,
        [
            "R2.p.v", "R2.p.i", "R2.n.v", "R2.n.i", "R2.v", "R2.i", "R2.R"
        ]
    );
    // R2's four equations (three of its one-port, Ohm's law) and, in each of the two node
    // sets it joins, the equality of its potential with the others' (the sets' flow balances
    // are there either way).
    assert_eq!(with.equations.len(), without.equations.len() + 4 + 2);
    for (model, why) in [
        (
            "model M parameter Boolean on = false; Real x if on; Real y = x; end M;",
            "only `connect` may name it",
        ),
        (
            "model M parameter Boolean on = true; Real x = 1 if on; Real y = x; end M;",
            "only `connect` may name it",
        ),
        (
            "model M parameter Real k = 1; Real x if k; end M;",
            "must be a Boolean, not Real",
        ),
        (
            "model M Real x if time > 1; end M;",
            "known at translation time",
        ),
    ] {
        let err = flatten(model, &[]).expect_err(why);
        assert!(err.contains(why), "{model}: {err}");
    }
}

/// Dimensions over `Boolean` (Modelica 10.1: `Real x[Boolean]` is indexed by `false` and
/// `true`), through a short type too; ranges `false:true`, the type `Boolean` and an implicit
/// iterator over such a dimension take the values false and true. A number indexing a Boolean
/// dimension, or a Boolean an Integer one, is an error.
#[test]
fn boolean_dimensions_are_indexed_by_false_and_true() {
    let dae = flatten(
        "model M
           type B = Boolean;
           Boolean a[B] = {true, false};
           Boolean r[Boolean], t[Boolean], u[Boolean];
           Real y = if a[false] then 1 else 2;
         equation
           for i in false:true loop
             r[i] = not i;
           end for;
           for i in Boolean loop
             t[i] = i;
           end for;
           for i loop
             u[i] = i and a[i];
           end for;
         end M;",
        &[],
    )
    .expect("flattens");
    // Equations show Boolean constants as 0 and 1 (`flatten` prints them as false and true).
    assert_eq!(right_sides(&dae, "a["), ["1.0", "0.0"]);
    assert_eq!(right_sides(&dae, "r["), ["1.0", "0.0"]);
    assert_eq!(right_sides(&dae, "t["), ["0.0", "1.0"]);
    // u[false] = false and a[false]; u[true] = true and a[true]
    assert_eq!(right_sides(&dae, "u["), ["0.0", "'a[2]'"]);
    assert_eq!(right_sides(&dae, "y "), ["if 'a[1]' then 1.0 else 2.0"]);
    for (model, why) in [
        (
            "model M type B = Boolean; Real x[B]; equation x[1] = 0; x[2] = 1; end M;",
            "indexed by `false` and `true`",
        ),
        (
            "model M Real x[2]; equation x[true] = 0; x[1] = 1; end M;",
            "a Boolean subscript indexes only",
        ),
    ] {
        let err = flatten(model, &[]).expect_err(why);
        assert!(err.contains(why), "{model}: {err}");
    }
}

/// `fill`, `zeros` and `ones` with a zero dimension give empty arrays whose later dimensions
/// still size a declaration with `:` (`fill(0.0, 0, 1)` is 0 × 1).
#[test]
fn empty_filled_arrays_size_their_declarations() {
    let dae = flatten(
        "model M
           Real A[:, :] = fill(0.0, 0, 1);
           Boolean B[:, :, :] = fill(false, 0, 1, 0);
           Real C[:, :] = zeros(2, 3);
           Real D[:] = ones(0);
         end M;",
        &[],
    )
    .expect("flattens");
    let names: Vec<&str> = dae.variables.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        ["C[1,1]", "C[1,2]", "C[1,3]", "C[2,1]", "C[2,2]", "C[2,3]"]
    );
    let err = flatten("model M Real A[:, 2] = fill(0.0, 0, 1); end M;", &[]).expect_err("0 × 1");
    assert!(
        err.contains("the binding has size [0, 1] but the declaration [0, 2]"),
        "{err}"
    );
}

/// Values of the wrong type are errors at the value (Modelica 4.8, 3.6.5, 8.3.1): a Boolean
/// bound to a Real or given as its `start`, a number as `fixed`, a number as `unit`, a
/// Boolean equated with a number, if-branches of a Boolean and a number. The right types
/// flatten.
#[test]
fn values_of_the_wrong_type_are_refused() {
    for (model, why) in [
        (
            "model M Real x = true; end M;",
            "a Boolean value cannot be given to a Real variable",
        ),
        (
            "model M Real x(start = true); equation der(x) = -x; end M;",
            "a Boolean value cannot be given to a Real",
        ),
        (
            "model M parameter Real p(fixed = 1) = 2; end M;",
            "an Integer value cannot be given to a Boolean",
        ),
        (
            "model M Real x(unit = 1) = 1; end M;",
            "where a String is required",
        ),
        (
            "model M Real x; Boolean b = true; equation x = b; end M;",
            "the two sides of this equation are a Boolean and a number",
        ),
        (
            "model M Real x = if true then 1 else false; end M;",
            "a Boolean and a number",
        ),
    ] {
        let err = flatten(model, &[]).expect_err(why);
        assert!(err.contains(why), "{model}: {err}");
    }
    flatten(
        "model M
           parameter Real p = 2;
           parameter Boolean f = true;
           Real x(start = p, fixed = f, unit = \"m\", nominal = 2*p, min = -1);
           Boolean b = if x > 1 then true else false;
           Boolean c;
         equation
           c = x > 0.5;
           der(x) = -x;
         end M;",
        &[],
    )
    .expect("types that fit");
}

/// An if-expression on Boolean or Integer parameters is taken at their values: the branch not
/// taken leaves nothing in the structure (a nonlinear permeability switched off adds no
/// dependence of `mu_r` on the flux), and an override chooses the other.
#[test]
fn an_if_on_boolean_or_integer_parameters_keeps_only_the_branch_taken() {
    let text = "model Choice
  parameter Boolean nonlinear = false;
  parameter Integer n = 2;
  parameter Real k = 1;
  Real x(start = 1, fixed = true);
  Real y;
  Real z;
  Real w;
equation
  y = if nonlinear then x^2 else 2;
  z = if n > 1 then x else -x;
  w = if k > 0 then x else -x;
  der(x) = -y*z*w;
end Choice;";
    let dae = flatten(text, &[]).expect("flattens");
    let eqs = equations(&dae);
    assert!(eqs.contains(&"y = 2.0".to_string()), "{eqs:?}");
    assert!(eqs.contains(&"z = x".to_string()), "{eqs:?}");
    // A Real parameter's condition stays: the parameter may be tuned after translation.
    assert!(eqs.iter().any(|e| e.starts_with("w = if")), "{eqs:?}");
    let dae = flatten(text, &[("nonlinear", "true")]).expect("flattens");
    assert!(
        equations(&dae).contains(&"y = x^2.0".to_string()),
        "{:?}",
        equations(&dae)
    );
}

/// Reductions of no elements (Modelica 10.3.4.1): `sum` 0, `product` 1, `min` the greatest
/// value of the type, `max` the least (Real: the largest double; Integer: 32 bits, as
/// Modelica.Constants.Integer_inf).
#[test]
fn empty_reductions_have_the_specifications_values() {
    let dae = flatten(
        "model EmptyReductions
  parameter Real r6 = min(r*2.0 for r in 1:0);
  parameter Real r7 = max(r*2.0 for r in 1:0);
  parameter Real r8 = sum(r*2.0 for r in 1:0);
  parameter Real r9 = product(r*2.0 for r in 1:0);
  parameter Integer i5 = min(i for i in 1:0);
  parameter Integer i6 = max(i for i in 1:0);
  parameter Integer i7 = sum(i for i in 1:0);
  parameter Integer i8 = product(i for i in 1:0);
end EmptyReductions;",
        &[],
    )
    .expect("flattens");
    let integer = f64::from(i32::MAX);
    for (name, want) in [
        ("r6", f64::MAX),
        ("r7", -f64::MAX),
        ("r8", 0.0),
        ("r9", 1.0),
        ("i5", integer),
        ("i6", -integer),
        ("i7", 0.0),
        ("i8", 1.0),
    ] {
        let v = dae.lookup(name).expect(name);
        let binding = dae.var(v).binding.expect("a binding");
        assert_eq!(dae.pool.as_const(binding), Some(want), "{name}");
    }
}

/// An array of components given array values for its elements' attributes (Modelica 7.2.5,
/// as `ThyristorBridge2mPulse` writes `idealThyristor(off(start = offStart, fixed = fill(true,
/// m)))`): element i takes element i of each, `fixed` as `start`.
#[test]
fn array_attributes_of_an_array_of_components_split_by_element() {
    let dae = flatten(
        "model A
           model T
             Boolean off(start = true);
             Real x(start = 1);
           equation
             off = x > 0;
             der(x) = -x;
           end T;
           T t[2](off(start = {true, false}, fixed = fill(true, 2)), x(fixed = {true, false}));
         end A;",
        &[],
    )
    .expect("flattens");
    let attributes = |name: &str| {
        let v = dae.lookup(name).expect("declared");
        let var = dae.var(v);
        (var.start.and_then(|s| dae.pool.as_const(s)), var.fixed)
    };
    assert_eq!(attributes("t[1].off"), (Some(1.0), Some(true)));
    assert_eq!(attributes("t[2].off"), (Some(0.0), Some(true)));
    assert_eq!(attributes("t[1].x").1, Some(true));
    assert_eq!(attributes("t[2].x").1, Some(false));
}
