//! [`StepPipeline`]: the time step of spheres against planes with its state resident where
//! its [`Executor`] runs: the [`Schedule`] realized once, the planes written before each
//! step, the statistics of each step copied into a ring on the device and read back in
//! batches ([`StepPipeline::flush`]), the state read back only when asked.

use std::time::Instant;

use super::data::{GpuBody, GpuContact, GpuPlane, StepParams};
use super::exec::{Carry, DeviceExec, Executor};
use super::schedule::{SLOT_BYTES, Schedule, StatsSlot, StepSolver};
use crate::error::{Error, Result};
use crate::gpu::GpuBlock;
use crate::gpu::cpu::step_block;
use crate::solver::coulomb::STALL_ROUNDS;

/// Steps whose statistics wait on the device before a readback.
pub const RING: u32 = 32;

/// The statistics of one step, reduced where the step ran.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuStepStats {
    /// Contacts found (more than the capacity: none were kept and nothing moved).
    pub contacts: usize,
    /// Whether the contacts overflowed the capacity (the step did not move the state).
    pub overflow: bool,
    /// Largest penetration of the step's contacts, m (0 without penetration).
    pub max_penetration: f64,
    /// Kinetic energy after the step, J.
    pub kinetic_energy: f64,
    /// Mean height (`z`) of the spheres after the step, m.
    pub mean_height: f64,
    /// The natural-map velocity residual of the step's impulses (the `f32` monitor).
    pub velocity_residual: f64,
    /// The relative natural-map residual of the step's impulses.
    pub relative_residual: f64,
    /// Whether the state holds an infinity or a NaN after the step.
    pub non_finite: bool,
    /// Iterations run (fewer than `max_iter` when a check met the tolerance).
    pub iterations: usize,
    /// Outer rounds of the Coulomb model's De Saxcé fixed point (`spg-gpu`, `apgd-gpu`):
    /// inner solves of up to [`super::CHECK_EVERY`] iterations, each from an update of the
    /// shift; 0 for the other solves.
    pub rounds: usize,
    /// Whether those rounds stopped on `solver::coulomb`'s stall rule (the best iterate not
    /// improved for as many rounds as the CPU allows).
    pub stalled: bool,
}

/// What [`StepPipeline::read_assembly`] reads back.
#[derive(Debug, Clone, PartialEq)]
pub struct Assembly {
    /// The contacts, sorted by `(owner, other)`.
    pub contacts: Vec<GpuContact>,
    /// One block per contact, as the generic kernels see it (`step_block` of its contact).
    pub blocks: Vec<GpuBlock>,
    /// `r = J v_free + b`, `dim` rows per block.
    pub r: Vec<f32>,
    /// The warm-started impulses.
    pub gamma: Vec<f32>,
}

/// Wall time of the stages of one step, each waited for ([`StepPipeline::step_timed`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StageTimes {
    /// Broad phase, narrow phase, assembly, warm start and links, s.
    pub detect_s: f64,
    /// The solver's iterations, the residual, integration and statistics, s.
    pub solve_s: f64,
}

