//! Discretisation of real-valued instances onto the grid (§2): each value is multiplied
//! by 10^precision and rounded; per dimension the training range [minᵢ, maxᵢ] of the
//! rounded values maps by translation onto 1..sᵢ−1 (sᵢ = maxᵢ − minᵢ + 2), and the cells
//! 0 and sᵢ stand for −∞ and +∞: values below or above the training range. Integer data at
//! precision 0 is thus translated, nothing else: v ↦ v − minᵢ + 1.

use super::grid::Grid;
use crate::error::Error;

/// Smallest precision accepted (values are divided by up to 10⁹).
pub const MIN_PRECISION: i32 = -9;
/// Largest precision accepted.
pub const MAX_PRECISION: i32 = 9;
/// Largest precision [`default_precision`] picks.
pub const MAX_DEFAULT_PRECISION: i32 = 6;
/// Largest training range (in grid steps) [`default_precision`] lets a dimension have.
pub const MAX_DEFAULT_RANGE: f64 = 1e9;

/// 10^precision and whether to multiply (true) or divide by it; exact for |p| ≤ 22.
fn power(precision: i32) -> (f64, bool) {
    let mut p = 1.0;
    for _ in 0..precision.unsigned_abs() {
        p *= 10.0;
    }
    (p, precision >= 0)
}

/// round(x · 10^precision), or an error if x is not finite or the result leaves the
/// range where f64 integers are exact (|v| < 2⁵³).
fn scaled(x: f64, precision: i32) -> Result<i64, Error> {
    let (p, mul) = power(precision);
    let v = libm::round(if mul { x * p } else { x / p });
    if !v.is_finite() {
        return Err(Error::InvalidParameter("a value is not finite"));
    }
    if v.abs() >= 9_007_199_254_740_992.0 {
        return Err(Error::InvalidParameter(
            "a value is too large for this precision",
        ));
    }
    Ok(v as i64)
}

/// Checks that `precision` lies in [`MIN_PRECISION`]..=[`MAX_PRECISION`].
pub fn check_precision(precision: i32) -> Result<(), Error> {
    if (MIN_PRECISION..=MAX_PRECISION).contains(&precision) {
        Ok(())
    } else {
        Err(Error::InvalidParameter("precision must be in -9..=9"))
    }
}

/// The precision the data itself carries: the smallest p in 0..=6 at which every value
/// times 10^p is an integer (to 1e−9 relative), else 6; then lowered until no dimension's
/// range exceeds 10⁹ grid steps. `features` is row-major with `dim` columns.
pub fn default_precision(features: &[f64], dim: usize) -> Result<i32, Error> {
    if dim == 0 || features.is_empty() {
        return Err(Error::Empty);
    }
    if !features.len().is_multiple_of(dim) {
        return Err(Error::DimensionMismatch {
            expected: dim,
            got: features.len() % dim,
        });
    }
    if features.iter().any(|x| !x.is_finite()) {
        return Err(Error::InvalidParameter("a value is not finite"));
    }
    let integral = |p: i32| {
        let (scale, _) = power(p);
        features.iter().all(|&x| {
            let v = x * scale;
            libm::fabs(v - libm::round(v)) <= 1e-9 * libm::fabs(v).max(1.0)
        })
    };
    let mut precision = (0..=MAX_DEFAULT_PRECISION)
        .find(|&p| integral(p))
        .unwrap_or(MAX_DEFAULT_PRECISION);
    let widest = (0..dim)
        .map(|j| {
            let column = features.iter().skip(j).step_by(dim);
            let (lo, hi) = column.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            });
            hi - lo
        })
        .fold(0.0, f64::max);
    let steps = |p: i32| match power(p) {
        (scale, true) => widest * scale,
        (scale, false) => widest / scale,
    };
    while precision > MIN_PRECISION && steps(precision) > MAX_DEFAULT_RANGE {
        precision -= 1;
    }
    Ok(precision)
}

/// Fits the discretisation of §2 on training instances (`features`, row-major, `dim`
/// columns): writes each dimension's smallest rounded value into `min` and the grid size
/// sᵢ = maxᵢ − minᵢ + 2 into `s`.
pub fn fit(
    features: &[f64],
    dim: usize,
    precision: i32,
    min: &mut [i64],
    s: &mut [u32],
) -> Result<(), Error> {
    check_precision(precision)?;
    if dim == 0 || features.is_empty() {
        return Err(Error::Empty);
    }
    if !features.len().is_multiple_of(dim) {
        return Err(Error::DimensionMismatch {
            expected: dim,
            got: features.len() % dim,
        });
    }
    if min.len() < dim {
        return Err(Error::BufferTooSmall {
            needed: dim,
            got: min.len(),
        });
    }
    if s.len() < dim {
        return Err(Error::BufferTooSmall {
            needed: dim,
            got: s.len(),
        });
    }
    for j in 0..dim {
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        for row in features.chunks_exact(dim) {
            let v = scaled(row[j], precision)?;
            lo = lo.min(v);
            hi = hi.max(v);
        }
        let size = (hi - lo) as u64 + 2;
        if size >= u64::from(u32::MAX) {
            return Err(Error::InvalidParameter(
                "a dimension spans too many grid steps at this precision",
            ));
        }
        min[j] = lo;
        s[j] = size as u32;
    }
    Ok(())
}

/// A fitted discretisation: maps instances to grid points.
#[derive(Debug, Clone, Copy)]
pub struct Discretizer<'a> {
    precision: i32,
    min: &'a [i64],
    grid: Grid<'a>,
}

impl<'a> Discretizer<'a> {
    /// The discretisation [`fit`] wrote into `min` and `s`.
    pub fn new(precision: i32, min: &'a [i64], s: &'a [u32]) -> Result<Self, Error> {
        check_precision(precision)?;
        let grid = Grid::new(s)?;
        if min.len() != s.len() {
            return Err(Error::DimensionMismatch {
                expected: s.len(),
                got: min.len(),
            });
        }
        if s.iter().any(|&v| v < 2) {
            return Err(Error::InvalidParameter("a fitted grid size is below 2"));
        }
        Ok(Discretizer {
            precision,
            min,
            grid,
        })
    }

    /// The grid the points land in.
    pub fn grid(&self) -> Grid<'a> {
        self.grid
    }

    /// Maps one instance (`dim` values) to its grid point in `out`.
    pub fn apply(&self, x: &[f64], out: &mut [u32]) -> Result<(), Error> {
        let d = self.grid.dim();
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
        for ((&x, o), (&lo, &s)) in x
            .iter()
            .zip(out)
            .zip(self.min.iter().zip(self.grid.upper()))
        {
            *o = cell(x, self.precision, lo, s)?;
        }
        Ok(())
    }
}

/// The grid value of `x` in a dimension whose fitted smallest rounded value is `lo` and
/// grid size `s` (see [`fit`]): 0 below the training range, `s` above it, otherwise
/// round(x·10^precision) − lo + 1.
pub fn cell(x: f64, precision: i32, lo: i64, s: u32) -> Result<u32, Error> {
    let v = scaled(x, precision)?;
    let hi = lo + i64::from(s) - 2;
    Ok(if v < lo {
        0
    } else if v > hi {
        s
    } else {
        (v - lo + 1) as u32
    })
}
