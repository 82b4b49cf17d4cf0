//! Set-kernel SVMs for the core (box-counting and MI kernel): their sections, and the
//! core's decision on a bag as the host runs it.

use mil_core::container::{tag, Encoding, ModelKind};
use mil_core::Model;

use crate::classifier::svm::{MiSvmDeployment, SvmDeployment};
use crate::data::Bag;
use crate::error::{Error, Result};

use super::*;

/// Writes a set-kernel SVM ([`mil_core::svm`]): the grid, the stored bags' points, one
/// weight per stored bag in `encoding` (one scale for all when quantised), the kernel's
/// settings. Inputs stay raw f32 features in every encoding.
pub(super) fn export_svm(
    svm: &SvmDeployment,
    encoding: Encoding,
    dim_in: usize,
    mut w: Writer,
) -> Result<Vec<u8>> {
    if svm.grid_size.len() != dim_in {
        return Err(Error::parameter(
            "data",
            format!("{dim_in} features"),
            format!("the SVM was trained on {} features", svm.grid_size.len()),
        ));
    }
    let rows = svm.points.len() / dim_in;
    let seed = [svm.seed as u32, (svm.seed >> 32) as u32];
    w.u32s(
        tag::KERNEL_CONFIG,
        &[
            mil_core::svm::kernel_code(svm.kernel),
            mil_core::svm::method_code(svm.method),
            svm.precision as u32,
            seed[0],
            seed[1],
        ],
    );
    w.f64s(
        tag::KERNEL_PARAMS,
        &[svm.epsilon, svm.delta, svm.rho, svm.log_offset, svm.bias],
    );
    let grid_min: Vec<f64> = svm.grid_min.iter().map(|&v| v as f64).collect();
    w.f64s(tag::GRID_MIN, &grid_min);
    w.u32s(tag::GRID_SIZE, &svm.grid_size);
    w.points(tag::REF_POINTS, rows, dim_in, &svm.points);
    w.support_bags(encoding, &svm.bag_starts, &svm.weights);
    let bytes = w.finish(ModelKind::SetKernelSvm, encoding, (dim_in, 2))?;
    Model::parse(&bytes)?;
    Ok(bytes)
}

/// Writes an MI-kernel SVM ([`mil_core::mi_svm`]): γ and b, the min–max map in `f64`,
/// the support bags' scaled instances (f32, or in `encoding` with one step per feature)
/// and one weight each (f32, or Q15 with one step in both quantised encodings, as the
/// box-kernel SVM stores them). Queries stay raw `f64` features in every encoding.
pub(super) fn export_mi_svm(
    svm: &MiSvmDeployment,
    encoding: Encoding,
    dim_in: usize,
    mut w: Writer,
) -> Result<Vec<u8>> {
    if svm.min.len() != dim_in {
        return Err(Error::parameter(
            "data",
            format!("{dim_in} features"),
            format!("the SVM was trained on {} features", svm.min.len()),
        ));
    }
    let rows = svm.instances.len() / dim_in;
    w.f64s(tag::KERNEL_PARAMS, &[svm.gamma, svm.bias]);
    let mut minmax = svm.min.clone();
    minmax.extend_from_slice(&svm.range);
    w.f64s(tag::GRID_MIN, &minmax);
    // Two rows: minima, then ranges.
    w.reshape_last(2, dim_in);
    w.instances(encoding, (rows, dim_in), &svm.instances, false);
    w.support_bags(encoding, &svm.bag_starts, &svm.weights);
    let bytes = w.finish(ModelKind::MiKernelSvm, encoding, (dim_in, 2))?;
    Model::parse(&bytes)?;
    Ok(bytes)
}

/// The decision of an MI-kernel SVM model on one host bag.
pub fn core_mi_svm_decide(model: &Model<'_>, bag: Bag<'_>) -> Result<mil_core::svm::SvmDecision> {
    let svm = model.mi_svm().ok_or(mil_core::Error::WrongModelKind)?;
    let mut scratch = vec![0.0f32; svm.dim()];
    Ok(svm.decide(bag.as_slice(), &mut scratch)?)
}

/// The decision of a set-kernel SVM model (box-counting or MI kernel) or a MILES model on
/// one host bag, in buffers sized for it.
pub fn core_svm_decide(model: &Model<'_>, bag: Bag<'_>) -> Result<mil_core::svm::SvmDecision> {
    if model.mi_svm().is_some() {
        return core_mi_svm_decide(model, bag);
    }
    if model.miles().is_some() {
        return super::core_miles_decide(model, bag);
    }
    if model.mi_vlad().is_some() {
        return super::core_mi_vlad_decide(model, bag);
    }
    let svm = model.svm().ok_or(mil_core::Error::WrongModelKind)?;
    let len = svm
        .scratch_len(bag.len())
        .ok_or_else(|| Error::data("bag", "too large to address"))?;
    let (mut grid, mut query, mut reference) = (
        vec![0u32; len.grid],
        vec![0u32; len.query],
        vec![0u32; len.reference],
    );
    let (mut floats, mut ints) = (vec![0.0f64; len.floats], vec![0u32; len.ints]);
    let mut scratch = mil_core::svm::SvmScratch {
        grid: &mut grid,
        query: &mut query,
        reference: &mut reference,
        floats: &mut floats,
        ints: &mut ints,
    };
    Ok(svm.decide(bag.as_slice(), &mut scratch)?)
}
