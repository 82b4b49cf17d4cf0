//! A parsed model: the container ([`crate::container`]) read, its head picked by kind,
//! and one entry point, [`Model::classify`], that sends a bag through the projection
//! stage ([`crate::project`]) and the head.
//!
//! [`Model::parse`] checks the layout ([`crate::container::parse`]), then what the
//! sections mean: the input quantisation, the stage, and the head of the header's
//! [`ModelKind`] ([`Head`]), each against the header's dimensions. A truncated,
//! corrupted or hostile input gives an [`Error`], never a panic.
//!
//! ```
//! use mil_core::{Instances, Model, ModelKind};
//!
//! // A binary MILR model on two features, as `mil export` writes it in f32: instance
//! // logit x₀ − x₁, max pooling (`mil_core::sample`).
//! let model = Model::parse(mil_core::sample::LINEAR_MIL)?;
//! assert_eq!(model.kind(), ModelKind::LinearMil);
//!
//! // A bag of two instances, row-major: logits 2 and −2, so P = σ(2) ≈ 0.88.
//! let bag = [3.0, 1.0, 0.0, 2.0];
//! let mut scratch = [0.0; 16];
//! let mut scores = [0.0; 2];
//! let decision = model.classify(Instances::F32(&bag), &mut scratch, &mut scores)?;
//! assert_eq!(decision.label, 1);
//! assert!((decision.score - 0.880_797).abs() < 1e-5);
//! assert!((scores[0] + scores[1] - 1.0).abs() < 1e-6); // [1 − P, P]
//! # Ok::<(), mil_core::Error>(())
//! ```

use crate::attention::Attention;
use crate::citation::CitationKnn;
use crate::cluster::M3ic;
use crate::container::{self, tag, Elem, Section, Sections, MAX_INPUT_EXP};
use crate::error::Error;
use crate::fixed;
use crate::mi_svm::MiKernelSvm;
use crate::mi_vlad::MiVlad;
use crate::miles::Miles;
use crate::project::{Projection, Stage};
use crate::score::{LinearMil, LinearScorer};
use crate::svm::SetKernelSvm;

pub use crate::bag::{Decision, Instances};
pub use crate::container::{Encoding, Header, ModelKind};

