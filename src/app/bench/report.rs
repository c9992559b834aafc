//! The report every suite writes: `DIR/report.md` (machine and adapter, the command that
//! reproduces it, one section per suite with its tables, notes and embedded PNG charts) and
//! one CSV file per table, `DIR/<table>.csv`.
//!
//! Cells keep their numbers: the CSV files carry them in Rust's shortest round-trip format,
//! the markdown rounds them for reading.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::app::report::chart::{Line, write_loglog_chart};
use crate::app::report::write_text_via_temp;
use crate::error::{Error, Result};
use crate::gpu::AdapterSummary;

/// Pixel size of the suites' log-log charts.
pub const PLOT_SIZE: (u32, u32) = (900, 560);

/// Pixel size of the suites' convergence charts (two panels).
pub const CONVERGENCE_PLOT_SIZE: (u32, u32) = (1100, 440);

/// One cell of a table.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Cell {
    /// Text (a name, a status).
    Text(String),
    /// A count.
    Int(u64),
    /// A measured or computed number.
    Num(f64),
    /// Not applicable (e.g. the GPU-only columns of a CPU row): `—` in markdown, empty in CSV.
    Missing,
}

impl Cell {
    /// A text cell.
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }

    /// A count cell.
    pub fn int(n: usize) -> Cell {
        Cell::Int(n as u64)
    }

    /// `Num(v)` for `Some(v)`, else `Missing`.
    pub fn opt(v: Option<f64>) -> Cell {
        v.map_or(Cell::Missing, Cell::Num)
    }

    /// The markdown form: numbers to 4 significant digits.
    fn markdown(&self) -> String {
        match self {
            Cell::Text(s) => s.replace('|', "\\|"),
            Cell::Int(n) => n.to_string(),
            Cell::Num(v) => format_number(*v),
            Cell::Missing => "—".into(),
        }
    }

    /// The CSV form: numbers in the shortest form that parses back to the same value, text
    /// quoted when it holds a comma, a quote or a line break.
    fn csv(&self) -> String {
        match self {
            Cell::Text(s) if s.contains([',', '"', '\n']) => {
                format!("\"{}\"", s.replace('"', "\"\""))
            }
            Cell::Text(s) => s.clone(),
            Cell::Int(n) => n.to_string(),
            Cell::Num(v) => v.to_string(),
            Cell::Missing => String::new(),
        }
    }
}

/// A number to 4 significant digits: plain between 0.01 and 1e5, scientific otherwise.
pub fn format_number(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 || !v.is_finite() {
        v.to_string()
    } else if (1e-2..1e5).contains(&a) {
        let decimals = (3 - a.log10().floor() as i32).max(0) as usize;
        format!("{v:.decimals$}")
    } else {
        format!("{v:.3e}")
    }
}

/// A column of a table of `R`s: its name and the cell of a row.
pub type Column<'a, R> = (&'a str, fn(&R) -> Cell);

/// A table: written into the markdown and as `<name>.csv`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    /// File stem of the CSV (letters, digits, `_`, `-`).
    pub name: String,
    /// One sentence above the table in the markdown.
    pub caption: String,
    /// Column names (the CSV header).
    pub columns: Vec<String>,
    /// The rows, each as long as `columns`.
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// An empty table with the given columns.
    pub fn new(name: &str, caption: impl Into<String>, columns: &[&str]) -> Table {
        Table {
            name: name.into(),
            caption: caption.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// The table of `rows`, one row per item, with the cells of `columns`.
    pub fn of<R>(name: &str, caption: &str, rows: &[R], columns: &[Column<R>]) -> Table {
        let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
        let mut table = Table::new(name, caption, &names);
        for r in rows {
            table.push(columns.iter().map(|(_, cell)| cell(r)).collect());
        }
        table
    }

    /// Appends a row.
    pub fn push(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(row.len(), self.columns.len(), "row of table {}", self.name);
        self.rows.push(row);
    }

    /// The markdown table (header, alignment, rows).
    fn markdown(&self) -> String {
        let mut out = format!("| {} |\n|", self.columns.join(" | "));
        for c in 0..self.columns.len() {
            let numeric = self
                .rows
                .iter()
                .all(|r| matches!(r[c], Cell::Int(_) | Cell::Num(_) | Cell::Missing));
            out += if numeric { "---:|" } else { "---|" };
        }
        out.push('\n');
        for row in &self.rows {
            let cells: Vec<_> = row.iter().map(Cell::markdown).collect();
            out += &format!("| {} |\n", cells.join(" | "));
        }
        out
    }

    /// The CSV text: header and rows.
    fn csv(&self) -> String {
        let mut out = self.columns.join(",");
        out.push('\n');
        for row in &self.rows {
            let cells: Vec<_> = row.iter().map(Cell::csv).collect();
            out += &cells.join(",");
            out.push('\n');
        }
        out
    }
}

/// A chart the suite wrote into the report's folder.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plot {
    /// File name inside the report's folder.
    pub file: String,
    /// Alternative text and caption.
    pub caption: String,
}

