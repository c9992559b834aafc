//! Frames for ParaView: legacy ASCII VTK files (one per frame) and the `.pvd` collection.
//!
//! A frame is an unstructured grid. Every sphere is one point with a `VTK_VERTEX` cell; draw
//! the spheres with a Glyph filter (sphere glyph, scale by the point array `radius`, color by
//! `speed`). Every box is a `VTK_HEXAHEDRON` cell on its 8 world-frame corners, every
//! cylinder a `VTK_HEXAGONAL_PRISM` (the inscribed prism: 12 points), every tetrahedron of a
//! solid of finite elements a `VTK_TETRA` on the solid's nodes (shared points; the solid's
//! `body` index follows the bodies'). Planes are infinite and are skipped. Arrays:
//! - point data `radius` (sphere radius; 0 on box corners) and `speed` (the body's speed);
//! - cell data `speed` (the body's speed) and `body` (the body's index in the scene).

use std::io::Write;
use std::path::Path;

use nalgebra::Vector3;

use super::{SceneView, box_corners, write_text_via_temp};
use crate::error::Result;
use crate::sim::{Pose, Shape};

/// VTK cell type of a single point.
const VTK_VERTEX: u8 = 1;
/// VTK cell type of a hexahedron.
const VTK_HEXAHEDRON: u8 = 12;
/// VTK cell type of a hexagonal prism.
const VTK_HEXAGONAL_PRISM: u8 = 16;
/// VTK cell type of a linear tetrahedron.
const VTK_TETRA: u8 = 10;

/// The 12 world-frame points of the hexagonal prism inscribed in a cylinder (radius `r`,
/// half length `h`, axis = body z): the hexagon of the cap `z = −h`, then that of `z = +h`,
/// in the same order (VTK's point order of the cell).
fn prism_corners(r: f64, h: f64, pose: &Pose) -> Vec<Vector3<f64>> {
    [-h, h]
        .into_iter()
        .flat_map(|z| {
            (0..6).map(move |k| {
                let t = std::f64::consts::TAU * k as f64 / 6.0;
                pose.to_world(&Vector3::new(r * t.cos(), r * t.sin(), z))
            })
        })
        .collect()
}

/// One cell of the grid: the body it stands for and its points.
struct Cell {
    body: usize,
    kind: u8,
    points: Vec<usize>,
}

/// The grid of a frame, as the legacy format lists it.
#[derive(Default)]
struct Grid {
    points: Vec<Vector3<f64>>,
    radius: Vec<f64>,
    point_speed: Vec<f64>,
    cells: Vec<Cell>,
    cell_speed: Vec<f64>,
}

impl Grid {
    fn of(view: &SceneView) -> Self {
        let mut grid = Grid::default();
        for (body, (shape, pose, speed)) in view.bodies().enumerate() {
            match shape {
                Shape::Sphere { radius } => {
                    grid.add(body, VTK_VERTEX, &[pose.position], *radius, speed);
                }
                Shape::Box { half_extents } => {
                    grid.add(
                        body,
                        VTK_HEXAHEDRON,
                        &box_corners(half_extents, pose),
                        0.0,
                        speed,
                    );
                }
                Shape::Cylinder {
                    radius,
                    half_length,
                } => {
                    grid.add(
                        body,
                        VTK_HEXAGONAL_PRISM,
                        &prism_corners(*radius, *half_length, pose),
                        0.0,
                        speed,
                    );
                }
                Shape::Plane => {}
            }
        }
        for (s, solid) in view.solids.iter().enumerate() {
            let first = grid.points.len();
            let speeds: Vec<f64> = solid.velocities.iter().map(|v| v.norm()).collect();
            grid.points.extend_from_slice(&solid.positions);
            grid.radius.extend(std::iter::repeat_n(0.0, speeds.len()));
            grid.point_speed.extend_from_slice(&speeds);
            for tet in &solid.tets {
                grid.cells.push(Cell {
                    body: view.shapes.len() + s,
                    kind: VTK_TETRA,
                    points: tet.nodes.iter().map(|n| first + n).collect(),
                });
                grid.cell_speed
                    .push(tet.nodes.iter().map(|&n| speeds[n]).sum::<f64>() / 4.0);
            }
        }
        grid
    }

