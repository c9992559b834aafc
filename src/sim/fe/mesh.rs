//! Tetrahedral meshes: the box generator and the Gmsh `.msh` (v4 ASCII) reader, and the
//! boundary faces of a mesh.

use std::collections::HashMap;
use std::path::Path;

use crate::error::{Error, Result};

/// Nodes and 4-node tetrahedra.
#[derive(Debug, Clone, PartialEq)]
pub struct TetMesh {
    /// Node positions, m.
    pub nodes: Vec<[f64; 3]>,
    /// Node indices of each tetrahedron.
    pub tets: Vec<[usize; 4]>,
}

impl TetMesh {
    /// The box `[min, max]` split in `cells` hexahedra along x, y, z, each cut into the 6
    /// tetrahedra of the Kuhn (Freudenthal) subdivision around its diagonal from the lower
    /// to the upper corner: all cells cut their faces along the same diagonal, so the mesh
    /// is conforming. Node `(i, j, k)` has index `i + (cx + 1)(j + (cy + 1) k)`.
    pub fn cuboid(min: [f64; 3], max: [f64; 3], cells: [usize; 3]) -> TetMesh {
        let [cx, cy, cz] = cells;
        let index = |i: usize, j: usize, k: usize| i + (cx + 1) * (j + (cy + 1) * k);
        let mut nodes = Vec::with_capacity((cx + 1) * (cy + 1) * (cz + 1));
        for k in 0..=cz {
            for j in 0..=cy {
                for i in 0..=cx {
                    let t = [
                        i as f64 / cx as f64,
                        j as f64 / cy as f64,
                        k as f64 / cz as f64,
                    ];
                    nodes.push(std::array::from_fn(|d| min[d] + t[d] * (max[d] - min[d])));
                }
            }
        }
        // The six paths from corner 0 to corner 7 along the axes, one per axis order.
        const ORDERS: [[usize; 3]; 6] = [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ];
        let mut tets = Vec::with_capacity(6 * cx * cy * cz);
        for k in 0..cz {
            for j in 0..cy {
                for i in 0..cx {
                    let corner =
                        |bits: usize| index(i + (bits & 1), j + (bits >> 1 & 1), k + (bits >> 2));
                    for [a, b, _] in ORDERS {
                        let first = 1 << a;
                        let second = first | 1 << b;
                        tets.push([corner(0), corner(first), corner(second), corner(7)]);
                    }
                }
            }
        }
        TetMesh { nodes, tets }
    }

    /// Reads a Gmsh mesh file (format 4.1, ASCII); see [`TetMesh::parse_gmsh`].
    pub fn read_gmsh(path: &Path) -> Result<TetMesh> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse_gmsh(&text, &path.display().to_string())
    }

    /// Parses the `$Nodes` and `$Elements` sections of a Gmsh `.msh` v4 ASCII file, keeping
    /// the 4-node tetrahedra (element type 4) and ignoring the other elements (points,
    /// lines, triangles of the boundary). `file` names the file in errors, which also give
    /// the line.
    pub fn parse_gmsh(text: &str, file: &str) -> Result<TetMesh> {
        let mut lines = Lines {
            iter: text.lines().enumerate(),
            file,
            line: 0,
            section: "mesh",
        };
        let mut version_seen = false;
        let mut tags: HashMap<usize, usize> = HashMap::new();
        let mut nodes = Vec::new();
        let mut tets = Vec::new();
        while let Some(header) = lines.next_line() {
            let header = header.trim();
            if header.starts_with('$') && !header.starts_with("$End") {
                lines.section = header;
            }
            match header {
                "$MeshFormat" => {
                    let fields = lines.fields(3, "version file-type data-size")?;
                    if !fields[0].starts_with('4') || fields[1] != "0" {
                        return Err(lines.error(format!(
                            "format `{} {}`: only Gmsh 4 ASCII (`4.1 0 8`) is read",
                            fields[0], fields[1]
                        )));
                    }
                    version_seen = true;
                }
                "$Nodes" => {
                    let [blocks, count] = lines.numbers::<2>("numEntityBlocks numNodes")?;
                    nodes.reserve(count);
                    for _ in 0..blocks {
                        let [_, _, parametric, n] =
                            lines.numbers::<4>("entityDim entityTag parametric numNodesInBlock")?;
                        if parametric != 0 {
                            return Err(lines.error("parametric nodes are not supported".into()));
                        }
                        let first = nodes.len();
                        for k in 0..n {
                            let [tag] = lines.numbers::<1>("nodeTag")?;
                            tags.insert(tag, first + k);
                        }
                        for _ in 0..n {
                            nodes.push(lines.coordinates()?);
                        }
                    }
                }
                "$Elements" => {
                    let [blocks, _] = lines.numbers::<2>("numEntityBlocks numElements")?;
                    for _ in 0..blocks {
                        let [_, _, kind, n] = lines
                            .numbers::<4>("entityDim entityTag elementType numElementsInBlock")?;
                        for _ in 0..n {
                            if kind != 4 {
                                lines.next_line();
                                continue;
                            }
                            let [_, a, b, c, d] =
                                lines.numbers::<5>("elementTag and 4 node tags")?;
                            let node = |t: usize| {
                                tags.get(&t).copied().ok_or_else(|| {
                                    lines.error(format!("node tag {t} is not in $Nodes"))
                                })
                            };
                            tets.push([node(a)?, node(b)?, node(c)?, node(d)?]);
                        }
                    }
                }
                _ => {}
            }
        }
        if !version_seen {
            return Err(Error::Scene {
                file: file.to_string(),
                line: None,
                key: "$MeshFormat".into(),
                message: "missing: not a Gmsh .msh file".into(),
            });
        }
        if tets.is_empty() {
            return Err(Error::Scene {
                file: file.to_string(),
                line: None,
                key: "$Elements".into(),
                message: "no 4-node tetrahedra (element type 4)".into(),
            });
        }
        Ok(TetMesh { nodes, tets })
    }
}

