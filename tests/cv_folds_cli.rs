//! `mil cv --save-folds`: the written folds are the ones the run used — fed back through
//! `--folds-file`, a repetition's folds give that repetition's predictions again — and
//! the flag is refused where it has no drawn folds to write.

use std::collections::HashMap;

use mil_suite::{mil_json, mil_refuses_naming, temp_dir};
use serde_json::Value;

const REPEATS: usize = 3;

/// `mil cv musk1` with Citation-kNN (no randomised step, so only the folds can change
/// its predictions) and the given extra arguments.
fn cv(extra: &[&str]) -> Value {
    let mut args = vec![
        "cv",
        "musk1",
        "--classifier",
        "citation-knn",
        "--quiet",
        "--json",
    ];
    args.extend(extra);
    mil_json(&args)
}

#[test]
fn saved_folds_fed_back_reproduce_each_repetition() {
    let dir = temp_dir("save-folds");
    let saved = dir.join("folds.csv").display().to_string();
    let repeats = REPEATS.to_string();
    let all = cv(&["--repeats", &repeats, "--seed", "7", "--save-folds", &saved]);

    let text = std::fs::read_to_string(&saved).expect("folds written");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("repetition,bag_id,label,fold"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let n_bags = mil_json(&["info", "musk1", "--json"])["bags"]
        .as_u64()
        .expect("bags") as usize;
    assert_eq!(
        rows.len(),
        REPEATS * n_bags,
        "every bag once per repetition"
    );

    for r in 0..REPEATS {
        let mine: Vec<&Vec<&str>> = rows.iter().filter(|row| row[0] == r.to_string()).collect();
        assert_eq!(mine.len(), n_bags, "repetition {r}");
        // Stratified: each class's bags spread over the 10 folds within one of each other.
        let mut per_class_fold: HashMap<(&str, &str), usize> = HashMap::new();
        for row in &mine {
            *per_class_fold.entry((row[2], row[3])).or_default() += 1;
        }
        for class in ["0", "1"] {
            let counts: Vec<usize> = (0..10)
                .map(|f| per_class_fold[&(class, f.to_string().as_str())])
                .collect();
            let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
            assert!(hi - lo <= 1, "repetition {r}, class {class}: {counts:?}");
        }

        let one = dir.join(format!("rep{r}.csv"));
        let body: String = mine.iter().map(|row| row[1..].join(",") + "\n").collect();
        std::fs::write(&one, format!("bag_id,label,fold\n{body}")).expect("write folds");
        let again = cv(&["--folds-file", &one.display().to_string()]);
        assert_eq!(
            again["accuracy"], all["per_repeat"][r],
            "repetition {r}: accuracy on the saved folds"
        );
        if r == 0 {
            // The report lists the first repetition's predictions, bag by bag.
            assert_eq!(again["predictions"], all["predictions"]);
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn save_folds_is_refused_without_drawn_folds() {
    let dir = temp_dir("save-folds-refused");
    let saved = dir.join("folds.csv").display().to_string();
    let given = dir.join("given.csv");
    std::fs::write(&given, "bag_id,label,fold\n").expect("write");
    let given = given.display().to_string();
    let part = dir.join("part.json").display().to_string();
    for extra in [
        vec!["--folds-file", given.as_str()],
        vec!["--shard", "1/2", "-o", part.as_str()],
    ] {
        let mut args = vec![
            "cv",
            "musk1",
            "--classifier",
            "citation-knn",
            "--quiet",
            "--save-folds",
            &saved,
        ];
        args.extend(extra);
        mil_refuses_naming(&args, "--save-folds");
    }
    assert!(!std::path::Path::new(&saved).exists(), "nothing written");
    std::fs::remove_dir_all(&dir).ok();
}
