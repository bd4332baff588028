//! Energy activity: how much each component does, as the integral over the run of the absolute
//! value of the net power flowing into it through its connectors (effort × flow: electrical
//! `v·i`, translational `der(s)·f`, rotational `der(phi)·tau`, thermal `Q_flow`, a power
//! itself). Flows are positive into their component, so the sum is what it takes in.

use std::collections::BTreeMap;

use crate::causal::Point;
use crate::dae::Dae;
use crate::expr::VarId;

/// What multiplies a port's flow to give the power into it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Effort {
    /// A potential: `v·i`.
    Value(VarId),
    /// A position or angle: `der(s)·f`, `der(phi)·tau`.
    Rate(VarId),
    /// The flow is a power already (`Q_flow`).
    Power,
}

/// One connector of a component: its flow and what gives the power with it.
#[derive(Clone, Debug)]
struct Port {
    component: String,
    flow: VarId,
    effort: Effort,
}

/// The ports of the flat model's components, from the flow variables of connectors inside a
/// component instance whose domain mocca knows by the flow's name (`i`, `f`, `tau`, `Q_flow`).
fn ports(dae: &Dae) -> Vec<Port> {
    dae.var_ids()
        .filter(|&v| dae.var(v).flow)
        .filter_map(|flow| {
            let name = &dae.var(flow).name;
            let (connector, field) = name.rsplit_once('.')?;
            let (component, _) = connector.rsplit_once('.')?;
            let other = |f: &str| dae.lookup(&format!("{connector}.{f}"));
            let effort = match field {
                "i" => Effort::Value(other("v")?),
                "f" => Effort::Rate(other("s")?),
                "tau" => Effort::Rate(other("phi")?),
                "Q_flow" => Effort::Power,
                _ => return None,
            };
            Some(Port {
                component: component.to_string(),
                flow,
                effort,
            })
        })
        .collect()
}

fn power(port: &Port, p: &Point) -> f64 {
    let flow = p.vars[port.flow.0 as usize];
    match port.effort {
        Effort::Value(e) => p.vars[e.0 as usize] * flow,
        Effort::Rate(e) => p.ders[e.0 as usize] * flow,
        Effort::Power => flow,
    }
}

/// Each component's activity over the samples (the trapezoidal rule on `|net power|`), by
/// component name; NaN where a power cannot be evaluated.
pub fn activities(dae: &Dae, samples: &[Point]) -> BTreeMap<String, f64> {
    let mut by_component: BTreeMap<String, Vec<Port>> = BTreeMap::new();
    for port in ports(dae) {
        by_component
            .entry(port.component.clone())
            .or_default()
            .push(port);
    }
    by_component
        .into_iter()
        .map(|(component, ports)| {
            let net: Vec<f64> = samples
                .iter()
                .map(|p| ports.iter().map(|port| power(port, p)).sum::<f64>().abs())
                .collect();
            let integral = samples
                .windows(2)
                .zip(net.windows(2))
                .map(|(t, w)| 0.5 * (w[0] + w[1]) * (t[1].time - t[0].time))
                .sum();
            (component, integral)
        })
        .collect()
}
