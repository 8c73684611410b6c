//! Keyword retrieval (`crate::text`) as `#[pyfunction]`s over numpy arrays.
//!
//! The index's arrays stay in numpy (`graphrecall.anchors.keyword.BM25Index` owns them);
//! each call borrows them as contiguous slices and runs the query with the GIL released.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use super::slice;
use crate::py::enter;
use crate::text::{self, Groups, Match, Postings};

/// The best `k` rows of one tenant for a query's term ids (`text::bm25_top_k`); returns
/// `(rows, scores)`.
#[pyfunction]
#[pyo3(signature = (positions, scores, group_terms, group_offsets, rows, terms, k, *, all_terms = false))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn bm25_top_k<'py>(
    py: Python<'py>,
    positions: PyReadonlyArray1<'py, u32>,
    scores: PyReadonlyArray1<'py, f64>,
    group_terms: PyReadonlyArray1<'py, i64>,
    group_offsets: PyReadonlyArray1<'py, i64>,
    rows: PyReadonlyArray1<'py, i64>,
    terms: Vec<i64>,
    k: usize,
    all_terms: bool,
) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<f64>>)> {
    let postings = Postings {
        positions: slice(&positions, "positions")?,
        scores: slice(&scores, "scores")?,
    };
    let groups = Groups {
        terms: slice(&group_terms, "group_terms")?,
        offsets: slice(&group_offsets, "group_offsets")?,
    };
    let rows = slice(&rows, "rows")?;
    let how = if all_terms { Match::All } else { Match::Any };
    let (r, s) = enter(py, || {
        text::bm25_top_k(postings, groups, rows, &terms, k, how)
    })?;
    Ok((r.into_pyarray(py), s.into_pyarray(py)))
}
