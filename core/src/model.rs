//! The model container: a trained model as one byte string the core reads in place
//! (for example from `include_bytes!` in flash), without copying or allocating.
//!
//! Layout, all integers little-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `MILM` |
//! | 4 | 2 | format version ([`VERSION`]) |
//! | 6 | 1 | model kind ([`ModelKind`]) |
//! | 7 | 1 | scalar encoding ([`Encoding`]) |
//! | 8 | 4 | input dimension D |
//! | 12 | 4 | output dimension (classes, clusters, or d for a bare projection) |
//! | 16 | 4 | total length in bytes (trailing bytes after it, e.g. erased flash, are ignored) |
//! | 20 | 2 | number of sections (at most [`MAX_SECTIONS`]) |
//! | 22 | 2 | reserved, 0 |
//! | 24 | 4 | CRC-32 (IEEE) of bytes `0..24` followed by bytes `28..total` |
//! | 28 | 4 | reserved, 0 |
//! | 32 | 16·n | section table: tag `u16`, element type `u8`, reserved `u8` = 0, offset `u32`, rows `u32`, cols `u32` |
//!
//! Section payloads follow the table, each starting at a multiple of [`ALIGN`] bytes, in
//! ascending order without overlap; a payload is `rows × cols` elements, row-major.
//! Quantised matrices carry a per-row scale (`f32`) and a per-row accumulator shift
//! (`u32`) in companion sections. Every field is checked by [`Model::parse`]: a
//! truncated, corrupted or hostile input gives an [`Error`], never a panic.

use core::ops::Range;

use crate::citation::CitationKnn;
use crate::cluster::M3ic;
use crate::error::Error;
use crate::fixed;
use crate::project::Projection;
use crate::score::LinearScorer;
use crate::svm::SetKernelSvm;

/// First four bytes of every model.
pub const MAGIC: [u8; 4] = *b"MILM";
/// The container format version this core reads and the host writes.
pub const VERSION: u16 = 1;
/// Bytes of the fixed header.
pub const HEADER_LEN: usize = 32;
/// Bytes of one section-table entry.
pub const ENTRY_LEN: usize = 16;
/// Alignment of every section payload, in bytes.
pub const ALIGN: usize = 4;
/// Largest number of sections a model may have.
pub const MAX_SECTIONS: usize = 16;
/// Largest |e| of an input quantisation step 2^e.
pub const MAX_INPUT_EXP: i32 = 60;
/// Offset of the checksum field in the header.
pub const CHECKSUM_OFFSET: usize = 24;

/// What a model computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    /// A linear projection alone: instance in, projected instance out.
    Projection = 1,
    /// Projection, linear instance scores, pooling over the bag (MILR, MI-ALM).
    LinearMil = 2,
    /// Projection, Citation-kNN over stored reference bags.
    CitationKnn = 3,
    /// Projection, M³IC cluster assignment.
    M3ic = 4,
    /// SVM over stored bags with a box-counting set kernel (GMIL §8): see [`crate::svm`].
    SetKernelSvm = 5,
}

impl ModelKind {
    /// The kind with this code.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(ModelKind::Projection),
            2 => Some(ModelKind::LinearMil),
            3 => Some(ModelKind::CitationKnn),
            4 => Some(ModelKind::M3ic),
            5 => Some(ModelKind::SetKernelSvm),
            _ => None,
        }
    }

    /// Lower-case name, as `mil inspect` prints it.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Projection => "projection",
            ModelKind::LinearMil => "linear-mil",
            ModelKind::CitationKnn => "citation-knn",
            ModelKind::M3ic => "m3ic",
            ModelKind::SetKernelSvm => "set-kernel-svm",
        }
    }
}

/// How the weights of a model are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum Encoding {
    /// 32-bit IEEE floats.
    F32 = 0,
    /// 16-bit fixed point with a per-row scale.
    Q15 = 1,
    /// 8-bit fixed point with a per-row scale.
    Q7 = 2,
}

impl Encoding {
    /// The encoding with this code.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Encoding::F32),
            1 => Some(Encoding::Q15),
            2 => Some(Encoding::Q7),
            _ => None,
        }
    }

    /// Lower-case name (`f32`, `q15`, `q7`).
    pub fn name(self) -> &'static str {
        match self {
            Encoding::F32 => "f32",
            Encoding::Q15 => "q15",
            Encoding::Q7 => "q7",
        }
    }

    /// The element type of a weight matrix in this encoding.
    pub fn elem(self) -> Elem {
        match self {
            Encoding::F32 => Elem::F32,
            Encoding::Q15 => Elem::I16,
            Encoding::Q7 => Elem::I8,
        }
    }

    /// Largest stored magnitude of a quantised value (0 for f32).
    pub fn q_max(self) -> i32 {
        match self {
            Encoding::F32 => 0,
            Encoding::Q15 => fixed::Q15_MAX,
            Encoding::Q7 => fixed::Q7_MAX,
        }
    }
}

/// Element type of a section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    /// `f32`.
    F32 = 0,
    /// `i16` (Q15).
    I16 = 1,
    /// `i8` (Q7).
    I8 = 2,
    /// `u32`.
    U32 = 3,
    /// `f64`.
    F64 = 4,
    /// `u16`.
    U16 = 5,
}

