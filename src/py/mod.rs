//! Python bindings: argument extraction, GIL release and error mapping (`errors`), numpy
//! conversion.
//! Nothing here computes; every kernel lives in the pyo3-free core.

use pyo3::prelude::*;

use crate::Error;

mod embed;
mod errors;
mod graph;
mod ingest_text;
mod kernels;
mod ppr_rerank;
mod support;
mod text;
mod vectors;

pub(crate) use errors::enter;

/// Borrow a contiguous slice out of a read-only numpy array, with a message naming the
/// argument instead of numpy's generic "not contiguous".
pub(crate) fn slice<'a, T: numpy::Element>(
    arr: &'a numpy::PyReadonlyArray1<'_, T>,
    name: &'static str,
) -> PyResult<&'a [T]> {
    arr.as_slice().map_err(|_| {
        Error::param(
            name,
            "array must be C-contiguous (use numpy.ascontiguousarray)",
        )
        .into()
    })
}

#[pymodule]
mod _core {
    #[pymodule_export]
    use super::graph::CoreGraph;
    #[pymodule_export]
    use super::kernels::{
        additive_merge, best_mentioned_chunks, composite_score, cosine_graph_top, dedupe_max,
        entity_chunk_scores, graph_proximity_chunks, graph_proximity_score, hybrid_merge,
        passage_seed_mass, rerank_memories, rrf_fuse, score_fact_arrays, top_k, weighted_fuse,
    };

    #[pymodule_export]
    use super::ppr_rerank::ppr_rerank_from_top;

    #[pymodule_export]
    use super::support::supporting_chunks;

    #[pymodule_export]
    use super::embed::CoreE5;

    #[pymodule_export]
    use super::text::bm25_top_k;

    #[pymodule_export]
    use super::ingest_text::{
        count_tokens, find_known_names, find_known_names_in, link_call_order, link_names,
        scan_names, scan_sentences,
    };

    #[pymodule_export]
    use super::vectors::{exact_search, sketch_codes, sketch_int4, sketch_search};

    #[pymodule_export]
    use super::graph::{CoreActivation, CoreRecall, CoreRecallPlan, CoreSpreadPlan};

    #[pymodule_init]
    fn init(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
        use pyo3::types::PyModuleMethods;
        m.add("__version__", env!("CARGO_PKG_VERSION"))
    }
}
