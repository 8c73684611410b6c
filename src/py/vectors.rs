//! Sketch vector search (`crate::vectors`) as `#[pyfunction]`s over numpy arrays.
//!
//! The part's arrays (codes `uint64 (n, words)`, vectors `float32 (n, d)`, centre
//! `float32 (d,)`, 4-bit rows `uint8 (n, ceil(d / 2))`, scales `float32 (d,)`) stay in
//! numpy (memory-mapped after a load); each call borrows them as
//! contiguous slices, checks the shapes with the GIL held and runs the whole batch with the
//! GIL released. The public wrapper is `graphrecall.anchors.vectors.VectorIndex`.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;

use crate::py::enter;
use crate::vectors;
use crate::Error;

/// Borrow a 2-D array as one contiguous slice and its column count.
fn matrix<'a, T: numpy::Element>(
    arr: &'a PyReadonlyArray2<'_, T>,
    name: &'static str,
) -> PyResult<(&'a [T], usize)> {
    let cols = arr.shape()[1];
    let bad = || {
        Error::param(
            name,
            "array must be C-contiguous (use numpy.ascontiguousarray)",
        )
    };
    // `as_slice` also accepts Fortran order, which would read the matrix transposed.
    if !arr.is_c_contiguous() {
        return Err(bad().into());
    }
    let data = arr.as_slice().map_err(|_| bad())?;
    Ok((data, cols))
}

/// Borrow the vectors and the queries, which must have the same dimension:
/// `(vectors, dim, queries)`.
fn vectors_and_queries<'a>(
    vectors: &'a PyReadonlyArray2<'_, f32>,
    queries: &'a PyReadonlyArray2<'_, f32>,
) -> PyResult<(&'a [f32], usize, &'a [f32])> {
    let (v, dim) = matrix(vectors, "vectors")?;
    let (q, qdim) = matrix(queries, "queries")?;
    if qdim != dim {
        return Err(Error::param(
            "queries",
            format!("queries have dimension {qdim}, the vectors {dim}"),
        )
        .into());
    }
    Ok((v, dim, q))
}

/// Sign codes of `vectors - centre`: uint64 `(n, ceil(d / 64))`, flat.
#[pyfunction]
pub fn sketch_codes<'py>(
    py: Python<'py>,
    vectors: PyReadonlyArray2<'py, f32>,
    centre: PyReadonlyArray1<'py, f32>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let (v, dim) = matrix(&vectors, "vectors")?;
    let c = super::slice(&centre, "centre")?;
    let codes = enter(py, || vectors::sketch_codes(v, c, dim))?;
    Ok(codes.into_pyarray(py))
}

/// 4-bit rows of `vectors - centre` with per-dimension scales: uint8 `(n * ceil(d / 2),)`
/// flat and float32 `(d,)`.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn sketch_int4<'py>(
    py: Python<'py>,
    vectors: PyReadonlyArray2<'py, f32>,
    centre: PyReadonlyArray1<'py, f32>,
) -> PyResult<(Bound<'py, PyArray1<u8>>, Bound<'py, PyArray1<f32>>)> {
    let (v, dim) = matrix(&vectors, "vectors")?;
    let c = super::slice(&centre, "centre")?;
    let (int4, scales) = enter(py, || vectors::sketch_int4(v, c, dim))?;
    Ok((int4.into_pyarray(py), scales.into_pyarray(py)))
}

/// Top `k` part positions of each query (Hamming scan to `rerank` rows, 4-bit rescore to
/// `refine`, exact rerank): positions int64 `(q * k,)` padded with -1, scores float32
/// padded with NaN, counts int64.
#[pyfunction]
#[pyo3(signature = (codes, vectors, centre, int4, scales, queries, k, rerank, refine))]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
pub fn sketch_search<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, u64>,
    vectors: PyReadonlyArray2<'py, f32>,
    centre: PyReadonlyArray1<'py, f32>,
    int4: PyReadonlyArray2<'py, u8>,
    scales: PyReadonlyArray1<'py, f32>,
    queries: PyReadonlyArray2<'py, f32>,
    k: usize,
    rerank: usize,
    refine: usize,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f32>>,
    Bound<'py, PyArray1<i64>>,
)> {
    let (v, dim, q) = vectors_and_queries(&vectors, &queries)?;
    let (c, words) = matrix(&codes, "codes")?;
    if words != vectors::words_for(dim) {
        return Err(Error::param(
            "codes",
            format!(
                "codes have {words} words per row, dimension {dim} needs {}",
                vectors::words_for(dim)
            ),
        )
        .into());
    }
    let (i4s, width) = matrix(&int4, "int4")?;
    if width != vectors::int4_bytes(dim) {
        return Err(Error::param(
            "int4",
            format!(
                "4-bit rows have {width} bytes, dimension {dim} needs {}",
                vectors::int4_bytes(dim)
            ),
        )
        .into());
    }
    let part = vectors::SketchPart {
        codes: c,
        vectors: v,
        centre: super::slice(&centre, "centre")?,
        int4: i4s,
        scales: super::slice(&scales, "scales")?,
        dim,
    };
    // A small batch runs on this thread; a big one spreads its queries over rayon's pool.
    let found = enter(py, || vectors::sketch_search(&part, q, k, rerank, refine))?;
    Ok((
        found.positions.into_pyarray(py),
        found.scores.into_pyarray(py),
        found.counts.into_pyarray(py),
    ))
}

/// Exact top `k` rows of `vectors` by dot product per query, over every row or over
/// `positions`: positions int64 `(q * k,)` best first (ties by row) padded with -1, scores
/// float32 padded with NaN, counts int64. One thread per query (no BLAS threads).
#[pyfunction]
#[pyo3(signature = (vectors, queries, k, positions=None))]
#[allow(clippy::type_complexity)]
pub fn exact_search<'py>(
    py: Python<'py>,
    vectors: PyReadonlyArray2<'py, f32>,
    queries: PyReadonlyArray2<'py, f32>,
    k: usize,
    positions: Option<PyReadonlyArray1<'py, u32>>,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f32>>,
    Bound<'py, PyArray1<i64>>,
)> {
    let (v, dim, q) = vectors_and_queries(&vectors, &queries)?;
    let ps = positions
        .as_ref()
        .map(|p| super::slice(p, "positions"))
        .transpose()?;
    let found = enter(py, || vectors::exact_search(v, dim, q, k, ps))?;
    Ok((
        found.positions.into_pyarray(py),
        found.scores.into_pyarray(py),
        found.counts.into_pyarray(py),
    ))
}