/// Writes the log-log chart `dir/<plot.file>` of `lines` (label and points each) and gives
/// `plot` back to be linked, or nothing when there is no line.
pub fn loglog_plot(
    dir: &Path,
    plot: Plot,
    title: &str,
    axes: (&str, &str),
    lines: &[(String, Vec<(f64, f64)>)],
) -> Result<Vec<Plot>> {
    if lines.is_empty() {
        return Ok(Vec::new());
    }
    let lines: Vec<Line> = lines
        .iter()
        .map(|(label, points)| Line { label, points })
        .collect();
    write_loglog_chart(&dir.join(&plot.file), title, axes, &lines, PLOT_SIZE)?;
    Ok(vec![plot])
}

/// The distinct values of `items`, in order of first appearance.
pub fn distinct<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// The part of the report one suite writes.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Section {
    /// Heading (the suite).
    pub heading: String,
    /// Paragraphs before the tables: what was measured and how.
    pub text: Vec<String>,
    /// The tables.
    pub tables: Vec<Table>,
    /// The charts.
    pub plots: Vec<Plot>,
    /// What was skipped or replaced, and why.
    pub notes: Vec<String>,
}

/// The machine a report was measured on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Machine {
    /// CPU model (`/proc/cpuinfo`), or the architecture where that is not readable.
    pub cpu: String,
    /// Threads of the CPU solvers (rayon's pool).
    pub threads: usize,
    /// Installed memory, GiB, when known.
    pub memory_gib: Option<f64>,
    /// Operating system and architecture.
    pub os: String,
    /// `release` or `debug` (a debug build's times are not representative).
    pub build: &'static str,
    /// The GPU adapter of the GPU rows, when one was used.
    pub adapter: Option<AdapterSummary>,
    /// Date of the run (UTC, `YYYY-MM-DD`).
    pub date: String,
}

