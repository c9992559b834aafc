//! The trajectory file of a run (`simulate --trajectory FILE`): the bodies' poses at every
//! snapshot, streamed, `f32`, what `signorini view` replays (issue 18).
//!
//! # Format (version 1, all numbers little-endian)
//!
//! A header, then the frames until the end of the file:
//!
//! | bytes | content |
//! |---|---|
//! | 8 | signature `SIGNTRAJ` |
//! | 4 | format version, `u32` (1) |
//! | 4 | bodies `n`, `u32` |
//! | 4 | joints `m`, `u32` |
//! | 2 + … | scene name: length `u16`, UTF-8 |
//! | 2 + … | solver name: length `u16`, UTF-8 |
//! | 13 `n` | per body: shape `u8` (0 sphere, 1 box, 2 plane, 3 cylinder), three `f32` (radius, 0, 0; the half extents; 0, 0, 0; radius, half length, 0) |
//! | 32 `m` | per joint: body A `u32` (`u32::MAX` for the ground), body B `u32`, anchor on A and anchor on B (three `f32` each, in the body's frame; the world frame for the ground) |
//!
//! Each frame is `16 + 34 n` bytes: the step `u64` and the time `f64` (s), then per body its
//! position (three `f32`, m), orientation (unit quaternion `x, y, z, w`, four `f32`), speed
//! (`f32`, m/s) and number of contact points in the last step (`u16`). The writer flushes
//! after every frame, so that the file of a run stopped midway holds whole frames and at most
//! one cut-off frame at its end, which [`TrajectoryReader`] leaves out with a note.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use nalgebra::{Quaternion, UnitQuaternion, Vector3};

use crate::error::{Error, FileFault, Result};
use crate::render::{ColorField, Link, SceneFrame, joint_links};
use crate::sim::{Pose, Shape, World};

/// The first bytes of a trajectory file.
const SIGNATURE: &[u8; 8] = b"SIGNTRAJ";
/// The format version this build reads and writes.
const VERSION: u32 = 1;
/// The format's name in errors.
const FORMAT: &str = "signorini trajectory";
/// Bytes of a frame's step and time.
const FRAME_HEAD: u64 = 16;
/// Bytes per body per frame: position, orientation, speed (`f32`) and contacts (`u16`).
const BODY_BYTES: u64 = 4 * (3 + 4 + 1) + 2;
/// Bytes per body of the header's shapes.
const SHAPE_BYTES: u64 = 1 + 4 * 3;
/// Bytes per joint of the header.
const JOINT_BYTES: u64 = 4 + 4 + 4 * 6;
/// Body A of a joint to the ground, in the file.
const GROUND: u32 = u32::MAX;

/// What a trajectory file says about its run once: the scene, the solver, the bodies' shapes
/// and the joints drawn as links.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Scene name.
    pub scene: String,
    /// Solver name.
    pub solver: String,
    /// The shape of every body.
    pub shapes: Vec<Shape>,
    /// The joints' ends (bodies and anchors).
    pub links: Vec<Link>,
}

/// One frame of a trajectory file.
#[derive(Debug, Clone, PartialEq)]
pub struct TrajectoryFrame {
    /// The step after which it was taken.
    pub step: u64,
    /// Simulated time, s.
    pub time: f64,
    /// The pose of every body.
    pub poses: Vec<Pose>,
    /// The speed of every body, m/s.
    pub speeds: Vec<f64>,
    /// Contact points of every body in the last step.
    pub contacts: Vec<u16>,
}

impl Header {
    /// The header of a run of `world` named `scene`, solved by `solver`.
    pub fn of(scene: &str, solver: &str, world: &World) -> Header {
        Header {
            scene: scene.to_string(),
            solver: solver.to_string(),
            shapes: world.bodies.iter().map(|b| b.shape).collect(),
            links: world.joints.iter().map(Link::of).collect(),
        }
    }

    /// `frame` as the renderer draws it, colored by `field`: speed, contacts or body id (a
    /// trajectory keeps no impulses: [`ColorField::Impulse`] is an error).
    pub fn scene_frame(&self, frame: &TrajectoryFrame, field: ColorField) -> Result<SceneFrame> {
        let values = match field {
            ColorField::Speed => frame.speeds.clone(),
            ColorField::Contacts => frame.contacts.iter().map(|&c| f64::from(c)).collect(),
            ColorField::BodyId => (0..self.shapes.len()).map(|i| i as f64).collect(),
            ColorField::Impulse => {
                return Err(Error::InvalidSetting {
                    name: "--color-by",
                    value: field.name().to_string(),
                    message: "a trajectory keeps speeds and contact counts, not impulses: \
                              speed, contacts or body-id"
                        .into(),
                });
            }
        };
        Ok(SceneFrame {
            shapes: self.shapes.clone(),
            links: joint_links(&self.links, &frame.poses),
            poses: frame.poses.clone(),
            values,
        })
    }

