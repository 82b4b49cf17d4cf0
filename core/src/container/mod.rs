//! The model container: a trained model as one byte string the core reads in place
//! (for example from `include_bytes!` in flash), without copying or allocating.
//!
//! This module is the format and nothing more: the header ([`Header`]: [`ModelKind`],
//! [`Encoding`], dimensions), the section table ([`tag`], [`Elem`]), the checksum, and
//! where each lies ([`layout`]). [`parse`] checks every field of the layout and returns
//! the header and the sections by tag ([`Sections`]); what the sections mean is for the
//! heads to check ([`crate::model`] picks them by kind). [`write()`] lays a model out, for
//! the host's exporter, through the same [`layout`].
//!
//! A section's payload is `rows × cols` elements, row-major. Quantised matrices carry a
//! per-row scale (`f32`) and a per-row accumulator shift (`u32`) in companion sections
//! ([`crate::weights`]). A truncated, corrupted or hostile input gives an [`Error`],
//! never a panic.
//!
//! ```
//! use mil_core::container::{self, tag, Elem, Encoding, ModelKind};
//!
//! let (header, sections) = container::parse(mil_core::sample::LINEAR_MIL)?;
//! assert_eq!((header.kind, header.encoding), (ModelKind::LinearMil, Encoding::F32));
//! let w = sections.require(tag::PROJ_WEIGHTS)?;
//! assert_eq!((w.elem, w.rows, w.cols), (Elem::F32, 1, 2));
//! assert_eq!((w.f32_at(0), w.f32_at(1)), (1.0, -1.0));
//! # Ok::<(), mil_core::Error>(())
//! ```

pub mod layout;

use core::ops::Range;

use crate::error::Error;
use crate::fixed;
use layout::{entry, entry_at, header, u16_at, u32_at, HEADER_LEN};

/// First four bytes of every model.
pub const MAGIC: [u8; 4] = *b"MILM";
/// The container format version the host writes. Version 2 stores a Q7 projection's
/// rows by pairs ([`crate::weights::Q7Layout`]); otherwise it is version 1.
pub const VERSION: u16 = 2;
/// The oldest version this core reads (a version 1 model with a Q7 projection of two or
/// more rows is refused: its rows are laid out one after another).
pub const OLDEST_VERSION: u16 = 1;
/// Largest number of sections a model may have.
pub const MAX_SECTIONS: usize = 16;
/// Largest |e| of an input quantisation step 2^e ([`tag::INPUT_EXP`]).
pub const MAX_INPUT_EXP: i32 = 60;

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
    /// SVM over stored bags with the MI kernel (Gärtner et al. 2002): see
    /// [`crate::mi_svm`].
    MiKernelSvm = 6,
    /// MILES (Chen, Bi & Wang 2006): a linear score on the bag's similarities to stored
    /// prototypes: see [`crate::miles`].
    Miles = 7,
    /// miVLAD (Wei, Wu & Zhou 2017): a linear score on the bag's normalised VLAD vector
    /// over a k-means codebook: see [`crate::mi_vlad`].
    MiVlad = 8,
    /// Attention-based deep MIL (Ilse, Tomczak & Welling 2018): an encoder, attention,
    /// gated, mean or max pooling and a linear head: see [`crate::attention`].
    Attention = 9,
    /// miFV (Wei, Wu & Zhou 2017): a linear score on the bag's normalised Fisher vector
    /// under a diagonal Gaussian mixture: see [`crate::mi_vlad`].
    MiFv = 10,
}

