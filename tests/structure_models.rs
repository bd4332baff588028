//! Alias elimination, BLT blocks and structural diagnostics on hand-built models with known
//! structure.

use mocca::causal::{causal_form, initial_point};
use mocca::dae::{Dae, VarKind};
use mocca::diagnostics::render_plain;
use mocca::frontend::flatten_sources;
use mocca::jacobian::ode_jacobian;
use mocca::source::SourceMap;
use mocca::structure::{self, BlockKind, alias};

fn flat(text: &str) -> (SourceMap, Dae) {
    let mut sources = SourceMap::new();
    let id = sources.add("s.mo", text);
    match flatten_sources(sources, &[id], None, &[]) {
        Ok(f) => (f.sources, f.dae),
        Err((s, d)) => panic!("{}", render_plain(&s, &d)),
    }
}

fn structural_error(text: &str) -> String {
    let (sources, dae) = flat(text);
    let diags = match structure::prepare(dae.clone()) {
        Ok((reduced, _)) => structure::analyse(&reduced).expect_err("singular"),
        Err(diags) => diags,
    };
    render_plain(&sources, &diags)
}

/// Dense J at the start point.
fn jacobian_values(mut dae: Dae) -> Vec<(usize, usize, f64)> {
    let s = structure::analyse(&dae).unwrap();
    let causal = causal_form(&mut dae, &s);
    let jac = ode_jacobian(&mut dae, &causal);
    let mut point = initial_point(&dae).unwrap();
    causal.evaluate(&dae.pool, &mut point).unwrap();
    jac.values(&dae, &causal, &point)
}

#[test]
fn alias_elimination_removes_connection_equations_and_keeps_the_jacobian() {
    let text = "
connector Pin Real v; flow Real i; end Pin;
model R Pin p, n; parameter Real r = 2; equation p.v - n.v = r*p.i; p.i + n.i = 0; end R;
model C Pin p, n; Real v(start = 1); parameter Real c = 0.5; equation v = p.v - n.v; c*der(v) = p.i; p.i + n.i = 0; end C;
model G Pin p; equation p.v = 0; end G;
model M R r; C c; G g; equation connect(r.p, c.p); connect(r.n, c.n); connect(c.n, g.p); end M;";
    let (_, dae) = flat(text);
    let reduced = alias::eliminate(dae.clone());
    // R: 2, C: 3, G: 1; sets {r.p, c.p}: 2 and {r.n, c.n, g.p}: 3.
    assert_eq!(dae.equations.len(), 11);
    assert!(reduced.equations.len() < dae.equations.len());
    assert_eq!(
        reduced.equations.len(),
        reduced.unknowns(),
        "still balanced"
    );
    assert!(reduced.count(VarKind::Alias) >= 6);
    // The aliases are printable in terms of what remains.
    let gv = reduced.lookup("g.p.v").unwrap();
    assert_eq!(reduced.show(reduced.var(gv).binding.unwrap()), "0.0");
    // der(v) = p.i / c with p.i = −v/r: J = −1/(r·c) = −1, with or without aliases.
    assert_eq!(jacobian_values(dae), vec![(0, 0, -1.0)]);
    assert_eq!(jacobian_values(reduced), vec![(0, 0, -1.0)]);
}

/// Which equations are aliases: `±a ± b = 0` and `c·a + k = 0` in any arrangement of sums,
/// constant factors and divisions by constants, and nothing nonlinear, with derivatives or
/// with a third variable; `a = e` with `e` of parameters only is eliminated too.
#[test]
fn alias_elimination_recognises_affine_forms_only() {
    let (_, dae) = flat(
        "model A
           parameter Real p = 3;
           Real x(start = 1), a, b, c, d, e, f, g, h, k;
         equation
           der(x) = -x + a + b + c + d + e + f + g + h + k;
           (2*a + 2*x)/2 = 0;        // a = -x
           (k + x)/2 = 0;            // coefficients 1/2: kept
           3*b - 6 = 0;              // b = 2
           -(c - 2*0.5*a) = 0;       // c = a
           d*d = 4;                  // nonlinear: kept
           e = p;                    // of parameters: e = p
           f + g + h = 0;            // three variables: kept
           g = sin(x);               // nonlinear: kept
           h = 2*x;                  // coefficient 2: kept
         end A;",
    );
    let reduced = alias::eliminate(dae);
    let binding = |name: &str| {
        let v = reduced.lookup(name).unwrap();
        (reduced.var(v).kind == VarKind::Alias)
            .then(|| reduced.show(reduced.var(v).binding.unwrap()))
    };
    assert_eq!(binding("a").as_deref(), Some("-x"));
    assert_eq!(binding("b").as_deref(), Some("2.0"));
    assert_eq!(binding("c").as_deref(), Some("-x"));
    assert_eq!(binding("e").as_deref(), Some("p"));
    for kept in ["d", "f", "g", "h", "k", "x"] {
        assert_eq!(binding(kept), None, "{kept} is not an alias");
    }
    assert_eq!(reduced.equations.len(), 6);
}