impl Machine {
    /// Describes this machine; `adapter` is the one the GPU rows ran on.
    pub fn detect(adapter: Option<AdapterSummary>) -> Machine {
        let proc_field = |file: &str, key: &str| {
            std::fs::read_to_string(file).ok().and_then(|text| {
                text.lines()
                    .find(|l| l.starts_with(key))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
        };
        let memory_gib = proc_field("/proc/meminfo", "MemTotal")
            .and_then(|v| v.trim_end_matches("kB").trim().parse::<f64>().ok())
            .map(|kib| kib / (1024.0 * 1024.0));
        let days = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() / 86_400);
        Machine {
            cpu: proc_field("/proc/cpuinfo", "model name")
                .unwrap_or_else(|| std::env::consts::ARCH.to_string()),
            threads: rayon::current_num_threads(),
            memory_gib,
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            build: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
            adapter,
            date: civil_date(days as i64),
        }
    }

    /// The markdown lines describing the machine.
    fn markdown(&self) -> String {
        let mut out = format!(
            "- CPU: {}, {} threads{}; {}\n",
            self.cpu,
            self.threads,
            self.memory_gib
                .map_or(String::new(), |m| format!(", {m:.0} GiB")),
            self.os
        );
        match &self.adapter {
            Some(a) => {
                out += &format!(
                    "- GPU adapter: {} ({}, {}, driver {})",
                    a.name, a.backend, a.device_type, a.driver
                );
                if a.device_type == "Cpu" {
                    out += ": a software rasterizer running on the same CPU cores, not a GPU";
                }
                out.push('\n');
            }
            None => out += "- GPU adapter: none used\n",
        }
        out += &format!("- Build: {}; date {}\n", self.build, self.date);
        if self.build == "debug" {
            out += "- **Debug build: times are not representative.**\n";
        }
        out
    }
}

/// `YYYY-MM-DD` of the day `days` after 1970-01-01 (proleptic Gregorian; H. Hinnant's
/// `civil_from_days`).
fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// The command line that reproduces a run: `signorini` and the arguments, each quoted for a
/// POSIX shell when it needs it.
pub fn command_line(args: impl IntoIterator<Item = String>) -> String {
    let quote = |a: String| {
        if !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.,=/:+@%".contains(c))
        {
            a
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        }
    };
    std::iter::once("signorini".to_string())
        .chain(args.into_iter().map(quote))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchReport {
    /// The command that reproduces it ([`command_line`]).
    pub command: String,
    /// Where it was measured.
    pub machine: Machine,
    /// One section per suite.
    pub sections: Vec<Section>,
    /// Wall time of the whole run, seconds.
    pub wall_s: f64,
}

impl BenchReport {
    /// The markdown text of `report.md`.
    pub fn markdown(&self) -> String {
        let mut out = String::from("# signorini benchmark report\n\n");
        out += &self.machine.markdown();
        out += &format!(
            "- Command: `{}` (took {:.1} s)\n\n",
            self.command, self.wall_s
        );
        for section in &self.sections {
            out += &format!("## {}\n\n", section.heading);
            for p in &section.text {
                out += &format!("{p}\n\n");
            }
            for table in &section.tables {
                out += &format!(
                    "{} ([{}.csv]({}.csv))\n\n{}\n",
                    table.caption,
                    table.name,
                    table.name,
                    table.markdown()
                );
            }
            for plot in &section.plots {
                out += &format!("![{}]({})\n\n", plot.caption, plot.file);
            }
            for note in &section.notes {
                out += &format!("- Note: {note}\n");
            }
            if !section.notes.is_empty() {
                out.push('\n');
            }
        }
        out
    }

    /// Writes `dir/report.md` and `dir/<table>.csv` for every table (the charts are already
    /// there). An empty table is an error: a suite that measured nothing says why in it.
    pub fn write(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        for section in &self.sections {
            for table in &section.tables {
                if table.rows.is_empty() {
                    let why = if section.notes.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", section.notes.join("; "))
                    };
                    return Err(Error::Report(format!(
                        "table `{}` of {} has no rows: nothing was measured{why}",
                        table.name, section.heading
                    )));
                }
                let path = dir.join(format!("{}.csv", table.name));
                write_text_via_temp(&path, |w| w.write_all(table.csv().as_bytes()))?;
            }
        }
        let path = dir.join("report.md");
        write_text_via_temp(&path, |w| w.write_all(self.markdown().as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_text_are_formatted_for_each_medium() {
        assert_eq!(format_number(1234.5678), "1235");
        assert_eq!(format_number(0.012345), "0.01235");
        assert_eq!(format_number(3.0), "3.000");
        assert_eq!(format_number(1.5e7), "1.500e7");
        assert_eq!(format_number(-2.5e-5), "-2.500e-5");
        assert_eq!(Cell::Num(0.1 + 0.2).csv(), "0.30000000000000004");
        assert_eq!(Cell::text("a,\"b\"").csv(), "\"a,\"\"b\"\"\"");
        assert_eq!(Cell::Missing.csv(), "");
        assert_eq!(Cell::text("a|b").markdown(), "a\\|b");
    }

    #[test]
    fn dates_and_command_lines() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert_eq!(civil_date(20_782), "2026-11-25");
        let cmd = command_line(["bench", "scaling", "--out", "my dir", "it's"].map(String::from));
        assert_eq!(cmd, "signorini bench scaling --out 'my dir' 'it'\\''s'");
    }

    #[test]
    fn tables_go_to_markdown_and_csv_and_empty_ones_are_refused() {
        let mut t = Table::new("t", "A table.", &["solver", "time"]);
        t.push(vec![Cell::text("pgs"), Cell::Num(0.5)]);
        t.push(vec![Cell::text("jacobi"), Cell::Missing]);
        assert_eq!(
            t.markdown(),
            "| solver | time |\n|---|---:|\n| pgs | 0.5000 |\n| jacobi | — |\n"
        );
        assert_eq!(t.csv(), "solver,time\npgs,0.5\njacobi,\n");
        let dir = crate::app::report::tests::temp_dir("bench-report");
        let mut report = BenchReport {
            command: "signorini bench x".into(),
            machine: Machine::detect(None),
            sections: vec![Section {
                heading: "x".into(),
                tables: vec![t],
                ..Section::default()
            }],
            wall_s: 1.0,
        };
        report.write(&dir).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("t.csv")).unwrap(),
            "solver,time\npgs,0.5\njacobi,\n"
        );
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(md.contains("`signorini bench x`") && md.contains("| pgs | 0.5000 |"));
        report.sections[0].tables[0].rows.clear();
        report.sections[0].notes.push("no GPU".into());
        let err = report.write(&dir).unwrap_err().to_string();
        assert!(err.contains("no rows") && err.contains("no GPU"), "{err}");
    }
}
