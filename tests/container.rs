//! The model container end to end: exact values of projection and pooling on tiny
//! hand-made models, the stated fixed-point error bound over many random models, and a
//! seeded property test ("fuzz") over random and mutated byte strings: every input parses
//! to a model or an error value, and inference on whatever parses never panics.

use mil_core::box_kernel::{count::exact_ln, BoxKernel, Grid, Method};
use mil_core::container::layout::{self, entry, entry_at, header, model_checksum};
use mil_core::container::{tag, MAGIC, VERSION};
use mil_core::score::{bag_score_bound, Pooling};
use mil_core::{Encoding, Error, Instances, Model};
use mil_toolkit::classifier::miles::{Miles, MilesEmbedding, MilesModel};
use mil_toolkit::classifier::svm::SvmDeployment;
use mil_toolkit::export::{
    core_classify, core_svm_decide, export, export_with, Affine, Compact, CoreBag, ExportOptions,
    Head, InputSteps, Rounding,
};
use mil_toolkit::kernel::GridData;
use mil_toolkit::projection::{LinearProjection, ProjectionKind};
use mil_toolkit::Dataset;
use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

#[allow(dead_code)] // each test binary uses part of the shared helpers
mod deploy;
use deploy::dataset;

fn projection(mean: Vec<f64>, scale: Vec<f64>, matrix: Vec<f64>, d: usize) -> LinearProjection {
    LinearProjection {
        kind: ProjectionKind::Pca,
        mean,
        scale,
        matrix,
        output_dim: d,
        diagnostics: vec![],
    }
}

#[test]
fn f32_projection_exact_value_with_a_constant_feature() {
    // y = 3·(x0 − 1)/2 + 0·x1 (σ1 = 0): x = (5, 100) gives 6, exactly representable.
    let p = projection(vec![1.0, 2.0], vec![2.0, 0.0], vec![3.0, 5.0], 1);
    let train = dataset(2, &[vec![vec![5.0, 100.0]]], &[0]);
    let compact = Compact {
        stage: Some(Affine::from_projection(&p)),
        head: Head::None,
    };
    let bytes = export(&compact, Encoding::F32, &train).unwrap();
    let model = Model::parse(&bytes).unwrap();
    let mut y = [0.0f32; 1];
    model
        .project(Instances::F32(&[5.0, 100.0]), &mut y)
        .unwrap();
    assert_eq!(y[0], 6.0);
    model.project(Instances::F32(&[1.0, -7.0]), &mut y).unwrap();
    assert_eq!(y[0], 0.0);
}

#[test]
fn q15_projection_exact_value() {
    // Training range max|x0| = 16383.5/2 → input step s = 2·max/32767 = 0.5 exactly;
    // W = G'·s = (3/2)·0.5 = 0.75 → q = 32767, t = 0.75/32767. x0 = 5 → qx = 10;
    // ŷ = t·32767·10 + b = 7.5 − 1.5 = 6 up to f32 rounding of t.
    let p = projection(vec![1.0, 2.0], vec![2.0, 0.0], vec![3.0, 5.0], 1);
    let train = dataset(2, &[vec![vec![8191.75, 100.0]]], &[0]);
    let compact = Compact {
        stage: Some(Affine::from_projection(&p)),
        head: Head::None,
    };
    let bytes = export(&compact, Encoding::Q15, &train).unwrap();
    let model = Model::parse(&bytes).unwrap();
    let mut q = [0i16; 2];
    model.quantize_instance(&[5.0, 100.0], &mut q).unwrap();
    assert_eq!(q[0], 10);
    let mut y = [0.0f32; 1];
    model.project(Instances::I16(&q), &mut y).unwrap();
    assert!((y[0] - 6.0).abs() <= 1e-6, "{}", y[0]);
    // f32 instances are refused by a quantised model, not silently misread.
    assert!(model
        .project(Instances::F32(&[5.0, 100.0]), &mut y)
        .is_err());
}

#[test]
fn a_diagonal_stage_is_stored_as_two_rows_and_scales_each_feature() {
    // z = ((x0 − 1)/2, 0, (x2 + 4)/0.5): the z-score of Citation-kNN on raw features,
    // with a constant second feature. f32: exact; Q15/Q7 (steps 2^e): within the bound.
    let stage = Affine::identity(3).then_scale(&[1.0, 2.0, -4.0], &[2.0, 0.0, 0.5]);
    let diagonal = stage.diagonal().unwrap();
    assert_eq!(diagonal, vec![0.5, 0.0, 2.0]);
    let train = dataset(
        3,
        &[vec![vec![5.0, 2.0, -3.0], vec![-7.25, 2.0, 10.5]]],
        &[0],
    );
    let compact = Compact {
        stage: Some(stage.clone()),
        head: Head::None,
    };
    let dense = export(
        &Compact {
            stage: Some(Affine::from_projection(&projection(
                vec![0.0; 3],
                vec![1.0; 3],
                vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0],
                2,
            ))),
            head: Head::None,
        },
        Encoding::F32,
        &train,
    )
    .unwrap();
    let mut y = [0.0f32; 3];
    for encoding in [Encoding::F32, Encoding::Q15, Encoding::Q7] {
        let bytes = export(&compact, encoding, &train).unwrap();
        let model = Model::parse(&bytes).unwrap();
        let proj = model.projection().unwrap();
        assert!(proj.weights().is_none(), "{encoding:?}: stored densely");
        assert_eq!(model.projected_dim(), 3);
        for x in [[5.0f32, 2.0, -3.0], [-7.25, 2.0, 10.5], [0.3, 2.0, -4.1]] {
            let mut want = [0.0f64; 3];
            stage.apply(&x.map(f64::from), &mut want);
            if encoding == Encoding::F32 {
                model.project(Instances::F32(&x), &mut y).unwrap();
                assert_eq!(y.map(f64::from), want, "{x:?}");
                continue;
            }
            let mut q = [0i16; 3];
            assert_eq!(model.quantize_instance(&x, &mut q).unwrap(), 0);
            model.project(Instances::I16(&q), &mut y).unwrap();
            for k in 0..3 {
                let err = (y[k] as f64 - want[k]).abs();
                let bound = proj.error_bound(k, &q) as f64;
                assert!(err <= bound, "{encoding:?} {x:?} k {k}: {err} > {bound}");
            }
            // The steps are the finest the range allows: the bound is tiny.
            assert!(proj.error_bound(2, &q) < 1e-3, "{encoding:?}");
        }
    }
    // A non-diagonal (here: not square) stage keeps the dense layout.
    assert!(Model::parse(&dense)
        .unwrap()
        .projection()
        .unwrap()
        .weights()
        .is_some());
}