    /// Bytes of one frame.
    fn frame_len(&self) -> u64 {
        FRAME_HEAD + BODY_BYTES * self.shapes.len() as u64
    }

    /// The header's bytes.
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(SIGNATURE);
        for k in [VERSION, self.shapes.len() as u32, self.links.len() as u32] {
            out.extend_from_slice(&k.to_le_bytes());
        }
        for text in [&self.scene, &self.solver] {
            // Names longer than a u16 are cut at a character boundary.
            let mut end = text.len().min(usize::from(u16::MAX));
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            out.extend_from_slice(&(end as u16).to_le_bytes());
            out.extend_from_slice(&text.as_bytes()[..end]);
        }
        for shape in &self.shapes {
            let (tag, v) = match *shape {
                Shape::Sphere { radius } => (0u8, [radius, 0.0, 0.0]),
                Shape::Box { half_extents } => (1, half_extents),
                Shape::Plane => (2, [0.0; 3]),
                Shape::Cylinder {
                    radius,
                    half_length,
                } => (3, [radius, half_length, 0.0]),
            };
            out.push(tag);
            put_f32s(&mut out, &v);
        }
        for link in &self.links {
            let a = link.body_a.map_or(GROUND, |a| a as u32);
            out.extend_from_slice(&a.to_le_bytes());
            out.extend_from_slice(&(link.body_b as u32).to_le_bytes());
            put_f32s(&mut out, link.anchor_a.as_slice());
            put_f32s(&mut out, link.anchor_b.as_slice());
        }
        out
    }
}

/// Appends `values` as little-endian `f32`.
fn put_f32s(out: &mut Vec<u8>, values: &[f64]) {
    for &v in values {
        out.extend_from_slice(&(v as f32).to_le_bytes());
    }
}

/// A trajectory file being written: the header at [`create`](TrajectoryWriter::create), one
/// frame per [`write`](TrajectoryWriter::write), flushed at once.
#[derive(Debug)]
pub struct TrajectoryWriter {
    out: BufWriter<File>,
    path: PathBuf,
    bodies: usize,
    record: Vec<u8>,
}

impl TrajectoryWriter {
    /// Creates `path` (its folder too) and writes the header of a run of `world`.
    pub fn create(path: &Path, scene: &str, solver: &str, world: &World) -> Result<Self> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut out = BufWriter::new(File::create(path).map_err(io)?);
        out.write_all(&Header::of(scene, solver, world).encode())
            .and_then(|()| out.flush())
            .map_err(io)?;
        Ok(TrajectoryWriter {
            out,
            path: path.to_path_buf(),
            bodies: world.bodies.len(),
            record: Vec::new(),
        })
    }

    /// Appends the frame of `world` now and flushes it; `world` must have the bodies of the
    /// header.
    pub fn write(&mut self, world: &World) -> Result<()> {
        if world.bodies.len() != self.bodies {
            return Err(Error::invalid(
                "trajectory frame",
                format!(
                    "{} bodies for a file of {}",
                    world.bodies.len(),
                    self.bodies
                ),
            ));
        }
        let contacts = ColorField::Contacts.values(world);
        let r = &mut self.record;
        r.clear();
        r.extend_from_slice(&(world.steps as u64).to_le_bytes());
        r.extend_from_slice(&world.time.to_le_bytes());
        for (b, c) in world.bodies.iter().zip(contacts) {
            let q = b.pose.orientation.quaternion();
            put_f32s(r, b.pose.position.as_slice());
            put_f32s(r, &[q.i, q.j, q.k, q.w, b.velocity.norm()]);
            r.extend_from_slice(&(c.min(f64::from(u16::MAX)) as u16).to_le_bytes());
        }
        self.out
            .write_all(r)
            .and_then(|()| self.out.flush())
            .map_err(|source| Error::Io {
                path: self.path.clone(),
                source,
            })
    }

    /// Flushes the file to the disk.
    pub fn finish(self) -> Result<()> {
        let path = self.path;
        self.out
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all())
            .map_err(|source| Error::Io { path, source })
    }
}

