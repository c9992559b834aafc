//! The simulator: rigid bodies, shapes, collision detection, joints and the time stepper that
//! turns a scene into one cone complementarity problem per step (DESIGN §5), and
//! the same step resident on the GPU for spheres against planes ([`resident`]).

pub mod body;
pub mod collision;
pub mod fe;
pub mod joint;
pub mod projection;
pub mod resident;
pub mod scene;
pub mod shape;
pub mod spring;
pub mod stats;
pub mod world;

pub use body::{Motion, Oscillation, RigidBody};
pub use joint::{Joint, JointKind};
pub use resident::Resident;
pub use shape::{Pose, Shape};
pub use spring::Spring;
pub use stats::StepStats;
pub use world::{StepSettings, World};