/// A binary linear model on one feature whose instance logit is the feature itself.
fn identity_logit_model(pooling: Pooling, beta: f64, train: &Dataset) -> Vec<u8> {
    let p = projection(vec![0.0], vec![1.0], vec![1.0], 1);
    let compact = Compact {
        stage: Some(Affine::from_projection(&p)),
        head: Head::Linear {
            weights: vec![1.0],
            bias: vec![0.0],
            pooling,
            beta,
        },
    };
    export(&compact, Encoding::F32, train).unwrap()
}

#[test]
fn binary_pooling_exact_values() {
    // Instance logits 0 and ln 3: probabilities 1/2 and 3/4.
    let l3 = 3f64.ln();
    let train = dataset(1, &[vec![vec![0.0], vec![l3]]], &[1]);
    let e15 = 1.5f64.exp();
    let e225 = 2.25f64.exp();
    let cases = [
        (Pooling::Max, 0.75),
        (Pooling::Mean, 0.625),
        (Pooling::Geometric, 3f64.sqrt() / (1.0 + 3f64.sqrt())),
        (Pooling::Softmax, (0.5 * e15 + 0.75 * e225) / (e15 + e225)),
        (Pooling::NoisyOr, 0.875),
    ];
    for (pooling, want) in cases {
        let bytes = identity_logit_model(pooling, 3.0, &train);
        let model = Model::parse(&bytes).unwrap();
        let (decision, scores) = core_classify(&model, train.bag(0)).unwrap();
        assert!(
            (decision.score as f64 - want).abs() < 1e-6,
            "{pooling:?}: {} vs {want}",
            decision.score
        );
        assert_eq!(decision.label, 1);
        assert!((scores[0] + scores[1] - 1.0).abs() < 1e-6);
    }
}

#[test]
fn multiclass_pooling_exact_values() {
    // Three classes one-vs-rest, instance scores z = (x, 0, −x) on one feature; one
    // instance x = ln 2 gives P = σ(z) = (2/3, 1/2, 1/3) for max, mean and geometric.
    let l2 = 2f64.ln();
    let train = dataset(1, &[vec![vec![l2]]], &[2]);
    let p = projection(vec![0.0], vec![1.0], vec![1.0], 1);
    let probs = [2.0 / 3.0, 0.5, 1.0 / 3.0];
    for pooling in [Pooling::Max, Pooling::Mean, Pooling::Geometric] {
        let compact = Compact {
            stage: Some(Affine::from_projection(&p)),
            head: Head::Linear {
                weights: vec![1.0, 0.0, -1.0],
                bias: vec![0.0; 3],
                pooling,
                beta: 3.0,
            },
        };
        let bytes = export(&compact, Encoding::F32, &train).unwrap();
        let model = Model::parse(&bytes).unwrap();
        assert_eq!(model.output_dim(), 3);
        let (decision, scores) = core_classify(&model, train.bag(0)).unwrap();
        for (s, w) in scores.iter().zip(probs) {
            assert!((*s as f64 - w).abs() < 1e-6, "{pooling:?}: {scores:?}");
        }
        assert_eq!(decision.label, 0);
    }
}

