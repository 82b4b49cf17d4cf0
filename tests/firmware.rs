//! The on-target check: exports a musk1 model in Q15, embeds it with every musk1 bag in
//! the firmware crate `tests/qemu`, builds it for `thumbv7em-none-eabihf`, runs it under
//! `qemu-system-arm -machine mps2-an386` and compares the labels and scores it prints with
//! the host's. Needs `qemu-system-arm` (`.ci/run` installs it); fails, never skips,
//! without it. The other runs put every model kind in every encoding on the same target
//! (a projection alone, Citation-kNN, the default M³IC clustering with its unit-length
//! instances, both SVMs, MILES), each printing its `firmware: kind=… encoding=…` line.

#[allow(dead_code)] // each test binary uses part of the shared helpers
mod deploy;

use std::path::{Path, PathBuf};
use std::process::Command;

use mil_core::keyword::Keyword;
use mil_core::{Encoding, Model};
use mil_toolkit::classifier::svm::bags::EmpiricalMap;
use mil_toolkit::export::{
    core_classify, core_svm_decide, export, export_with, host_scores_as_compact, Compact,
    ExportOptions, InputSteps,
};

/// One line of the firmware's report on a bag.
struct BagLine {
    label: usize,
    ticks: u64,
    quantise_ticks: u64,
    quantise_i16_ticks: u64,
    project_ticks: u64,
    scores: Vec<f32>,
}

fn parse_bag_line(line: &str) -> BagLine {
    // "bag {b} n {n} label {l} ticks {t} quantise_ticks {q} scores [a, b]"
    let field = |name: &str| -> &str {
        let at = line
            .find(&format!(" {name} "))
            .unwrap_or_else(|| panic!("no {name} in {line}"));
        line[at + name.len() + 2..].split(' ').next().unwrap()
    };
    let scores = line[line.find('[').unwrap() + 1..line.rfind(']').unwrap()]
        .split(", ")
        .map(|s| s.parse().unwrap())
        .collect();
    BagLine {
        label: field("label").parse().unwrap(),
        ticks: field("ticks").parse().unwrap(),
        quantise_ticks: field("quantise_ticks").parse().unwrap(),
        quantise_i16_ticks: field("quantise_i16_ticks").parse().unwrap(),
        project_ticks: field("project_ticks").parse().unwrap(),
        scores,
    }
}

/// Every bag line of a firmware run.
fn bag_lines(stdout: &str) -> Vec<BagLine> {
    stdout
        .lines()
        .filter(|l| l.starts_with("bag "))
        .map(parse_bag_line)
        .collect()
}

/// One firmware build and run at a time: both tests rebuild the same crate with other
/// embedded data.
static FIRMWARE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Builds the firmware around `model` and `bags` (with the cargo `features`), runs it
/// under QEMU and returns what it printed.
fn run_firmware(model: &[u8], bags: &[u8], features: &[&str]) -> String {
    let qemu = Command::new("qemu-system-arm").arg("--version").output();
    assert!(
        qemu.as_ref().is_ok_and(|o| o.status.success()),
        "qemu-system-arm is not installed: `apt-get install -y qemu-system-arm` (.ci/run does it)"
    );
    let _one_at_a_time = FIRMWARE.lock().unwrap_or_else(|e| e.into_inner());
    run_firmware_locked(model, bags, features)
}

/// [`run_firmware`] for a caller that holds [`FIRMWARE`].
fn run_firmware_locked(model: &[u8], bags: &[u8], features: &[&str]) -> String {
    let run = cargo_firmware("run", model, bags, features);
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success() && stdout.contains("done"),
        "firmware failed ({}):\n{stdout}\n{stderr}",
        run.status
    );
    // The device checked its own SMLALD loops (aligned and misaligned, lengths 0..=40)
    // against plain sums before running the model.
    assert!(
        stdout.contains("dsp self-test: 164 cases"),
        "no DSP self-test:\n{stdout}"
    );
    // `MIL_FIRMWARE_DUMP=DIR` keeps each run's output (per-bag ticks and instance
    // counts), e.g. to split a model's cost into per-instance and per-bag parts.
    if let Ok(dir) = std::env::var("MIL_FIRMWARE_DUMP") {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        std::fs::write(format!("{dir}/run{n}.txt"), &stdout).unwrap();
    }
    stdout
}

/// `cargo VERB --release` in `tests/qemu` with `model` and `bags` embedded and the cargo
/// `features`; the caller holds [`FIRMWARE`].
fn cargo_firmware(
    verb: &str,
    model: &[u8],
    bags: &[u8],
    features: &[&str],
) -> std::process::Output {
    let dir = std::env::temp_dir().join(format!("mil-firmware-{verb}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("model.milm"), model).unwrap();
    std::fs::write(dir.join("bags.bin"), bags).unwrap();
    let features = features.join(",");
    let mut args = vec![verb, "--release", "--quiet"];
    if !features.is_empty() {
        args.extend(["--features", &features]);
    }
    let out = Command::new(env!("CARGO"))
        .args(&args)
        .current_dir(firmware_dir())
        .env("MIL_FIRMWARE_DATA", &dir)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .output()
        .expect("cargo runs");
    std::fs::remove_dir_all(&dir).ok();
    out
}

/// The firmware crate.
fn firmware_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/qemu")
}

/// Builds the firmware (without running it) around `model` and `bags` with `features`;
/// returns cargo's output and the path of the ELF file.
fn build_firmware(model: &[u8], bags: &[u8], features: &[&str]) -> (std::process::Output, PathBuf) {
    let _one_at_a_time = FIRMWARE.lock().unwrap_or_else(|e| e.into_inner());
    let out = cargo_firmware("build", model, bags, features);
    let elf = firmware_dir().join("target/thumbv7em-none-eabihf/release/mil-firmware");
    (out, elf)
}

/// An `llvm-objdump` that reads ARM code: the `llvm-tools` rustup component's, else one
/// on the PATH (Debian's `llvm`), else `arm-none-eabi-objdump` (`binutils-arm-none-eabi`);
/// installs the component if none is found, and fails saying what to install otherwise.
fn objdump() -> PathBuf {
    let find = || -> Option<PathBuf> {
        let sysroot = Command::new("rustc")
            .args(["--print", "sysroot"])
            .output()
            .ok()?;
        let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
        let host = Command::new("rustc").arg("-vV").output().ok()?;
        let host = String::from_utf8_lossy(&host.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))?;
        let tools = sysroot
            .join("lib/rustlib")
            .join(host)
            .join("bin/llvm-objdump");
        let works = |p: &Path| {
            Command::new(p)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        };
        [tools, "llvm-objdump".into(), "arm-none-eabi-objdump".into()]
            .into_iter()
            .find(|p| works(p))
    };
    if let Some(p) = find() {
        return p;
    }
    let _ = Command::new("rustup")
        .args(["component", "add", "llvm-tools"])
        .status();
    find().expect(
        "no objdump for ARM code: `rustup component add llvm-tools` (or apt-get install llvm,          or binutils-arm-none-eabi); .ci/run and scripts/test-all.sh install llvm-tools",
    )
}

