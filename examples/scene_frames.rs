//! A frame of every scene of `scenes/` (issue 18), as `docs/scenes/NAME.png`: each scene is
//! run for its `run.steps` with its solver, then rendered from the three-quarter view,
//! colored by speed on a scale from 0 to at least 0.1 m/s. Scene names after the folder
//! limit it to those scenes. With `--spheres N`, instead renders N spheres on a lattice and prints
//! the time of a frame (the renderer's throughput).
//!
//! ```text
//! cargo run --release --example scene_frames [-- OUT_DIR [SCENE...]]
//! cargo run --release --example scene_frames -- --spheres 100000
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use nalgebra::Vector3;
use signorini::app::report::frame::write_frame_png;
use signorini::gpu::GpuContext;
use signorini::registry;
use signorini::render::{ColorField, ColorScale, Renderer, SceneFrame, Style, caption};
use signorini::sim::{Pose, Shape, scene};
use signorini::solver::Runner;

fn main() -> signorini::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut renderer = Renderer::new(Arc::new(GpuContext::new()?));
    if let [flag, n] = args.as_slice()
        && flag == "--spheres"
    {
        let n: usize = n
            .parse()
            .map_err(|e| signorini::Error::invalid("--spheres", format!("{e}")))?;
        return time_spheres(&mut renderer, n);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = args
        .first()
        .map_or_else(|| root.join("docs/scenes"), PathBuf::from);
    std::fs::create_dir_all(&out).map_err(|source| signorini::Error::Io {
        path: out.clone(),
        source,
    })?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("scenes"))
        .map_err(|source| signorini::Error::Io {
            path: root.join("scenes"),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .filter(|p| {
            let name = p.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
            args.len() < 2 || args[1..].iter().any(|a| a == name)
        })
        .collect();
    files.sort();
    for file in files {
        let mut sc = scene::load(&file, &[])?;
        let mut solver = Runner::new(registry::solver(&sc.run.solver)?);
        let start = Instant::now();
        for _ in 0..sc.run.steps {
            sc.world.step(&mut solver)?;
        }
        let frame = SceneFrame::from_world(&sc.world, ColorField::Speed);
        let style = Style {
            width: 640,
            height: 400,
            scale: ColorScale::spanning(
                frame.values.iter().copied().chain([0.0, 0.1]),
                ColorField::Speed.label(),
            ),
            caption: Some(caption(
                &sc.name,
                sc.world.steps,
                sc.world.time,
                solver.name(),
            )),
            ..Style::default()
        };
        let image = renderer.render(&frame, &style)?;
        let path = out.join(format!("{}.png", sc.name));
        write_frame_png(&path, &image)?;
        println!(
            "{} ({:.1} s)",
            path.display(),
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Renders `n` spheres on a cubic lattice at 960×600 and prints the time of each of three
/// frames (the first one also compiles the pipelines).
fn time_spheres(renderer: &mut Renderer, n: usize) -> signorini::Result<()> {
    let side = (n as f64).cbrt().ceil() as usize;
    let poses: Vec<Pose> = (0..n)
        .map(|i| {
            Pose::at(Vector3::new(
                (i % side) as f64,
                (i / side % side) as f64,
                (i / side / side) as f64,
            ))
        })
        .collect();
    let frame = SceneFrame {
        shapes: vec![Shape::Sphere { radius: 0.45 }; n],
        values: (0..n).map(|i| i as f64).collect(),
        poses,
        links: Vec::new(),
    };
    let style = Style {
        scale: ColorScale::spanning(frame.values.iter().copied(), "body id"),
        ..Style::default()
    };
    for _ in 0..3 {
        let start = Instant::now();
        renderer.render(&frame, &style)?;
        println!(
            "{n} spheres, 960×600: {:.3} s",
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