fn random_projection(rng: &mut Xoshiro256PlusPlus, dim: usize, d: usize) -> LinearProjection {
    let mut u =
        |lo: f64, hi: f64| lo + (hi - lo) * (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let mean = (0..dim).map(|_| u(-50.0, 50.0)).collect();
    let scale = (0..dim)
        .map(|j| if j % 7 == 3 { 0.0 } else { u(0.1, 40.0) })
        .collect();
    let matrix = (0..dim * d).map(|_| u(-1.0, 1.0)).collect();
    projection(mean, scale, matrix, d)
}

fn random_bags(rng: &mut Xoshiro256PlusPlus, dim: usize, n_bags: usize) -> Dataset {
    let mut u =
        |lo: f64, hi: f64| lo + (hi - lo) * (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let bags: Vec<Vec<Vec<f64>>> = (0..n_bags)
        .map(|b| {
            let n = 1 + b % 5;
            (0..n)
                .map(|_| (0..dim).map(|_| u(-300.0, 300.0)).collect())
                .collect()
        })
        .collect();
    let labels: Vec<usize> = (0..n_bags).map(|b| b % 2).collect();
    dataset(dim, &bags, &labels)
}

#[test]
fn integer_input_steps_make_quantising_a_copy_equal_to_the_general_path() {
    // Integer features (as an ADC gives them) exported with `InputSteps::Integer`: every
    // step is 1, `quantize_fixed(x, 0, ..)` copies x, and it equals `quantize_instance`
    // of the same values, for every dimension (copy blocks of 8 and a tail), an output
    // buffer longer than the instance, and the i16 extremes (−32768 is a valid input).
    // Other `frac_bits` take the general shift path and still agree with the f32 path.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    for dim in [1usize, 7, 8, 9, 16, 23, 166] {
        let p = random_projection(&mut rng, dim, 3);
        let mut data = random_bags(&mut rng, dim, 6);
        let rounded: Vec<f64> = data.features().iter().map(|v| v.round()).collect();
        data = data.with_features(dim, rounded).unwrap();
        let compact = Compact {
            stage: Some(Affine::from_projection(&p)),
            head: Head::None,
        };
        for encoding in [Encoding::Q15, Encoding::Q7] {
            let options = ExportOptions {
                rounding: Rounding::Feedback,
                input: InputSteps::Integer,
            };
            let bytes = export_with(&compact, encoding, &data, options).unwrap();
            let model = Model::parse(&bytes).unwrap();
            assert!((0..dim).all(|j| model.input_exponent(j) == Some(0)));
            assert_eq!(
                mil_toolkit::export::stored_input_steps(&model),
                Some(InputSteps::Integer)
            );
            for trial in 0..20 {
                let x: Vec<i16> = (0..dim)
                    .map(|j| match (j + trial) % 9 {
                        0 => i16::MIN,
                        1 => i16::MAX,
                        _ => (rng.next_u64() >> 48) as u16 as i16,
                    })
                    .collect();
                for frac_bits in [0, 1, 3, -2, 15] {
                    let mut fixed = vec![7i16; dim + 5];
                    let clipped = model.quantize_fixed(&x, frac_bits, &mut fixed).unwrap();
                    // The real values x · 2^−frac_bits, exact in f32.
                    let real: Vec<f32> = x
                        .iter()
                        .map(|&v| v as f32 * (-frac_bits as f32).exp2())
                        .collect();
                    let mut general = vec![0i16; dim];
                    let want = model.quantize_instance(&real, &mut general).unwrap();
                    assert_eq!(
                        &fixed[..dim],
                        &general[..],
                        "dim {dim} frac_bits {frac_bits}"
                    );
                    assert_eq!(clipped, want, "dim {dim} frac_bits {frac_bits}");
                    assert!(
                        fixed[dim..].iter().all(|&v| v == 7),
                        "wrote past the instance"
                    );
                    if frac_bits == 0 {
                        assert_eq!(fixed[..dim], x[..], "a copy");
                        assert_eq!(clipped, 0);
                    }
                }
            }
        }
        // A non-integer training value is refused, naming the option.
        let noisy: Vec<f64> = data.features().iter().map(|v| v + 0.25).collect();
        let noisy = data.with_features(dim, noisy).unwrap();
        let options = ExportOptions {
            rounding: Rounding::Nearest,
            input: InputSteps::Integer,
        };
        let err = export_with(&compact, Encoding::Q15, &noisy, options).unwrap_err();
        assert!(err.to_string().contains("invalid input = integer"), "{err}");
    }
}

#[test]
fn quantised_projection_error_stays_within_the_stated_bound() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let mut worst_ratio = 0.0f64;
    for trial in 0..40 {
        let dim = 1 + trial % 23 * 9;
        let d = 1 + trial % 6;
        let p = random_projection(&mut rng, dim, d);
        let data = random_bags(&mut rng, dim, 6);
        let roundings = [Rounding::Nearest, Rounding::Feedback];
        for (encoding, rounding) in [Encoding::Q15, Encoding::Q7]
            .into_iter()
            .flat_map(|e| roundings.map(|r| (e, r)))
        {
            let compact = Compact {
                stage: Some(Affine::from_projection(&p)),
                head: Head::None,
            };
            let bytes = export_with(&compact, encoding, &data, rounding).unwrap();
            let model = Model::parse(&bytes).unwrap();
            let proj = model.projection().unwrap();
            // (A 1 × 1 stage is diagonal: it has no weights to round.)
            match (proj.rounding_radius(0), rounding) {
                (None, _) => assert!(proj.weights().is_none()),
                (Some(r), Rounding::Nearest) => assert_eq!(r, 0.5),
                (Some(r), Rounding::Feedback) => assert!(r <= 1.0),
            }
            let mut exact = vec![0.0; d];
            let mut y = vec![0.0f32; d];
            for x in data.features().chunks_exact(dim) {
                p.apply_row(x, &mut exact);
                let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
                let mut q = vec![0i16; dim];
                assert_eq!(model.quantize_instance(&xf, &mut q).unwrap(), 0);
                model.project(Instances::I16(&q), &mut y).unwrap();
                for k in 0..d {
                    // One output alone (Q7: its row picked out of its stored pair) is the
                    // same as all of them at once.
                    let one = proj.output(k, Instances::I16(&q)).unwrap();
                    assert_eq!(one.to_bits(), y[k].to_bits(), "{encoding:?} k {k}");
                    let err = (y[k] as f64 - exact[k]).abs();
                    let bound = proj.error_bound(k, &q) as f64;
                    assert!(
                        err <= bound,
                        "trial {trial} {encoding:?} {rounding:?} k {k}: {err} > {bound}"
                    );
                    worst_ratio = worst_ratio.max(err / bound);
                }
            }
        }
    }
    // The bound is not vacuous: somewhere the error uses a noticeable part of it.
    assert!(worst_ratio > 0.05, "bound never approached: {worst_ratio}");
}

#[test]
fn a_format_1_model_still_reads_unless_its_q7_projection_has_two_rows() {
    // Format 2 changed one thing: Q7 projection rows are stored by pairs. A format 1
    // model reads as before wherever the layouts agree (f32, Q15, a one-row Q7 stage)
    // and is refused, not misread, where they do not.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let data = random_bags(&mut rng, 9, 4);
    for d in [1, 2, 3] {
        let p = random_projection(&mut rng, 9, d);
        let compact = Compact {
            stage: Some(Affine::from_projection(&p)),
            head: Head::None,
        };
        for encoding in [Encoding::F32, Encoding::Q15, Encoding::Q7] {
            let bytes = export(&compact, encoding, &data).unwrap();
            assert_eq!(layout::u16_at(&bytes, header::VERSION), VERSION);
            let mut old = bytes.clone();
            old[header::VERSION..header::VERSION + 2].copy_from_slice(&1u16.to_le_bytes());
            fix_checksum(&mut old);
            if encoding == Encoding::Q7 && d >= 2 {
                assert_eq!(
                    Model::parse(&old).unwrap_err(),
                    Error::BadModel(
                        "Q7 projection rows in the format 1 layout: export the model again"
                    ),
                    "d {d}"
                );
                // Its rows are stored by pairs, which the f32 dot refuses (NaN) rather
                // than misread.
                let model = Model::parse(&bytes).unwrap();
                let w = model.projection().unwrap().weights().unwrap();
                assert!(w.dot_f32(0, &[1.0; 9]).is_nan(), "d {d}");
                continue;
            }
            let (new, old) = (Model::parse(&bytes).unwrap(), Model::parse(&old).unwrap());
            let (mut a, mut b) = (vec![0f32; d], vec![0f32; d]);
            for x in data.features().chunks_exact(9) {
                let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
                let mut q = vec![0i16; 9];
                if encoding == Encoding::F32 {
                    new.project(Instances::F32(&xf), &mut a).unwrap();
                    old.project(Instances::F32(&xf), &mut b).unwrap();
                } else {
                    new.quantize_instance(&xf, &mut q).unwrap();
                    new.project(Instances::I16(&q), &mut a).unwrap();
                    old.project(Instances::I16(&q), &mut b).unwrap();
                }
                assert_eq!(a, b, "{encoding:?} d {d}");
            }
        }
    }
}

