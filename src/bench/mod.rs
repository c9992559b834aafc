//! Benchmarks users run from the command line (`signorini bench SUITE`): their problems,
//! measurements and tables. Timings are measured here, never asserted in tests.
//!
//! - [`problems`]: the benchmark problems, built by the simulator from generated scenes.
//! - [`throughput`]: contact-iterations per second of each solver on the CPU and on the
//!   GPU, and the GPU figure as a fraction of the memory bandwidth measured in the same run.

pub mod problems;
pub mod throughput;

use crate::error::{Error, Result};

/// Parses a comma-separated list of sizes; each entry is an integer or a float in
/// scientific notation (`1e5`). `what` names the option in errors.
pub fn parse_sizes(list: &str, what: &'static str) -> Result<Vec<usize>> {
    list.split(',')
        .map(|s| {
            let s = s.trim();
            s.parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .or_else(|| {
                    s.parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite() && *v >= 1.0 && v.fract() == 0.0)
                        .map(|v| v as usize)
                })
                .ok_or_else(|| Error::InvalidSetting {
                    name: what,
                    value: s.to_string(),
                    message: "expected positive integers such as 1000 or 1e5".into(),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::parse_sizes;

    #[test]
    fn sizes_accept_integers_and_scientific_notation() {
        assert_eq!(
            parse_sizes("1000, 1e4,2.5e3", "sizes").unwrap(),
            [1000, 10_000, 2500]
        );
        for bad in ["", "0", "1e-3", "1.5", "x", "1e400"] {
            assert!(parse_sizes(bad, "sizes").is_err(), "{bad}");
        }
    }
}