/// The boundary triangles: the faces that belong to one tetrahedron only, each oriented
/// with its normal pointing out of the mesh (given positively oriented tetrahedra).
pub fn boundary_faces(tets: &[[usize; 4]]) -> Vec<[usize; 3]> {
    // Faces opposite node 0, 1, 2, 3 of a positive tet [0, 1, 2, 3], outward.
    const FACES: [[usize; 3]; 4] = [[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]];
    let mut count: HashMap<[usize; 3], (usize, [usize; 3])> = HashMap::new();
    for t in tets {
        for f in FACES {
            let face = f.map(|i| t[i]);
            let mut key = face;
            key.sort_unstable();
            count.entry(key).or_insert((0, face)).0 += 1;
        }
    }
    let mut faces: Vec<[usize; 3]> = count
        .into_values()
        .filter(|(n, _)| *n == 1)
        .map(|(_, f)| f)
        .collect();
    faces.sort_unstable();
    faces
}

/// The lines of a mesh file with their numbers, for errors that name them.
struct Lines<'a, I> {
    iter: I,
    file: &'a str,
    line: usize,
    /// The section being read (`$Nodes`), the key of errors.
    section: &'a str,
}

impl<'a, I: Iterator<Item = (usize, &'a str)>> Lines<'a, I> {
    fn next_line(&mut self) -> Option<&'a str> {
        let (i, l) = self.iter.next()?;
        self.line = i + 1;
        Some(l)
    }

    fn error(&self, message: String) -> Error {
        Error::Scene {
            file: self.file.to_string(),
            line: Some(self.line),
            key: self.section.to_string(),
            message,
        }
    }

    /// The next line's first `n` whitespace-separated fields.
    fn fields(&mut self, n: usize, what: &str) -> Result<Vec<&'a str>> {
        let Some(l) = self.next_line() else {
            self.line += 1;
            return Err(self.error(format!("file ends where `{what}` was expected")));
        };
        let fields: Vec<&str> = l.split_whitespace().collect();
        if fields.len() < n {
            return Err(self.error(format!(
                "expected {n} fields ({what}), found {}",
                fields.len()
            )));
        }
        Ok(fields)
    }

    /// The next line's first `N` fields as non-negative integers.
    fn numbers<const N: usize>(&mut self, what: &str) -> Result<[usize; N]> {
        let fields = self.fields(N, what)?;
        let mut out = [0; N];
        for (o, f) in out.iter_mut().zip(&fields) {
            *o = f
                .parse()
                .map_err(|_| self.error(format!("`{f}` is not a non-negative integer ({what})")))?;
        }
        Ok(out)
    }

    /// The next line as three finite coordinates.
    fn coordinates(&mut self) -> Result<[f64; 3]> {
        let fields = self.fields(3, "x y z")?;
        let mut out = [0.0; 3];
        for (o, f) in out.iter_mut().zip(&fields) {
            *o = f
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| self.error(format!("`{f}` is not a finite coordinate")))?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuboid_is_conforming_with_the_expected_counts() {
        let m = TetMesh::cuboid([0.0; 3], [2.0, 1.0, 1.0], [2, 1, 1]);
        assert_eq!(m.nodes.len(), 12);
        assert_eq!(m.tets.len(), 12);
        // Boundary of a 2×1×1 box: 10 unit squares, 2 triangles each.
        assert_eq!(boundary_faces(&m.tets).len(), 20);
    }

    const MSH: &str = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 4 1 4\n3 1 0 4\n1\n2\n3\n4\n\
0 0 0\n1 0 0\n0 1 0\n0 0 1\n$EndNodes\n$Elements\n2 2 1 2\n2 1 2 1\n1 1 2 3\n3 1 4 1\n2 1 2 3 4\n\
$EndElements\n";

    #[test]
    fn gmsh_tetrahedra_are_read_and_errors_name_the_line() {
        let m = TetMesh::parse_gmsh(MSH, "t.msh").unwrap();
        assert_eq!(m.nodes.len(), 4);
        assert_eq!(m.tets, vec![[0, 1, 2, 3]]);
        let bad = MSH.replace("2 1 2 3 4", "2 1 2 3 9");
        let err = TetMesh::parse_gmsh(&bad, "t.msh").unwrap_err().to_string();
        assert!(
            err.contains("t.msh") && err.contains("line 21") && err.contains("9"),
            "{err}"
        );
        let bad = MSH.replace("0 1 0\n", "0 x 0\n");
        let err = TetMesh::parse_gmsh(&bad, "t.msh").unwrap_err().to_string();
        assert!(err.contains("line 13") && err.contains("`x`"), "{err}");
        let old = MSH.replace("4.1 0 8", "2.2 0 8");
        let err = TetMesh::parse_gmsh(&old, "t.msh").unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("2.2"), "{err}");
    }
}