/// What follows the projection stage: one per [`ModelKind`].
// The attention network's per-layer bound constants make its variant the largest; a
// device has no heap to box it, and a model is parsed once.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy)]
pub enum Head<'a> {
    /// No head: the model outputs the projected instance.
    Projection,
    /// Linear instance scores pooled over the bag.
    LinearMil(LinearScorer<'a>),
    /// Citation-kNN over stored reference bags.
    CitationKnn(CitationKnn<'a>),
    /// M³IC cluster assignment.
    M3ic(M3ic<'a>),
    /// A set-kernel SVM over stored bags (its own entry point: [`SetKernelSvm::decide`]).
    SetKernelSvm(SetKernelSvm<'a>),
    /// An MI-kernel SVM over stored bags (its own entry point: [`MiKernelSvm::decide`]).
    MiKernelSvm(MiKernelSvm<'a>),
    /// MILES over stored prototypes (its own entry point: [`Miles::decide`]).
    Miles(Miles<'a>),
    /// miVLAD or miFV over a stored codebook (its own entry point: [`MiVlad::decide`]).
    MiVlad(MiVlad<'a>),
    /// An attention network (its own entry point: [`Attention::decide`]).
    Attention(Attention<'a>),
}

impl<'a> Head<'a> {
    /// Reads and checks the head of `header.kind` behind `stage`.
    fn parse(header: &Header, sections: &Sections<'a>, stage: &Stage<'a>) -> Result<Self, Error> {
        let enc = header.encoding;
        let d = stage.output_dim();
        let projected = stage.projection().is_some();
        Ok(match header.kind {
            ModelKind::Projection => {
                let p = stage
                    .projection()
                    .ok_or(Error::BadModel("projection model without weights"))?;
                if p.output_dim() != header.output_dim {
                    return Err(Error::BadModel(
                        "output dimension disagrees with the header",
                    ));
                }
                Head::Projection
            }
            ModelKind::LinearMil => {
                if !projected {
                    return Err(Error::BadModel("linear model without its projection stage"));
                }
                let s = LinearScorer::from_sections(sections, enc, d)?;
                if s.n_classes() != header.output_dim {
                    return Err(Error::BadModel("class count disagrees with the header"));
                }
                Head::LinearMil(s)
            }
            ModelKind::CitationKnn => {
                if enc != Encoding::F32 && !projected {
                    return Err(Error::BadModel("quantised Citation-kNN needs a projection"));
                }
                let c = CitationKnn::from_sections(sections, enc, d)?;
                if c.n_classes() != header.output_dim {
                    return Err(Error::BadModel("class count disagrees with the header"));
                }
                Head::CitationKnn(c)
            }
            ModelKind::M3ic => {
                if enc != Encoding::F32 && !projected {
                    return Err(Error::BadModel("quantised M3IC needs a projection"));
                }
                let c = M3ic::from_sections(sections, enc, d, header.input_dim)?;
                if c.n_clusters() != header.output_dim {
                    return Err(Error::BadModel("cluster count disagrees with the header"));
                }
                Head::M3ic(c)
            }
            ModelKind::SetKernelSvm => {
                if projected {
                    return Err(Error::BadModel("a set-kernel SVM has no projection stage"));
                }
                if header.output_dim != 2 {
                    return Err(Error::BadModel("a set-kernel SVM has two classes"));
                }
                Head::SetKernelSvm(SetKernelSvm::from_sections(
                    sections,
                    enc,
                    header.input_dim,
                )?)
            }
            ModelKind::MiKernelSvm => {
                if projected {
                    return Err(Error::BadModel("an MI-kernel SVM has no projection stage"));
                }
                if header.output_dim != 2 {
                    return Err(Error::BadModel("an MI-kernel SVM has two classes"));
                }
                Head::MiKernelSvm(MiKernelSvm::from_sections(sections, enc, header.input_dim)?)
            }
            ModelKind::Miles => {
                if projected {
                    return Err(Error::BadModel("a MILES model has no projection stage"));
                }
                if header.output_dim != 2 {
                    return Err(Error::BadModel("a MILES model has two classes"));
                }
                Head::Miles(Miles::from_sections(sections, enc, header.input_dim)?)
            }
            ModelKind::MiVlad | ModelKind::MiFv => {
                if projected {
                    return Err(Error::BadModel(
                        "a miVLAD or miFV model has no projection stage",
                    ));
                }
                if header.output_dim != 2 {
                    return Err(Error::BadModel("a miVLAD or miFV model has two classes"));
                }
                let fisher = header.kind == ModelKind::MiFv;
                Head::MiVlad(MiVlad::from_sections(
                    sections,
                    enc,
                    header.input_dim,
                    fisher,
                )?)
            }
            ModelKind::Attention => {
                if projected {
                    return Err(Error::BadModel(
                        "an attention network has no projection stage",
                    ));
                }
                Head::Attention(Attention::from_sections(
                    sections,
                    enc,
                    header.input_dim,
                    header.output_dim,
                )?)
            }
        })
    }
}

/// A parsed model borrowing its bytes.
#[derive(Debug, Clone, Copy)]
pub struct Model<'a> {
    header: Header,
    input_exp: Option<Section<'a>>,
    /// The exponent every input feature shares, when they all share one (found once at
    /// parse): [`Model::quantize_fixed`] is then a copy for the matching `frac_bits`.
    uniform_exp: Option<i32>,
    stage: Stage<'a>,
    head: Head<'a>,
}

impl<'a> Model<'a> {
    /// Parses and validates a model that is exactly `bytes` (a file's content): bytes
    /// after the model's declared length are an error, as they mean a corrupt or
    /// concatenated file. Never panics; never allocates.
    pub fn parse(bytes: &'a [u8]) -> Result<Model<'a>, Error> {
        let model = Self::parse_prefix(bytes)?;
        if bytes.len() != model.header.total_len {
            return Err(Error::BadModel("bytes after the model's declared end"));
        }
        Ok(model)
    }

    /// Parses and validates the model at the start of `bytes`, ignoring what follows its
    /// declared length: for a model in a flash partition, whose erased rest reads 0xFF.
    pub fn parse_prefix(bytes: &'a [u8]) -> Result<Model<'a>, Error> {
        let (header, sections) = container::parse(bytes)?;
        let enc = header.encoding;
        let d_in = header.input_dim;
        // The SVMs and MILES take raw features; their encoding applies to what they store
        // only.
        let input_exp = if enc != Encoding::F32
            && !matches!(
                header.kind,
                ModelKind::SetKernelSvm
                    | ModelKind::MiKernelSvm
                    | ModelKind::Miles
                    | ModelKind::MiVlad
                    | ModelKind::MiFv
                    | ModelKind::Attention
            ) {
            let s = sections.require(tag::INPUT_EXP)?;
            s.expect(Elem::I8, 1, d_in)?;
            if s.max_abs(0..d_in) > MAX_INPUT_EXP.unsigned_abs() {
                return Err(Error::BadModel("input exponent out of range"));
            }
            Some(s)
        } else if sections.get(tag::INPUT_EXP).is_some() {
            return Err(Error::BadModel(
                "input exponents in a model without quantised inputs",
            ));
        } else {
            None
        };
        let projection = if sections.get(tag::PROJ_WEIGHTS).is_some()
            || sections.get(tag::PROJ_DIAGONAL).is_some()
        {
            Some(Projection::from_sections(
                &sections,
                enc,
                header.version,
                d_in,
            )?)
        } else {
            None
        };
        let stage = Stage::new(projection, d_in);
        let head = Head::parse(&header, &sections, &stage)?;
        let uniform_exp = input_exp.and_then(|e| match e.bytes.split_first() {
            Some((&first, rest)) if rest.iter().all(|&b| b == first) => Some(first as i8 as i32),
            _ => None,
        });
        Ok(Model {
            header,
            input_exp,
            uniform_exp,
            stage,
            head,
        })
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

    /// The stage in front of the head (the projection, or the identity).
    pub fn stage(&self) -> &Stage<'a> {
        &self.stage
    }

    /// The head.
    pub fn head(&self) -> &Head<'a> {
        &self.head
    }

    /// The projection stage, if the model has one.
    pub fn projection(&self) -> Option<&Projection<'a>> {
        self.stage.projection()
    }

    /// The dimension instances have after the projection stage.
    pub fn projected_dim(&self) -> usize {
        self.stage.output_dim()
    }

    /// The linear scorer of a [`ModelKind::LinearMil`] model.
    pub fn scorer(&self) -> Option<&LinearScorer<'a>> {
        match &self.head {
            Head::LinearMil(s) => Some(s),
            _ => None,
        }
    }

    /// The reference bags of a [`ModelKind::CitationKnn`] model.
    pub fn citation(&self) -> Option<&CitationKnn<'a>> {
        match &self.head {
            Head::CitationKnn(c) => Some(c),
            _ => None,
        }
    }

    /// The cluster weights of a [`ModelKind::M3ic`] model.
    pub fn cluster(&self) -> Option<&M3ic<'a>> {
        match &self.head {
            Head::M3ic(c) => Some(c),
            _ => None,
        }
    }

    /// The set-kernel SVM of a [`ModelKind::SetKernelSvm`] model: it works in its own
    /// buffers ([`crate::svm::SvmScratch`]), so it has its own entry point,
    /// [`SetKernelSvm::decide`], instead of [`Model::classify`].
    pub fn svm(&self) -> Option<&SetKernelSvm<'a>> {
        match &self.head {
            Head::SetKernelSvm(s) => Some(s),
            _ => None,
        }
    }

    /// The MI-kernel SVM of a [`ModelKind::MiKernelSvm`] model, with its own entry point
    /// [`MiKernelSvm::decide`] (raw `f64` features, D values of scratch).
    pub fn mi_svm(&self) -> Option<&MiKernelSvm<'a>> {
        match &self.head {
            Head::MiKernelSvm(s) => Some(s),
            _ => None,
        }
    }

    /// The MILES model of a [`ModelKind::Miles`] model, with its own entry point
    /// [`Miles::decide`] (raw `f64` features, [`Miles::scratch_len`] values of scratch and
    /// K indices).
    pub fn miles(&self) -> Option<&Miles<'a>> {
        match &self.head {
            Head::Miles(m) => Some(m),
            _ => None,
        }
    }

    /// The miVLAD or miFV model of a [`ModelKind::MiVlad`] or [`ModelKind::MiFv`] model,
    /// with its own entry point
    /// [`MiVlad::decide`] (raw `f64` features, [`MiVlad::scratch_len`] `f32` and
    /// [`MiVlad::sums_len`] `f64` of scratch).
    pub fn mi_vlad(&self) -> Option<&MiVlad<'a>> {
        match &self.head {
            Head::MiVlad(m) => Some(m),
            _ => None,
        }
    }

    /// The network of a [`ModelKind::Attention`] model, with its own entry point
    /// [`Attention::decide`] (raw `f64` features, [`Attention::scratch_len`] `f32` and
    /// [`Attention::ints_len`] `i16` of scratch, whatever the bag's size).
    pub fn attention(&self) -> Option<&Attention<'a>> {
        match &self.head {
            Head::Attention(m) => Some(m),
            _ => None,
        }
    }

    /// Quantises one raw instance into `out` with the model's input steps 2^e_j:
    /// `out[j] = round(x[j] · 2^−e_j)`, saturated to the `i16` range [−32768, 32767]
    /// (error ≤ 2^e_j / 2 unless saturated). Returns how many features saturated: the
    /// error bounds hold only for the others. Quantised models only.
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
        for ((o, &v), &ej) in out.iter_mut().zip(x).zip(e.bytes) {
            // 2^−e as an f32 built from its exponent bits (|e| ≤ 60 keeps it normal).
            let inv_step = f32::from_bits(((127 - ej as i8 as i32) as u32) << 23);
            let t = v * inv_step;
            // (−32768.5, 32767.5) rounds into the i16 range (halves away from zero).
            if !(t > -32768.5 && t < 32767.5) {
                clipped += 1;
            }
            *o = fixed::round_clamp_i16(t);
        }
        Ok(clipped)
    }

    /// Quantises one instance that arrives as integers, with integer shifts only (for
    /// a core without an FPU): feature j is the real value `x[j] · 2^−frac_bits`, so
    /// `frac_bits = 0` for plain integers such as ADC counts or integer-valued features,
    /// 15 for Q15 samples. Writes `out[j] = round(x[j] · 2^−(frac_bits + e_j))` with the
    /// model's input steps 2^e_j, rounding halves away from zero and saturating to the
    /// `i16` range exactly as [`Model::quantize_instance`] does for the same real values
    /// (so the two give identical integers). Returns how many features saturated.
    /// Quantised models only; `|frac_bits| ≤ 31`.
    ///
    /// When every feature's step is 2^−frac_bits (a model exported with `mil export
    /// --input integer` and `frac_bits = 0`: integer features such as ADC counts), the
    /// input is already the quantised instance and this is a copy (about one instruction
    /// per feature on a Cortex-M4; such a board can also pass its buffer to
    /// [`Model::classify`] directly).
    pub fn quantize_fixed(
        &self,
        x: &[i16],
        frac_bits: i32,
        out: &mut [i16],
    ) -> Result<usize, Error> {
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
        if !(-31..=31).contains(&frac_bits) {
            return Err(Error::InvalidParameter("frac_bits outside -31..=31"));
        }
        if self.uniform_exp.is_some_and(|e| e + frac_bits == 0) {
            // Every feature already on its step: the quantised instance is the input.
            // In blocks of eight (four word loads and stores, inline) rather than a
            // `memcpy` call, whose byte-general loop takes twice the instructions.
            let out = out.get_mut(..d).unwrap_or_default();
            let (mut o, mut xs) = (out.chunks_exact_mut(8), x.chunks_exact(8));
            for (o, x) in (&mut o).zip(&mut xs) {
                o.copy_from_slice(x);
            }
            for (o, &v) in o.into_remainder().iter_mut().zip(xs.remainder()) {
                *o = v;
            }
            return Ok(0);
        }
        let mut clipped = 0;
        for ((o, &v), &ej) in out.iter_mut().zip(x).zip(e.bytes) {
            // Shift right by s (left by −s); beyond these bounds every input saturates
            // (s < −16 shifts a nonzero |v| ≥ 1 past 32767) or rounds to 0 (s > 17).
            let s = (ej as i8 as i32 + frac_bits).clamp(-16, 17);
            let v = v as i32;
            let q = if s <= 0 {
                v << -s
            } else {
                let r = ((v.unsigned_abs() + (1 << (s - 1))) >> s) as i32;
                if v < 0 {
                    -r
                } else {
                    r
                }
            };
            let i = q.clamp(i16::MIN.into(), i16::MAX.into());
            clipped += usize::from(i != q);
            *o = i as i16;
        }
        Ok(clipped)
    }

    /// The input quantisation exponent e_j of feature `j` (quantised models).
    pub fn input_exponent(&self, j: usize) -> Option<i32> {
        self.input_exp.filter(|e| j < e.len()).map(|e| e.i32_at(j))
    }

    /// Projects one instance (f32 models: f32 input; quantised: i16 input) into `out`.
    pub fn project(&self, x: Instances<'_>, out: &mut [f32]) -> Result<(), Error> {
        let p = self.stage.projection().ok_or(Error::WrongModelKind)?;
        p.apply(x, out)
    }

    /// Number of `f32` scratch elements [`Model::classify`] needs for bags of at most
    /// `max_instances` instances ([`scratch_bound`] computes the same from the bytes at
    /// compile time).
    pub fn scratch_len(&self, max_instances: usize) -> usize {
        let d = self.projected_dim();
        match &self.head {
            Head::Projection => d,
            Head::LinearMil(_) => d + 3 * self.header.output_dim,
            Head::CitationKnn(c) => c.scratch_len(max_instances, d),
            Head::M3ic(_) => d + self.header.output_dim,
            Head::SetKernelSvm(_)
            | Head::MiKernelSvm(_)
            | Head::Miles(_)
            | Head::MiVlad(_)
            | Head::Attention(_) => 0,
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
        self.stage.project_instance(bag, i, out)
    }

    /// Number of instances in a bag, checking that it is whole and non-empty.
    pub fn bag_len(&self, bag: Instances<'_>) -> Result<usize, Error> {
        crate::bag::instance_count(bag.len(), self.header.input_dim)
    }

    /// Classifies (or, for M³IC, assigns to a cluster) one bag; a set-kernel SVM or MILES
    /// answers [`Error::WrongModelKind`] here (use [`Model::svm`], [`Model::mi_svm`] or
    /// [`Model::miles`]). `scratch` needs
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
        let stage = &self.stage;
        match &self.head {
            Head::Projection
            | Head::SetKernelSvm(_)
            | Head::MiKernelSvm(_)
            | Head::Miles(_)
            | Head::MiVlad(_)
            | Head::Attention(_) => Err(Error::WrongModelKind),
            Head::LinearMil(s) => s.score_bag(stage, bag, n, scratch, scores),
            Head::CitationKnn(c) => c.classify(stage, bag, n, scratch, scores),
            Head::M3ic(c) => c.assign(stage, bag, n, scratch, scores),
        }
    }
}

