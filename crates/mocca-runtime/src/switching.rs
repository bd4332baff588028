//! The relations whose switching makes state events, and what an event does with them:
//! locating the first switch within a step (the Illinois method on each crossing function)
//! and settling the switches with the model at an event (relations free, `pre` held). Shared
//! by `mocca simulate` and the crates `mocca emit` writes (this very file, std only), so both
//! locate the same instants and settle in the same modes.
//!
//! A watched relation is a comparison `lhs op rhs` or a stepwise function of a continuous
//! argument (`floor`, `ceil`, `integer` and `div`, `mod`, `rem` through them). A *switch* is a
//! watched relation the continuous equations read through a held variable, fixed between
//! events; the others are relations of `when` conditions, which only the caller fires.

/// Rounds of a settling loop before it stops.
pub const MAX_ITERATIONS: usize = 100;
/// Boolean switches that cycle within one event round whose combinations are searched for a
/// consistent one (2ⁿ evaluations).
pub const MAX_SEARCHED: usize = 8;
/// Within event iteration, a relation whose sides differ by at most this, relative to the
/// larger, sits on its threshold: its switch keeps the side it has.
pub const HYSTERESIS: f64 = 1e-10;

/// How a switch follows its relation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threshold {
    /// To whichever side the relation evaluates.
    Strict,
    /// Only where the relation's sides differ by more than [`HYSTERESIS`].
    Hysteresis,
}

/// A stepwise function's jumps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stepwise {
    /// At each integer, from below (`floor`).
    Floor,
    /// At each integer, from above (`ceil`).
    Ceil,
    /// Towards zero (`integer`, `div`'s truncation): as `floor` for positive values, as `ceil`
    /// for negative ones.
    TowardZero,
}

/// What a watched relation's crossing function is made of, at the point loaded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Crossing {
    /// A comparison's two sides.
    Sides(f64, f64),
    /// A stepwise function and its argument.
    Argument(Stepwise, f64),
}

impl Crossing {
    /// The crossing function: `lhs − rhs`; for a stepwise function holding `held`, the
    /// argument's distance from the jump it meets on its way to `toward`.
    pub fn function(self, held: f64, toward: f64) -> f64 {
        match self {
            Crossing::Sides(lhs, rhs) => lhs - rhs,
            Crossing::Argument(f, arg) => arg - jump(f, held, toward),
        }
    }
}

impl Stepwise {
    /// The arguments where the function is `held`: from the first to the second, each end
    /// included where the function takes `held` there (`floor`: `[held, held + 1)`).
    pub fn range(self, held: f64) -> (f64, f64) {
        match self {
            Stepwise::Floor => (held, held + 1.0),
            Stepwise::Ceil => (held - 1.0, held),
            Stepwise::TowardZero if held > 0.0 => (held, held + 1.0),
            Stepwise::TowardZero if held < 0.0 => (held - 1.0, held),
            Stepwise::TowardZero => (-1.0, 1.0),
        }
    }
}

/// The argument's value where stepwise function `f`, holding `held`, first jumps on its way to
/// `toward`.
fn jump(f: Stepwise, held: f64, toward: f64) -> f64 {
    let (low, high) = f.range(held);
    if toward > held { high } else { low }
}

/// The event indicators of a relation at the point loaded, holding `held` (FMI 2.0: an
/// indicator's sign changes where the relation switches): `lhs − rhs` for a comparison; for a
/// stepwise function its argument's distance from each end of the range where it is `held`.
/// Written to the front of `out`; how many.
pub fn indicators(crossing: Crossing, held: f64, out: &mut [f64]) -> usize {
    match crossing {
        Crossing::Sides(lhs, rhs) => {
            out[0] = lhs - rhs;
            1
        }
        Crossing::Argument(f, arg) => {
            let (low, high) = f.range(held);
            out[..2].copy_from_slice(&[arg - low, arg - high]);
            2
        }
    }
}

