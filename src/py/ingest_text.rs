//! Ingestion's text kernels (`crate::ingest_text`) as a `#[pyfunction]`: one call per batch
//! of texts, the scan done with the GIL released.

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;

use crate::ingest_text;
use crate::py::{enter, slice};

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

/// One batch's documents, chunks, sentences and names as id arrays (`LinkInput`'s fields,
/// in order).
type LinkArrays<'py> = (
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
);

fn link_input<'a>(
    a: &'a LinkArrays<'_>,
    n_surfaces: usize,
    first_chunk: i64,
) -> PyResult<ingest_text::LinkInput<'a>> {
    Ok(ingest_text::LinkInput {
        doc_tenant: slice(&a.0, "doc_tenant")?,
        doc_title_key: slice(&a.1, "doc_title_key")?,
        doc_title_surface: slice(&a.2, "doc_title_surface")?,
        doc_chunks: slice(&a.3, "doc_chunks")?,
        chunk_sentences: slice(&a.4, "chunk_sentences")?,
        sentence_names: slice(&a.5, "sentence_names")?,
        name_key: slice(&a.6, "name_key")?,
        name_surface: slice(&a.7, "name_surface")?,
        sentence_known: slice(&a.8, "sentence_known")?,
        known_key: slice(&a.9, "known_key")?,
        key_last_word: slice(&a.10, "key_last_word")?,
        key_surface: slice(&a.11, "key_surface")?,
        n_surfaces,
        first_chunk,
    })
}

fn rows<'py, const N: usize>(
    py: Python<'py>,
    v: Vec<[i64; N]>,
) -> PyResult<Bound<'py, PyArray2<i64>>> {
    let n = v.len();
    let flat: Vec<i64> = v.into_iter().flatten().collect();
    flat.into_pyarray(py).reshape([n, N])
}

/// The distinct `(tenant, key)` pairs of a batch in the order in which their entities are
/// first asked for (`ingest_text::call_order`), as an `(n, 2)` array.
#[pyfunction]
pub fn link_call_order<'py>(
    py: Python<'py>,
    arrays: LinkArrays<'py>,
    n_surfaces: usize,
) -> PyResult<Bound<'py, PyArray2<i64>>> {
    let inp = link_input(&arrays, n_surfaces, 0)?;
    let pairs = enter(py, || ingest_text::call_order(&inp))?;
    rows(py, pairs)
}

/// Entity ids and counts of a batch (`ingest_text::link`): returns `(new_entities,
/// registered, surfaces, title_entity, mentions, cooccurs, title_links)`.
#[pyfunction]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn link_names<'py>(
    py: Python<'py>,
    arrays: LinkArrays<'py>,
    n_surfaces: usize,
    first_chunk: i64,
    pair_entity: PyReadonlyArray1<'py, i64>,
    pair_canonical: PyReadonlyArray1<'py, i64>,
    pair_canonical_entity: PyReadonlyArray1<'py, i64>,
    first_entity: i64,
    cooccurrence: bool,
    title_edges: bool,
    max_sentence_entities: usize,
) -> PyResult<(
    Bound<'py, PyArray2<i64>>,
    Bound<'py, PyArray2<i64>>,
    Bound<'py, PyArray2<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray2<i64>>,
    Bound<'py, PyArray2<i64>>,
    Bound<'py, PyArray2<i64>>,
)> {
    let inp = link_input(&arrays, n_surfaces, first_chunk)?;
    let state = ingest_text::PairState {
        entity: slice(&pair_entity, "pair_entity")?,
        canonical: slice(&pair_canonical, "pair_canonical")?,
        canonical_entity: slice(&pair_canonical_entity, "pair_canonical_entity")?,
    };
    let opts = ingest_text::LinkOptions {
        cooccurrence,
        title_edges,
        max_sentence_entities,
    };
    let o = enter(py, || ingest_text::link(&inp, &state, first_entity, opts))?;
    Ok((
        rows(py, o.new_entities)?,
        rows(py, o.registered)?,
        rows(py, o.surfaces)?,
        o.title_entity.into_pyarray(py),
        rows(py, o.mentions)?,
        rows(py, o.cooccurs)?,
        rows(py, o.title_links)?,
    ))
}

/// The sentences of each text and the interned names of each sentence
/// (`ingest_text::scan_names`): returns `(text_offsets, sentences, sentence_offsets,
/// name_key, name_surface, keys, surfaces)`, sentence spans as an `(n, 2)` array of code
/// point offsets.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn scan_names<'py>(
    py: Python<'py>,
    texts: Vec<String>,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray2<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Vec<String>,
    Vec<String>,
)> {
    let s = enter(py, || Ok(ingest_text::scan_names(&texts)))?;
    Ok((
        s.text_offsets.into_pyarray(py),
        rows(py, s.sentences)?,
        s.sentence_offsets.into_pyarray(py),
        s.name_key.into_pyarray(py),
        s.name_surface.into_pyarray(py),
        s.keys,
        s.surfaces,
    ))
}

/// The known names found in each sentence, given as `(n, 2)` code point spans of `texts`
/// (sentence `s` is `spans[s]` of `texts[sentence_text[s]]`) and case-folded in the kernel
/// (`ingest_text::KnownIndex::find_in`): returns `(offsets, names)` as `find_known_names`.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn find_known_names_in<'py>(
    py: Python<'py>,
    names: Vec<String>,
    texts: Vec<String>,
    sentence_text: PyReadonlyArray1<'py, i64>,
    spans: PyReadonlyArray2<'py, i64>,
) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>)> {
    let sentence_text = slice(&sentence_text, "sentence_text")?;
    if spans.shape()[1] != 2 {
        return Err(crate::Error::param("spans", "must have shape (n, 2)").into());
    }
    let flat = spans
        .as_slice()
        .map_err(|_| crate::Error::param("spans", "array must be C-contiguous"))?;
    let pairs: Vec<[i64; 2]> = flat.chunks_exact(2).map(|p| [p[0], p[1]]).collect();
    let (offsets, found) = enter(py, || {
        ingest_text::KnownIndex::new(&names).find_in(&texts, sentence_text, &pairs)
    })?;
    Ok((offsets.into_pyarray(py), found.into_pyarray(py)))
}