/// A linear MIL model's stage and scorer, for [`crate::score::bag_score_bound`].
impl<'m, 'a> TryFrom<&'m Model<'a>> for LinearMil<'m, 'a> {
    type Error = Error;

    fn try_from(model: &'m Model<'a>) -> Result<Self, Error> {
        let scorer = model.scorer().ok_or(Error::WrongModelKind)?;
        Ok(LinearMil {
            stage: &model.stage,
            scorer,
        })
    }
}

/// [`Model::scratch_len`] read from a model's bytes in a `const` context, so that firmware
/// can size its scratch at compile time from the model it embeds:
///
/// ```
/// const MODEL: &[u8] = &[0; 8]; // include_bytes!("model.milm") on a device
/// const MAX_INSTANCES: usize = 64;
/// static SCRATCH_LEN: usize = mil_core::model::scratch_bound(MODEL, MAX_INSTANCES);
/// # assert_eq!(SCRATCH_LEN, 0); // not a model: nothing to size
/// ```
///
/// It reads the header and the section table only — no checksum or validation, which
/// [`Model::parse`] still does at run time — and answers 0 for bytes that are not a model
/// of a known kind and for the SVM kinds, MILES, miVLAD/miFV and the attention network,
/// which take their own buffers ([`crate::svm::SetKernelSvm`],
/// [`crate::mi_svm::MiKernelSvm`], [`miles_buffers`], [`mi_vlad_buffers`],
/// [`attention_buffers`]). For every model
/// [`Model::parse`] accepts, it equals [`Model::scratch_len`] (tested on every kind and
/// encoding the exporter writes).
pub const fn scratch_bound(model: &[u8], max_instances: usize) -> usize {
    use crate::container::layout::header;
    if model.len() < 4
        || model[0] != container::MAGIC[0]
        || model[1] != container::MAGIC[1]
        || model[2] != container::MAGIC[2]
        || model[3] != container::MAGIC[3]
    {
        return 0;
    }
    let out = const_le(model, header::OUTPUT_DIM, 4);
    // A dense projection's rows are d; a diagonal one or none keeps D.
    let d = match const_section(model, tag::PROJ_WEIGHTS) {
        Some((rows, _)) => rows,
        None => const_le(model, header::INPUT_DIM, 4),
    };
    let kind = const_le(model, header::KIND, 1);
    if kind == ModelKind::Projection as usize {
        d
    } else if kind == ModelKind::LinearMil as usize {
        d.saturating_add(out.saturating_mul(3))
    } else if kind == ModelKind::CitationKnn as usize {
        let n_bags = match const_section(model, tag::REF_BAGS) {
            Some((_, cols)) => cols.saturating_sub(1),
            None => 0,
        };
        let scales = if const_section(model, tag::REF_SCALE).is_some() {
            d
        } else {
            0
        };
        max_instances
            .saturating_mul(d)
            .saturating_add(n_bags)
            .saturating_add(scales)
    } else if kind == ModelKind::M3ic as usize {
        d.saturating_add(out)
    } else {
        0
    }
}

