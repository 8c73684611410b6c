//! Stateless kernels (`crate::scoring`, `crate::fusion`) as `#[pyfunction]`s.
//!
//! Each one borrows its numpy arguments as contiguous slices (exact dtypes, no copies), runs
//! the core with the GIL released (`enter`) and moves the result vectors into new numpy
//! arrays. Dtypes: ids `int64`, scores `float64`, fact confidence `float32`, source/status
//! codes `uint8`, hops and counts `uint32`, times `int64` seconds (`NULL_TIME` =
//! `numpy.iinfo(numpy.int64).min` for null), offsets `uintp` (`usize`). The friendly,
//! converting wrappers are `graphrecall.scoring` and `graphrecall.fusion`.

use numpy::{IntoPyArray, PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;

use super::slice;
use crate::fusion;
use crate::py::enter;
use crate::scoring::{self, FactScoreProfile, GraphProximityProfile, RerankProfile};

type F64Array<'py> = Bound<'py, PyArray1<f64>>;
type I64Array<'py> = Bound<'py, PyArray1<i64>>;
type UsizeArray<'py> = Bound<'py, PyArray1<usize>>;

/// Borrow an optional array as an optional slice.
fn opt_slice<'a, T: numpy::Element>(
    arr: &'a Option<PyReadonlyArray1<'_, T>>,
    name: &'static str,
) -> PyResult<Option<&'a [T]>> {
    arr.as_ref().map(|a| slice(a, name)).transpose()
}

/// Seed 000's `scoreFact` over columns of facts; returns one float64 score per fact.
#[pyfunction]
#[pyo3(signature = (
    confidence, source, status, last_accessed, access_count, now, *,
    source_weights = vec![2.0, 1.5, 1.2, 1.0],
    default_source_weight = 1.0,
    status_weights = vec![1.0, 1.2, 1.0, 1.0],
    default_status_weight = 1.0,
    decay_base = 0.95,
    grace_weeks = 1.0,
    usage_log_factor = 0.5,
))]
#[allow(clippy::too_many_arguments)]
pub fn score_fact_arrays<'py>(
    py: Python<'py>,
    confidence: PyReadonlyArray1<'py, f32>,
    source: PyReadonlyArray1<'py, u8>,
    status: PyReadonlyArray1<'py, u8>,
    last_accessed: Option<PyReadonlyArray1<'py, i64>>,
    access_count: PyReadonlyArray1<'py, u32>,
    now: i64,
    source_weights: Vec<f64>,
    default_source_weight: f64,
    status_weights: Vec<f64>,
    default_status_weight: f64,
    decay_base: f64,
    grace_weeks: f64,
    usage_log_factor: f64,
) -> PyResult<F64Array<'py>> {
    let profile = FactScoreProfile {
        source_weights,
        default_source_weight,
        status_weights,
        default_status_weight,
        decay_base,
        grace_weeks,
        usage_log_factor,
    };
    let confidence = slice(&confidence, "confidence")?;
    let source = slice(&source, "source")?;
    let status = slice(&status, "status")?;
    let last_accessed = opt_slice(&last_accessed, "last_accessed")?;
    let access_count = slice(&access_count, "access_count")?;
    let scores = enter(py, || {
        scoring::score_facts(
            confidence,
            source,
            status,
            last_accessed,
            access_count,
            now,
            &profile,
        )
    })?;
    Ok(scores.into_pyarray(py))
}

/// Seed 004's `match * (1 / (1 + hop)) * confidence` over columns.
#[pyfunction]
pub fn composite_score<'py>(
    py: Python<'py>,
    match_score: PyReadonlyArray1<'py, f64>,
    hop: PyReadonlyArray1<'py, u32>,
    confidence: PyReadonlyArray1<'py, f64>,
) -> PyResult<F64Array<'py>> {
    let match_score = slice(&match_score, "match_score")?;
    let hop = slice(&hop, "hop")?;
    let confidence = slice(&confidence, "confidence")?;
    let scores = enter(py, || {
        scoring::composite_scores(match_score, hop, confidence)
    })?;
    Ok(scores.into_pyarray(py))
}

