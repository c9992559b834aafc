//! Problem interchange: exact round trips through every format over every problem file of
//! `tests/data`, corruption errors of the binary format, FCLIB files solved, and a
//! simulator dump written as FCLIB giving the same solution. The FCLIB parts need
//! `--features fclib`.

mod common;

use std::path::{Path, PathBuf};

use signorini::error::{Error, FileFault};
use signorini::problem::io::{self, Format, binary};
use signorini::problem::{Cone, Operator, Problem};

/// Every problem file under `dir`, sorted.
fn problem_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(problem_files(&path));
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("dat" | "hdf5")
        ) {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The bit pattern of every number of a problem, in a fixed order: equal lists mean every
/// number survived exactly (`-0.0` and `0.0` differ here, unlike with `==`).
fn numbers(p: &Problem) -> Vec<u64> {
    let mut v: Vec<f64> = p.cones.iter().filter_map(Cone::mu).collect();
    match &p.operator {
        Operator::Factored(f) => {
            for b in &f.bodies {
                v.push(b.mass);
                v.extend(b.inertia);
                v.extend(b.v_free);
            }
            for j in &f.jacobians {
                v.extend(j.rows.iter().flatten());
            }
            v.extend(&f.b);
        }
        Operator::Assembled(a) => {
            v.extend(&a.n.values);
            v.extend(&a.r);
        }
        Operator::Global(g) => {
            v.extend(&g.h.values);
            v.extend(&g.j.values);
            v.extend(&g.f);
            v.extend(&g.b);
        }
    }
    v.extend(&p.compliance);
    v.iter().map(|x| x.to_bits()).collect()
}

/// `b` is `a` exactly: same structure (sparsity, cones) and the same bits in every number.
#[track_caller]
fn assert_exact(a: &Problem, b: &Problem, what: &str) {
    assert_eq!(a, b, "{what}");
    assert_eq!(numbers(a), numbers(b), "{what}");
}

/// Writes `p` in `format` under `dir` and reads it back.
fn through(p: &Problem, dir: &Path, stem: &str, format: Format) -> signorini::Result<Problem> {
    let path = dir.join(format!("{stem}.{}", format.extension()));
    io::write(p, &path, Some(format))?;
    io::read(&path, Some(format))
}

/// Whether FCLIB can hold `p`: Coulomb blocks only, or equality rows then Coulomb blocks in a
/// global problem.
fn fclib_holds(p: &Problem) -> bool {
    let bilateral = p
        .cones
        .iter()
        .take_while(|c| matches!(c, Cone::Bilateral { .. }))
        .count();
    p.cones[bilateral..].iter().all(|c| c.mu().is_some())
        && (bilateral == 0 || matches!(p.operator, Operator::Global(_)))
}

/// `.dat → hdf5 → bin → json` preserves every number of every file exactly; files FCLIB
/// cannot hold (LCP, MLCP, GMP with unilateral or equality rows) go `.dat → bin → json` and
/// the FCLIB writer refuses them, naming the offending block.
#[test]
fn every_problem_file_round_trips_exactly() {
    let dir = common::fresh_dir("interop-round-trip");
    let files = problem_files(&common::problems_dir());
    assert!(files.len() >= 68, "{} problem files found", files.len());
    let (mut via_fclib, mut refused) = (0, 0);
    for (k, path) in files.iter().enumerate() {
        let is_hdf5 = path.extension().is_some_and(|e| e == "hdf5");
        if is_hdf5 && !cfg!(feature = "fclib") {
            continue;
        }
        let name = path.display();
        let original = io::read(path, None).unwrap_or_else(|e| panic!("{name}: {e}"));
        let stem = format!("p{k}");
        let mut current = original.clone();
        if cfg!(feature = "fclib") {
            match through(&current, &dir, &stem, Format::Fclib) {
                Ok(back) => {
                    assert!(fclib_holds(&original), "{name}");
                    // FCLIB keeps the numbers and structure; its class is fc3d or gfc3d
                    // and its name is the title.
                    let mut same = back.clone();
                    same.class = original.class;
                    same.name = original.name.clone();
                    assert_exact(&original, &same, &format!("{name} via FCLIB"));
                    current = back;
                    via_fclib += 1;
                }
                Err(e) => {
                    assert!(!fclib_holds(&original), "{name}: {e}");
                    assert!(e.to_string().contains("write .bin or .json"), "{name}: {e}");
                    refused += 1;
                }
            }
        }
        let back = through(&current, &dir, &stem, Format::Binary).unwrap();
        assert_exact(&current, &back, &format!("{name} via .bin"));
        let back = through(&back, &dir, &stem, Format::Json).unwrap();
        assert_exact(&current, &back, &format!("{name} via .json"));
    }
    println!(
        "{} files: {via_fclib} through FCLIB, {refused} refused by it",
        files.len()
    );
    if cfg!(feature = "fclib") {
        // 21 fc3d + 7 gfc3d + 5 FCLIB files + 2 GMP files of Coulomb blocks only.
        assert!(via_fclib >= 35, "{via_fclib} files went through FCLIB");
        assert!(refused >= 33, "{refused} files refused by FCLIB");
    }
    // No temporary file is left behind.
    let partial = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            let e = e.as_ref().unwrap();
            e.file_name().to_string_lossy().ends_with(".partial")
        })
        .count();
    assert_eq!(partial, 0);
}

