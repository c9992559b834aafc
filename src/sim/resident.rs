//! A [`World`] of spheres against planes stepped by the GPU-resident pipeline
//! ([`crate::gpu::step`]): the scene is checked and uploaded once, the planes' prescribed
//! motion is written before each step, the statistics come back in batches, and the world's
//! bodies are brought up to date only when asked ([`Resident::sync`]).

use std::sync::Arc;
use std::time::Instant;

use nalgebra::{Quaternion, UnitQuaternion, Vector3};

use super::body::RigidBody;
use super::shape::Shape;
use super::stats::StepStats;
use super::world::World;
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::gpu::step::{
    Assembly, DeviceExec, Executor, GpuBody, GpuContact, GpuPlane, GpuStepStats, StepParams,
    StepPipeline, StepSolver,
};
use crate::problem::FrictionModel;
use crate::solver::{Criterion, Jacobi, Status};

/// Room for contacts per sphere to begin with, over the whole scene (a packing of
/// touching spheres has about 3 per sphere: 304 242 contacts for 100 005 spheres in
/// `balls_in_box`); the room grows as the contacts come near it ([`grown_room`]): a settled
/// pile has nearly 6 within the envelope (577 042 for the same spheres after 300 steps).
pub const CONTACTS_PER_SPHERE: u32 = 4;

/// The room for contacts after steps whose largest contact count was `peak` in a room of
/// `capacity`, on a device whose storage bindings hold `limit` bytes: `None` while `peak`
/// stays below seven eighths of the room, else a quarter more than `peak` (at least 9 % more
/// room: a pile settling slowly grows it a few times, and ends with 8/7 to 5/4 of its
/// contacts) — at most what the bindings hold, unless the steps overflowed (`peak >
/// capacity`: then the room must grow, and a room too large is refused, naming the buffer).
pub fn grown_room(capacity: u32, peak: u64, limit: u64) -> Option<u64> {
    let capacity = u64::from(capacity);
    let wanted = (5 * peak).div_ceil(4);
    let most = most_contacts(limit);
    if peak > capacity {
        Some(wanted)
    } else {
        let room = wanted.min(most);
        (8 * peak > 7 * capacity && room > capacity).then_some(room)
    }
}

/// Why `world` cannot be stepped by the GPU-resident pipeline, or `None` when it can: its
/// dynamic bodies must be spheres, every other body a (fixed or kinematic) plane, and it
/// must have no joints or springs.
pub fn unqualified(world: &World) -> Option<String> {
    if !world.joints.is_empty() {
        return Some("the scene has joints".into());
    }
    if !world.springs.is_empty() {
        return Some("the scene has springs".into());
    }
    if !world.solids.is_empty() {
        return Some("the scene has finite elements".into());
    }
    if !world.bodies.iter().any(RigidBody::is_dynamic) {
        return Some("the scene has no dynamic sphere".into());
    }
    world
        .bodies
        .iter()
        .enumerate()
        .find_map(|(k, b)| match (b.shape, b.is_dynamic()) {
            // The step's rows take the inertia as one scalar (`step_gather`).
            (Shape::Sphere { .. }, true)
                if (b.inertia.x - b.inertia.y).abs() + (b.inertia.x - b.inertia.z).abs()
                    > 1e-12 * b.inertia.x.abs() =>
            {
                Some(format!("body {k} is a sphere with an anisotropic inertia"))
            }
            (Shape::Sphere { .. }, true) | (Shape::Plane, false) => None,
            (shape, true) => Some(format!("body {k} is a dynamic {}", shape_name(&shape))),
            (shape, false) => Some(format!(
                "body {k} is a fixed or kinematic {}",
                shape_name(&shape)
            )),
        })
}

fn shape_name(shape: &Shape) -> &'static str {
    match shape {
        Shape::Sphere { .. } => "sphere",
        Shape::Box { .. } => "box",
        Shape::Plane => "plane",
        Shape::Cylinder { .. } => "cylinder",
    }
}

fn f32x4(v: &Vector3<f64>, w: f64) -> [f32; 4] {
    [v.x as f32, v.y as f32, v.z as f32, w as f32]
}

/// The plane of a fixed or kinematic body at its current pose and velocity.
fn plane_of(body: &RigidBody) -> GpuPlane {
    GpuPlane {
        normal: f32x4(&(body.pose.orientation * Vector3::z()), body.friction),
        point: f32x4(&body.pose.position, 0.0),
        velocity: f32x4(&body.velocity, 0.0),
    }
}

