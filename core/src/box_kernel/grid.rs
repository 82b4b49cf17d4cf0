//! The grid bags live on (§2).

use crate::error::Error;

/// The grid 𝒳 = {0..s₁} × … × {0..s_d}: one upper value sᵢ ≥ 1 per dimension.
#[derive(Debug, Clone, Copy)]
pub struct Grid<'a> {
    s: &'a [u32],
}

impl<'a> Grid<'a> {
    /// A grid with upper values `s` (one per dimension; `u32::MAX` is reserved).
    pub fn new(s: &'a [u32]) -> Result<Self, Error> {
        if s.is_empty() {
            return Err(Error::Empty);
        }
        if s.iter().any(|&v| v == 0 || v == u32::MAX) {
            return Err(Error::InvalidParameter(
                "every grid size s_i must be in 1..u32::MAX",
            ));
        }
        Ok(Grid { s })
    }

    /// Dimension d.
    pub fn dim(&self) -> usize {
        self.s.len()
    }

    /// The upper values sᵢ.
    pub fn upper(&self) -> &'a [u32] {
        self.s
    }

    /// Checks that `points` is a non-empty row-major list of grid points; returns how many.
    pub fn check_bag(&self, points: &[u32]) -> Result<usize, Error> {
        let d = self.dim();
        if points.is_empty() {
            return Err(Error::Empty);
        }
        if !points.len().is_multiple_of(d) {
            return Err(Error::DimensionMismatch {
                expected: d,
                got: points.len() % d,
            });
        }
        for row in points.chunks_exact(d) {
            if row.iter().zip(self.s).any(|(&x, &s)| x > s) {
                return Err(Error::InvalidParameter("a point lies outside the grid"));
            }
        }
        Ok(points.len() / d)
    }
}
