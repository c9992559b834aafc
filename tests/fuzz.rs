//! Mutation fuzzing of every problem reader: Siconos `.dat`, JSON, binary and (with
//! `--features fclib`) FCLIB HDF5.
//!
//! Seeds are the real problem files of `tests/data` (and their JSON, binary and
//! FCLIB encodings); each input applies 1 to 4 seeded mutations: bit flips, interesting
//! bytes, truncation, byte insertion and deletion, splices, size fields overwritten with
//! huge or negative values, and (text) numbers replaced by huge, negative or non-finite
//! ones. Half of the mutated binary files get a header made consistent again (length and
//! checksum), so that the parser behind the checksum is exercised too. FCLIB files are
//! mutated in the data of their datasets (sizes, storage codes, pointers, indices, values)
//! or truncated, not in their HDF5 metadata (see [`mutate_datasets`]).
//!
//! Every input goes through its reader as `io::read` takes it (UTF-8 or not), and what
//! validates is prepared with `System::with_limits`. Size fields are drawn near the integer
//! limits (`2⁶⁴ − 1`, `2⁶³`, `2⁶¹`, `2³²`, ...), and a separate test sets every size field
//! of every seed problem to those values.
//!
//! Each input must give `Ok` or `Err`: a panic fails the test (the input is saved under
//! cargo's test temporary folder), a heap growth beyond `ALLOC_PER_BYTE` times the input
//! size (plus `ALLOC_SLACK`) aborts the process (a global allocator with a limit), and the
//! slowest input is reported and bounded.
//!
//! `SIGNORINI_FUZZ_READERS=dat,json` restricts a run to those readers.
//! `cargo test --test fuzz` runs 1000 inputs per reader; `SIGNORINI_FUZZ_N=250000
//! cargo test --release --test fuzz -- --ignored` runs that many per reader (1e6 in all).

mod common;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cap::Cap;
use signorini::limits::Limits;
use signorini::problem::io::{self, Format, SiconosKind, binary, json};
use signorini::problem::{CsrMatrix, Operator, Problem, System};

#[global_allocator]
static ALLOC: Cap<std::alloc::System> = Cap::new(std::alloc::System, usize::MAX);

/// The allocation limit is global: one fuzz run at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Heap a reader may take per input byte (a `.dat` token list and its numbers, growth
/// slack of vectors included).
const ALLOC_PER_BYTE: usize = 256;
/// Heap a reader may take whatever the input.
const ALLOC_SLACK: usize = 16 << 20;
/// Slowest input accepted (debug build).
const MAX_INPUT_TIME: Duration = Duration::from_secs(10);

/// SplitMix64: a small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Reader {
    Dat(SiconosKind),
    Json,
    Binary,
    #[cfg(feature = "fclib")]
    Fclib,
}

impl Reader {
    fn label(&self) -> &'static str {
        match self {
            Reader::Dat(_) => "dat",
            Reader::Json => "json",
            Reader::Binary => "binary",
            #[cfg(feature = "fclib")]
            Reader::Fclib => "fclib",
        }
    }

    fn is_text(&self) -> bool {
        matches!(self, Reader::Dat(_) | Reader::Json)
    }
}

struct Seed {
    reader: Reader,
    bytes: Vec<u8>,
    /// FCLIB: the `(start, length, element size)` of the raw data of each contiguous dataset.
    regions: Vec<(usize, usize, usize)>,
}

