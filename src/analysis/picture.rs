//! The separability map as a picture (SVG or PNG): α across, the gap index i up (labelled with
//! the pair of states it separates at the largest α), colour = `s_α(i+1, i)`, and a colour bar.
//!
//! Text is laid out with a bundled font (DejaVu Sans, `assets/`), so a picture looks the same
//! on every machine and PNGs need no system fonts.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::register_font;

use super::separability::SeparabilityMap;

const WIDTH: u32 = 900;

/// The file formats a map can be drawn in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Svg,
    Png,
}

/// Writes the map to `path` in `format`.
pub fn write(
    format: Format,
    map: &SeparabilityMap,
    names: &[String],
    title: &str,
    path: &Path,
) -> Result<(), String> {
    let size = (WIDTH, height(map));
    match format {
        Format::Svg => draw(
            SVGBackend::new(path, size).into_drawing_area(),
            map,
            names,
            title,
        ),
        Format::Png => draw(
            BitMapBackend::new(path, size).into_drawing_area(),
            map,
            names,
            title,
        ),
    }
}

/// Room for one labelled row per gap, within reason.
fn height(map: &SeparabilityMap) -> u32 {
    (160 + 14 * gaps(map) as u32).clamp(360, 1400)
}

fn gaps(map: &SeparabilityMap) -> usize {
    map.terms.iter().flatten().map(Vec::len).max().unwrap_or(0)
}

/// plotters looks fonts up by family name; ours is registered once, as "sans-serif".
pub(crate) fn register_bundled_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let dejavu: &'static [u8] = include_bytes!("../../assets/DejaVuSans.ttf");
        // The bytes are a valid TrueType file checked in with the source; failure is a build
        // defect, and plotters then reports every text element as an error, not a panic.
        let _ = register_font("sans-serif", FontStyle::Normal, dejavu);
    });
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    map: &SeparabilityMap,
    names: &[String],
    title: &str,
) -> Result<(), String> {
    register_bundled_font();
    let text = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let gaps = gaps(map);
    let label_order = map.orders.last().cloned().unwrap_or_default();
    let label = |i: usize| match (label_order.get(i), label_order.get(i + 1)) {
        (Some(&a), Some(&b)) => format!("{} {}|{}", i + 1, names[a], names[b]),
        _ => format!("{}", i + 1),
    };
    root.fill(&WHITE).map_err(text)?;
    let (plot, bar) = root.split_horizontally(780);
    let (a0, a1) = alpha_extent(&map.alphas);
    let mut chart = ChartBuilder::on(&plot)
        .caption(title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(210)
        .build_cartesian_2d(a0..a1, -0.5..gaps.max(1) as f64 - 0.5)
        .map_err(text)?;
    // Row i is centred on y = i, so a tick at an integer names the row it sits in.
    let row_label = |y: &f64| {
        let i = y.round();
        if (y - i).abs() < 1e-9 && i >= 0.0 {
            label(i as usize)
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("α")
        .y_desc("gap i (state i | state i+1, fast → slow)")
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 15))
        .y_labels(gaps.clamp(1, 40))
        .y_label_formatter(&row_label)
        .draw()
        .map_err(text)?;
    chart
        .draw_series(cells(map, a0, a1).into_iter().map(|(x0, x1, i, v)| {
            let y = i as f64;
            Rectangle::new([(x0, y - 0.5), (x1, y + 0.5)], colour(v).filled())
        }))
        .map_err(text)?;
    draw_colour_bar(&bar)?;
    root.present().map_err(text)
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

fn draw_colour_bar<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>) -> Result<(), String> {
    let text = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let mut chart = ChartBuilder::on(area)
        .margin_top(40)
        .margin_bottom(50)
        .margin_right(10)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..1.0, 0.0..1.0)
        .map_err(text)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_labels(6)
        .y_desc("s_α(i+1, i)")
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 15))
        .draw()
        .map_err(text)?;
    let steps = 100;
    chart
        .draw_series((0..steps).map(|k| {
            let y0 = k as f64 / steps as f64;
            let y1 = (k + 1) as f64 / steps as f64;
            Rectangle::new([(0.0, y0), (1.0, y1)], colour((y0 + y1) / 2.0).filled())
        }))
        .map_err(text)?;
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_run_from_dark_to_bright() {
        assert_eq!(colour(0.0), RGBColor(68, 1, 84));
        assert_eq!(colour(1.0), RGBColor(253, 231, 37));
    }
}