/// The GPU state of a dynamic sphere.
fn sphere_of(body: &RigidBody, radius: f64) -> GpuBody {
    let q = body.pose.orientation.coords;
    let i = body.inertia;
    GpuBody {
        pos: f32x4(&body.pose.position, radius),
        quat: [q.x as f32, q.y as f32, q.z as f32, q.w as f32],
        vel: f32x4(&body.velocity, body.friction),
        omega: f32x4(&body.angular_velocity, 0.0),
        inv: [1.0 / body.mass, 1.0 / i.x, 1.0 / i.y, 1.0 / i.z].map(|x| x as f32),
        props: [body.mass, i.x, i.y, i.z].map(|x| x as f32),
    }
}

/// The kernels' parameters of `world` for `spheres` with room for `capacity` contacts.
///
/// Every contact block has 3 rows (Coulomb, with the pair's friction, possibly 0) when any
/// surface has friction, else 1: the CPU gives a frictionless pair 1 row in a scene with
/// friction, the same impulses.
pub fn step_params(world: &World, spheres: &[GpuBody], planes: u32, capacity: u32) -> StepParams {
    let s = &world.settings;
    let n = spheres.len() as u32;
    let r_max = spheres.iter().map(|b| b.pos[3]).fold(0.0f32, f32::max);
    let friction = spheres.iter().any(|b| b.vel[3] > 0.0)
        || world
            .bodies
            .iter()
            .any(|b| !b.is_dynamic() && b.friction > 0.0);
    StepParams {
        n_bodies: n,
        n_planes: planes,
        mask: (2 * n).next_power_of_two() - 1,
        capacity,
        cell: 2.0 * (r_max + s.envelope as f32),
        envelope: s.envelope as f32,
        dt: s.dt as f32,
        max_recovery: s.max_recovery_speed as f32,
        gravity: [
            s.gravity[0] as f32,
            s.gravity[1] as f32,
            s.gravity[2] as f32,
            if s.gyroscopic { 1.0 } else { 0.0 },
        ],
        dim: if friction { 3 } else { 1 },
        compliance: s.contact_compliance as f32,
        coulomb: u32::from(s.friction_model == FrictionModel::Coulomb),
        omega: s.omega.unwrap_or(Jacobi::DEFAULT_OMEGA) as f32,
        tol: s.tol as f32,
        criterion: match s.criterion {
            Criterion::Relative => 0,
            Criterion::Velocity => 1,
        },
        max_iter: u32::try_from(s.max_iter).unwrap_or(u32::MAX),
        pad: 0,
    }
}

/// The statistics of one step and the residual of the world's criterion.
pub type Row = (StepStats, f64);

/// A world stepped on the GPU, its state resident there.
pub struct Resident<E: Executor = DeviceExec> {
    pipeline: Option<StepPipeline<E>>,
    /// Scene index of each GPU sphere.
    spheres: Vec<usize>,
    /// Scene index and body of each plane.
    planes: Vec<(usize, RigidBody)>,
    /// Time and steps of the world when it was uploaded.
    start: (f64, usize),
    /// Steps recorded, and steps whose statistics were read back.
    issued: usize,
    done: usize,
    /// Wall time since the last flush (shared out over its steps).
    since: Instant,
    /// Host time outside the waits on the device, s.
    host_s: f64,
    /// Outer rounds of the Coulomb model's fixed point in the steps read back.
    rounds: usize,
    dt: f64,
    tol: f64,
    criterion: Criterion,
    bodies: usize,
}

impl Resident<DeviceExec> {
    /// The spheres' state on the device (`GpuBody`, the scene order of the spheres) and
    /// their number: the renderer draws it without reading it back.
    pub fn state(&self) -> (&wgpu::Buffer, u32) {
        let p = self.pipeline.as_ref().expect("a pipeline between calls");
        (p.executor().buffer(p.bodies_buf()), p.params().n_bodies)
    }

    /// `world` on the device of `ctx`, with the world's `max_iter` projected Jacobi
    /// iterations per step: refused (the reason in an [`Error::Gpu`]) when the scene does not qualify
    /// ([`unqualified`]) or does not fit the device, naming the limit and the largest
    /// number of spheres that fits.
    pub fn on_device(ctx: Arc<GpuContext>, world: &World) -> Result<Self> {
        Self::on_device_with(ctx, world, StepSolver::Jacobi)
    }

    /// [`Resident::on_device`] solving each step with `method`.
    pub fn on_device_with(ctx: Arc<GpuContext>, world: &World, method: StepSolver) -> Result<Self> {
        let exec = DeviceExec::new(ctx);
        let limit = exec.limit();
        Self::with_room(exec, world, limit, CONTACTS_PER_SPHERE, method)
    }
}

