//! Output of a simulation: rendered PNG snapshots and animations, VTK frames for ParaView and
//! the per-step CSV; convergence charts and CSV files of solver traces; the tables the
//! command line prints.
//!
//! - [`convergence`]: residual vs iteration and vs time for several solves, log scale.
//! - [`chart`]: log-log line charts (benchmark figures against problem size).
//! - [`frame`]: rendered frames ([`crate::render`]) as PNG files and animations (GIF, APNG, MP4).
//! - [`vtk`]: one legacy VTK file per frame and the `.pvd` collection that lists them.
//! - [`steps_csv`]: the per-step statistics, streamed to `steps.csv`.
//! - [`drives`]: the displacement and force of the prescribed linear drives (a pusher),
//!   streamed to `force_displacement.csv`.
//! - [`trajectory`]: the streamed trajectory file of a run (poses per snapshot), and its reader.
//! - [`tables`]: the text the command line prints (solve and check tables, the summary of
//!   a simulation, the GPU adapters).
//!
//! Whole files (snapshots, frames, collections) are written to a temporary file in the target's
//! folder and renamed over the target, so that a reader never sees a half-written file.

pub mod chart;
pub mod convergence;
pub mod drives;
pub mod frame;
pub mod steps_csv;
pub mod tables;
pub mod trajectory;
pub mod vtk;

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use nalgebra::Vector3;

pub use steps_csv::StepsCsv;
pub use vtk::{write_pvd, write_vtk};

use crate::error::{Error, Result};
use crate::sim::fe::Solid;
use crate::sim::{Pose, Shape};

/// The state of a scene at one instant, as the writers of this module see it: body `i` has
/// shape `shapes[i]`, pose `poses[i]` and speed `speeds[i]`; the solids follow.
#[derive(Debug, Clone, Copy)]
pub struct SceneView<'a> {
    /// The shape of every body.
    pub shapes: &'a [Shape],
    /// The pose of every body.
    pub poses: &'a [Pose],
    /// The speed of every body (norm of the linear velocity), m/s.
    pub speeds: &'a [f64],
    /// The solids of finite elements.
    pub solids: &'a [Solid],
}

impl SceneView<'_> {
    /// Checks that the three slices have the same length.
    pub fn check(&self) -> Result<()> {
        let n = self.shapes.len();
        for (field, len) in [("poses", self.poses.len()), ("speeds", self.speeds.len())] {
            if len != n {
                return Err(Error::invalid(
                    format!("scene_view.{field}"),
                    format!("{len} entries for {n} shapes"),
                ));
            }
        }
        Ok(())
    }

    /// The bodies as `(shape, pose, speed)` triples.
    pub fn bodies(&self) -> impl Iterator<Item = (&Shape, &Pose, f64)> + '_ {
        self.shapes
            .iter()
            .zip(self.poses)
            .zip(self.speeds)
            .map(|((shape, pose), &speed)| (shape, pose, speed))
    }
}

/// The 8 world-frame corners of a box, in the node order of a VTK hexahedron: the face at
/// body `-z` counter-clockwise seen from `+z`, starting at `(-,-,-)`, then the face at `+z`.
pub(crate) fn box_corners(half_extents: &[f64; 3], pose: &Pose) -> [Vector3<f64>; 8] {
    const SIGNS: [[f64; 3]; 8] = [
        [-1.0, -1.0, -1.0],
        [1.0, -1.0, -1.0],
        [1.0, 1.0, -1.0],
        [-1.0, 1.0, -1.0],
        [-1.0, -1.0, 1.0],
        [1.0, -1.0, 1.0],
        [1.0, 1.0, 1.0],
        [-1.0, 1.0, 1.0],
    ];
    let [hx, hy, hz] = *half_extents;
    SIGNS.map(|[sx, sy, sz]| pose.to_world(&Vector3::new(sx * hx, sy * hy, sz * hz)))
}

