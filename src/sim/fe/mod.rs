//! Finite elements: deformable solids of 4-node corotational linear-elastic tetrahedra
//! ([`element`]), their meshes ([`mesh`]: the box generator and the Gmsh reader), and their
//! part of the step's global problem ([`assembly`]: `H = M + h D + h² K`, the node contacts).
//!
//! A solid's nodes are 3-degree-of-freedom point masses. The mass is lumped (each element
//! gives a quarter of its mass to each of its nodes): a diagonal `M` like the rigid bodies'
//! blocks, so that `H`'s pattern is that of the stiffness alone, at the price of a slightly
//! lower frequency of the bending modes than with the consistent mass (the quasi-static
//! tests do not see it). Fixed nodes have no unknowns.

pub mod assembly;
pub mod element;
pub mod mesh;

use nalgebra::Vector3;

pub use element::{Material, Tet};
pub use mesh::TetMesh;

type V3 = Vector3<f64>;

/// A deformable solid of tetrahedra.
#[derive(Debug, Clone, PartialEq)]
pub struct Solid {
    /// Rest positions of the nodes, m.
    pub rest: Vec<V3>,
    /// Current positions of the nodes, m.
    pub positions: Vec<V3>,
    /// Current velocities of the nodes, m/s.
    pub velocities: Vec<V3>,
    /// The elements.
    pub tets: Vec<Tet>,
    /// Boundary triangles (outward), for contacts and rendering.
    pub faces: Vec<[usize; 3]>,
    /// Nodes on the boundary: the ones that take contacts.
    pub surface: Vec<usize>,
    /// Edges of the boundary triangles, each once (`[a, b]` with `a < b`), for drawing.
    pub edges: Vec<[usize; 2]>,
    /// Lumped mass of each node, kg.
    pub mass: Vec<f64>,
    /// The material.
    pub material: Material,
    /// Coulomb friction coefficient of the surface.
    pub friction: f64,
    /// Index of each node's unknowns among the solid's free nodes (`None`: fixed, or in no
    /// element).
    dof: Vec<Option<usize>>,
    /// Number of free nodes.
    free: usize,
}

impl Solid {
    /// A solid at rest on `mesh`, with the nodes flagged in `fixed` held in place. Nodes that
    /// belong to no element are held too (a mesh file's geometry points). Errors name the
    /// first degenerate element or out-of-range node.
    pub fn new(
        mesh: &TetMesh,
        material: Material,
        fixed: &[bool],
        friction: f64,
    ) -> Result<Solid, String> {
        let rest: Vec<V3> = mesh.nodes.iter().map(|p| V3::from(*p)).collect();
        let n = rest.len();
        let mut mass = vec![0.0; n];
        let mut tets = Vec::with_capacity(mesh.tets.len());
        for (e, nodes) in mesh.tets.iter().enumerate() {
            if let Some(&bad) = nodes.iter().find(|&&i| i >= n) {
                return Err(format!("element {e} refers to node {bad} of {n}"));
            }
            let tet = Tet::new(*nodes, &rest, &material)
                .ok_or_else(|| format!("element {e} ({nodes:?}) is degenerate (no volume)"))?;
            for &i in &tet.nodes {
                mass[i] += material.density * tet.volume / 4.0;
            }
            tets.push(tet);
        }
        let mut free = 0;
        let dof = (0..n)
            .map(|i| {
                (mass[i] > 0.0 && !fixed.get(i).copied().unwrap_or(false)).then(|| {
                    free += 1;
                    free - 1
                })
            })
            .collect();
        let faces = mesh::boundary_faces(&tets.iter().map(|t| t.nodes).collect::<Vec<_>>());
        let mut surface: Vec<usize> = faces.iter().flatten().copied().collect();
        surface.sort_unstable();
        surface.dedup();
        let mut edges: Vec<[usize; 2]> = faces
            .iter()
            .flat_map(|f| (0..3).map(move |k| [f[k].min(f[(k + 1) % 3]), f[k].max(f[(k + 1) % 3])]))
            .collect();
        edges.sort_unstable();
        edges.dedup();
        Ok(Solid {
            positions: rest.clone(),
            velocities: vec![V3::zeros(); n],
            rest,
            tets,
            faces,
            surface,
            edges,
            mass,
            material,
            friction,
            dof,
            free,
        })
    }

    /// Number of free nodes (3 unknowns each).
    pub fn free_nodes(&self) -> usize {
        self.free
    }

    /// The index of node `i` among the free nodes, `None` when it is held.
    pub fn dof(&self, i: usize) -> Option<usize> {
        self.dof[i]
    }

    /// Kinetic energy `½ Σ m_i |v_i|²`, J.
    pub fn kinetic_energy(&self) -> f64 {
        0.5 * self
            .mass
            .iter()
            .zip(&self.velocities)
            .map(|(m, v)| m * v.norm_squared())
            .sum::<f64>()
    }

    /// Elastic energy of the corotational elements at the current positions, J.
    pub fn elastic_energy(&self) -> f64 {
        self.tets
            .iter()
            .map(|t| {
                let r = t.rotation(&self.positions);
                t.energy(&t.displacements(&r, &self.positions, &self.rest))
            })
            .sum()
    }

    /// Gravitational potential energy `−Σ m_i g·x_i`, J.
    pub fn potential_energy(&self, gravity: &V3) -> f64 {
        -self
            .mass
            .iter()
            .zip(&self.positions)
            .map(|(m, x)| m * gravity.dot(x))
            .sum::<f64>()
    }

    /// Advances the free nodes over `h` with their velocities: `x ← x + h v` (thesis eq.
    /// 3.22c).
    pub fn integrate(&mut self, h: f64) {
        for (i, (x, v)) in self.positions.iter_mut().zip(&self.velocities).enumerate() {
            if self.dof[i].is_some() {
                *x += h * v;
            }
        }
    }
}