/// Instructions per SysTick tick, from the firmware's calibration loop.
fn instructions_per_tick(stdout: &str) -> f64 {
    let cal: Vec<f64> = stdout
        .lines()
        .find(|l| l.starts_with("calibration "))
        .unwrap()
        .split(' ')
        .filter_map(|w| w.parse().ok())
        .collect();
    cal[1] / cal[0]
}

#[test]
fn q15_musk1_model_runs_on_an_emulated_cortex_m4_and_matches_the_host() {
    // The musk1 B-MIDA (d = 10) + MILR model in Q15 with the fitted input steps (the
    // default export), then with step 1 for every feature (`--input integer`: musk1's
    // features are integers, as an ADC's counts are), whose i16 input needs no
    // quantising arithmetic. Labels equal the host's for both.
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let model = deploy::musk1_firmware_model(&musk1);
    let host = model.scores(&musk1).unwrap();
    let (compact, _) = Compact::from_host(&model).unwrap();
    for input in [InputSteps::Fitted, InputSteps::Integer] {
        let options = ExportOptions {
            input,
            ..Default::default()
        };
        let bytes = export_with(&compact, Encoding::Q15, &musk1, options).unwrap();
        let model = Model::parse(&bytes).unwrap();
        let stdout = run_firmware(&bytes, &deploy::bags_bin(&musk1), &[]);

        let lines = bag_lines(&stdout);
        assert_eq!(lines.len(), musk1.n_bags(), "{stdout}");
        let (mut total_ticks, mut total_quantise) = (0, 0);
        for (b, line) in lines.iter().enumerate() {
            // The same core code on the same bytes (both sides compute in IEEE f32).
            assert_matches_core(line, &model, musk1.bag(b), &format!("bag {b}"));
            // And the host model's own prediction.
            assert_eq!(line.label, host.label(b), "bag {b} vs the host model");
            total_ticks += line.ticks;
            total_quantise += line.quantise_ticks;
        }
        let stack_line = stdout.lines().find(|l| l.starts_with("stack ")).unwrap();
        let model_line = stdout.lines().find(|l| l.starts_with("model ")).unwrap();
        let instances = musk1.n_instances() as u64;
        println!("input steps {}: {model_line}", input.name());
        let per_tick = instructions_per_tick(&stdout);
        println!("{stack_line}; instructions per SysTick tick {per_tick:.2}");
        let per = |t: u64, n: usize| t as f64 * per_tick / n as f64;
        let total_fixed: u64 = lines.iter().map(|l| l.quantise_i16_ticks).sum();
        let total_project: u64 = lines.iter().map(|l| l.project_ticks).sum();
        println!(
            "classify: instructions per bag (mean) {:.0}, per instance {:.0} (the projection stage alone {:.0}); quantising the f32 input: per instance {:.0}, the i16 input: per instance {:.0} ({:.2} per feature)",
            per(total_ticks, lines.len()),
            per(total_ticks, instances as usize),
            per(total_project, instances as usize),
            per(total_quantise, instances as usize),
            per(total_fixed, instances as usize),
            per(total_fixed, instances as usize) / musk1.dim() as f64,
        );
        print_firmware_line(&model, bytes.len(), &lines, per_tick, instances);
    }
}

/// Checks the device's report on one bag against the host-side core (the same code on
/// the same bytes): the same label, the same scores to the printed `f32`'s precision.
fn assert_matches_core(
    line: &BagLine,
    core: &Model<'_>,
    bag: mil_toolkit::data::Bag<'_>,
    what: &str,
) {
    let (d, scores) = core_classify(core, bag).unwrap();
    assert_eq!(line.label, d.label, "{what}: vs the host-side core");
    assert_eq!(line.scores.len(), scores.len(), "{what}");
    for (got, want) in line.scores.iter().zip(&scores) {
        assert!(
            (got - want).abs() <= 1e-6 * want.abs().max(1.0),
            "{what}: {got} vs {want}"
        );
    }
}

/// The summary line of one model on the device: `firmware: kind=… encoding=… bytes=…
/// instructions_per_instance=… instructions_per_bag=…`.
fn print_firmware_line(
    model: &Model<'_>,
    bytes: usize,
    lines: &[BagLine],
    per_tick: f64,
    instances: u64,
) {
    let ticks: u64 = lines.iter().map(|l| l.ticks).sum();
    println!(
        "firmware: kind={} encoding={} bytes={} instructions_per_instance={:.0} instructions_per_bag={:.0}",
        model.kind().name(),
        model.encoding().name(),
        bytes,
        ticks as f64 * per_tick / instances as f64,
        ticks as f64 * per_tick / lines.len() as f64
    );
}

