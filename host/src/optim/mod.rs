//! The optimisers, together: L-BFGS ([`lbfgs`], MILR's default fit), Weka 3.6's
//! quasi-Newton method ([`weka_bfgs`], MILR's Weka mode), the dense dual QP of M³IC's
//! cutting planes ([`qp`]), SMO for the bag SVM ([`smo`]) and the interior point of the
//! 1-norm SVM's LP ([`l1_svm`], MILES).

pub mod l1_svm;
pub mod lbfgs;
pub mod qp;
pub mod smo;
pub mod weka_bfgs;