impl<E: Executor> Resident<E> {
    /// `world` on `exec` (storage binding limit `limit`), with room for
    /// [`CONTACTS_PER_SPHERE`] contacts per sphere to begin with, solving with projected
    /// Jacobi.
    pub fn new(exec: E, world: &World, limit: u64) -> Result<Self> {
        Self::with_room(exec, world, limit, CONTACTS_PER_SPHERE, StepSolver::Jacobi)
    }

    /// [`Resident::new`] with room for `per_sphere` contacts per sphere to begin with,
    /// solving with `method` (refused as [`unqualified`] says).
    pub fn with_room(
        exec: E,
        world: &World,
        limit: u64,
        per_sphere: u32,
        method: StepSolver,
    ) -> Result<Self> {
        if let Some(why) = unqualified(world) {
            return Err(Error::Gpu(format!(
                "the GPU-resident step takes dynamic spheres and fixed or kinematic planes \
                 without joints, solved by jacobi-gpu, spg-gpu or apgd-gpu: {why}"
            )));
        }
        let (mut spheres, mut planes, mut gpu) = (Vec::new(), Vec::new(), Vec::new());
        for (k, b) in world.bodies.iter().enumerate() {
            if let Shape::Sphere { radius } = b.shape {
                spheres.push(k);
                gpu.push(sphere_of(b, radius));
            } else {
                planes.push((k, b.clone()));
            }
        }
        let n = gpu.len() as u64;
        let most_spheres = largest_scene(limit);
        if n > most_spheres {
            return Err(Error::Gpu(format!(
                "{n} spheres exceed what the GPU-resident step holds on this device \
                 (max_storage_buffer_binding_size = {limit} bytes, u32 indices): at most \
                 {most_spheres} spheres fit"
            )));
        }
        let capacity = per_sphere.max(1) * n as u32;
        let params = step_params(world, &gpu, planes.len() as u32, capacity);
        let s = &world.settings;
        let pipeline = StepPipeline::new(exec, params, &gpu, method, s.warm_start, limit)?;
        Ok(Resident {
            pipeline: Some(pipeline),
            spheres,
            planes,
            start: (world.time, world.steps),
            issued: 0,
            done: 0,
            since: Instant::now(),
            host_s: 0.0,
            rounds: 0,
            dt: s.dt,
            tol: s.tol,
            criterion: s.criterion,
            bodies: world.bodies.len(),
        })
    }

    fn pipeline(&mut self) -> &mut StepPipeline<E> {
        self.pipeline.as_mut().expect("a pipeline between calls")
    }

    /// Simulated time after `steps` steps from the upload.
    fn time_after(&self, steps: usize) -> f64 {
        self.start.0 + steps as f64 * self.dt
    }

    /// Writes the planes at the time of step `k` (from the upload; kinematic ones where
    /// their prescribed motion has them, with their mean velocity over the step, as
    /// [`World`] does).
    fn prescribe(&mut self, k: usize) {
        let (t, h) = (self.time_after(k), self.dt);
        let planes: Vec<GpuPlane> = self
            .planes
            .iter_mut()
            .map(|(_, body)| {
                body.prescribe(t, h);
                plane_of(body)
            })
            .collect();
        if !planes.is_empty() {
            self.pipeline().set_planes(&planes);
        }
    }

