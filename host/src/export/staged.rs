//! Models written as a projection stage and a head (everything but the SVMs): the input
//! steps, the stage with the steps folded in, then the head's sections.

use mil_core::container::{tag, Encoding, ModelKind};
use mil_core::keyword::Keyword;
use mil_core::Model;

use super::device::core_radii;
use super::rounding::{Feedback, Rounding};
use super::steps::{input_exponents, integer_exponents};
use super::writer::Writer;
use super::{f32_at_least, Affine, Compact, ExportOptions, Head, InputSteps};
use crate::data::Dataset;
use crate::error::{Error, Result};

/// [`super::export_with`] for a model with a projection stage (or none) and a head that
/// is not an SVM.
pub(super) fn export_staged(
    model: &Compact,
    encoding: Encoding,
    train: &Dataset,
    options: ExportOptions,
) -> Result<Vec<u8>> {
    let dim_in = train.dim();
    let (stage, head) = split_stage(model, dim_in);
    if let Some(stage) = &stage {
        if stage.cols != dim_in {
            return Err(Error::data(
                train.name(),
                format!("{dim_in} features but the model takes {}", stage.cols),
            ));
        }
    }
    let mut w = Writer::new();
    let input_steps = write_input_steps(&mut w, train, stage.as_ref(), &head, encoding, options)?;
    if let Some(stage) = &stage {
        write_stage(
            &mut w,
            stage,
            encoding,
            options.rounding,
            train,
            &input_steps,
        );
    }
    let d = stage.as_ref().map_or(dim_in, |s| s.rows);
    let (kind, out_dim) = write_head(&mut w, &head, encoding, d, train, &input_steps)?;
    if let Head::CitationKnn { citers, .. } = &head {
        // The citer radius of reference bag u is its C-th smallest distance to another
        // reference bag, measured as the core will measure a query: so a training bag
        // queried on the device is within u's radius exactly when it is on the host.
        let provisional = w.clone().finish(kind, encoding, (dim_in, out_dim))?;
        let radii = core_radii(&provisional, train, *citers)?;
        let bytes = radii.iter().flat_map(|&r| (r as f32).to_le_bytes());
        w.replace_bytes(tag::CITER_RADII, bytes.collect());
    }
    let bytes = w.finish(kind, encoding, (dim_in, out_dim))?;
    // Never hand out bytes the core would reject.
    Model::parse(&bytes)?;
    Ok(bytes)
}

/// The projection stage and the head after it: the fitted projection, or — for a linear
/// head without one — the head's own rows as the stage, the head then the identity on
/// the scores (so quantised models multiply integers in the stage alone).
fn split_stage(model: &Compact, dim_in: usize) -> (Option<Affine>, Head) {
    let mut head = model.head.clone();
    let stage = match (&model.stage, &mut head) {
        (Some(p), _) => Some(p.clone()),
        (None, Head::Linear { weights, bias, .. }) => {
            let rows = bias.len();
            let stage = Affine {
                rows,
                cols: dim_in,
                a: std::mem::take(weights),
                b: std::mem::take(bias),
            };
            *weights = (0..rows * rows)
                .map(|i| f64::from(u8::from(i % (rows + 1) == 0)))
                .collect();
            *bias = vec![0.0; rows];
            Some(stage)
        }
        (None, _) => None,
    };
    (stage, head)
}

/// Writes the exponents of a quantised model's input steps and returns the step s_j of
/// each input feature (1 for f32 models: their inputs arrive as they are).
fn write_input_steps(
    w: &mut Writer,
    train: &Dataset,
    stage: Option<&Affine>,
    head: &Head,
    encoding: Encoding,
    options: ExportOptions,
) -> Result<Vec<f64>> {
    let dim_in = train.dim();
    if encoding == Encoding::F32 {
        return Ok(vec![1.0; dim_in]);
    }
    let stage = stage.ok_or_else(|| {
        Error::parameter(
            "format",
            encoding.name(),
            "a quantised model needs a projection stage; export this model as f32",
        )
    })?;
    let exps = match options.input {
        InputSteps::Fitted => input_exponents(train, stage, head, encoding),
        InputSteps::Integer => integer_exponents(train)?,
    };
    w.ints(tag::INPUT_EXP, Encoding::Q7, 1, dim_in, &exps);
    Ok(exps.iter().map(|&e| 2f64.powi(e)).collect())
}