    fn add(&mut self, body: usize, kind: u8, points: &[Vector3<f64>], radius: f64, speed: f64) {
        self.cells.push(Cell {
            body,
            kind,
            points: (self.points.len()..self.points.len() + points.len()).collect(),
        });
        self.cell_speed.push(speed);
        self.points.extend_from_slice(points);
        self.radius
            .extend(std::iter::repeat_n(radius, points.len()));
        self.point_speed
            .extend(std::iter::repeat_n(speed, points.len()));
    }

    fn write(&self, out: &mut impl Write) -> std::io::Result<()> {
        writeln!(out, "# vtk DataFile Version 3.0")?;
        writeln!(out, "signorini frame")?;
        writeln!(out, "ASCII")?;
        writeln!(out, "DATASET UNSTRUCTURED_GRID")?;
        writeln!(out, "POINTS {} double", self.points.len())?;
        for p in &self.points {
            writeln!(out, "{} {} {}", p.x, p.y, p.z)?;
        }
        self.write_cells(out)?;
        if !self.points.is_empty() {
            writeln!(out, "POINT_DATA {}", self.points.len())?;
            write_scalars(out, "radius", &self.radius)?;
            write_scalars(out, "speed", &self.point_speed)?;
        }
        if !self.cells.is_empty() {
            writeln!(out, "CELL_DATA {}", self.cells.len())?;
            write_scalars(out, "speed", &self.cell_speed)?;
            let bodies: Vec<usize> = self.cells.iter().map(|c| c.body).collect();
            write_scalars(out, "body", &bodies)?;
        }
        Ok(())
    }

    fn write_cells(&self, out: &mut impl Write) -> std::io::Result<()> {
        let size: usize = self.cells.iter().map(|c| 1 + c.points.len()).sum();
        writeln!(out, "CELLS {} {size}", self.cells.len())?;
        for cell in &self.cells {
            write!(out, "{}", cell.points.len())?;
            for i in &cell.points {
                write!(out, " {i}")?;
            }
            writeln!(out)?;
        }
        writeln!(out, "CELL_TYPES {}", self.cells.len())?;
        for cell in &self.cells {
            writeln!(out, "{}", cell.kind)?;
        }
        Ok(())
    }
}

/// A scalar array, one value a line; the VTK type follows the Rust type.
fn write_scalars<T: std::fmt::Display + VtkType>(
    out: &mut impl Write,
    name: &str,
    values: &[T],
) -> std::io::Result<()> {
    writeln!(out, "SCALARS {name} {} 1", T::NAME)?;
    writeln!(out, "LOOKUP_TABLE default")?;
    for v in values {
        writeln!(out, "{v}")?;
    }
    Ok(())
}

/// The name of a Rust number type in the legacy VTK format.
trait VtkType {
    const NAME: &'static str;
}

impl VtkType for f64 {
    const NAME: &'static str = "double";
}

impl VtkType for usize {
    const NAME: &'static str = "int";
}

/// Writes one frame of the scene as a legacy ASCII VTK unstructured grid (see the module doc
/// for its cells and arrays). The file appears whole or not at all.
pub fn write_vtk(path: &Path, view: &SceneView) -> Result<()> {
    view.check()?;
    let grid = Grid::of(view);
    write_text_via_temp(path, |out| grid.write(out))
}

