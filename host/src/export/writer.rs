//! The container writer: section payloads gathered by tag with a named [`Section`]
//! type, then laid out and checksummed by `mil_core::container`.

use mil_core::container::{self, tag, Elem, Encoding, ModelKind, Payload};
use mil_core::fixed;

use crate::error::{Error, Result};

use super::*;

/// One section of the container before the layout is fixed: its tag, element type,
/// shape and little-endian payload.
#[derive(Clone)]
struct Section {
    tag: u16,
    elem: Elem,
    rows: usize,
    cols: usize,
    bytes: Vec<u8>,
}

/// Section payloads, gathered before the layout is fixed.
#[derive(Clone, Default)]
pub(super) struct Writer {
    sections: Vec<Section>,
}

impl Writer {
    pub(super) fn new() -> Self {
        Writer::default()
    }

    fn push(&mut self, tag: u16, elem: Elem, rows: usize, cols: usize, bytes: Vec<u8>) {
        self.sections.push(Section {
            tag,
            elem,
            rows,
            cols,
            bytes,
        });
    }

    /// A section of `rows × cols` elements of type `elem` laid out in `bytes` already.
    pub(super) fn raw(&mut self, tag: u16, elem: Elem, rows: usize, cols: usize, bytes: Vec<u8>) {
        self.push(tag, elem, rows, cols, bytes);
    }

    /// Replaces the payload of the section `tag` (same shape).
    pub(super) fn replace_bytes(&mut self, tag: u16, bytes: Vec<u8>) {
        if let Some(section) = self.sections.iter_mut().find(|s| s.tag == tag) {
            section.bytes = bytes;
        }
    }

    /// Gives the section written last the shape `rows × cols` (same values).
    pub(super) fn reshape_last(&mut self, rows: usize, cols: usize) {
        if let Some(section) = self.sections.last_mut() {
            (section.rows, section.cols) = (rows, cols);
        }
    }

    pub(super) fn f32s(
        &mut self,
        t: u16,
        rows: usize,
        cols: usize,
        v: impl IntoIterator<Item = f64>,
    ) {
        let bytes = v
            .into_iter()
            .flat_map(|x| (x as f32).to_le_bytes())
            .collect();
        self.push(t, Elem::F32, rows, cols, bytes);
    }

    pub(super) fn u32s(&mut self, t: u16, v: &[u32]) {
        let bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.push(t, Elem::U32, 1, v.len(), bytes);
    }

    pub(super) fn f64s(&mut self, t: u16, v: &[f64]) {
        let bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.push(t, Elem::F64, 1, v.len(), bytes);
    }

    /// Grid points, `rows × cols`: `u16` when every value fits, else `u32`.
    pub(super) fn points(&mut self, t: u16, rows: usize, cols: usize, v: &[u32]) {
        if v.iter().all(|&p| p <= u32::from(u16::MAX)) {
            let bytes = v.iter().flat_map(|&x| (x as u16).to_le_bytes()).collect();
            self.push(t, Elem::U16, rows, cols, bytes);
        } else {
            let bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            self.push(t, Elem::U32, rows, cols, bytes);
        }
    }

    /// Stored instances (`rows × cols`, row-major) as `REF_INSTANCES`: f32, or quantised
    /// in `encoding` with one step per coordinate (`REF_SCALE`), shared by that coordinate
    /// of every instance. With `one_step` every coordinate gets the same step, mapping the
    /// largest magnitude onto ±[`mil_core::fixed::DIST_MAX`]: the core then computes
    /// Citation-kNN distances in integers (see `mil_core::citation`).
    pub(super) fn instances(
        &mut self,
        encoding: Encoding,
        (rows, cols): (usize, usize),
        values: &[f64],
        one_step: bool,
    ) {
        if encoding == Encoding::F32 {
            self.f32s(tag::REF_INSTANCES, rows, cols, values.iter().copied());
            return;
        }
        let mut q_max = encoding.q_max();
        let mut max_abs = vec![0.0f64; cols];
        for x in values.chunks_exact(cols) {
            for (m, v) in max_abs.iter_mut().zip(x) {
                *m = m.max(v.abs());
            }
        }
        if one_step {
            let all = max_abs.iter().copied().fold(0.0, f64::max);
            max_abs.iter_mut().for_each(|m| *m = all);
            q_max = fixed::DIST_MAX;
        }
        let steps: Vec<f32> = max_abs
            .iter()
            .map(|&m| fixed::scale_for(m as f32, q_max))
            .collect();
        let q: Vec<i32> = values
            .chunks_exact(cols)
            .flat_map(|x| {
                x.iter()
                    .zip(&steps)
                    .map(|(&v, &s)| fixed::quantize(v as f32, s, q_max))
            })
            .collect();
        self.ints(tag::REF_INSTANCES, encoding, rows, cols, &q);
        self.f32s(tag::REF_SCALE, 1, cols, steps.iter().map(|&s| s as f64));
    }