impl Elem {
    /// The element type with this code.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Elem::F32),
            1 => Some(Elem::I16),
            2 => Some(Elem::I8),
            3 => Some(Elem::U32),
            4 => Some(Elem::F64),
            5 => Some(Elem::U16),
            _ => None,
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Elem::F64 => 8,
            Elem::F32 | Elem::U32 => 4,
            Elem::I16 | Elem::U16 => 2,
            Elem::I8 => 1,
        }
    }
}

/// Section tags. A model has each at most once.
pub mod tag {
    /// Projection weights, d × D (row k = output k), in the model's encoding.
    pub const PROJ_WEIGHTS: u16 = 1;
    /// Per-row scale of quantised projection weights, 1 × d, `f32`.
    pub const PROJ_SCALE: u16 = 2;
    /// Per-row accumulator shift of quantised projection weights, 1 × d, `u32`.
    pub const PROJ_SHIFT: u16 = 3;
    /// Projection bias (−G'ᵀμ after folding), 1 × d, `f32`.
    pub const PROJ_BIAS: u16 = 4;
    /// Input quantisation step per feature as a power of two 2^e (quantised models):
    /// the exponents e, 1 × D, `i8`.
    pub const INPUT_EXP: u16 = 5;
    /// Linear scorer weights, C' × d, in the model's encoding.
    pub const SCORE_WEIGHTS: u16 = 6;
    /// Per-row scale of quantised scorer weights, 1 × C', `f32`.
    pub const SCORE_SCALE: u16 = 7;
    /// Scorer bias, 1 × C', `f32`.
    pub const SCORE_BIAS: u16 = 8;
    /// Scalar parameters of the model kind, `f32` (see each kind).
    pub const PARAMS: u16 = 9;
    /// Projected instances of the reference bags, n × d: `f32`, or `i16` in Q15 and Q7.
    pub const REF_INSTANCES: u16 = 10;
    /// Per-column scale of quantised reference instances, 1 × d, `f32`.
    pub const REF_SCALE: u16 = 11;
    /// Reference bag boundaries, 1 × (bags + 1), `u32`.
    pub const REF_BAGS: u16 = 12;
    /// Reference bag labels, 1 × bags, `u32`.
    pub const REF_LABELS: u16 = 13;
    /// Citer radius of each reference bag, 1 × bags, `f32`.
    pub const CITER_RADII: u16 = 14;
    /// Smallest rounded training value per feature of a box-kernel grid, 1 × D, `f64`
    /// (integers below 2⁵³, exact).
    pub const GRID_MIN: u16 = 15;
    /// Grid size sᵢ per feature of a box-kernel grid, 1 × D, `u32`.
    pub const GRID_SIZE: u16 = 16;
    /// Grid points of the stored bags, n × D, `u16` (when every sᵢ fits) or `u32`.
    pub const REF_POINTS: u16 = 17;
    /// Integer settings of a set kernel, 1 × 5, `u32`: kernel, estimator, precision
    /// (two's complement), seed low and high words (see [`crate::svm`]).
    pub const KERNEL_CONFIG: u16 = 18;
    /// Real settings of a set kernel SVM, 1 × 5, `f64`: ε, δ, ρ, log offset T, bias b.
    pub const KERNEL_PARAMS: u16 = 19;
    /// Per-feature affine map z_j = a_j·v_j + c_j of an M³IC model whose instances are
    /// scaled to unit length: 2 × D, `f32`, row 0 the a_j, row 1 the c_j, where v_j is
    /// feature j as the device receives it (f32, or the quantised integer).
    pub const INSTANCE_NORM: u16 = 20;
    /// A diagonal projection stage y_j = a_j·v_j + c_j in place of `PROJ_WEIGHTS` …
    /// `PROJ_BIAS`: 2 × D, `f32`, row 0 the a_j, row 1 the c_j, with v_j as in
    /// [`INSTANCE_NORM`] ([`crate::project`]).
    pub const PROJ_DIAGONAL: u16 = 21;
    /// Rounding radius δ_k of each row of quantised projection weights: the largest
    /// |W_kj − t_k q_kj| / t_k, 1 × d, `f32` in [0, 1]. Absent: ½ (nearest rounding);
    /// present when the weights were rounded with error feedback ([`crate::project`]).
    pub const PROJ_ROUNDING: u16 = 22;
    /// Largest tag value.
    pub const MAX: u16 = 22;
}

/// One section of a parsed model: where its payload is and its shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section<'a> {
    /// Element type.
    pub elem: Elem,
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// The payload, `rows × cols × elem.size()` bytes.
    pub bytes: &'a [u8],
}

impl<'a> Section<'a> {
    /// Element `i` (row-major) as `f32`: floats as stored (`f64` rounded), integers
    /// converted; 0 out of range.
    pub fn f32_at(&self, i: usize) -> f32 {
        match self.elem {
            Elem::F32 => f32::from_le_bytes(self.word(i)),
            Elem::F64 => self.f64_at(i) as f32,
            Elem::U32 | Elem::U16 => self.u32_at(i) as f32,
            Elem::I16 | Elem::I8 => self.i32_at(i) as f32,
        }
    }

