//! A set of points in `R^dim`: a row-major `len x dim` matrix in one contiguous buffer.
//!
//! ndarray is the array type armada's numerics exchange: a candidate set or a design is a
//! [`Points`], made from an `Array2<f64>` without copying when that array is row-major
//! ([`Points::from`]), seen as one ([`Points::view`], [`Points::into_array`]), and handed
//! to faer as a view of the same memory ([`Points::as_faer`]). A point is a `&[f64]`
//! ([`Points::row`]): kernels and acquisition rules read coordinates as plain slices, in
//! their innermost loops, without an ndarray layout check per point.

use ndarray::{Array2, ArrayView2};

/// `len()` points of dimension `dim()`: point `i` is `data[i*dim .. (i+1)*dim]`.
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

    /// Wraps a row-major buffer of `data.len() / dim` points (no copy).
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

    /// The points as an ndarray matrix view of the same memory (no copy): row `i` is
    /// point `i`.
    pub fn view(&self) -> ArrayView2<'_, f64> {
        ArrayView2::from_shape((self.len(), self.dim), &self.data).expect("the buffer is len x dim")
    }

    /// The points as a faer matrix view of the same memory (no copy).
    pub fn as_faer(&self) -> faer::MatRef<'_, f64> {
        faer::MatRef::from_row_major_slice(&self.data, self.len(), self.dim)
    }

    /// The matrix, one point per row (no copy).
    pub fn into_array(self) -> Array2<f64> {
        let n = self.len();
        Array2::from_shape_vec((n, self.dim), self.data).expect("the buffer is len x dim")
    }

    /// Whether every coordinate is finite.
    pub(crate) fn all_finite(&self) -> bool {
        self.data.iter().all(|v| v.is_finite())
    }
}

/// One point per row. A row-major array's buffer is taken as it is; any other layout is
/// copied into one (once).
///
/// # Panics
/// If the array has no columns.
impl From<Array2<f64>> for Points {
    fn from(array: Array2<f64>) -> Self {
        let dim = array.ncols();
        assert!(dim > 0, "Points::from: dim must be positive");
        let array = if array.is_standard_layout() { array } else { array.as_standard_layout().into_owned() };
        let len = array.len();
        let (mut data, offset) = array.into_raw_vec_and_offset();
        // A sliced array starts inside its buffer: its rows are the `len` elements from there.
        let start = offset.unwrap_or(0);
        data.truncate(start + len);
        data.drain(..start);
        Points::from_rows(dim, data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, s};

    #[test]
    fn points_are_a_row_major_ndarray_shared_with_faer_without_copies() {
        let mut p = Points::from_rows(2, vec![1.0, 2.0, 3.0, 4.0]);
        p.push(&[5.0, 6.0]);
        assert_eq!((p.len(), p.dim()), (3, 2));
        assert_eq!(p.row(2), [5.0, 6.0]);
        assert_eq!(p.view(), array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]);
        let faer = p.as_faer();
        assert_eq!((faer.nrows(), faer.ncols(), faer[(2, 1)]), (3, 2, 6.0));
        // The same memory, three ways.
        assert_eq!(faer.as_ptr(), p.as_slice().as_ptr());
        assert_eq!(p.view().as_ptr(), p.as_slice().as_ptr());

        // An array in row-major layout is taken as it is; a transposed one is laid out anew.
        let a = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let ptr = a.as_ptr();
        let q = Points::from(a);
        assert_eq!(q.as_slice().as_ptr(), ptr);
        let sliced = Points::from(
            array![[9.0, 9.0, 9.0], [1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 7.0, 7.0]].slice_move(s![1..3, ..]),
        );
        assert_eq!(sliced.as_slice(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let t = Points::from(array![[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]].reversed_axes());
        assert_eq!(t.as_slice(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(t.iter().map(|r| r[2]).collect::<Vec<_>>(), [3.0, 6.0]);
        let mut empty = Points::new(3);
        assert!(empty.is_empty());
        empty.push(&[0.0, 1.0, 2.0]);
        assert_eq!(empty.into_array(), array![[0.0, 1.0, 2.0]]);
    }
}