/// The payload offset of section `t` in a model's bytes.
fn section_offset(bytes: &[u8], t: u16) -> Option<usize> {
    let n = layout::u16_at(bytes, header::N_SECTIONS) as usize;
    (0..n).find_map(|i| {
        let e = entry_at(i);
        (layout::u16_at(bytes, e + entry::TAG) == t)
            .then(|| layout::u32_at(bytes, e + entry::OFFSET) as usize)
    })
}

#[test]
fn error_feedback_falls_back_to_nearest_above_its_feature_cap() {
    use mil_toolkit::export::rounding::MAX_FEEDBACK_DIM;
    use mil_toolkit::export::stored_rounding;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
    for (dim, want) in [
        (MAX_FEEDBACK_DIM, Rounding::Feedback),
        (MAX_FEEDBACK_DIM + 1, Rounding::Nearest),
    ] {
        let p = random_projection(&mut rng, dim, 2);
        let data = random_bags(&mut rng, dim, 3);
        let compact = Compact {
            stage: Some(Affine::from_projection(&p)),
            head: Head::None,
        };
        let bytes = export(&compact, Encoding::Q7, &data).unwrap();
        assert_eq!(stored_rounding(&Model::parse(&bytes).unwrap()), Some(want));
    }
}

#[test]
fn rounding_radii_outside_one_step_are_rejected() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let p = random_projection(&mut rng, 9, 2);
    let data = random_bags(&mut rng, 9, 6);
    let compact = Compact {
        stage: Some(Affine::from_projection(&p)),
        head: Head::None,
    };
    let nearest = export_with(&compact, Encoding::Q7, &data, Rounding::Nearest).unwrap();
    assert_eq!(section_offset(&nearest, tag::PROJ_ROUNDING), None);
    let bytes = export(&compact, Encoding::Q7, &data).unwrap();
    let at = section_offset(&bytes, tag::PROJ_ROUNDING).unwrap();
    for bad in [1.5f32, -0.25, f32::NAN] {
        let mut b = bytes.clone();
        b[at + 4..at + 8].copy_from_slice(&bad.to_le_bytes());
        fix_checksum(&mut b);
        assert!(
            matches!(Model::parse(&b), Err(Error::BadModel(_))),
            "radius {bad}"
        );
    }
}

#[test]
fn quantised_linear_scores_stay_within_the_stated_bound() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    for trial in 0..12 {
        let dim = 5 + trial * 13;
        let d = 1 + trial % 5;
        let p = random_projection(&mut rng, dim, d);
        let data = random_bags(&mut rng, dim, 8);
        for pooling in [
            Pooling::Max,
            Pooling::Mean,
            Pooling::Geometric,
            Pooling::Softmax,
            Pooling::NoisyOr,
        ] {
            let weights: Vec<f64> = (0..d).map(|k| 0.3 * (k as f64 - 1.5)).collect();
            let compact = Compact {
                stage: Some(Affine::from_projection(&p)),
                head: Head::Linear {
                    weights,
                    bias: vec![0.1],
                    pooling,
                    beta: 3.0,
                },
            };
            let f32_bytes = export(&compact, Encoding::F32, &data).unwrap();
            let f32_model = Model::parse(&f32_bytes).unwrap();
            for encoding in [Encoding::Q15, Encoding::Q7] {
                let bytes = export(&compact, encoding, &data).unwrap();
                let model = Model::parse(&bytes).unwrap();
                for b in 0..data.n_bags() {
                    let (want, _) = core_classify(&f32_model, data.bag(b)).unwrap();
                    let (got, _) = core_classify(&model, data.bag(b)).unwrap();
                    let CoreBag::I16(q) = CoreBag::new(&model, data.bag(b)).unwrap() else {
                        unreachable!("quantised models take i16 bags")
                    };
                    let mut scratch = vec![0.0f32; 2 * d];
                    let bound = bag_score_bound(&model, &q, &mut scratch).unwrap();
                    // The f32 model is itself off by f32 rounding: allow 1e-5 for it.
                    let err = (got.score - want.score).abs();
                    assert!(
                        err <= bound + 1e-5,
                        "trial {trial} {pooling:?} {encoding:?} bag {b}: {err} > {bound}"
                    );
                }
            }
        }
    }
}

/// A set-kernel SVM storing every bag of `data` (grid fitted on it at precision 0) with
/// weights `weights`, bias 0.1, T = 0.
fn svm_model(
    data: &Dataset,
    kernel: BoxKernel,
    epsilon: f64,
    delta: f64,
    rho: f64,
    weights: Vec<f64>,
) -> SvmDeployment {
    let grid = GridData::fit(data, Some(0)).unwrap();
    SvmDeployment {
        kernel,
        method: Method::Fast,
        epsilon,
        delta,
        precision: 0,
        seed: 5,
        rho,
        log_offset: 0.0,
        bias: 0.1,
        grid_min: grid.min().to_vec(),
        grid_size: grid.sizes().to_vec(),
        points: grid.map(data).unwrap(),
        bag_starts: data.bag_starts().to_vec(),
        weights,
    }
}

fn svm_compact(svm: SvmDeployment) -> Compact {
    Compact {
        stage: None,
        head: Head::SetKernelSvm(Box::new(svm)),
    }
}

/// Small integer bags in 2-D: a grid small enough for the exact kernels.
fn small_integer_bags(rng: &mut Xoshiro256PlusPlus, n_bags: usize) -> Dataset {
    let bags: Vec<Vec<Vec<f64>>> = (0..n_bags)
        .map(|b| {
            (0..1 + b % 3)
                .map(|_| (0..2).map(|_| (rng.next_u32() % 5) as f64).collect())
                .collect()
        })
        .collect();
    let labels: Vec<usize> = (0..n_bags).map(|b| b % 2).collect();
    dataset(2, &bags, &labels)
}

