//! The application layer (ARCHITECTURE.md): what the `signorini` command line runs on top of
//! the library. It writes the run outputs (CSV, PNG, VTK, reports); nothing below it imports
//! it.
//!
//! - [`run`]: the run loop of `simulate`: steps a scene and writes `steps.csv`, snapshots,
//!   VTK frames and the dumped problems, and returns the totals.
//! - [`report`]: the writers of those outputs (PNG snapshots, VTK frames and `.pvd`
//!   collections, the per-step CSV), the convergence and log-log charts, solver traces, and
//!   the tables the command line prints.
//! - [`view`]: `signorini view`, the window that replays a run's trajectory file or follows a
//!   live run.
//! - [`check`]: `solve` and `check`: a problem file prepared for the solvers, several
//!   solvers side by side, and what the comparison writes.
//! - [`mod@bench`]: the benchmark suites of `signorini bench` (throughput CPU vs GPU,
//!   convergence, scaling, accuracy) and their report (markdown, CSV, charts).

pub mod bench;
pub mod check;
pub mod report;
pub mod run;
pub mod view;
