//! A set of points in `R^dim`, stored row-major in one contiguous buffer.

/// `len()` points of dimension `dim()`, stored row-major: point `i` is
/// `data[i*dim .. (i+1)*dim]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Points {
    dim: usize,
    data: Vec<f64>,
}

impl Points {
    /// An empty point set of dimension `dim`.
    ///
    /// # Panics
    /// If `dim == 0` (a zero-dimensional input space is a programmer error).
    pub fn new(dim: usize) -> Self {
        assert!(dim > 0, "Points::new: dim must be positive");
        Self { dim, data: Vec::new() }
    }

    /// Wraps a row-major buffer of `data.len() / dim` points.
    ///
    /// # Panics
    /// If `dim == 0` or `data.len()` is not a multiple of `dim` (programmer error).
    pub fn from_rows(dim: usize, data: Vec<f64>) -> Self {
        assert!(dim > 0, "Points::from_rows: dim must be positive");
        assert!(data.len() % dim == 0, "Points::from_rows: data length {} is not a multiple of dim {dim}", data.len());
        Self { dim, data }
    }

    /// Dimension of every point.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.data.len() / self.dim
    }

    /// Whether the set holds no points.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Point `i`.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn row(&self, i: usize) -> &[f64] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }

    /// Appends one point.
    ///
    /// # Panics
    /// If `x.len() != self.dim()` (programmer error; fallible callers check first).
    pub fn push(&mut self, x: &[f64]) {
        assert_eq!(x.len(), self.dim, "Points::push: wrong dimension");
        self.data.extend_from_slice(x);
    }

    /// The whole row-major buffer.
    pub fn as_slice(&self) -> &[f64] {
        &self.data
    }

    /// Iterator over the points.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[f64]> + '_ {
        self.data.chunks_exact(self.dim)
    }

    /// Whether every coordinate is finite.
    pub(crate) fn all_finite(&self) -> bool {
        self.data.iter().all(|v| v.is_finite())
    }
}
