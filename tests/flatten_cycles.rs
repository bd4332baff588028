//! Recursive and self-referring definitions: each kind is a diagnostic naming the cycle (never
//! a crash), the valid look-alikes flatten, and random nestings of classes, `extends`, short
//! definitions and imports flatten on a small stack without crashing or hanging.

#[path = "cli_support/mod.rs"]
mod cli_support;

use std::sync::mpsc;
use std::time::Duration;

use mocca::dae::Dae;
use mocca::diagnostics::render_plain;
use mocca::frontend::flatten_sources;
use mocca::source::SourceMap;
use proptest::prelude::*;

fn flatten(text: &str, model: Option<&str>) -> Result<Dae, String> {
    let mut sources = SourceMap::new();
    let id = sources.add("test.mo", text);
    match flatten_sources(sources, &[id], model, &[]) {
        Ok(flat) => Ok(flat.dae),
        Err((sources, diags)) => Err(render_plain(&sources, &diags)),
    }
}

/// Flattening `model` of `text` fails with a message holding every one of `parts`.
fn assert_cycle(text: &str, model: &str, parts: &[&str]) {
    let err = flatten(text, Some(model)).expect_err("a cycle of definitions");
    assert!(parts.iter().all(|part| err.contains(part)), "{err}");
}

#[test]
fn a_short_type_naming_itself_through_its_package_is_a_cycle() {
    let text = "package Env\n  type Env = Env.Env;\n  model M\n    Env e;\n  end M;\nend Env;\n";
    assert_cycle(
        text,
        "Env.M",
        &[
            "`Env.Env` is defined through itself: Env.Env → Env.Env",
            "test.mo:2:14",
        ],
    );
}

#[test]
fn short_definitions_naming_each_other_are_a_cycle() {
    let text = "package P\n  type A = B;\n  type B = A;\n  model M\n    A a;\n  end M;\nend P;\n";
    assert_cycle(
        text,
        "P.M",
        &[
            "type `P.A` is defined through itself: P.A → P.B → P.A",
            "test.mo:5:5",
        ],
    );
    let text = "package P\n  model A = P.A;\n  model M\n    A a;\n  end M;\nend P;\n";
    assert_cycle(text, "P.M", &["`P.A` is defined through itself"]);
    let text = "package P\n  replaceable model R = R;\n  model M\n    R r;\n  end M;\nend P;\n";
    assert_cycle(text, "P.M", &["`P.R` is defined through itself"]);
}

#[test]
fn classes_extending_each_other_are_a_cycle() {
    let text = "package P\n  model A\n    extends B;\n  end A;\n  model B\n    extends A;\n  end B;\n  model M\n    A a;\n  end M;\nend P;\n";
    assert_cycle(
        text,
        "P.M",
        &["`P.A` extends itself: P.A → P.B → P.A", "test.mo:6:13"],
    );
    let text = "model C\n  extends C;\n  Real x;\nequation\n  der(x) = -x;\nend C;\n";
    assert_cycle(text, "C", &["`C` extends itself", "test.mo:2:11"]);
}

#[test]
fn a_connector_alias_cycle_under_extends_is_an_error() {
    let text = "package P\n  connector C = D;\n  connector D = C;\n  model M\n    C c;\n  end M;\nend P;\n";
    assert_cycle(text, "P.M", &["type `P.C` is defined through itself"]);
}

/// Modelica 5.6.1: a class's `extends` names are looked up without the elements those
/// clauses inherit, so `D.B` through the short class `D = A` finds `A` outside.
#[test]
fn an_extends_through_a_local_short_class_finds_the_enclosing_class() {
    let text = "package P
  model A
    model B
      Real x(start = 1, fixed = true);
    equation
      der(x) = -x;
    end B;
  end A;
  model M
    model D = A;
    extends D.B;
  end M;
end P;";
    let dae = flatten(text, Some("P.M")).expect("valid Modelica");
    let names: Vec<&str> = dae.variables.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["x"]);
    assert_eq!(dae.equations.len(), 1);
}

/// A diamond of `extends` brings the same element and the same equation along two paths:
/// Modelica 7.1 keeps one of each. A ladder of 40 diamonds (2⁴⁰ paths) flattens at once.
#[test]
fn diamonds_of_extends_keep_one_copy_and_take_linear_time() {
    let levels = 40;
    let mut text = format!(
        "package P\n  model L{levels}\n    Real x(start = 1, fixed = true);\n  equation\n    der(x) = -x;\n  end L{levels};\n"
    );
    for i in (0..levels).rev() {
        let next = i + 1;
        text.push_str(&format!(
            "  model L{i}\n    extends L{next}a;\n    extends L{next}b;\n  end L{i};\n  model L{next}a\n    extends L{next};\n  end L{next}a;\n  model L{next}b\n    extends L{next};\n  end L{next}b;\n"
        ));
    }
    text.push_str("  model M\n    L0 l(x(start = 2));\n  end M;\nend P;\n");
    let dae = flatten(&text, Some("P.M")).expect("a valid diamond ladder");
    assert_eq!(dae.variables.len(), 1);
    assert_eq!(dae.equations.len(), 1);
    let err = flatten(&text.replace("L0 l(", "Q q; L0 l("), Some("P.M")).expect_err("no Q");
    assert!(err.contains("type `Q` not found"), "{err}");
}

