//! Host model loader (`mil predict`, `mil export`): any text is a validated model or an
//! error; an accepted model round-trips and scores bags without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mil_toolkit::model::HostModel;
use mil_toolkit::Dataset;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(model) = HostModel::parse("fuzz.json", text) else {
        return;
    };
    let again = serde_json::to_string(&model).expect("an accepted model serialises");
    assert_eq!(HostModel::parse("fuzz.json", &again).unwrap(), model);
    let dim = model.input_dim;
    if (1..=256).contains(&dim) {
        let features = (0..2 * dim).map(|i| (i % 7) as f64 - 3.0).collect();
        let ids = vec!["p".to_string(), "q".to_string()];
        let bags = Dataset::new("x", dim, features, vec![0, 1, 2], ids, None, vec![]).unwrap();
        let _ = model.scores(&bags);
    }
});
