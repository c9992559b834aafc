//! Line charts with the embedded font of [`super::convergence`]: log-log (throughput and
//! time per step against problem size) and linear panels side by side (a pusher's force
//! against its displacement, [`super::drives`]).

use std::io;
use std::path::Path;

use plotters::coord::ranged1d::Ranged;
use plotters::prelude::*;

use super::convergence::register_font;
use super::write_png;
use crate::error::{Error, Result};

/// One line of a chart: a label and its points `(x, y)`, both positive.
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    /// Legend label.
    pub label: &'a str,
    /// The points, in drawing order.
    pub points: &'a [(f64, f64)],
}

/// The range of positive values `v`, widened by a factor 1.5 on each side so that the end
/// points sit inside the frame.
fn log_range(values: impl Iterator<Item = f64>) -> Option<std::ops::Range<f64>> {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    (lo <= hi).then(|| lo / 1.5..hi * 1.5)
}

/// Writes a PNG of `size` pixels: one log-log chart, one line (with point markers) per
/// entry of `lines`, with a legend. Points that are not positive and finite are left out;
/// a chart with no such point at all is an error naming `path`.
pub fn write_loglog_chart(
    path: &Path,
    title: &str,
    (x_desc, y_desc): (&str, &str),
    lines: &[Line],
    size: (u32, u32),
) -> Result<()> {
    register_font();
    let points = || lines.iter().flat_map(|l| l.points.iter().copied());
    let (Some(x_range), Some(y_range)) = (
        log_range(points().map(|p| p.0)),
        log_range(points().map(|p| p.1)),
    ) else {
        return Err(Error::Report(format!(
            "{}: a log-log chart needs at least one positive point",
            path.display()
        )));
    };
    let drawable = |&(x, y): &(f64, f64)| x.is_finite() && y.is_finite() && x > 0.0 && y > 0.0;
    write_png(path, size, |root| {
        root.fill(&WHITE).map_err(io::Error::other)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(75)
            .build_cartesian_2d(x_range.log_scale(), y_range.log_scale())
            .map_err(io::Error::other)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&|v| format!("{v:.0e}"))
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .draw()
            .map_err(io::Error::other)?;
        draw_lines(&mut chart, lines, drawable)?;
        root.present().map_err(io::Error::other)
    })
}

/// Draws `lines` (those of their points that `keep` accepts), each with point markers, and
/// the legend, on `chart`.
fn draw_lines<'a, X, Y>(
    chart: &mut ChartContext<'a, BitMapBackend<'a>, Cartesian2d<X, Y>>,
    lines: &[Line],
    keep: impl Fn(&(f64, f64)) -> bool,
) -> io::Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (i, line) in lines.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let points: Vec<_> = line.points.iter().copied().filter(&keep).collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
            .map_err(io::Error::other)?
            .label(line.label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(3))
            });
        chart
            .draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 4, color.filled())),
            )
            .map_err(io::Error::other)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()
        .map_err(io::Error::other)
}

/// One panel of [`write_panels`]: a caption and its lines.
#[derive(Debug, Clone, Copy)]
pub struct Panel<'a> {
    /// Caption above the panel.
    pub caption: &'a str,
    /// The lines.
    pub lines: &'a [Line<'a>],
}

/// The range from 0 (or the smallest value, when negative) to the largest finite value,
/// widened by 5 % at the top.
fn linear_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let hi = if hi > lo { hi } else { lo + 1.0 };
    lo..hi + 0.05 * (hi - lo)
}

/// Writes a PNG of `size` pixels: `panels` side by side under `title`, each a linear chart
/// from the origin with its own ranges, one line (with point markers) per entry, and a
/// legend. Points that are not finite are left out; no panel, or a panel with no finite
/// point, is an error naming `path`.
pub fn write_panels(
    path: &Path,
    title: &str,
    (x_desc, y_desc): (&str, &str),
    panels: &[Panel],
    size: (u32, u32),
) -> Result<()> {
    register_font();
    let finite = |&(x, y): &(f64, f64)| x.is_finite() && y.is_finite();
    let empty = panels
        .iter()
        .find(|p| !p.lines.iter().flat_map(|l| l.points).any(finite));
    if panels.is_empty() || empty.is_some() {
        return Err(Error::Report(format!(
            "{}: a chart needs panels with a finite point each{}",
            path.display(),
            empty.map_or(String::new(), |p| format!(" (\"{}\" has none)", p.caption))
        )));
    }
    write_png(path, size, |root| {
        root.fill(&WHITE).map_err(io::Error::other)?;
        let root = root
            .titled(title, ("sans-serif", 22))
            .map_err(io::Error::other)?;
        for (area, panel) in root.split_evenly((1, panels.len())).iter().zip(panels) {
            let points = || panel.lines.iter().flat_map(|l| l.points.iter().copied());
            let mut chart = ChartBuilder::on(area)
                .caption(panel.caption, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(45)
                .y_label_area_size(70)
                .build_cartesian_2d(
                    linear_range(points().map(|p| p.0)),
                    linear_range(points().map(|p| p.1)),
                )
                .map_err(io::Error::other)?;
            chart
                .configure_mesh()
                .x_desc(x_desc)
                .y_desc(y_desc)
                .draw()
                .map_err(io::Error::other)?;
            draw_lines(&mut chart, panel.lines, finite)?;
        }
        root.present().map_err(io::Error::other)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_draws_its_lines_and_rejects_an_empty_one() {
        let dir = super::super::tests::temp_dir("loglog");
        let path = dir.join("chart.png");
        let a = [(1e3, 1e6), (1e4, 2e6), (1e5, 4e6)];
        let b = [(1e3, 1e5), (1e4, f64::NAN), (1e5, 1e7)];
        let lines = [
            Line {
                label: "cpu",
                points: &a,
            },
            Line {
                label: "gpu",
                points: &b,
            },
        ];
        write_loglog_chart(&path, "t", ("contacts", "rate"), &lines, (640, 400)).unwrap();
        let img = image::open(&path).unwrap().to_rgb8();
        assert_eq!((img.width(), img.height()), (640, 400));
        let colored = img
            .pixels()
            .filter(|p| {
                let [r, g, b] = p.0;
                r.max(g).max(b) as i32 - r.min(g).min(b) as i32 > 120
            })
            .count();
        assert!(colored > 300, "{colored} colored pixels");
        let empty = [Line {
            label: "none",
            points: &[(0.0, 1.0)],
        }];
        let err = write_loglog_chart(&dir.join("e.png"), "t", ("x", "y"), &empty, (64, 64));
        assert!(err.is_err());
        assert!(!dir.join("e.png").exists());
    }

    #[test]
    fn panels_need_a_finite_point_each() {
        let dir = super::super::tests::temp_dir("panels");
        let good = [Line {
            label: "f",
            points: &[(0.0, 0.0), (0.01, 120.0)],
        }];
        let bad = [Line {
            label: "nan",
            points: &[(f64::NAN, 1.0)],
        }];
        let panel = |caption, lines| Panel { caption, lines };
        let path = dir.join("p.png");
        write_panels(&path, "t", ("d", "F"), &[panel("a", &good)], (320, 240)).unwrap();
        assert!(path.exists());
        let err = write_panels(
            &dir.join("q.png"),
            "t",
            ("d", "F"),
            &[panel("a", &good), panel("b", &bad)],
            (320, 240),
        )
        .unwrap_err();
        assert!(err.to_string().contains("\"b\" has none"), "{err}");
        assert!(!dir.join("q.png").exists());
    }
}
