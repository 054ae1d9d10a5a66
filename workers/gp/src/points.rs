//! Point sets at armada's array interfaces, and the one place they become contiguous rows.
//!
//! ndarray is the public array type: a design, a candidate set or a feature matrix is an
//! `ArrayView2<'_, f64>` when borrowed and an `Array2<f64>` when owned, one point per row; a
//! single point is an `ArrayView1<'_, f64>`. No public function of this crate takes or
//! returns a [`Points`].
//!
//! Inside, kernels and acquisition rules read a point as a `&[f64]` row of one contiguous
//! row-major buffer, in their innermost loops, without an ndarray layout check per point. That
//! buffer is taken once, where an array crosses an interface:
//!
//! * [`Rows::new`] borrows a standard-layout (row-major, contiguous) `ArrayView2` as it is, no
//!   copy; any other layout (a transpose, a column-major array, a column slice) is laid out
//!   anew once, an O(n d) copy, and gives the same numbers.
//! * [`point`] does the same for one point (a non-contiguous point is an O(d) copy).
//! * [`Points`], the growable storage behind a GP's design, takes an owned `Array2<f64>` in
//!   row-major layout without a copy ([`Points::from`]; other layouts: one O(n d) copy) and
//!   shows itself as an `ArrayView2` ([`Points::view`]) or a faer `MatRef`
//!   ([`Points::as_faer`]) of the same memory.
//! * [`as_faer`] views any `ArrayView2` as a faer `MatRef` of the same memory, whatever its
//!   strides: no copy.

use std::borrow::Cow;

use ndarray::{Array2, ArrayView1, ArrayView2};

/// The points of an `ArrayView2` (one per row) as one contiguous row-major buffer: the
/// array's own memory when it is in standard layout, else a copy made once (O(n d)).
///
/// This is the boundary between ndarray interfaces and inner loops: build it once per call,
/// then read points with [`Rows::row`] or [`Rows::iter`] (`chunks_exact(dim)`).
#[derive(Clone, Debug)]
pub struct Rows<'a> {
    dim: usize,
    len: usize,
    data: Cow<'a, [f64]>,
}

impl<'a> Rows<'a> {
    /// The rows of `x`, borrowed when `x` is in standard layout, else laid out anew (O(n d)).
    pub fn new(x: ArrayView2<'a, f64>) -> Self {
        let (len, dim) = x.dim();
        let data = match x.to_slice() {
            Some(s) => Cow::Borrowed(s),
            None => Cow::Owned(x.iter().copied().collect()),
        };
        Self { dim, len, data }
    }

    /// `data.len() / dim` points of dimension `dim` in a row-major buffer (no copy).
    ///
    /// # Panics
    /// If `dim == 0` or `data.len()` is not a multiple of `dim` (programmer error).
    pub fn from_slice(dim: usize, data: &'a [f64]) -> Self {
        assert!(dim > 0, "Rows::from_slice: dim must be positive");
        assert!(
            data.len().is_multiple_of(dim),
            "Rows::from_slice: data length {} is not a multiple of dim {dim}",
            data.len()
        );
        Self { dim, len: data.len() / dim, data: Cow::Borrowed(data) }
    }

    /// Whether the rows are the input's own memory (no copy was made).
    pub fn is_borrowed(&self) -> bool {
        matches!(self.data, Cow::Borrowed(_))
    }

    /// Dimension of every point.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no points.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Point `i`.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    #[inline]
    pub fn row(&self, i: usize) -> &[f64] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }

    /// The whole row-major buffer.
    pub fn as_slice(&self) -> &[f64] {
        &self.data
    }

    /// Iterator over the points, `chunks_exact(dim)` of the buffer (none when `dim == 0`).
    pub fn iter(&self) -> std::slice::ChunksExact<'_, f64> {
        self.data.chunks_exact(self.dim.max(1))
    }

    /// Whether every coordinate is finite.
    pub(crate) fn all_finite(&self) -> bool {
        self.data.iter().all(|v| v.is_finite())
    }
}