/// The watched relations of a run over the model they read, at the point last loaded.
pub trait Relations {
    type Error;
    /// How many relations are watched.
    fn count(&self) -> usize;
    /// Relation `k`'s value (1 or 0 for a comparison); NaN where it cannot be evaluated.
    fn value(&self, k: usize) -> f64;
    fn crossing(&self, k: usize) -> Crossing;
    /// Relation `k`'s value between events (the side the last event left it on).
    fn held(&self, k: usize) -> f64;
    /// The value of the switch relation `k` sets; `None` when it is no switch.
    fn switch(&self, k: usize) -> Option<f64>;
    fn set_switch(&mut self, k: usize, value: f64);
    /// The model evaluated again at time `t`, the states and switches as they are.
    fn evaluate(&mut self, t: f64) -> Result<(), Self::Error>;
    /// The states `x` at `t` loaded and the model evaluated; false where it cannot be.
    fn load(&mut self, t: f64, x: &[f64]) -> bool;
}

/// Whether relation `k` differs at the loaded point from its value held.
pub fn switched(r: &impl Relations, k: usize) -> bool {
    let value = r.value(k);
    !value.is_nan() && value != r.held(k)
}

/// Whether some relation at `(t, x)` differs from its value held.
pub fn crossed(r: &mut impl Relations, t: f64, x: &[f64]) -> bool {
    r.load(t, x) && (0..r.count()).any(|k| switched(r, k))
}

/// The value switch `k` moves to, where it disagrees with its relation. NaN moves no switch (a
/// relation that cannot be evaluated); under [`Threshold::Hysteresis`] neither does a
/// comparison on its threshold (a friction element that starts sliding at its breakaway
/// torque, whose torque is then exactly that value: `sa > tau0` false again would lock it
/// again, and the lock would free it).
pub fn moving_to(r: &impl Relations, k: usize, threshold: Threshold) -> Option<f64> {
    let held = r.switch(k)?;
    let value = r.value(k);
    if value.is_nan() || value == held {
        return None;
    }
    if threshold == Threshold::Hysteresis
        && let Crossing::Sides(lhs, rhs) = r.crossing(k)
        && (lhs - rhs).abs() <= HYSTERESIS * lhs.abs().max(rhs.abs())
    {
        return None;
    }
    Some(value)
}

/// The switches that disagree with their relation (past its threshold).
pub fn moving(r: &impl Relations) -> Vec<usize> {
    (0..r.count())
        .filter(|&k| moving_to(r, k, Threshold::Hysteresis).is_some())
        .collect()
}

/// Each switch set to its relation's value (relations free, as at an event), the model
/// evaluated again if one moved; whether one did.
pub fn free_switches<R: Relations>(
    r: &mut R,
    t: f64,
    threshold: Threshold,
) -> Result<bool, R::Error> {
    let mut moved = false;
    for k in 0..r.count() {
        if let Some(value) = moving_to(r, k, threshold) {
            r.set_switch(k, value);
            moved = true;
        }
    }
    if moved {
        r.evaluate(t)?;
    }
    Ok(moved)
}

/// The switches made consistent with the solution, `pre` values fixed (Modelica 8.6: the
/// relations are unknowns of the system an event round solves): moved until they agree with
/// it. When they cycle (a clutch sliding one way says "start the other way", sliding that way
/// says "start back"), each combination of the cycling Boolean switches is tried in turn, and
/// the first the solution agrees with is kept (both false: stuck). Whether any moved.
pub fn settle_switches<R: Relations>(r: &mut R, t: f64) -> Result<bool, R::Error> {
    let mut seen = vec![switch_values(r)];
    for _ in 0..MAX_ITERATIONS {
        if !free_switches(r, t, Threshold::Hysteresis)? {
            return Ok(seen.len() > 1);
        }
        let now = switch_values(r);
        if let Some(k) = seen.iter().position(|s| *s == now) {
            consistent_combination(r, t, &seen[k..])?;
            return Ok(true);
        }
        seen.push(now);
    }
    Ok(true)
}

