//! Collision detection (DESIGN §5): a broad phase on a hierarchical uniform grid (`broad`,
//! one entry per body counting-sorted into cells) proposes each body's candidate pairs in
//! sorted order, the narrow phase (`narrow`: sphere–sphere, sphere–plane, sphere–box,
//! box–plane, box–box by separating axes with clipped face manifolds, and the cylinder's
//! pairs in `narrow::cylinder`) turns each pair into contact points. Both run in one rayon
//! task per fixed run of bodies ([`Detector`]), whose contacts, one run after the other,
//! are in pair order.
//!
//! Contacts are reported up to a gap of `envelope`, so that they enter the problem a step
//! before the bodies touch.

mod broad;
mod narrow;

use nalgebra::Vector3;
use rayon::prelude::*;

use super::{Pose, Shape};
use crate::par::grow_for_overwrite;

/// One contact point between two bodies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contact {
    /// First body (index into the shapes/poses slices). The plane when one body is a plane,
    /// otherwise the smaller index.
    pub body_a: usize,
    /// Second body (index into the shapes/poses slices).
    pub body_b: usize,
    /// Unit normal, world frame, pointing from A towards B.
    pub normal: Vector3<f64>,
    /// World-frame point on A's surface.
    pub point_a: Vector3<f64>,
    /// World-frame point on B's surface.
    pub point_b: Vector3<f64>,
    /// Signed gap along the normal, `(point_b − point_a)·normal`; negative = penetration.
    pub distance: f64,
    /// Id of the contact feature (box corner, face pair + clipped vertex, edge pair), unique
    /// within the pair and stable across steps while the same geometric feature touches:
    /// the key for warm-start persistence.
    pub feature: u32,
}

/// Counters of one [`Detector::detect`] call.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CollisionStats {
    /// Pairs handed from the broad phase to the narrow phase.
    pub candidate_pairs: usize,
    /// Contacts reported.
    pub contacts: usize,
    /// The deepest penetration among them, `max(0, −distance)`: taken by each task from the
    /// contacts it has just written, not in a pass of its own.
    pub deepest: f64,
}

/// `max(0, −distance)` over `contacts` (a max: the same in any order).
pub(crate) fn deepest(contacts: &[Contact]) -> f64 {
    contacts.iter().fold(0.0, |d, c| d.max(-c.distance))
}

/// Bodies of one collision task (broad and narrow phase of their pairs): the tasks do not
/// depend on the number of threads.
const BODIES_PER_TASK: usize = 2048;

/// Candidate pairs handed to one narrow-phase task of the pairs found out of order.
const PAIRS_PER_TASK: usize = 4096;

/// The buffers of one collision task: the candidate pairs of a run of bodies and their
/// contacts.
#[derive(Debug, Default)]
struct Task {
    /// The pairs that sort within the run, sorted.
    pairs: Vec<(usize, usize)>,
    /// The pairs with a coarser body of smaller index ([`broad::Broad::pairs_of`]).
    late: Vec<(usize, usize)>,
    /// The contacts of `pairs`, sorted.
    contacts: Vec<Contact>,
    /// Their deepest penetration ([`deepest`]).
    deepest: f64,
}

/// Collision detection whose buffers are kept from one call to the next (a time stepper's:
/// no pages mapped per step). A clone is empty: the buffers are scratch memory, not state.
#[derive(Debug, Default)]
pub struct Detector {
    broad: broad::Broad,
    tasks: Vec<Task>,
    /// The tasks' late pairs, sorted, and their contacts per chunk of pairs.
    late: Vec<(usize, usize)>,
    late_parts: Vec<Vec<Contact>>,
}

impl Clone for Detector {
    fn clone(&self) -> Self {
        Detector::default()
    }
}