#[test]
fn the_firmware_links_without_a_panic_path() {
    // The panic handler of `--features panic-check` calls an undefined function: the link
    // fails if any panic path survives in parsing, quantising (f32 and i16 inputs) and
    // classifying, and (`svm`) in the set-kernel SVM's decision with all its box-kernel
    // estimators (fast and the paper's; k∧, k∨, k_min) and in the MI-kernel SVM's,
    // MILES's, miVLAD's and the attention network's decisions. That build hides the
    // embedded bytes from the optimiser, so fat LTO cannot fold the model's kind and
    // encoding and every path of every kind is linked whatever the model: two models of
    // other kinds and encodings give the same `.text`, byte for byte in size.
    use mil_toolkit::classifier::citation_knn::Scaling;
    use mil_toolkit::classifier::ClassifierParams;
    use mil_toolkit::projection::ProjectionKind;
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let bags = deploy::bags_bin(&musk1.copy_bags(&[0]));
    let linear = Compact::from_host(&deploy::musk1_firmware_model(&musk1))
        .unwrap()
        .0;
    let citation = deploy::train(
        &musk1,
        Some((ProjectionKind::Bmida, 10)),
        deploy::citation_knn(Scaling::None),
    );
    let citation = Compact::from_host(&citation).unwrap().0;
    let miles = deploy::train(&musk1, None, ClassifierParams::Miles(Default::default()));
    let miles = Compact::from_host(&miles).unwrap().0;
    let mut text = Vec::new();
    for (features, models) in [
        (
            &["panic-check"][..],
            [(&linear, Encoding::F32), (&citation, Encoding::Q7)],
        ),
        (
            &["panic-check", "svm"][..],
            [(&linear, Encoding::Q15), (&miles, Encoding::Q7)],
        ),
    ] {
        let mut sizes = Vec::new();
        for (compact, encoding) in models {
            let model = export(compact, encoding, &musk1).unwrap();
            let (out, elf) = build_firmware(&model, &bags, features);
            let kind = Model::parse(&model).unwrap().kind();
            assert!(
                out.status.success(),
                "a panic path survives in the firmware ({} {encoding:?}, {features:?}):\n{}",
                kind.name(),
                String::from_utf8_lossy(&out.stderr)
            );
            sizes.push(section_size(&elf, ".text"));
        }
        assert_eq!(
            sizes[0], sizes[1],
            "{features:?}: the code depends on the embedded model"
        );
        text.push(sizes[0]);
    }
    assert!(text[1] > text[0], "the `svm` build links more: {text:?}");
}

/// Every section of the ELF file `elf` with its size, from `llvm-objdump -h`.
fn sections(elf: &Path) -> Vec<(String, u64)> {
    let out = Command::new(objdump()).arg("-h").arg(elf).output().unwrap();
    let all: Vec<(String, u64)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(
            |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                [_, name, size, ..] => {
                    Some((name.to_string(), u64::from_str_radix(size, 16).ok()?))
                }
                _ => None,
            },
        )
        .collect();
    assert!(!all.is_empty(), "no sections in {}", elf.display());
    all
}

/// The size of section `name` of the ELF file `elf`.
fn section_size(elf: &Path, name: &str) -> u64 {
    sections(elf)
        .into_iter()
        .find_map(|(n, size)| (n == name).then_some(size))
        .unwrap_or_else(|| panic!("no section {name} in {}", elf.display()))
}