    /// Records one step without waiting for it; its statistics come from
    /// [`Resident::flush`] (which this calls first when the device's ring is full).
    pub fn step(&mut self) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        if self.pipeline().is_full() {
            out = self.flush()?;
        }
        let (start, waited) = (Instant::now(), self.pipeline().waited_s());
        self.issue()?;
        self.add_host(start, waited);
        Ok(out)
    }

    /// Adds the time since `start` to the host time, less the waits on the device since
    /// the executor's wait total was `waited`.
    fn add_host(&mut self, start: Instant, waited: f64) {
        let waits = self.pipeline().waited_s() - waited;
        self.host_s += start.elapsed().as_secs_f64() - waits;
    }

    /// Writes the planes and records the next step.
    fn issue(&mut self) -> Result<()> {
        self.prescribe(self.issued);
        self.pipeline().step()?;
        self.issued += 1;
        Ok(())
    }

    /// The statistics of the steps recorded since the last flush, each with the residual
    /// of the world's criterion (one readback). A step whose contacts overflowed the room
    /// did not move the state: the room grows ([`grown_room`]) and the steps from it are
    /// taken again. A batch whose contacts came near the room grows it too, before a step
    /// overflows.
    pub fn flush(&mut self) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        loop {
            let batch = self.pipeline().flush()?;
            let (start, waited) = (Instant::now(), self.pipeline().waited_s());
            let wall = self.since.elapsed().as_secs_f64() / batch.len().max(1) as f64;
            self.since = Instant::now();
            let good = batch.iter().position(|s| s.overflow).unwrap_or(batch.len());
            for s in &batch[..good] {
                self.done += 1;
                self.rounds += s.rounds;
                out.push(self.stats(s, wall));
            }
            let peak = batch.iter().map(|s| s.contacts).max().unwrap_or(0);
            let (capacity, limit) = (self.pipeline().params().capacity, self.pipeline().limit());
            let Some(room) = grown_room(capacity, peak as u64, limit) else {
                self.add_host(start, waited);
                return Ok(out);
            };
            let room = u32::try_from(room).map_err(|_| {
                Error::Gpu(format!(
                    "{peak} contacts at step {}: more than the GPU-resident step indexes",
                    self.start.1 + self.done + 1
                ))
            })?;
            let redo = self.issued - self.done;
            let pipeline = self.pipeline.take().expect("a pipeline between calls");
            self.pipeline = Some(pipeline.with_capacity(room)?);
            self.issued = self.done;
            for _ in 0..redo {
                self.issue()?;
            }
            self.add_host(start, waited);
            if redo == 0 {
                return Ok(out);
            }
        }
    }

    /// Host time spent so far outside the waits on the device (recording, submitting,
    /// the statistics), s.
    pub fn host_s(&self) -> f64 {
        self.host_s
    }

    /// Outer rounds of the De Saxcé fixed point run so far in the steps read back (under
    /// the Coulomb model with `spg-gpu` or `apgd-gpu`; 0 otherwise): see
    /// [`GpuStepStats::rounds`].
    pub fn rounds(&self) -> usize {
        self.rounds
    }

    /// The [`Row`] of the step read back as `s`, `wall` its share of the wall time.
    fn stats(&self, s: &GpuStepStats, wall: f64) -> Row {
        let residual = match self.criterion {
            Criterion::Velocity => s.velocity_residual,
            Criterion::Relative => s.relative_residual,
        };
        let status = if s.non_finite || !residual.is_finite() {
            Status::NumericalError
        } else if residual <= self.tol {
            Status::Converged
        } else if s.stalled {
            Status::Stalled
        } else {
            Status::MaxIterations
        };
        let stats = StepStats {
            step: self.start.1 + self.done,
            time: self.time_after(self.done),
            bodies: self.bodies,
            contacts: s.contacts,
            bilateral_rows: 0,
            iterations: s.iterations,
            rounds: s.rounds,
            residual: s.velocity_residual,
            max_penetration: s.max_penetration,
            kinetic_energy: s.kinetic_energy,
            collision_s: 0.0,
            assembly_s: 0.0,
            solve_s: wall,
            status,
        };
        (stats, residual)
    }

    /// Brings `world` up to date with the steps read back so far (one readback of the
    /// spheres; call after [`Resident::flush`]): poses, velocities, the planes' prescribed
    /// poses, time and step count.
    pub fn sync(&mut self, world: &mut World) -> Result<()> {
        let gpu = self.pipeline().read_bodies()?;
        for (&k, g) in self.spheres.iter().zip(&gpu) {
            let b = &mut world.bodies[k];
            let v = |a: [f32; 4]| Vector3::new(f64::from(a[0]), f64::from(a[1]), f64::from(a[2]));
            b.pose.position = v(g.pos);
            b.pose.orientation = UnitQuaternion::from_quaternion(Quaternion::new(
                f64::from(g.quat[3]),
                f64::from(g.quat[0]),
                f64::from(g.quat[1]),
                f64::from(g.quat[2]),
            ));
            b.velocity = v(g.vel);
            b.angular_velocity = v(g.omega);
        }
        self.sync_clock(world);
        Ok(())
    }

    /// Brings `world`'s time, step count and planes up to date with the steps read back so
    /// far, without reading the spheres (what a frame drawn from [`Resident::state`] needs).
    pub fn sync_clock(&self, world: &mut World) {
        world.time = self.time_after(self.done);
        world.steps = self.start.1 + self.done;
        let t = world.time;
        for (k, _) in &self.planes {
            world.bodies[*k].prescribe(t, self.dt);
        }
    }

    /// The scene's `(body_a, body_b)` of a GPU contact, as [`World`] keys it: the plane
    /// first, else the smaller index first (spheres keep their scene order on the GPU).
    pub fn contact_pair(&self, c: &GpuContact) -> (usize, usize) {
        let n = self.spheres.len() as u32;
        let owner = self.spheres[c.owner as usize];
        match c.other.checked_sub(n) {
            Some(p) => (self.planes[p as usize].0, owner),
            None => (owner, self.spheres[c.other as usize]),
        }
    }

    /// Detection, assembly and the warm start of the next step at the current state,
    /// without taking it: the contacts (sorted by `(owner, other)`), blocks, `r` and warm
    /// impulses, as the solve would see them (readbacks; call between flushes).
    pub fn detect(&mut self) -> Result<Assembly> {
        self.prescribe(self.issued);
        self.pipeline().detect()?;
        self.pipeline().read_assembly()
    }

    /// Bytes of the device buffers of the step.
    pub fn memory_bytes(&self) -> u64 {
        self.pipeline.as_ref().map_or(0, StepPipeline::memory_bytes)
    }

    /// The pipeline (reads of the assembly, timed steps).
    pub fn pipeline_mut(&mut self) -> &mut StepPipeline<E> {
        self.pipeline()
    }
}