/// Writes a ParaView collection (`.pvd`) listing the frames `(time, file)`, where `file` is
/// the frame's path relative to the collection's folder. The file appears whole or not at all.
pub fn write_pvd(path: &Path, frames: &[(f64, String)]) -> Result<()> {
    write_text_via_temp(path, |out| {
        writeln!(out, r#"<?xml version="1.0"?>"#)?;
        writeln!(
            out,
            r#"<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">"#
        )?;
        writeln!(out, "  <Collection>")?;
        for (time, file) in frames {
            writeln!(
                out,
                r#"    <DataSet timestep="{time}" group="" part="0" file="{}"/>"#,
                xml_escape(file)
            )?;
        }
        writeln!(out, "  </Collection>")?;
        writeln!(out, "</VTKFile>")
    })
}

/// `text` with the characters that XML attributes reserve replaced by entities.
fn xml_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&apos;"),
            _ => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::report::tests::temp_dir;
    use crate::sim::Pose;
    use nalgebra::UnitQuaternion;

    /// The whitespace-separated tokens of a legacy VTK file, with a cursor.
    struct Tokens<'a>(std::str::SplitWhitespace<'a>);

    impl<'a> Tokens<'a> {
        /// Skips to the keyword and returns the token after it.
        fn after(&mut self, keyword: &str) -> &'a str {
            self.0.by_ref().find(|t| *t == keyword).expect(keyword);
            self.0.next().unwrap()
        }

        fn numbers<T: std::str::FromStr>(&mut self, n: usize) -> Vec<T>
        where
            T::Err: std::fmt::Debug,
        {
            (0..n)
                .map(|_| self.0.next().unwrap().parse().unwrap())
                .collect()
        }
    }

    #[test]
    fn frame_with_two_spheres_and_a_box() {
        let rotation = UnitQuaternion::from_euler_angles(0.3, -0.2, 0.7);
        let shapes = [
            Shape::Sphere { radius: 0.5 },
            Shape::Plane,
            Shape::Box {
                half_extents: [1.0, 0.5, 0.25],
            },
            Shape::Sphere { radius: 0.25 },
        ];
        let poses = [
            Pose::at(Vector3::new(0.0, 0.0, 1.0)),
            Pose::at(Vector3::zeros()),
            Pose {
                position: Vector3::new(3.0, 1.0, 2.0),
                orientation: rotation,
            },
            Pose::at(Vector3::new(-1.0, 2.0, 0.25)),
        ];
        let speeds = [1.0, 0.0, 2.0, 3.0];
        let view = SceneView {
            shapes: &shapes,
            poses: &poses,
            speeds: &speeds,
            solids: &[],
        };
        let path = temp_dir("vtk-frame").join("frame.vtk");
        write_vtk(&path, &view).unwrap();

        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# vtk DataFile Version 3.0\n"));
        assert!(text.contains("\nDATASET UNSTRUCTURED_GRID\n"));
        let mut t = Tokens(text.split_whitespace());
        assert_eq!(t.after("POINTS"), "10");
        let _type = t.0.next();
        let xyz: Vec<f64> = t.numbers(30);
        // Points: sphere 0, the box's 8 corners, sphere 3.
        assert_eq!(&xyz[0..3], &[0.0, 0.0, 1.0]);
        let corner = poses[2].position + rotation * Vector3::new(-1.0, -0.5, -0.25);
        for k in 0..3 {
            assert!((xyz[3 + k] - corner[k]).abs() < 1e-12);
        }
        assert_eq!(&xyz[27..30], &[-1.0, 2.0, 0.25]);

        assert_eq!(t.after("CELLS"), "3");
        let size: usize = t.numbers(1)[0];
        assert_eq!(size, 2 + 2 + 9);
        let cells: Vec<usize> = t.numbers(size);
        assert_eq!(cells, [1, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 9]);
        assert_eq!(t.after("CELL_TYPES"), "3");
        assert_eq!(t.numbers::<u8>(3), [1, 12, 1]);

        assert_eq!(t.after("POINT_DATA"), "10");
        assert_eq!(t.after("SCALARS"), "radius");
        assert_eq!(t.after("LOOKUP_TABLE"), "default");
        let mut radius = vec![0.5];
        radius.extend([0.0; 8]);
        radius.push(0.25);
        assert_eq!(t.numbers::<f64>(10), radius);

        assert_eq!(t.after("CELL_DATA"), "3");
        assert_eq!(t.after("SCALARS"), "speed");
        assert_eq!(t.after("LOOKUP_TABLE"), "default");
        assert_eq!(t.numbers::<f64>(3), [1.0, 2.0, 3.0]);
    }

    #[test]
    fn solid_tetrahedra_share_their_nodes() {
        use crate::sim::fe::{Material, Solid, TetMesh};
        let mesh = TetMesh::cuboid([0.0; 3], [1.0; 3], [1, 1, 1]);
        let material = Material {
            young: 1e6,
            poisson: 0.3,
            density: 1000.0,
            rayleigh: [0.0; 2],
        };
        let mut solid = Solid::new(&mesh, material, &[], 0.0).unwrap();
        solid.velocities[7] = Vector3::new(0.0, 0.0, 4.0);
        let view = SceneView {
            shapes: &[Shape::Sphere { radius: 0.5 }],
            poses: &[Pose::at(Vector3::zeros())],
            speeds: &[1.0],
            solids: std::slice::from_ref(&solid),
        };
        let path = temp_dir("vtk-solid").join("frame.vtk");
        write_vtk(&path, &view).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut t = Tokens(text.split_whitespace());
        // The sphere's point, then the cube's 8 nodes once.
        assert_eq!(t.after("POINTS"), "9");
        assert_eq!(t.after("CELLS"), "7");
        let size: usize = t.numbers(1)[0];
        let cells: Vec<usize> = t.numbers(size);
        // Every tetrahedron holds node 0 and node 7 of the cube (points 1 and 8).
        for tet in cells[2..].chunks(5) {
            assert_eq!(tet[0], 4);
            assert!(tet[1..].contains(&1) && tet[1..].contains(&8), "{tet:?}");
        }
        assert_eq!(t.after("CELL_TYPES"), "7");
        assert_eq!(t.numbers::<u8>(7), [1, 10, 10, 10, 10, 10, 10]);
        assert_eq!(t.after("CELL_DATA"), "7");
        assert_eq!(t.after("SCALARS"), "speed");
        assert_eq!(t.after("LOOKUP_TABLE"), "default");
        assert_eq!(t.numbers::<f64>(7), [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
    }

    #[test]
    fn hexahedron_has_positive_volume() {
        // VTK's node order: the first face, seen from the fourth node's side, turns
        // counter-clockwise, i.e. (p1 - p0) × (p3 - p0) points towards p4.
        let pose = Pose {
            position: Vector3::new(1.0, -2.0, 0.5),
            orientation: UnitQuaternion::from_euler_angles(1.0, 0.4, -2.0),
        };
        let c = box_corners(&[0.3, 0.2, 0.1], &pose);
        let n = (c[1] - c[0]).cross(&(c[3] - c[0]));
        assert!(n.dot(&(c[4] - c[0])) > 0.0);
    }

    #[test]
    fn hexagonal_prism_lies_on_its_cylinder_with_positive_volume() {
        let pose = Pose {
            position: Vector3::new(1.0, -2.0, 0.5),
            orientation: UnitQuaternion::from_euler_angles(1.0, 0.4, -2.0),
        };
        let c = prism_corners(0.3, 0.7, &pose);
        assert_eq!(c.len(), 12);
        let axis = pose.orientation * Vector3::z();
        for (k, p) in c.iter().enumerate() {
            let d = p - pose.position;
            let z = d.dot(&axis);
            assert!((z - if k < 6 { -0.7 } else { 0.7 }).abs() < 1e-12);
            assert!(((d - axis * z).norm() - 0.3).abs() < 1e-12);
        }
        // The first hexagon turns counter-clockwise seen from the second.
        let n = (c[1] - c[0]).cross(&(c[2] - c[0]));
        assert!(n.dot(&(c[6] - c[0])) > 0.0);
    }

    #[test]
    fn collection_lists_the_frames() {
        let path = temp_dir("vtk-pvd").join("run.pvd");
        let frames = vec![
            (0.0, "frames/frame_0000.vtk".to_string()),
            (0.125, "frames/frame_0001.vtk".to_string()),
            (0.25, "a&b.vtk".to_string()),
        ];
        write_pvd(&path, &frames).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        assert_eq!(lines[0], r#"<?xml version="1.0"?>"#);
        assert!(lines[1].starts_with(r#"<VTKFile type="Collection""#));
        assert_eq!(lines[2], "<Collection>");
        assert_eq!(
            lines[3],
            r#"<DataSet timestep="0" group="" part="0" file="frames/frame_0000.vtk"/>"#
        );
        assert_eq!(
            lines[4],
            r#"<DataSet timestep="0.125" group="" part="0" file="frames/frame_0001.vtk"/>"#
        );
        assert_eq!(
            lines[5],
            r#"<DataSet timestep="0.25" group="" part="0" file="a&amp;b.vtk"/>"#
        );
        assert_eq!(&lines[6..], ["</Collection>", "</VTKFile>"]);
    }
}
