//! The force–displacement record of a run's linear drives, streamed to
//! `force_displacement.csv`: per step, for every `prescribed` joint with a non-zero
//! `velocity` (a pusher, thesis §5.3.2), how far its body has moved along the prescribed
//! direction and the force it takes to move it so.
//!
//! Columns: `step` (1-based), `time` (s), `joint` (its index among the scene's joints),
//! `displacement` (m: B's anchor from A's anchor along the prescribed direction `ê`, zero
//! when the joint was made), `joint_force` (N: the joint's linear impulse on B over the time
//! step, along `ê`) and `force` (N: the force B passes on along `ê` to what it touches,
//! `joint_force + m g·ê − m Δv·ê / h`, its weight added and its inertia taken out; exact when
//! the drive is B's only joint). Numbers in Rust's shortest round-trip formatting.
//!
//! [`write_chart`] draws such files (`signorini force-chart`) with a reference stiffness.

use std::path::{Path, PathBuf};

use nalgebra::Vector3;

use super::chart::{Line, Panel, write_panels};
use super::steps_csv::CsvFile;
use crate::error::{Error, Result};
use crate::sim::World;
use crate::sim::joint::JointKind;

/// The header line of the CSV file (without the line break).
pub const HEADER: &str = "step,time,joint,displacement,joint_force,force";

/// The name of the file in a run's folder.
pub const FILE: &str = "force_displacement.csv";

/// One linear drive's reading after a step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DriveReading {
    /// The joint.
    pub joint: usize,
    /// Displacement of B along the prescribed direction since the joint was made, m.
    pub displacement: f64,
    /// The joint's force on B along the prescribed direction, N.
    pub joint_force: f64,
    /// The force B passes on along the prescribed direction, N.
    pub force: f64,
}

/// The world direction `ê` of joint `j`'s prescribed velocity when it is a linear drive of a
/// dynamic body (`None` otherwise).
fn direction(world: &World, j: usize) -> Option<Vector3<f64>> {
    let joint = &world.joints[j];
    let JointKind::Prescribed { velocity, .. } = joint.kind else {
        return None;
    };
    let v = Vector3::from(velocity).try_normalize(0.0)?;
    let a = joint
        .body_a
        .map_or_else(Default::default, |i| world.bodies[i].pose.orientation);
    world.bodies[joint.body_b].is_dynamic().then(|| a * v)
}

/// The linear drives of `world`'s joints, as joint indices.
pub fn linear_drives(world: &World) -> Vec<usize> {
    (0..world.joints.len())
        .filter(|&j| direction(world, j).is_some())
        .collect()
}

/// The reading of linear drive `j` after a step whose driven body started at velocity
/// `before` (m/s).
pub fn reading(world: &World, j: usize, before: &Vector3<f64>) -> DriveReading {
    let joint = &world.joints[j];
    let e = direction(world, j).unwrap_or_default();
    let b = &world.bodies[joint.body_b];
    let pa = joint.body_a.map_or(joint.anchor_a, |i| {
        world.bodies[i].pose.to_world(&joint.anchor_a)
    });
    let pb = b.pose.to_world(&joint.anchor_b);
    let h = world.settings.dt;
    // The first three rows are the linear ones, along world x, y, z (`Joint::rows`).
    let gamma = world.joint_impulses(j);
    let impulse = Vector3::new(gamma[0], gamma[1], gamma[2]);
    let joint_force = impulse.dot(&e) / h;
    let weight = b.mass * Vector3::from(world.settings.gravity).dot(&e);
    let inertia = b.mass * (b.velocity - before).dot(&e) / h;
    DriveReading {
        joint: j,
        displacement: (pb - pa).dot(&e),
        joint_force,
        force: joint_force + weight - inertia,
    }
}

/// A `force_displacement.csv` being written, with the driven bodies' velocities before the
/// next step.
#[derive(Debug)]
pub struct DrivesCsv {
    file: CsvFile,
    drives: Vec<usize>,
    before: Vec<Vector3<f64>>,
}

impl DrivesCsv {
    /// Creates the file at `path` for the linear drives of `world`, in its state before the
    /// first step to be written.
    pub fn create(path: &Path, world: &World) -> Result<Self> {
        let drives = linear_drives(world);
        Ok(DrivesCsv {
            file: CsvFile::create(path, HEADER)?,
            before: velocities(world, &drives),
            drives,
        })
    }

    /// Appends one line per drive for the step just taken, flushed.
    pub fn write(&mut self, world: &World) -> Result<()> {
        for (&j, before) in self.drives.iter().zip(&self.before) {
            let r = reading(world, j, before);
            self.file.write(&format!(
                "{},{},{},{},{},{}",
                world.steps, world.time, r.joint, r.displacement, r.joint_force, r.force
            ))?;
        }
        self.before = velocities(world, &self.drives);
        Ok(())
    }

    /// Flushes and syncs the file.
    pub fn finish(self) -> Result<()> {
        self.file.finish()
    }
}

fn velocities(world: &World, drives: &[usize]) -> Vec<Vector3<f64>> {
    drives
        .iter()
        .map(|&j| world.bodies[world.joints[j].body_b].velocity)
        .collect()
}

/// One drive's curve read back from a `force_displacement.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// The joint.
    pub joint: usize,
    /// `(displacement, force)` per step, in step order (m, N).
    pub points: Vec<(f64, f64)>,
}

