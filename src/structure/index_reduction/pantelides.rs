//! Pantelides' algorithm (1988) on the incidence structure alone: which equations to
//! differentiate, and how often, until every equation can be matched to a highest derivative.
//!
//! Variables are the unknowns and their derivatives, each with a link to its derivative
//! (`A` in the paper); equations link to their derivative (`B`). Only highest derivatives
//! (no derivative of their own) may be matched. An equation that finds no augmenting path
//! is differentiated with every equation and variable its failed search visited, and the
//! search starts again from its derivative.

use crate::structure::matching::NONE;

/// A variable of the augmented system: the `order`-th derivative of an unknown of the DAE.
#[derive(Clone, Debug)]
pub struct Var {
    /// Index of the order-0 variable of its chain.
    pub base: usize,
    pub order: u32,
    pub derivative: Option<usize>,
    pub antiderivative: Option<usize>,
}

/// An equation of the augmented system: the `order`-th derivative of equation `source`.
#[derive(Clone, Debug)]
pub struct Eq {
    pub source: usize,
    pub order: u32,
    pub derivative: Option<usize>,
    pub parent: Option<usize>,
    /// The variables it mentions, each once.
    pub vars: Vec<usize>,
}

/// The augmented system and its matching of highest-derivative variables to equations.
pub struct Pantelides {
    pub vars: Vec<Var>,
    pub eqs: Vec<Eq>,
    /// Per variable: the equation matched to it, or [`NONE`].
    assign: Vec<usize>,
    var_mark: Vec<u32>,
    eq_mark: Vec<u32>,
    epoch: u32,
}

/// Why the algorithm stopped without a complete matching: the structure is singular in a way
/// no differentiation mends (the structural analysis then explains it).
#[derive(Debug)]
pub struct Singular;

/// A frame of the augmenting search: an equation, the next of its variables to try, and the
/// variable the search came through (NONE at the root).
struct Frame {
    eq: usize,
    next: usize,
    via: usize,
}

impl Pantelides {
    /// `vars` of the DAE's unknowns (with their derivatives where they are states) and the
    /// equations as lists of variable indices.
    pub fn new(vars: Vec<Var>, equations: Vec<Vec<usize>>) -> Pantelides {
        let eqs: Vec<Eq> = equations
            .into_iter()
            .enumerate()
            .map(|(source, vars)| Eq {
                source,
                order: 0,
                derivative: None,
                parent: None,
                vars,
            })
            .collect();
        Pantelides {
            assign: vec![NONE; vars.len()],
            var_mark: vec![0; vars.len()],
            eq_mark: vec![0; eqs.len()],
            vars,
            eqs,
            epoch: 0,
        }
    }

    /// Runs the algorithm over every equation of the DAE. `max_order` bounds how often one
    /// equation may be differentiated, beyond which the system is taken as singular.
    pub fn run(&mut self, max_order: u32) -> Result<(), Singular> {
        self.match_directly();
        for k in 0..self.eqs.len() {
            let mut i = k;
            if self.is_matched(i) {
                continue;
            }
            loop {
                let (found, colored_vars, colored_eqs) = self.augment(i);
                if found {
                    break;
                }
                if self.eqs[i].order >= max_order {
                    return Err(Singular);
                }
                for &j in &colored_vars {
                    self.add_derivative_var(j);
                }
                for &l in &colored_eqs {
                    self.add_derivative_eq(l)?;
                }
                for &j in &colored_vars {
                    let (dj, assigned) = (self.derivative(j), self.assign[j]);
                    if assigned != NONE {
                        let de = self.eqs[assigned].derivative.expect("differentiated above");
                        self.assign[dj] = de;
                    }
                }
                i = self.eqs[i].derivative.expect("differentiated above");
            }
        }
        Ok(())
    }

    /// Matches each equation to a free highest derivative of its own where one is at hand, so
    /// that the searches below start from a nearly complete matching.
    fn match_directly(&mut self) {
        for e in 0..self.eqs.len() {
            let free = self.eqs[e]
                .vars
                .iter()
                .copied()
                .find(|&j| self.vars[j].derivative.is_none() && self.assign[j] == NONE);
            if let Some(j) = free {
                self.assign[j] = e;
            }
        }
    }

    fn is_matched(&self, e: usize) -> bool {
        self.eqs[e].vars.iter().any(|&j| self.assign[j] == e)
    }

    fn derivative(&self, j: usize) -> usize {
        self.vars[j].derivative.expect("a derivative")
    }

    /// Whether equation `e` is of the final system (its highest derivative).
    pub fn is_highest(&self, e: usize) -> bool {
        self.eqs[e].derivative.is_none()
    }