#[test]
fn svm_decision_against_exact_kernels() {
    // f(x) = Σ_r ω_r k(x, r)^ρ + b with every k estimated to (ε, δ): each k̂ lies in
    // [(1−ε)k, (1+ε)k] except with probability δ, so |f − f_exact| ≤ Σ_r |ω_r| k^ρ ·
    // (1 − (1−ε)^ρ) (ρ ≤ 1), with k from the exact counts of the core's Möbius inversion.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let (epsilon, delta, rho) = (0.05, 1e-6, 0.5);
    for kernel in [BoxKernel::And, BoxKernel::AndOr, BoxKernel::Min] {
        for _ in 0..4 {
            let train = small_integer_bags(&mut rng, 6);
            let weights: Vec<f64> = (0..6)
                .map(|r| if r % 2 == 0 { 0.3 } else { -0.2 } * (1.0 + r as f64))
                .collect();
            let svm = svm_model(&train, kernel, epsilon, delta, rho, weights.clone());
            let queries = small_integer_bags(&mut rng, 5);
            let bytes = export(&svm_compact(svm.clone()), Encoding::F32, &train).unwrap();
            let core = Model::parse(&bytes).unwrap();
            let q15 = export(&svm_compact(svm.clone()), Encoding::Q15, &train).unwrap();
            let core_q15 = Model::parse(&q15).unwrap();
            let grid = GridData::fit(&train, Some(0)).unwrap();
            let points = grid.map(&queries).unwrap();
            let g = Grid::new(grid.sizes()).unwrap();
            for b in 0..queries.n_bags() {
                let range = queries.bag_range(b);
                let x = &points[range.start * 2..range.end * 2];
                let (mut exact, mut slack) = (0.1, 0.0);
                for (r, w) in weights.iter().enumerate() {
                    let ln_k = exact_ln(kernel, &g, x, grid.bag(r)).unwrap();
                    let e = (rho * ln_k).exp();
                    exact += w * e;
                    slack += w.abs() * e * (1.0 - (1.0 - epsilon).powf(rho));
                }
                let d = core_svm_decide(&core, queries.bag(b)).unwrap();
                assert!(
                    (d.value - exact).abs() <= slack + d.bound,
                    "{kernel:?} bag {b}: {} vs exact {exact} (slack {slack})",
                    d.value
                );
                assert_eq!(d.label, usize::from(d.value > 0.0));
                // Quantised weights: within both stated bounds of the f32 model's value.
                let dq = core_svm_decide(&core_q15, queries.bag(b)).unwrap();
                assert!(
                    (dq.value - d.value).abs() <= dq.bound + d.bound,
                    "{kernel:?} q15"
                );
            }
        }
    }
}

#[test]
fn svm_model_rejects_bad_configuration() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(12);
    let train = small_integer_bags(&mut rng, 4);
    let mut svm = svm_model(&train, BoxKernel::And, 0.1, 0.01, 0.5, vec![1.0; 4]);
    svm.rho = 1.5;
    assert!(export(&svm_compact(svm.clone()), Encoding::F32, &train).is_err());
    svm.rho = 0.5;
    svm.epsilon = 1.0;
    assert!(export(&svm_compact(svm.clone()), Encoding::F32, &train).is_err());
    svm.epsilon = 0.1;
    svm.grid_size[1] = 1;
    assert!(export(&svm_compact(svm.clone()), Encoding::F32, &train).is_err());
    // A bag of the wrong width and an empty bag are errors, not panics.
    let mut svm = svm_model(&train, BoxKernel::And, 0.1, 0.01, 0.5, vec![1.0; 4]);
    svm.precision = 0;
    let bytes = export(&svm_compact(svm), Encoding::F32, &train).unwrap();
    let core = Model::parse(&bytes).unwrap();
    let s = core.svm().unwrap();
    let len = s.scratch_len(4).unwrap();
    let (mut g, mut q, mut r) = (
        vec![0; len.grid],
        vec![0; len.query],
        vec![0; len.reference],
    );
    let (mut f, mut i) = (vec![0.0; len.floats], vec![0; len.ints]);
    let mut scratch = mil_core::svm::SvmScratch {
        grid: &mut g,
        query: &mut q,
        reference: &mut r,
        floats: &mut f,
        ints: &mut i,
    };
    assert_eq!(
        s.decide(&[1.0, 2.0, 3.0], &mut scratch).unwrap_err(),
        Error::DimensionMismatch {
            expected: 4,
            got: 3
        }
    );
    assert_eq!(s.decide(&[], &mut scratch).unwrap_err(), Error::Empty);
    assert!(matches!(
        s.decide(&[0.0; 10], &mut scratch),
        Err(Error::BufferTooSmall { .. })
    ));
    assert!(s.decide(&[f64::NAN, 1.0], &mut scratch).is_err());
    // The classify entry point of the other kinds names the mismatch.
    let mut out = [0.0f32; 2];
    assert_eq!(
        core.classify(Instances::F32(&[1.0, 2.0]), &mut [], &mut out)
            .unwrap_err(),
        Error::WrongModelKind
    );
}