/// The same declaration reached along two paths with different modifications gives two
/// different elements of one name: an error (Modelica 7.1), not one of the two values.
#[test]
fn a_diamond_with_different_modifications_is_an_error() {
    let text = "package P
  model L1
    parameter Real p = 1;
  end L1;
  model La
    extends L1(p = 2);
  end La;
  model Lb
    extends L1;
  end Lb;
  model L0
    extends La;
    extends Lb;
  end L0;
end P;";
    let err = flatten(text, Some("P.L0")).expect_err("p is 2 along one path and 1 along the other");
    assert!(
        err.contains("`p` is inherited along two paths with different modifications"),
        "{err}"
    );
    assert!(err.contains("test.mo:3:20"), "{err}");
    // The same modification written on both paths gives identical elements: one is kept.
    let same = text.replace("extends L1;\n  end Lb;", "extends L1(p = 2);\n  end Lb;");
    let dae = flatten(&same, Some("P.L0")).expect("identical elements");
    assert_eq!(dae.variables.len(), 1);
}

/// The command line: a cycle is a diagnostic with exit code 1, not a signal.
#[test]
fn the_command_line_reports_a_cycle_with_exit_code_one() {
    let path = cli_support::model_file(
        "env_cycle",
        "package Env\n  type Env = Env.Env;\n  model M\n    Env e;\n  end M;\nend Env;\n",
    );
    let path = path.to_str().expect("utf-8");
    let (_, err, code) = cli_support::mocca(&["check", path, "--model", "Env.M"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("is defined through itself"), "{err}");
}

/// Class names the random packages draw from.
const NAMES: [&str; 5] = ["A", "B", "C", "D", "E"];

/// A name written in a random class: one or two parts, global or not.
fn reference() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        0..NAMES.len(),
        proptest::option::of(0..NAMES.len()),
    )
        .prop_map(|(global, first, second)| {
            let mut name = String::new();
            if global {
                name.push_str("P.");
            }
            name.push_str(NAMES[first]);
            if let Some(second) = second {
                name.push('.');
                name.push_str(NAMES[second]);
            }
            name
        })
}

/// A random class named `NAMES[k]`, with nested classes down to `depth` more levels.
fn class(depth: u32) -> BoxedStrategy<(usize, String)> {
    let kind = prop_oneof![
        Just("model"),
        Just("package"),
        Just("type"),
        Just("connector")
    ];
    let short = (0..NAMES.len(), kind.clone(), reference())
        .prop_map(|(k, kind, base)| (k, format!("{kind} {} = {base};\n", NAMES[k])));
    let clauses = prop::collection::vec(
        prop_oneof![
            reference().prop_map(|r| format!("extends {r};\n")),
            reference().prop_map(|r| format!("import {r}.*;\n")),
            reference().prop_map(|r| format!("import Q = {r};\n")),
            reference().prop_map(|r| format!("{r} c;\n")),
            reference().prop_map(|r| format!("replaceable model R = {r};\n")),
            Just("Real x;\n".to_string()),
        ],
        0..4,
    );
    let nested = if depth == 0 {
        Just(Vec::new()).boxed()
    } else {
        prop::collection::vec(class(depth - 1), 0..3).boxed()
    };
    let long = (0..NAMES.len(), kind, clauses, nested).prop_map(|(k, kind, clauses, nested)| {
        let name = NAMES[k];
        let mut text = format!("{kind} {name}\n");
        text.extend(clauses);
        text.extend(nested.into_iter().map(|(_, c)| c));
        text.push_str(&format!("end {name};\n"));
        (k, text)
    });
    prop_oneof![short, long].boxed()
}

/// A package `P` of random classes and a model `M` using one of them.
fn package() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(class(2), 1..6),
        reference(),
        any::<bool>(),
    )
        .prop_map(|(classes, used, extends)| {
            let mut text = String::from("package P\n");
            text.extend(classes.into_iter().map(|(_, c)| c));
            let clause = if extends {
                format!("extends {used};")
            } else {
                format!("{used} u;")
            };
            text.push_str(&format!("model M\n  {clause}\nend M;\nend P;\n"));
            text
        })
}

/// Flattens `text` on a thread with a 1 MiB stack (a stack overflow ends the test process),
/// within 20 seconds.
fn flattens_without_crashing(text: String) -> Result<(), TestCaseError> {
    let (send, receive) = mpsc::channel();
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            let outcome = std::panic::catch_unwind(|| {
                let _ = flatten(&text, Some("P.M"));
            });
            let _ = send.send(outcome.is_ok());
        })
        .expect("a thread");
    match receive.recv_timeout(Duration::from_secs(20)) {
        Ok(finished) => {
            prop_assert!(finished, "the flattener panicked");
            Ok(())
        }
        Err(_) => Err(TestCaseError::fail("the flattener took more than 20 s")),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_nestings_flatten_without_crashing(text in package()) {
        flattens_without_crashing(text)?;
    }
}