/// Seed 003's `computeGraphScore` over columns of graph-sourced chunks.
#[pyfunction]
#[pyo3(signature = (
    weight, hop, mention_count, *,
    weight_scale = 10.0, hop_base = 2.0, mention_floor = 0.7, mention_log_divisor = 5.0,
))]
#[allow(clippy::too_many_arguments)]
pub fn graph_proximity_score<'py>(
    py: Python<'py>,
    weight: PyReadonlyArray1<'py, f64>,
    hop: PyReadonlyArray1<'py, u32>,
    mention_count: PyReadonlyArray1<'py, u32>,
    weight_scale: f64,
    hop_base: f64,
    mention_floor: f64,
    mention_log_divisor: f64,
) -> PyResult<F64Array<'py>> {
    let profile = GraphProximityProfile {
        weight_scale,
        hop_base,
        mention_floor,
        mention_log_divisor,
    };
    let weight = slice(&weight, "weight")?;
    let hop = slice(&hop, "hop")?;
    let mention_count = slice(&mention_count, "mention_count")?;
    let scores = enter(py, || {
        scoring::graph_proximity_scores(weight, hop, mention_count, &profile)
    })?;
    Ok(scores.into_pyarray(py))
}

/// Seed 002's `rerank_memories` over a batch of queries; returns `(scores, order)`: scores in
/// input order and, per query, the global row indices sorted by score (stable).
#[pyfunction]
#[pyo3(signature = (
    query_offsets, created_at, confidence, access_score, now, *,
    w_similarity = 0.5, w_recency = 0.3, w_confidence = 0.15, w_access = 0.05,
    recency_base = 0.95, day_seconds = 86_400,
))]
#[allow(clippy::too_many_arguments)]
pub fn rerank_memories<'py>(
    py: Python<'py>,
    query_offsets: PyReadonlyArray1<'py, usize>,
    created_at: Option<PyReadonlyArray1<'py, i64>>,
    confidence: Option<PyReadonlyArray1<'py, f64>>,
    access_score: Option<PyReadonlyArray1<'py, f64>>,
    now: i64,
    w_similarity: f64,
    w_recency: f64,
    w_confidence: f64,
    w_access: f64,
    recency_base: f64,
    day_seconds: i64,
) -> PyResult<(F64Array<'py>, UsizeArray<'py>)> {
    let profile = RerankProfile {
        w_similarity,
        w_recency,
        w_confidence,
        w_access,
        recency_base,
        day_seconds,
    };
    let query_offsets = slice(&query_offsets, "query_offsets")?;
    let created_at = opt_slice(&created_at, "created_at")?;
    let confidence = opt_slice(&confidence, "confidence")?;
    let access_score = opt_slice(&access_score, "access_score")?;
    let reranked = enter(py, || {
        scoring::rerank_batch(
            query_offsets,
            created_at,
            confidence,
            access_score,
            now,
            &profile,
        )
    })?;
    Ok((
        reranked.scores.into_pyarray(py),
        reranked.order.into_pyarray(py),
    ))
}

fn fused_arrays(
    py: Python<'_>,
    fused: fusion::Fused,
) -> (I64Array<'_>, F64Array<'_>, UsizeArray<'_>) {
    (
        fused.ids.into_pyarray(py),
        fused.scores.into_pyarray(py),
        fused.offsets.into_pyarray(py),
    )
}

