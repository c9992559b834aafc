//! The simulator: rigid bodies, shapes, collision detection, joints and the time stepper that
//! turns a scene into one cone complementarity problem per step (DESIGN §5).

pub mod collision;
pub mod shape;

pub use shape::{Pose, Shape};
