//! Every bundled example (SPEC §13) flattens, balances, and has the structure its physics says.

use std::path::Path;

use mocca::causal::{causal_form, initial_point};
use mocca::dae::{Dae, VarKind};
use mocca::diagnostics::render_plain;
use mocca::frontend::{Flat, flatten_sources};
use mocca::jacobian::ode_jacobian;
use mocca::load;
use mocca::source::SourceMap;
use mocca::structure::{self, Structure};

fn example(name: &str, params: &[(&str, &str)]) -> Flat {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name);
    let mut sources = SourceMap::new();
    let ids = load::load_paths(&mut sources, &[path]).expect("example exists");
    let params: Vec<(String, String)> = params
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    match flatten_sources(sources, &ids, None, &params) {
        Ok(flat) => flat,
        Err((s, d)) => panic!("{name}: {}", render_plain(&s, &d)),
    }
}

/// (equations, states after index reduction, subsystems)
fn summary(name: &str, params: &[(&str, &str)]) -> (usize, usize, usize, Dae, Structure) {
    let flat = example(name, params);
    let equations = flat.dae.equations.len();
    assert_eq!(equations, flat.dae.unknowns(), "{name} is balanced");
    let (reduced, _) = structure::prepare(flat.dae.clone()).expect("index reduction");
    let s = structure::analyse(&reduced)
        .unwrap_or_else(|d| panic!("{name}: {}", render_plain(&flat.sources, &d)));
    (
        equations,
        reduced.count(VarKind::State),
        s.subsystems.len(),
        reduced,
        s,
    )
}

#[test]
fn every_example_has_the_expected_size_and_structure() {
    // Hand counts: RC ladder 6 two-pin components × 6 unknowns + ground 2; the half car's 7
    // equations are its 4 states' and the road and two axle forces; and so on.
    let expected = [
        ("rc_ladder.mo", 38, 2, 1),
        ("rc_ladder_weak.mo", 38, 2, 2),
        ("power_shaft.mo", 17, 4, 2),
        ("dc_motor.mo", 5, 3, 1),
        ("half_car.mo", 7, 4, 1),
        ("two_masses.mo", 4, 4, 1),
        ("heat_exchanger.mo", 30, 30, 1),
        ("heat_exchanger_nonlinear.mo", 40, 30, 1),
        ("heat_exchanger_relay.mo", 41, 30, 1),
        ("quarter_car.mo", 7, 5, 1),
        ("quarter_car_components.mo", 43, 5, 1),
    ];
    for (name, equations, states, subsystems) in expected {
        let (e, s, sub, ..) = summary(name, &[]);
        assert_eq!((e, s, sub), (equations, states, subsystems), "{name}");
    }
}

#[test]
fn heat_exchanger_size_is_a_parameter() {
    for n in [10, 30, 100] {
        let (e, s, ..) = summary("heat_exchanger.mo", &[("N", &n.to_string())]);
        assert_eq!((e, s), (3 * n, 3 * n));
    }
}

#[test]
fn weak_rc_ladder_splits_into_the_two_nodes_of_spec_10() {
    let (.., dae, s) = summary("rc_ladder_weak.mo", &[]);
    let mut groups: Vec<Vec<&str>> = s
        .subsystems
        .iter()
        .map(|g| g.states.iter().map(|&v| dae.var(v).name.as_str()).collect())
        .collect();
    groups.sort();
    assert_eq!(groups, vec![vec!["C1.v"], vec!["C2.v"]]);
}

#[test]
fn power_shaft_separates_mechanical_and_electrical_states() {
    let (.., dae, s) = summary("power_shaft.mo", &[]);
    for group in &s.subsystems {
        let prefixes: std::collections::BTreeSet<&str> = group
            .states
            .iter()
            .map(|&v| dae.var(v).name.split('.').next().unwrap())
            .collect();
        assert_eq!(prefixes.len(), 1, "a subsystem mixes sides: {prefixes:?}");
    }
}

/// J at the given state values, as (row name, column name) → value.
fn jacobian_at(
    mut dae: Dae,
    s: &Structure,
    at: &[(&str, f64)],
) -> std::collections::BTreeMap<(String, String), f64> {
    let causal = causal_form(&mut dae, s);
    let jac = ode_jacobian(&mut dae, &causal);
    let mut point = initial_point(&dae).unwrap();
    for (name, value) in at {
        point.vars[dae.lookup(name).unwrap().0 as usize] = *value;
    }
    causal.evaluate(&dae.pool, &mut point).unwrap();
    let name = |k: usize| dae.var(causal.states[k]).name.clone();
    jac.values(&dae, &causal, &point)
        .into_iter()
        .map(|(r, c, v)| ((name(r), name(c)), v))
        .collect()
}

#[test]
fn quarter_car_from_components_has_the_flat_models_jacobian() {
    let (.., flat_dae, flat_s) = summary("quarter_car.mo", &[]);
    let (.., comp_dae, comp_s) = summary("quarter_car_components.mo", &[]);
    let flat = jacobian_at(
        flat_dae,
        &flat_s,
        &[
            ("x_s", -0.05),
            ("x_t", -0.01),
            ("x_r", 0.002),
            ("v_s", 0.1),
            ("v_t", -0.2),
        ],
    );
    let comp = jacobian_at(
        comp_dae,
        &comp_s,
        &[
            ("body.s", -0.05),
            ("wheel.s", -0.01),
            ("road.x_r", 0.002),
            ("body.v", 0.1),
            ("wheel.v", -0.2),
        ],
    );
    let rename = |n: &str| match n {
        "body.s" => "x_s",
        "body.v" => "v_s",
        "wheel.s" => "x_t",
        "wheel.v" => "v_t",
        "road.x_r" => "x_r",
        other => panic!("unexpected state {other}"),
    };
    let comp: std::collections::BTreeMap<(String, String), f64> = comp
        .into_iter()
        .map(|((r, c), v)| ((rename(&r).to_string(), rename(&c).to_string()), v))
        .collect();
    let keys: std::collections::BTreeSet<_> = flat.keys().chain(comp.keys()).cloned().collect();
    for k in keys {
        let (a, b) = (
            flat.get(&k).copied().unwrap_or(0.0),
            comp.get(&k).copied().unwrap_or(0.0),
        );
        assert!(
            (a - b).abs() <= 1e-9 * (1.0 + a.abs()),
            "J{k:?}: flat {a}, components {b}"
        );
    }
}

#[test]
fn dc_motor_angle_is_read_by_nothing() {
    let (.., dae, s) = summary("dc_motor.mo", &[]);
    let mut d = dae;
    let causal = causal_form(&mut d, &s);
    let jac = ode_jacobian(&mut d, &causal);
    let phi = causal
        .states
        .iter()
        .position(|&v| d.var(v).name == "phi")
        .unwrap();
    assert!(
        jac.entries.iter().all(|e| e.col != phi),
        "no derivative depends on phi"
    );
}
