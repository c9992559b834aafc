//! `signorini view` (issue 18): the window under Xvfb when it is installed (its frames are
//! drawn and change with the keys: the scripted ones, and real key presses through xdotool
//! when it and xwd are installed), and the refusal without a display.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Whether `program` is on `PATH`.
fn installed(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// A run of 10 steps of 20 balls in a box with a trajectory frame every 5 steps, in `dir`.
fn record(dir: &Path) -> PathBuf {
    let scene = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/balls_in_box.toml");
    let path = dir.join("run.traj");
    let (dir, file) = (dir.to_str().unwrap(), path.to_str().unwrap());
    let summary = common::run_cli_json([
        "simulate",
        scene,
        "--steps",
        "10",
        "--set",
        "lattice.0.count=20",
        "--snapshot-every",
        "5",
        "--frame-size",
        "32x32",
        "--out",
        dir,
        "--trajectory",
        file,
        "--json-summary",
    ]);
    assert_eq!(summary["steps"], 10);
    path
}

/// Whether the window tests can run: Xvfb installed (else a note that `what` is skipped) and
/// an adapter (lavapipe will do).
fn windows(what: &str) -> bool {
    if !installed("Xvfb") {
        eprintln!("note: Xvfb is not installed (Debian: xvfb): {what} is skipped");
        return false;
    }
    common::gpu::context().is_some()
}

/// An X server on a display of its own, stopped when dropped.
struct Xvfb {
    child: Child,
    display: String,
}

impl Xvfb {
    /// Starts Xvfb on a display it picks as free (`-displayfd`: it writes the number on
    /// its standard output once it listens).
    fn start() -> Xvfb {
        let mut child = Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-screen",
                "0",
                "640x480x24",
                "-nolisten",
                "tcp",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let stdout = child.stdout.take().unwrap();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let n: u32 = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("Xvfb said `{line}`"));
        Xvfb {
            child,
            display: format!(":{n}"),
        }
    }

    /// `signorini view` with `args` on this display.
    fn view(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_signorini"));
        c.arg("view")
            .env("DISPLAY", &self.display)
            .env_remove("WAYLAND_DISPLAY");
        c
    }

    /// Runs `signorini view` with `args` on this display to its end, which must be a success.
    fn view_ok<S: AsRef<std::ffi::OsStr>>(&self, args: impl IntoIterator<Item = S>) {
        let out = self.view().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
    }

    /// The screen's pixels (xwd's dump, whose header stays the same between grabs).
    fn grab(&self) -> Vec<u8> {
        let out = Command::new("xwd")
            .args(["-root", "-silent", "-display", &self.display])
            .output()
            .unwrap();
        assert!(out.status.success());
        out.stdout
    }

    fn xdotool(&self, args: &[&str]) -> Output {
        Command::new("xdotool")
            .args(args)
            .env("DISPLAY", &self.display)
            .output()
            .unwrap()
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Under Xvfb, `view --script right,c --screenshot DIR` presents three frames of the
/// window's size, each different from the one before (a step, then another color field),
/// and closes the window with status 0. Skipped, with a message, without Xvfb.
#[test]
fn view_shows_frames_that_follow_the_keys() {
    if !windows("the window test") {
        return;
    }
    let dir = common::fresh_dir("view-script");
    let trajectory = record(&dir);
    let x = Xvfb::start();
    let shots = dir.join("shots");
    x.view_ok([
        trajectory.to_str().unwrap(),
        "--script",
        "right,c",
        "--size",
        "200x120",
        "--screenshot",
        shots.to_str().unwrap(),
    ]);
    let frames: Vec<image::RgbaImage> = (0..3)
        .map(|k| {
            image::open(shots.join(format!("view_{k}.png")))
                .unwrap()
                .to_rgba8()
        })
        .collect();
    for (k, f) in frames.iter().enumerate() {
        assert_eq!(f.dimensions(), (200, 120), "view_{k}");
        // Not a blank image: bodies are drawn in colors far from the grey background.
        let colored = f.pixels().filter(|p| p[0].abs_diff(p[2]) > 40).count();
        assert!(colored > 100, "view_{k}: {colored} colored pixels");
    }
    assert_ne!(
        frames[0], frames[1],
        "the right arrow steps to the next frame"
    );
    assert_ne!(frames[1], frames[2], "c colors by another field");
}

/// Under Xvfb, `view SCENE --live` runs the scene through `simulate`'s loop, which writes the
/// trajectory into its output folder, while the window shows it. Skipped without Xvfb.
#[test]
fn view_live_steps_the_scene() {
    if !windows("the live window test") {
        return;
    }
    let dir = common::fresh_dir("view-live");
    let x = Xvfb::start();
    let scene = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/balls_in_box.toml");
    let shots = dir.join("shots");
    x.view_ok([
        scene,
        "--live",
        "--steps",
        "4",
        "--set",
        "lattice.0.count=20",
        "--script",
        "end",
        "--size",
        "200x120",
        "--out",
        dir.to_str().unwrap(),
        "--screenshot",
        shots.to_str().unwrap(),
    ]);
    for k in 0..2 {
        assert!(
            dir.join(format!("shots/view_{k}.png")).is_file(),
            "view_{k}"
        );
    }
    let reader =
        signorini::app::report::trajectory::TrajectoryReader::open(&dir.join("trajectory.traj"))
            .unwrap();
    assert!(reader.frames() >= 1);
    assert_eq!(reader.header().scene, "balls_in_box");
}

/// Under Xvfb with xdotool and xwd installed, a real key press (`c`) and a mouse drag change
/// what the window shows on the screen. Skipped, with a message, without them.
#[test]
fn view_answers_real_key_presses() {
    let missing: Vec<_> = ["xdotool", "xwd"]
        .into_iter()
        .filter(|p| !installed(p))
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "note: {missing:?} not installed (Debian: xdotool, x11-apps): the key-press test is skipped"
        );
        return;
    }
    if !windows("the key-press test") {
        return;
    }
    let dir = common::fresh_dir("view-keys");
    let trajectory = record(&dir);
    let x = Xvfb::start();
    let mut view = x
        .view()
        .arg(&trajectory)
        .args(["--size", "200x120"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let found = x.xdotool(&["search", "--sync", "--name", "signorini view"]);
    let window = String::from_utf8_lossy(&found.stdout).trim().to_string();
    assert!(!window.is_empty(), "no window");
    assert!(
        x.xdotool(&["windowfocus", "--sync", &window])
            .status
            .success()
    );
    // The replay plays to its last frame, then stays: wait until the screen is still.
    let mut before = x.grab();
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = x.grab();
        if now == before {
            break;
        }
        before = now;
    }
    let changed_after = |x: &Xvfb, args: &[&str], before: &[u8]| {
        assert!(x.xdotool(args).status.success());
        let start = Instant::now();
        loop {
            let now = x.grab();
            if now != before {
                return now;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{args:?}: the window did not change"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let after_key = changed_after(&x, &["key", "c"], &before);
    changed_after(
        &x,
        &[
            "mousemove",
            "100",
            "60",
            "mousedown",
            "1",
            "mousemove",
            "140",
            "70",
            "mouseup",
            "1",
        ],
        &after_key,
    );
    assert!(x.xdotool(&["key", "Escape"]).status.success());
    let status = view.wait().unwrap();
    assert!(status.success(), "view exited with {status}");
}

/// Without a display `view` exits with an error that says so and points at `--animation`,
/// without a panic.
#[test]
fn view_without_a_display_points_at_the_animation() {
    let dir = common::fresh_dir("view-no-display");
    let trajectory = record(&dir);
    let out = Command::new(env!("CARGO_BIN_EXE_signorini"))
        .arg("view")
        .arg(&trajectory)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("DISPLAY") && stderr.contains("--animation"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