    /// Element `i` as `f64` (`f64` sections exactly; others through [`Section::f32_at`]);
    /// 0 out of range.
    pub fn f64_at(&self, i: usize) -> f64 {
        match (self.elem, self.bytes.get(i * 8..i * 8 + 8)) {
            (Elem::F64, Some(&[a, b, c, d, e, f, g, h])) => {
                f64::from_le_bytes([a, b, c, d, e, f, g, h])
            }
            (Elem::F64, _) => 0.0,
            _ => self.f32_at(i) as f64,
        }
    }

    /// Element `i` as an integer (`i16`/`i8`/`u16`/`u32` widened; floats truncated); 0
    /// out of range. Each arm checks its own bounds, so the integer arms stay a few
    /// instructions and the `f64` arm's soft-float conversion does not burden them.
    pub fn i32_at(&self, i: usize) -> i32 {
        match self.elem {
            Elem::I16 => match self.bytes.get(i * 2..i * 2 + 2) {
                Some(&[a, c]) => i16::from_le_bytes([a, c]) as i32,
                _ => 0,
            },
            Elem::I8 => self.bytes.get(i).map_or(0, |&a| a as i8 as i32),
            Elem::U32 | Elem::U16 => self.u32_at(i) as i32,
            Elem::F32 => f32::from_le_bytes(self.word(i)) as i32,
            Elem::F64 => self.f64_at(i) as i32,
        }
    }

    /// Element `i` of a `u32` or `u16` section as `u32`; 0 out of range or for other types.
    pub fn u32_at(&self, i: usize) -> u32 {
        match self.elem {
            Elem::U16 => match self.bytes.get(i * 2..i * 2 + 2) {
                Some(&[a, b]) => u32::from(u16::from_le_bytes([a, b])),
                _ => 0,
            },
            _ => u32::from_le_bytes(self.word(i)),
        }
    }

    /// The largest |element| among elements `elements` (row-major) of an integer
    /// section, as [`Section::i32_at`] reads them (so elements past the end count as 0);
    /// 0 for an empty range.
    pub fn max_abs(&self, elements: Range<usize>) -> u32 {
        self.fold_abs(elements, 0, u32::max)
    }

    /// The sum of |element| over elements `elements` (row-major) of an integer section,
    /// as [`Section::i32_at`] reads them (so elements past the end count as 0).
    pub fn abs_sum(&self, elements: Range<usize>) -> u64 {
        self.fold_abs(elements, 0, |sum, a| sum + u64::from(a))
    }

    /// Folds `f` over |element| for elements `elements`. `i16` and `i8` sections (every
    /// quantised weight of a model) are decoded straight from their bytes, without
    /// [`Section::i32_at`]'s per-element dispatch on the element type and its bounds
    /// arithmetic: the validation loops of [`Model::parse`] read each weight this way.
    fn fold_abs<B>(&self, elements: Range<usize>, init: B, f: impl FnMut(B, u32) -> B) -> B {
        let size = self.elem.size();
        let n = self.bytes.len() / size;
        let end = elements.end.min(n);
        let start = elements.start.min(end);
        let bytes = self.bytes.get(start * size..end * size).unwrap_or(&[]);
        match self.elem {
            Elem::I16 => bytes
                .chunks_exact(2)
                .map(|b| u32::from(i16::from_le_bytes([b[0], b[1]]).unsigned_abs()))
                .fold(init, f),
            Elem::I8 => bytes
                .iter()
                .map(|&b| u32::from((b as i8).unsigned_abs()))
                .fold(init, f),
            Elem::F32 | Elem::U32 | Elem::F64 | Elem::U16 => (start..end)
                .map(|i| self.i32_at(i).unsigned_abs())
                .fold(init, f),
        }
    }

    fn word(&self, i: usize) -> [u8; 4] {
        match self.bytes.get(i * 4..i * 4 + 4) {
            Some(&[a, b, c, d]) => [a, b, c, d],
            _ => [0; 4],
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.rows * self.cols
    }

    /// True when the section has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checks the shape.
    pub fn expect(&self, elem: Elem, rows: usize, cols: usize) -> Result<(), Error> {
        if self.elem != elem {
            return Err(Error::BadModel("section has the wrong element type"));
        }
        if self.rows != rows || self.cols != cols {
            return Err(Error::BadModel("section has the wrong shape"));
        }
        Ok(())
    }

    /// Checks that every element is a finite float (for `f32` sections).
    pub fn expect_finite(&self) -> Result<(), Error> {
        if (0..self.len()).all(|i| self.f32_at(i).is_finite()) {
            Ok(())
        } else {
            Err(Error::BadModel("non-finite value in a float section"))
        }
    }
}

/// A weight matrix in the model's encoding: `rows × cols`, with a per-row scale and
/// accumulator shift when quantised. Row `r` dequantises to `scale[r] · q[r][c]`.
#[derive(Debug, Clone, Copy)]
pub struct Weights<'a> {
    /// The stored values.
    pub values: Section<'a>,
    /// Per-row scale (quantised encodings).
    pub scale: Option<Section<'a>>,
    /// Per-row accumulator shift (quantised projections).
    pub shift: Option<Section<'a>>,
}