/// Small models of every kind, in every encoding, as seeds for mutation.
fn seed_models() -> Vec<Vec<u8>> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let data = random_bags(&mut rng, 4, 5);
    let p = random_projection(&mut rng, 4, 2);
    let projected = p.transform(&data).unwrap();
    let heads = [
        Head::None,
        Head::Linear {
            weights: vec![0.5, -0.25],
            bias: vec![0.1],
            pooling: Pooling::Softmax,
            beta: 3.0,
        },
        Head::CitationKnn {
            references: projected,
            citers: 2,
            r: 2,
        },
        Head::M3ic {
            weights: vec![1.0, 0.0, 0.0, 1.0, -1.0, -1.0],
            bias: vec![0.0, 0.1, 0.2],
            instance_norm: None,
        },
        Head::M3ic {
            weights: vec![1.0, 0.0, 0.0, 1.0, -1.0, -1.0],
            bias: vec![0.0, 0.1, 0.2],
            instance_norm: Some((vec![0.5, 2.0, 1.0, 0.25], vec![0.1, -0.2, 0.0, 3.0])),
        },
    ];
    let mut out = Vec::new();
    let small = small_integer_bags(&mut rng, 4);
    let svm = svm_model(
        &small,
        BoxKernel::AndOr,
        0.2,
        0.1,
        0.5,
        vec![0.5, -0.5, 0.25, 1.0],
    );
    for encoding in [Encoding::F32, Encoding::Q15, Encoding::Q7] {
        out.push(export(&svm_compact(svm.clone()), encoding, &small).unwrap());
    }
    for head in heads {
        for encoding in [Encoding::F32, Encoding::Q15, Encoding::Q7] {
            let compact = Compact {
                stage: Some(Affine::from_projection(&p)),
                head: head.clone(),
            };
            out.push(export(&compact, encoding, &data).unwrap());
        }
    }
    // Citation-kNN on z-scored raw features: a diagonal stage.
    let zscore = Affine::identity(4).then_scale(&[1.0, -2.0, 0.0, 3.0], &[2.0, 0.5, 0.0, 4.0]);
    for encoding in [Encoding::F32, Encoding::Q15, Encoding::Q7] {
        let compact = Compact {
            head: Head::CitationKnn {
                references: zscore.transform(&data).unwrap(),
                citers: 2,
                r: 2,
            },
            stage: Some(zscore.clone()),
        };
        out.push(export(&compact, encoding, &data).unwrap());
    }
    // MILES: three prototypes on four z-scored features (one constant).
    let miles = miles_compact(vec![0.5, 2.0, 0.0, 0.25]);
    for encoding in [Encoding::F32, Encoding::Q15, Encoding::Q7] {
        out.push(export(&miles, encoding, &data).unwrap());
    }
    // miVLAD and miFV: two k-means centres, or two mixture components, on the four
    // features.
    use mil_toolkit::classifier::mi_vlad::MiVlad;
    use mil_toolkit::classifier::Classifier;
    for params in [MiVlad::vlad(), MiVlad::fisher()] {
        let model = params.codebook(2).fit(&data).unwrap();
        let compact = Compact {
            stage: None,
            head: Head::MiVlad {
                model: Box::new(model),
                shift: 0.0,
            },
        };
        for encoding in [Encoding::F32, Encoding::Q15, Encoding::Q7] {
            out.push(export(&compact, encoding, &data).unwrap());
        }
    }
    // An attention network with gated pooling (every layer kind), its weights a fixed
    // pattern.
    use mil_suite::Slot;
    use mil_toolkit::classifier::attention::{AttentionMil, Pooling as NetPooling};
    let net = mil_suite::attention_network(
        AttentionMil::default().pooling(NetPooling::Gated).hidden(8),
        2,
        vec![1.0, -2.0, 0.0, 3.0],
        vec![0.01, 0.02, 0.0, 0.005],
        |slot| match slot {
            Slot::Weight { rows, index } => ((index * 7 + rows) % 11) as f32 / 5.0 - 1.0,
            Slot::Bias { row } => (row % 3) as f32 / 4.0 - 0.25,
        },
    );
    let net = Compact {
        stage: None,
        head: Head::Attention(Box::new(net)),
    };
    for encoding in [Encoding::F32, Encoding::Q15, Encoding::Q7] {
        out.push(export(&net, encoding, &data).unwrap());
    }
    out
}

/// MILES with three prototypes on four features (z-score means 1, −2, 0, 3 and the
/// inverse standard deviations `inv_sd`).
fn miles_compact(inv_sd: Vec<f64>) -> Compact {
    Compact {
        stage: None,
        head: Head::Miles {
            model: Box::new(MilesModel {
                params: Miles::default(),
                candidates: 5,
                embedding: MilesEmbedding {
                    dim: 4,
                    mean: vec![1.0, -2.0, 0.0, 3.0],
                    inv_sd,
                    gamma: 0.3,
                    prototypes: vec![
                        0.5, -1.0, 0.0, 2.0, -0.25, 0.75, 0.0, 1.5, 1.0, 0.0, 0.0, -3.0,
                    ],
                },
                weights: vec![1.5, -0.75, 0.25],
                bias: -0.1,
                rest: Vec::new(),
            }),
            shift: 0.0,
        },
    }
}

#[test]
fn a_miles_model_with_its_z_score_in_f64_still_reads() {
    // Two layouts of MILES's z-score: `f64` means in `GRID_MIN` with `f32` inverse
    // deviations in `ZSCORE_SCALE` (the exporter's, when each inverse deviation is 0 or a
    // normal f32), and both in a 2 × D `f64` `GRID_MIN`. The same model rewritten in the
    // second layout (inverse deviations widened from their f32) decides every bag with the
    // same value and label, and a bound no larger (its query is the host's, no error (Z)).
    use mil_core::container::{self, Elem, Payload};
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(21);
    let data = random_bags(&mut rng, 4, 6);
    for encoding in [Encoding::F32, Encoding::Q15, Encoding::Q7] {
        let bytes = export(&miles_compact(vec![0.5, 2.0, 0.0, 0.3]), encoding, &data).unwrap();
        let (h, sections) = container::parse(&bytes).unwrap();
        let means = sections.require(tag::GRID_MIN).unwrap();
        let inv_sd = sections.require(tag::ZSCORE_SCALE).unwrap();
        assert_eq!(
            (means.elem, means.rows, inv_sd.elem),
            (Elem::F64, 1, Elem::F32)
        );
        let mut zscore = means.bytes.to_vec();
        for j in 0..4 {
            zscore.extend_from_slice(&f64::from(inv_sd.f32_at(j)).to_le_bytes());
        }
        let payloads: Vec<Payload<'_>> = (1..=tag::MAX)
            .filter(|&t| t != tag::ZSCORE_SCALE)
            .filter_map(|t| sections.get(t).map(|s| (t, s)))
            .map(|(t, s)| match t {
                tag::GRID_MIN => Payload {
                    tag: t,
                    elem: Elem::F64,
                    rows: 2,
                    cols: 4,
                    bytes: &zscore,
                },
                _ => Payload {
                    tag: t,
                    elem: s.elem,
                    rows: s.rows,
                    cols: s.cols,
                    bytes: s.bytes,
                },
            })
            .collect();
        let mut wide = vec![0u8; container::written_len(&payloads)];
        container::write(&mut wide, h.kind, h.encoding, 4, h.output_dim, &payloads).unwrap();
        let (new, old) = (Model::parse(&bytes).unwrap(), Model::parse(&wide).unwrap());
        for b in 0..data.n_bags() {
            let a = core_svm_decide(&new, data.bag(b)).unwrap();
            let c = core_svm_decide(&old, data.bag(b)).unwrap();
            assert_eq!(
                (a.value, a.label),
                (c.value, c.label),
                "{encoding:?} bag {b}"
            );
            assert!(c.bound <= a.bound, "{encoding:?} bag {b}");
        }
        // An inverse deviation with no normal f32 (below 2⁻¹²⁶): the 2 × D f64 layout.
        let tiny = export(&miles_compact(vec![0.5, 1e-40, 0.0, 0.3]), encoding, &data).unwrap();
        let (_, sections) = container::parse(&tiny).unwrap();
        assert!(sections.get(tag::ZSCORE_SCALE).is_none());
        assert_eq!(sections.require(tag::GRID_MIN).unwrap().rows, 2);
        assert!(Model::parse(&tiny).unwrap().miles().is_some());
    }
}