#[test]
fn the_fixed_point_hot_loop_uses_the_dsp_extension() {
    // Q15 dot products pair their products into SMLALD (fixed::dot_q15), Q7 ones too
    // with a row pair's low bytes unpacked (fixed::dot2_q7_paired).
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let model = deploy::musk1_firmware_model(&musk1);
    let (compact, _) = Compact::from_host(&model).unwrap();
    let bytes = export(&compact, Encoding::Q15, &musk1).unwrap();
    let (out, elf) = build_firmware(&bytes, &deploy::bags_bin(&musk1.copy_bags(&[0])), &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dis = Command::new(objdump())
        .args(["-d", "--no-show-raw-insn"])
        .arg(&elf)
        .output()
        .expect("objdump runs");
    let text = String::from_utf8_lossy(&dis.stdout);
    let dsp = text
        .lines()
        .filter(|l| l.contains("\tsmlald") || l.contains("\tsmlad"))
        .count();
    assert!(dsp > 0, "no SMLALD/SMLAD in the firmware");
    // A Q7 row pair's low bytes are unpacked into SMLALD pairs (fixed::dot2_q7_paired).
    let unpack = text.lines().filter(|l| l.contains("\tsxtb16")).count();
    assert!(unpack > 0, "no SXTB16 in the firmware");
    println!("firmware: {dsp} SMLALD/SMLAD instructions, {unpack} SXTB16");
}

#[test]
fn default_m3ic_clustering_assigns_bags_on_an_emulated_cortex_m4() {
    // corel3's default clustering (z-score, then unit-length instances) in every
    // encoding: the device divides each instance's scores by its length with its own
    // sqrt. The device's clusters and scores are the host-side core's in each; the host
    // model's clusters in f32 and Q15 (Q7's 8-bit rows may move a close bag: counted).
    let corel = mil_toolkit::data::load("corel3").unwrap();
    let params = mil_toolkit::cluster::m3ic::M3ic::default().k(3).seed(1);
    let fit = params.fit(&corel).unwrap();
    let m = &fit.model;
    assert!(m.normalize);
    let zscore = m.mean.as_deref().zip(m.std.as_deref());
    let compact = Compact::from_m3ic(m.k, m.dim, &m.weights, zscore, m.normalize).unwrap();
    // Four bags of each class keep the embedded data small.
    let labels = corel.labels().unwrap();
    let chosen: Vec<usize> = (0..3)
        .flat_map(|c| (0..corel.n_bags()).filter(move |&b| labels[b] == c).take(4))
        .collect();
    for encoding in [Encoding::Q15, Encoding::F32, Encoding::Q7] {
        let bytes = export(&compact, encoding, &corel).unwrap();
        let core = Model::parse(&bytes).unwrap();
        let stdout = run_firmware(&bytes, &deploy::bags_bin(&corel.copy_bags(&chosen)), &[]);
        let lines = bag_lines(&stdout);
        assert_eq!(lines.len(), chosen.len(), "{stdout}");
        let mut agree = 0;
        for (line, &b) in lines.iter().zip(&chosen) {
            assert_matches_core(line, &core, corel.bag(b), &format!("{encoding:?} bag {b}"));
            let (host_cluster, _) = m.witness_scores(corel.bag(b).as_slice());
            assert_eq!(host_cluster, fit.assignments[b], "bag {b}: the clustering");
            agree += usize::from(line.label == host_cluster);
        }
        if encoding != Encoding::Q7 {
            assert_eq!(
                agree,
                chosen.len(),
                "{encoding:?}: the host model's clusters"
            );
        }
        println!(
            "{}",
            stdout.lines().find(|l| l.starts_with("model ")).unwrap()
        );
        let instances: usize = chosen.iter().map(|&b| corel.bag(b).len()).sum();
        print_firmware_line(
            &core,
            bytes.len(),
            &lines,
            instructions_per_tick(&stdout),
            instances as u64,
        );
        println!(
            "firmware: m3ic {}: the host model's clusters on {agree} of {} bags",
            encoding.name(),
            chosen.len()
        );
    }
}

#[test]
fn a_projection_alone_runs_on_an_emulated_cortex_m4() {
    // Model kind `projection` (the musk1 B-MIDA d = 10 stage with no head) in every
    // encoding on every musk1 bag: the device reports the sum of the bag's projected
    // instances, which must be the host-side core's (the same code on the same bytes).
    use mil_toolkit::export::{CoreBag, Head};
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let (mut compact, _) = Compact::from_host(&deploy::musk1_firmware_model(&musk1)).unwrap();
    compact.head = Head::None;
    for encoding in [Encoding::F32, Encoding::Q15, Encoding::Q7] {
        let bytes = export(&compact, encoding, &musk1).unwrap();
        let core = Model::parse(&bytes).unwrap();
        assert_eq!(core.kind(), mil_core::ModelKind::Projection);
        let stdout = run_firmware(&bytes, &deploy::bags_bin(&musk1), &[]);
        let lines = bag_lines(&stdout);
        assert_eq!(lines.len(), musk1.n_bags(), "{stdout}");
        let d_in = core.input_dim();
        for (b, line) in lines.iter().enumerate() {
            let mut want = vec![0.0f32; core.output_dim()];
            let mut out = vec![0.0f32; core.output_dim()];
            match CoreBag::new(&core, musk1.bag(b)).unwrap() {
                CoreBag::F32(x) => x.chunks_exact(d_in).for_each(|x| {
                    core.project(mil_core::Instances::F32(x), &mut out).unwrap();
                    want.iter_mut().zip(&out).for_each(|(w, v)| *w += v);
                }),
                CoreBag::I16(x) => x.chunks_exact(d_in).for_each(|x| {
                    core.project(mil_core::Instances::I16(x), &mut out).unwrap();
                    want.iter_mut().zip(&out).for_each(|(w, v)| *w += v);
                }),
            }
            assert_eq!(line.scores.len(), want.len(), "{encoding:?} bag {b}");
            for (got, want) in line.scores.iter().zip(&want) {
                assert!(
                    (got - want).abs() <= 1e-6 * want.abs().max(1.0),
                    "{encoding:?} bag {b}: {got} vs {want}"
                );
            }
        }
        println!(
            "{}",
            stdout.lines().find(|l| l.starts_with("model ")).unwrap()
        );
        print_firmware_line(
            &core,
            bytes.len(),
            &lines,
            instructions_per_tick(&stdout),
            musk1.n_instances() as u64,
        );
    }
}

#[test]
fn set_kernel_svm_estimates_its_kernel_on_an_emulated_cortex_m4() {
    // The musk1 k∧ SVM (support bags stored) on the device in every encoding of its
    // weights: every decision estimates k∧ against the 55 stored bags with the core's
    // estimator in soft f64.
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let model = deploy::train(&musk1, None, deploy::svm(EmpiricalMap::None));
    for encoding in [Encoding::F32, Encoding::Q15, Encoding::Q7] {
        run_svm_on_device(&model, encoding, &musk1, &smallest(&musk1, 4), "svm");
    }
}

#[test]
fn mi_kernel_svm_runs_on_an_emulated_cortex_m4() {
    // Weka MISMO's setting on musk1 (MI kernel, γ = 0.01, C = 1, min–max scaling) in
    // every encoding: each decision sums the RBF over the bag's instances against every
    // stored instance, in soft f64 on the device.
    use mil_toolkit::classifier::svm::SetKernelSvm;
    use mil_toolkit::classifier::ClassifierParams;
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let model = deploy::train(&musk1, None, ClassifierParams::Svm(SetKernelSvm::mismo()));
    for encoding in [Encoding::F32, Encoding::Q15, Encoding::Q7] {
        run_svm_on_device(
            &model,
            encoding,
            &musk1,
            &smallest(&musk1, 4),
            "mi-kernel svm",
        );
    }
}

#[test]
fn miles_runs_on_an_emulated_cortex_m4() {
    // MILES at the host's defaults on musk1 (its 40 selected prototypes) in every
    // encoding, on all 92 bags: one pass over a bag's instances against the prototypes,
    // then one expf per prototype. Labels equal the host model's on every bag.
    use mil_toolkit::classifier::miles::Miles;
    use mil_toolkit::classifier::ClassifierParams;
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let model = deploy::train(&musk1, None, ClassifierParams::Miles(Miles::default()));
    let all: Vec<usize> = (0..musk1.n_bags()).collect();
    for encoding in [Encoding::F32, Encoding::Q15, Encoding::Q7] {
        let bytes = run_svm_on_device(&model, encoding, &musk1, &all, "miles");
        let core = Model::parse(&bytes).unwrap();
        println!(
            "firmware: miles {}: {} prototypes, the host model's label on {} of {} bags",
            encoding.name(),
            core.miles().unwrap().n_prototypes(),
            all.len(),
            all.len()
        );
    }
}

#[test]
fn instance_methods_run_on_an_emulated_cortex_m4() {
    // The instance-level methods the core scores, at their defaults on musk1 in Q15, on
    // all 92 bags: a linear mi-SVM, MI-Wrapper and sMIL (linear instance scores; max,
    // mean and geometric pooling) and EM-DD (one MILES prototype). Labels equal the host
    // model's.
    use mil_toolkit::classifier::dd::{Dd, DdAlgorithm};
    use mil_toolkit::classifier::mi_svm::MiSvm;
    use mil_toolkit::classifier::mi_wrapper::MiWrapper;
    use mil_toolkit::classifier::smil::Smil;
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    for (name, params) in [
        ("mi-svm", MiSvm::default().into()),
        ("mi-wrapper", MiWrapper::default().into()),
        ("smil", Smil::default().into()),
    ] {
        let model = deploy::train(&musk1, None, params);
        let (_, agree) = run_on_device(&musk1, &model, Encoding::Q15);
        assert_eq!(agree, musk1.n_bags(), "{name}");
        println!(
            "firmware: {name} q15: the host model's label on {agree} of {} bags",
            musk1.n_bags()
        );
    }
    let em_dd = deploy::train(
        &musk1,
        None,
        Dd::default().algorithm(DdAlgorithm::EmDd).into(),
    );
    let all: Vec<usize> = (0..musk1.n_bags()).collect();
    run_svm_on_device(&em_dd, Encoding::Q15, &musk1, &all, "em-dd");
    println!(
        "firmware: em-dd q15: one prototype, the host model's label on {} of {} bags",
        all.len(),
        all.len()
    );
}

/// The `n` smallest bags of `data` (fewest instances, then first): enough to time a
/// decision of an SVM over stored bags while the emulated run stays short.
fn smallest(data: &mil_toolkit::Dataset, n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..data.n_bags()).collect();
    order.sort_by_key(|&b| (data.bag(b).len(), b));
    order.truncate(n);
    order
}

