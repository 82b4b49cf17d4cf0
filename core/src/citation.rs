//! Citation-kNN (Wang & Zucker 2000) over stored, projected reference bags, with the
//! host's (Weka's) rules: the minimal Hausdorff distance from the test bag to every
//! reference bag; references are the R nearest plus every tie at the R-th distance;
//! citers are the reference bags t whose distance to the test bag is at most t's citer
//! radius (its C-th smallest distance to another reference bag, precomputed on the host;
//! negative when C = 0). Class c scores (1/N + R_c + C_c)/Σ over N reference bags; the
//! label is the first class of largest score (ties go to the negative class).
//!
//! Memory is bounded: the caller's scratch holds the test bag's projected instances
//! (n × d values) and one distance per reference bag; R is at most [`MAX_REFERENCES`].
//!
//! `PARAMS` holds `[R, number of classes]`. Quantised models store the reference
//! instances as `i16` with one scale per coordinate (`REF_SCALE`): coordinate k of a
//! stored instance is `scale_k · q`, off by at most `scale_k/2` from the host's value.
//! Q7 models keep 16-bit references too (only their weights are 8-bit): the references
//! are data, and a projected coordinate spans far more than the distances between
//! neighbouring bags (on elephant after B-MIDA, d = 10: coordinates up to 27, nearest
//! bags 0.05 apart), which an 8-bit step of range/127 cannot resolve: with `i8`
//! references the core gave the host's label on 173 of those 200 bags, with `i16` 196.

use crate::bag::{argmax_first, Decision, Instances};
use crate::container::{le_f32, le_i16, tag, Elem, Encoding, F32s, Section, Sections};
use crate::error::Error;
use crate::project::Stage;
use crate::score::split;

/// Largest R (number of nearest references) the core supports.
pub const MAX_REFERENCES: usize = 32;
/// Largest number of classes.
pub const MAX_CLASSES: usize = 64;

/// The reference bags of a Citation-kNN model.
#[derive(Debug, Clone, Copy)]
pub struct CitationKnn<'a> {
    instances: Section<'a>,
    scale: Option<Section<'a>>,
    bags: Section<'a>,
    labels: Section<'a>,
    radii: Section<'a>,
    references: usize,
    n_classes: usize,
}

/// A whole number stored in an f32 parameter, within `0..=max`.
fn count_param(v: f32, max: usize) -> Result<usize, Error> {
    if v >= 0.0 && v <= max as f32 && v == libm::floorf(v) {
        Ok(v as usize)
    } else {
        Err(Error::BadModel("count parameter out of range"))
    }
}

impl<'a> CitationKnn<'a> {
    pub(crate) fn from_sections(
        sections: &Sections<'a>,
        encoding: Encoding,
        d: usize,
    ) -> Result<Self, Error> {
        let instances = sections.require(tag::REF_INSTANCES)?;
        let n_inst = instances.rows;
        let elem = match encoding {
            Encoding::F32 => Elem::F32,
            Encoding::Q15 | Encoding::Q7 => Elem::I16,
        };
        instances.expect(elem, n_inst, d)?;
        let scale = if encoding == Encoding::F32 {
            instances.expect_finite()?;
            None
        } else {
            let s = sections.f32_vec(tag::REF_SCALE, d)?;
            if (0..d).any(|k| s.f32_at(k) <= 0.0) {
                return Err(Error::BadModel("reference scale not positive"));
            }
            Some(s)
        };
        let bags = sections.require(tag::REF_BAGS)?;
        let n_bags = bags.cols.saturating_sub(1);
        bags.expect(Elem::U32, 1, n_bags + 1)?;
        if n_bags == 0 || bags.u32_at(0) != 0 || bags.u32_at(n_bags) as usize != n_inst {
            return Err(Error::BadModel(
                "reference bag offsets do not cover the instances",
            ));
        }
        if (0..n_bags).any(|b| bags.u32_at(b + 1) <= bags.u32_at(b)) {
            return Err(Error::BadModel("empty or unordered reference bag"));
        }
        let params = sections.f32_vec(tag::PARAMS, 2)?;
        let references = count_param(params.f32_at(0), MAX_REFERENCES.min(n_bags))?;
        let n_classes = count_param(params.f32_at(1), MAX_CLASSES)?;
        if n_classes < 2 {
            return Err(Error::BadModel("fewer than two classes"));
        }
        let labels = sections.require(tag::REF_LABELS)?;
        labels.expect(Elem::U32, 1, n_bags)?;
        if (0..n_bags).any(|b| labels.u32_at(b) as usize >= n_classes) {
            return Err(Error::BadModel("reference label out of range"));
        }
        let radii = sections.f32_vec(tag::CITER_RADII, n_bags)?;
        Ok(CitationKnn {
            instances,
            scale,
            bags,
            labels,
            radii,
            references,
            n_classes,
        })
    }

    /// Number of classes.
    pub fn n_classes(&self) -> usize {
        self.n_classes
    }

    /// Number of reference bags.
    pub fn n_bags(&self) -> usize {
        self.bags.cols.saturating_sub(1)
    }

    /// R.
    pub fn references(&self) -> usize {
        self.references
    }

    /// Bound on the quantisation error of coordinate `k` of every stored instance:
    /// half the coordinate's scale (0 for f32 models).
    pub fn coordinate_error(&self, k: usize) -> f32 {
        self.scale.map_or(0.0, |s| 0.5 * s.f32_at(k))
    }

    /// Citer radius of reference bag `b`.
    pub fn radius(&self, b: usize) -> f32 {
        self.radii.f32_at(b)
    }