/// A trajectory file opened for reading: the header read and checked, the frames read one at
/// a time on demand (a long run is not held in memory).
#[derive(Debug)]
pub struct TrajectoryReader {
    file: BufReader<File>,
    path: PathBuf,
    header: Header,
    /// Bytes of the header: where the first frame starts.
    start: u64,
    frames: usize,
    note: Option<String>,
}

/// The header's bytes as they are read, with the offset for the errors.
struct Cursor<'a> {
    file: &'a mut BufReader<File>,
    path: &'a Path,
    offset: u64,
    len: u64,
}

impl Cursor<'_> {
    /// A damaged-file error at the current offset.
    fn malformed(&self, message: String) -> Error {
        Error::bad_file(
            self.path.display().to_string(),
            FileFault::Malformed {
                what: format!("byte {}", self.offset),
                message,
            },
        )
    }

    /// The next `n` bytes of the header; a file that ends before is an error naming the
    /// part of the header that was cut.
    fn bytes(&mut self, n: u64, what: &str) -> Result<Vec<u8>> {
        if self.len.saturating_sub(self.offset) < n {
            return Err(Error::bad_file(
                self.path.display().to_string(),
                FileFault::Malformed {
                    what: format!("header ({what})"),
                    message: format!(
                        "the file ends at byte {}, before byte {}: not a whole header",
                        self.len,
                        self.offset.saturating_add(n)
                    ),
                },
            ));
        }
        let mut buf = vec![0; n as usize];
        self.file.read_exact(&mut buf).map_err(|source| Error::Io {
            path: self.path.to_path_buf(),
            source,
        })?;
        self.offset += n;
        Ok(buf)
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn text(&mut self, what: &str) -> Result<String> {
        let b = self.bytes(2, what)?;
        let n = u16::from_le_bytes([b[0], b[1]]);
        let at = self.offset;
        let bytes = self.bytes(u64::from(n), what)?;
        String::from_utf8(bytes)
            .map_err(|_| self.malformed(format!("the {what} (at byte {at}) is not UTF-8")))
    }
}

/// The `f32`s of `bytes` as `f64`.
fn f32s(bytes: &[u8]) -> impl Iterator<Item = f64> + '_ {
    bytes
        .chunks_exact(4)
        .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
}

