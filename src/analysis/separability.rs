//! The parametric separability map (SPEC §8): `s_α(i+1, i)` for α on a grid, and its picture.

use plotters::prelude::*;

use super::bounds::Profile;
use super::indices::{fast_to_slow, separability_terms};

/// Per α of the grid: the states fast → slow (finite bounds only) and the terms
/// `s_α(i+1, i)`, i = 1..N−1 (`None` where undefined: N < 2 or all bounds equal).
#[derive(Clone, Debug, PartialEq)]
pub struct SeparabilityMap {
    pub alphas: Vec<f64>,
    pub orders: Vec<Vec<usize>>,
    pub terms: Vec<Option<Vec<f64>>>,
}

pub fn separability_map(profile: &Profile, alphas: &[f64]) -> SeparabilityMap {
    let mut orders = Vec::new();
    let mut terms = Vec::new();
    for &alpha in alphas {
        let h = profile.h_bar(alpha);
        orders.push(fast_to_slow(&h).0);
        terms.push(separability_terms(&h));
    }
    SeparabilityMap {
        alphas: alphas.to_vec(),
        orders,
        terms,
    }
}

/// `n` values evenly spaced from `a` to `b` inclusive.
pub fn grid(a: f64, b: f64, n: usize) -> Vec<f64> {
    match n {
        0 => Vec::new(),
        1 => vec![a],
        _ => (0..n)
            .map(|k| a + (b - a) * k as f64 / (n - 1) as f64)
            .collect(),
    }
}

/// Viridis, sampled at nine points and interpolated: dark blue (0) to yellow (1).
fn colour(t: f64) -> RGBColor {
    const STOPS: [(u8, u8, u8); 9] = [
        (68, 1, 84),
        (71, 44, 122),
        (59, 81, 139),
        (44, 113, 142),
        (33, 144, 141),
        (39, 173, 129),
        (92, 200, 99),
        (170, 220, 50),
        (253, 231, 37),
    ];
    let x = t.clamp(0.0, 1.0) * (STOPS.len() - 1) as f64;
    let k = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - k as f64;
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * f).round() as u8;
    let (a, b) = (STOPS[k], STOPS[k + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Draws the map as SVG: α across, the gap index i up (labelled with the pair of states it
/// separates at the largest α), colour = `s_α(i+1, i)`, and a colour bar. `names[v]` names
/// state v.
pub fn draw_svg(map: &SeparabilityMap, names: &[String], title: &str) -> Result<String, String> {
    let gaps = map.terms.iter().flatten().map(Vec::len).max().unwrap_or(0);
    let height = (160 + 14 * gaps as u32).clamp(360, 1400);
    let label_order = map.orders.last().cloned().unwrap_or_default();
    let label = |i: usize| match (label_order.get(i), label_order.get(i + 1)) {
        (Some(&a), Some(&b)) => format!("{} {}|{}", i + 1, names[a], names[b]),
        _ => format!("{}", i + 1),
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (plot, bar) = root.split_horizontally(780);
        let (a0, a1) = alpha_extent(&map.alphas);
        let mut chart = ChartBuilder::on(&plot)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(190)
            .build_cartesian_2d(a0..a1, 0.0..gaps.max(1) as f64)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("α")
            .y_desc("gap i (state i | state i+1, fast → slow)")
            .y_labels(gaps.clamp(1, 40))
            .y_label_formatter(&|y| label(y.floor().max(0.0) as usize))
            .draw()
            .map_err(|e| e.to_string())?;
        let cells = cells(map, a0, a1);
        chart
            .draw_series(cells.into_iter().map(|(x0, x1, i, v)| {
                Rectangle::new([(x0, i as f64), (x1, i as f64 + 1.0)], colour(v).filled())
            }))
            .map_err(|e| e.to_string())?;
        draw_colour_bar(&bar)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// The α range with half a grid step on each side, so each α is a cell's centre.
fn alpha_extent(alphas: &[f64]) -> (f64, f64) {
    let lo = alphas.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = alphas.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let half = if alphas.len() > 1 {
        (hi - lo) / (alphas.len() - 1) as f64 / 2.0
    } else {
        0.05
    };
    (lo - half, hi + half)
}

/// One rectangle per (α, gap): x from, x to, gap index, value.
fn cells(map: &SeparabilityMap, a0: f64, a1: f64) -> Vec<(f64, f64, usize, f64)> {
    let n = map.alphas.len();
    let width = (a1 - a0) / n.max(1) as f64;
    let mut out = Vec::new();
    for (k, terms) in map.terms.iter().enumerate() {
        let x0 = a0 + width * k as f64;
        for (i, &v) in terms.iter().flatten().enumerate() {
            out.push((x0, x0 + width, i, v));
        }
    }
    out
}

fn draw_colour_bar<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
) -> Result<(), String> {
    let mut chart = ChartBuilder::on(area)
        .margin_top(40)
        .margin_bottom(50)
        .margin_right(10)
        .y_label_area_size(40)
        .build_cartesian_2d(0.0..1.0, 0.0..1.0)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_labels(6)
        .y_desc("s_α(i+1, i)")
        .draw()
        .map_err(|e| e.to_string())?;
    let steps = 100;
    chart
        .draw_series((0..steps).map(|k| {
            let y0 = k as f64 / steps as f64;
            let y1 = (k + 1) as f64 / steps as f64;
            Rectangle::new([(0.0, y0), (1.0, y1)], colour((y0 + y1) / 2.0).filled())
        }))
        .map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_includes_both_ends() {
        assert_eq!(grid(0.1, 1.0, 4).len(), 4);
        assert!((grid(0.1, 1.0, 4)[3] - 1.0).abs() < 1e-15);
        assert_eq!(grid(0.5, 1.0, 1), vec![0.5]);
    }

    #[test]
    fn colours_run_from_dark_to_bright() {
        assert_eq!(colour(0.0), RGBColor(68, 1, 84));
        assert_eq!(colour(1.0), RGBColor(253, 231, 37));
    }
}
