//! The hybrid part of the flat DAE (Modelica 8.5, appendix B): `when` clauses, the variables
//! they assign (held between events, [`super::VarKind::Held`]), `pre` of variables, `sample`
//! clocks and `initial()`. The continuous part reads every held variable as a value fixed
//! between events; the event module (`simulate::events`) changes them at events.

use super::Assertion;
use crate::expr::{ExprId, VarId};
use crate::source::Span;

/// `when c1 then … elsewhen c2 then … end when`: at an event, the first branch whose condition
/// has just become true fires.
#[derive(Clone, Debug)]
pub struct WhenClause {
    pub branches: Vec<WhenBranch>,
    pub span: Span,
    /// A `when` statement of an algorithm section: its actions are one block, run in written
    /// order from the `pre` values of the variables it assigns (Modelica 11.1.2), where a
    /// `when` equation's assignments are equations of the event's system.
    pub statement: bool,
}

#[derive(Clone, Debug)]
pub struct WhenBranch {
    /// Boolean expressions (one, or the elements of an array condition): the branch fires
    /// when one of them becomes true.
    pub conditions: Vec<ExprId>,
    /// In written order.
    pub actions: Vec<Action>,
}

#[derive(Clone, Debug)]
pub enum Action {
    /// `v = e` in a `when` equation: `v` takes `e`'s value.
    Assign {
        var: VarId,
        value: ExprId,
        span: Span,
    },
    /// `reinit(x, e)`: the state `x` restarts from `e`.
    Reinit {
        var: VarId,
        value: ExprId,
        span: Span,
    },
    /// `if` inside `when`: the actions of the first branch whose condition holds at the
    /// event, else `otherwise`'s. A variable a branch does not assign keeps its value.
    If {
        branches: Vec<(ExprId, Vec<Action>)>,
        otherwise: Vec<Action>,
    },
    /// `assert(…)` inside `when`: checked when its branch fires.
    Assert(Assertion),
    /// `terminate(message)`: the run ends at this event, successfully.
    Terminate { message: String, span: Span },
    /// What the model writes at the event (`Modelica.Utilities`' print, writeRealMatrix,
    /// removeFile), from the event's solution.
    Write { write: Write, span: Span },
    /// Equations of a clocked partition that no order of assignments solves: an algebraic
    /// loop, or an equation no unknown can be isolated from.
    Solve(Box<EquationSystem>),
}

/// A write of a `when` at its events; file names are known at translation time.
#[derive(Clone, Debug)]
pub enum Write {
    /// `Streams.print(text, file)`: a line on standard output (`file` empty) or appended.
    Print { text: Text, file: String },
    /// `Streams.writeRealMatrix(file, name, matrix, append, format)`: `values` row by row.
    Matrix {
        file: String,
        name: String,
        rows: usize,
        cols: usize,
        values: Vec<ExprId>,
        append: bool,
        format: MatFormat,
    },
    /// `Files.removeFile(file)`.
    Remove { file: String },
}

pub use mocca_runtime::files::MatFormat;

/// A String computed at an event: its pieces one after another.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Text(pub Vec<TextPiece>);

#[derive(Clone, Debug, PartialEq)]
pub enum TextPiece {
    Literal(String),
    /// `String(x, significantDigits, minimumLength, leftJustified)` of a Real.
    Real {
        value: ExprId,
        significant: usize,
        min_length: usize,
        left: bool,
    },
    /// `String(i, minimumLength, leftJustified)` of an Integer.
    Integer {
        value: ExprId,
        min_length: usize,
        left: bool,
    },
    Boolean(ExprId),
    /// `Files.fullPathName(name)`, taken where the run is.
    FullPath(String),
}

