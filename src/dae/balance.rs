//! Balance: as many equations as unknowns, globally and per component (Modelica's local
//! balance: a component's own equations plus one per connector flow equal its unknowns).

use indexmap::IndexMap;
use serde::Serialize;

use super::{Dae, EquationOrigin};

#[derive(Clone, Debug, Serialize)]
pub struct ComponentBalance {
    pub component: String,
    pub equations: usize,
    pub flows: usize,
    pub unknowns: usize,
}

impl ComponentBalance {
    /// Positive: equations missing; negative: equations too many.
    pub fn shortfall(&self) -> i64 {
        self.unknowns as i64 - (self.equations + self.flows) as i64
    }
}

impl Dae {
    /// The components (not the model itself) that are not locally balanced.
    pub fn unbalanced_components(&self) -> Vec<ComponentBalance> {
        let mut table: IndexMap<String, ComponentBalance> = IndexMap::new();
        fn row<'t>(
            table: &'t mut IndexMap<String, ComponentBalance>,
            c: &str,
        ) -> &'t mut ComponentBalance {
            table
                .entry(c.to_string())
                .or_insert_with(|| ComponentBalance {
                    component: c.to_string(),
                    equations: 0,
                    flows: 0,
                    unknowns: 0,
                })
        }
        for v in self
            .variables
            .iter()
            .filter(|v| !v.component.is_empty() && v.kind.is_unknown())
        {
            let r = row(&mut table, &v.component);
            r.unknowns += 1;
            r.flows += usize::from(v.flow);
        }
        for eq in &self.equations {
            let local = matches!(eq.origin, EquationOrigin::Model | EquationOrigin::Binding);
            if local && !eq.component.is_empty() {
                row(&mut table, &eq.component).equations += 1;
            }
        }
        table.into_values().filter(|r| r.shortfall() != 0).collect()
    }
}