    /// An augmenting path from equation `root` over highest derivatives (iterative DFS, a
    /// free variable looked for in each equation before going deeper). On failure, the
    /// variables and equations it visited.
    fn augment(&mut self, root: usize) -> (bool, Vec<usize>, Vec<usize>) {
        self.epoch += 1;
        let epoch = self.epoch;
        let mut colored_vars = Vec::new();
        let mut colored_eqs = vec![root];
        self.eq_mark[root] = epoch;
        let mut stack = vec![Frame {
            eq: root,
            next: 0,
            via: NONE,
        }];
        while let Some(top) = stack.last_mut() {
            let e = top.eq;
            if top.next == 0 {
                let free = self.eqs[e]
                    .vars
                    .iter()
                    .copied()
                    .find(|&j| self.vars[j].derivative.is_none() && self.assign[j] == NONE);
                if let Some(j) = free {
                    self.assign[j] = e;
                    for k in (1..stack.len()).rev() {
                        self.assign[stack[k].via] = stack[k - 1].eq;
                    }
                    return (true, Vec::new(), Vec::new());
                }
            }
            let top = stack.last_mut().expect("not empty");
            let vars = &self.eqs[e].vars;
            let mut descend = None;
            while top.next < vars.len() {
                let j = vars[top.next];
                top.next += 1;
                if self.vars[j].derivative.is_some() || self.var_mark[j] == epoch {
                    continue;
                }
                self.var_mark[j] = epoch;
                colored_vars.push(j);
                let owner = self.assign[j];
                if owner != NONE && self.eq_mark[owner] != epoch {
                    self.eq_mark[owner] = epoch;
                    colored_eqs.push(owner);
                    descend = Some(Frame {
                        eq: owner,
                        next: 0,
                        via: j,
                    });
                    break;
                }
            }
            match descend {
                Some(frame) => stack.push(frame),
                None => {
                    stack.pop();
                }
            }
        }
        (false, colored_vars, colored_eqs)
    }

    fn add_derivative_var(&mut self, j: usize) {
        let k = self.vars.len();
        let v = &self.vars[j];
        let derived = Var {
            base: v.base,
            order: v.order + 1,
            derivative: None,
            antiderivative: Some(j),
        };
        self.vars[j].derivative = Some(k);
        self.vars.push(derived);
        self.assign.push(NONE);
        self.var_mark.push(0);
    }

    /// Appends the derivative of equation `l`: it mentions the variables of `l` and their
    /// derivatives (every variable of a colored equation has one by now).
    fn add_derivative_eq(&mut self, l: usize) -> Result<(), Singular> {
        let mut vars = Vec::with_capacity(2 * self.eqs[l].vars.len());
        for &j in &self.eqs[l].vars {
            vars.push(j);
            vars.push(self.vars[j].derivative.ok_or(Singular)?);
        }
        vars.sort_unstable();
        vars.dedup();
        let k = self.eqs.len();
        let eq = &self.eqs[l];
        let derived = Eq {
            source: eq.source,
            order: eq.order + 1,
            derivative: None,
            parent: Some(l),
            vars,
        };
        self.eqs[l].derivative = Some(k);
        self.eqs.push(derived);
        self.eq_mark.push(0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(base: usize, order: u32) -> Var {
        Var {
            base,
            order,
            derivative: None,
            antiderivative: None,
        }
    }

    /// The pendulum: x, y, vx, vy states (0..4, their derivatives 4..8), F (8).
    /// der(x) = vx, der(y) = vy, der(vx) = -F x, der(vy) = -F y - g, x² + y² = L².
    #[test]
    fn the_pendulum_is_of_index_three() {
        let mut vars: Vec<Var> = (0..4).map(|b| var(b, 0)).collect();
        for b in 0..4 {
            vars.push(Var {
                antiderivative: Some(b),
                ..var(b, 1)
            });
            vars[b].derivative = Some(4 + b);
        }
        vars.push(var(8, 0));
        let equations = vec![
            vec![4, 2],
            vec![5, 3],
            vec![6, 8, 0],
            vec![7, 8, 1],
            vec![0, 1],
        ];
        let mut p = Pantelides::new(vars, equations);
        p.run(10).expect("regular");
        let orders: Vec<u32> = (0..5)
            .map(|e| {
                let mut e = e;
                while let Some(d) = p.eqs[e].derivative {
                    e = d;
                }
                p.eqs[e].order
            })
            .collect();
        // The constraint twice, the velocity equations once.
        assert_eq!(orders, vec![1, 1, 0, 0, 2]);
        let highest: Vec<usize> = (0..p.eqs.len()).filter(|&e| p.is_highest(e)).collect();
        for &e in &highest {
            assert!(p.is_matched(e), "equation {e} matched");
        }
    }

    #[test]
    fn an_equation_without_variables_is_singular() {
        let mut p = Pantelides::new(vec![var(0, 0)], vec![vec![0], vec![]]);
        assert!(p.run(5).is_err());
    }
}
