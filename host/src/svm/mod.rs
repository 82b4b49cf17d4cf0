//! Support vector machines over bags with a precomputed set kernel (GMIL paper §8):
//! the SMO solver and the kernel maps that make box-counting Gram matrices usable.

pub mod bags;
pub mod maps;
pub mod smo;