/// Parses `bytes`; when that succeeds, runs inference on a few random bags. Nothing may
/// panic; the only acceptable outcomes are values and errors.
fn exercise(bytes: &[u8], rng: &mut Xoshiro256PlusPlus) -> bool {
    let Ok(model) = Model::parse(bytes) else {
        return false;
    };
    let dim = model.input_dim().min(64);
    for n in [1usize, 3] {
        let f: Vec<f32> = (0..n * dim)
            .map(|_| (rng.next_u32() % 2000) as f32 - 1000.0)
            .collect();
        let q: Vec<i16> = (0..n * dim).map(|_| rng.next_u32() as i16).collect();
        // The compile-time size a firmware takes from the bytes is the parsed model's.
        assert_eq!(
            mil_core::model::scratch_bound(bytes, n),
            model.scratch_len(n),
            "{:?}",
            model.kind()
        );
        assert_eq!(
            mil_core::model::header_dims(bytes),
            (model.input_dim(), model.output_dim())
        );
        let mut scratch = vec![0.0f32; model.scratch_len(n).min(1 << 16)];
        let mut scores = vec![0.0f32; model.output_dim().min(1 << 10)];
        let _ = model.classify(Instances::F32(&f), &mut scratch, &mut scores);
        let _ = model.classify(Instances::I16(&q), &mut scratch, &mut scores);
        let mut y = vec![0.0f32; model.projected_dim().min(1 << 10)];
        let _ = model.project(Instances::F32(&f[..dim]), &mut y);
        let _ = model.project(Instances::I16(&q[..dim]), &mut y);
        let mut out = vec![0i16; dim];
        let _ = model.quantize_instance(&f[..dim], &mut out);
        let buffers = model
            .mi_vlad()
            .map_or((0, 0), |m| (m.scratch_len(), m.sums_len()));
        assert_eq!(mil_core::model::mi_vlad_buffers(bytes), buffers);
        if model.mi_vlad().is_some() {
            let _ = core_svm_decide(&model, dataset_bag(&f, dim, n).bag(0));
        }
        let buffers = model
            .attention()
            .map_or((0, 0), |a| (a.scratch_len(), a.ints_len()));
        assert_eq!(mil_core::model::attention_buffers(bytes), buffers);
        if model.attention().is_some() {
            let bag = dataset_bag(&f, dim, n);
            let _ = mil_toolkit::export::core_attention_decide(&model, bag.bag(0));
        }
        if let Some(miles) = model.miles() {
            assert_eq!(
                mil_core::model::miles_buffers(bytes),
                (miles.scratch_len(), miles.n_prototypes())
            );
            let _ = core_svm_decide(&model, dataset_bag(&f, dim, n).bag(0));
        } else {
            assert_eq!(mil_core::model::miles_buffers(bytes), (0, 0));
        }
        assert_eq!(mil_core::model::header_kind(bytes), Some(model.kind()));
        if let Some(svm) = model.svm() {
            // A mutated ε can ask for arbitrarily many samples: the decision is run only
            // at the seeds' accuracy, to bound the test's time (parsing is always run).
            let len = svm.scratch_len(n);
            if svm.estimator().1.epsilon() >= 0.1 && len.is_some_and(|l| l.floats < 1 << 16) {
                let _ = core_svm_decide(&model, dataset_bag(&f, dim, n).bag(0));
            }
        }
    }
    true
}

fn dataset_bag(f: &[f32], dim: usize, n: usize) -> Dataset {
    let bag: Vec<Vec<f64>> = f[..n * dim]
        .chunks_exact(dim)
        .map(|x| x.iter().map(|&v| f64::from(v)).collect())
        .collect();
    dataset(dim, &[bag], &[0])
}

fn fix_checksum(bytes: &mut [u8]) {
    let at = header::CHECKSUM;
    if bytes.len() >= at + 4 {
        let total = layout::u32_at(bytes, header::TOTAL_LEN) as usize;
        let end = total.clamp(at + 4, bytes.len());
        let crc = model_checksum(&bytes[..end]);
        bytes[at..at + 4].copy_from_slice(&crc.to_le_bytes());
    }
}