/// The switches' values, in the order of the relations.
fn switch_values(r: &impl Relations) -> Vec<f64> {
    (0..r.count()).filter_map(|k| r.switch(k)).collect()
}

/// Among the switch values of a cycle, tries every combination of the Boolean switches that
/// differ within it (up to [`MAX_SEARCHED`] of them) and keeps the first that the solution
/// agrees with; without one, the last of the cycle stays.
fn consistent_combination<R: Relations>(
    r: &mut R,
    t: f64,
    cycle: &[Vec<f64>],
) -> Result<(), R::Error> {
    let switches: Vec<usize> = (0..r.count()).filter(|&k| r.switch(k).is_some()).collect();
    let cycling: Vec<usize> = (0..switches.len())
        .filter(|&j| cycle.iter().any(|s| s[j] != cycle[0][j]))
        .collect();
    let boolean = |x: f64| x == 0.0 || x == 1.0;
    if cycling.len() > MAX_SEARCHED || cycle.iter().any(|s| !s.iter().all(|&x| boolean(x))) {
        return Ok(());
    }
    let last = switch_values(r);
    for combination in 0..1u32 << cycling.len() {
        for (bit, &j) in cycling.iter().enumerate() {
            r.set_switch(switches[j], f64::from((combination >> bit) & 1));
        }
        r.evaluate(t)?;
        if moving(r).is_empty() {
            return Ok(());
        }
    }
    for (&k, &x) in switches.iter().zip(&last) {
        r.set_switch(k, x);
    }
    r.evaluate(t)
}

/// The first switch of a relation in `(t_l, t_r]`, where the solution is `state_at(t)`: each
/// switched relation's root by the Illinois method to `tolerance` in time, the earliest one
/// winning; its time and the states there (`t_r`'s when no root is bracketed).
pub fn locate(
    r: &mut impl Relations,
    (t_l, t_r): (f64, f64),
    tolerance: f64,
    state_at: &mut dyn FnMut(f64) -> Vec<f64>,
) -> (f64, Vec<f64>) {
    // Each switched relation (its value at t_r) and its crossing function at both ends.
    let x_r = state_at(t_r);
    let loaded = r.load(t_r, &x_r);
    let moved: Vec<(usize, f64, f64)> = (0..r.count())
        .filter(|&k| loaded && switched(r, k))
        .map(|k| {
            let toward = r.value(k);
            (k, toward, r.crossing(k).function(r.held(k), toward))
        })
        .collect();
    let x_l = state_at(t_l);
    r.load(t_l, &x_l);
    let ends: Vec<(usize, f64, f64, f64)> = moved
        .into_iter()
        .map(|(k, toward, g_r)| (k, toward, r.crossing(k).function(r.held(k), toward), g_r))
        .collect();
    let mut best = (t_r, x_r);
    for (k, toward, g_l, g_r) in ends {
        let (mut a, mut b) = ((t_l, g_l), (t_r, g_r));
        let mut side = 0i8;
        let mut x_b = None;
        while b.0 - a.0 > tolerance && a.0 < best.0 {
            let secant = b.0 - b.1 * (b.0 - a.0) / (b.1 - a.1);
            // Strictly inside, so that the bracket shrinks (also when the secant is NaN).
            let t = if secant > a.0 && secant < b.0 {
                secant
            } else {
                0.5 * (a.0 + b.0)
            };
            let x = state_at(t);
            let (g, sw) = if r.load(t, &x) {
                (r.crossing(k).function(r.held(k), toward), switched(r, k))
            } else {
                (0.0, false)
            };
            if sw {
                b = (t, g);
                x_b = Some(x);
                if side == 1 {
                    a.1 *= 0.5;
                }
                side = 1;
            } else {
                a = (t, g);
                if side == -1 {
                    b.1 *= 0.5;
                }
                side = -1;
            }
        }
        if b.0 < best.0 {
            best = (b.0, x_b.unwrap_or_else(|| state_at(b.0)));
        }
    }
    best
}