impl ModelKind {
    /// The kind with this code (`const`, for [`crate::model::header_kind`]).
    pub const fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(ModelKind::Projection),
            2 => Some(ModelKind::LinearMil),
            3 => Some(ModelKind::CitationKnn),
            4 => Some(ModelKind::M3ic),
            5 => Some(ModelKind::SetKernelSvm),
            6 => Some(ModelKind::MiKernelSvm),
            7 => Some(ModelKind::Miles),
            8 => Some(ModelKind::MiVlad),
            9 => Some(ModelKind::Attention),
            10 => Some(ModelKind::MiFv),
            _ => None,
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
    /// Projection weights, d × D (row k = output k), in the model's encoding; Q7 rows by
    /// pairs ([`crate::weights::Q7Layout::Pairs`]).
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
    /// (integers below 2⁵³, exact). For an MI-kernel SVM, its min–max map: 2 × D, `f64`,
    /// row 0 the minima, row 1 the ranges ([`crate::mi_svm`]). For MILES, its z-score:
    /// 2 × D, `f64`, row 0 the means, row 1 the inverse standard deviations
    /// ([`crate::miles`]), or 1 × D, `f64`, the means alone with [`ZSCORE_SCALE`]. For an
    /// attention network, its means in `f32`, 1 × D ([`crate::attention`]).
    pub const GRID_MIN: u16 = 15;
    /// Grid size sᵢ per feature of a box-kernel grid, 1 × D, `u32`.
    pub const GRID_SIZE: u16 = 16;
    /// Grid points of the stored bags, n × D, `u16` (when every sᵢ fits) or `u32`.
    pub const REF_POINTS: u16 = 17;
    /// Integer settings of a set kernel, 1 × 5, `u32`: kernel, estimator, precision
    /// (two's complement), seed low and high words (see [`crate::svm`]).
    pub const KERNEL_CONFIG: u16 = 18;
    /// Real settings of a set kernel SVM, 1 × 5, `f64`: ε, δ, ρ, log offset T, bias b
    /// (an MI-kernel SVM and MILES: 1 × 2, γ and b).
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
    /// The inverse standard deviations of a MILES, miVLAD or miFV model's z-score, 1 × D, `f32`
    /// (0 for a constant feature), beside its means in [`GRID_MIN`] (1 × D, `f64`)
    /// ([`crate::miles`], [`crate::mi_vlad`]).
    pub const ZSCORE_SCALE: u16 = 23;
    /// The layers of an attention network, L × 3, `u32`: rows, columns and 64 + e, 2^e
    /// the step of the layer's quantised input ([`crate::attention`]).
    pub const NET_LAYERS: u16 = 24;
    /// The weight matrices of an attention network's layers one after another, 1 × Σ
    /// rows·cols, in the model's encoding (Q7 rows by pairs).
    pub const NET_WEIGHTS: u16 = 25;
    /// The bias of every row of an attention network's layers, 1 × Σ rows, `f32`.
    pub const NET_BIAS: u16 = 26;
    /// The step of every quantised row of an attention network, 1 × Σ rows, `f32`.
    pub const NET_SCALE: u16 = 27;
    /// The accumulator shift of every quantised row of an attention network, 1 × Σ rows,
    /// `u32`.
    pub const NET_SHIFT: u16 = 28;
    /// The components of a miFV mixture, K × 3, `f64`: per component k the constant
    /// ln w_k − ½ Σ_j ln(2π σ²_kj) of its log-density, 1/√w_k, and the magnitude
    /// |ln w_k| + ½ Σ_j |ln(2π σ²_kj)| of the constant's terms ([`crate::mi_vlad`]).
    pub const MIXTURE: u16 = 29;
    /// The inverse standard deviations 1/σ_kj of a miFV mixture, K × D, `f32`.
    pub const MIXTURE_SCALE: u16 = 30;
    /// Largest tag value.
    pub const MAX: u16 = 30;
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
    /// arithmetic: the validation loops of [`crate::Model::parse`] read each weight this way.
    fn fold_abs<B>(&self, elements: Range<usize>, init: B, f: impl FnMut(B, u32) -> B) -> B {
        let size = self.elem.size();
        let n = self.bytes.len() / size;
        let end = elements.end.min(n);
        let start = elements.start.min(end);
        let bytes = self.bytes.get(start * size..end * size).unwrap_or(&[]);
        match self.elem {
            Elem::I16 => bytes
                .chunks_exact(2)
                .map(|b| u32::from(le_i16(b).unsigned_abs()))
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

    /// The section as a typed `f32` view (empty unless its elements are `f32`).
    pub fn f32s(&self) -> F32s<'a> {
        match self.elem {
            Elem::F32 => F32s { bytes: self.bytes },
            _ => F32s::default(),
        }
    }

    /// The bytes of row `r` (empty out of range).
    pub fn row_bytes(&self, r: usize) -> &'a [u8] {
        let n = self.cols.saturating_mul(self.elem.size());
        self.bytes
            .get(r.saturating_mul(n)..r.saturating_add(1).saturating_mul(n))
            .unwrap_or(&[])
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

/// Bytes placed on an 8-byte boundary: wrap an embedded model in it so that its sections
/// (which the container aligns to 4 bytes from the model's start) lie on word boundaries
/// in memory, where the Q15 dot products read weights a doubleword at a time
/// ([`crate::fixed::dot2_q15`]). `include_bytes!` alone gives 1-byte alignment: such a
/// model still works, on the slower word-load path.
///
/// ```
/// use mil_core::container::Aligned;
///
/// // On a device: `&Aligned(*include_bytes!("model.milm"))`.
/// static MODEL: &Aligned<[u8]> = &Aligned(*mil_core::sample::LINEAR_MIL);
/// assert_eq!(MODEL.0.as_ptr() as usize % 8, 0);
/// let model = mil_core::Model::parse(&MODEL.0)?;
/// assert_eq!(model.input_dim(), 2);
/// # Ok::<(), mil_core::Error>(())
/// ```
#[repr(C, align(8))]
#[derive(Debug)]
pub struct Aligned<B: ?Sized>(pub B);

/// The `i16` in two little-endian bytes (0 for a slice of another length).
#[inline(always)]
pub fn le_i16(b: &[u8]) -> i16 {
    <&[u8; 2]>::try_from(b).map_or(0, |b| i16::from_le_bytes(*b))
}

/// The `f32` in four little-endian bytes (0 for a slice of another length).
#[inline(always)]
pub fn le_f32(b: &[u8]) -> f32 {
    <&[u8; 4]>::try_from(b).map_or(0.0, |b| f32::from_le_bytes(*b))
}

/// The `u32` in four little-endian bytes (0 for a slice of another length).
#[inline(always)]
pub fn le_u32(b: &[u8]) -> u32 {
    <&[u8; 4]>::try_from(b).map_or(0, |b| u32::from_le_bytes(*b))
}

/// A typed view of an `f32` section ([`Section::f32s`]): its bytes, read as floats
/// without the per-element dispatch on the element type of [`Section::f32_at`]. The bytes
/// may lie at any address (flash, `include_bytes!`): each float is decoded from four
/// bytes, which a Cortex-M4 does with one (unaligned) word load.
#[derive(Debug, Clone, Copy, Default)]
pub struct F32s<'a> {
    bytes: &'a [u8],
}

impl<'a> F32s<'a> {
    /// Number of floats.
    pub fn len(&self) -> usize {
        self.bytes.len() / 4
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The little-endian bytes of the floats.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Float `i` (0 out of range).
    pub fn get(&self, i: usize) -> f32 {
        self.bytes.get(4 * i..4 * i + 4).map_or(0.0, le_f32)
    }

    /// The first `n` floats and the rest (all and none when `n` is past the end).
    pub fn split_at(&self, n: usize) -> (F32s<'a>, F32s<'a>) {
        match self.bytes.split_at_checked(n.saturating_mul(4)) {
            Some((a, b)) => (F32s { bytes: a }, F32s { bytes: b }),
            None => (*self, F32s::default()),
        }
    }

    /// The floats in order.
    pub fn iter(&self) -> F32Iter<'a> {
        self.bytes.chunks_exact(4).map(le_f32 as fn(&[u8]) -> f32)
    }
}

/// The iterator of [`F32s::iter`].
pub type F32Iter<'a> = core::iter::Map<core::slice::ChunksExact<'a, u8>, fn(&[u8]) -> f32>;

impl<'a> IntoIterator for F32s<'a> {
    type Item = f32;
    type IntoIter = F32Iter<'a>;
    fn into_iter(self) -> F32Iter<'a> {
        self.iter()
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

/// Checks header, checksum and section table; returns the header and the sections by
/// tag. Bytes after the declared length are not read (the caller decides whether they
/// may be there). Every offset and size is checked before it is used: never panics.
pub fn parse(bytes: &[u8]) -> Result<(Header, Sections<'_>), Error> {
    if bytes.len() < HEADER_LEN {
        return Err(Error::Truncated {
            needed: HEADER_LEN,
            got: bytes.len(),
        });
    }
    if bytes.get(header::MAGIC..header::MAGIC + 4) != Some(&MAGIC[..]) {
        return Err(Error::BadModel("no MILM magic"));
    }
    let version = u16_at(bytes, header::VERSION);
    if !(OLDEST_VERSION..=VERSION).contains(&version) {
        return Err(Error::UnsupportedVersion(version));
    }
    let kind = bytes
        .get(header::KIND)
        .and_then(|&c| ModelKind::from_code(c))
        .ok_or(Error::BadModel("unknown model kind"))?;
    let encoding = bytes
        .get(header::ENCODING)
        .and_then(|&c| Encoding::from_code(c))
        .ok_or(Error::BadModel("unknown scalar encoding"))?;
    let input_dim = u32_at(bytes, header::INPUT_DIM) as usize;
    let output_dim = u32_at(bytes, header::OUTPUT_DIM) as usize;
    let total_len = u32_at(bytes, header::TOTAL_LEN) as usize;
    let n_sections = u16_at(bytes, header::N_SECTIONS) as usize;
    if u16_at(bytes, header::RESERVED_16) != 0 || u32_at(bytes, header::RESERVED_32) != 0 {
        return Err(Error::BadModel("reserved header field not zero"));
    }
    if input_dim == 0 || output_dim == 0 {
        return Err(Error::BadModel("zero dimension"));
    }
    if n_sections > MAX_SECTIONS {
        return Err(Error::BadModel("too many sections"));
    }
    let table_end = entry_at(n_sections);
    if total_len < table_end {
        return Err(Error::BadModel(
            "total length shorter than the section table",
        ));
    }
    let body = bytes.get(..total_len).ok_or(Error::Truncated {
        needed: total_len,
        got: bytes.len(),
    })?;

    let checksum = u32_at(body, header::CHECKSUM);
    let computed = layout::model_checksum(body);
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
        let e = entry_at(i);
        let t = u16_at(body, e + entry::TAG);
        let elem = body
            .get(e + entry::ELEM)
            .and_then(|&c| Elem::from_code(c))
            .ok_or(Error::BadModel("unknown element type"))?;
        if body.get(e + entry::RESERVED) != Some(&0) {
            return Err(Error::BadModel("reserved section field not zero"));
        }
        let offset = u32_at(body, e + entry::OFFSET) as usize;
        let rows = u32_at(body, e + entry::ROWS) as usize;
        let cols = u32_at(body, e + entry::COLS) as usize;
        if t == 0 || t > tag::MAX {
            return Err(Error::BadModel("unknown section tag"));
        }
        if !layout::is_aligned(offset) {
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

/// One section for [`write()`]: its table entry and its payload, `rows × cols` elements
/// of `elem` in little-endian bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Payload<'p> {
    /// Tag ([`tag`]).
    pub tag: u16,
    /// Element type.
    pub elem: Elem,
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// The payload.
    pub bytes: &'p [u8],
}

/// Bytes [`write()`] needs for these sections: header, table, and each payload at its
/// alignment (saturating, so an impossible size is caught by [`write()`]).
pub fn written_len(sections: &[Payload<'_>]) -> usize {
    let table = entry_at(sections.len());
    let end = sections.iter().fold(table, |at, s| {
        layout::align_up(at).saturating_add(s.bytes.len())
    });
    layout::align_up(end)
}

/// Lays a model out in `out`, which needs [`written_len`] bytes: the header with its
/// checksum, the table, and the payloads in the order given, each at the next multiple
/// of [`layout::ALIGN`], the gaps zero. Returns the model's length. The reader requires
/// payloads in ascending order, so the table lists them as given; the host sorts them
/// by tag first so that equal models give equal bytes.
pub fn write(
    out: &mut [u8],
    kind: ModelKind,
    encoding: Encoding,
    input_dim: usize,
    output_dim: usize,
    sections: &[Payload<'_>],
) -> Result<usize, Error> {
    let total = written_len(sections);
    let got = out.len();
    let out = out
        .get_mut(..total)
        .ok_or(Error::BufferTooSmall { needed: total, got })?;
    if sections.len() > MAX_SECTIONS {
        return Err(Error::CapacityExceeded {
            capacity: MAX_SECTIONS,
            needed: sections.len(),
        });
    }
    let field = |v: usize| {
        u32::try_from(v).map_err(|_| Error::InvalidParameter("too large for a u32 field"))
    };
    out.fill(0);
    let mut at = entry_at(sections.len());
    for (i, s) in sections.iter().enumerate() {
        if s.rows
            .checked_mul(s.cols)
            .and_then(|n| n.checked_mul(s.elem.size()))
            != Some(s.bytes.len())
        {
            return Err(Error::InvalidParameter(
                "payload length is not rows × cols elements",
            ));
        }
        at = layout::align_up(at);
        let e = entry_at(i);
        layout::put_u16(out, e + entry::TAG, s.tag);
        out[e + entry::ELEM] = s.elem as u8;
        layout::put_u32(out, e + entry::OFFSET, field(at)?);
        layout::put_u32(out, e + entry::ROWS, field(s.rows)?);
        layout::put_u32(out, e + entry::COLS, field(s.cols)?);
        out[at..at + s.bytes.len()].copy_from_slice(s.bytes);
        at += s.bytes.len();
    }
    out[header::MAGIC..header::MAGIC + 4].copy_from_slice(&MAGIC);
    layout::put_u16(out, header::VERSION, VERSION);
    out[header::KIND] = kind as u8;
    out[header::ENCODING] = encoding as u8;
    layout::put_u32(out, header::INPUT_DIM, field(input_dim)?);
    layout::put_u32(out, header::OUTPUT_DIM, field(output_dim)?);
    layout::put_u32(out, header::TOTAL_LEN, field(total)?);
    layout::put_u16(out, header::N_SECTIONS, sections.len() as u16);
    let crc = layout::model_checksum(out);
    layout::put_u32(out, header::CHECKSUM, crc);
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

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
            parse(b"MILM").unwrap_err(),
            Error::Truncated {
                needed: HEADER_LEN,
                got: 4
            }
        );
    }

    #[test]
    fn wrong_magic_and_version_are_named() {
        let mut b = [0u8; 32];
        assert_eq!(parse(&b).unwrap_err(), Error::BadModel("no MILM magic"));
        b[..4].copy_from_slice(&MAGIC);
        b[header::VERSION] = 9;
        assert_eq!(parse(&b).unwrap_err(), Error::UnsupportedVersion(9));
    }

    #[test]
    fn what_write_lays_out_parse_reads_back() {
        let a = [1u8, 0, 2, 0, 3, 0];
        let b = 2.5f32.to_le_bytes();
        let sections = [
            Payload {
                tag: tag::REF_POINTS,
                elem: Elem::U16,
                rows: 1,
                cols: 3,
                bytes: &a,
            },
            Payload {
                tag: tag::PARAMS,
                elem: Elem::F32,
                rows: 1,
                cols: 1,
                bytes: &b,
            },
        ];
        let mut out = [0xAAu8; 128];
        let len = write(&mut out, ModelKind::M3ic, Encoding::Q7, 3, 2, &sections).unwrap();
        // Header, two entries, 6 bytes padded to 8, then 4.
        assert_eq!((len, written_len(&sections)), (76, 76));
        let (h, s) = parse(&out[..len]).unwrap();
        assert_eq!((h.kind, h.encoding), (ModelKind::M3ic, Encoding::Q7));
        assert_eq!((h.input_dim, h.output_dim, h.n_sections), (3, 2, 2));
        assert_eq!(s.get(tag::REF_POINTS).unwrap().u32_at(2), 3);
        assert_eq!(s.get(tag::PARAMS).unwrap().f32_at(0), 2.5);
        assert_eq!(&out[70..72], &[0, 0], "padding is zeroed");
        let mut small = [0u8; 75];
        assert_eq!(
            write(&mut small, ModelKind::M3ic, Encoding::Q7, 3, 2, &sections),
            Err(Error::BufferTooSmall {
                needed: 76,
                got: 75
            })
        );
    }
}