impl<'a> Weights<'a> {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.values.rows
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        self.values.cols
    }

    /// The dequantised value at (`r`, `c`).
    pub fn get(&self, r: usize, c: usize) -> f32 {
        let v = self.values.f32_at(r * self.cols() + c);
        match &self.scale {
            Some(s) => v * s.f32_at(r),
            None => v,
        }
    }

    /// The stored bytes of row `r` (empty when out of range).
    fn row_bytes(&self, r: usize) -> &'a [u8] {
        let n = self.cols() * self.values.elem.size();
        self.values.bytes.get(r * n..(r + 1) * n).unwrap_or(&[])
    }

    /// `Σ_c w[r][c] · x[c]` in `f32` (weights dequantised by one multiply per row).
    pub fn dot_f32(&self, r: usize, x: &[f32]) -> f32 {
        let row = self.row_bytes(r);
        let sum: f32 = match self.values.elem {
            Elem::F32 => row
                .chunks_exact(4)
                .zip(x)
                .map(|(b, &v)| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) * v)
                .sum(),
            Elem::I16 => row
                .chunks_exact(2)
                .zip(x)
                .map(|(b, &v)| i16::from_le_bytes([b[0], b[1]]) as f32 * v)
                .sum(),
            Elem::I8 => row.iter().zip(x).map(|(&b, &v)| b as i8 as f32 * v).sum(),
            Elem::U32 | Elem::U16 | Elem::F64 => 0.0,
        };
        match &self.scale {
            Some(s) => sum * s.f32_at(r),
            None => sum,
        }
    }

    /// `scale[r] · 2^shift[r] · Σ_c round_shift(q[r][c] · x[c], shift[r])`: the fixed-point
    /// dot product of a quantised row with quantised inputs (see [`fixed::dot_shifted`]).
    pub fn dot_q(&self, r: usize, x: &[i16]) -> f32 {
        let row = self.row_bytes(r);
        let shift = self.shift.map_or(0, |s| s.u32_at(r));
        let acc = match self.values.elem {
            Elem::I16 => fixed::dot_shifted(
                row.chunks_exact(2)
                    .map(|b| i16::from_le_bytes([b[0], b[1]])),
                x,
                shift,
            ),
            Elem::I8 => fixed::dot_shifted(row.iter().map(|&b| b as i8 as i16), x, shift),
            Elem::F32 | Elem::U32 | Elem::U16 | Elem::F64 => 0,
        };
        let scale = self.scale.map_or(1.0, |s| s.f32_at(r));
        acc as f32 * scale * (1u64 << shift.min(40)) as f32
    }

    /// Builds the view and checks shapes against `rows × cols` in `encoding`.
    fn new(
        sections: &Sections<'a>,
        encoding: Encoding,
        values: u16,
        scale: u16,
        shift: Option<u16>,
        rows: usize,
        cols: usize,
    ) -> Result<Self, Error> {
        let v = sections.require(values)?;
        v.expect(encoding.elem(), rows, cols)?;
        if encoding == Encoding::F32 {
            v.expect_finite()?;
            if sections.get(scale).is_some() || shift.and_then(|t| sections.get(t)).is_some() {
                return Err(Error::BadModel("f32 weights with a quantisation scale"));
            }
            return Ok(Weights {
                values: v,
                scale: None,
                shift: None,
            });
        }
        let q_max = encoding.q_max();
        if v.max_abs(0..v.len()) > q_max.unsigned_abs() {
            return Err(Error::BadModel(
                "quantised value outside the symmetric range",
            ));
        }
        let s = sections.require(scale)?;
        s.expect(Elem::F32, 1, rows)?;
        if (0..rows).any(|r| !(s.f32_at(r) > 0.0 && s.f32_at(r).is_finite())) {
            return Err(Error::BadModel(
                "quantisation scale not positive and finite",
            ));
        }
        let sh = match shift {
            Some(t) => {
                let sh = sections.require(t)?;
                sh.expect(Elem::U32, 1, rows)?;
                if (0..rows).any(|r| sh.u32_at(r) > 30) {
                    return Err(Error::BadModel("accumulator shift above 30"));
                }
                Some(sh)
            }
            None => None,
        };
        Ok(Weights {
            values: v,
            scale: Some(s),
            shift: sh,
        })
    }
}

/// The sections of a model by tag.
#[derive(Debug, Clone, Copy)]
pub struct Sections<'a> {
    by_tag: [Option<Section<'a>>; tag::MAX as usize + 1],
}

impl<'a> Sections<'a> {
    /// The section with this tag, if present.
    pub fn get(&self, t: u16) -> Option<Section<'a>> {
        self.by_tag.get(t as usize).copied().flatten()
    }

    /// The section with this tag, or an error naming it as missing.
    pub fn require(&self, t: u16) -> Result<Section<'a>, Error> {
        self.get(t)
            .ok_or(Error::BadModel("a section the model kind needs is missing"))
    }

    /// Weights of the model's encoding (see [`Weights`]).
    pub fn weights(
        &self,
        encoding: Encoding,
        values: u16,
        scale: u16,
        shift: Option<u16>,
        rows: usize,
        cols: usize,
    ) -> Result<Weights<'a>, Error> {
        Weights::new(self, encoding, values, scale, shift, rows, cols)
    }

    /// A finite `f32` vector section of the given length.
    pub fn f32_vec(&self, t: u16, len: usize) -> Result<Section<'a>, Error> {
        let s = self.require(t)?;
        s.expect(Elem::F32, 1, len)?;
        s.expect_finite()?;
        Ok(s)
    }
}

