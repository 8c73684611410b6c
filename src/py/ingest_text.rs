//! Ingestion's text kernels (`crate::ingest_text`) as a `#[pyfunction]`: one call per batch
//! of texts, the scan done with the GIL released.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods};
use pyo3::prelude::*;

use crate::ingest_text;
use crate::py::enter;

/// The estimated token count of each text (`ingest_text::count_tokens`).
#[pyfunction]
pub fn count_tokens<'py>(
    py: Python<'py>,
    texts: Vec<String>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let n = enter(py, || Ok(ingest_text::count_tokens_all(&texts)))?;
    Ok(n.into_pyarray(py))
}

/// The sentences of each text and the capitalised phrases of each sentence
/// (`ingest_text::scan`); returns `(text_offsets, sentences, sentence_offsets, phrases)`,
/// spans as `(n, 2)` arrays of code point offsets.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn scan_sentences<'py>(
    py: Python<'py>,
    texts: Vec<String>,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray2<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray2<i64>>,
)> {
    let s = enter(py, || Ok(ingest_text::scan(&texts)))?;
    let pairs = |v: Vec<[i64; 2]>| -> PyResult<Bound<'py, PyArray2<i64>>> {
        let n = v.len();
        let flat: Vec<i64> = v.into_iter().flatten().collect();
        flat.into_pyarray(py).reshape([n, 2])
    };
    Ok((
        s.text_offsets.into_pyarray(py),
        pairs(s.sentences)?,
        s.sentence_offsets.into_pyarray(py),
        pairs(s.phrases)?,
    ))
}

/// The known names found in each case-folded sentence (`ingest_text::KnownIndex`): returns
/// `(offsets, names)`, sentence `s`'s name indices at `names[offsets[s]:offsets[s + 1]]`.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn find_known_names<'py>(
    py: Python<'py>,
    names: Vec<String>,
    sentences: Vec<String>,
) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>)> {
    let (offsets, found) = enter(py, || {
        Ok(ingest_text::KnownIndex::new(&names).find_all(&sentences))
    })?;
    Ok((offsets.into_pyarray(py), found.into_pyarray(py)))
}
