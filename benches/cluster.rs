//! Speed of bag clustering on corel3 (300 bags, 1953 instances, 230 features): one M³IC-MBM
//! start (the paper's Table 4 times one run: 1.2 s in MATLAB), the default 5 starts, and
//! BAMIC with 5 starts per bag distance (pairwise Hausdorff distances included).
//! Run: `cargo bench --bench cluster`.

use mil_toolkit::cluster::{bamic, m3ic};
use mil_toolkit::data;
use mil_toolkit::distance::Hausdorff;

fn main() {
    divan::main();
}

#[divan::bench(sample_count = 10)]
fn m3ic_one_start(bencher: divan::Bencher) {
    let corel = data::load("corel3").unwrap();
    let params = m3ic::M3ic::default().k(3).seed(1).restarts(1);
    bencher.bench(|| params.fit(&corel).unwrap());
}

#[divan::bench(sample_count = 10)]
fn m3ic_five_starts(bencher: divan::Bencher) {
    let corel = data::load("corel3").unwrap();
    let params = m3ic::M3ic::default().k(3).seed(1);
    bencher.bench(|| params.fit(&corel).unwrap());
}

#[divan::bench(args = ["min", "max", "avg"], sample_count = 3)]
fn bamic_five_starts(bencher: divan::Bencher, distance: &str) {
    let corel = data::load("corel3").unwrap();
    let distance = match distance {
        "min" => Hausdorff::Min,
        "max" => Hausdorff::Max,
        _ => Hausdorff::Avg,
    };
    let params = bamic::Bamic::default().k(3).seed(1).distance(distance);
    bencher.bench(|| params.fit(&corel).unwrap());
}