/// The fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Format version.
    pub version: u16,
    /// Model kind.
    pub kind: ModelKind,
    /// Scalar encoding.
    pub encoding: Encoding,
    /// Input dimension D.
    pub input_dim: usize,
    /// Output dimension: classes, clusters, or d for a bare projection.
    pub output_dim: usize,
    /// Length of the model in bytes.
    pub total_len: usize,
    /// Number of sections.
    pub n_sections: usize,
    /// Stored CRC-32.
    pub checksum: u32,
}

/// One bag's instances, row-major `n × D`: floats for f32 models, quantised `i16`
/// (see [`Model::quantize_instance`]) for Q15/Q7 models.
#[derive(Debug, Clone, Copy)]
pub enum Instances<'b> {
    /// Raw features.
    F32(&'b [f32]),
    /// Features quantised with the model's input scales.
    I16(&'b [i16]),
}

impl Instances<'_> {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Instances::F32(x) => x.len(),
            Instances::I16(x) => x.len(),
        }
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Instance `i` of a bag of `dim`-value instances.
    pub fn instance(&self, i: usize, dim: usize) -> Result<Self, Error> {
        let range = i * dim..(i + 1) * dim;
        Ok(match self {
            Instances::F32(x) => Instances::F32(x.get(range).ok_or(Error::Empty)?),
            Instances::I16(x) => Instances::I16(x.get(range).ok_or(Error::Empty)?),
        })
    }
}

/// What a bag classifier decided: the label and the pooled score of each class.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    /// Predicted class index (binary: 1 = positive).
    pub label: usize,
    /// The score of the positive class (binary) or of the predicted class.
    pub score: f32,
}

/// Number of instances in a row-major bag of `values` values with `dim` features each,
/// checking that it is whole and non-empty.
pub(crate) fn instance_count(values: usize, dim: usize) -> Result<usize, Error> {
    let n = values.checked_div(dim).unwrap_or(0);
    if n == 0 {
        return Err(Error::Empty);
    }
    if n * dim != values {
        return Err(Error::DimensionMismatch {
            expected: (n + 1) * dim,
            got: values,
        });
    }
    Ok(n)
}

/// The first index of the largest value and that value (ties go to the lower index, as
/// the host's argmax does); `(0, −∞)` for an empty slice.
pub(crate) fn argmax_first(values: &[f32]) -> (usize, f32) {
    values
        .iter()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |(bi, bv), (i, &v)| {
            if v > bv {
                (i, v)
            } else {
                (bi, bv)
            }
        })
}

/// A parsed model borrowing its bytes.
#[derive(Debug, Clone, Copy)]
pub struct Model<'a> {
    header: Header,
    projection: Option<Projection<'a>>,
    scorer: Option<LinearScorer<'a>>,
    citation: Option<CitationKnn<'a>>,
    cluster: Option<M3ic<'a>>,
    svm: Option<SetKernelSvm<'a>>,
    input_exp: Option<Section<'a>>,
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    match b.get(o..o + 2) {
        Some(&[x, y]) => u16::from_le_bytes([x, y]),
        _ => 0,
    }
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    match b.get(o..o + 4) {
        Some(&[x, y, z, w]) => u32::from_le_bytes([x, y, z, w]),
        _ => 0,
    }
}

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) continued from `crc`; start
/// with `0xFFFF_FFFF` and complement the result. Four bits at a time through a 64-byte
/// table: small in flash, about 8× faster than bit by bit.
pub fn crc32_update(mut crc: u32, bytes: &[u8]) -> u32 {
    const TABLE: [u32; 16] = {
        let mut t = [0u32; 16];
        let mut i = 0;
        while i < 16 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 4 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0xEDB8_8320
                } else {
                    c >> 1
                };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    };
    for &b in bytes {
        crc ^= b as u32;
        crc = (crc >> 4) ^ TABLE[(crc & 0xF) as usize];
        crc = (crc >> 4) ^ TABLE[(crc & 0xF) as usize];
    }
    crc
}

/// The checksum the header stores for these model bytes (`bytes` = the whole model).
pub fn model_checksum(bytes: &[u8]) -> u32 {
    let head = bytes.get(..CHECKSUM_OFFSET).unwrap_or(bytes);
    let tail = bytes.get(CHECKSUM_OFFSET + 4..).unwrap_or(&[]);
    !crc32_update(crc32_update(0xFFFF_FFFF, head), tail)
}

