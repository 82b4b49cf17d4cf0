//! End-to-end tests of `mil gram`: against the core's exact oracle on small integer data,
//! symmetry, determinism across thread counts, both output formats, and bad input.

use std::path::Path;
use std::process::Command;

use mil_core::box_kernel::count::exact_ln;
use mil_core::box_kernel::{BoxKernel, Grid};
use mil_suite::{mil_binary, run_mil, temp_dir};

/// Four bags of 2-d integer points: ids, points.
const BAGS: [(&str, &[[i64; 2]]); 4] = [
    ("a", &[[3, -1], [5, 2], [4, 4]]),
    ("b", &[[7, 0]]),
    ("c", &[[2, 2], [6, 1], [3, 3], [5, -2]]),
    ("d", &[[4, 0], [4, 1]]),
];

fn write_data(dir: &Path) -> String {
    let mut text = String::new();
    for (k, (id, points)) in BAGS.iter().enumerate() {
        for p in points.iter() {
            text.push_str(&format!("{},{id},{},{}\n", k % 2, p[0], p[1]));
        }
    }
    let path = dir.join("small.csv");
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// §2 at precision 0, computed here independently: v ↦ v − minᵢ + 1, sᵢ = maxᵢ − minᵢ + 2.
fn grid_points() -> (Vec<u32>, Vec<Vec<u32>>) {
    let all: Vec<[i64; 2]> = BAGS.iter().flat_map(|(_, p)| p.iter().copied()).collect();
    let min: Vec<i64> = (0..2)
        .map(|j| all.iter().map(|p| p[j]).min().unwrap())
        .collect();
    let max: Vec<i64> = (0..2)
        .map(|j| all.iter().map(|p| p[j]).max().unwrap())
        .collect();
    let s = (0..2).map(|j| (max[j] - min[j] + 2) as u32).collect();
    let bags = BAGS
        .iter()
        .map(|(_, points)| {
            points
                .iter()
                .flat_map(|p| {
                    (0..2)
                        .map(|j| (p[j] - min[j] + 1) as u32)
                        .collect::<Vec<_>>()
                })
                .collect()
        })
        .collect();
    (s, bags)
}

fn read_csv(path: &Path) -> Vec<Vec<f64>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect()
}

fn gram(args: &[&str]) -> serde_json::Value {
    let out = run_mil(args);
    assert!(
        out.status.success(),
        "mil {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn gram_matches_the_exact_oracle() {
    let dir = temp_dir("gram-oracle");
    let data = write_data(&dir);
    let (s, bags) = grid_points();
    let grid = Grid::new(&s).unwrap();
    // δ = 10⁻⁶ per entry: all 10 distinct entries are ε-good with probability ≥ 1 − 10⁻⁵.
    let eps = 0.1;
    for (name, kernel) in [
        ("kand", BoxKernel::And),
        ("kandor", BoxKernel::AndOr),
        ("kmin", BoxKernel::Min),
    ] {
        for estimator in ["fast", "paper"] {
            let out = dir.join(format!("{name}-{estimator}.csv"));
            let out_s = out.to_string_lossy().into_owned();
            let json = gram(&[
                "gram",
                &data,
                "--kernel",
                name,
                "--estimator",
                estimator,
                "--precision",
                "0",
                "--epsilon",
                "0.1",
                "--delta",
                "1e-6",
                "-o",
                &out_s,
                "--json",
                "--quiet",
            ]);
            assert_eq!(json["bags"], 4);
            assert!(json["seconds"].as_f64().unwrap() >= 0.0);
            let neg = json["negative_eigenvalues"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&neg));
            let m = read_csv(&out);
            assert_eq!(m.len(), 4);
            // The paper's k∧/∨ only promises eq. 2's band.
            let (lo, hi) = if kernel == BoxKernel::AndOr && estimator == "paper" {
                ((1.0 - eps) / (1.0 + eps), (1.0 + eps) / (1.0 - eps))
            } else {
                (1.0 - eps, 1.0 + eps)
            };
            for i in 0..4 {
                assert_eq!(m[i].len(), 4);
                for j in 0..4 {
                    assert_eq!(m[i][j], m[j][i], "symmetric");
                    let exact = exact_ln(kernel, &grid, &bags[i], &bags[j]).unwrap();
                    let ratio = (m[i][j] - exact).exp();
                    assert!(
                        (lo..=hi).contains(&ratio),
                        "{name}/{estimator} ({i},{j}): {} vs exact {exact}",
                        m[i][j]
                    );
                }
            }
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn same_seed_same_matrix_on_any_thread_count_and_npy_matches_csv() {
    let dir = temp_dir("gram-threads");
    let data = write_data(&dir);
    let run = |threads: &str, seed: &str, out: &Path| {
        let status = Command::new(mil_binary())
            .env("RAYON_NUM_THREADS", threads)
            .args([
                "gram", &data, "--kernel", "kmin", "--seed", seed, "--quiet", "-o",
            ])
            .arg(out)
            .output()
            .unwrap();
        assert!(
            status.status.success(),
            "{}",
            String::from_utf8_lossy(&status.stderr)
        );
    };
    let (one, two, other) = (dir.join("1.csv"), dir.join("2.csv"), dir.join("o.csv"));
    run("1", "5", &one);
    run("2", "5", &two);
    run("2", "6", &other);
    assert_eq!(read_csv(&one), read_csv(&two));
    assert_ne!(read_csv(&one), read_csv(&other));

    let npy = dir.join("1.npy");
    run("2", "5", &npy);
    let bytes = std::fs::read(&npy).unwrap();
    assert_eq!(&bytes[..6], b"\x93NUMPY");
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
    assert!(header.contains("'descr': '<f8'") && header.contains("'shape': (4, 4)"));
    let values: Vec<f64> = bytes[10 + header_len..]
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let csv: Vec<f64> = read_csv(&one).into_iter().flatten().collect();
    assert_eq!(values, csv);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn bad_arguments_exit_2_naming_the_parameter() {
    let dir = temp_dir("gram-bad");
    let data = write_data(&dir);
    let out = dir.join("g.csv").to_string_lossy().into_owned();
    let cases: [(&[&str], &str); 5] = [
        (&["--epsilon", "1.5"], "--epsilon"),
        (&["--delta", "0"], "--delta"),
        (&["--precision", "12"], "--precision"),
        (&["--output-is", "g.txt"], "--output"),
        (&["--precision", "-12"], "--precision"),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["gram", &data, "--kernel", "kand"];
        match extra {
            ["--output-is", path] => args.extend_from_slice(&["-o", path]),
            _ => {
                args.extend_from_slice(&["-o", &out]);
                args.extend_from_slice(extra);
            }
        }
        let res = run_mil(&args);
        assert_eq!(res.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&res.stderr);
        assert!(err.contains(needle), "{extra:?}: {err}");
    }
    let missing = run_mil(&["gram", "no-such-file.csv", "--kernel", "kand", "-o", &out]);
    assert_eq!(missing.status.code(), Some(2));
    std::fs::remove_dir_all(dir).ok();
}