/// The most contacts the GPU-resident step has room for with a device storage binding of
/// `limit` bytes: its largest buffers hold 32 bytes per contact, and its widest domain, 3
/// rows per contact, must keep `u32` indices (a dispatch's grid is two-dimensional past
/// [`crate::gpu::kernels::MAX_WORKGROUPS`] workgroups).
fn most_contacts(limit: u64) -> u64 {
    (limit / 32).min(u64::from(u32::MAX) / 3)
}

/// The most spheres the GPU-resident step holds with a device storage binding of `limit`
/// bytes at its initial room of [`CONTACTS_PER_SPHERE`] per sphere: its largest buffers
/// hold 32 bytes per contact of room, and 3 rows per contact must keep `u32` indices.
pub fn largest_scene(limit: u64) -> u64 {
    most_contacts(limit) / u64::from(CONTACTS_PER_SPHERE)
}

#[cfg(test)]
mod tests {
    use super::{CONTACTS_PER_SPHERE, grown_room};
    use crate::gpu::step::{RING, Schedule, StepParams, StepSolver};

    /// The device memory of the step of `jacobi-gpu` (friction: 3 rows per contact) for
    /// `n` spheres against 5 walls, with room for `capacity` contacts, bytes per sphere.
    fn bytes_per_sphere(n: u32, capacity: u32) -> f64 {
        let params = StepParams {
            n_bodies: n,
            n_planes: 5,
            mask: (2 * n).next_power_of_two() - 1,
            capacity,
            dim: 3,
            ..bytemuck::Zeroable::zeroed()
        };
        let schedule = Schedule::new(&params, None, StepSolver::Jacobi, true, RING, u64::MAX);
        schedule.unwrap().bytes() as f64 / f64::from(n)
    }

    /// Issue 14's bound: at most 1 KB of device memory per sphere with its contacts, in a
    /// settled pile (5.8 contacts per sphere, as measured at 1e4 to 1e6 spheres) with the
    /// largest room the growth rule leaves it (a quarter past them), and at the start.
    #[test]
    fn a_settled_pile_takes_at_most_a_kilobyte_per_sphere() {
        for n in [100_000, 1_000_000] {
            let start = bytes_per_sphere(n, CONTACTS_PER_SPHERE * n);
            let peak = (58 * u64::from(n)).div_ceil(10);
            let room = grown_room(CONTACTS_PER_SPHERE * n, peak, u64::MAX).unwrap();
            let settled = bytes_per_sphere(n, room as u32);
            eprintln!("{n} spheres: {start:.0} B per sphere at first, {settled:.0} settled");
            assert!(settled <= 1024.0, "{n} spheres: {settled} B per sphere");
        }
    }

    #[test]
    fn the_room_grows_by_a_quarter_near_its_end_within_the_bindings() {
        let limit = 1 << 30;
        assert_eq!(grown_room(800, 0, limit), None);
        assert_eq!(grown_room(800, 700, limit), None);
        assert_eq!(grown_room(800, 701, limit), Some(877));
        assert_eq!(grown_room(800, 2000, limit), Some(2500));
        // Near the bindings' size: as far as they hold, or not at all.
        assert_eq!(grown_room(800, 760, 32 * 900), Some(900));
        assert_eq!(grown_room(800, 760, 32 * 800), None);
        // An overflow must grow, whatever the bindings hold (then refused, naming them).
        assert_eq!(grown_room(800, 801, 32 * 800), Some(1002));
    }
}