impl TrajectoryReader {
    /// Opens `path` and reads its header. A file that is not a trajectory, of another
    /// version, or whose header is cut off or inconsistent is an error naming the file; a
    /// last frame cut off (a run stopped midway) is left out, with a [`note`](Self::note).
    pub fn open(path: &Path) -> Result<Self> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let mut file = BufReader::new(file);
        let mut c = Cursor {
            file: &mut file,
            path,
            offset: 0,
            len,
        };
        let name = path.display().to_string();
        if c.len < 8 || c.bytes(8, "signature")? != SIGNATURE {
            return Err(Error::bad_file(
                name,
                FileFault::NotThisFormat { format: FORMAT },
            ));
        }
        let version = c.u32("version")?;
        if version != VERSION {
            return Err(Error::bad_file(
                name,
                FileFault::Version {
                    found: version,
                    supported: VERSION,
                },
            ));
        }
        let bodies = u64::from(c.u32("body count")?);
        let joints = u64::from(c.u32("joint count")?);
        let scene = c.text("scene name")?;
        let solver = c.text("solver name")?;
        // The sizes are checked against the file before anything is allocated for them.
        let at = c.offset;
        let shape_bytes = c.bytes(SHAPE_BYTES * bodies, "shapes")?;
        let mut shapes = Vec::with_capacity(bodies as usize);
        for (i, rec) in shape_bytes.chunks_exact(SHAPE_BYTES as usize).enumerate() {
            let v: Vec<f64> = f32s(&rec[1..]).collect();
            let shape = match rec[0] {
                0 => Shape::Sphere { radius: v[0] },
                1 => Shape::Box {
                    half_extents: [v[0], v[1], v[2]],
                },
                2 => Shape::Plane,
                3 => Shape::Cylinder {
                    radius: v[0],
                    half_length: v[1],
                },
                tag => {
                    return Err(c.malformed(format!(
                        "body {i} (at byte {}): shape tag {tag}, not 0 (sphere), 1 (box), 2 (plane) \
                         or 3 (cylinder)",
                        at + i as u64 * SHAPE_BYTES
                    )));
                }
            };
            let sizes = match shape {
                Shape::Sphere { .. } => &v[..1],
                Shape::Box { .. } => &v[..],
                Shape::Plane => &[],
                Shape::Cylinder { .. } => &v[..2],
            };
            if !sizes.iter().all(|x| *x > 0.0 && x.is_finite()) {
                return Err(c.malformed(format!(
                    "body {i}: the sizes of its shape ({sizes:?}) are not positive and finite"
                )));
            }
            shapes.push(shape);
        }
        let joint_bytes = c.bytes(JOINT_BYTES * joints, "joints")?;
        let mut links = Vec::with_capacity(joints as usize);
        for (i, rec) in joint_bytes.chunks_exact(JOINT_BYTES as usize).enumerate() {
            let index = |k: usize| u32::from_le_bytes([rec[k], rec[k + 1], rec[k + 2], rec[k + 3]]);
            let (a, b) = (index(0), index(4));
            let v: Vec<f64> = f32s(&rec[8..]).collect();
            let body_a = (a != GROUND).then_some(a as usize);
            if body_a.is_some_and(|a| a as u64 >= bodies) || u64::from(b) >= bodies {
                return Err(c.malformed(format!(
                    "joint {i}: bodies {a} and {b}, but the file has {bodies} bodies"
                )));
            }
            links.push(Link {
                body_a,
                anchor_a: Vector3::new(v[0], v[1], v[2]),
                body_b: b as usize,
                anchor_b: Vector3::new(v[3], v[4], v[5]),
            });
        }
        let start = c.offset;
        let header = Header {
            scene,
            solver,
            shapes,
            links,
        };
        let mut reader = TrajectoryReader {
            file,
            path: path.to_path_buf(),
            header,
            start,
            frames: 0,
            note: None,
        };
        reader.count(len);
        Ok(reader)
    }

    /// Counts the whole frames of a file of `len` bytes, with the note of a cut-off one.
    fn count(&mut self, len: u64) {
        let frame = self.header.frame_len();
        let data = len - self.start;
        self.frames = (data / frame) as usize;
        let rest = data % frame;
        self.note = (rest > 0).then(|| {
            format!(
                "{}: the last frame is cut off ({rest} of its {frame} bytes; a run stopped \
                 midway?): reading the {} whole frames before it",
                self.path.display(),
                self.frames
            )
        });
    }

    /// Counts the frames again: a file still being written (`view --live`) has grown.
    pub fn refresh(&mut self) -> Result<()> {
        let len = std::fs::metadata(&self.path)
            .map_err(|source| Error::Io {
                path: self.path.clone(),
                source,
            })?
            .len();
        self.count(len);
        Ok(())
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The number of whole frames.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// What was left out of the file (a cut-off last frame), if anything.
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// Frame `k` (0-based, below [`frames`](Self::frames)).
    pub fn frame(&mut self, k: usize) -> Result<TrajectoryFrame> {
        if k >= self.frames {
            return Err(Error::invalid(
                format!("{}: frame {k}", self.path.display()),
                format!("the file holds {} whole frames", self.frames),
            ));
        }
        let len = self.header.frame_len();
        let io = |source| Error::Io {
            path: self.path.clone(),
            source,
        };
        let mut buf = vec![0; len as usize];
        self.file
            .seek(SeekFrom::Start(self.start + k as u64 * len))
            .and_then(|_| self.file.read_exact(&mut buf))
            .map_err(io)?;
        let n = self.header.shapes.len();
        let mut frame = TrajectoryFrame {
            step: u64::from_le_bytes(buf[..8].try_into().expect("8 bytes")),
            time: f64::from_le_bytes(buf[8..16].try_into().expect("8 bytes")),
            poses: Vec::with_capacity(n),
            speeds: Vec::with_capacity(n),
            contacts: Vec::with_capacity(n),
        };
        for rec in buf[FRAME_HEAD as usize..].chunks_exact(BODY_BYTES as usize) {
            let v: Vec<f64> = f32s(&rec[..32]).collect();
            let q = Quaternion::new(v[6], v[3], v[4], v[5]);
            frame.poses.push(Pose {
                position: Vector3::new(v[0], v[1], v[2]),
                // A zero quaternion (a damaged frame) reads as the identity.
                orientation: UnitQuaternion::try_new(q, 0.0).unwrap_or_default(),
            });
            frame.speeds.push(v[7]);
            frame.contacts.push(u16::from_le_bytes([rec[32], rec[33]]));
        }
        Ok(frame)
    }
}