/// The temporary file that stands for `path` while it is written: same folder, same extension
/// (some encoders choose the format by the extension), a name that no other process uses.
pub(crate) fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(".{}.{name}", std::process::id()))
}

/// Writes `path` through `write`, which receives the temporary file's path and must create it;
/// the temporary file is then renamed over `path`, or removed if anything failed.
pub(crate) fn write_via_temp(
    path: &Path,
    write: impl FnOnce(&Path) -> std::io::Result<()>,
) -> Result<()> {
    let temp = temp_path(path);
    let result = write(&temp).and_then(|()| std::fs::rename(&temp, path));
    result.map_err(|source| {
        // Best effort: the temporary file may not even exist.
        let _ = std::fs::remove_file(&temp);
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// Draws a chart of `size` pixels into memory with `draw` (which gets the whole area and
/// must `present` it), then writes it to `path` as a PNG with the best compression and
/// adaptive filters (the charts' flat colours shrink to about half the default size).
pub(crate) fn write_png(
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(
        plotters::drawing::DrawingArea<plotters::prelude::BitMapBackend<'_>, plotters::coord::Shift>,
    ) -> std::io::Result<()>,
) -> Result<()> {
    use image::ImageEncoder;
    use image::codecs::png::{CompressionType, FilterType, PngEncoder};
    use plotters::prelude::{BitMapBackend, IntoDrawingArea};
    let mut pixels = vec![0u8; 3 * size.0 as usize * size.1 as usize];
    draw(BitMapBackend::with_buffer(&mut pixels, size).into_drawing_area()).map_err(|source| {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    })?;
    write_via_temp(path, |temp| {
        let mut out = BufWriter::new(File::create(temp)?);
        PngEncoder::new_with_quality(&mut out, CompressionType::Best, FilterType::Adaptive)
            .write_image(&pixels, size.0, size.1, image::ColorType::Rgb8)
            .map_err(std::io::Error::other)?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()
    })
}

/// Writes the text file `path` through `write` (buffered, temporary file then rename).
pub(crate) fn write_text_via_temp(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> Result<()> {
    write_via_temp(path, |temp| {
        let mut out = BufWriter::new(File::create(temp)?);
        write(&mut out)?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use nalgebra::UnitQuaternion;
    use std::io::Write;

    /// A fresh, empty folder under the system's temporary folder, unique to this test run.
    pub(crate) fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("signorini-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn box_corners_follow_the_pose() {
        let pose = Pose {
            position: Vector3::new(1.0, 2.0, 3.0),
            orientation: UnitQuaternion::from_axis_angle(
                &Vector3::z_axis(),
                std::f64::consts::FRAC_PI_2,
            ),
        };
        let c = box_corners(&[1.0, 2.0, 3.0], &pose);
        // Body (-1,-2,-3) rotated a quarter turn about z is (2,-1,-3).
        assert!((c[0] - Vector3::new(3.0, 1.0, 0.0)).norm() < 1e-12);
        assert!((c[6] - Vector3::new(-1.0, 3.0, 6.0)).norm() < 1e-12);
    }

    #[test]
    fn check_rejects_mismatched_lengths() {
        let shapes = [Shape::Plane];
        let poses = [Pose::at(Vector3::zeros())];
        let ok = SceneView {
            shapes: &shapes,
            poses: &poses,
            speeds: &[0.0],
            solids: &[],
        };
        assert!(ok.check().is_ok());
        let bad = SceneView { speeds: &[], ..ok };
        assert!(matches!(bad.check(), Err(Error::InvalidProblem { .. })));
    }

    #[test]
    fn failed_writes_leave_no_file_and_name_the_target() {
        let dir = temp_dir("via-temp");
        let path = dir.join("out.txt");
        let err = write_text_via_temp(&path, |_| Err(std::io::Error::other("boom"))).unwrap_err();
        assert!(matches!(&err, Error::Io { path: p, .. } if p == &path));
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        write_text_via_temp(&path, |w| w.write_all(b"ok")).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "ok");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    }
}
