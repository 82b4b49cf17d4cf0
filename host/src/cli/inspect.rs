//! `mil inspect`: validates a compact model (everything the core checks: header,
//! checksum, sections, shapes, values) and describes it.

use serde_json::json;

use super::{InspectArgs, Report};
use crate::error::{Error, Result};
use mil_core::keyword::Keyword;
use mil_core::model::{Model, ModelKind};

/// Runs `mil inspect`.
pub fn run(args: &InspectArgs) -> Result<Report> {
    let bytes = super::output::read_compact_model(&args.model)?;
    let model = Model::parse(&bytes)
        .map_err(|e| Error::data(&args.model, format!("not a valid compact model: {e}")))?;
    let h = model.header();
    let mut details = serde_json::Map::new();
    // How the stage is stored: a d × D matrix, one scale and offset per feature, or none.
    let stage = match model.projection() {
        Some(p) if p.weights().is_none() => "diagonal",
        Some(_) => "dense",
        None => "none",
    };
    let rounding = match crate::export::stored_rounding(&model) {
        Some(r) => format!(", {} rounding", r.name()),
        None => String::new(),
    };
    let mut human = format!(
        "{}: {} model, {}, format version {}, {} bytes, checksum {:#010x}\ninput {} features → {} after the projection stage ({stage}{rounding}) → output {}",
        args.model,
        model.kind().name(),
        model.encoding().name(),
        h.version,
        h.total_len,
        h.checksum,
        model.input_dim(),
        model.projected_dim(),
        model.output_dim()
    );
    match model.kind() {
        ModelKind::Projection => {}
        ModelKind::LinearMil => {
            if let Some(s) = model.scorer() {
                let pooling = s.pooling().name().to_string();
                human.push_str(&format!(
                    "\nlinear instance scores pooled by {pooling} (β = {})",
                    s.beta()
                ));
                details.insert("pooling".into(), json!(pooling));
                details.insert("beta".into(), json!(s.beta()));
            }
        }
        ModelKind::CitationKnn => {
            if let Some(c) = model.citation() {
                human.push_str(&format!(
                    "\nCitation-kNN over {} reference bags, R = {}",
                    c.n_bags(),
                    c.references()
                ));
                details.insert("reference_bags".into(), json!(c.n_bags()));
                details.insert("references".into(), json!(c.references()));
            }
        }
        ModelKind::M3ic => {
            let unit = model.cluster().is_some_and(|c| c.scales_instances());
            human.push_str(&format!(
                "\nM³IC assignment to {} clusters{}",
                model.output_dim(),
                if unit {
                    ", instances scaled to unit length after the z-score"
                } else {
                    ""
                }
            ));
            details.insert("unit_length_instances".into(), json!(unit));
        }
        ModelKind::SetKernelSvm => {
            if let Some(svm) = model.svm() {
                let kernel = svm.kernel().name().to_string();
                let (method, accuracy) = svm.estimator();
                let method = method.name().to_string();
                human.push_str(&format!(
                    "\nSVM over {} stored bags, kernel {kernel} estimated by the {method} estimator to ε = {}, δ = {}",
                    svm.n_bags(),
                    accuracy.epsilon(),
                    accuracy.delta()
                ));
                details.insert("stored_bags".into(), json!(svm.n_bags()));
                details.insert("kernel".into(), json!(kernel));
                details.insert("estimator".into(), json!(method));
                details.insert("epsilon".into(), json!(accuracy.epsilon()));
                details.insert("delta".into(), json!(accuracy.delta()));
            }
        }
        ModelKind::MiKernelSvm => {
            if let Some(svm) = model.mi_svm() {
                human.push_str(&format!(
                    "\nSVM over {} stored bags ({} instances), MI kernel with γ = {} on min-max scaled features",
                    svm.n_bags(),
                    svm.n_instances(),
                    svm.gamma()
                ));
                details.insert("stored_bags".into(), json!(svm.n_bags()));
                details.insert("stored_instances".into(), json!(svm.n_instances()));
                details.insert("kernel".into(), json!("mi-rbf"));
                details.insert("gamma".into(), json!(svm.gamma()));
            }
        }
        ModelKind::MiVlad | ModelKind::MiFv => {
            if let Some(m) = model.mi_vlad() {
                human.push_str(&if m.is_fisher() {
                    format!(
                        "\nmiFV under a mixture of {} diagonal Gaussians on z-scored features",
                        m.n_centres()
                    )
                } else {
                    format!(
                        "\nmiVLAD over {} k-means centres on z-scored features",
                        m.n_centres()
                    )
                });
                details.insert("centres".into(), json!(m.n_centres()));
            }
        }
        ModelKind::Attention => {
            if let Some(m) = model.attention() {
                human.push_str(&format!(
                    "\nattention network {} → {} → {}, {} pooling, {} multiply-adds per instance; scratch {} f32 and {} i16 whatever the bag's size",
                    m.dim(),
                    m.hidden(),
                    m.embed(),
                    match m.pooling() {
                        mil_core::attention::Pooling::Attention => "attention",
                        mil_core::attention::Pooling::Gated => "gated",
                        mil_core::attention::Pooling::Mean => "mean",
                        mil_core::attention::Pooling::Max => "max",
                    },
                    m.macs_per_instance(),
                    m.scratch_len(),
                    m.ints_len()
                ));
                details.insert("hidden".into(), json!(m.hidden()));
                details.insert("macs_per_instance".into(), json!(m.macs_per_instance()));
                details.insert("scratch_f32".into(), json!(m.scratch_len()));
                details.insert("scratch_i16".into(), json!(m.ints_len()));
            }
        }
        ModelKind::Miles => {
            if let Some(m) = model.miles() {
                human.push_str(&format!(
                    "\nMILES over {} prototypes, similarity exp(−γ‖x − p‖²) with γ = {} on z-scored features",
                    m.n_prototypes(),
                    m.gamma()
                ));
                details.insert("prototypes".into(), json!(m.n_prototypes()));
                details.insert("gamma".into(), json!(m.gamma()));
            }
        }
    }
    let mut json = json!({
        "model": args.model,
        "kind": model.kind().name(),
        "format": model.encoding().name(),
        "version": h.version,
        "bytes": h.total_len,
        "input_dim": model.input_dim(),
        "projected_dim": model.projected_dim(),
        "stage": stage,
        "rounding": crate::export::stored_rounding(&model).map(|r| r.name()),
        "output_dim": model.output_dim(),
        "sections": h.n_sections,
        "checksum": format!("{:#010x}", h.checksum),
    });
    if let Some(obj) = json.as_object_mut() {
        obj.extend(details);
    }
    Ok(Report { human, json })
}