/// The curves of a `force_displacement.csv` at `path`, one per joint. A missing column or a
/// number that does not parse is an error naming the file and the line.
pub fn read_curves(path: &Path) -> Result<Vec<Curve>> {
    let bad = |line: usize, what: String| {
        Error::Report(format!("{}: line {line}: {what}", path.display()))
    };
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let column = |name: &str| {
        header.iter().position(|h| *h == name).ok_or_else(|| {
            bad(
                1,
                format!("no column `{name}` (header `{HEADER}` expected)"),
            )
        })
    };
    let (joint, displacement, force) =
        (column("joint")?, column("displacement")?, column("force")?);
    let mut curves: Vec<Curve> = Vec::new();
    for (i, line) in lines.enumerate() {
        let fields: Vec<&str> = line.split(',').collect();
        let field = |c: usize| {
            fields.get(c).ok_or_else(|| {
                bad(
                    i + 2,
                    format!("{} fields, {} expected", fields.len(), header.len()),
                )
            })
        };
        let number = |c: usize| -> Result<f64> {
            let text = field(c)?;
            text.parse().map_err(|_| {
                bad(
                    i + 2,
                    format!("`{text}` in column `{}` is not a number", header[c]),
                )
            })
        };
        let j: usize = field(joint)?
            .parse()
            .map_err(|_| bad(i + 2, "the joint is not an index".into()))?;
        let point = (number(displacement)?, number(force)?);
        match curves.iter_mut().find(|c| c.joint == j) {
            Some(c) => c.points.push(point),
            None => curves.push(Curve {
                joint: j,
                points: vec![point],
            }),
        }
    }
    Ok(curves)
}

/// Size in pixels of one panel of [`write_chart`].
const PANEL_SIZE: (u32, u32) = (640, 480);

/// Writes a PNG at `out`: one panel per run (`(caption, force_displacement.csv)`) with its
/// force against displacement, one line per drive, and the line `F = k d` of `reference`
/// (`(label, k in N/m)`, e.g. `48EI/L³`) over the run's displacements.
pub fn write_chart(
    out: &Path,
    title: &str,
    runs: &[(String, PathBuf)],
    reference: Option<(&str, f64)>,
) -> Result<()> {
    // Per run, its curves and then the reference line, as (label, points).
    let mut labelled = Vec::new();
    for (_, path) in runs {
        let curves = read_curves(path)?;
        let reach = curves
            .iter()
            .flat_map(|c| c.points.iter().map(|p| p.0))
            .filter(|d| d.is_finite())
            .fold(0.0, f64::max);
        let mut lines: Vec<_> = curves
            .into_iter()
            .map(|c| (format!("force (joint {})", c.joint), c.points))
            .collect();
        if let Some((label, k)) = reference {
            lines.push((
                format!("{label} = {k} N/m"),
                vec![(0.0, 0.0), (reach, k * reach)],
            ));
        }
        labelled.push(lines);
    }
    let lines: Vec<Vec<Line>> = labelled
        .iter()
        .map(|run| {
            run.iter()
                .map(|(label, points)| Line { label, points })
                .collect()
        })
        .collect();
    let panels: Vec<Panel> = runs
        .iter()
        .zip(&lines)
        .map(|((caption, _), lines)| Panel { caption, lines })
        .collect();
    let size = (PANEL_SIZE.0 * runs.len().max(1) as u32, PANEL_SIZE.1);
    write_panels(out, title, ("displacement (m)", "force (N)"), &panels, size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::report::tests::temp_dir;

    const CSV: &str = "step,time,joint,displacement,joint_force,force\n\
                       1,0.05,0,0.001,10.0,12.0\n1,0.05,3,0.0,0.0,0.0\n\
                       2,0.1,0,0.002,20.0,22.0\n";

    #[test]
    fn curves_read_back_by_joint_and_bad_lines_are_named() {
        let dir = temp_dir("drives-read");
        let path = dir.join(FILE);
        std::fs::write(&path, CSV).unwrap();
        let curves = read_curves(&path).unwrap();
        assert_eq!(
            curves,
            [
                Curve {
                    joint: 0,
                    points: vec![(0.001, 12.0), (0.002, 22.0)]
                },
                Curve {
                    joint: 3,
                    points: vec![(0.0, 0.0)]
                }
            ]
        );
        std::fs::write(&path, CSV.replace("20.0,22.0", "20.0,x")).unwrap();
        let err = read_curves(&path).unwrap_err().to_string();
        assert!(
            err.contains(FILE) && err.contains("line 4") && err.contains("`force`"),
            "{err}"
        );
        std::fs::write(&path, "step,time\n1,0.1\n").unwrap();
        let err = read_curves(&path).unwrap_err().to_string();
        assert!(err.contains("line 1") && err.contains("`joint`"), "{err}");
    }

    #[test]
    fn chart_has_a_panel_per_run() {
        let dir = temp_dir("drives-chart");
        let path = dir.join(FILE);
        std::fs::write(&path, CSV).unwrap();
        let out = dir.join("chart.png");
        let runs = [("a".to_string(), path.clone()), ("b".to_string(), path)];
        write_chart(&out, "t", &runs, Some(("k", 1e4))).unwrap();
        let img = image::open(&out).unwrap().to_rgb8();
        assert_eq!(
            (img.width(), img.height()),
            (2 * PANEL_SIZE.0, PANEL_SIZE.1)
        );
        let missing = [("a".to_string(), dir.join("none.csv"))];
        let err = write_chart(&dir.join("no.png"), "t", &missing, None).unwrap_err();
        assert!(err.to_string().contains("none.csv"), "{err}");
        assert!(!dir.join("no.png").exists());
    }
}