#[test]
fn random_and_mutated_bytes_never_panic() {
    let seeds = seed_models();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(2026);
    for s in &seeds {
        assert!(exercise(s, &mut rng), "a seed model must parse");
    }
    // Pure noise, with and without a valid-looking header.
    for i in 0..2000 {
        let len = (rng.next_u32() % 300) as usize;
        let mut b: Vec<u8> = (0..len).map(|_| rng.next_u32() as u8).collect();
        if i % 2 == 0 && len >= 8 {
            b[header::MAGIC..header::MAGIC + 4].copy_from_slice(&MAGIC);
            let v = header::VERSION;
            b[v..v + 2].copy_from_slice(&VERSION.to_le_bytes());
            fix_checksum(&mut b);
        }
        exercise(&b, &mut rng);
    }
    // Mutations of valid models; the checksum is repaired in most of them so that the
    // mutation reaches the structural checks behind it.
    let mut parsed_after_mutation = 0;
    let mut rejected_by_checksum = 0;
    for i in 0..20_000 {
        let mut b = seeds[i % seeds.len()].clone();
        let edits = 1 + rng.next_u32() % 4;
        for _ in 0..edits {
            let pos = rng.next_u32() as usize % b.len();
            match rng.next_u32() % 6 {
                0 => b[pos] ^= 1 << (rng.next_u32() % 8),
                1 => b[pos] = rng.next_u32() as u8,
                2 => b[pos] = [0, 1, 0x7F, 0x80, 0xFF][rng.next_u32() as usize % 5],
                3 => b.truncate(pos.max(1)),
                4 => {
                    // Overwrite a u32 field with an extreme value.
                    let v = [0u32, 1, u32::MAX, 0x8000_0000, 0xFFFF][rng.next_u32() as usize % 5];
                    if pos + 4 <= b.len() {
                        b[pos..pos + 4].copy_from_slice(&v.to_le_bytes());
                    }
                }
                _ => b.extend((0..rng.next_u32() % 16).map(|_| rng.next_u32() as u8)),
            }
        }
        if i % 8 != 0 {
            fix_checksum(&mut b);
        } else if matches!(Model::parse(&b), Err(Error::ChecksumMismatch { .. })) {
            rejected_by_checksum += 1;
        }
        if exercise(&b, &mut rng) {
            parsed_after_mutation += 1;
        }
    }
    // The mutations reached deep: some still parse (and were run), and unrepaired
    // corruption is caught by the checksum.
    assert!(parsed_after_mutation > 100, "{parsed_after_mutation}");
    assert!(rejected_by_checksum > 1000, "{rejected_by_checksum}");
}

#[test]
fn every_truncation_of_a_valid_model_is_an_error() {
    for s in seed_models() {
        for len in 0..s.len() {
            assert!(
                Model::parse(&s[..len]).is_err(),
                "prefix of {len} bytes parsed"
            );
        }
        // Trailing bytes: an error for a file, ignored in a flash partition.
        let mut padded = s.clone();
        padded.extend([0xFF; 64]);
        assert!(Model::parse(&padded).is_err());
        assert!(Model::parse_prefix(&padded).is_ok());
    }
}

/// FNV-1a (64 bits) of a byte string: a fingerprint to pin exported models by.
fn fingerprint(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[test]
fn exported_bytes_are_pinned() {
    // Length and fingerprint of every seed model (each kind in each encoding) as the
    // exporter wrote them when these values were taken: a change to the writer or the
    // layout that moves a single byte fails here. Update only with a format change (format
    // 2: Q7 projection rows stored by pairs, every model's version field; MILES's inverse
    // standard deviations in `f32` in `ZSCORE_SCALE`, its three models; the attention
    // network's kind, its three models; the miFV kind, its three models).
    let pinned: [(usize, u64); 33] = [
        (292, 0xef63ac5aad8ee153),
        (304, 0x6cf562efff10bd4a),
        (304, 0xb6bdd7549234fd2f),
        (104, 0xa3bfdad75951d078),
        (180, 0x5a56e57841fe56a1),
        (172, 0x26f3538621528bb1),
        (172, 0xc626b06f89b74d25),
        (264, 0xf4b0b8e7f240908c),
        (256, 0xb6a0d04f666174f3),
        (376, 0xe1e133fb92673484),
        (416, 0x54f05d0d5550cfc2),
        (408, 0x83ccf4706e7a082c),
        (172, 0x60e2277b19bb0b0d),
        (264, 0x91c044e2df8204e1),
        (252, 0x8869ba0b47104788),
        (220, 0x31d95cf49454bb73),
        (312, 0x4de42559da6760e9),
        (300, 0x172b2dc848dc4edc),
        (472, 0x982e74b98e2b139e),
        (404, 0x72e9290efb47cd5e),
        (404, 0x6d7fac2039a6266d),
        (236, 0xbeb2768380d1f2f5),
        (260, 0xb3dd0af65686345a),
        (248, 0xdc437ca90947a276),
        (240, 0x4b5663839803b003),
        (260, 0xe6184ced90d18030),
        (252, 0x67b14e27e36ecff2),
        (384, 0x91b5a7cf03c8f80e),
        (388, 0x4392cdafe4aeb1d4),
        (380, 0x7ca5de19dabb846c),
        (652, 0x90b0daf162fa8ee4),
        (656, 0x1984ccba9ddd9056),
        (572, 0x8691737ec9bdb96f),
    ];
    let got: Vec<(usize, u64)> = seed_models()
        .iter()
        .map(|b| (b.len(), fingerprint(b)))
        .collect();
    assert_eq!(got, pinned);
}

#[test]
fn the_core_sample_model_is_what_the_exporter_writes() {
    // `mil_core::sample::LINEAR_MIL`: z = x₀ − x₁, max pooling, f32.
    let train = dataset(2, &[vec![vec![3.0, 1.0], vec![0.0, 2.0]]], &[1]);
    let compact = Compact {
        stage: None,
        head: Head::Linear {
            weights: vec![1.0, -1.0],
            bias: vec![0.0],
            pooling: Pooling::Max,
            beta: 0.0,
        },
    };
    let bytes = export(&compact, Encoding::F32, &train).unwrap();
    let rows: Vec<String> = bytes
        .chunks(16)
        .map(|row| {
            let row: Vec<String> = row.iter().map(|b| format!("0x{b:02x},")).collect();
            format!("    {}", row.join(" "))
        })
        .collect();
    assert!(
        bytes == mil_core::sample::LINEAR_MIL,
        "core/src/sample.rs is stale; LINEAR_MIL is now\n&[\n{}\n]",
        rows.join("\n")
    );
    // And it classifies as the documentation says.
    let model = Model::parse(mil_core::sample::LINEAR_MIL).unwrap();
    let (decision, _) = core_classify(&model, train.bag(0)).unwrap();
    assert_eq!(decision.label, 1);
    assert!((decision.score - 0.880_797).abs() < 1e-5);
}
