//! Sharded runs in one process: `mil gram --shard i/n` tiles and `mil cv --shard i/n`
//! parts (`--classifier auto`'s among them), merged, equal the single run for n = 1, 2,
//! 4 and 7 (the Gram file byte for byte, the CV report key for key but for the time); a
//! missing, duplicated or mismatched share is an error naming it; `--shard auto` reads
//! the scheduler's environment.

use std::process::Command;

use mil_suite::{mil_binary, run_mil, temp_dir};

fn ok(args: &[&str]) -> Vec<u8> {
    let out = run_mil(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "mil {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn without_seconds(bytes: &[u8]) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    v.as_object_mut().unwrap().remove("seconds");
    v
}

#[test]
fn gram_tiles_merge_to_the_single_run_byte_for_byte() {
    let dir = temp_dir("shard-gram");
    let path = |name: &str| dir.join(name).display().to_string();
    for kernel in ["kand", "nsk"] {
        let single = path(&format!("single-{kernel}.csv"));
        ok(&[
            "gram", "musk1", "--kernel", kernel, "--quiet", "-o", &single,
        ]);
        for n in [1, 2, 4, 7] {
            let tiles: Vec<String> = (0..n)
                .map(|i| path(&format!("{kernel}-{i}-of-{n}.json")))
                .collect();
            for (i, tile) in tiles.iter().enumerate() {
                let shard = format!("{i}/{n}");
                ok(&[
                    "gram", "musk1", "--kernel", kernel, "--quiet", "--shard", &shard, "-o", tile,
                ]);
            }
            let merged = path(&format!("merged-{kernel}-{n}.csv"));
            let mut args = vec!["gram", "merge"];
            args.extend(tiles.iter().map(String::as_str));
            args.extend(["-o", &merged]);
            ok(&args);
            assert_eq!(
                std::fs::read(&merged).unwrap(),
                std::fs::read(&single).unwrap(),
                "{kernel}, {n} shards"
            );
        }
    }

    // Refusals name the tile.
    let t = |i: usize| path(&format!("kand-{i}-of-4.json"));
    let refused = |args: &[&str], needle: &str| {
        let out = run_mil(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    };
    let (t0, t1, t3) = (t(0), t(1), t(3));
    let out = path("x.csv");
    refused(
        &["gram", "merge", &t0, &t1, &t3, "-o", &out],
        "shard 2/4 is missing",
    );
    refused(&["gram", "merge", &t0, &t1, &t1, &t3, "-o", &out], "also");
    let other_seed = path("other-seed.json");
    ok(&[
        "gram",
        "musk1",
        "--kernel",
        "kand",
        "--seed",
        "2",
        "--quiet",
        "--shard",
        "2/4",
        "-o",
        &other_seed,
    ]);
    refused(
        &["gram", "merge", &t0, &t1, &other_seed, &t3, "-o", &out],
        "other-seed.json",
    );
    assert!(
        !std::path::Path::new(&out).exists(),
        "no output after a refused merge"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn cv_parts_merge_to_the_single_run() {
    let dir = temp_dir("shard-cv");
    let path = |name: &str| dir.join(name).display().to_string();
    // auto (every family, nested CV) once, in as many shards as folds.
    for (cv, shards) in [
        (
            "cv musk1 --classifier citation-knn --repeats 2",
            &[1, 2, 4, 7][..],
        ),
        (
            "cv musk1 --classifier milr --ridge 1e-6,1 --projection pca --dim 3,5",
            &[1, 2, 4, 7][..],
        ),
        ("cv musk1 --classifier auto --folds 2", &[2][..]),
    ] {
        let mut single: Vec<&str> = cv.split(' ').collect();
        single.extend(["--json", "--quiet"]);
        let expected = without_seconds(&ok(&single));
        for &n in shards {
            let parts: Vec<String> = (0..n)
                .map(|i| path(&format!("part-{i}-of-{n}.json")))
                .collect();
            for (i, part) in parts.iter().enumerate() {
                let shard = format!("{i}/{n}");
                let mut args: Vec<&str> = cv.split(' ').collect();
                args.extend(["--quiet", "--shard", &shard, "-o", part]);
                ok(&args);
            }
            let mut args = vec!["cv", "merge"];
            args.extend(parts.iter().map(String::as_str));
            args.push("--json");
            assert_eq!(without_seconds(&ok(&args)), expected, "{cv}: {n} shards");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn auto_reads_slurm_and_kubernetes_indices() {
    let dir = temp_dir("shard-auto");
    let tile = dir.join("t.json");
    let run = |env: &[(&str, &str)], shard: &str| {
        let mut cmd = Command::new(mil_binary());
        for var in [
            "SLURM_ARRAY_TASK_ID",
            "SLURM_ARRAY_TASK_COUNT",
            "SLURM_ARRAY_TASK_MIN",
            "JOB_COMPLETION_INDEX",
        ] {
            cmd.env_remove(var);
        }
        cmd.envs(env.iter().copied())
            .args([
                "gram", "musk1", "--kernel", "nsk", "--json", "--shard", shard, "-o",
            ])
            .arg(&tile)
            .output()
            .unwrap()
    };
    let slurm = run(
        &[
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ],
        "auto",
    );
    assert_eq!(slurm.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&slurm.stdout).unwrap();
    assert_eq!(json["shard"], "2/3");
    let k8s = run(&[("JOB_COMPLETION_INDEX", "1")], "auto/5");
    let json: serde_json::Value = serde_json::from_slice(&k8s.stdout).unwrap();
    assert_eq!(json["shard"], "1/5");
    let missing = run(&[], "auto");
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("SLURM_ARRAY_TASK_ID"));
    std::fs::remove_dir_all(&dir).ok();
}