/// The input dimension D and output dimension (classes, clusters, or d for a bare
/// projection) from a model's header, in a `const` context (0, 0 for bytes too short;
/// unchecked, as [`scratch_bound`]): for sizing a firmware's instance and score buffers.
pub const fn header_dims(model: &[u8]) -> (usize, usize) {
    use crate::container::layout::header;
    (
        const_le(model, header::INPUT_DIM, 4),
        const_le(model, header::OUTPUT_DIM, 4),
    )
}

/// The model kind from a model's header in a `const` context (`None` for bytes that are
/// not a model of a known kind; unchecked, as [`scratch_bound`]): for choosing a
/// firmware's entry point and buffers at compile time.
///
/// ```
/// use mil_core::container::ModelKind;
/// const MODEL: &[u8] = mil_core::sample::LINEAR_MIL; // include_bytes!("model.milm")
/// const MILES: bool = matches!(mil_core::model::header_kind(MODEL), Some(ModelKind::Miles));
/// assert!(!MILES);
/// ```
pub const fn header_kind(model: &[u8]) -> Option<ModelKind> {
    use crate::container::layout::header;
    if model.len() < header::KIND + 1
        || model[0] != container::MAGIC[0]
        || model[1] != container::MAGIC[1]
        || model[2] != container::MAGIC[2]
        || model[3] != container::MAGIC[3]
    {
        return None;
    }
    ModelKind::from_code(model[header::KIND])
}

