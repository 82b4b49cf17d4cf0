//! Enums whose values users type by name: on the `mil` command line, in JSON reports, as
//! Python keyword arguments. Each such concept is one enum, and this trait gives it its
//! names, so every front end derives its parser from the type instead of mirroring it.
//!
//! ```
//! use mil_core::keyword::Keyword;
//! use mil_core::score::Pooling;
//!
//! assert_eq!(Pooling::NoisyOr.name(), "noisy-or");
//! assert_eq!("softmax".parse::<Pooling>(), Ok(Pooling::Softmax));
//! assert!(Pooling::ALL.iter().all(|p| Pooling::from_name(p.name()) == Some(*p)));
//! ```

use core::fmt;

/// An enum whose values have names users type.
pub trait Keyword: Copy + Eq + Sized + 'static {
    /// Every value, in the order help texts list them.
    const ALL: &'static [Self];

    /// The name users type (`noisy-or`, `kand`, `q15`).
    fn name(self) -> &'static str;

    /// One line on what the value means.
    fn help(self) -> &'static str;

    /// The value of that name.
    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.name() == name)
    }
}

/// A name that is none of an enum's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownName;

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown name")
    }
}

impl core::error::Error for UnknownName {}

/// Implements [`Keyword`], `Display` (the name) and `FromStr` (by name) for an enum of
/// unit variants: `keywords!(Type { Type::A => "a": "what a is", … })`.
#[macro_export]
macro_rules! keywords {
    ($ty:ty { $($variant:path => $name:literal : $help:literal),+ $(,)? }) => {
        impl $crate::keyword::Keyword for $ty {
            const ALL: &'static [Self] = &[$($variant),+];
            fn name(self) -> &'static str {
                match self {
                    $($variant => $name),+
                }
            }
            fn help(self) -> &'static str {
                match self {
                    $($variant => $help),+
                }
            }
        }
        impl ::core::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str($crate::keyword::Keyword::name(*self))
            }
        }
        impl ::core::str::FromStr for $ty {
            type Err = $crate::keyword::UnknownName;
            fn from_str(s: &str) -> ::core::result::Result<Self, Self::Err> {
                <$ty as $crate::keyword::Keyword>::from_name(s).ok_or($crate::keyword::UnknownName)
            }
        }
    };
}

keywords!(crate::score::Pooling {
    crate::score::Pooling::NoisyOr => "noisy-or": "P = 1 − Π(1 − pᵢ), in log space (Weka's default)",
    crate::score::Pooling::Mean => "mean": "arithmetic mean of the instance probabilities",
    crate::score::Pooling::Geometric => "geometric": "σ of the mean instance logit (Weka's geometric mean)",
    crate::score::Pooling::Softmax => "softmax": "Ray & Craven's softmax with sharpness β",
    crate::score::Pooling::Max => "max": "the largest instance probability",
});

keywords!(crate::Encoding {
    crate::Encoding::F32 => "f32": "32-bit floats",
    crate::Encoding::Q15 => "q15": "16-bit fixed point with per-row scales",
    crate::Encoding::Q7 => "q7": "8-bit fixed point with per-row scales",
});

keywords!(crate::ModelKind {
    crate::ModelKind::Projection => "projection": "a linear projection alone",
    crate::ModelKind::LinearMil => "linear-mil": "projection, linear instance scores, pooling over the bag",
    crate::ModelKind::CitationKnn => "citation-knn": "projection, Citation-kNN over stored reference bags",
    crate::ModelKind::M3ic => "m3ic": "projection, M³IC cluster assignment",
    crate::ModelKind::SetKernelSvm => "set-kernel-svm": "SVM over stored bags with a box-counting set kernel",
    crate::ModelKind::MiKernelSvm => "mi-kernel-svm": "SVM over stored bags with the MI kernel (sum of RBF over instance pairs)",
    crate::ModelKind::Miles => "miles": "MILES: a linear score on the bag's largest RBF similarity to each stored prototype",
    crate::ModelKind::MiVlad => "mi-vlad": "miVLAD: a linear score on the bag's normalised VLAD vector over a k-means codebook",
    crate::ModelKind::Attention => "attention": "attention-based deep MIL: an instance encoder, attention (or gated, mean, max) pooling and a linear head",
    crate::ModelKind::MiFv => "mi-fv": "miFV: a linear score on the bag's normalised Fisher vector under a diagonal Gaussian mixture",
});

keywords!(crate::box_kernel::BoxKernel {
    crate::box_kernel::BoxKernel::And => "kand": "k∧: boxes containing a point of each bag",
    crate::box_kernel::BoxKernel::Or => "kor": "k∨: boxes containing a point of either bag",
    crate::box_kernel::BoxKernel::AndOr => "kandor": "k∧/∨: k∧ normalised by k∨",
    crate::box_kernel::BoxKernel::Min => "kmin": "k_min: Σ over boxes of the smaller point count",
});

keywords!(crate::box_kernel::Method {
    crate::box_kernel::Method::Fast => "fast": "exact coverage counting with an empirical Bernstein stopping rule",
    crate::box_kernel::Method::Paper => "paper": "the paper's own estimators (Tables 3–5)",
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::box_kernel::{BoxKernel, Method};
    use crate::score::Pooling;
    use crate::{Encoding, ModelKind};

    fn round_trip<T: Keyword + core::fmt::Debug>() {
        for &v in T::ALL {
            assert_eq!(T::from_name(v.name()), Some(v));
            assert!(!v.help().is_empty());
        }
        // Names are unique.
        for (i, a) in T::ALL.iter().enumerate() {
            assert!(T::ALL[i + 1..].iter().all(|b| b.name() != a.name()));
        }
        assert_eq!(T::from_name("no-such-name"), None);
    }

    #[test]
    fn names_round_trip() {
        round_trip::<Pooling>();
        round_trip::<Encoding>();
        round_trip::<ModelKind>();
        round_trip::<BoxKernel>();
        round_trip::<Method>();
        assert_eq!(Encoding::ALL.len(), 3);
        assert_eq!(ModelKind::SetKernelSvm.name(), "set-kernel-svm");
    }
}