impl<'a> Model<'a> {
    /// Parses and validates a model. Never panics; never allocates.
    pub fn parse(bytes: &'a [u8]) -> Result<Model<'a>, Error> {
        let (header, sections) = Self::parse_layout(bytes)?;
        let mut model = Model {
            header,
            projection: None,
            scorer: None,
            citation: None,
            cluster: None,
            svm: None,
            input_exp: None,
        };
        let enc = header.encoding;
        let d_in = header.input_dim;
        // The SVM discretises raw f32 features; its encoding applies to its weights only.
        if enc != Encoding::F32 && header.kind != ModelKind::SetKernelSvm {
            let s = sections.require(tag::INPUT_EXP)?;
            s.expect(Elem::I8, 1, d_in)?;
            if s.max_abs(0..d_in) > MAX_INPUT_EXP.unsigned_abs() {
                return Err(Error::BadModel("input exponent out of range"));
            }
            model.input_exp = Some(s);
        } else if sections.get(tag::INPUT_EXP).is_some() {
            return Err(Error::BadModel(
                "input exponents in a model without quantised inputs",
            ));
        }
        let projection = if sections.get(tag::PROJ_WEIGHTS).is_some()
            || sections.get(tag::PROJ_DIAGONAL).is_some()
        {
            Some(Projection::from_sections(&sections, enc, d_in)?)
        } else {
            None
        };
        let d = projection.map_or(d_in, |p| p.output_dim());
        match header.kind {
            ModelKind::Projection => {
                let p = projection.ok_or(Error::BadModel("projection model without weights"))?;
                if p.output_dim() != header.output_dim {
                    return Err(Error::BadModel(
                        "output dimension disagrees with the header",
                    ));
                }
            }
            ModelKind::LinearMil => {
                if projection.is_none() {
                    return Err(Error::BadModel("linear model without its projection stage"));
                }
                let s = LinearScorer::from_sections(&sections, enc, d)?;
                if s.n_classes() != header.output_dim {
                    return Err(Error::BadModel("class count disagrees with the header"));
                }
                model.scorer = Some(s);
            }
            ModelKind::CitationKnn => {
                if enc != Encoding::F32 && projection.is_none() {
                    return Err(Error::BadModel("quantised Citation-kNN needs a projection"));
                }
                let c = CitationKnn::from_sections(&sections, enc, d)?;
                if c.n_classes() != header.output_dim {
                    return Err(Error::BadModel("class count disagrees with the header"));
                }
                model.citation = Some(c);
            }
            ModelKind::M3ic => {
                if enc != Encoding::F32 && projection.is_none() {
                    return Err(Error::BadModel("quantised M3IC needs a projection"));
                }
                let c = M3ic::from_sections(&sections, enc, d, header.input_dim)?;
                if c.n_clusters() != header.output_dim {
                    return Err(Error::BadModel("cluster count disagrees with the header"));
                }
                model.cluster = Some(c);
            }
            ModelKind::SetKernelSvm => {
                if projection.is_some() {
                    return Err(Error::BadModel("a set-kernel SVM has no projection stage"));
                }
                if header.output_dim != 2 {
                    return Err(Error::BadModel("a set-kernel SVM has two classes"));
                }
                model.svm = Some(SetKernelSvm::from_sections(&sections, enc, d_in)?);
            }
        }
        model.projection = projection;
        Ok(model)
    }

    /// Checks header, checksum and section table; returns the sections by tag.
    fn parse_layout(bytes: &'a [u8]) -> Result<(Header, Sections<'a>), Error> {
        if bytes.len() < HEADER_LEN {
            return Err(Error::Truncated {
                needed: HEADER_LEN,
                got: bytes.len(),
            });
        }
        if bytes.get(..4) != Some(&MAGIC[..]) {
            return Err(Error::BadModel("no MILM magic"));
        }
        let version = u16_at(bytes, 4);
        if version != VERSION {
            return Err(Error::UnsupportedVersion(version));
        }
        let kind = bytes
            .get(6)
            .and_then(|&c| ModelKind::from_code(c))
            .ok_or(Error::BadModel("unknown model kind"))?;
        let encoding = bytes
            .get(7)
            .and_then(|&c| Encoding::from_code(c))
            .ok_or(Error::BadModel("unknown scalar encoding"))?;
        let input_dim = u32_at(bytes, 8) as usize;
        let output_dim = u32_at(bytes, 12) as usize;
        let total_len = u32_at(bytes, 16) as usize;
        let n_sections = u16_at(bytes, 20) as usize;
        if u16_at(bytes, 22) != 0 || u32_at(bytes, 28) != 0 {
            return Err(Error::BadModel("reserved header field not zero"));
        }
        if input_dim == 0 || output_dim == 0 {
            return Err(Error::BadModel("zero dimension"));
        }
        if n_sections > MAX_SECTIONS {
            return Err(Error::BadModel("too many sections"));
        }
        let table_end = HEADER_LEN + ENTRY_LEN * n_sections;
        if total_len < table_end {
            return Err(Error::BadModel(
                "total length shorter than the section table",
            ));
        }
        let body = bytes.get(..total_len).ok_or(Error::Truncated {
            needed: total_len,
            got: bytes.len(),
        })?;
        let checksum = u32_at(body, CHECKSUM_OFFSET);
        let computed = model_checksum(body);
        if checksum != computed {
            return Err(Error::ChecksumMismatch {
                stored: checksum,
                computed,
            });
        }
        let mut sections = Sections {
            by_tag: [None; tag::MAX as usize + 1],
        };
        let mut end = table_end;
        for i in 0..n_sections {
            let e = HEADER_LEN + i * ENTRY_LEN;
            let t = u16_at(body, e);
            let elem = body
                .get(e + 2)
                .and_then(|&c| Elem::from_code(c))
                .ok_or(Error::BadModel("unknown element type"))?;
            if body.get(e + 3) != Some(&0) {
                return Err(Error::BadModel("reserved section field not zero"));
            }
            let offset = u32_at(body, e + 4) as usize;
            let rows = u32_at(body, e + 8) as usize;
            let cols = u32_at(body, e + 12) as usize;
            if t == 0 || t > tag::MAX {
                return Err(Error::BadModel("unknown section tag"));
            }
            if offset & (ALIGN - 1) != 0 {
                return Err(Error::BadModel("section not aligned"));
            }
            if offset < end {
                return Err(Error::BadModel("sections overlap or are out of order"));
            }
            let len = rows
                .checked_mul(cols)
                .and_then(|n| n.checked_mul(elem.size()))
                .ok_or(Error::BadModel("section size overflows"))?;
            let stop = offset
                .checked_add(len)
                .ok_or(Error::BadModel("section size overflows"))?;
            let payload = body.get(offset..stop).ok_or(Error::Truncated {
                needed: stop,
                got: total_len,
            })?;
            let slot = &mut sections.by_tag[t as usize];
            if slot.is_some() {
                return Err(Error::BadModel("duplicate section"));
            }
            *slot = Some(Section {
                elem,
                rows,
                cols,
                bytes: payload,
            });
            end = stop;
        }
        let header = Header {
            version,
            kind,
            encoding,
            input_dim,
            output_dim,
            total_len,
            n_sections,
            checksum,
        };
        Ok((header, sections))
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Model kind.
    pub fn kind(&self) -> ModelKind {
        self.header.kind
    }

    /// Scalar encoding.
    pub fn encoding(&self) -> Encoding {
        self.header.encoding
    }

    /// Input dimension D.
    pub fn input_dim(&self) -> usize {
        self.header.input_dim
    }

    /// Output dimension (classes, clusters or projected dimension).
    pub fn output_dim(&self) -> usize {
        self.header.output_dim
    }

    /// The projection stage, if the model has one.
    pub fn projection(&self) -> Option<&Projection<'a>> {
        self.projection.as_ref()
    }

    /// The dimension instances have after the projection stage.
    pub fn projected_dim(&self) -> usize {
        self.projection
            .map_or(self.header.input_dim, |p| p.output_dim())
    }

    /// The linear scorer of a [`ModelKind::LinearMil`] model.
    pub fn scorer(&self) -> Option<&LinearScorer<'a>> {
        self.scorer.as_ref()
    }

