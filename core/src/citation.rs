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
//!
//! When every coordinate shares one scale (the exporter writes it so) and every stored
//! value lies within ±[`fixed::DIST_MAX`], distances are computed in integers: each query
//! instance is quantised to the references' step (at most [`MAX_INTEGER_DIM`]
//! coordinates, on the stack) and the squared differences summed exactly
//! ([`fixed::sq_dist_q15`]: `SSUB16` + `SMLALD` on a Cortex-M4). A query instance with a
//! coordinate beyond ±16383 steps falls back to the float formula for that instance, so no
//! distance is clipped. The query's rounding adds half a step per coordinate to the
//! references' half step ([`CitationKnn::coordinate_error`]).

use crate::bag::{argmax_first, Decision, Instances};
use crate::container::{le_f32, le_i16, tag, Elem, Encoding, F32s, Section, Sections};
use crate::error::Error;
use crate::fixed;
use crate::project::Stage;
use crate::score::split;

/// Largest R (number of nearest references) the core supports.
pub const MAX_REFERENCES: usize = 32;
/// Largest number of classes.
pub const MAX_CLASSES: usize = 64;
/// Largest projected dimension for which distances are computed in integers (the
/// quantised query instance lives on the stack: 2 bytes per coordinate).
pub const MAX_INTEGER_DIM: usize = 64;

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
    /// The one step of every coordinate, when distances are computed in integers.
    integer_step: Option<f32>,
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
        let integer_step = scale.and_then(|s| {
            let step = s.f32_at(0);
            let one_step = (0..d).all(|k| s.f32_at(k) == step);
            let in_range = instances
                .bytes
                .chunks_exact(2)
                .all(|b| i32::from(le_i16(b)).abs() <= fixed::DIST_MAX);
            (one_step && in_range && d <= MAX_INTEGER_DIM).then_some(step)
        });
        Ok(CitationKnn {
            instances,
            scale,
            bags,
            labels,
            radii,
            references,
            n_classes,
            integer_step,
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

    /// Bound on what the stored model adds to the error of coordinate `k` of a
    /// query–reference difference: half the coordinate's scale for the stored instance,
    /// and on the integer path another half step for the query's rounding (0 for f32
    /// models).
    pub fn coordinate_error(&self, k: usize) -> f32 {
        match self.integer_step {
            Some(step) => step,
            None => self.scale.map_or(0.0, |s| 0.5 * s.f32_at(k)),
        }
    }

    /// Whether distances are computed in integers (one step for every coordinate, stored
    /// values within ±16383, at most [`MAX_INTEGER_DIM`] coordinates).
    pub fn integer_distances(&self) -> bool {
        self.integer_step.is_some()
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
        if d == 0 {
            return 0.0;
        }
        let rows = self.bag_rows(b);
        let mut best = f32::INFINITY;
        if let Some(step) = self.integer_step {
            let mut q = [0i16; MAX_INTEGER_DIM];
            let q = q.get_mut(..d).unwrap_or_default();
            for x in y.chunks_exact(d) {
                let fits = quantise_query(x, step, q);
                best = best.min(nearest_row(
                    x,
                    fits.then_some(&*q),
                    rows.clone(),
                    step,
                    scales.clone(),
                ));
            }
            return libm::sqrtf(best);
        }
        match self.scale {
            Some(_) => {
                for x in y.chunks_exact(d) {
                    best = best.min(float_min(x, rows.clone(), scales.clone()));
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

    /// Reference bag `b`'s stored rows as one byte range, walked row by row (no per-row
    /// offset arithmetic).
    fn bag_rows(&self, b: usize) -> core::slice::ChunksExact<'a, u8> {
        let (lo, hi) = (
            self.bags.u32_at(b) as usize,
            self.bags.u32_at(b + 1) as usize,
        );
        let row_len = self.row_len();
        let rows = self
            .instances
            .bytes
            .get(lo.saturating_mul(row_len)..hi.saturating_mul(row_len))
            .unwrap_or_default();
        rows.chunks_exact(row_len.max(1))
    }

    /// Every stored row, in order (reference bags one after another).
    fn rows(&self) -> core::slice::ChunksExact<'a, u8> {
        self.instances.bytes.chunks_exact(self.row_len().max(1))
    }

    /// Bytes per stored row.
    fn row_len(&self) -> usize {
        self.instances.cols * self.instances.elem.size()
    }

    /// The squared distances of every reference bag to the query bag `y` on the integer
    /// path, into `dist` (then their square roots): each query instance is quantised once
    /// and meets every reference row, so a bag's classification quantises n instances,
    /// not n per reference bag. Equal, value for value, to [`CitationKnn::distance_with`]
    /// per bag (the same per-instance minima, and a minimum does not depend on order).
    /// Never inlined: in its own function the loops keep their registers whatever else a
    /// firmware inlines around the call (inlined, an unrelated change to the projection
    /// code moved register spills into them: +0.2 instructions per squared difference).
    #[inline(never)]
    fn integer_distances_into(
        &self,
        y: &[f32],
        d: usize,
        step: f32,
        scales: impl Iterator<Item = f32> + Clone,
        dist: &mut [f32],
    ) {
        dist.fill(f32::INFINITY);
        let mut q = [0i16; MAX_INTEGER_DIM];
        let q = q.get_mut(..d).unwrap_or_default();
        for x in y.chunks_exact(d.max(1)) {
            let fits = quantise_query(x, step, q);
            // All stored rows in one walk, bag after bag (the parser checked that the
            // offsets start at 0, increase and end at the last row).
            let mut rows = self.rows();
            for (b, db) in dist.iter_mut().enumerate() {
                let len = self.bags.u32_at(b + 1).wrapping_sub(self.bags.u32_at(b)) as usize;
                let bag_rows = rows.by_ref().take(len);
                *db = db.min(nearest_row(
                    x,
                    fits.then_some(&*q),
                    bag_rows,
                    step,
                    scales.clone(),
                ));
            }
        }
        dist.iter_mut().for_each(|v| *v = libm::sqrtf(*v));
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
        match self.integer_step {
            Some(step) if d > 0 => {
                self.integer_distances_into(y, d, step, scales.iter().copied(), dist)
            }
            _ => {
                for (b, db) in dist.iter_mut().enumerate() {
                    *db = self.distance_with(y, d, b, scales.iter().copied());
                }
            }
        }
        // The R smallest distances so far, ascending: the R-th is the reference cut-off.
        // (Distances are never NaN: `distance` takes a minimum, which skips NaN.)
        let r = self.references;
        let mut nearest = heapless::Vec::<f32, MAX_REFERENCES>::new();
        for db in dist.iter() {
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

/// Quantises the projected query instance `x` to the references' `step` into `q`;
/// `false` (and `q` meaningless) when a coordinate lies beyond ±[`fixed::DIST_MAX`] steps
/// or is NaN, so that no distance is clipped.
#[inline]
fn quantise_query(x: &[f32], step: f32, q: &mut [i16]) -> bool {
    let inv = 1.0 / step;
    let mut fits = true;
    for (qk, &xk) in q.iter_mut().zip(x) {
        let t = xk * inv;
        fits &= t.abs() <= fixed::DIST_MAX as f32;
        *qk = fixed::round_clamp(t, fixed::DIST_MAX) as i16;
    }
    fits
}

/// The smallest squared distance from the query instance `x` to the stored `rows` on the
/// integer path: in integers from its quantised form `q`, or by the float formula when it
/// did not fit the references' step.
#[inline]
fn nearest_row<'r>(
    x: &[f32],
    q: Option<&[i16]>,
    rows: impl Iterator<Item = &'r [u8]>,
    step: f32,
    scales: impl Iterator<Item = f32> + Clone,
) -> f32 {
    match q {
        Some(q) => integer_min(q, rows, step),
        None => float_min(x, rows, scales),
    }
}

/// The smallest squared distance from the quantised query instance `q` to the stored
/// `rows`, exact in integers ([`fixed::sq_dist_q15`]), in squared units of the data.
/// Always inlined: called once per query instance and stored bag, its loop setup outside
/// the caller's loop cost 0.6 instructions per squared difference on a Cortex-M4.
#[inline(always)]
fn integer_min<'r>(q: &[i16], rows: impl Iterator<Item = &'r [u8]>, step: f32) -> f32 {
    let m = rows.map(|row| fixed::sq_dist_q15(q, row)).min();
    // Two word conversions (one instruction each on a Cortex-M4F) instead of the library
    // call a `u64 → f32` conversion takes there: within 3·2⁻²⁴ relative, and the same on
    // the host (plain f32 arithmetic, no fused multiply-add), so citer radii computed
    // there still match what the device computes.
    let to_f32 = |m: u64| (m >> 32) as u32 as f32 * 4_294_967_296.0 + m as u32 as f32;
    m.map_or(f32::INFINITY, |m| to_f32(m) * (step * step))
}

/// The smallest squared distance from the instance `x` to the stored quantised `rows`,
/// each coordinate dequantised with its own scale.
#[inline]
fn float_min<'r>(
    x: &[f32],
    rows: impl Iterator<Item = &'r [u8]>,
    scales: impl Iterator<Item = f32> + Clone,
) -> f32 {
    let mut best = f32::INFINITY;
    for row in rows {
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
    best
}
