//! The 2-D overlay of a frame, drawn with plotters over the rendered image: a caption (top
//! left), the color bar with its range and units (right), and a scale bar (bottom left).

use std::sync::Once;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{ColorScale, Image, colormap};
use crate::error::{Error, Result};

/// DejaVu Sans (its licence is `assets/DejaVuSans.LICENSE`): the machines this runs on need
/// not have fonts installed, so the labels carry their own.
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

/// Registers the embedded font as `sans-serif` (once per process).
pub(crate) fn register_font() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, FONT)
            .unwrap_or_else(|_| panic!("the embedded font is a valid TrueType file"));
    });
}

/// The pixel rectangle `[x0, x1) × [y0, y1)` of the color bar in an image of `w × h`: the
/// top row has the color of the scale's high end, the bottom row that of its low end.
pub(crate) fn color_bar_rect(w: u32, h: u32) -> (i32, i32, i32, i32) {
    let (w, h) = (w as i32, h as i32);
    let x1 = w - (w / 40).max(8);
    (x1 - (w / 60).max(6), h / 4, x1, h - h / 4)
}

/// A value as a short label: integers as such, otherwise three significant digits.
fn label(v: f64) -> String {
    if v == v.round() && v.abs() < 1e6 {
        format!("{v:.0}")
    } else if v.abs() >= 1e4 || v.abs() < 1e-2 {
        format!("{v:.2e}")
    } else {
        let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
        format!("{v:.digits$}")
    }
}

/// The largest length of the form {1, 2, 5} × 10^k not above `max`.
fn nice_length(max: f64) -> f64 {
    let p = 10f64.powf(max.log10().floor());
    [5.0, 2.0, 1.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&l| l <= max)
        .unwrap_or(p)
}

/// Draws the overlay over `image`: `caption` (if any), the color bar of `scale` and a scale
/// bar for `pixels_per_meter` (the scale in the plane of the camera's target).
pub(crate) fn draw(
    image: &mut Image,
    caption: Option<&str>,
    scale: &ColorScale,
    pixels_per_meter: f64,
) -> Result<()> {
    register_font();
    let (w, h) = (image.width, image.height);
    let mut rgb: Vec<u8> = image
        .rgba
        .chunks_exact(4)
        .flat_map(|p| [p[0], p[1], p[2]])
        .collect();
    // The color bar, pixel by pixel: the high end on the top row, the low end on the bottom.
    let (x0, y0, x1, y1) = color_bar_rect(w, h);
    for y in y0..y1 {
        let color = colormap(f64::from(y1 - 1 - y) / f64::from((y1 - y0 - 1).max(1)));
        for x in x0..x1 {
            let i = 3 * (y as usize * w as usize + x as usize);
            rgb[i..i + 3].copy_from_slice(&color);
        }
    }
    {
        let area = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        let size = (h / 32).clamp(10, 28);
        let font = ("sans-serif", size).into_font().color(&BLACK);
        let fail = |e: &dyn std::fmt::Display| Error::Report(format!("drawing the overlay: {e}"));
        if let Some(text) = caption {
            area.draw_text(text, &font, (size as i32 / 2, size as i32 / 2))
                .map_err(|e| fail(&e))?;
        }
        area.draw(&Rectangle::new(
            [(x0 - 1, y0 - 1), (x1, y1)],
            BLACK.stroke_width(1),
        ))
        .map_err(|e| fail(&e))?;
        let right = font.pos(Pos::new(HPos::Right, VPos::Center));
        area.draw_text(&label(scale.hi), &right, (x0 - 6, y0))
            .map_err(|e| fail(&e))?;
        area.draw_text(&label(scale.lo), &right, (x0 - 6, y1 - 1))
            .map_err(|e| fail(&e))?;
        let above = font.pos(Pos::new(HPos::Right, VPos::Bottom));
        area.draw_text(&scale.label, &above, (x1, y0 - size as i32 / 2))
            .map_err(|e| fail(&e))?;
        // Scale bar: at most a fifth of the width.
        if pixels_per_meter.is_finite() && pixels_per_meter > 0.0 {
            let meters = nice_length(0.2 * f64::from(w) / pixels_per_meter);
            let len = (meters * pixels_per_meter).round() as i32;
            let (bx, by) = (size as i32, h as i32 - size as i32);
            area.draw(&Rectangle::new(
                [(bx, by - 3), (bx + len, by)],
                BLACK.filled(),
            ))
            .map_err(|e| fail(&e))?;
            let below = font.pos(Pos::new(HPos::Left, VPos::Bottom));
            area.draw_text(&format!("{} m", label(meters)), &below, (bx, by - 6))
                .map_err(|e| fail(&e))?;
        }
        area.present().map_err(|e| fail(&e))?;
    }
    for (dst, src) in image.rgba.chunks_exact_mut(4).zip(rgb.chunks_exact(3)) {
        dst[..3].copy_from_slice(src);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_nice_lengths() {
        assert_eq!(label(3.0), "3");
        assert_eq!(label(0.25), "0.250");
        assert_eq!(label(12.345), "12.3");
        assert_eq!(label(0.001234), "1.23e-3");
        assert_eq!(nice_length(0.37), 0.2);
        assert_eq!(nice_length(7.0), 5.0);
        assert_eq!(nice_length(1.0), 1.0);
    }

    #[test]
    fn color_bar_ends_are_the_scale_ends() {
        let mut image = Image {
            width: 320,
            height: 200,
            rgba: vec![255; 320 * 200 * 4],
        };
        let scale = ColorScale::spanning([0.5, 4.0], "speed (m/s)");
        draw(&mut image, Some("caption"), &scale, 100.0).unwrap();
        let (x0, y0, x1, y1) = color_bar_rect(320, 200);
        let x = ((x0 + x1) / 2) as u32;
        assert_eq!(image.pixel(x, y0 as u32)[..3], scale.color(scale.hi));
        assert_eq!(image.pixel(x, (y1 - 1) as u32)[..3], scale.color(scale.lo));
    }
}