/// The buffers of a MILES model's decision ([`Miles::decide`], [`Miles::begin`]) in a
/// `const` context: (D + 3K `f32` of scratch, K `u32` for the nearest instances), K the
/// stored prototypes; (0, 0) for other kinds. Unchecked, as [`scratch_bound`]; for every
/// MILES model [`Model::parse`] accepts it equals ([`Miles::scratch_len`],
/// [`Miles::n_prototypes`]).
pub const fn miles_buffers(model: &[u8]) -> (usize, usize) {
    if !matches!(header_kind(model), Some(ModelKind::Miles)) {
        return (0, 0);
    }
    let k = match const_section(model, tag::REF_INSTANCES) {
        Some((rows, _)) => rows,
        None => 0,
    };
    (header_dims(model).0.saturating_add(k.saturating_mul(3)), k)
}

/// The buffers of a miVLAD or miFV pass ([`MiVlad::decide`], [`MiVlad::begin`]) in a
/// `const` context: (D + k `f32` of scratch, 2·width + k `f64` of sums), k the centres or
/// components and width kD (miVLAD) or 2kD (miFV); (0, 0) for other kinds. Unchecked, as
/// [`scratch_bound`]; for every miVLAD and miFV model [`Model::parse`] accepts it equals
/// ([`MiVlad::scratch_len`], [`MiVlad::sums_len`]).
pub const fn mi_vlad_buffers(model: &[u8]) -> (usize, usize) {
    let fisher = match header_kind(model) {
        Some(ModelKind::MiVlad) => false,
        Some(ModelKind::MiFv) => true,
        _ => return (0, 0),
    };
    let k = match const_section(model, tag::REF_INSTANCES) {
        Some((rows, _)) => rows,
        None => 0,
    };
    let d = header_dims(model).0;
    let width = k
        .saturating_mul(d)
        .saturating_mul(if fisher { 2 } else { 1 });
    (
        d.saturating_add(k),
        width.saturating_mul(2).saturating_add(k),
    )
}