/// Runs an SVM over stored bags or MILES (`host`, exported in `encoding`) on the bags
/// `chosen` of `data`: each label and decision value equals the host-side core's on the
/// same bytes (the same IEEE f64 arithmetic and seeds), each label the host model's, each
/// value within the core's stated bound of the host's; prints the per-bag instructions
/// (prefixed `what`) and the summary line. Returns the model's bytes.
fn run_svm_on_device(
    host_model: &mil_toolkit::model::HostModel,
    encoding: Encoding,
    data: &mil_toolkit::Dataset,
    chosen: &[usize],
    what: &str,
) -> Vec<u8> {
    let (compact, _) = Compact::from_host(host_model).unwrap();
    let bytes = export(&compact, encoding, data).unwrap();
    let core = Model::parse(&bytes).unwrap();
    let host = host_model.scores(data.select(chosen)).unwrap();
    let stdout = run_firmware(&bytes, &deploy::bags_bin(&data.copy_bags(chosen)), &["svm"]);
    let lines = bag_lines(&stdout);
    assert_eq!(lines.len(), chosen.len(), "{stdout}");
    let per_tick = instructions_per_tick(&stdout);
    for (i, (line, &b)) in lines.iter().zip(chosen).enumerate() {
        let d = core_svm_decide(&core, data.bag(b)).unwrap();
        // The device prints f as an f32.
        assert_eq!(line.label, d.label, "{what} {encoding:?} bag {b}");
        let f = line.scores[1] as f64;
        assert!(
            (f - d.value).abs() <= 1e-6 * d.value.abs().max(1.0),
            "{what} {encoding:?} bag {b}: {f} vs {}",
            d.value
        );
        assert_eq!(
            line.label,
            host.label(i),
            "{what} {encoding:?} bag {b} vs the host"
        );
        let want = host_scores_as_compact(host_model, host.row(i))[1];
        assert!((f - want).abs() <= d.bound + 1e-6 * f.abs().max(1.0));
        println!(
            "{what} {} bag {b} ({} instances): {:.0} instructions",
            encoding.name(),
            data.bag(b).len(),
            line.ticks as f64 * per_tick
        );
    }
    let instances: usize = chosen.iter().map(|&b| data.bag(b).len()).sum();
    print_firmware_line(&core, bytes.len(), &lines, per_tick, instances as u64);
    println!(
        "{}",
        stdout.lines().find(|l| l.starts_with("model ")).unwrap()
    );
    println!(
        "{}",
        stdout.lines().find(|l| l.starts_with("stack ")).unwrap()
    );
    bytes
}

/// Runs `host` exported in `encoding` on every bag of `data` on the device; checks each
/// bag's label and scores against the host-side core (the same code on the same bytes)
/// and counts the bags where the host model agrees; prints the summary line. Returns the
/// instructions per bag and the bags the host model labels alike.
fn run_on_device(
    data: &mil_toolkit::Dataset,
    host: &mil_toolkit::model::HostModel,
    encoding: Encoding,
) -> (f64, usize) {
    let (compact, _) = Compact::from_host(host).unwrap();
    run_compact_on_device(data, host, &compact, encoding)
}

/// [`run_on_device`] for a compact form of `host` (e.g. with its projection folded).
fn run_compact_on_device(
    data: &mil_toolkit::Dataset,
    host: &mil_toolkit::model::HostModel,
    compact: &Compact,
    encoding: Encoding,
) -> (f64, usize) {
    let host_scores = host.scores(data).unwrap();
    let bytes = export(compact, encoding, data).unwrap();
    let core = Model::parse(&bytes).unwrap();
    let stdout = run_firmware(&bytes, &deploy::bags_bin(data), &[]);
    let lines = bag_lines(&stdout);
    assert_eq!(lines.len(), data.n_bags(), "{stdout}");
    let mut agree = 0;
    for (b, line) in lines.iter().enumerate() {
        assert_matches_core(line, &core, data.bag(b), &format!("{encoding:?} bag {b}"));
        agree += usize::from(line.label == host_scores.label(b));
    }
    let per_tick = instructions_per_tick(&stdout);
    print_firmware_line(
        &core,
        bytes.len(),
        &lines,
        per_tick,
        data.n_instances() as u64,
    );
    let ticks: u64 = lines.iter().map(|l| l.ticks).sum();
    (ticks as f64 * per_tick / lines.len() as f64, agree)
}

