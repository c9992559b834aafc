//! The memory limit that problems and scenes are checked against before they allocate.
//!
//! Every size a file or a scene can set (matrix dimensions, degrees of freedom, bodies,
//! lattice counts, the contacts an envelope implies) is turned into an estimate of the bytes
//! it needs, with overflow checked, and refused when the estimate exceeds
//! [`Limits::max_memory`]: a clear error instead of an allocation failure that aborts the
//! process.

use crate::error::{Error, Result};

/// Fraction of the machine's memory allowed by default.
pub const DEFAULT_MEMORY_FRACTION: f64 = 0.5;

/// The memory assumed when the machine's cannot be read (not Linux): 8 GiB.
const FALLBACK_MEMORY: u64 = 8 << 30;

/// Limits on what a problem or a scene may allocate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest estimated memory, bytes.
    pub max_memory: u64,
}

impl Default for Limits {
    /// [`DEFAULT_MEMORY_FRACTION`] of the machine's memory.
    fn default() -> Self {
        let total = machine_memory().unwrap_or(FALLBACK_MEMORY);
        Limits {
            max_memory: (total as f64 * DEFAULT_MEMORY_FRACTION) as u64,
        }
    }
}

impl Limits {
    /// Refuses `what` when it needs more than the limit; `bytes` is `None` when the size
    /// computation itself overflowed.
    pub fn check(&self, what: impl FnOnce() -> String, bytes: Option<u64>) -> Result<()> {
        match bytes {
            Some(b) if b <= self.max_memory => Ok(()),
            _ => Err(Error::TooLarge {
                what: what(),
                bytes,
                limit: self.max_memory,
            }),
        }
    }
}

/// `count × item` bytes, `None` on overflow.
pub fn bytes_of(count: usize, item: usize) -> Option<u64> {
    (count as u64).checked_mul(item as u64)
}

/// The sum of estimates, `None` when one of them or the sum overflows.
pub fn total(parts: &[Option<u64>]) -> Option<u64> {
    parts.iter().try_fold(0u64, |acc, p| acc.checked_add((*p)?))
}

/// A byte count for messages: `3.2 GB`, `512 kB`, `12 B`.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["kB", "MB", "GB", "TB", "PB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1000.0;
    let mut unit = 0;
    while v >= 1000.0 && unit + 1 < UNITS.len() {
        v /= 1000.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// Parses a memory size: bytes, or a number with `k`, `M`, `G`, `T` (powers of 1000) or
/// `KiB`, `MiB`, `GiB`, `TiB` (powers of 1024): `512M`, `2.5G`, `8GiB`.
pub fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale: f64 = match unit.trim().trim_end_matches('B') {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        _ => {
            return Err(format!(
                "`{s}`: unknown unit; use k, M, G, T, KiB, MiB, GiB or TiB"
            ));
        }
    };
    let v: f64 = number
        .parse()
        .map_err(|_| format!("`{s}`: expected a size such as 512M, 2.5G or 8GiB"))?;
    let bytes = v * scale;
    if bytes.is_finite() && bytes >= 1.0 && bytes < u64::MAX as f64 {
        Ok(bytes as u64)
    } else {
        Err(format!("`{s}`: a memory limit must be at least 1 byte"))
    }
}

/// Total memory of the machine (Linux: `MemTotal` of `/proc/meminfo`).
pub fn machine_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print() {
        assert_eq!(parse_size("512M"), Ok(512_000_000));
        assert_eq!(parse_size("8GiB"), Ok(8 << 30));
        assert_eq!(parse_size("1e3"), Ok(1000));
        assert!(parse_size("0").is_err());
        assert!(parse_size("12 parsecs").is_err());
        assert_eq!(human(3_200_000_000), "3.2 GB");
        assert_eq!(total(&[Some(1), Some(2)]), Some(3));
        assert_eq!(total(&[Some(u64::MAX), Some(1)]), None);
        assert_eq!(bytes_of(usize::MAX, 16), None);
    }

    #[test]
    fn the_refusal_says_the_estimate_and_the_limit() {
        let limits = Limits { max_memory: 1000 };
        assert!(limits.check(|| "x".into(), Some(1000)).is_ok());
        let msg = limits
            .check(|| "the lattice".into(), Some(3_200_000))
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("the lattice") && msg.contains("3.2 MB"),
            "{msg}"
        );
        assert!(msg.contains("1.0 kB"), "{msg}");
        let msg = limits.check(|| "n".into(), None).unwrap_err().to_string();
        assert!(msg.contains("overflow"), "{msg}");
    }
}