/// One point as a `&[f64]`: the view's own memory when it is contiguous, else a copy (O(d)).
pub fn point<'a>(x: ArrayView1<'a, f64>) -> Cow<'a, [f64]> {
    match x.to_slice() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(x.to_vec()),
    }
}

/// `x` as a faer matrix view of the same memory, with the same strides (no copy, any layout).
pub fn as_faer<'a>(x: ArrayView2<'a, f64>) -> faer::MatRef<'a, f64> {
    let (nrows, ncols) = x.dim();
    let strides = x.strides();
    // SAFETY: `x` is a valid view for `'a` of `nrows x ncols` elements at these strides (in
    // elements), which is exactly what `from_raw_parts` requires; the result borrows for `'a`.
    unsafe { faer::MatRef::from_raw_parts(x.as_ptr(), nrows, ncols, strides[0], strides[1]) }
}

/// Growable storage of `len()` points of dimension `dim()`: point `i` is
/// `data[i*dim .. (i+1)*dim]`. It is what a GP keeps its design in (observations are appended
/// one at a time); its public face is ndarray ([`Points::view`], [`Points::into_array`]).
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
        assert!(
            data.len().is_multiple_of(dim),
            "Points::from_rows: data length {} is not a multiple of dim {dim}",
            data.len()
        );
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

    /// The points as [`Rows`] (borrowed, no copy).
    pub fn rows(&self) -> Rows<'_> {
        Rows::from_slice(self.dim, &self.data)
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

    #[test]
    fn rows_borrow_a_standard_layout_view_and_lay_out_any_other_once() {
        let a = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let rows = Rows::new(a.view());
        assert!(rows.is_borrowed());
        assert_eq!(rows.as_slice().as_ptr(), a.as_ptr());
        assert_eq!((rows.len(), rows.dim(), rows.row(1)), (2, 3, &[4.0, 5.0, 6.0][..]));

        // The same points stored column-major: copied once into the same row-major buffer.
        let t = array![[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]];
        let rows_t = Rows::new(t.t());
        assert!(!rows_t.is_borrowed());
        assert_eq!(rows_t.as_slice(), rows.as_slice());
        assert_eq!(rows_t.iter().map(|r| r[2]).collect::<Vec<_>>(), [3.0, 6.0]);
        // A row slice of a standard-layout array is still contiguous: borrowed.
        let big = array![[9.0, 9.0, 9.0], [1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let tail = Rows::new(big.slice(s![1.., ..]));
        assert!(tail.is_borrowed());
        assert_eq!(tail.as_slice(), rows.as_slice());
        // A column slice is not: copied.
        let cols = Rows::new(big.slice(s![1.., ..2]));
        assert_eq!(cols.as_slice(), [1.0, 2.0, 4.0, 5.0]);
        assert!(!cols.is_borrowed());

        // A point: a row of a standard-layout array is borrowed, a column is copied.
        assert_eq!(point(a.row(1)).as_ptr(), a.row(1).as_ptr());
        assert!(matches!(point(a.row(1)), Cow::Borrowed(_)));
        assert_eq!(*point(a.column(1)), [2.0, 5.0]);
        assert!(matches!(point(a.column(1)), Cow::Owned(_)));
    }

    #[test]
    fn any_view_is_a_faer_view_of_the_same_memory() {
        let a = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let f = as_faer(a.view());
        assert_eq!((f.nrows(), f.ncols(), f[(1, 2)]), (2, 3, 6.0));
        assert_eq!(f.as_ptr(), a.as_ptr());
        // A transposed (column-major) view: the same memory, other strides.
        let ft = as_faer(a.t());
        assert_eq!((ft.nrows(), ft.ncols(), ft[(2, 1)], ft[(0, 1)]), (3, 2, 6.0, 4.0));
        assert_eq!(ft.as_ptr(), a.as_ptr());
        let fs = as_faer(a.slice(s![.., 1..]));
        assert_eq!((fs[(0, 0)], fs[(1, 1)]), (2.0, 6.0));
        assert_eq!(fs.as_ptr(), a.slice(s![.., 1..]).as_ptr());
    }
}