/// The GPU time of each kernel over one step, s, in the order first run
/// ([`StepPipeline::step_profiled`]).
pub type KernelTimes = Vec<(&'static str, f64)>;

/// The time step of a scene of spheres and planes on an [`Executor`].
pub struct StepPipeline<E: Executor> {
    exec: E,
    params: StepParams,
    method: StepSolver,
    warm_start: bool,
    limit: u64,
    schedule: Schedule,
    detect: E::Program,
    solve: E::Program,
    record: Vec<E::Program>,
    /// Steps recorded into the ring since the last [`StepPipeline::flush`].
    pending: u32,
    /// The bytes of the planes last written ([`StepPipeline::set_planes`]; none yet into
    /// these buffers).
    planes: Vec<u8>,
}

impl<E: Executor> StepPipeline<E> {
    /// The pipeline of `params` from the sphere state `bodies` on `exec`, solving with
    /// `method` ([`Schedule::new`]); `limit` is the storage binding limit of the device (a
    /// buffer above it is refused, naming it).
    pub fn new(
        exec: E,
        params: StepParams,
        bodies: &[GpuBody],
        method: StepSolver,
        warm_start: bool,
        limit: u64,
    ) -> Result<Self> {
        let schedule = Schedule::new(&params, Some(bodies), method, warm_start, RING, limit)?;
        Self::realize(exec, schedule, &[], params, method, warm_start, limit)
    }

    /// The pipeline of `schedule` on `exec`, whose buffers replace those before (`carry`
    /// kept from them).
    fn realize(
        mut exec: E,
        schedule: Schedule,
        carry: &[Carry],
        params: StepParams,
        method: StepSolver,
        warm_start: bool,
        limit: u64,
    ) -> Result<Self> {
        exec.create(&schedule.buffers, carry)?;
        let detect = exec.program(&schedule.detect)?;
        let solve = exec.program(&schedule.solve)?;
        let record = schedule
            .record
            .iter()
            .map(|ops| exec.program(ops))
            .collect::<Result<_>>()?;
        Ok(StepPipeline {
            exec,
            params,
            method,
            warm_start,
            limit,
            schedule,
            detect,
            solve,
            record,
            pending: 0,
            planes: Vec::new(),
        })
    }

    /// The method of the solve.
    pub fn method(&self) -> StepSolver {
        self.method
    }

    /// The device's storage binding size the buffers were checked against.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The sizes and scalars of the kernels.
    pub fn params(&self) -> &StepParams {
        &self.params
    }

    /// Seconds spent so far waiting for the device to catch up ([`Executor::waited_s`]).
    pub fn waited_s(&self) -> f64 {
        self.exec.waited_s()
    }

    /// Bytes of the step's buffers (device memory).
    pub fn memory_bytes(&self) -> u64 {
        self.schedule.bytes()
    }

    /// Writes the planes of the coming step, unless the buffer holds them already (fixed
    /// planes are written once: on a GPU each write is a staging buffer and a copy).
    pub fn set_planes(&mut self, planes: &[GpuPlane]) {
        let bytes: &[u8] = bytemuck::cast_slice(planes);
        if bytes != self.planes.as_slice() {
            let planes_buf = self.schedule.named.planes;
            self.exec.write(planes_buf, 0, bytes);
            self.planes.clear();
            self.planes.extend_from_slice(bytes);
        }
    }

    /// Runs detection, assembly and the warm start at the current state without advancing
    /// it (what [`StepPipeline::read_assembly`] then reads).
    pub fn detect(&mut self) -> Result<()> {
        self.exec.run(&[&self.detect])
    }

    /// Whether the ring is full: [`StepPipeline::flush`] before the next step.
    pub fn is_full(&self) -> bool {
        self.pending == RING
    }

    fn check_room(&self) -> Result<()> {
        if self.is_full() {
            return Err(Error::Gpu(
                "the statistics ring of the GPU time step is full: flush it first".into(),
            ));
        }
        Ok(())
    }

    /// Records one step (detection, assembly, warm start, iterations, residual,
    /// integration, statistics into the ring) without waiting for it.
    pub fn step(&mut self) -> Result<()> {
        self.check_room()?;
        let slot = &self.record[self.pending as usize];
        self.exec.run(&[&self.detect, &self.solve, slot])?;
        self.pending += 1;
        Ok(())
    }

    /// [`StepPipeline::step`], waiting for each stage: its wall times.
    pub fn step_timed(&mut self) -> Result<StageTimes> {
        self.check_room()?;
        self.exec.wait()?;
        let start = Instant::now();
        self.exec.run(&[&self.detect])?;
        self.exec.wait()?;
        let detect_s = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let slot = &self.record[self.pending as usize];
        self.exec.run(&[&self.solve, slot])?;
        self.exec.wait()?;
        self.pending += 1;
        Ok(StageTimes {
            detect_s,
            solve_s: start.elapsed().as_secs_f64(),
        })
    }

    /// The statistics of the steps recorded since the last flush, in order (one readback).
    pub fn flush(&mut self) -> Result<Vec<GpuStepStats>> {
        let pending = std::mem::take(&mut self.pending);
        let ring = self.schedule.named.ring;
        let bytes = self.exec.read(ring, 0, SLOT_BYTES * u64::from(pending))?;
        let n = f64::from(self.params.n_bodies);
        Ok(bytes
            .chunks_exact(SLOT_BYTES as usize)
            .map(|chunk| {
                let slot: StatsSlot = bytemuck::pod_read_unaligned(chunk);
                let overflow = slot.contacts > self.params.capacity;
                GpuStepStats {
                    contacts: slot.contacts as usize,
                    overflow,
                    max_penetration: f64::from(slot.stats.maxes[0]),
                    kinetic_energy: f64::from(slot.stats.sums[0]),
                    mean_height: f64::from(slot.stats.sums[1]) / n,
                    velocity_residual: f64::from(slot.monitor.velocity),
                    relative_residual: f64::from(slot.monitor.relative),
                    non_finite: slot.stats.sums[2] > 0.0,
                    iterations: slot.gate.iterations as usize,
                    rounds: if self.schedule.outer_rounds {
                        slot.gate.checks.saturating_sub(1) as usize
                    } else {
                        0
                    },
                    stalled: slot.gate.stalled as usize >= STALL_ROUNDS,
                }
            })
            .collect())
    }

    /// A pipeline like this one with room for `capacity` (at least the current) contacts,
    /// from the current state and the last good step's contacts and impulses (for the warm
    /// start), which stay where the executor runs: copied there from the old buffers.
    pub fn with_capacity(self, capacity: u32) -> Result<Self> {
        let params = StepParams {
            capacity,
            ..self.params
        };
        let schedule = Schedule::new(
            &params,
            None,
            self.method,
            self.warm_start,
            RING,
            self.limit,
        )?;
        let (old, new) = (self.schedule.named, schedule.named);
        let carry = [
            (old.bodies, new.bodies),
            (old.prev_offsets, new.prev_offsets),
            (old.prev_others, new.prev_others),
            (old.prev_gamma, new.prev_gamma),
        ]
        .map(|(from, to)| Carry {
            from,
            to,
            bytes: self.schedule.buffers[from.0].bytes,
        });
        let (method, warm_start, limit) = (self.method, self.warm_start, self.limit);
        Self::realize(
            self.exec, schedule, &carry, params, method, warm_start, limit,
        )
    }

    fn read_vec<T: bytemuck::Pod>(
        &mut self,
        buf: super::schedule::Buf,
        len: usize,
    ) -> Result<Vec<T>> {
        let bytes = self
            .exec
            .read(buf, 0, (std::mem::size_of::<T>() * len) as u64)?;
        Ok(bytemuck::pod_collect_to_vec(&bytes))
    }

    /// The buffer of the sphere state ([`GpuBody`], in scene order).
    pub fn bodies_buf(&self) -> super::schedule::Buf {
        self.schedule.named.bodies
    }

    /// The sphere state after what was run (one readback).
    pub fn read_bodies(&mut self) -> Result<Vec<GpuBody>> {
        let (buf, n) = (self.schedule.named.bodies, self.params.n_bodies as usize);
        self.read_vec(buf, n)
    }

    /// The contacts of the last detection, sorted by `(owner, other)`, with the blocks,
    /// `r` and the warm-started impulses assembled from them. More contacts than the
    /// capacity is an [`Error::Gpu`].
    pub fn read_assembly(&mut self) -> Result<Assembly> {
        let named = self.schedule.named;
        let n = self.params.n_bodies as usize;
        let count = self.read_vec::<u32>(named.offsets, n + 1)?[n];
        if count > self.params.capacity {
            return Err(Error::Gpu(format!(
                "{count} contacts exceed the room of the GPU time step ({})",
                self.params.capacity
            )));
        }
        let (count, rows) = (count as usize, (self.params.dim * count) as usize);
        let contacts: Vec<GpuContact> = self.read_vec(named.contacts, count)?;
        let blocks = contacts
            .iter()
            .enumerate()
            .map(|(k, c)| step_block(&self.params, c, k))
            .collect();
        Ok(Assembly {
            contacts,
            blocks,
            r: self.read_vec(named.r, rows)?,
            gamma: self.read_vec(named.gamma, rows)?,
        })
    }

    /// The executor (a mirror executor's trace).
    pub fn executor(&self) -> &E {
        &self.exec
    }
}

impl StepPipeline<DeviceExec> {
    /// Records one step as [`StepPipeline::step`] does, each dispatch timed on its own
    /// ([`DeviceExec::profile`]): the GPU time of each kernel.
    pub fn step_profiled(&mut self) -> Result<KernelTimes> {
        self.check_room()?;
        let slot = &self.record[self.pending as usize];
        let times = self.exec.profile(&[&self.detect, &self.solve, slot])?;
        self.pending += 1;
        Ok(times)
    }

    /// Whether [`StepPipeline::step_profiled`] reads the GPU's timestamps (else wall time per
    /// dispatch).
    pub fn has_timestamps(&self) -> bool {
        self.exec.has_timestamps()
    }
}