/// Problem files of at most `max_len` bytes under `dir`.
fn files(dir: &Path, ext: &str, max_len: u64) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path, ext, max_len));
        } else if path.extension().is_some_and(|e| e == ext)
            && std::fs::metadata(&path).unwrap().len() <= max_len
        {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The seeds: real `.dat` files up to 40 kB, the JSON and binary encodings of those up to
/// 8 kB (and of a factored problem), and the FCLIB files with our FCLIB encodings.
fn seeds(tmp: &Path) -> Vec<Seed> {
    let mut seeds = Vec::new();
    let mut problems: Vec<Problem> = Vec::new();
    for path in files(&common::problems_dir(), "dat", 40_000) {
        let kind = SiconosKind::detect(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        if bytes.len() <= 8_000 {
            problems.push(io::read(&path, None).unwrap());
        }
        seeds.push(Seed {
            reader: Reader::Dat(kind),
            bytes,
            regions: Vec::new(),
        });
    }
    problems.push(common::factored(
        vec![common::body(2.0, [0.0, 0.0, -0.1, 0.0, 0.0, 0.0]); 2],
        vec![
            signorini::problem::Cone::Coulomb { mu: 0.5 },
            signorini::problem::Cone::Bilateral { dim: 1 },
        ],
        vec![
            common::on_body(0, vec![[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]; 3]),
            signorini::problem::JacobianBlock {
                bodies: vec![0, 1].into(),
                rows: vec![[1.0, 0.0, 0.0, 0.0, 0.5, 0.0]; 2].into(),
            },
        ],
    ));
    for (k, p) in problems.iter().enumerate() {
        seeds.push(Seed {
            reader: Reader::Json,
            bytes: json::to_string(p).into_bytes(),
            regions: Vec::new(),
        });
        let path = tmp.join(format!("seed{k}.bin"));
        binary::write(p, &path).unwrap();
        seeds.push(Seed {
            reader: Reader::Binary,
            bytes: std::fs::read(&path).unwrap(),
            regions: Vec::new(),
        });
    }
    #[cfg(feature = "fclib")]
    {
        let mut paths = files(&common::problems_dir(), "hdf5", 1 << 20);
        for (k, p) in problems.iter().enumerate() {
            let path = tmp.join(format!("seed{k}.hdf5"));
            if io::write(p, &path, None).is_ok() {
                paths.push(path);
            }
        }
        for path in paths {
            let h5 = hdf5::File::open(&path).unwrap();
            let mut regions = Vec::new();
            data_regions(&h5, &mut regions);
            assert!(!regions.is_empty());
            seeds.push(Seed {
                reader: Reader::Fclib,
                bytes: std::fs::read(&path).unwrap(),
                regions,
            });
        }
    }
    seeds
}

/// The raw data of every contiguous dataset under `group`: where FCLIB's numbers, sizes
/// and index arrays lie in the file.
#[cfg(feature = "fclib")]
fn data_regions(group: &hdf5::Group, out: &mut Vec<(usize, usize, usize)>) {
    for name in group.member_names().unwrap() {
        if let Ok(g) = group.group(&name) {
            data_regions(&g, out);
        } else if let Ok(ds) = group.dataset(&name)
            && let (Some(offset), Ok(dtype)) = (ds.offset(), ds.dtype())
        {
            let len = ds.storage_size() as usize;
            if len > 0 {
                out.push((offset as usize, len, dtype.size()));
            }
        }
    }
}

const INTERESTING_BYTES: [u8; 6] = [0x00, 0xff, 0x7f, 0x80, 0x01, 0xfe];
/// Size fields near the integer limits (`u64`, `i64`, `u32`, `i32`, and the counts whose
/// `+ 1` or `× 8` overflows), and small ones.
const INTERESTING_WORDS: [u64; 12] = [
    u64::MAX,
    u64::MAX - 1,
    u64::MAX / 8 + 1,
    i64::MAX as u64,
    1 << 63,
    1 << 40,
    1 << 32,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0,
    1,
];
const INTERESTING_TOKENS: [&str; 13] = [
    "18446744073709551615",
    "18446744073709551614",
    "9223372036854775807",
    "2305843009213693952",
    "999999999999999999",
    "4294967296",
    "2147483647",
    "-1",
    "1e309",
    "NaN",
    "-inf",
    "0",
    "3",
];

/// Replaces one whitespace- or punctuation-separated token of a text by an interesting one.
fn tamper_token(rng: &mut Rng, data: &mut Vec<u8>) {
    let is_sep = |b: u8| b.is_ascii_whitespace() || b",:[]{}\"".contains(&b);
    let starts: Vec<usize> = (0..data.len())
        .filter(|&i| !is_sep(data[i]) && (i == 0 || is_sep(data[i - 1])))
        .collect();
    if starts.is_empty() {
        return;
    }
    let start = starts[rng.below(starts.len())];
    let end = (start..data.len())
        .find(|&i| is_sep(data[i]))
        .unwrap_or(data.len());
    let token = INTERESTING_TOKENS[rng.below(INTERESTING_TOKENS.len())];
    data.splice(start..end, token.bytes());
}

/// One to four mutations of the data of an FCLIB file's datasets (bit flips, interesting
/// values of the element's width, random bytes), or a truncation of the file.
///
/// The HDF5 metadata itself is left alone: libhdf5 1.10 is not memory-safe on damaged
/// metadata (byte-level mutation of whole files crashed it inside `H5Dread` and `H5Dopen2`
/// within 2e4 inputs), and no reader built on it can prevent that.
fn mutate_datasets(rng: &mut Rng, seed: &Seed) -> Vec<u8> {
    let mut data = seed.bytes.clone();
    if rng.below(8) == 0 {
        data.truncate(rng.below(data.len()));
        return data;
    }
    for _ in 0..1 + rng.below(4) {
        let (start, len, elem) = seed.regions[rng.below(seed.regions.len())];
        let count = (len / elem.max(1)).max(1);
        let at = start + rng.below(count) * elem;
        let width = elem.min(8).min(data.len() - at);
        match rng.below(3) {
            0 => data[at + rng.below(width)] ^= 1 << rng.below(8),
            1 => {
                let word = INTERESTING_WORDS[rng.below(INTERESTING_WORDS.len())];
                data[at..at + width].copy_from_slice(&word.to_le_bytes()[..width]);
            }
            _ => (at..at + width).for_each(|i| data[i] = rng.next() as u8),
        }
    }
    data
}

/// One to four mutations of `seed`.
fn mutate(rng: &mut Rng, seed: &Seed) -> Vec<u8> {
    if !seed.regions.is_empty() {
        return mutate_datasets(rng, seed);
    }
    let mut data = seed.bytes.clone();
    for _ in 0..1 + rng.below(4) {
        let len = data.len();
        match rng.below(if seed.reader.is_text() { 8 } else { 7 }) {
            0 => {
                if len > 0 {
                    let i = rng.below(len);
                    data[i] ^= 1 << rng.below(8);
                }
            }
            1 => {
                if len > 0 {
                    let i = rng.below(len);
                    data[i] = INTERESTING_BYTES[rng.below(INTERESTING_BYTES.len())];
                }
            }
            2 => data.truncate(rng.below(len + 1)),
            3 => {
                let at = rng.below(len + 1);
                let n = 1 + rng.below(16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                data.splice(at..at, bytes);
            }
            4 => {
                let a = rng.below(len + 1);
                let b = (a + 1 + rng.below(64)).min(len);
                data.drain(a..b);
            }
            5 => {
                // A size field: an aligned 4- or 8-byte little-endian word.
                let width = if rng.below(2) == 0 { 4 } else { 8 };
                if len >= width {
                    let at = rng.below(len / width) * width;
                    let word = INTERESTING_WORDS[rng.below(INTERESTING_WORDS.len())];
                    data[at..at + width].copy_from_slice(&word.to_le_bytes()[..width]);
                }
            }
            6 => {
                // Splice: a copy of one range of the seed elsewhere.
                let a = rng.below(len + 1);
                let b = (a + rng.below(256)).min(len);
                let piece = data[a..b].to_vec();
                let at = rng.below(len + 1);
                data.splice(at..at, piece);
            }
            _ => tamper_token(rng, &mut data),
        }
    }
    if seed.reader == Reader::Binary && rng.below(2) == 0 && data.len() >= 32 {
        let len = (data.len() - 32) as u64;
        data[16..24].copy_from_slice(&len.to_le_bytes());
        let crc = crc32fast::hash(&data[32..]);
        data[24..28].copy_from_slice(&crc.to_le_bytes());
    }
    data
}

/// Reads one input with its reader as `io::read` does (every input, UTF-8 or not, goes
/// through the reader), then prepares what validates with `System::with_limits`, under a
/// memory limit below the allocator's cap: a size the reader lets through must be refused
/// there, not abort the process.
fn read(reader: Reader, bytes: &[u8], scratch: &Path) -> signorini::Result<()> {
    let problem = match reader {
        Reader::Dat(kind) => io::from_text(bytes, Format::Siconos(kind), "fuzz.dat")?,
        Reader::Json => io::from_text(bytes, Format::Json, "fuzz.json")?,
        Reader::Binary => {
            let p = binary::from_bytes(bytes, "fuzz.bin")?;
            p.validate()?;
            p
        }
        #[cfg(feature = "fclib")]
        Reader::Fclib => {
            std::fs::write(scratch, bytes).unwrap();
            let p = io::fclib::read(scratch)?.problem;
            p.validate()?;
            p
        }
    };
    let _ = scratch;
    prepare(&problem, bytes.len())
}

/// `System::with_limits` within the budget of an input of `len` bytes.
fn prepare(problem: &Problem, len: usize) -> signorini::Result<()> {
    let limits = Limits {
        max_memory: (ALLOC_SLACK / 2 + ALLOC_PER_BYTE / 2 * len) as u64,
    };
    System::with_limits(problem, &limits).map(|_| ())
}

#[derive(Default)]
struct Tally {
    inputs: usize,
    accepted: usize,
    slowest: Duration,
}

/// Runs `per_reader` mutated inputs for each reader; returns the panicking inputs' files.
fn fuzz(per_reader: usize, seed: u64) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // A panic lifts the allocation limit before it reports (a backtrace needs memory).
    std::panic::set_hook(Box::new(|info| {
        let _ = ALLOC.set_limit(usize::MAX);
        eprintln!("{info}");
    }));
    let tmp = common::fresh_dir(&format!("fuzz-{seed}"));
    let seeds = seeds(&tmp);
    let scratch = tmp.join("input.hdf5");
    // SIGNORINI_FUZZ_READERS=dat,json (say) fuzzes those readers only.
    let only = std::env::var("SIGNORINI_FUZZ_READERS").unwrap_or_default();
    let mut readers: Vec<&'static str> = Vec::new();
    for s in &seeds {
        let wanted = only.is_empty() || only.split(',').any(|r| r == s.reader.label());
        if wanted && !readers.contains(&s.reader.label()) {
            readers.push(s.reader.label());
        }
    }
    let mut crashes = Vec::new();
    let mut rng = Rng(seed);
    let start = Instant::now();
    for label in &readers {
        let pool: Vec<&Seed> = seeds
            .iter()
            .filter(|s| s.reader.label() == *label)
            .collect();
        let mut tally = Tally::default();
        for i in 0..per_reader {
            let seed = pool[rng.below(pool.len())];
            let input = mutate(&mut rng, seed);
            let budget = ALLOC.allocated() + ALLOC_SLACK + ALLOC_PER_BYTE * input.len();
            ALLOC.set_limit(budget).unwrap();
            let t = Instant::now();
            let outcome = std::panic::catch_unwind(|| read(seed.reader, &input, &scratch));
            let dt = t.elapsed();
            ALLOC.set_limit(usize::MAX).unwrap();
            tally.inputs += 1;
            tally.slowest = tally.slowest.max(dt);
            match outcome {
                Ok(Ok(())) => tally.accepted += 1,
                Ok(Err(_)) => {}
                Err(_) => {
                    let path = tmp.join(format!("crash-{label}-{i}"));
                    std::fs::write(&path, &input).unwrap();
                    crashes.push(path);
                }
            }
        }
        println!(
            "fuzz {label}: {} inputs from {} seeds, {} accepted, {} rejected, slowest {:.1} ms",
            tally.inputs,
            pool.len(),
            tally.accepted,
            tally.inputs - tally.accepted,
            tally.slowest.as_secs_f64() * 1e3
        );
        assert!(tally.slowest < MAX_INPUT_TIME, "{label}: slow input");
    }
    println!(
        "fuzz: {} inputs in {:.1} s",
        per_reader * readers.len(),
        start.elapsed().as_secs_f64()
    );
    assert!(crashes.is_empty(), "panicking inputs: {crashes:?}");
}

fn count_from_env(default: usize) -> usize {
    std::env::var("SIGNORINI_FUZZ_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A thousand mutated inputs per reader: no panic, no runaway allocation, no hang.
#[test]
fn readers_survive_mutated_files() {
    fuzz(count_from_env(1000), 1);
}

/// Every size field of every seed problem set to each value near the integer limits:
/// validation and `System::with_limits` refuse them, none panics or allocates past the
/// cap (a global problem with `h.nrows = 2⁶⁴ − 1` once overflowed `nrows + 1`).
#[test]
fn size_fields_at_the_integer_limits_are_refused() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = common::fresh_dir("fuzz-sizes");
    let problems: Vec<Problem> = seeds(&tmp)
        .iter()
        .filter(|s| s.reader == Reader::Json)
        .map(|s| json::from_str(std::str::from_utf8(&s.bytes).unwrap(), "seed").unwrap())
        .collect();
    let mut cases = 0;
    for problem in &problems {
        for field in 0..6 {
            for &value in &INTERESTING_WORDS {
                let Some(mutated) = with_size(problem, field, value as usize) else {
                    continue;
                };
                if mutated == *problem {
                    continue;
                }
                cases += 1;
                let budget = ALLOC.allocated() + ALLOC_SLACK;
                ALLOC.set_limit(budget).unwrap();
                let outcome = std::panic::catch_unwind(|| {
                    mutated.validate().and_then(|()| prepare(&mutated, 0))
                });
                ALLOC.set_limit(usize::MAX).unwrap();
                match outcome {
                    Ok(r) => assert!(
                        r.is_err(),
                        "{}: field {field} = {value} accepted",
                        problem.name
                    ),
                    Err(_) => panic!("{}: field {field} = {value} panicked", problem.name),
                }
            }
        }
    }
    assert!(cases > 100, "only {cases} cases");
}

/// `problem` with its `field`-th size set to `value`: the dimensions of its matrices (rows,
/// columns) and the dimension of its first bilateral block; `None` when it has no such field.
fn with_size(problem: &Problem, field: usize, value: usize) -> Option<Problem> {
    let mut p = problem.clone();
    let matrices: Vec<&mut CsrMatrix> = match &mut p.operator {
        Operator::Factored(_) => Vec::new(),
        Operator::Assembled(a) => vec![&mut a.n],
        Operator::Global(g) => vec![&mut g.h, &mut g.j],
    };
    let mut sizes: Vec<&mut usize> = matrices
        .into_iter()
        .flat_map(|m| [&mut m.nrows, &mut m.ncols])
        .collect();
    if let Some(signorini::problem::Cone::Bilateral { dim }) = p
        .cones
        .iter_mut()
        .find(|c| matches!(c, signorini::problem::Cone::Bilateral { .. }))
    {
        sizes.push(dim);
    }
    **sizes.get_mut(field)? = value;
    drop(sizes);
    Some(p)
}

/// The long run: `SIGNORINI_FUZZ_N` inputs per reader (default 250 000, 1e6 in all).
#[test]
#[ignore = "long: SIGNORINI_FUZZ_N=250000 cargo test --test fuzz -- --ignored"]
fn readers_survive_a_million_mutated_files() {
    fuzz(count_from_env(250_000), 2);
}