    /// An SVM's stored bags (`REF_BAGS`, from their start offsets) and one weight each:
    /// f32, or Q15 with one step in both quantised encodings (see `mil_core::svm`).
    pub(super) fn support_bags(
        &mut self,
        encoding: Encoding,
        bag_starts: &[usize],
        weights: &[f64],
    ) {
        let starts: Vec<u32> = bag_starts.iter().map(|&v| v as u32).collect();
        self.u32s(tag::REF_BAGS, &starts);
        let weight_encoding = match encoding {
            Encoding::F32 => Encoding::F32,
            Encoding::Q15 | Encoding::Q7 => Encoding::Q15,
        };
        let tags = (tag::SCORE_WEIGHTS, tag::SCORE_SCALE, None);
        self.weights(
            weight_encoding,
            tags,
            1,
            bag_starts.len() - 1,
            weights,
            None,
        );
    }

    /// Quantised integers, one element type per encoding.
    pub(super) fn ints(&mut self, t: u16, encoding: Encoding, rows: usize, cols: usize, q: &[i32]) {
        let bytes = match encoding {
            Encoding::Q7 => q.iter().map(|&v| v as i8 as u8).collect(),
            _ => q.iter().flat_map(|&v| (v as i16).to_le_bytes()).collect(),
        };
        self.push(t, encoding.elem(), rows, cols, bytes);
    }

    /// Weights with a per-row scale (quantised) or as floats; `shift` adds the
    /// accumulator shift that keeps integer dot products out of saturation. Quantised
    /// weights round to nearest, or with `feedback` ([`rounding`]); then the rows' radii
    /// δ_k are returned for `PROJ_ROUNDING`.
    pub(super) fn weights(
        &mut self,
        encoding: Encoding,
        tags: (u16, u16, Option<u16>),
        rows: usize,
        cols: usize,
        w: &[f64],
        feedback: Option<&Feedback>,
    ) -> Option<Vec<f64>> {
        if encoding == Encoding::F32 {
            self.f32s(tags.0, rows, cols, w.iter().copied());
            return None;
        }
        let q_max = encoding.q_max();
        let mut q = Vec::with_capacity(w.len());
        let mut scales = Vec::with_capacity(rows);
        let mut shifts = Vec::with_capacity(rows);
        let mut radii = Vec::with_capacity(rows);
        for row in w.chunks_exact(cols) {
            let max_abs = row.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let s = fixed::scale_for(max_abs as f32, q_max);
            let start = q.len();
            match feedback {
                Some(f) => {
                    let (row_q, radius) = f.round_row(row, s, q_max);
                    q.extend(row_q);
                    radii.push(radius);
                }
                None => q.extend(row.iter().map(|&v| fixed::quantize(v as f32, s, q_max))),
            }
            let abs_sum = q[start..].iter().map(|v| v.unsigned_abs() as u64).sum();
            scales.push(s as f64);
            shifts.push(fixed::safe_shift(abs_sum));
        }
        if encoding == Encoding::Q7 && tags.0 == tag::PROJ_WEIGHTS {
            let bytes = q7_row_pairs(&q, cols);
            self.push(tags.0, Elem::I8, rows, cols, bytes);
        } else {
            self.ints(tags.0, encoding, rows, cols, &q);
        }
        self.f32s(tags.1, 1, rows, scales);
        if let Some(t) = tags.2 {
            self.u32s(t, &shifts);
        }
        feedback.map(|_| radii)
    }

    /// Lays the sections out in tag order with the core's own writer
    /// ([`container::write`]: header, table, aligned payloads, checksum).
    pub(super) fn finish(
        mut self,
        kind: ModelKind,
        encoding: Encoding,
        dims: (usize, usize),
    ) -> Result<Vec<u8>> {
        self.sections.sort_by_key(|s| s.tag);
        let payloads: Vec<Payload<'_>> = self
            .sections
            .iter()
            .map(|s| Payload {
                tag: s.tag,
                elem: s.elem,
                rows: s.rows,
                cols: s.cols,
                bytes: &s.bytes,
            })
            .collect();
        let mut out = vec![0u8; container::written_len(&payloads)];
        container::write(&mut out, kind, encoding, dims.0, dims.1, &payloads)
            .map_err(|e| Error::parameter("model", e, "does not fit the container"))?;
        Ok(out)
    }
}

/// Q7 projection rows laid out by pairs (`mil_core::weights::Q7Layout::Pairs`): rows 2p
/// and 2p + 1 as one row of `fixed::pack_q7_pair`s (little-endian), an odd last row as
/// plain bytes.
fn q7_row_pairs(q: &[i32], cols: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(q.len());
    let mut pairs = q.chunks_exact(2 * cols.max(1));
    for pair in &mut pairs {
        let (a, b) = pair.split_at(cols);
        out.extend(
            a.iter()
                .zip(b)
                .flat_map(|(&a, &b)| fixed::pack_q7_pair(a, b).to_le_bytes()),
        );
    }
    out.extend(pairs.remainder().iter().map(|&v| v as i8 as u8));
    out
}
