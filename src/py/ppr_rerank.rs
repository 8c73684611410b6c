//! The `ppr` recipe's re-ranking from its top passage (`scoring::rerank_from_top`).

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use super::slice;
use crate::scoring::{self, NamedChunks, TermPostings, TopRerank};
use crate::Error;

type F64Array<'py> = Bound<'py, PyArray1<f64>>;
type I64Array<'py> = Bound<'py, PyArray1<i64>>;

/// One query's candidates re-ranked from the top one (bridge, cover, terms); returns
/// (positions in the input, final scores, bridge gains, cover gains, terms gains), best
/// first. The terms step runs when ``term_rows`` is given (with ``terms``,
/// ``term_offsets`` and ``postings``: one tenant's BM25 postings).
#[pyfunction]
#[pyo3(signature = (
    rows, scores, chunk_offsets, chunk_entities, bridge_weights, *, bridge,
    named_chunks, named_scores, named_offsets, named_entities, cover, top_cover,
    term_rows = None, terms = None, term_offsets = None, postings = None,
    query_terms = Vec::new(), n_words = 0, term_weight = 0.0, k,
))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn ppr_rerank_from_top<'py>(
    py: Python<'py>,
    rows: Vec<i64>,
    scores: Vec<f64>,
    chunk_offsets: PyReadonlyArray1<'py, i64>,
    chunk_entities: PyReadonlyArray1<'py, i64>,
    bridge_weights: PyReadonlyArray1<'py, f64>,
    bridge: f64,
    named_chunks: Vec<i64>,
    named_scores: Vec<f64>,
    named_offsets: Vec<i64>,
    named_entities: Vec<i64>,
    cover: f64,
    top_cover: f64,
    term_rows: Option<PyReadonlyArray1<'py, i64>>,
    terms: Option<PyReadonlyArray1<'py, i64>>,
    term_offsets: Option<PyReadonlyArray1<'py, i64>>,
    postings: Option<PyReadonlyArray1<'py, u32>>,
    query_terms: Vec<i64>,
    n_words: usize,
    term_weight: f64,
    k: usize,
) -> PyResult<(
    I64Array<'py>,
    F64Array<'py>,
    F64Array<'py>,
    F64Array<'py>,
    F64Array<'py>,
)> {
    let term_step = match (&term_rows, &terms, &term_offsets, &postings) {
        (None, None, None, None) => None,
        (Some(r), Some(t), Some(o), Some(p)) => {
            if n_words == 0 {
                return Err(Error::param("n_words", "must be >= 1 with the terms step").into());
            }
            Some(TermPostings {
                rows: slice(r, "term_rows")?,
                terms: slice(t, "terms")?,
                offsets: slice(o, "term_offsets")?,
                postings: slice(p, "postings")?,
                query_terms: &query_terms,
                n_words,
                weight: term_weight,
            })
        }
        _ => {
            return Err(Error::param(
                "term_rows",
                "give term_rows, terms, term_offsets and postings together, or none",
            )
            .into())
        }
    };
    let params = TopRerank {
        chunk_offsets: slice(&chunk_offsets, "chunk_offsets")?,
        chunk_entities: slice(&chunk_entities, "chunk_entities")?,
        bridge_weights: slice(&bridge_weights, "bridge_weights")?,
        bridge,
        named: NamedChunks {
            chunks: &named_chunks,
            scores: &named_scores,
            offsets: &named_offsets,
            entities: &named_entities,
        },
        cover,
        top_cover,
        terms: term_step,
        k,
    };
    // A dozen candidates: releasing the GIL would cost more than the work.
    let r = scoring::rerank_from_top(&rows, &scores, &params)?;
    let order: Vec<i64> = r.order.iter().map(|&i| i as i64).collect();
    Ok((
        order.into_pyarray(py),
        r.scores.into_pyarray(py),
        r.bridge.into_pyarray(py),
        r.cover.into_pyarray(py),
        r.terms.into_pyarray(py),
    ))
}