impl Detector {
    /// All contacts with `distance <= envelope` between bodies that are not both static,
    /// written to `out` in the order of `(body_a, body_b, feature)`, whatever the number of
    /// threads, in the memory of the last call (`out`'s elements are overwritten). Plane–plane
    /// pairs are never tested.
    ///
    /// Bodies are taken in fixed runs; each run's task finds the pairs of its bodies, which
    /// sort within the run, and their contacts, so that the runs' contacts, one after the
    /// other, are sorted. The few pairs that sort elsewhere (a coarser body of smaller
    /// index) are detected apart and merged in.
    ///
    /// # Panics
    /// If `shapes`, `poses` and `is_static` differ in length.
    pub fn detect(
        &mut self,
        shapes: &[Shape],
        poses: &[Pose],
        is_static: &[bool],
        envelope: f64,
        out: &mut Vec<Contact>,
    ) -> CollisionStats {
        assert_eq!(shapes.len(), poses.len(), "one pose per shape");
        assert_eq!(shapes.len(), is_static.len(), "one static flag per shape");
        let bodies = broad::Bodies {
            shapes,
            poses,
            is_static,
            envelope,
        };
        self.broad.prepare(&bodies);
        let tasks = shapes.len().div_ceil(BODIES_PER_TASK);
        self.tasks.resize_with(tasks, Task::default);
        let broad = &self.broad;
        self.tasks[..tasks]
            .par_iter_mut()
            .enumerate()
            .for_each(|(t, task)| {
                task.pairs.clear();
                task.late.clear();
                task.contacts.clear();
                let first = t * BODIES_PER_TASK;
                for i in first..shapes.len().min(first + BODIES_PER_TASK) {
                    broad.pairs_of(i, &bodies, &mut task.pairs, &mut task.late);
                }
                for &(a, b) in &task.pairs {
                    narrow::collide(a, b, shapes, poses, envelope, &mut task.contacts);
                }
                task.deepest = deepest(&task.contacts);
            });
        let tasks = &self.tasks[..tasks];
        self.late.clear();
        tasks
            .iter()
            .for_each(|t| self.late.extend_from_slice(&t.late));
        self.late.par_sort_unstable();
        self.late.dedup();
        let chunks = self.late.len().div_ceil(PAIRS_PER_TASK);
        self.late_parts.resize_with(chunks, Vec::new);
        self.late
            .par_chunks(PAIRS_PER_TASK)
            .zip(&mut self.late_parts)
            .for_each(|(pairs, part)| {
                part.clear();
                for &(a, b) in pairs {
                    narrow::collide(a, b, shapes, poses, envelope, part);
                }
            });
        let late = &self.late_parts[..chunks];
        if late.iter().all(Vec::is_empty) {
            gather(tasks.iter().map(|t| t.contacts.as_slice()), out);
        } else {
            let sorted = |c: &Contact| (c.body_a, c.body_b, c.feature);
            let own = tasks.iter().flat_map(|t| &t.contacts);
            out.clear();
            out.extend(merge_by_key(own, late.iter().flatten(), sorted));
        }
        let late_deepest = late.iter().map(|part| deepest(part));
        CollisionStats {
            candidate_pairs: self.late.len() + tasks.iter().map(|t| t.pairs.len()).sum::<usize>(),
            contacts: out.len(),
            deepest: tasks
                .iter()
                .map(|t| t.deepest)
                .chain(late_deepest)
                .fold(0.0, f64::max),
        }
    }
}

/// `parts` one after the other into `out`, copied in parallel. `out` is only grown or
/// truncated, never cleared: its elements are overwritten.
fn gather<'a>(parts: impl Iterator<Item = &'a [Contact]> + Clone, out: &mut Vec<Contact>) {
    let total = parts.clone().map(<[Contact]>::len).sum();
    let Some(filler) = parts.clone().find_map(|p| p.first()) else {
        out.clear();
        return;
    };
    grow_for_overwrite(out, total, *filler);
    let mut rest = &mut out[..];
    let mut copies = Vec::new();
    for part in parts {
        let (head, tail) = rest.split_at_mut(part.len());
        copies.push((head, part));
        rest = tail;
    }
    copies
        .into_par_iter()
        .for_each(|(to, from)| to.copy_from_slice(from));
}

/// The union of two sequences sorted by `key`, sorted.
fn merge_by_key<'a, K: Ord>(
    a: impl Iterator<Item = &'a Contact>,
    b: impl Iterator<Item = &'a Contact>,
    key: impl Fn(&Contact) -> K,
) -> impl Iterator<Item = Contact> {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (Some(x), Some(y)) if key(y) < key(x) => b.next().copied(),
        (Some(_), _) => a.next().copied(),
        (None, _) => b.next().copied(),
    })
}

