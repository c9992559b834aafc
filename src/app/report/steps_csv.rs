//! The per-step statistics of a simulation, streamed to a CSV file (`steps.csv`), and the
//! line-by-line CSV writer it shares with [`super::drives`].
//!
//! One header line, then one line per step, flushed as it is written (a killed run keeps the
//! steps it took); floating-point numbers are written with Rust's shortest round-trip
//! formatting, so `str::parse::<f64>` gives back the exact value.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::sim::StepStats;

/// The header line of the CSV file (without the line break), in the order of the fields of
/// [`StepStats`].
pub const HEADER: &str = "step,time,bodies,contacts,bilateral_rows,iterations,rounds,residual,\
                          max_penetration,kinetic_energy,collision_s,assembly_s,solve_s,status";

/// The CSV line of `s` (without the line break), columns as in [`HEADER`].
fn csv_line(s: &StepStats) -> String {
    format!(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        s.step,
        s.time,
        s.bodies,
        s.contacts,
        s.bilateral_rows,
        s.iterations,
        s.rounds,
        s.residual,
        s.max_penetration,
        s.kinetic_energy,
        s.collision_s,
        s.assembly_s,
        s.solve_s,
        s.status
    )
}

/// A CSV file being written line by line, each line flushed as it is written.
#[derive(Debug)]
pub struct CsvFile {
    path: PathBuf,
    out: BufWriter<File>,
}

impl CsvFile {
    /// Creates (or truncates) the file at `path` and writes the header line.
    pub fn create(path: &Path, header: &str) -> Result<Self> {
        let mut csv = CsvFile {
            path: path.to_path_buf(),
            out: BufWriter::new(File::create(path).map_err(|source| Error::Io {
                path: path.to_path_buf(),
                source,
            })?),
        };
        csv.write_line(header)?;
        Ok(csv)
    }

    /// Appends one line (without its line break) and flushes it to the file.
    pub fn write(&mut self, line: &str) -> Result<()> {
        self.write_line(line)?;
        self.out.flush().map_err(|source| Error::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Flushes the buffer and syncs the file to disk; errors that dropping would hide show here.
    pub fn finish(self) -> Result<()> {
        let path = self.path;
        let io = |source| Error::Io {
            path: path.clone(),
            source,
        };
        let file = self.out.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_all().map_err(io)
    }

    fn write_line(&mut self, line: &str) -> Result<()> {
        writeln!(self.out, "{line}").map_err(|source| Error::Io {
            path: self.path.clone(),
            source,
        })
    }
}

/// A `steps.csv` being written: create it, write one [`StepStats`] per step, then finish it.
#[derive(Debug)]
pub struct StepsCsv(CsvFile);

impl StepsCsv {
    /// Creates (or truncates) the file at `path` and writes the header line.
    pub fn create(path: &Path) -> Result<Self> {
        CsvFile::create(path, HEADER).map(StepsCsv)
    }

    /// Appends the line of one step and flushes it to the file.
    pub fn write(&mut self, s: &StepStats) -> Result<()> {
        self.0.write(&csv_line(s))
    }

    /// Flushes the buffer and syncs the file to disk; errors that dropping would hide show here.
    pub fn finish(self) -> Result<()> {
        self.0.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::report::tests::temp_dir;
    use crate::solver::Status;

    fn stats(step: usize) -> StepStats {
        let k = step as f64;
        StepStats {
            step,
            time: 0.1 * (k + 1.0),
            bodies: 10 + step,
            contacts: 3 * step,
            bilateral_rows: step,
            iterations: 100 + step,
            rounds: step / 2,
            residual: 1e-9 / 3.0 * (k + 1.0),
            max_penetration: 1.0 / 7.0 * k,
            kinetic_energy: 12345.678901234567 + k,
            collision_s: 2.5e-5,
            assembly_s: 1.0 / 3.0 + k,
            solve_s: 0.1 + 0.2 + k,
            status: [Status::Converged, Status::MaxIterations, Status::Stalled][step % 3],
        }
    }

    /// Parses one CSV line back into statistics.
    fn parse(line: &str) -> StepStats {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 14, "{line}");
        let int = |i: usize| f[i].parse::<usize>().unwrap();
        let real = |i: usize| f[i].parse::<f64>().unwrap();
        StepStats {
            step: int(0),
            time: real(1),
            bodies: int(2),
            contacts: int(3),
            bilateral_rows: int(4),
            iterations: int(5),
            rounds: int(6),
            residual: real(7),
            max_penetration: real(8),
            kinetic_energy: real(9),
            collision_s: real(10),
            assembly_s: real(11),
            solve_s: real(12),
            status: serde_json::from_str(&format!("\"{}\"", f[13])).unwrap(),
        }
    }

    #[test]
    fn rows_round_trip() {
        let path = temp_dir("steps-csv").join("steps.csv");
        let rows: Vec<StepStats> = (0..3).map(stats).collect();
        let mut csv = StepsCsv::create(&path).unwrap();
        for row in &rows {
            csv.write(row).unwrap();
        }
        csv.finish().unwrap();

        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some(
                "step,time,bodies,contacts,bilateral_rows,iterations,rounds,residual,max_penetration,\
                 kinetic_energy,collision_s,assembly_s,solve_s,status"
            )
        );
        let back: Vec<StepStats> = lines.map(parse).collect();
        assert_eq!(back, rows);
    }

    #[test]
    fn each_row_is_on_disk_once_written() {
        let path = temp_dir("steps-csv-flush").join("steps.csv");
        let mut csv = StepsCsv::create(&path).unwrap();
        csv.write(&stats(0)).unwrap();
        // Not finished (a killed run): the row is in the file already.
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().nth(1), Some(csv_line(&stats(0)).as_str()));
        csv.finish().unwrap();
    }

    #[test]
    fn header_names_the_fields_in_order() {
        let json = serde_json::to_string(&stats(0)).unwrap();
        let names: Vec<&str> = json
            .trim_matches(['{', '}'])
            .split(',')
            .map(|kv| kv.split(':').next().unwrap().trim_matches('"'))
            .collect();
        assert_eq!(names.join(","), HEADER);
    }

    #[test]
    fn create_in_a_missing_folder_names_the_file() {
        let path = temp_dir("steps-csv-missing").join("no/such/steps.csv");
        let err = StepsCsv::create(&path).unwrap_err();
        assert!(matches!(err, Error::Io { path: p, .. } if p == path));
    }
}