/// Reciprocal rank fusion of a batch; returns `(ids, scores, offsets)`.
#[pyfunction]
#[pyo3(signature = (ids, list_offsets, query_offsets, weights, *, k = 60.0, top_k = None))]
pub fn rrf_fuse<'py>(
    py: Python<'py>,
    ids: PyReadonlyArray1<'py, i64>,
    list_offsets: PyReadonlyArray1<'py, usize>,
    query_offsets: PyReadonlyArray1<'py, usize>,
    weights: PyReadonlyArray1<'py, f64>,
    k: f64,
    top_k: Option<usize>,
) -> PyResult<(I64Array<'py>, F64Array<'py>, UsizeArray<'py>)> {
    let ids = slice(&ids, "ids")?;
    let list_offsets = slice(&list_offsets, "list_offsets")?;
    let query_offsets = slice(&query_offsets, "query_offsets")?;
    let weights = slice(&weights, "weights")?;
    let fused = enter(py, || {
        fusion::rrf_batch(ids, list_offsets, query_offsets, weights, k, top_k)
    })?;
    Ok(fused_arrays(py, fused))
}

/// Weighted linear fusion of a batch; returns `(ids, scores, offsets)`.
#[pyfunction]
#[pyo3(signature = (
    ids, scores, list_offsets, query_offsets, weights, *, normalize = false, top_k = None,
))]
#[allow(clippy::too_many_arguments)]
pub fn weighted_fuse<'py>(
    py: Python<'py>,
    ids: PyReadonlyArray1<'py, i64>,
    scores: PyReadonlyArray1<'py, f64>,
    list_offsets: PyReadonlyArray1<'py, usize>,
    query_offsets: PyReadonlyArray1<'py, usize>,
    weights: PyReadonlyArray1<'py, f64>,
    normalize: bool,
    top_k: Option<usize>,
) -> PyResult<(I64Array<'py>, F64Array<'py>, UsizeArray<'py>)> {
    let ids = slice(&ids, "ids")?;
    let scores = slice(&scores, "scores")?;
    let list_offsets = slice(&list_offsets, "list_offsets")?;
    let query_offsets = slice(&query_offsets, "query_offsets")?;
    let weights = slice(&weights, "weights")?;
    let fused = enter(py, || {
        fusion::weighted_batch(
            ids,
            scores,
            list_offsets,
            query_offsets,
            weights,
            normalize,
            top_k,
        )
    })?;
    Ok(fused_arrays(py, fused))
}

/// Seed 003's additive merge of a batch; returns `(ids, scores, sources, offsets)` with
/// sources 0 = base only, 1 = graph only, 2 = both.
#[pyfunction]
#[pyo3(signature = (
    base_ids, base_scores, base_offsets, graph_ids, graph_scores, graph_offsets, *,
    alpha = 0.7, beta = 0.3, max_new = 4,
))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn additive_merge<'py>(
    py: Python<'py>,
    base_ids: PyReadonlyArray1<'py, i64>,
    base_scores: PyReadonlyArray1<'py, f64>,
    base_offsets: PyReadonlyArray1<'py, usize>,
    graph_ids: PyReadonlyArray1<'py, i64>,
    graph_scores: PyReadonlyArray1<'py, f64>,
    graph_offsets: PyReadonlyArray1<'py, usize>,
    alpha: f64,
    beta: f64,
    max_new: usize,
) -> PyResult<(
    I64Array<'py>,
    F64Array<'py>,
    Bound<'py, PyArray1<u8>>,
    UsizeArray<'py>,
)> {
    let base_ids = slice(&base_ids, "base_ids")?;
    let base_scores = slice(&base_scores, "base_scores")?;
    let base_offsets = slice(&base_offsets, "base_offsets")?;
    let graph_ids = slice(&graph_ids, "graph_ids")?;
    let graph_scores = slice(&graph_scores, "graph_scores")?;
    let graph_offsets = slice(&graph_offsets, "graph_offsets")?;
    let merged = enter(py, || {
        fusion::additive_merge_batch(
            base_ids,
            base_scores,
            base_offsets,
            graph_ids,
            graph_scores,
            graph_offsets,
            alpha,
            beta,
            max_new,
        )
    })?;
    Ok((
        merged.ids.into_pyarray(py),
        merged.scores.into_pyarray(py),
        merged.sources.into_pyarray(py),
        merged.offsets.into_pyarray(py),
    ))
}

