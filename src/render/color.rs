//! Coloring bodies by a field: the fields, their per-body values, the color scale and the
//! colormap (viridis).

use std::str::FromStr;

use crate::error::{Error, Result};
use crate::sim::World;

/// The per-body quantity that colors the bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorField {
    /// Norm of the linear velocity, m/s.
    #[default]
    Speed,
    /// Number of contact points of the body in the last step.
    Contacts,
    /// Sum of the norms of the body's contact impulses in the last step, N·s.
    Impulse,
    /// The body's index in the scene.
    BodyId,
}

impl ColorField {
    /// Every field, in the order of `--color-by`'s help.
    pub const ALL: [ColorField; 4] = [
        ColorField::Speed,
        ColorField::Contacts,
        ColorField::Impulse,
        ColorField::BodyId,
    ];

    /// The name `--color-by` takes.
    pub fn name(self) -> &'static str {
        match self {
            ColorField::Speed => "speed",
            ColorField::Contacts => "contacts",
            ColorField::Impulse => "impulse",
            ColorField::BodyId => "body-id",
        }
    }

    /// The label of the color bar, with the units.
    pub fn label(self) -> &'static str {
        match self {
            ColorField::Speed => "speed (m/s)",
            ColorField::Contacts => "contacts",
            ColorField::Impulse => "contact impulse (N·s)",
            ColorField::BodyId => "body id",
        }
    }

    /// The value of the field for every body of `world`.
    pub fn values(self, world: &World) -> Vec<f64> {
        match self {
            ColorField::Speed => world.bodies.iter().map(|b| b.velocity.norm()).collect(),
            ColorField::BodyId => (0..world.bodies.len()).map(|i| i as f64).collect(),
            ColorField::Contacts | ColorField::Impulse => {
                let mut values = vec![0.0; world.bodies.len()];
                for ((a, b), impulse) in world.contact_impulses() {
                    let v = if self == ColorField::Contacts {
                        1.0
                    } else {
                        impulse.iter().map(|x| x * x).sum::<f64>().sqrt()
                    };
                    values[a] += v;
                    values[b] += v;
                }
                values
            }
        }
    }
}

impl FromStr for ColorField {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        ColorField::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = ColorField::ALL.iter().map(|f| f.name()).collect();
                Error::InvalidSetting {
                    name: "--color-by",
                    value: s.to_string(),
                    message: format!("one of {}", names.join(", ")),
                }
            })
    }
}

/// The range of values the colormap spans, with the label of its color bar.
#[derive(Debug, Clone, PartialEq)]
pub struct ColorScale {
    /// Value of the lowest color.
    pub lo: f64,
    /// Value of the highest color.
    pub hi: f64,
    /// What the values are, with their units.
    pub label: String,
}

impl ColorScale {
    /// The smallest scale that holds every finite value of `values` (`[0, 1]` when there is
    /// none; widened by one when they are all equal).
    pub fn spanning(values: impl IntoIterator<Item = f64>, label: &str) -> ColorScale {
        let (lo, hi) = values
            .into_iter()
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            });
        let (lo, hi) = if lo > hi { (0.0, 1.0) } else { (lo, hi) };
        ColorScale {
            lo,
            hi: if hi > lo { hi } else { lo + 1.0 },
            label: label.to_string(),
        }
    }

    /// This scale widened to hold `other`'s range too (the running scale of an animation,
    /// which never shrinks).
    pub fn union(&self, other: &ColorScale) -> ColorScale {
        ColorScale {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
            label: self.label.clone(),
        }
    }

    /// The sRGB color of `value`; values outside the scale take the color of its nearest end.
    pub fn color(&self, value: f64) -> [u8; 3] {
        colormap((value - self.lo) / (self.hi - self.lo))
    }
}

/// Viridis sampled at nine evenly spaced points (matplotlib's table), sRGB.
pub(crate) const VIRIDIS: [[u8; 3]; 9] = [
    [68, 1, 84],
    [71, 44, 122],
    [59, 81, 139],
    [44, 113, 142],
    [33, 144, 141],
    [39, 173, 129],
    [92, 200, 99],
    [170, 220, 50],
    [253, 231, 37],
];

/// The colormap at `t ∈ [0, 1]` (clamped; NaN is the low end): piecewise linear viridis.
pub fn colormap(t: f64) -> [u8; 3] {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let x = t * (VIRIDIS.len() - 1) as f64;
    let k = (x.floor() as usize).min(VIRIDIS.len() - 2);
    let f = x - k as f64;
    let (a, b) = (VIRIDIS[k], VIRIDIS[k + 1]);
    std::array::from_fn(|c| {
        (f64::from(a[c]) + f * (f64::from(b[c]) - f64::from(a[c]))).round() as u8
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colormap_ends_and_clamping() {
        assert_eq!(colormap(0.0), VIRIDIS[0]);
        assert_eq!(colormap(1.0), VIRIDIS[8]);
        assert_eq!(colormap(-3.0), VIRIDIS[0]);
        assert_eq!(colormap(7.0), VIRIDIS[8]);
        assert_eq!(colormap(f64::NAN), VIRIDIS[0]);
        assert_eq!(colormap(0.5), VIRIDIS[4]);
        assert_eq!(colormap(0.0625), [70, 23, 103]);
    }

    #[test]
    fn scale_spans_the_values() {
        let s = ColorScale::spanning([2.0, f64::NAN, -1.0, 0.5], "x");
        assert_eq!((s.lo, s.hi), (-1.0, 2.0));
        assert_eq!(s.color(-1.0), VIRIDIS[0]);
        assert_eq!(s.color(2.0), VIRIDIS[8]);
        let flat = ColorScale::spanning([3.0, 3.0], "x");
        assert_eq!((flat.lo, flat.hi), (3.0, 4.0));
        let empty = ColorScale::spanning([], "x");
        assert_eq!((empty.lo, empty.hi), (0.0, 1.0));
        let u = s.union(&ColorScale::spanning([5.0], "y"));
        assert_eq!((u.lo, u.hi, u.label.as_str()), (-1.0, 6.0, "x"));
    }

    #[test]
    fn fields_parse_by_name() {
        for f in ColorField::ALL {
            assert_eq!(f.name().parse::<ColorField>().unwrap(), f);
        }
        let err = "mass".parse::<ColorField>().unwrap_err().to_string();
        assert!(
            err.contains("--color-by") && err.contains("body-id"),
            "{err}"
        );
    }
}