/// The buffers of an attention network's pass ([`Attention::decide`],
/// [`Attention::begin`]) in a `const` context: ([`Attention::scratch_len`] `f32`,
/// [`Attention::ints_len`] `i16`), read from the header and the layers' widths in
/// `NET_LAYERS`; (0, 0) for other kinds. Unchecked, as [`scratch_bound`]; for every
/// attention model [`Model::parse`] accepts it equals the parsed network's.
pub const fn attention_buffers(model: &[u8]) -> (usize, usize) {
    use crate::container::layout::{entry, header};
    if !matches!(header_kind(model), Some(ModelKind::Attention)) {
        return (0, 0);
    }
    let Some(e) = const_entry(model, tag::NET_LAYERS) else {
        return (0, 0);
    };
    let at = const_le(model, e + entry::OFFSET, 4);
    let layers = const_le(model, e + entry::ROWS, 4);
    // Rows of encoder 1 and 2, and of V when the pooling has attention units.
    let hidden = const_le(model, at, 4);
    let embed = const_le(model, at.saturating_add(12), 4);
    let attend = if layers > 3 {
        const_le(model, at.saturating_add(24), 4)
    } else {
        0
    };
    let d = header_dims(model).0;
    let shared = d
        .saturating_add(hidden)
        .saturating_add(embed.saturating_mul(2));
    let quantised = const_le(model, header::ENCODING, 1) != 0;
    (
        shared.saturating_add(attend.saturating_mul(2)),
        if quantised {
            shared.saturating_add(attend)
        } else {
            0
        },
    )
}