impl Text {
    /// The text when every piece is literal: known at translation time.
    pub fn known(&self) -> Option<String> {
        (self.0.iter())
            .map(|p| match p {
                TextPiece::Literal(s) => Some(s.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Each value the text reads.
    pub fn exprs_mut(&mut self) -> impl Iterator<Item = &mut ExprId> {
        self.0.iter_mut().filter_map(|p| match p {
            TextPiece::Real { value, .. } | TextPiece::Integer { value, .. } => Some(value),
            TextPiece::Boolean(value) => Some(value),
            TextPiece::Literal(_) | TextPiece::FullPath(_) => None,
        })
    }

    /// Each value the text reads.
    pub fn exprs(&self) -> impl Iterator<Item = ExprId> + '_ {
        self.0.iter().filter_map(|p| match p {
            TextPiece::Real { value, .. } | TextPiece::Integer { value, .. } => Some(*value),
            TextPiece::Boolean(value) => Some(*value),
            TextPiece::Literal(_) | TextPiece::FullPath(_) => None,
        })
    }
}

impl Write {
    /// Each value the write reads.
    pub fn exprs(&self) -> Vec<ExprId> {
        match self {
            Write::Print { text, .. } => text.exprs().collect(),
            Write::Matrix { values, .. } => values.clone(),
            Write::Remove { .. } => Vec::new(),
        }
    }

    fn exprs_mut(&mut self, f: &mut impl FnMut(&mut ExprId)) {
        match self {
            Write::Print { text, .. } => text.exprs_mut().for_each(f),
            Write::Matrix { values, .. } => values.iter_mut().for_each(f),
            Write::Remove { .. } => {}
        }
    }
}

/// `residuals = 0` for `vars`, solved together by Newton from the variables' values, with
/// the Jacobian `∂residuals[i]/∂vars[j]` at `(i, j, entry)` (entries not listed are zero).
#[derive(Clone, Debug)]
pub struct EquationSystem {
    pub vars: Vec<VarId>,
    pub residuals: Vec<ExprId>,
    pub jacobian: Vec<(usize, usize, ExprId)>,
    /// The first of its equations.
    pub span: Span,
}

impl Action {
    /// The variables `actions` assign, in any branch of their `if`s, each once, in written
    /// order.
    pub fn assigned(actions: &[Action]) -> Vec<VarId> {
        // A set: a buffer written through a varying subscript has an assignment per element.
        let mut vars = indexmap::IndexSet::new();
        let mut note = |var: &VarId| {
            vars.insert(*var);
        };
        Action::walk(actions, &mut |a| match a {
            Action::Assign { var, .. } => note(var),
            Action::Solve(system) => system.vars.iter().for_each(&mut note),
            _ => {}
        });
        vars.into_iter().collect()
    }

    /// Each action of `actions` and every action nested in them, in written order.
    pub fn walk<'a>(actions: &'a [Action], f: &mut impl FnMut(&'a Action)) {
        for action in actions {
            f(action);
            if let Action::If {
                branches,
                otherwise,
            } = action
            {
                for (_, body) in branches {
                    Action::walk(body, f);
                }
                Action::walk(otherwise, f);
            }
        }
    }

    /// [`Action::walk`], each action given to `f` to change in place before its nested ones.
    pub fn walk_mut(actions: &mut [Action], f: &mut impl FnMut(&mut Action)) {
        for action in actions {
            f(action);
            if let Action::If {
                branches,
                otherwise,
            } = action
            {
                for (_, body) in branches {
                    Action::walk_mut(body, f);
                }
                Action::walk_mut(otherwise, f);
            }
        }
    }
}

/// `sample(start, interval)`: true at the instants `start + k·interval`, false between.
#[derive(Clone, Debug)]
pub struct Sample {
    /// The held Boolean that reads as the `sample(…)` call.
    pub var: VarId,
    /// Over parameters.
    pub start: ExprId,
    pub interval: ExprId,
    pub span: Span,
}

/// A relation or stepwise function of the continuous equations, held between events in a
/// variable of its own (`super::relations`).
#[derive(Clone, Copy, Debug)]
pub struct Switch {
    /// Held: what the continuous equations read in its place.
    pub var: VarId,
    /// The relation or stepwise function, over values that vary continuously.
    pub value: ExprId,
}

/// What a held variable of the flattener's own reads as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeldCall {
    Pre(VarId),
    /// Index into [`Hybrid::samples`].
    Sample(usize),
    Initial,
    Terminal,
}

#[derive(Clone, Debug, Default)]
pub struct Hybrid {
    pub whens: Vec<WhenClause>,
    /// `(p, v)`: the held variable `p` reads as `pre(v)`.
    pub pre: Vec<(VarId, VarId)>,
    pub samples: Vec<Sample>,
    /// The held Boolean that reads as `initial()`, if the model calls it.
    pub initial: Option<VarId>,
    /// The held Boolean that reads as `terminal()`, if the model calls it.
    pub terminal: Option<VarId>,
    /// Empty but in a model prepared for simulation.
    pub switches: Vec<Switch>,
}

impl Hybrid {
    /// Every expression of the hybrid part, to rewrite in place: the `when` conditions and
    /// actions, the switches' relations and the `sample` arguments.
    pub fn exprs_mut(&mut self, f: &mut impl FnMut(&mut ExprId)) {
        for branch in self.whens.iter_mut().flat_map(|w| &mut w.branches) {
            branch.conditions.iter_mut().for_each(&mut *f);
            actions_exprs_mut(&mut branch.actions, f);
        }
        for s in &mut self.switches {
            f(&mut s.value);
        }
        for s in &mut self.samples {
            f(&mut s.start);
            f(&mut s.interval);
        }
    }

    /// Every variable the hybrid part names outside its expressions, to rewrite in place: the
    /// variables `when` actions assign and re-initialise, the held variables (of `pre`, the
    /// samples, `initial()`, `terminal()`, the switches) and those `pre` reads.
    pub fn vars_mut(&mut self, f: &mut impl FnMut(&mut VarId)) {
        for branch in self.whens.iter_mut().flat_map(|w| &mut w.branches) {
            actions_vars_mut(&mut branch.actions, f);
        }
        for (held, of) in &mut self.pre {
            f(held);
            f(of);
        }
        self.samples.iter_mut().for_each(|s| f(&mut s.var));
        self.initial.iter_mut().for_each(&mut *f);
        self.terminal.iter_mut().for_each(&mut *f);
        self.switches.iter_mut().for_each(|s| f(&mut s.var));
    }

    /// Whether the model has anything that happens at events.
    pub fn is_empty(&self) -> bool {
        self.whens.is_empty() && self.samples.is_empty() && self.switches.is_empty()
    }

    /// The call a held variable of the flattener's own stands for: `pre(v)` → `Pre(v)`.
    pub fn call_of(&self, held: VarId) -> Option<HeldCall> {
        if self.initial == Some(held) {
            return Some(HeldCall::Initial);
        }
        if self.terminal == Some(held) {
            return Some(HeldCall::Terminal);
        }
        if let Some(&(_, v)) = self.pre.iter().find(|&&(p, _)| p == held) {
            return Some(HeldCall::Pre(v));
        }
        self.samples
            .iter()
            .position(|s| s.var == held)
            .map(HeldCall::Sample)
    }

    /// The variable `pre(v)` reads, if the model reads it.
    pub fn pre_of(&self, v: VarId) -> Option<VarId> {
        self.pre.iter().find(|&&(_, of)| of == v).map(|&(p, _)| p)
    }
}

fn actions_vars_mut(actions: &mut [Action], f: &mut impl FnMut(&mut VarId)) {
    Action::walk_mut(actions, &mut |action| match action {
        Action::Assign { var, .. } | Action::Reinit { var, .. } => f(var),
        Action::Solve(system) => system.vars.iter_mut().for_each(&mut *f),
        _ => {}
    });
}

fn actions_exprs_mut(actions: &mut [Action], f: &mut impl FnMut(&mut ExprId)) {
    Action::walk_mut(actions, &mut |action| match action {
        Action::Assign { value, .. } | Action::Reinit { value, .. } => f(value),
        Action::If { branches, .. } => branches.iter_mut().for_each(|(c, _)| f(c)),
        Action::Assert(a) => f(&mut a.condition),
        Action::Terminate { .. } => {}
        Action::Write { write, .. } => write.exprs_mut(f),
        Action::Solve(system) => {
            let entries = system.jacobian.iter_mut().map(|(_, _, e)| e);
            system.residuals.iter_mut().chain(entries).for_each(&mut *f);
        }
    });
}
