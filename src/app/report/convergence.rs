//! Convergence charts: residual against iterations and against wall time for several solves
//! on one chart each, log scale (the analogue of paper 004's Figs. 3–6); and the traces
//! themselves as CSV files (`check --trace`).

use std::io::{self, Write};
use std::path::Path;

use plotters::prelude::*;

use super::{write_png, write_text_via_temp};
use crate::error::{Error, Result};
use crate::solver::{Report, TraceEntry};

/// The embedded font, shared with the renderer's overlay.
pub(crate) use crate::render::register_font;

/// One line of the chart: a solver's trace.
#[derive(Debug, Clone, Copy)]
pub struct Series<'a> {
    /// Legend label.
    pub label: &'a str,
    /// The trace (residual per iteration, with wall time).
    pub trace: &'a [TraceEntry],
}

/// The abscissa of a trace entry (iteration or wall time).
type Abscissa = fn(&TraceEntry) -> f64;

/// Residuals below this are drawn at it (a log axis has no zero).
const FLOOR: f64 = 1e-16;

/// Width and height in pixels of the charts of `check --plot`.
pub const DEFAULT_SIZE: (u32, u32) = (1400, 560);

/// Writes each report's trace to `dir/<solver>.csv` (columns iteration, residual,
/// natural_map_inf, time_s, products), creating `dir`.
pub fn write_traces(dir: &Path, reports: &[Report]) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    for r in reports {
        write_text_via_temp(&dir.join(format!("{}.csv", r.solver)), |w| {
            writeln!(w, "iteration,residual,natural_map_inf,time_s,products")?;
            for t in &r.trace {
                writeln!(
                    w,
                    "{},{},{},{},{}",
                    t.iteration, t.residual, t.natural_map_inf, t.time_s, t.products
                )?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Writes a PNG of `size` pixels with two charts side by side, residual vs iteration and
/// residual vs wall time, one line per series, log-scale residual, with a legend.
pub fn write_convergence_plot(
    path: &Path,
    title: &str,
    series: &[Series],
    size: (u32, u32),
) -> Result<()> {
    register_font();
    let residuals = || {
        series
            .iter()
            .flat_map(|s| s.trace.iter().map(|t| t.residual.max(FLOOR)))
    };
    let finite = |v: &f64| v.is_finite();
    let y_min = residuals()
        .filter(finite)
        .fold(f64::INFINITY, f64::min)
        .min(1.0)
        / 2.0;
    let y_max = residuals().filter(finite).fold(FLOOR, f64::max) * 2.0;
    let last = |f: fn(&TraceEntry) -> f64| {
        series
            .iter()
            .filter_map(|s| s.trace.last().map(f))
            .fold(0.0f64, f64::max)
            .max(f64::MIN_POSITIVE)
    };
    let x_iter = last(|t| t.iteration as f64).max(1.0);
    let x_time = last(|t| t.time_s);
    write_png(path, size, |root| {
        root.fill(&WHITE).map_err(io::Error::other)?;
        let (left, right) = root.split_horizontally(size.0 / 2);
        let panels: [(_, &str, f64, Abscissa); 2] = [
            (left, "iteration", x_iter, |t| t.iteration as f64),
            (right, "wall time [s]", x_time, |t| t.time_s),
        ];
        for (area, x_label, x_max, x_of) in panels {
            let mut chart = ChartBuilder::on(&area)
                .caption(title, ("sans-serif", 20))
                .margin(12)
                .x_label_area_size(45)
                .y_label_area_size(75)
                .build_cartesian_2d(0.0..x_max, (y_min..y_max).log_scale())
                .map_err(io::Error::other)?;
            chart
                .configure_mesh()
                .x_desc(x_label)
                .y_desc("residual")
                .y_label_formatter(&|v| format!("{v:.0e}"))
                .draw()
                .map_err(io::Error::other)?;
            for (i, s) in series.iter().enumerate() {
                let color = Palette99::pick(i).to_rgba();
                let points = s
                    .trace
                    .iter()
                    .filter(|t| t.residual.is_finite())
                    .map(|t| (x_of(t), t.residual.max(FLOOR)));
                chart
                    .draw_series(LineSeries::new(points, color.stroke_width(2)))
                    .map_err(io::Error::other)?
                    .label(s.label)
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(3))
                    });
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.9))
                .border_style(BLACK)
                .label_font(("sans-serif", 16))
                .draw()
                .map_err(io::Error::other)?;
        }
        root.present().map_err(io::Error::other)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(rate: f64, n: usize) -> Vec<TraceEntry> {
        (0..=n)
            .map(|k| TraceEntry {
                iteration: k,
                residual: rate.powi(k as i32),
                natural_map_inf: 0.0,
                time_s: 1e-3 * k as f64,
                products: k,
            })
            .collect()
    }

    #[test]
    fn chart_is_written_with_lines_and_legend() {
        let dir = super::super::tests::temp_dir("convergence");
        let path = dir.join("chart.png");
        let (a, b) = (trace(0.5, 40), trace(0.9, 80));
        let series = [
            Series {
                label: "fast",
                trace: &a,
            },
            Series {
                label: "slow",
                trace: &b,
            },
        ];
        write_convergence_plot(&path, "test", &series, DEFAULT_SIZE).unwrap();
        let img = image::open(&path).unwrap().to_rgb8();
        assert_eq!((img.width(), img.height()), (1400, 560));
        // Both colored lines are drawn somewhere: count strongly colored pixels.
        let colored = img
            .pixels()
            .filter(|p| {
                let [r, g, b] = p.0;
                r.max(g).max(b) as i32 - r.min(g).min(b) as i32 > 120
            })
            .count();
        assert!(colored > 500, "{colored} colored pixels");
        // Labels are rendered: dark text pixels exist in the caption band.
        let dark = (0..700)
            .flat_map(|x| (0..30).map(move |y| (x, y)))
            .filter(|&(x, y)| img.get_pixel(x, y).0.iter().all(|c| *c < 100))
            .count();
        assert!(dark > 20, "no caption text");
    }
}
