//! Citation-kNN (Wang & Zucker 2000) over stored, projected reference bags: the minimal
//! Hausdorff distance from the test bag to every reference bag, the R nearest references
//! and the citers — reference bags t that would count the test bag among their C nearest
//! neighbours, i.e. whose distance to it is at most t's citer radius (the distance from t
//! to its C-th nearest other reference bag, precomputed on the host). Majority vote over
//! references and citers; a tie goes to the lowest class index (the negative class).
//!
//! Memory is bounded: the test bag's projected instances go into the caller's scratch
//! (n × d values) and R is at most [`MAX_REFERENCES`].
//!
//! `PARAMS` holds `[R, number of classes]`. Quantised models store the reference
//! instances with one scale per coordinate (`REF_SCALE`): coordinate k of a stored
//! instance is `scale_k · q`, off by at most `scale_k/2` from the host's value.

use crate::error::Error;
use crate::model::{tag, Decision, Elem, Encoding, Instances, Model, Section, Sections};

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

/// A whole number stored in an f32 parameter, within `1..=max`.
fn count_param(v: f32, max: usize) -> Result<usize, Error> {
    if v >= 1.0 && v <= max as f32 && v == libm::floorf(v) {
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
        instances.expect(encoding.elem(), n_inst, d)?;
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
        self.bags.cols - 1
    }

    /// R.
    pub fn references(&self) -> usize {
        self.references
    }

    /// Coordinate `k` of stored instance `i`.
    fn coord(&self, i: usize, k: usize, d: usize) -> f32 {
        let v = self.instances.f32_at(i * d + k);
        self.scale.map_or(v, |s| v * s.f32_at(k))
    }

    /// Minimal Hausdorff distance between the projected test bag `y` (n × d) and
    /// reference bag `b`.
    pub fn distance(&self, y: &[f32], d: usize, b: usize) -> f32 {
        let (lo, hi) = (
            self.bags.u32_at(b) as usize,
            self.bags.u32_at(b + 1) as usize,
        );
        let mut best = f32::INFINITY;
        for x in y.chunks_exact(d) {
            for i in lo..hi {
                let s: f32 = (0..d)
                    .map(|k| {
                        let t = x[k] - self.coord(i, k, d);
                        t * t
                    })
                    .sum();
                best = best.min(s);
            }
        }
        libm::sqrtf(best)
    }

    /// Classifies an `n`-instance bag; `scores` receives the votes per class.
    pub(crate) fn classify(
        &self,
        model: &Model<'_>,
        bag: Instances<'_>,
        n: usize,
        scratch: &mut [f32],
        scores: &mut [f32],
    ) -> Result<Decision, Error> {
        let d = model.projected_dim();
        let y = scratch
            .get_mut(..n.saturating_mul(d))
            .ok_or(Error::BufferTooSmall {
                needed: n * d,
                got: 0,
            })?;
        for (i, row) in y.chunks_exact_mut(d).enumerate() {
            model.instance_into(bag, i, row)?;
        }
        // The R nearest references, sorted by distance; ties keep the lower bag index.
        let mut nearest = [(f32::INFINITY, 0usize); MAX_REFERENCES];
        let r = self.references;
        scores.iter_mut().for_each(|s| *s = 0.0);
        for b in 0..self.n_bags() {
            let dist = self.distance(y, d, b);
            let label = self.labels.u32_at(b) as usize;
            if dist <= self.radii.f32_at(b) {
                scores[label] += 1.0; // b cites the test bag
            }
            if dist < nearest[r - 1].0 {
                let mut pos = r - 1;
                while pos > 0 && dist < nearest[pos - 1].0 {
                    nearest[pos] = nearest[pos - 1];
                    pos -= 1;
                }
                nearest[pos] = (dist, label);
            }
        }
        for &(dist, label) in &nearest[..r] {
            if dist.is_finite() {
                scores[label] += 1.0;
            }
        }
        let (label, score) =
            scores
                .iter()
                .enumerate()
                .fold((0, f32::NEG_INFINITY), |(bi, bv), (i, &v)| {
                    if v > bv {
                        (i, v)
                    } else {
                        (bi, bv)
                    }
                });
        Ok(Decision { label, score })
    }
}
