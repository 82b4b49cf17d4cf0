//! Why a model labelled a bag: the witness instance(s) and the per-instance scores the
//! model itself defines, or, for Citation-kNN, the neighbouring training bags that voted.
//!
//! Each model explains with the quantities its own decision uses, nothing fitted after
//! the fact:
//!
//! - MILR: the instance probabilities p_ij = σ(w₀ + w·x_ij) of the sub-problem of the
//!   predicted class (class 1 when binary); the witness is the most probable instance (the
//!   one that dominates noisy-OR, max and softmax pooling). After a projection, x_ij is the
//!   projected instance: the same linear head the core's `LinearMil` model runs.
//! - Citation-kNN: the references (R nearest training bags, with ties) and the citers
//!   (training bags whose C-nearest radius reaches the query), each with its distance and
//!   the instance pair realising it (the minimal Hausdorff distance's closest pair, the
//!   H-th ranked pair, or the maximal Hausdorff distance's farthest nearest neighbour;
//!   none for the average Hausdorff distance, which no single pair realises).
//! - M³IC: the modified margin max_u w_u·x − mean_v w_v·x of every instance (eq. 8 of Zhang
//!   et al. 2009); the witness j* is the largest, and step 14 assigns the bag by it.
//! - SVM with the MI kernel (Gärtner et al. 2002): f(X) = Σ_{x∈X} g(x) + b with
//!   g(x) = Σ_t α_t y_t Σ_{y∈Y_t} k(x, y) (normalised by the kernel scale), so g is each
//!   instance's additive contribution and the witness is the largest; the box-counting and
//!   normalised set kernels define no per-instance score and explain nothing.
//! - mi-SVM and MI-SVM (Andrews et al. 2002): the instance SVM's decision value f(x); the
//!   bag's score is the largest, so the witness is the instance that decides the label.
//! - sMIL and sbMIL (Bunescu & Mooney 2007): the decision value f(x) of each instance; an
//!   sbMIL bag's score is the largest, an sMIL bag's the mean (f is linear in the bag's
//!   mean in feature space); the witness is the largest either way.
//! - DD and EM-DD (Maron & Lozano-Pérez 1998; Zhang & Goldman 2001): each instance's
//!   probability of belonging to the concept, exp(−Σ s_k² (x_k − t_k)²); the witness is the
//!   most probable (EM-DD's bag score, the largest factor of DD's noisy-OR).
//! - MILES (Chen, Bi & Wang 2006): each selected prototype's term w_k s(x_k, B) goes to the
//!   bag's instance nearest x_k; an instance's score is the sum of its terms g(x) less the
//!   paper's threshold −b/|J| (J: the instances holding a term), so the scores of J sum to
//!   the bag's decision value; the witness is the largest.
//! - mi-Graph (Zhou, Sun & Li 2009): f(X) = Σ_a g(x_a) + b with
//!   g(x_a) = Ŵ_a Σ_r c_r Σ_b Ŵ^r_b exp(−γ‖x_a − y^r_b‖²) (Ŵ the bags' normalised instance
//!   weights), each instance's additive contribution; the witness is the largest, and the
//!   paper defines no instance label.

use serde::Serialize;

use mil_core::keyword::Keyword;

/// What [`Explanation::instance_scores`] measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InstanceScore {
    /// The model defines no per-instance score.
    None,
    /// MILR's instance probability σ(w₀ + w·x) of the predicted class's sub-problem;
    /// MI-Wrapper's instance probability; DD's and EM-DD's probability that the instance
    /// belongs to the concept.
    Probability,
    /// M³IC's modified margin max_u w_u·x − mean_v w_v·x (eq. 8).
    Margin,
    /// A share of the decision value: the MI-kernel SVM's and mi-Graph's additive g(x);
    /// miVLAD's and miFV's w · (the instance's part of the bag vector before its
    /// normalisation).
    Contribution,
    /// The instance SVM's decision value f(x): its maximum is the bag's score (mi-SVM,
    /// MI-SVM, sbMIL), its mean for sMIL.
    Decision,
    /// The attention network's weight of the instance in the bag's pooled embedding:
    /// its attention weight a_k (Ilse et al. eq. 8, 9); 1/n for mean pooling; for max
    /// pooling, the share of the embedding's features whose maximum it holds. The
    /// weights of a bag sum to 1.
    Attention,
}

mil_core::keywords!(InstanceScore {
    InstanceScore::None => "none": "the model defines no per-instance score",
    InstanceScore::Probability => "probability": "MILR's and MI-Wrapper's instance probability of the predicted class; DD's and EM-DD's probability that the instance belongs to the concept",
    InstanceScore::Margin => "margin": "M3IC's modified margin max_u w_u.x - mean_v w_v.x (eq. 8)",
    InstanceScore::Contribution => "contribution": "the instance's share of the decision value (additive for the MI-kernel SVM and mi-graph; before the bag vector's normalisation for mi-vlad and mi-fv)",
    InstanceScore::Decision => "decision": "the instance SVM's decision value f(x), whose maximum is the bag's score (its mean for smil)",
    InstanceScore::Attention => "attention": "the attention network's weight of the instance in the bag's pooled embedding (sums to 1 per bag)",
});

/// A training bag that voted for a Citation-kNN prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Neighbour {
    /// Index of the training bag in the model (training order).
    pub bag: usize,
    /// Its identifier, when the model kept identifiers.
    pub bag_id: Option<String>,
    /// Its class index.
    pub label: usize,
    /// The bag distance from the query bag (the one the vote used).
    pub distance: f64,
    /// (instance of the query bag, instance of the training bag) realising the distance;
    /// `None` for the average Hausdorff distance.
    pub pair: Option<(usize, usize)>,
}

/// The explanation of one bag's prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// The witness instance(s): indices within the bag, 0-based.
    pub witnesses: Vec<usize>,
    /// What `instance_scores` measures.
    pub score_kind: InstanceScore,
    /// One score per instance of the bag (empty when `score_kind` is `None`).
    pub instance_scores: Vec<f64>,
    /// Citation-kNN's references (the R nearest training bags, with ties).
    pub references: Vec<Neighbour>,
    /// Citation-kNN's citers (training bags that count the query among their C nearest).
    pub citers: Vec<Neighbour>,
}

impl Explanation {
    /// No explanation: the model defines neither witnesses nor instance scores.
    pub fn none() -> Self {
        Explanation {
            witnesses: Vec::new(),
            score_kind: InstanceScore::None,
            instance_scores: Vec::new(),
            references: Vec::new(),
            citers: Vec::new(),
        }
    }

    /// Instance scores of kind `kind` with the first largest as the witness.
    pub fn from_scores(kind: InstanceScore, scores: Vec<f64>) -> Self {
        let witness = crate::numerics::first_argmax(&scores).0;
        Explanation {
            witnesses: if scores.is_empty() {
                Vec::new()
            } else {
                vec![witness]
            },
            score_kind: kind,
            instance_scores: scores,
            references: Vec::new(),
            citers: Vec::new(),
        }
    }

    /// The kind's name as the JSON and help texts print it.
    pub fn score_name(&self) -> &'static str {
        self.score_kind.name()
    }
}
