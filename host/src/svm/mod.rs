//! Support vector machines over bags with a precomputed set kernel (GMIL paper §8):
//! the kernel maps that make box-counting Gram matrices usable, and the SVM over them
//! (solved by [`crate::optim::smo`]).

pub mod bags;
pub mod maps;
