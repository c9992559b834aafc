//! The camera: a perspective view of the scene (z up), framed on the scene's bounding box
//! from a preset direction or placed explicitly (eye, target, vertical field of view).

use std::str::FromStr;

use nalgebra::{Matrix4, Vector3};

use crate::error::{Error, Result};

/// An axis-aligned box of the world: its lowest and its highest corner.
pub type Bounds = ([f64; 3], [f64; 3]);

/// Vertical field of view of the presets, degrees.
pub const DEFAULT_FOV: f64 = 35.0;
/// Empty border around the framed bounds, as a fraction of the view's half width.
const FRAME_MARGIN: f64 = 0.06;

/// Where the camera looks from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CameraSpec {
    /// A direction from the scene's center (a preset), the camera framing the bounds.
    Preset(Preset),
    /// An explicit camera.
    Explicit {
        /// Eye position, m.
        eye: [f64; 3],
        /// The point looked at, m.
        target: [f64; 3],
        /// Vertical field of view, degrees.
        fov: f64,
    },
}

/// The preset directions of `--camera`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Preset {
    /// From the front right and above (azimuth −60°, elevation 25°): the default.
    #[default]
    ThreeQuarter,
    /// From −y, looking along +y: x right, z up.
    Front,
    /// From +x, looking along −x: y right, z up.
    Side,
    /// From above, looking down −z: x right, y up.
    Top,
}

impl Default for CameraSpec {
    fn default() -> Self {
        CameraSpec::Preset(Preset::ThreeQuarter)
    }
}

impl Preset {
    /// Unit vector from the target towards the eye.
    fn direction(self) -> Vector3<f64> {
        match self {
            Preset::ThreeQuarter => {
                let (az, el) = ((-60f64).to_radians(), 25f64.to_radians());
                Vector3::new(el.cos() * az.cos(), el.cos() * az.sin(), el.sin())
            }
            Preset::Front => -Vector3::y(),
            Preset::Side => Vector3::x(),
            Preset::Top => Vector3::z(),
        }
    }
}

impl FromStr for CameraSpec {
    type Err = Error;

    /// `three-quarter`, `front`, `side`, `top`, or `eye=X,Y,Z:target=X,Y,Z[:fov=DEG]`.
    fn from_str(s: &str) -> Result<Self> {
        let bad = |message: String| Error::InvalidSetting {
            name: "--camera",
            value: s.to_string(),
            message,
        };
        let preset = match s {
            "three-quarter" => Some(Preset::ThreeQuarter),
            "front" => Some(Preset::Front),
            "side" => Some(Preset::Side),
            "top" => Some(Preset::Top),
            _ => None,
        };
        if let Some(p) = preset {
            return Ok(CameraSpec::Preset(p));
        }
        let (mut eye, mut target, mut fov) = (None, None, DEFAULT_FOV);
        for part in s.split(':') {
            let (key, value) = part.split_once('=').ok_or_else(|| {
                bad(format!(
                    "`{s}` is neither a preset (three-quarter, front, side, top) nor \
                     `eye=X,Y,Z:target=X,Y,Z[:fov=DEG]`"
                ))
            })?;
            let point = || -> Result<[f64; 3]> {
                let v: Vec<f64> = value
                    .split(',')
                    .map(|x| x.trim().parse::<f64>())
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|e| bad(format!("{key}={value}: {e}")))?;
                <[f64; 3]>::try_from(v)
                    .map_err(|_| bad(format!("{key}={value}: three numbers expected")))
            };
            match key {
                "eye" => eye = Some(point()?),
                "target" => target = Some(point()?),
                "fov" => {
                    fov = value
                        .parse()
                        .map_err(|e| bad(format!("fov={value}: {e}")))?
                }
                _ => return Err(bad(format!("unknown key `{key}` (eye, target, fov)"))),
            }
        }
        let (Some(eye), Some(target)) = (eye, target) else {
            return Err(bad(format!("`{s}`: both eye= and target= are needed")));
        };
        if !(fov > 1.0 && fov < 170.0) {
            return Err(bad(format!("fov={fov}: between 1 and 170 degrees")));
        }
        if Vector3::from(eye) == Vector3::from(target)
            || !eye.iter().chain(&target).all(|x| x.is_finite())
        {
            return Err(bad(format!(
                "`{s}`: eye and target must be distinct finite points"
            )));
        }
        Ok(CameraSpec::Explicit { eye, target, fov })
    }
}