/// A problem of every operator form with compliance, for the binary format.
fn sample_problems() -> Vec<Problem> {
    let dat = common::problems_dir().join("siconos/fc3d/FrictionContact3D_1c.dat");
    let gfc = common::problems_dir().join("siconos/gfc3d/GFC3D_TwoRods1.dat");
    let mut factored = common::factored(
        vec![
            common::body(2.0, [0.1, -0.0, -0.0981, 0.0, 1e-300, 0.0]),
            common::body(3.5, [0.0; 6]),
        ],
        vec![
            Cone::Coulomb { mu: 0.3 },
            Cone::Bilateral { dim: 2 },
            Cone::Unilateral,
        ],
        vec![
            common::on_body(0, vec![[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]; 3]),
            signorini::problem::JacobianBlock {
                bodies: vec![0, 1].into(),
                rows: vec![[1.0, 0.5, 0.0, 0.0, f64::MIN_POSITIVE, 0.0]; 4].into(),
            },
            common::on_body(1, vec![[0.0, 1.0, 0.0, 0.25, 0.0, 0.0]]),
        ],
    );
    factored.compliance = vec![0.0, 0.0, 0.0, 1e-6, 1e-6, 0.0];
    factored.name = "mixed — ünïcode".into();
    vec![
        factored,
        io::read(&dat, None).unwrap(),
        io::read(&gfc, None).unwrap(),
    ]
}

/// The explicit `N = J M⁻¹ Jᵀ` of a factored problem (what FCLIB's local form stores)
/// matches the matrix-free product column by column.
#[test]
fn assembled_delassus_matches_the_factored_product() {
    let p = &sample_problems()[0];
    let sys = signorini::problem::System::new(p).unwrap();
    let n = sys.factored().unwrap().assemble();
    let m = sys.rows();
    assert_eq!((n.nrows, n.ncols), (m, m));
    for j in 0..m {
        let mut e = vec![0.0; m];
        e[j] = 1.0;
        let mut col = vec![0.0; m];
        sys.operator().apply(&e, &mut col);
        for (i, c) in col.iter().enumerate() {
            common::assert_close(n.get(i, j), *c, 1e-15);
        }
    }
    // Blocks 0 and 2 share no body: their coupling is not stored.
    assert_eq!(n.get(0, 5), 0.0);
    assert!(n.row(0).0.len() < m);
}

