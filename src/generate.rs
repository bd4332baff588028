//! Generated models for benchmarks and scaling runs.

use std::fmt::Write;

/// Scalar flat equations per stage of [`rc_chain`]: the resistor's 2 and the capacitor's 3,
/// the node joining `R_k.n`, `C_k.p` and `R_{k+1}.p` (2 potential equalities and a flow
/// balance), and `C_k.n` joining the ground set (1 more equality).
pub const EQUATIONS_PER_STAGE: usize = 9;

/// A model of `stages` resistor–capacitor pairs joined by `connect` into a ladder driven by a
/// constant source; components are declared one by one (`R1`, `C1`, `R2`, …), not as arrays.
/// It has `9·stages + 6` scalar equations and `stages` states.
pub fn rc_chain(stages: usize) -> String {
    chain(stages, false)
}

/// [`rc_chain`] with the source and the ground inherited from a base class `Circuit`, so that
/// the model's `connect`s name elements of its base: the same flat model, through the lookup
/// of inherited names in a class of a million elements.
pub fn rc_chain_in_template(stages: usize) -> String {
    chain(stages, true)
}

fn chain(stages: usize, template: bool) -> String {
    let mut s = String::with_capacity(stages * 120 + 1024);
    s.push_str(
        "connector Pin Real v; flow Real i; end Pin;
model Resistor Pin p, n; parameter Real R = 1; equation p.v - n.v = R*p.i; p.i + n.i = 0; end Resistor;
model Capacitor Pin p, n; Real v(start = 0); parameter Real C = 1;
equation v = p.v - n.v; C*der(v) = p.i; p.i + n.i = 0; end Capacitor;
model Ground Pin p; equation p.v = 0; end Ground;
model Source Pin p, n; equation p.v - n.v = 1; p.i + n.i = 0; end Source;
",
    );
    if template {
        s.push_str(
            "model Circuit Source source; Ground ground; end Circuit;
model RCChain
  extends Circuit;
",
        );
    } else {
        s.push_str(
            "model RCChain
  Source source;
  Ground ground;
",
        );
    }
    for k in 1..=stages {
        let _ = writeln!(s, "  Resistor R{k}; Capacitor C{k};");
    }
    s.push_str("equation\n  connect(source.p, R1.p);\n  connect(source.n, ground.p);\n");
    for k in 1..=stages {
        let _ = writeln!(
            s,
            "  connect(R{k}.n, C{k}.p);\n  connect(C{k}.n, ground.p);"
        );
        if k < stages {
            let _ = writeln!(s, "  connect(C{k}.p, R{}.p);", k + 1);
        }
    }
    s.push_str("end RCChain;\n");
    s
}

/// The number of stages whose chain has about `equations` scalar equations.
pub fn rc_chain_stages_for(equations: usize) -> usize {
    (equations / EQUATIONS_PER_STAGE).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontend::flatten_sources;
    use crate::source::SourceMap;

    #[test]
    fn rc_chain_has_the_documented_size() {
        for stages in [1, 2, 7] {
            let mut sources = SourceMap::new();
            let id = sources.add("chain.mo", rc_chain(stages));
            let flat = flatten_sources(sources, &[id], None, &[])
                .ok()
                .expect("flattens");
            assert_eq!(flat.dae.equations.len(), EQUATIONS_PER_STAGE * stages + 6);
            assert_eq!(flat.dae.equations.len(), flat.dae.unknowns());
            assert_eq!(flat.dae.count(crate::dae::VarKind::State), stages);
        }
        assert_eq!(rc_chain_stages_for(90_000), 10_000);
    }

    #[test]
    fn the_templated_chain_flattens_to_the_same_model() {
        let flat = |text: String| {
            let mut sources = SourceMap::new();
            let id = sources.add("chain.mo", text);
            let dae = flatten_sources(sources, &[id], None, &[])
                .ok()
                .expect("flattens")
                .dae;
            dae.to_modelica()
        };
        assert_eq!(flat(rc_chain(5)), flat(rc_chain_in_template(5)));
    }
}
