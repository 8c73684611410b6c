//! Seed 000's supporting passages (`scoring::supporting_chunks`) as a `#[pyfunction]`.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use super::slice;
use crate::py::enter;
use crate::scoring;

/// The chunks supporting each query's ranked facts, one call per batch; returns
/// `(chunks, scores, counts, offsets)` (offsets `uintp`, one per query plus one).
#[pyfunction]
#[pyo3(signature = (
    offsets, chunks, counts, fact_subject, fact_object, facts, scores, fact_offsets, k,
))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn supporting_chunks<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<'py, i64>,
    chunks: PyReadonlyArray1<'py, i64>,
    counts: PyReadonlyArray1<'py, i64>,
    fact_subject: PyReadonlyArray1<'py, i64>,
    fact_object: PyReadonlyArray1<'py, i64>,
    facts: PyReadonlyArray1<'py, i64>,
    scores: PyReadonlyArray1<'py, f64>,
    fact_offsets: PyReadonlyArray1<'py, usize>,
    k: usize,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<usize>>,
)> {
    let csr = scoring::MentionCsr {
        offsets: slice(&offsets, "offsets")?,
        chunks: slice(&chunks, "chunks")?,
        counts: slice(&counts, "counts")?,
    };
    let fact_subject = slice(&fact_subject, "fact_subject")?;
    let fact_object = slice(&fact_object, "fact_object")?;
    let facts = slice(&facts, "facts")?;
    let scores = slice(&scores, "scores")?;
    let fact_offsets = slice(&fact_offsets, "fact_offsets")?;
    let out = enter(py, || {
        scoring::supporting_chunks(
            csr,
            fact_subject,
            fact_object,
            facts,
            scores,
            fact_offsets,
            k,
        )
    })?;
    Ok((
        out.chunks.into_pyarray(py),
        out.scores.into_pyarray(py),
        out.counts.into_pyarray(py),
        out.offsets.into_pyarray(py),
    ))
}