#[test]
fn every_encoding_and_citation_knn_run_on_an_emulated_cortex_m4() {
    // The musk1 B-MIDA (d = 10) + MILR model in f32 and Q7 (Q15 has its own test), and
    // B-MIDA + Citation-kNN (R = 2, C = 4, the 92 bags as references) in every encoding:
    // one summary line each, labels and scores as the host-side core computes them.
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let milr = deploy::musk1_firmware_model(&musk1);
    for encoding in [Encoding::F32, Encoding::Q7] {
        let (_, agree) = run_on_device(&musk1, &milr, encoding);
        assert_eq!(agree, musk1.n_bags(), "{encoding:?}: host model labels");
    }
    // The same model with B-MIDA folded into MILR's score row (one 166-wide row).
    let folded = Compact::from_host(&milr)
        .unwrap()
        .0
        .fold_projection()
        .unwrap();
    let (_, agree) = run_compact_on_device(&musk1, &milr, &folded, Encoding::Q15);
    println!(
        "firmware: the folded Q15 model above gives the host model's label on {agree} of {} bags",
        musk1.n_bags()
    );
    let knn = deploy::train(
        &musk1,
        Some((mil_toolkit::projection::ProjectionKind::Bmida, 10)),
        deploy::citation_knn(mil_toolkit::classifier::citation_knn::Scaling::Auto),
    );
    let references = musk1.n_instances() as f64;
    let mut agreement = Vec::new();
    for encoding in [Encoding::F32, Encoding::Q15, Encoding::Q7] {
        let (per_bag, agree) = run_on_device(&musk1, &knn, encoding);
        // Every query instance meets every reference instance in d = 10 dimensions.
        let squared_differences =
            musk1.n_instances() as f64 / musk1.n_bags() as f64 * references * 10.0;
        println!(
            "firmware: citation-knn {}: {:.1} instructions per squared difference (all of a bag's classification over the squared differences it computes); host labels on {agree} of {} bags",
            mil_core::keyword::Keyword::name(encoding),
            per_bag / squared_differences,
            musk1.n_bags()
        );
        agreement.push(agree);
    }
    // f32 computes what the host computes, to f32 rounding.
    assert_eq!(agreement[0], musk1.n_bags());
}

/// The board example's crate (`examples/board`).
fn board_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/board")
}

/// `cargo ARGS` in `examples/board`, with the environment's build overrides removed and
/// the example's own `data/` embedded (or `data`'s `model.milm` and `bags.bin`).
fn cargo_board(args: &[&str], data: Option<&Path>) -> std::process::Output {
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .args(args)
        .current_dir(board_dir())
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("MIL_BOARD_DATA");
    if let Some(dir) = data {
        cargo.env("MIL_BOARD_DATA", dir);
    }
    cargo.output().expect("cargo runs")
}

/// The board example's `bags.bin`: `u32` bags, `u32` D, then per bag `u32` n and n × D
/// `i16` counts (every feature of `data` an integer within `i16`).
fn board_bags(data: &mil_toolkit::Dataset) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend((data.n_bags() as u32).to_le_bytes());
    out.extend((data.dim() as u32).to_le_bytes());
    for b in 0..data.n_bags() {
        let bag = data.bag(b);
        out.extend((bag.len() as u32).to_le_bytes());
        for &v in bag.as_slice() {
            let count = v as i16;
            assert_eq!(f64::from(count), v, "bag {b}: not an i16 count");
            out.extend(count.to_le_bytes());
        }
    }
    out
}