/// The contact of a shape (body A, index 0) with a point (body B, index 1; a finite-element
/// node): the narrow phase's pair of the shape with a sphere of radius zero at the point.
/// `None` when the point is farther than `envelope` from the shape.
pub(crate) fn point_contact(
    shape: &Shape,
    pose: &Pose,
    point: Vector3<f64>,
    envelope: f64,
) -> Option<Contact> {
    let dot = Shape::Sphere { radius: 0.0 };
    let at = Pose::at(point);
    let bound = broad::Aabb::of(shape, pose, envelope);
    let inside = broad::Aabb::of(&dot, &at, 0.0);
    if matches!((bound, inside), (Some(b), Some(p)) if !b.overlaps(&p)) {
        return None;
    }
    // A point exactly on a cylinder's surface gets a normal of 0/0 from the narrow phase: it
    // is left out (it is found at the next step, inside or outside).
    let mut found = Vec::new();
    narrow::collide(0, 1, &[*shape, dot], &[*pose, at], envelope, &mut found);
    found
        .into_iter()
        .find(|c| c.normal.iter().all(|v| v.is_finite()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::UnitQuaternion;

    /// A tiny linear congruential generator (Knuth's MMIX constants).
    struct Lcg(u64);

    impl Lcg {
        /// Uniform in `[lo, hi)`.
        fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            lo + (hi - lo) * (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }

        fn vector(&mut self, lo: f64, hi: f64) -> Vector3<f64> {
            Vector3::from_fn(|_, _| self.uniform(lo, hi))
        }
    }

    /// A random scene: a static ground plane, a few large boxes (some static), and mixed
    /// spheres and boxes, ~5% static.
    fn random_scene(n: usize, seed: u64) -> (Vec<Shape>, Vec<Pose>, Vec<bool>) {
        let mut rng = Lcg(seed);
        let side = 0.55 * (n as f64).cbrt();
        let mut shapes = vec![Shape::Plane];
        let mut poses = vec![Pose::at(Vector3::new(0.0, 0.0, 0.1))];
        let mut is_static = vec![true];
        for k in 0..n {
            let large = k % 200 == 7;
            let shape = match (large, rng.uniform(0.0, 1.0) < 0.5) {
                (true, _) => Shape::Box {
                    half_extents: rng.vector(0.5, 3.0).into(),
                },
                (false, true) => Shape::Sphere {
                    radius: rng.uniform(0.05, 0.35),
                },
                (false, false) => Shape::Box {
                    half_extents: rng.vector(0.05, 0.35).into(),
                },
            };
            shapes.push(shape);
            let axis = rng.vector(-1.0, 1.0);
            poses.push(Pose {
                position: rng.vector(0.0, side),
                orientation: UnitQuaternion::from_scaled_axis(axis * 1.7),
            });
            is_static.push(rng.uniform(0.0, 1.0) < 0.05);
        }
        (shapes, poses, is_static)
    }

    /// Every pair through the narrow phase, in the output order of [`Detector::detect`].
    fn brute_force(shapes: &[Shape], poses: &[Pose], is_static: &[bool], env: f64) -> Vec<Contact> {
        let n = shapes.len();
        let mut all: Vec<Contact> = (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .filter(|&(i, j)| !(is_static[i] && is_static[j]))
            .fold(Vec::new(), |mut all, (i, j)| {
                narrow::collide(i, j, shapes, poses, env, &mut all);
                all
            });
        all.sort_by_key(|c| (c.body_a, c.body_b, c.feature));
        all
    }

    #[test]
    fn broad_phase_finds_the_same_contacts_as_all_pairs() {
        let (shapes, poses, is_static) = random_scene(2000, 42);
        let mut out = Vec::new();
        let stats = Detector::default().detect(&shapes, &poses, &is_static, 0.05, &mut out);
        let expected = brute_force(&shapes, &poses, &is_static, 0.05);
        assert!(expected.len() > 1000, "a busy scene: {}", expected.len());
        assert_eq!(out, expected);
        assert_eq!(stats.contacts, out.len());
        // Far fewer candidates than the 2·10⁶ pairs.
        assert!(stats.candidate_pairs < 40_000, "{stats:?}");
        // Each (a, b, feature) once.
        assert!(out.windows(2).all(|w| {
            (w[0].body_a, w[0].body_b, w[0].feature) < (w[1].body_a, w[1].body_b, w[1].feature)
        }));
    }

    #[test]
    fn output_does_not_depend_on_the_thread_count() {
        let (shapes, poses, is_static) = random_scene(600, 7);
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("thread pool");
            let mut out = Vec::new();
            pool.install(|| {
                Detector::default().detect(&shapes, &poses, &is_static, 0.05, &mut out)
            });
            out
        };
        let one = run(1);
        assert!(!one.is_empty());
        assert_eq!(one, run(3));
    }

    #[test]
    fn a_detector_reused_on_other_scenes_gives_what_a_fresh_one_gives() {
        // Larger, then smaller, then larger again: the kept buffers (grid table, tasks,
        // late pairs, the contact list) hold the last call's values and must be overwritten.
        let mut kept = Detector::default();
        let mut out = Vec::new();
        for (n, seed) in [(3000, 11), (700, 12), (1500, 13)] {
            let (shapes, poses, is_static) = random_scene(n, seed);
            let stats = kept.detect(&shapes, &poses, &is_static, 0.05, &mut out);
            let mut fresh = Vec::new();
            let expected =
                Detector::default().detect(&shapes, &poses, &is_static, 0.05, &mut fresh);
            assert!(!fresh.is_empty());
            assert_eq!(out, fresh, "{n} bodies");
            assert_eq!(stats, expected);
        }
    }

    #[test]
    fn static_pairs_and_plane_pairs_are_skipped() {
        let ball = Shape::Sphere { radius: 0.5 };
        let shapes = [Shape::Plane, ball, ball, Shape::Plane, ball];
        let poses = [
            Pose::at(Vector3::zeros()),
            Pose::at(Vector3::new(0.0, 0.0, 0.4)),
            Pose::at(Vector3::new(0.9, 0.0, 0.4)),
            Pose::at(Vector3::zeros()),
            Pose::at(Vector3::new(1.8, 0.0, 0.4)),
        ];
        // Bodies 0, 1, 3 static: only pairs involving 2 or 4.
        let is_static = [true, true, false, true, false];
        let mut out = Vec::new();
        let stats = Detector::default().detect(&shapes, &poses, &is_static, 0.01, &mut out);
        let pairs: Vec<(usize, usize)> = out.iter().map(|c| (c.body_a, c.body_b)).collect();
        assert_eq!(pairs, [(0, 2), (0, 4), (1, 2), (2, 4), (3, 2), (3, 4)]);
        assert_eq!(stats.candidate_pairs, 6);
    }

    /// Features of the contacts of a box resting on a plane (body 0) and on a box (body 1).
    fn resting_features(offset: Vector3<f64>, angle: f64) -> Vec<(usize, usize, u32)> {
        let shapes = [
            Shape::Plane,
            Shape::Box {
                half_extents: [2.0, 2.0, 0.5],
            },
            Shape::Box {
                half_extents: [0.5, 0.4, 0.3],
            },
        ];
        let turn = UnitQuaternion::from_scaled_axis(Vector3::new(0.0, 0.0, 0.4 + angle));
        let poses = [
            Pose::at(Vector3::zeros()),
            Pose::at(Vector3::new(5.0, 0.0, 0.0)),
            Pose {
                position: Vector3::new(0.0, 0.0, 0.3) + offset,
                orientation: turn,
            },
        ];
        let mut out = Vec::new();
        Detector::default().detect(&shapes, &poses, &[true, true, false], 0.02, &mut out);
        let mut upper = poses;
        upper[2].position.x += 5.0; // same box, now on the lower box
        upper[2].position.z += 0.5;
        let mut on_box = Vec::new();
        Detector::default().detect(&shapes, &upper, &[true, true, false], 0.02, &mut on_box);
        out.extend(on_box);
        out.iter()
            .map(|c| (c.body_a, c.body_b, c.feature))
            .collect()
    }

    #[test]
    fn feature_ids_are_stable_when_a_resting_box_moves_slightly() {
        let before = resting_features(Vector3::zeros(), 0.0);
        assert_eq!(before.len(), 8);
        assert_eq!(before.iter().filter(|c| c.0 == 0).count(), 4);
        let after = resting_features(Vector3::new(0.003, -0.002, 0.001), 0.004);
        assert_eq!(before, after);
    }
}