    /// The reference bags of a [`ModelKind::CitationKnn`] model.
    pub fn citation(&self) -> Option<&CitationKnn<'a>> {
        self.citation.as_ref()
    }

    /// The cluster weights of a [`ModelKind::M3ic`] model.
    pub fn cluster(&self) -> Option<&M3ic<'a>> {
        self.cluster.as_ref()
    }

    /// The set-kernel SVM of a [`ModelKind::SetKernelSvm`] model: it works in its own
    /// buffers ([`crate::svm::SvmScratch`]), so it has its own entry point,
    /// [`SetKernelSvm::decide`], instead of [`Model::classify`].
    pub fn svm(&self) -> Option<&SetKernelSvm<'a>> {
        self.svm.as_ref()
    }

    /// Quantises one raw instance into `out` with the model's input steps 2^e_j:
    /// `out[j] = round(x[j] · 2^−e_j)`, saturated to ±32767 (error ≤ 2^e_j / 2 unless
    /// saturated). Returns how many features saturated: the error bounds hold only for
    /// the others. Quantised models only.
    pub fn quantize_instance(&self, x: &[f32], out: &mut [i16]) -> Result<usize, Error> {
        let e = self.input_exp.ok_or(Error::WrongModelKind)?;
        let d = self.header.input_dim;
        if x.len() != d {
            return Err(Error::DimensionMismatch {
                expected: d,
                got: x.len(),
            });
        }
        if out.len() < d {
            return Err(Error::BufferTooSmall {
                needed: d,
                got: out.len(),
            });
        }
        let mut clipped = 0;
        let limit = fixed::Q15_MAX as f32 + 0.5;
        for ((o, &v), &ej) in out.iter_mut().zip(x).zip(e.bytes) {
            // 2^−e as an f32 built from its exponent bits (|e| ≤ 60 keeps it normal).
            let inv_step = f32::from_bits(((127 - ej as i8 as i32) as u32) << 23);
            let t = v * inv_step;
            if t.is_nan() || t.abs() >= limit {
                clipped += 1;
            }
            *o = fixed::round_clamp(t, fixed::Q15_MAX) as i16;
        }
        Ok(clipped)
    }

    /// The input quantisation exponent e_j of feature `j` (quantised models).
    pub fn input_exponent(&self, j: usize) -> Option<i32> {
        self.input_exp.filter(|e| j < e.len()).map(|e| e.i32_at(j))
    }

    /// Projects one instance (f32 models: f32 input; quantised: i16 input) into `out`.
    pub fn project(&self, x: Instances<'_>, out: &mut [f32]) -> Result<(), Error> {
        let p = self.projection.ok_or(Error::WrongModelKind)?;
        p.apply(x, out)
    }

    /// Number of `f32` scratch elements [`Model::classify`] needs for bags of at most
    /// `max_instances` instances.
    pub fn scratch_len(&self, max_instances: usize) -> usize {
        let d = self.projected_dim();
        match self.header.kind {
            ModelKind::Projection => d,
            ModelKind::LinearMil => d + 3 * self.header.output_dim,
            ModelKind::CitationKnn => self.citation.map_or(0, |c| c.scratch_len(max_instances, d)),
            ModelKind::M3ic => d + self.header.output_dim,
            ModelKind::SetKernelSvm => 0,
        }
    }

    /// Projects instance `i` of a bag into `out[..projected_dim]` (or copies it when the
    /// model has no projection stage).
    pub fn project_instance(
        &self,
        bag: Instances<'_>,
        i: usize,
        out: &mut [f32],
    ) -> Result<(), Error> {
        let d_in = self.header.input_dim;
        match (self.projection, bag.instance(i, d_in)?) {
            (Some(p), x) => p.apply(x, out),
            (None, Instances::F32(x)) => {
                let o = out.get_mut(..d_in).ok_or(Error::BufferTooSmall {
                    needed: d_in,
                    got: 0,
                })?;
                o.copy_from_slice(x);
                Ok(())
            }
            (None, Instances::I16(_)) => Err(Error::WrongModelKind),
        }
    }

    /// Number of instances in a bag, checking that it is whole and non-empty.
    pub fn bag_len(&self, bag: Instances<'_>) -> Result<usize, Error> {
        instance_count(bag.len(), self.header.input_dim)
    }

    /// Classifies (or, for M³IC, assigns to a cluster) one bag; a set-kernel SVM answers
    /// [`Error::WrongModelKind`] here (use [`Model::svm`]). `scratch` needs
    /// [`Model::scratch_len`] elements; `scores` receives one value per class or cluster
    /// and must hold [`Model::output_dim`] elements.
    pub fn classify(
        &self,
        bag: Instances<'_>,
        scratch: &mut [f32],
        scores: &mut [f32],
    ) -> Result<Decision, Error> {
        let n = self.bag_len(bag)?;
        let needed = self.scratch_len(n);
        if scratch.len() < needed {
            return Err(Error::BufferTooSmall {
                needed,
                got: scratch.len(),
            });
        }
        let out_dim = self.header.output_dim;
        let got = scores.len();
        let scores = scores.get_mut(..out_dim).ok_or(Error::BufferTooSmall {
            needed: out_dim,
            got,
        })?;
        match self.header.kind {
            ModelKind::Projection | ModelKind::SetKernelSvm => Err(Error::WrongModelKind),
            ModelKind::LinearMil => {
                let s = self.scorer.ok_or(Error::WrongModelKind)?;
                s.score_bag(self, bag, n, scratch, scores)
            }
            ModelKind::CitationKnn => {
                let c = self.citation.ok_or(Error::WrongModelKind)?;
                c.classify(self, bag, n, scratch, scores)
            }
            ModelKind::M3ic => {
                let c = self.cluster.ok_or(Error::WrongModelKind)?;
                c.assign(self, bag, n, scratch, scores)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        // The CRC-32/ISO-HDLC check value of "123456789".
        assert_eq!(!crc32_update(0xFFFF_FFFF, b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn abs_folds_read_what_i32_at_reads() {
        let i16s: [i16; 5] = [-32768, 32767, -5, 0, 300];
        let i16_bytes: [u8; 10] = core::array::from_fn(|b| i16s[b / 2].to_le_bytes()[b % 2]);
        let i8_bytes = [0x80u8, 0x7F, 0xFB, 0, 9];
        let u32_bytes: [u8; 8] = [7, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF];
        let sections = [
            (Elem::I16, &i16_bytes[..]),
            (Elem::I8, &i8_bytes[..]),
            (Elem::U32, &u32_bytes[..]),
        ];
        for (elem, bytes) in sections {
            let n = bytes.len() / elem.size();
            let s = Section {
                elem,
                rows: 1,
                cols: n,
                bytes,
            };
            for start in 0..=n + 1 {
                for end in start..=n + 2 {
                    let abs = |i| s.i32_at(i).unsigned_abs();
                    let max = (start..end).map(abs).max().unwrap_or(0);
                    let sum: u64 = (start..end).map(|i| u64::from(abs(i))).sum();
                    assert_eq!(s.max_abs(start..end), max, "{elem:?} {start}..{end}");
                    assert_eq!(s.abs_sum(start..end), sum, "{elem:?} {start}..{end}");
                }
            }
        }
    }

    #[test]
    fn short_input_is_truncated() {
        assert_eq!(
            Model::parse(b"MILM").unwrap_err(),
            Error::Truncated {
                needed: HEADER_LEN,
                got: 4
            }
        );
    }

    #[test]
    fn wrong_magic_and_version_are_named() {
        let mut b = [0u8; 32];
        assert_eq!(
            Model::parse(&b).unwrap_err(),
            Error::BadModel("no MILM magic")
        );
        b[..4].copy_from_slice(&MAGIC);
        b[4] = 9;
        assert_eq!(Model::parse(&b).unwrap_err(), Error::UnsupportedVersion(9));
    }
}