/// Runs the board example on the emulated Cortex-M4 with `embedded` (the model's and the
/// bags' bytes; `None`: the example's own data), checks that it printed `expected`, one
/// line per bag, and that it builds for a Cortex-M0 (no FPU, no DSP extension) from the
/// same source.
fn run_board(what: &str, embedded: Option<(&[u8], &[u8])>, expected: &[String]) {
    let dir = embedded.map(|(model, bags)| {
        let dir = std::env::temp_dir().join(format!("mil-board-{what}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("model.milm"), model).unwrap();
        std::fs::write(dir.join("bags.bin"), bags).unwrap();
        dir
    });
    let _one_at_a_time = FIRMWARE.lock().unwrap_or_else(|e| e.into_inner());
    let run = cargo_board(&["run", "--release", "--quiet"], dir.as_deref());
    let m0 = cargo_board(
        &[
            "build",
            "--release",
            "--quiet",
            "--target",
            "thumbv6m-none-eabi",
        ],
        dir.as_deref(),
    );
    if let Some(dir) = &dir {
        std::fs::remove_dir_all(dir).ok();
    }
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "board example ({what}) failed ({}):\n{stdout}\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    let printed: Vec<&str> = stdout.lines().filter(|l| l.starts_with("bag ")).collect();
    assert_eq!(printed, expected, "board example ({what})");
    assert!(
        m0.status.success(),
        "the thumbv6m build ({what}) failed (`rustup target add thumbv6m-none-eabi`; .ci/run does it):\n{}",
        String::from_utf8_lossy(&m0.stderr)
    );
}

#[test]
fn the_board_example_runs_on_an_emulated_cortex_m4_and_builds_for_a_cortex_m0() {
    // The host's core on the example's own data: the labels the board must print.
    let model_bytes = std::fs::read(board_dir().join("data/model.milm")).unwrap();
    let bags = std::fs::read(board_dir().join("data/bags.bin")).unwrap();
    let model = Model::parse(&model_bytes).unwrap();
    let word = |at: usize| u32::from_le_bytes(bags[at..at + 4].try_into().unwrap()) as usize;
    let (n_bags, d) = (word(0), word(4));
    assert_eq!(d, model.input_dim());
    let mut at = 8;
    let mut expected = Vec::new();
    for _ in 0..n_bags {
        let n = word(at);
        at += 4;
        let raw: Vec<i16> = bags[at..at + 2 * n * d]
            .chunks_exact(2)
            .map(|p| i16::from_le_bytes([p[0], p[1]]))
            .collect();
        at += 2 * n * d;
        let mut q = vec![0i16; n * d];
        for (x, y) in raw.chunks_exact(d).zip(q.chunks_exact_mut(d)) {
            model.quantize_fixed(x, 0, y).unwrap();
        }
        // The buffers the firmware sizes at compile time from the bytes.
        let mut scratch = vec![0.0f32; mil_core::model::scratch_bound(&model_bytes, 40)];
        let mut scores = vec![0.0f32; mil_core::model::header_dims(&model_bytes).1];
        let decision = model
            .classify(mil_core::Instances::I16(&q), &mut scratch, &mut scores)
            .unwrap();
        expected.push(format!("bag {}: label {}", expected.len(), decision.label));
    }
    // Three musk1 positives, then three negatives: the model gets them all right.
    let labels: Vec<&str> = expected.iter().map(|l| &l[l.len() - 1..]).collect();
    assert_eq!(labels, ["1", "1", "1", "0", "0", "0"]);

    run_board("linear", None, &expected);
}

#[test]
fn the_board_example_runs_a_miles_model_on_an_emulated_cortex_m4_and_builds_for_a_cortex_m0() {
    // musk1's MILES model at the defaults in Q15 embedded in the board example
    // (`MIL_BOARD_DATA`) with all 92 musk1 bags as i16 counts: the model's kind chooses
    // MILES's path at compile time, each instance is widened to f64 and added to one pass
    // over its bag, and the label printed for every bag is the host model's (and the
    // host-side core's on the same bytes).
    use mil_toolkit::classifier::miles::Miles;
    use mil_toolkit::classifier::ClassifierParams;
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let host = deploy::train(&musk1, None, ClassifierParams::Miles(Miles::default()));
    let scores = host.scores(&musk1).unwrap();
    let (compact, _) = Compact::from_host(&host).unwrap();
    let bytes = export(&compact, Encoding::Q15, &musk1).unwrap();
    let core = Model::parse(&bytes).unwrap();
    let mut expected = Vec::new();
    for b in 0..musk1.n_bags() {
        let d = core_svm_decide(&core, musk1.bag(b)).unwrap();
        assert_eq!(d.label, scores.label(b), "bag {b}: the host-side core");
        expected.push(format!("bag {b}: label {}", d.label));
    }
    run_board("MILES", Some((&bytes, &board_bags(&musk1))), &expected);
    println!(
        "firmware: board example, miles q15 ({} bytes): the host model's label on {} of {} musk1 bags",
        bytes.len(),
        expected.len(),
        musk1.n_bags()
    );
}

#[test]
fn the_board_example_runs_mi_vlad_and_mi_fv_on_an_emulated_cortex_m4_and_builds_for_a_cortex_m0() {
    // musk1's miVLAD (Q15) and miFV (Q7) models at the defaults embedded in the board
    // example with all 92 musk1 bags as i16 counts: the model's kind chooses the pass and
    // sizes its buffers at compile time (`mi_vlad_buffers`), each instance is widened to
    // f64 and added to one pass over its bag, and the label printed for every bag is the
    // host model's (and the host-side core's).
    use mil_toolkit::classifier::mi_vlad::MiVlad;
    use mil_toolkit::classifier::ClassifierParams;
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    for (name, params, encoding) in [
        ("miVLAD", MiVlad::vlad(), Encoding::Q15),
        ("miFV", MiVlad::fisher(), Encoding::Q7),
    ] {
        let host = deploy::train(&musk1, None, ClassifierParams::MiVlad(params));
        let scores = host.scores(&musk1).unwrap();
        let (compact, _) = Compact::from_host(&host).unwrap();
        let bytes = export(&compact, encoding, &musk1).unwrap();
        let core = Model::parse(&bytes).unwrap();
        let mut expected = Vec::new();
        for b in 0..musk1.n_bags() {
            let d = core_svm_decide(&core, musk1.bag(b)).unwrap();
            assert_eq!(
                d.label,
                scores.label(b),
                "{name} bag {b}: the host-side core"
            );
            expected.push(format!("bag {b}: label {}", d.label));
        }
        run_board(name, Some((&bytes, &board_bags(&musk1))), &expected);
        println!(
            "firmware: board example, {name} {encoding:?} ({} bytes): the host model's label on {} of {} musk1 bags",
            bytes.len(),
            expected.len(),
            musk1.n_bags()
        );
    }
}

#[test]
fn mi_vlad_runs_on_an_emulated_cortex_m4() {
    // miVLAD and miFV at the host's defaults on musk1 (one centre, one mixture component)
    // in Q15 on all 92 bags: one pass over a bag's instances adding residuals (miVLAD) or
    // posterior-weighted standardised residuals and their squares (miFV), then the signed
    // square root, the ℓ2 normalisation and the logistic score. Labels equal the host
    // model's on every bag, and each label and value the host-side core's on the same
    // bytes.
    use mil_toolkit::classifier::mi_vlad::MiVlad;
    use mil_toolkit::classifier::ClassifierParams;
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    for (name, params) in [("mi-vlad", MiVlad::vlad()), ("mi-fv", MiVlad::fisher())] {
        let model = deploy::train(&musk1, None, ClassifierParams::MiVlad(params));
        let host = model.scores(&musk1).unwrap();
        let (compact, _) = Compact::from_host(&model).unwrap();
        let bytes = export(&compact, Encoding::Q15, &musk1).unwrap();
        let core = Model::parse(&bytes).unwrap();
        let stdout = run_firmware(&bytes, &deploy::bags_bin(&musk1), &["svm"]);
        let lines = bag_lines(&stdout);
        assert_eq!(lines.len(), musk1.n_bags(), "{stdout}");
        let mut agree = 0;
        for (b, line) in lines.iter().enumerate() {
            let d = core_svm_decide(&core, musk1.bag(b)).unwrap();
            assert_eq!(line.label, d.label, "{name} bag {b}");
            let f = line.scores[1] as f64;
            assert!(
                (f - d.value).abs() <= 1e-6 * d.value.abs().max(1.0),
                "{name} bag {b}: {f} vs {}",
                d.value
            );
            agree += usize::from(line.label == host.label(b));
        }
        let per_tick = instructions_per_tick(&stdout);
        print_firmware_line(
            &core,
            bytes.len(),
            &lines,
            per_tick,
            musk1.n_instances() as u64,
        );
        println!(
            "firmware: {name} q15: the host model's label on {agree} of {} bags",
            musk1.n_bags()
        );
        assert_eq!(agree, musk1.n_bags(), "{name}");
    }
}

/// Flash and static RAM of the firmware ELF just built (sections `.vector_table`,
/// `.text`, `.rodata`, `.data`; `.data`, `.bss`), from `llvm-objdump -h`; the caller
/// holds [`FIRMWARE`].
fn firmware_sections() -> (u64, u64) {
    let elf = firmware_dir().join("target/thumbv7em-none-eabihf/release/mil-firmware");
    let (mut flash, mut ram) = (0, 0);
    for (name, size) in sections(&elf) {
        if matches!(&*name, ".vector_table" | ".text" | ".rodata" | ".data") {
            flash += size;
        }
        if matches!(&*name, ".data" | ".bss") {
            ram += size;
        }
    }
    assert!(flash > 0, "no flash sections in {}", elf.display());
    (flash, ram)
}

#[test]
fn attention_runs_on_an_emulated_cortex_m4() {
    // The attention network at the paper's size (hidden 256: 166 → 256 → 128, 64
    // attention units) on musk1 in Q15 and Q7 and on elephant in Q15, and the compact
    // variant (hidden 64) on musk1 in Q15 within 32 KiB, each trained once (8 epochs,
    // seed 1): one pass over each bag's instances with the online softmax.
    // Labels equal the host model's on every bag; label, logit and witness equal the
    // host-side core's on the same bytes. Prints flash (the firmware less its embedded
    // bags), the pass's RAM (scratch and stack), and instructions per instance beside the
    // dense layers' multiply-adds, which bound the instructions per instance at 4 each.
    use mil_toolkit::classifier::attention::{AttentionMil, Pooling};
    use mil_toolkit::classifier::ClassifierParams;
    use mil_toolkit::export::core_attention_decide;
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let elephant = mil_toolkit::data::load("elephant").unwrap();
    let params = AttentionMil::default()
        .pooling(Pooling::Attention)
        .epochs(8)
        .seed(1);
    for (data, hidden, encodings) in [
        (&musk1, 256, &[Encoding::Q15, Encoding::Q7][..]),
        (&musk1, 64, &[Encoding::Q15][..]),
        (&elephant, 256, &[Encoding::Q15][..]),
    ] {
        let params = ClassifierParams::Attention(params.hidden(hidden));
        let model = deploy::train(data, None, params);
        let host = model.scores(data).unwrap();
        let (compact, _) = Compact::from_host(&model).unwrap();
        let bags = deploy::bags_bin(data);
        for &encoding in encodings {
            let bytes = export(&compact, encoding, data).unwrap();
            let core = Model::parse(&bytes).unwrap();
            let net = core.attention().unwrap();
            let (stdout, (flash, _)) = {
                let _one_at_a_time = FIRMWARE.lock().unwrap_or_else(|e| e.into_inner());
                let stdout = run_firmware_locked(&bytes, &bags, &["svm"]);
                (stdout, firmware_sections())
            };
            let lines = bag_lines(&stdout);
            assert_eq!(lines.len(), data.n_bags(), "{stdout}");
            let mut agree = 0;
            for (b, line) in lines.iter().enumerate() {
                let (d, logits) = core_attention_decide(&core, data.bag(b)).unwrap();
                let at = format!("{} {encoding:?} bag {b}", data.name());
                assert_eq!(line.label, d.label, "{at}");
                let witness = line_field(&stdout, b, "witness");
                assert_eq!(witness, d.witness as i64, "{at}: witness");
                let logit = line.scores[1];
                assert!(
                    (logit - logits[0]).abs() <= 1e-6 * logits[0].abs().max(1.0),
                    "{at}: {logit} vs {}",
                    logits[0]
                );
                agree += usize::from(line.label == host.label(b));
            }
            let per_tick = instructions_per_tick(&stdout);
            let ticks: u64 = lines.iter().map(|l| l.ticks).sum();
            let per_instance = ticks as f64 * per_tick / data.n_instances() as f64;
            let macs = net.macs_per_instance();
            let stack: u64 = stdout
                .lines()
                .find_map(|l| l.strip_prefix("stack parse "))
                .and_then(|l| l.split(' ').nth(2))
                .and_then(|v| v.parse().ok())
                .expect("a stack line");
            let scratch = 4 * net.scratch_len() + 2 * net.ints_len();
            println!(
                "firmware: attention {} {} hidden {}: model {} bytes, flash {} bytes (firmware less bags), RAM {} bytes (scratch {scratch} + stack {stack}), {per_instance:.0} instructions per instance, {macs} multiply-adds ({:.2} per multiply-add); the host model's label on {agree} of {} bags",
                data.name(),
                encoding.name(),
                net.hidden(),
                bytes.len(),
                flash - bags.len() as u64,
                scratch as u64 + stack,
                per_instance / macs as f64,
                data.n_bags()
            );
            assert_eq!(agree, data.n_bags(), "{} {encoding:?}", data.name());
            // The pass costs at most 4 instructions per multiply-add of its dense layers:
            // the z-score, the rescales, the activations and the bound stay a minor part.
            assert!(
                per_instance <= 4.0 * macs as f64,
                "{per_instance:.0} instructions per instance for {macs} multiply-adds"
            );
            if hidden == 64 {
                assert!(bytes.len() <= 32 * 1024, "{} bytes", bytes.len());
            }
        }
    }
}

/// The integer field `name` of bag `b`'s line.
fn line_field(stdout: &str, b: usize, name: &str) -> i64 {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&format!("bag {b} n ")))
        .unwrap();
    let at = line.find(&format!(" {name} ")).unwrap() + name.len() + 2;
    line[at..].split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn the_board_example_runs_an_attention_network_on_an_emulated_cortex_m4_and_builds_for_a_cortex_m0()
{
    // musk1's compact attention network (hidden 32, 8 epochs, seed 1) in Q15 embedded in the
    // board example with all 92 musk1 bags as i16 counts: the model's kind chooses the
    // network's path and sizes its buffers at compile time (`attention_buffers`), each
    // instance is widened to f64 and added to one pass over its bag, and the label
    // printed for every bag is the host model's (and the host-side core's).
    use mil_toolkit::classifier::attention::AttentionMil;
    use mil_toolkit::classifier::ClassifierParams;
    use mil_toolkit::export::core_attention_decide;
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let params = AttentionMil::default().hidden(32).epochs(8).seed(1);
    let host = deploy::train(&musk1, None, ClassifierParams::Attention(params));
    let scores = host.scores(&musk1).unwrap();
    let (compact, _) = Compact::from_host(&host).unwrap();
    let bytes = export(&compact, Encoding::Q15, &musk1).unwrap();
    let core = Model::parse(&bytes).unwrap();
    let mut expected = Vec::new();
    for b in 0..musk1.n_bags() {
        let (d, _) = core_attention_decide(&core, musk1.bag(b)).unwrap();
        assert_eq!(d.label, scores.label(b), "bag {b}: the host-side core");
        expected.push(format!("bag {b}: label {}", d.label));
    }
    run_board("attention", Some((&bytes, &board_bags(&musk1))), &expected);
    println!(
        "firmware: board example, attention q15 ({} bytes): the host model's label on {} of {} musk1 bags",
        bytes.len(),
        expected.len(),
        musk1.n_bags()
    );
}
