//! What the heads take and give: a bag's instances in the model's encoding, the
//! decision on it, and the rule that picks its label.

use crate::error::Error;

/// One bag's instances, row-major `n × D`: floats for f32 models, quantised `i16`
/// (see [`crate::Model::quantize_instance`]) for Q15/Q7 models.
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

/// What a bag classifier decided: the label, the pooled score, and the witness instance
/// where the head has a natural one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    /// Predicted class index (binary: 1 = positive).
    pub label: usize,
    /// The score of the positive class (binary) or of the predicted class.
    pub score: f32,
    /// The witness: index within the bag of the instance the decision rests on, found in
    /// the same pass at no extra memory. A linear head with max pooling names the first
    /// instance of largest logit in the row of the decided class (binary: the one row),
    /// whose probability is the bag's; M³IC names j* of step 14, the first instance of
    /// largest modified margin. `None` for heads whose decision pools every instance
    /// (mean, geometric, softmax, noisy-OR pooling, Citation-kNN, the set-kernel SVM).
    pub witness: Option<usize>,
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
