//! MI-ALM and MIDR fitting time on the MI-ALM paper's synthetic data set II (§3.1): 80
//! bags, 1,400 instances, D features of which d = 0.2·D are relevant, fitted on the
//! paper's 50/50 training half (40 bags, 700 instances) with the paper's constants.
//!
//! `cargo bench --bench mi_alm`. The D = 5,000 case checks the scale MI-ALM must fit in
//! (under 60 s); it runs once per sample, so divan's sample count is kept small.
//!
//! With `MI_ALM_TABLES=D1,D2,…:SEEDS[:TENTHS]` (e.g. `40,100,500:20` or `100:20:2`) it
//! instead reproduces the paper's Tables 2 and 3 for those D: d = 0.2D … 0.6D (or the
//! tenths of D given), seeds 0…SEEDS−1, each fitted on
//! the 50/50 training half and scored by MILR (the CLI's default pooling) on the test
//! half; prints mean (sd) of AUROC, sparsity, orthogonality and MIDR's ‖A − H‖_F/d.

use divan::Bencher;
use mil_toolkit::classifier::milr::Milr;
use mil_toolkit::classifier::{BagModel, Classifier};
use mil_toolkit::data::synth::{mialm_ii, Synthetic};
use mil_toolkit::eval::metrics::auroc;
use mil_toolkit::projection::mi_alm::MiAlm;
use mil_toolkit::projection::midr::Midr;
use mil_toolkit::projection::{LinearProjection, Projector};

fn main() {
    match std::env::var("MI_ALM_TABLES") {
        Ok(spec) => tables(&spec),
        Err(_) => divan::main(),
    }
}

/// AUROC of MILR trained on the projected training bags, on the projected test bags.
fn milr_auroc(s: &Synthetic, train: &[usize], test: &[usize], p: &LinearProjection) -> f64 {
    let projected = p.transform(&s.data).expect("same dimension");
    let model = Milr::default()
        .fit(projected.select(train))
        .expect("MILR fit");
    let scores = model.scores(projected.select(test)).expect("scores");
    let score: Vec<f64> = (0..test.len()).map(|i| scores.positive(i)).collect();
    let positive: Vec<bool> = test.iter().map(|&b| s.data.label(b) == Some(1)).collect();
    auroc(&score, &positive).expect("both classes in the test half")
}

fn mean_sd(v: &[f64]) -> String {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    format!("{mean:.3} ({:.2e})", var.sqrt())
}

fn mean_sd_sci(v: &[f64]) -> String {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    format!("{mean:.2e} ({:.2e})", var.sqrt())
}

fn tables(spec: &str) {
    let mut parts = spec.split(':');
    let dims = parts.next().unwrap_or("100");
    let seeds: u64 = parts
        .next()
        .unwrap_or("20")
        .parse()
        .expect("MI_ALM_TABLES=D1,…:SEEDS[:TENTHS]");
    let tenths: Vec<usize> = parts
        .next()
        .unwrap_or("2,3,4,5,6")
        .split(',')
        .map(|t| t.parse().expect("tenths of D"))
        .collect();
    println!("| D | d | AUROC MI-ALM | AUROC MIDR | sparsity MI-ALM | sparsity MIDR | orthogonality MI-ALM | orthogonality MIDR | error MIDR | seconds MI-ALM | seconds MIDR |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for big_d in dims
        .split(',')
        .map(|d| d.parse::<usize>().expect("a dimension"))
    {
        for &t in &tenths {
            let d = big_d * t / 10;
            let mut rows: Vec<[f64; 9]> = Vec::new();
            for seed in 0..seeds {
                let s = mialm_ii(big_d, d, seed).expect("valid sizes");
                let (train, test) = s.paper_split();
                let t = std::time::Instant::now();
                let alm = MiAlm::new(d, 0.2, seed)
                    .fit(s.data.select(&train))
                    .expect("MI-ALM");
                let t_alm = t.elapsed().as_secs_f64();
                let t = std::time::Instant::now();
                let midr = Midr::new(d, 0.5, seed)
                    .fit(s.data.select(&train))
                    .expect("MIDR");
                let t_midr = t.elapsed().as_secs_f64();
                let get = |p: &LinearProjection, k: &str| p.diagnostic(k).unwrap_or(f64::NAN);
                rows.push([
                    milr_auroc(&s, &train, &test, &alm),
                    milr_auroc(&s, &train, &test, &midr),
                    get(&alm, "sparsity"),
                    get(&midr, "sparsity"),
                    get(&alm, "orthogonality"),
                    get(&midr, "orthogonality"),
                    get(&midr, "error"),
                    t_alm,
                    t_midr,
                ]);
                eprintln!("D {big_d} d {d} seed {seed}: {:?}", rows.last().unwrap());
            }
            let col = |k: usize| rows.iter().map(|r| r[k]).collect::<Vec<f64>>();
            println!(
                "| {big_d} | {d} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {:.2} |",
                mean_sd(&col(0)),
                mean_sd(&col(1)),
                mean_sd(&col(2)),
                mean_sd(&col(3)),
                mean_sd_sci(&col(4)),
                mean_sd_sci(&col(5)),
                mean_sd_sci(&col(6)),
                col(7).iter().sum::<f64>() / rows.len() as f64,
                col(8).iter().sum::<f64>() / rows.len() as f64,
            );
        }
    }
}

fn set_ii(dims: usize, relevant: usize) -> (Synthetic, Vec<usize>) {
    let synthetic = mialm_ii(dims, relevant, 1).expect("valid sizes");
    let (train, _) = synthetic.paper_split();
    (synthetic, train)
}

#[divan::bench(args = [40, 100, 500], sample_count = 5)]
fn mi_alm_set_ii(bencher: Bencher, dims: usize) {
    let (synthetic, train) = set_ii(dims, dims / 5);
    bencher.bench(|| {
        MiAlm::new(dims / 5, 0.2, 1)
            .fit(synthetic.data.select(&train))
            .expect("fit")
    });
}

#[divan::bench(args = [40, 100, 500], sample_count = 3)]
fn midr_set_ii(bencher: Bencher, dims: usize) {
    let (synthetic, train) = set_ii(dims, dims / 5);
    bencher.bench(|| {
        Midr::new(dims / 5, 0.5, 1)
            .fit(synthetic.data.select(&train))
            .expect("fit")
    });
}

#[divan::bench(sample_count = 2, sample_size = 1)]
fn mi_alm_d5000_d20(bencher: Bencher) {
    let (synthetic, train) = set_ii(5000, 20);
    bencher.bench(|| {
        MiAlm::new(20, 0.2, 1)
            .fit(synthetic.data.select(&train))
            .expect("fit")
    });
}