    /// Minimal Hausdorff distance between the projected test bag `y` (n × d) and
    /// reference bag `b`.
    pub fn distance(&self, y: &[f32], d: usize, b: usize) -> f32 {
        match self.scale {
            Some(s) => self.distance_with(y, d, b, s.f32s().iter()),
            None => self.distance_with(y, d, b, F32s::default().iter()),
        }
    }

    /// [`CitationKnn::distance`] with the per-coordinate scales of a quantised model
    /// already decoded (`scales`, d values; ignored for f32 models). The inner loop reads
    /// one stored coordinate (`i16` or `f32` bytes) and one scale per squared difference,
    /// with no per-element dispatch on the element type.
    fn distance_with(
        &self,
        y: &[f32],
        d: usize,
        b: usize,
        scales: impl Iterator<Item = f32> + Clone,
    ) -> f32 {
        let (lo, hi) = (
            self.bags.u32_at(b) as usize,
            self.bags.u32_at(b + 1) as usize,
        );
        let mut best = f32::INFINITY;
        if d == 0 {
            return 0.0;
        }
        // The reference bag's rows as one byte range, walked row by row (no per-row
        // offset arithmetic); one loop per storage type, chosen once.
        let row_len = self.instances.cols * self.instances.elem.size();
        let rows = self
            .instances
            .bytes
            .get(lo.saturating_mul(row_len)..hi.saturating_mul(row_len))
            .unwrap_or_default();
        let rows = rows.chunks_exact(row_len.max(1));
        match self.scale {
            Some(_) => {
                for x in y.chunks_exact(d) {
                    for row in rows.clone() {
                        let s: f32 = row
                            .chunks_exact(2)
                            .zip(x)
                            .zip(scales.clone())
                            .map(|((r, &xk), sk)| {
                                let t = xk - le_i16(r) as f32 * sk;
                                t * t
                            })
                            .sum();
                        best = best.min(s);
                    }
                }
            }
            None => {
                for x in y.chunks_exact(d) {
                    for row in rows.clone() {
                        let s: f32 = row
                            .chunks_exact(4)
                            .zip(x)
                            .map(|(r, &xk)| {
                                let t = xk - le_f32(r);
                                t * t
                            })
                            .sum();
                        best = best.min(s);
                    }
                }
            }
        }
        libm::sqrtf(best)
    }

    /// Scratch values [`crate::Model::classify`] needs for an `n`-instance bag: the
    /// projected instances, one distance per reference bag and, for quantised models, the
    /// d coordinate scales.
    pub fn scratch_len(&self, n: usize, d: usize) -> usize {
        let scales = self.scale.map_or(0, |_| d);
        n.saturating_mul(d)
            .saturating_add(self.n_bags())
            .saturating_add(scales)
    }

    /// Classifies an `n`-instance bag; `scores` receives the normalised votes per class.
    pub(crate) fn classify(
        &self,
        stage: &Stage<'_>,
        bag: Instances<'_>,
        n: usize,
        scratch: &mut [f32],
        scores: &mut [f32],
    ) -> Result<Decision, Error> {
        let d = stage.output_dim();
        let n_bags = self.n_bags();
        let needed = self.scratch_len(n, d);
        if scratch.len() < needed || scores.len() < self.n_classes {
            return Err(Error::BufferTooSmall {
                needed,
                got: scratch.len(),
            });
        }
        let (y, rest) = split(scratch, n * d);
        let (dist, rest) = split(rest, n_bags);
        let (scales, _) = split(rest, self.scale.map_or(0, |_| d));
        let (scores, _) = split(scores, self.n_classes);
        for (i, row) in y.chunks_exact_mut(d.max(1)).enumerate() {
            stage.project_instance(bag, i, row)?;
        }
        // Quantised references: their per-coordinate scales, decoded once per bag.
        if let Some(s) = self.scale {
            scales.iter_mut().zip(s.f32s()).for_each(|(o, v)| *o = v);
        }
        // The R smallest distances so far, ascending: the R-th is the reference cut-off.
        // (Distances are never NaN: `distance` takes a minimum, which skips NaN.)
        let r = self.references;
        let mut nearest = heapless::Vec::<f32, MAX_REFERENCES>::new();
        for (b, db) in dist.iter_mut().enumerate() {
            *db = self.distance_with(y, d, b, scales.iter().copied());
            let pos = nearest.partition_point(|&v| v <= *db);
            if pos < r {
                // Insert at `pos`, shifting the larger ones up; a full list drops its
                // largest (R ≤ MAX_REFERENCES, checked at parse).
                let mut v = *db;
                for slot in nearest.iter_mut().skip(pos) {
                    core::mem::swap(slot, &mut v);
                }
                if nearest.len() < r {
                    let _ = nearest.push(v);
                }
            }
        }
        let cut = match r {
            0 => f32::NEG_INFINITY,
            // R ≤ the number of reference bags (checked at parse): the list is full.
            _ => nearest.get(r - 1).copied().unwrap_or(f32::INFINITY),
        };
        scores.iter_mut().for_each(|s| *s = 1.0 / n_bags as f32);
        for (b, (&db, radius)) in dist.iter().zip(self.radii.f32s()).enumerate() {
            let label = self.labels.u32_at(b) as usize;
            let votes = u8::from(db <= cut) + u8::from(db <= radius);
            if let Some(s) = scores.get_mut(label) {
                *s += votes as f32;
            }
        }
        let total: f32 = scores.iter().sum();
        scores.iter_mut().for_each(|s| *s /= total);
        let (label, score) = argmax_first(scores);
        Ok(Decision {
            label,
            score,
            witness: None,
        })
    }
}