/// The little-endian unsigned integer of `n` bytes at `at` (0 past the end), in `const`.
const fn const_le(model: &[u8], at: usize, n: usize) -> usize {
    if at >= model.len() || model.len() - at < n {
        return 0;
    }
    let mut v = 0usize;
    let mut k = n;
    while k > 0 {
        k -= 1;
        v = (v << 8) | model[at + k] as usize;
    }
    v
}

/// (rows, columns) of the first section tagged `wanted`, in `const`.
const fn const_section(model: &[u8], wanted: u16) -> Option<(usize, usize)> {
    use crate::container::layout::entry;
    match const_entry(model, wanted) {
        Some(e) => Some((
            const_le(model, e + entry::ROWS, 4),
            const_le(model, e + entry::COLS, 4),
        )),
        None => None,
    }
}

/// Where the table entry of the first section tagged `wanted` lies, in `const`.
const fn const_entry(model: &[u8], wanted: u16) -> Option<usize> {
    use crate::container::layout::{entry, entry_at, header};
    let n = const_le(model, header::N_SECTIONS, 2);
    let mut i = 0;
    while i < n {
        let e = entry_at(i);
        if const_le(model, e + entry::TAG, 2) == wanted as usize {
            return Some(e);
        }
        i += 1;
    }
    None
}