/// Seed 003's hybrid search merge of a batch (`fusion::hybrid_merge_batch`); returns
/// `(ids, scores, offsets)`.
#[pyfunction]
#[pyo3(signature = (
    vector_ids, vector_scores, vector_offsets, text_ids, bm25, text_offsets, *,
    vector_weight = 0.7, text_weight = 0.3, text_score = "max", k = 6,
))]
#[allow(clippy::too_many_arguments)]
pub fn hybrid_merge<'py>(
    py: Python<'py>,
    vector_ids: PyReadonlyArray1<'py, i64>,
    vector_scores: PyReadonlyArray1<'py, f64>,
    vector_offsets: PyReadonlyArray1<'py, usize>,
    text_ids: PyReadonlyArray1<'py, i64>,
    bm25: PyReadonlyArray1<'py, f64>,
    text_offsets: PyReadonlyArray1<'py, usize>,
    vector_weight: f64,
    text_weight: f64,
    text_score: &str,
    k: usize,
) -> PyResult<(I64Array<'py>, F64Array<'py>, UsizeArray<'py>)> {
    let text_score = match text_score {
        "max" => fusion::TextScore::Max,
        "openclaw" => fusion::TextScore::OpenClaw,
        other => {
            return Err(crate::Error::param(
                "text_score",
                format!("{other:?} is not 'max' or 'openclaw'"),
            )
            .into())
        }
    };
    let vector_ids = slice(&vector_ids, "vector_ids")?;
    let vector_scores = slice(&vector_scores, "vector_scores")?;
    let vector_offsets = slice(&vector_offsets, "vector_offsets")?;
    let text_ids = slice(&text_ids, "text_ids")?;
    let bm25 = slice(&bm25, "bm25")?;
    let text_offsets = slice(&text_offsets, "text_offsets")?;
    let fused = enter(py, || {
        fusion::hybrid_merge_batch(
            vector_ids,
            vector_scores,
            vector_offsets,
            text_ids,
            bm25,
            text_offsets,
            vector_weight,
            text_weight,
            text_score,
            k,
        )
    })?;
    Ok(fused_arrays(py, fused))
}

/// Per query, distinct ids with their largest score; returns `(ids, scores, offsets)`.
#[pyfunction]
pub fn dedupe_max<'py>(
    py: Python<'py>,
    ids: PyReadonlyArray1<'py, i64>,
    scores: PyReadonlyArray1<'py, f64>,
    offsets: PyReadonlyArray1<'py, usize>,
) -> PyResult<(I64Array<'py>, F64Array<'py>, UsizeArray<'py>)> {
    let ids = slice(&ids, "ids")?;
    let scores = slice(&scores, "scores")?;
    let offsets = slice(&offsets, "offsets")?;
    let fused = enter(py, || fusion::dedupe_max_batch(ids, scores, offsets))?;
    Ok(fused_arrays(py, fused))
}

/// Per query, the best `k` entries; returns `(ids, scores, offsets)`.
#[pyfunction]
pub fn top_k<'py>(
    py: Python<'py>,
    ids: PyReadonlyArray1<'py, i64>,
    scores: PyReadonlyArray1<'py, f64>,
    offsets: PyReadonlyArray1<'py, usize>,
    k: usize,
) -> PyResult<(I64Array<'py>, F64Array<'py>, UsizeArray<'py>)> {
    let ids = slice(&ids, "ids")?;
    let scores = slice(&scores, "scores")?;
    let offsets = slice(&offsets, "offsets")?;
    let fused = enter(py, || fusion::top_k_batch(ids, scores, offsets, k))?;
    Ok(fused_arrays(py, fused))
}

