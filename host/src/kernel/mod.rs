//! Set kernels over bags, as Gram matrices of natural logarithms.

pub mod nsk;