/// A placed perspective camera.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Camera {
    /// Eye position, m.
    pub eye: Vector3<f64>,
    /// The point looked at (the center of the image), m.
    pub target: Vector3<f64>,
    /// Vertical field of view, degrees.
    pub fov: f64,
}

/// The camera's orthonormal frame: right, up, and forward (from the eye to the target).
pub(crate) struct Frame {
    pub(crate) right: Vector3<f64>,
    pub(crate) up: Vector3<f64>,
    pub(crate) forward: Vector3<f64>,
}

impl Camera {
    /// The camera of `spec` for an image of aspect ratio `aspect` (width / height): a preset
    /// looks at the center of `bounds` from its direction, from the nearest distance at which
    /// the eight corners of `bounds` fit the image with a small margin.
    pub fn new(spec: &CameraSpec, bounds: &Bounds, aspect: f64) -> Camera {
        match *spec {
            CameraSpec::Explicit { eye, target, fov } => Camera {
                eye: eye.into(),
                target: target.into(),
                fov,
            },
            CameraSpec::Preset(preset) => {
                let (lo, hi) = (Vector3::from(bounds.0), Vector3::from(bounds.1));
                let target = 0.5 * (lo + hi);
                let direction = preset.direction();
                let mut camera = Camera {
                    eye: target + direction,
                    target,
                    fov: DEFAULT_FOV,
                };
                let f = camera.frame();
                let tan_y = (0.5 * DEFAULT_FOV.to_radians()).tan() * (1.0 - FRAME_MARGIN);
                let tan_x = tan_y * aspect;
                // A corner at (x, y, z) in the frame of the target is inside the view from
                // distance d when |x| ≤ tan_x (d + z) and |y| ≤ tan_y (d + z).
                let distance = corners(&lo, &hi)
                    .iter()
                    .map(|c| {
                        let p = c - target;
                        let z = p.dot(&f.forward);
                        (p.dot(&f.right).abs() / tan_x - z).max(p.dot(&f.up).abs() / tan_y - z)
                    })
                    .fold(1e-6, f64::max);
                camera.eye = target + distance * direction;
                camera
            }
        }
    }

    /// The camera's frame; z is up unless the camera looks straight up or down, where y is.
    pub(crate) fn frame(&self) -> Frame {
        let forward = (self.target - self.eye).normalize();
        let up_hint = if forward.z.abs() > 0.999 {
            Vector3::y()
        } else {
            Vector3::z()
        };
        let right = forward.cross(&up_hint).normalize();
        Frame {
            right,
            up: right.cross(&forward),
            forward,
        }
    }

    /// The view matrix (world → camera: x right, y up, looking along −z) of a world whose
    /// origin was moved to `origin`.
    #[rustfmt::skip]
    fn view_matrix(&self, origin: &Vector3<f64>) -> Matrix4<f64> {
        let f = self.frame();
        let eye = self.eye - origin;
        Matrix4::new(
            f.right.x, f.right.y, f.right.z, -f.right.dot(&eye),
            f.up.x, f.up.y, f.up.z, -f.up.dot(&eye),
            -f.forward.x, -f.forward.y, -f.forward.z, f.forward.dot(&eye),
            0.0, 0.0, 0.0, 1.0,
        )
    }

    /// Projection × view for wgpu's clip space (depth in [0, 1]) with the given near and far
    /// distances, world origin moved to `origin`.
    pub(crate) fn view_projection(
        &self,
        aspect: f64,
        near: f64,
        far: f64,
        origin: &Vector3<f64>,
    ) -> Matrix4<f64> {
        let t = 1.0 / (0.5 * self.fov.to_radians()).tan();
        #[rustfmt::skip]
        let projection = Matrix4::new(
            t / aspect, 0.0, 0.0, 0.0,
            0.0, t, 0.0, 0.0,
            0.0, 0.0, far / (near - far), near * far / (near - far),
            0.0, 0.0, -1.0, 0.0,
        );
        projection * self.view_matrix(origin)
    }

    /// The pixel (x right, y down, continuous: pixel `(i, j)` covers `[i, i+1] × [j, j+1]`)
    /// of a world point in an image of `width × height`, `None` behind the eye.
    pub fn project(&self, p: &Vector3<f64>, width: u32, height: u32) -> Option<[f64; 2]> {
        let f = self.frame();
        let d = p - self.eye;
        let z = d.dot(&f.forward);
        if z <= 0.0 {
            return None;
        }
        let t = (0.5 * self.fov.to_radians()).tan();
        let (w, h) = (f64::from(width), f64::from(height));
        let x = d.dot(&f.right) / (z * t * w / h);
        let y = d.dot(&f.up) / (z * t);
        Some([0.5 * w * (1.0 + x), 0.5 * h * (1.0 - y)])
    }