/// Writes the stage acting on the values the device receives: each input step folded
/// into its column; a diagonal stage as f32 scales and offsets, a dense one in
/// `encoding` with its rounding radii.
fn write_stage(
    w: &mut Writer,
    stage: &Affine,
    encoding: Encoding,
    rounding: Rounding,
    train: &Dataset,
    input_steps: &[f64],
) {
    let dim_in = stage.cols;
    if let Some(diagonal) = stage.diagonal() {
        let scales = diagonal.iter().zip(input_steps).map(|(g, s)| g * s);
        let offsets = stage.b.iter().copied();
        w.f32s(tag::PROJ_DIAGONAL, 2, dim_in, scales.chain(offsets));
        return;
    }
    let a: Vec<f64> = stage
        .a
        .chunks_exact(dim_in)
        .flat_map(|row| row.iter().zip(input_steps).map(|(g, s)| g * s))
        .collect();
    let tags = (tag::PROJ_WEIGHTS, tag::PROJ_SCALE, Some(tag::PROJ_SHIFT));
    let feedback = match rounding {
        Rounding::Feedback if encoding != Encoding::F32 => Feedback::new(train, input_steps),
        _ => None,
    };
    if let Some(radii) = w.weights(encoding, tags, stage.rows, dim_in, &a, feedback.as_ref()) {
        // Rounded up to f32 so that the core's bound still covers every weight.
        let radii = radii.iter().map(|&r| f64::from(f32_at_least(r).min(1.0)));
        w.f32s(tag::PROJ_ROUNDING, 1, stage.rows, radii);
    }
    w.f32s(tag::PROJ_BIAS, 1, stage.rows, stage.b.iter().copied());
}

/// Writes the head acting on the stage's `d` outputs; returns the model kind and its
/// number of outputs.
fn write_head(
    w: &mut Writer,
    head: &Head,
    encoding: Encoding,
    d: usize,
    train: &Dataset,
    input_steps: &[f64],
) -> Result<(ModelKind, usize)> {
    let dim_in = train.dim();
    Ok(match head {
        Head::None => (ModelKind::Projection, d),
        Head::Linear {
            weights,
            bias,
            pooling,
            beta,
        } => {
            let rows = bias.len();
            let tags = (tag::SCORE_WEIGHTS, tag::SCORE_SCALE, None);
            w.weights(encoding, tags, rows, d, weights, None);
            w.f32s(tag::SCORE_BIAS, 1, rows, bias.iter().copied());
            w.f32s(tag::PARAMS, 1, 2, [*pooling as u8 as f64, *beta]);
            (ModelKind::LinearMil, rows.max(2))
        }
        Head::CitationKnn {
            references,
            citers: _,
            r,
        } => {
            if references.dim() != d {
                return Err(Error::data(
                    train.name(),
                    format!(
                        "reference bags of dimension {} after a stage of {d}",
                        references.dim()
                    ),
                ));
            }
            let refs = references.features();
            let n = references.n_instances();
            // 16 bits in Q7 too: see `mil_core::citation` for why.
            let stored = match encoding {
                Encoding::F32 => Encoding::F32,
                Encoding::Q15 | Encoding::Q7 => Encoding::Q15,
            };
            w.instances(stored, (n, d), refs, true);
            let starts: Vec<u32> = references.bag_starts().iter().map(|&v| v as u32).collect();
            w.u32s(tag::REF_BAGS, &starts);
            let labels = references.require_labels(2)?;
            let labels: Vec<u32> = labels.iter().map(|&l| l as u32).collect();
            w.u32s(tag::REF_LABELS, &labels);
            // Provisional radii; replaced by radii in the core's own arithmetic.
            w.f32s(tag::CITER_RADII, 1, labels.len(), vec![0.0; labels.len()]);
            let classes = references.n_classes();
            w.f32s(tag::PARAMS, 1, 2, [*r as f64, classes as f64]);
            (ModelKind::CitationKnn, classes)
        }
        Head::M3ic {
            weights,
            bias,
            instance_norm,
        } => {
            let k = bias.len();
            let tags = (tag::SCORE_WEIGHTS, tag::SCORE_SCALE, None);
            w.weights(encoding, tags, k, d, weights, None);
            w.f32s(tag::SCORE_BIAS, 1, k, bias.iter().copied());
            if let Some((a, c)) = instance_norm {
                if a.len() != dim_in || c.len() != dim_in {
                    return Err(Error::data(
                        train.name(),
                        format!("{dim_in} features but an instance norm of {}", a.len()),
                    ));
                }
                // Quantised inputs arrive as x_j / s_j: fold the step into a_j.
                let a = a.iter().zip(input_steps).map(|(a, s)| a * s);
                w.f32s(tag::INSTANCE_NORM, 2, dim_in, a.chain(c.iter().copied()));
            }
            (ModelKind::M3ic, k)
        }
        Head::SetKernelSvm(_)
        | Head::MiKernelSvm(_)
        | Head::Miles { .. }
        | Head::MiVlad { .. }
        | Head::Attention(_) => {
            return Err(Error::Unsupported(
                "an SVM or MILES head after a projection stage".into(),
            ))
        }
    })
}
