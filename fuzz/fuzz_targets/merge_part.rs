//! The merges of sharded runs (`mil gram merge`, `mil cv merge`): any JSON that reads as
//! Gram tiles, or as a cross-validation's fold assignments and job outcomes, is joined
//! into a result or refused with an error, never a panic; an accepted join is whole.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mil_toolkit::kernel::tiles::{merge_tiles, GramTile};
use mil_toolkit::pipeline::{check_outcomes, summarize, FoldOutcome};
use mil_toolkit::Dataset;
use serde::Deserialize;

/// What a `mil cv` part carries into its merge.
#[derive(Deserialize)]
struct Outcomes {
    assignments: Vec<(u64, Vec<Vec<usize>>)>,
    outcomes: Vec<FoldOutcome>,
}

/// Six labelled bags of two classes, the data the outcomes claim.
fn data() -> Dataset {
    let sizes = [1usize, 2, 1, 3, 1, 2];
    let mut starts = vec![0];
    for s in sizes {
        starts.push(starts.last().unwrap() + s);
    }
    let n = *starts.last().unwrap();
    let features = (0..2 * n).map(|i| (i % 5) as f64).collect();
    let ids = (0..sizes.len()).map(|b| format!("b{b}")).collect();
    let labels = Some(vec![0, 1, 0, 1, 0, 1]);
    let classes = vec!["neg".to_string(), "pos".to_string()];
    Dataset::new("fuzz", 2, features, starts, ids, labels, classes).unwrap()
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    if let Ok(tiles) = serde_json::from_str::<Vec<GramTile>>(text) {
        let names: Vec<String> = (0..tiles.len()).map(|t| format!("tile{t}")).collect();
        if let Ok(gram) = merge_tiles(&tiles, &names) {
            assert_eq!(gram.ln.len(), gram.n * gram.n);
            for i in 0..gram.n {
                for j in 0..gram.n {
                    let (a, b) = (gram.ln[i * gram.n + j], gram.ln[j * gram.n + i]);
                    assert!(a == b || (a.is_nan() && b.is_nan()), "not symmetric");
                }
            }
        }
    }
    if let Ok(part) = serde_json::from_str::<Outcomes>(text) {
        let d = data();
        if check_outcomes(&d, &part.assignments, &part.outcomes).is_ok() {
            if let Ok(report) = summarize(&d, &part.assignments, &part.outcomes) {
                // NaN when no bag was scored; never outside [0, 1].
                assert!(!(report.accuracy < 0.0 || report.accuracy > 1.0));
            }
        }
    }
});