#[test]
fn blt_finds_the_algebraic_loop_and_orders_blocks() {
    let (_, dae) = flat(
        "model L Real x(start = 1), a, b, c;
         equation c = 2*a; a + b = x; a - b = c*0 + 1; der(x) = -c; end L;",
    );
    let s = structure::analyse(&dae).unwrap();
    let kinds: Vec<(BlockKind, usize)> = s
        .blocks
        .iter()
        .map(|b| (b.kind, b.equations.len()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (BlockKind::Loop, 2),
            (BlockKind::Explicit, 1),
            (BlockKind::Explicit, 1)
        ]
    );
    let names: Vec<String> = s.blocks[2].unknowns.iter().map(|u| u.name(&dae)).collect();
    assert_eq!(names, vec!["der(x)"]);
}

#[test]
fn over_determined_equations_are_named() {
    let err = structural_error("model O Real x, y; equation x = 1; y = x; x = y + 2; end O;");
    assert!(err.contains("structurally singular"), "{err}");
    assert!(err.contains("s.mo:1:"), "{err}");
}

#[test]
fn under_determined_variables_are_named() {
    let err =
        structural_error("model U Real x, y, z; equation x + y = z; x = 2*z; x = 1; y = 2; end U;");
    assert!(
        err.contains("too many") || err.contains("no equation determines"),
        "{err}"
    );
    let err =
        structural_error("model U Real x, y, z; equation x + y + z = 1; y = sin(z) + x; end U;\n");
    assert!(err.contains("no equation determines"), "{err}");
}

#[test]
fn a_constraint_between_states_is_differentiated_once() {
    let (_, dae) = flat(
        "model H Real x(start = 1), y(start = 1), u;
         equation der(x) = -x + u; der(y) = -y; x = y; end H;",
    );
    let (reduced, done) = structure::prepare(dae.clone()).expect("index reduction");
    assert_eq!(
        done.demoted.len(),
        1,
        "one state demoted to a dummy derivative"
    );
    assert_eq!(done.index, 2);
    assert_eq!(reduced.count(VarKind::State), 1);
    assert_eq!(reduced.equations.len(), reduced.unknowns());
    // u must make x follow y: der(x) = der(y) ⇒ −x + u = −y ⇒ u = 0 when x = y.
    let mut d = reduced;
    let s = structure::analyse(&d).expect("index 1 after one differentiation");
    let causal = causal_form(&mut d, &s);
    let mut point = initial_point(&d).unwrap();
    causal.evaluate(&d.pool, &mut point).unwrap();
    let u = d.lookup("u").unwrap();
    assert!(point.vars[u.0 as usize].abs() < 1e-12);
}

#[test]
fn an_index_three_pendulum_is_reduced_to_two_states() {
    let (_, dae) = flat(
        "model P Real x(start = 0.6), y(start = -0.8), vx, vy, lambda;
         equation der(x) = vx; der(y) = vy; der(vx) = -lambda*x; der(vy) = -lambda*y - 9.81;
         x^2 + y^2 = 1; end P;",
    );
    let (reduced, done) = structure::prepare(dae).expect("index reduction");
    assert_eq!(done.index, 3);
    assert_eq!(reduced.count(VarKind::State), 2);
    assert_eq!(reduced.equations.len(), reduced.unknowns());
    structure::analyse(&reduced).expect("index 1 after reduction");
}