    /// Pixels per meter in the plane through the target facing the camera.
    pub fn pixels_per_meter(&self, height: u32) -> f64 {
        let distance = (self.target - self.eye).norm();
        0.5 * f64::from(height) / (distance * (0.5 * self.fov.to_radians()).tan())
    }

    /// The nearest and farthest distances along the line of sight of the corners of
    /// `bounds`, kept in front of the eye.
    pub(crate) fn depth_range(&self, bounds: &Bounds) -> (f64, f64) {
        let forward = self.frame().forward;
        let (near, far) = corners(&bounds.0.into(), &bounds.1.into())
            .iter()
            .map(|c| (c - self.eye).dot(&forward))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(n, f), z| {
                (n.min(z), f.max(z))
            });
        let far = far.max(1e-3) * 1.01;
        (near.max(far * 1e-4) * 0.99, far)
    }
}

/// The eight corners of the box `[lo, hi]`.
pub(crate) fn corners(lo: &Vector3<f64>, hi: &Vector3<f64>) -> [Vector3<f64>; 8] {
    std::array::from_fn(|k| {
        Vector3::new(
            if k & 1 == 0 { lo.x } else { hi.x },
            if k & 2 == 0 { lo.y } else { hi.y },
            if k & 4 == 0 { lo.z } else { hi.z },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_and_explicit_cameras_parse() {
        assert_eq!(
            "top".parse::<CameraSpec>().unwrap(),
            CameraSpec::Preset(Preset::Top)
        );
        assert_eq!(
            "eye=1,2,3:target=0,0,1:fov=50"
                .parse::<CameraSpec>()
                .unwrap(),
            CameraSpec::Explicit {
                eye: [1.0, 2.0, 3.0],
                target: [0.0, 0.0, 1.0],
                fov: 50.0
            }
        );
        for bad in [
            "diagonal",
            "eye=1,2:target=0,0,0",
            "eye=1,2,3",
            "eye=0,0,0:target=0,0,0",
            "eye=1,2,3:target=0,0,0:fov=200",
            "eye=1,2,3:target=0,0,0:zoom=2",
        ] {
            let err = bad.parse::<CameraSpec>().unwrap_err();
            assert!(err.to_string().contains("--camera"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_preset_frames_every_corner() {
        let bounds = ([-1.0, -2.0, 0.0], [3.0, 2.0, 1.0]);
        for preset in [
            Preset::ThreeQuarter,
            Preset::Front,
            Preset::Side,
            Preset::Top,
        ] {
            let camera = Camera::new(&CameraSpec::Preset(preset), &bounds, 1.5);
            let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
            for c in corners(&bounds.0.into(), &bounds.1.into()) {
                let p = camera.project(&c, 300, 200).unwrap();
                for k in 0..2 {
                    lo[k] = lo[k].min(p[k]);
                    hi[k] = hi[k].max(p[k]);
                }
            }
            // Inside the image, and touching the margin on one axis.
            assert!(
                lo[0] >= 0.0 && lo[1] >= 0.0 && hi[0] <= 300.0 && hi[1] <= 200.0,
                "{preset:?}"
            );
            let slack = (lo[0].min(300.0 - hi[0]) / 300.0).min(lo[1].min(200.0 - hi[1]) / 200.0);
            assert!(slack < 0.05, "{preset:?}: {lo:?} {hi:?}");
        }
    }

    #[test]
    fn projection_matches_the_matrix() {
        let camera = Camera {
            eye: Vector3::new(3.0, -4.0, 2.0),
            target: Vector3::new(0.5, 0.0, 0.2),
            fov: 40.0,
        };
        let origin = camera.target;
        let m = camera.view_projection(2.0, 0.5, 20.0, &origin);
        let p = Vector3::new(0.3, 0.7, -0.4);
        let q = m * (p - origin).push(1.0);
        let [x, y] = camera.project(&p, 400, 200).unwrap();
        assert!((x - 200.0 * (1.0 + q.x / q.w)).abs() < 1e-9);
        assert!((y - 100.0 * (1.0 - q.y / q.w)).abs() < 1e-9);
        assert!(q.z / q.w > 0.0 && q.z / q.w < 1.0);
        assert!(
            camera
                .project(&(2.0 * camera.eye - camera.target), 400, 200)
                .is_none()
        );
    }
}
