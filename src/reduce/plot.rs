//! The responses of the full and the reduced model drawn together (SVG): one panel per state,
//! the full model's trajectory solid and the reduced model's dashed.

use std::path::Path;

use plotters::prelude::*;

use crate::analysis::picture::register_bundled_font;

const PANEL_HEIGHT: u32 = 180;
const WIDTH: u32 = 900;

/// One variable's trajectories: its name, the full model's values and the reduced model's.
pub struct Response<'a> {
    pub name: &'a str,
    pub full: Vec<f64>,
    pub reduced: Vec<f64>,
}

/// Draws `responses` over `times` into the SVG file `path`.
pub fn write(
    path: &Path,
    title: &str,
    times: &[f64],
    responses: &[Response<'_>],
) -> Result<(), String> {
    register_bundled_font();
    let height = 60 + PANEL_HEIGHT * responses.len().max(1) as u32;
    let root = SVGBackend::new(path, (WIDTH, height)).into_drawing_area();
    let text = |e: DrawingAreaErrorKind<std::io::Error>| e.to_string();
    root.fill(&WHITE).map_err(text)?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(text)?;
    let panels = root.split_evenly((responses.len().max(1), 1));
    let (t0, t1) = (times[0], times[times.len() - 1]);
    for (panel, r) in panels.iter().zip(responses) {
        let values = r.full.iter().chain(&r.reduced).filter(|x| x.is_finite());
        let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
        let pad = if hi > lo {
            0.05 * (hi - lo)
        } else {
            1e-9 + 0.05 * lo.abs()
        };
        let mut chart = ChartBuilder::on(panel)
            .margin(8)
            .x_label_area_size(24)
            .y_label_area_size(70)
            .caption(r.name, ("sans-serif", 14))
            .build_cartesian_2d(t0..t1, (lo - pad)..(hi + pad))
            .map_err(text)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 11))
            .draw()
            .map_err(text)?;
        let line = |values: &[f64]| {
            times
                .iter()
                .zip(values)
                .filter(|(_, v)| v.is_finite())
                .map(|(&t, &v)| (t, v))
                .collect::<Vec<_>>()
        };
        chart
            .draw_series(LineSeries::new(line(&r.full), BLUE.stroke_width(2)))
            .map_err(text)?
            .label("full")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLUE.stroke_width(2)));
        let reduced = line(&r.reduced);
        chart
            .draw_series(DashedLineSeries::new(reduced, 6, 4, RED.stroke_width(2)))
            .map_err(text)?
            .label("reduced")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], RED.stroke_width(2)));
        chart
            .configure_series_labels()
            .label_font(("sans-serif", 11))
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(text)?;
    }
    root.present().map_err(text)
}