/// The entity -> chunk mention CSR borrowed from its three arrays.
fn mention_csr<'a>(
    offsets: &'a PyReadonlyArray1<'_, i64>,
    chunks: &'a PyReadonlyArray1<'_, i64>,
    counts: &'a PyReadonlyArray1<'_, i64>,
) -> PyResult<scoring::MentionCsr<'a>> {
    Ok(scoring::MentionCsr {
        offsets: slice(offsets, "offsets")?,
        chunks: slice(chunks, "chunks")?,
        counts: slice(counts, "counts")?,
    })
}

/// Entity scores spread to chunks through their primary chunk, else their mentions by count
/// (`scoring::entity_chunk_scores`); returns (chunks ascending, scores, how many are > 0).
#[pyfunction]
pub fn entity_chunk_scores<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<'py, i64>,
    chunks: PyReadonlyArray1<'py, i64>,
    counts: PyReadonlyArray1<'py, i64>,
    primary: Option<PyReadonlyArray1<'py, i64>>,
    entities: PyReadonlyArray1<'py, i64>,
    scores: PyReadonlyArray1<'py, f64>,
) -> PyResult<(I64Array<'py>, F64Array<'py>, usize)> {
    let csr = mention_csr(&offsets, &chunks, &counts)?;
    let primary = opt_slice(&primary, "primary")?;
    let entities = slice(&entities, "entities")?;
    let scores = slice(&scores, "scores")?;
    let r = enter(py, || {
        scoring::entity_chunk_scores(csr, primary, entities, scores)
    })?;
    Ok((
        r.chunks.into_pyarray(py),
        r.scores.into_pyarray(py),
        r.n_positive,
    ))
}

/// The passage seeds of one query (`scoring::passage_seed_mass`); returns (entities
/// ascending, mass).
#[pyfunction]
pub fn passage_seed_mass<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<'py, i64>,
    entities: PyReadonlyArray1<'py, i64>,
    counts: PyReadonlyArray1<'py, i64>,
    specificity: Option<PyReadonlyArray1<'py, f64>>,
    chunks: PyReadonlyArray1<'py, i64>,
    weights: PyReadonlyArray1<'py, f64>,
) -> PyResult<(I64Array<'py>, F64Array<'py>)> {
    let offsets = slice(&offsets, "offsets")?;
    let entities = slice(&entities, "entities")?;
    let counts = slice(&counts, "counts")?;
    let specificity = opt_slice(&specificity, "specificity")?;
    let chunks = slice(&chunks, "chunks")?;
    let weights = slice(&weights, "weights")?;
    // A few chunks of a few mentions: releasing the GIL would cost more than the work.
    let (e, m) =
        scoring::passage_seed_mass(offsets, entities, counts, specificity, chunks, weights)?;
    Ok((e.into_pyarray(py), m.into_pyarray(py)))
}

/// Cosines as numpy gives them (float32 from a vector index or the chunk matrix, float64
/// otherwise), widened to `f64` exactly, as `tolist()` does. A dtype check, not an enum
/// extraction: a failed extraction builds an exception, which is costly on this hot path.
fn widen_cosines(obj: &Bound<'_, PyAny>, name: &'static str) -> PyResult<Vec<f64>> {
    if let Ok(a) = obj.cast::<PyArray1<f32>>() {
        let a = a.try_readonly()?;
        return Ok(slice(&a, name)?.iter().map(|&v| f64::from(v)).collect());
    }
    if let Ok(a) = obj.cast::<PyArray1<f64>>() {
        let a = a.try_readonly()?;
        return Ok(slice(&a, name)?.to_vec());
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "{name} must be a 1-d float32 or float64 numpy array"
    )))
}