fn write_bin(p: &Problem, dir: &Path, name: &str) -> (PathBuf, Vec<u8>) {
    let path = dir.join(name);
    binary::write(p, &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

fn read_fault(path: &Path, bytes: &[u8]) -> FileFault {
    std::fs::write(path, bytes).unwrap();
    match binary::read(path) {
        Err(Error::BadFile { file, fault }) => {
            assert_eq!(file, path.display().to_string());
            let msg = Error::BadFile {
                file: file.clone(),
                fault: fault.clone(),
            }
            .to_string();
            assert!(msg.starts_with(&file), "{msg}");
            fault
        }
        other => panic!("expected a bad-file error, got {other:?}"),
    }
}

/// A truncated file, a flipped byte, a wrong version and a foreign file each give their own
/// error, naming the file.
#[test]
fn binary_corruption_gives_its_own_error() {
    let dir = common::fresh_dir("interop-corrupt");
    for (k, p) in sample_problems().iter().enumerate() {
        let (path, good) = write_bin(p, &dir, &format!("good{k}.bin"));
        assert_exact(p, &binary::read(&path).unwrap(), "sample");
        let bad = dir.join(format!("bad{k}.bin"));

        let cut = &good[..good.len() - 5];
        let fault = read_fault(&bad, cut);
        let expected = good.len() as u64;
        assert_eq!(
            fault,
            FileFault::Truncated {
                expected,
                found: expected - 5
            }
        );
        let fault = read_fault(&bad, &good[..20]);
        assert!(matches!(fault, FileFault::Truncated { found: 20, .. }));

        // Every byte of the data, flipped in turn: always the checksum.
        for at in (binary::HEADER_LEN as usize..good.len()).step_by(7) {
            let mut flipped = good.clone();
            flipped[at] ^= 0x10;
            let fault = read_fault(&bad, &flipped);
            assert!(
                matches!(fault, FileFault::Checksum { .. }),
                "byte {at}: {fault}"
            );
        }

        let mut version = good.clone();
        version[8] = 2;
        assert_eq!(
            read_fault(&bad, &version),
            FileFault::Version {
                found: 2,
                supported: binary::VERSION
            }
        );

        let fault = read_fault(&bad, b"{\"name\": \"json, not binary\"}");
        assert!(matches!(fault, FileFault::NotThisFormat { .. }), "{fault}");
    }
}

/// A size field rewritten to a huge value, with the checksum made consistent again, is a
/// structural error found before any allocation: the reader never trusts a count beyond
/// what the rest of the file could hold.
#[test]
fn binary_size_fields_cannot_force_allocations() {
    let dir = common::fresh_dir("interop-sizes");
    let p = &sample_problems()[1];
    let (_, good) = write_bin(p, &dir, "good.bin");
    let data_start = binary::HEADER_LEN as usize;
    // The name length is the first field of the data; the cone count follows the name.
    let name_len = p.name.len();
    let cone_count_at = data_start + 8 + name_len + 1;
    for (at, field) in [(data_start, "name"), (cone_count_at, "cones")] {
        for huge in [u64::MAX, 1 << 40, good.len() as u64] {
            let mut bytes = good.clone();
            bytes[at..at + 8].copy_from_slice(&huge.to_le_bytes());
            let crc = crc32fast::hash(&bytes[data_start..]);
            bytes[24..28].copy_from_slice(&crc.to_le_bytes());
            let err = binary::from_bytes(&bytes, "tampered.bin").unwrap_err();
            let msg = err.to_string();
            assert!(
                matches!(
                    err,
                    Error::BadFile {
                        fault: FileFault::Malformed { .. },
                        ..
                    }
                ),
                "{field}: {msg}"
            );
            assert!(msg.contains("do not fit"), "{field}: {msg}");
        }
    }
}

/// A writer that fails leaves neither a partial file under the final name nor its temporary
/// file, and an existing file under that name is kept intact.
#[test]
fn failed_writes_leave_no_partial_file() {
    let dir = common::fresh_dir("interop-atomic");
    let p = &sample_problems()[1];
    let target = dir.join("p.bin");
    binary::write(p, &target).unwrap();
    let before = std::fs::read(&target).unwrap();
    // An invalid problem fails before anything is written.
    let mut invalid = p.clone();
    invalid.cones.push(Cone::Coulomb { mu: -1.0 });
    assert!(binary::write(&invalid, &target).is_err());
    assert!(io::write(&invalid, &dir.join("p.json"), None).is_err());
    // A destination folder that does not exist fails at the temporary file.
    let missing = dir.join("no-such-folder").join("p.bin");
    assert!(matches!(binary::write(p, &missing), Err(Error::Io { .. })));
    assert_eq!(std::fs::read(&target).unwrap(), before);
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["p.bin".to_string()]);
}

/// Without the `fclib` feature, `.hdf5` files give an error saying how to enable it.
#[cfg(not(feature = "fclib"))]
#[test]
fn fclib_without_the_feature_says_how_to_enable_it() {
    let path = common::problems_dir().join("fclib/local_problem_test.hdf5");
    let msg = io::read(&path, None).unwrap_err().to_string();
    assert!(msg.contains("--features fclib"), "{msg}");
    assert!(msg.contains("libhdf5-dev"), "{msg}");
    let p = &sample_problems()[1];
    let out = common::fresh_dir("interop-nofclib").join("p.hdf5");
    let msg = io::write(p, &out, None).unwrap_err().to_string();
    assert!(msg.contains("--features fclib"), "{msg}");
    assert!(!out.exists());
}

#[cfg(feature = "fclib")]
mod fclib {
    use super::*;
    use signorini::problem::io::fclib;
    use signorini::problem::{FrictionModel, System};
    use signorini::solver::Settings;

    /// The FCLIB files load and PGS solves them under the Coulomb model; the local ones
    /// report FCLIB's MERIT_1 (FCLIB defines none for global problems, whose Siconos gfc3d
    /// error is checked instead). The merit is recomputed here from its definition
    /// (fcmer.c): `‖e‖₂ / (1 + sqrt(‖q‖₂))` with the Coulomb natural map `e`.
    #[test]
    fn fclib_files_load_and_pgs_solves_them() {
        let dirs = [
            common::problems_dir().join("fclib"),
            common::problems_dir().join("siconos/fclib-hdf5"),
        ];
        let mut solved = 0;
        for path in dirs.iter().flat_map(|d| problem_files(d)) {
            let name = path.display();
            let fp = fclib::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            let sys = System::new(&fp.problem).unwrap();
            let settings = Settings {
                friction: FrictionModel::Coulomb,
                tol: 1e-9,
                max_iter: 20_000,
                warm_start: fp.guesses.first().map(|g| g.gamma()).filter(|g| {
                    // Some files hold zero guesses of the right length, others none.
                    g.len() == sys.rows()
                }),
                ..Settings::default()
            };
            let report = common::solve(&sys, "pgs", &settings);
            if let Operator::Global(g) = &fp.problem.operator {
                assert!(report.merit.fclib_merit.is_none(), "{name}");
                let e = report.merit.siconos_error.unwrap();
                let h = g.h.to_dense();
                if h == h.transpose() {
                    // The tolerance of the file's own info for the spheres (ADMM, 1e-4):
                    // PGS reaches 1.1e-5 there in 20000 sweeps, 1.9e-10 on the Box stacks.
                    assert!(e < 1e-4, "{name}: gfc3d error {e:e}");
                } else {
                    // LMGC's M is asymmetric (1.5e-7 relative, condition 8e6): the Cholesky
                    // reduction of `System` reads its lower triangle, and `Mv = Hr + f` keeps
                    // a residual of 25 % in the gfc3d error. The contact problem itself is
                    // solved: its natural map is checked.
                    println!("{name}: gfc3d error {e:.3e} (asymmetric M)");
                    assert!(report.merit.natural_map_2 < 1e-9, "{name}");
                }
            } else {
                let merit = report.merit.fclib_merit.unwrap();
                let u = sys.velocity(&report.gamma);
                let mut e2 = 0.0;
                for (k, cone) in sys.cones().iter().enumerate() {
                    let range = sys.block_range(k);
                    let (g, mut uh) = (&report.gamma[range.clone()], u[range].to_vec());
                    cone.de_saxce_shift(&mut uh);
                    let mut x: Vec<f64> = g.iter().zip(&uh).map(|(a, b)| a - b).collect();
                    cone.project(&mut x);
                    e2 += g.iter().zip(&x).map(|(a, b)| (a - b).powi(2)).sum::<f64>();
                }
                let q = sys.r().iter().map(|v| v * v).sum::<f64>().sqrt();
                common::assert_close(merit, e2.sqrt() / (1.0 + q.sqrt()), 1e-12);
                // The tolerance of Siconos' unit tests on these files: PGS reaches 1.7e-6 on
                // the Boxes stack (μ = 0.7) from its guess in 20000 sweeps, 2e-9 on Capsules.
                assert!(merit < 1e-5, "{name}: FCLIB merit {merit:e}");
            }
            solved += 1;
        }
        assert_eq!(solved, 5);
    }

    /// A truncated FCLIB file and tampered sizes, storage codes and indices are errors naming
    /// the file and the dataset.
    #[test]
    fn fclib_damage_is_an_error_naming_the_file() {
        let src = common::problems_dir().join("fclib/local_problem_test.hdf5");
        let dir = common::fresh_dir("interop-fclib-damage");
        let bytes = std::fs::read(&src).unwrap();
        let cut = dir.join("cut.hdf5");
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
        let err = fclib::read(&cut).unwrap_err();
        assert!(
            matches!(
                err,
                Error::BadFile {
                    fault: FileFault::Hdf5(_),
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string().starts_with(&cut.display().to_string()),
            "{err}"
        );
        let cases: [(&str, &[i32], &str); 4] = [
            (
                "fclib_local/W/m",
                &[7],
                "a 7×144 matrix where 144×144 is expected",
            ),
            ("fclib_local/W/nz", &[5000], "nz = 5000 but p, i, x have"),
            ("fclib_local/W/nz", &[-3], "unknown storage nz = -3"),
            ("fclib_local/spacedim", &[2], "only 3-D problems"),
        ];
        for (k, (dataset, value, expected)) in cases.iter().enumerate() {
            let path = dir.join(format!("t{k}.hdf5"));
            std::fs::copy(&src, &path).unwrap();
            {
                let h5 = hdf5::File::open_rw(&path).unwrap();
                h5.dataset(dataset).unwrap().write_raw(*value).unwrap();
            }
            let msg = fclib::read(&path).unwrap_err().to_string();
            assert!(msg.starts_with(&path.display().to_string()), "{msg}");
            assert!(msg.contains(expected), "{dataset}: {msg}");
        }
        let path = dir.join("index.hdf5");
        std::fs::copy(&src, &path).unwrap();
        {
            let h5 = hdf5::File::open_rw(&path).unwrap();
            let ds = h5.dataset("fclib_local/W/i").unwrap();
            let mut i: Vec<i32> = ds.read_raw().unwrap();
            i[10] = 1000;
            ds.write_raw(&i).unwrap();
        }
        let msg = fclib::read(&path).unwrap_err().to_string();
        assert!(msg.contains("outside the 144×144 matrix"), "{msg}");
    }

    /// Info, solution and guesses survive an FCLIB round trip.
    #[test]
    fn fclib_keeps_info_solution_and_guesses() {
        let path = common::problems_dir().join("siconos/fclib-hdf5/Capsules-i125-1213.hdf5");
        let fp = fclib::read(&path).unwrap();
        assert_eq!(fp.info.title.as_deref(), Some("Capsules"));
        assert!(fp.info.description.as_deref().unwrap().contains("Bullet"));
        assert_eq!(fp.guesses.len(), 1);
        assert!(fp.guesses[0].r.iter().any(|&r| r != 0.0));
        let solution = fp.solution.as_ref().unwrap();
        assert_eq!(solution.r.len(), 858);
        let out = common::fresh_dir("interop-fclib-extras").join("c.hdf5");
        fclib::write(&fp, &out).unwrap();
        let back = fclib::read(&out).unwrap();
        assert_eq!(back.info, fp.info);
        assert_eq!(back.solution, fp.solution);
        assert_eq!(back.guesses, fp.guesses);
        assert_exact(&fp.problem, &back.problem, "Capsules");
    }

    /// A global problem with equality rows is written with FCLIB's `G, b` and read back
    /// exactly; a compliance or a unilateral row is refused.
    #[test]
    fn fclib_global_equality_rows_use_g() {
        let path = common::problems_dir().join("siconos/gfc3d/GFC3D_TwoRods1.dat");
        let mut p = io::read(&path, None).unwrap();
        // Make the first contact's normal row an equality row... by prepending a copy of the
        // contacts' first row of J as a bilateral row.
        let Operator::Global(g) = &mut p.operator else {
            panic!("global")
        };
        let (cols, vals) = g.j.row(0);
        let mut triplets: Vec<(usize, usize, f64)> =
            cols.iter().zip(vals).map(|(&c, &v)| (0, c, v)).collect();
        for i in 0..g.j.nrows {
            let (cols, vals) = g.j.row(i);
            triplets.extend(cols.iter().zip(vals).map(|(&c, &v)| (i + 1, c, v)));
        }
        g.j = signorini::problem::CsrMatrix::from_triplets(g.j.nrows + 1, g.j.ncols, &triplets)
            .unwrap();
        g.b.insert(0, 0.25);
        p.cones.insert(0, Cone::Bilateral { dim: 1 });
        let dir = common::fresh_dir("interop-fclib-g");
        let back = through(&p, &dir, "g", Format::Fclib).unwrap();
        let mut same = back.clone();
        (same.name, same.class) = (p.name.clone(), p.class);
        assert_exact(&p, &same, "global with G");
        let mut compliant = p.clone();
        compliant.compliance = vec![1e-3; p.rows()];
        let msg = through(&compliant, &dir, "c", Format::Fclib)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("no compliance"), "{msg}");
    }

    /// A `balls_in_box` problem dumped by `simulate --dump-format fclib` and the same step
    /// dumped as JSON (factored form) have the same solution under PGS: the FCLIB file holds
    /// the assembled `W = J M⁻¹ Jᵀ` and `q = J v_free + b`.
    #[test]
    fn dumped_balls_in_box_problem_solves_the_same_from_fclib() {
        let scene = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/balls_in_box.toml");
        let dumps: Vec<PathBuf> = ["json", "fclib"]
            .iter()
            .map(|format| {
                let out = common::fresh_dir(&format!("interop-dump-{format}"));
                common::run_cli_json([
                    "simulate",
                    scene,
                    "--steps",
                    "20",
                    "--set",
                    "lattice.0.count=40",
                    "--snapshot-every",
                    "0",
                    "--dump-every",
                    "10",
                    "--dump-format",
                    format,
                    "--json-summary",
                    "--out",
                    out.to_str().unwrap(),
                ]);
                let ext = if *format == "json" { "json" } else { "hdf5" };
                assert!(out.join(format!("problem_0010.{ext}")).is_file());
                out.join(format!("problem_0020.{ext}"))
            })
            .collect();
        let factored = io::read(&dumps[0], None).unwrap();
        let assembled = io::read(&dumps[1], None).unwrap();
        assert!(matches!(factored.operator, Operator::Factored(_)));
        assert!(matches!(assembled.operator, Operator::Assembled(_)));
        assert_eq!(factored.cones, assembled.cones);
        assert!(
            factored.cones.len() >= 10,
            "{} contacts",
            factored.cones.len()
        );
        let settings = common::tight(FrictionModel::Ccp);
        let a = common::solve(&System::new(&factored).unwrap(), "pgs", &settings);
        let b = common::solve(&System::new(&assembled).unwrap(), "pgs", &settings);
        let scale = a.gamma.iter().fold(0.0f64, |m, g| m.max(g.abs()));
        assert!(scale > 0.0);
        for (x, y) in a.gamma.iter().zip(&b.gamma) {
            assert!((x - y).abs() <= 1e-8 * scale, "{x} vs {y} (scale {scale})");
        }
    }

    /// `signorini convert` goes between all formats; FCLIB to FCLIB keeps the guesses.
    #[test]
    fn cli_convert_between_formats() {
        let dir = common::fresh_dir("interop-cli");
        let src = common::problems_dir().join("fclib/local_problem_test.hdf5");
        let mut last = src.clone();
        for name in ["a.bin", "a.json", "a.hdf5", "b.bin"] {
            let out = dir.join(name);
            let status = std::process::Command::new(env!("CARGO_BIN_EXE_signorini"))
                .args(["convert", last.to_str().unwrap(), out.to_str().unwrap()])
                .status()
                .unwrap();
            assert!(status.success(), "{name}");
            last = out;
        }
        let original = io::read(&src, None).unwrap();
        let mut back = io::read(&last, None).unwrap();
        back.name = original.name.clone();
        assert_exact(&original, &back, "convert chain");
        let out = dir.join("copy.hdf5");
        let status = std::process::Command::new(env!("CARGO_BIN_EXE_signorini"))
            .args(["convert", src.to_str().unwrap(), out.to_str().unwrap()])
            .status()
            .unwrap();
        assert!(status.success());
        assert_eq!(fclib::read(&out).unwrap().guesses.len(), 1);
        let err = common::cli_refusal(["convert", last.to_str().unwrap(), "lcp_x.dat"]);
        assert!(err.contains("read, not written"));
    }
}

/// A million contacts (a chain of 1e6 + 1 bodies, one Coulomb contact between neighbours,
/// 2 × 3 Jacobian rows each: a 426 MB file) are written and read back, validated, in
/// seconds. `cargo test --test interop -- --ignored --nocapture million`.
#[test]
#[ignore = "large: writes a 426 MB file"]
fn binary_format_streams_a_million_contacts() {
    let n = 1_000_000;
    let bodies = (0..=n)
        .map(|i| common::body(1.0 + i as f64 * 1e-6, [0.0, 0.0, -0.1, 0.0, 0.0, 0.0]))
        .collect();
    let row = |i: usize| [1.0, 0.0, (i % 7) as f64 * 0.1, 0.0, 0.05, 0.0];
    let jacobians = (0..n)
        .map(|i| signorini::problem::JacobianBlock {
            bodies: vec![i, i + 1].into(),
            rows: (0..6).map(|r| row(i + r)).collect(),
        })
        .collect();
    let p = common::factored(bodies, vec![Cone::Coulomb { mu: 0.5 }; n], jacobians);
    let path = common::fresh_dir("interop-million").join("million.bin");
    let start = std::time::Instant::now();
    binary::write(&p, &path).unwrap();
    let write_s = start.elapsed().as_secs_f64();
    let start = std::time::Instant::now();
    let back = io::read(&path, None).unwrap();
    let read_s = start.elapsed().as_secs_f64();
    let mb = std::fs::metadata(&path).unwrap().len() as f64 / 1e6;
    println!("1e6 contacts: {mb:.0} MB, write {write_s:.2} s, read + validate {read_s:.2} s");
    assert_eq!(back, p);
    assert!(read_s < 20.0 && write_s < 20.0);
    std::fs::remove_file(&path).unwrap();
}
