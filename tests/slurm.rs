//! Sharded runs on a real scheduler: brings up a single-node Slurm cluster
//! (`tests/slurm/cluster.sh`, Debian's slurm-wlm and munge, daemons started directly),
//! submits the musk1 k∧ Gram and a musk1 cross-validation as 4-task job arrays with
//! `sbatch --wait --array=0-3` and `--shard auto`, merges, and compares with one process
//! byte for byte; stops every daemon it started. Needs root and the packages
//! (`scripts/test-all.sh` installs them); fails, never skips, without them.

use std::path::Path;
use std::process::Command;

use mil_suite::{mil_binary, run_mil, temp_dir};

/// Stops the daemons `cluster.sh up` started when dropped, even if the test fails.
struct Cluster {
    state: std::path::PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .args(["down", self.state.to_str().unwrap()])
            .status();
    }
}

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slurm/cluster.sh")
}

fn sbatch_array(state: &Path, dir: &Path, command: &str) {
    let out = Command::new("sbatch")
        .env("SLURM_CONF", state.join("slurm.conf"))
        .current_dir(dir)
        .args([
            "--wait",
            "--array=0-3",
            "-o",
            "job_%A_%a.log",
            "--wrap",
            command,
        ])
        .output()
        .expect("sbatch runs");
    assert!(
        out.status.success(),
        "sbatch failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn gram_and_cv_job_arrays_merge_to_the_single_run() {
    let dir = temp_dir("slurm");
    // Jobs run as the submitting user in the submit directory; let them write there.
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let state = dir.join("cluster");
    let up = Command::new("bash")
        .arg(script())
        .args(["up", state.to_str().unwrap()])
        .output()
        .expect("bash runs");
    let cluster = Cluster {
        state: state.clone(),
    };
    assert!(
        up.status.success(),
        "could not start Slurm (scripts/test-all.sh installs it): {}",
        String::from_utf8_lossy(&up.stderr)
    );
    let mil = mil_binary();
    let mil = mil.to_str().unwrap();

    // The Gram matrix: four tiles of equal estimated work, one per array task.
    sbatch_array(
        &state,
        &dir,
        &format!(
            "{mil} gram musk1 --kernel kand --quiet --shard auto -o tile_$SLURM_ARRAY_TASK_ID.json"
        ),
    );
    let tiles: Vec<String> = (0..4)
        .map(|i| dir.join(format!("tile_{i}.json")).display().to_string())
        .collect();
    let merged = dir.join("merged.npy");
    let mut args = vec!["gram", "merge"];
    args.extend(tiles.iter().map(String::as_str));
    args.extend(["-o", merged.to_str().unwrap()]);
    assert_eq!(run_mil(&args).status.code(), Some(0));
    let single = dir.join("single.npy");
    let out = run_mil(&[
        "gram",
        "musk1",
        "--kernel",
        "kand",
        "-o",
        single.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        std::fs::read(&merged).unwrap(),
        std::fs::read(&single).unwrap(),
        "merged tiles differ from the single run"
    );

    // Cross-validation with a tuned projection: four parts over the 10 folds.
    let cv = "cv musk1 --classifier milr --ridge 1e-6,1 --projection pca --dim 3,5";
    sbatch_array(
        &state,
        &dir,
        &format!("{mil} {cv} --quiet --shard auto -o part_$SLURM_ARRAY_TASK_ID.json"),
    );
    let parts: Vec<String> = (0..4)
        .map(|i| dir.join(format!("part_{i}.json")).display().to_string())
        .collect();
    let mut args = vec!["cv", "merge"];
    args.extend(parts.iter().map(String::as_str));
    args.push("--json");
    let merged = run_mil(&args);
    assert_eq!(
        merged.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    let mut single_args: Vec<&str> = cv.split(' ').collect();
    single_args.push("--json");
    let single = run_mil(&single_args);
    let parse = |bytes: &[u8]| {
        let mut v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        v.as_object_mut().unwrap().remove("seconds");
        v
    };
    assert_eq!(parse(&merged.stdout), parse(&single.stdout));
    // Stop the daemons (their pid files are in the directory) before removing it.
    drop(cluster);
    std::fs::remove_dir_all(&dir).ok();
}