/// One query's cosine + normalised graph fusion (`scoring::cosine_graph_top`); returns
/// (chunks, scores, cosines, graph scores, max graph score), best first.
#[pyfunction]
#[pyo3(signature = (
    chunks, cosines, more_chunks, more_cosines, reached, reached_scores, *, graph_weight, k,
))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn cosine_graph_top<'py>(
    py: Python<'py>,
    chunks: PyReadonlyArray1<'py, i64>,
    cosines: &Bound<'py, PyAny>,
    more_chunks: PyReadonlyArray1<'py, i64>,
    more_cosines: &Bound<'py, PyAny>,
    reached: PyReadonlyArray1<'py, i64>,
    reached_scores: PyReadonlyArray1<'py, f64>,
    graph_weight: f64,
    k: usize,
) -> PyResult<(
    I64Array<'py>,
    F64Array<'py>,
    F64Array<'py>,
    F64Array<'py>,
    f64,
)> {
    let chunks = slice(&chunks, "chunks")?;
    let cosines = widen_cosines(cosines, "cosines")?;
    let more_chunks = slice(&more_chunks, "more_chunks")?;
    let more_cosines = widen_cosines(more_cosines, "more_cosines")?;
    let reached = slice(&reached, "reached")?;
    let reached_scores = slice(&reached_scores, "reached_scores")?;
    // A few dozen candidates: releasing the GIL would cost more than the work.
    let top = scoring::cosine_graph_top(
        chunks,
        &cosines,
        more_chunks,
        &more_cosines,
        reached,
        reached_scores,
        graph_weight,
        k,
    )?;
    Ok((
        top.chunks.into_pyarray(py),
        top.scores.into_pyarray(py),
        top.cosines.into_pyarray(py),
        top.graph.into_pyarray(py),
        top.graph_max,
    ))
}

/// Chunks ranked by the best score of the entities they mention
/// (`scoring::best_mentioned_chunks`); returns (chunks, best scores).
#[pyfunction]
pub fn best_mentioned_chunks<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<'py, i64>,
    chunks: PyReadonlyArray1<'py, i64>,
    counts: PyReadonlyArray1<'py, i64>,
    entities: PyReadonlyArray1<'py, i64>,
    scores: PyReadonlyArray1<'py, f64>,
) -> PyResult<(I64Array<'py>, F64Array<'py>)> {
    let csr = mention_csr(&offsets, &chunks, &counts)?;
    let entities = slice(&entities, "entities")?;
    let scores = slice(&scores, "scores")?;
    let (c, s) = enter(py, || scoring::best_mentioned_chunks(csr, entities, scores))?;
    Ok((c.into_pyarray(py), s.into_pyarray(py)))
}

/// Seed 003's graph-sourced chunks: each chunk mentioning a related entity scored by
/// `computeGraphScore`, keeping its best (`scoring::graph_proximity_chunks`); returns
/// (chunks in first-scored order, best scores, the entity that gave each).
#[pyfunction]
#[pyo3(signature = (
    offsets, chunks, counts, entities, weights, hops, *,
    weight_scale = 10.0, hop_base = 2.0, mention_floor = 0.7, mention_log_divisor = 5.0,
))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn graph_proximity_chunks<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<'py, i64>,
    chunks: PyReadonlyArray1<'py, i64>,
    counts: PyReadonlyArray1<'py, i64>,
    entities: PyReadonlyArray1<'py, i64>,
    weights: PyReadonlyArray1<'py, f64>,
    hops: PyReadonlyArray1<'py, u32>,
    weight_scale: f64,
    hop_base: f64,
    mention_floor: f64,
    mention_log_divisor: f64,
) -> PyResult<(I64Array<'py>, F64Array<'py>, I64Array<'py>)> {
    let profile = GraphProximityProfile {
        weight_scale,
        hop_base,
        mention_floor,
        mention_log_divisor,
    };
    let csr = mention_csr(&offsets, &chunks, &counts)?;
    let entities = slice(&entities, "entities")?;
    let weights = slice(&weights, "weights")?;
    let hops = slice(&hops, "hops")?;
    let (c, s, e) = enter(py, || {
        scoring::graph_proximity_chunks(csr, entities, weights, hops, &profile)
    })?;
    Ok((c.into_pyarray(py), s.into_pyarray(py), e.into_pyarray(py)))
}
