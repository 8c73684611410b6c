//! Rank fusion: reciprocal rank fusion, weighted linear fusion, seed 003's hybrid search merge
//! and additive merge, `dedupe_max` and `top_k`. Pyo3-free, numbers only.
//!
//! Every kernel is batched the same way: flat arrays of ids (and scores) cut into lists by
//! `list_offsets` (`n_lists + 1` entries) and lists grouped into queries by `query_offsets`
//! (`n_queries + 1` entries, in units of lists), or cut straight into queries by `offsets`.
//! Offsets start at 0, never decrease and end at the length they cut. Queries are fused in
//! parallel with rayon once a batch holds more than [`PAR_THRESHOLD`] entries.
//!
//! # Determinism
//! * Output of every query is sorted by score descending, ties by id ascending.
//! * Fused scores do not depend on the order of the input lists, bit for bit. Floating-point
//!   addition is not associative (`(a + b) + c` may differ from `(a + c) + b` in the last bit),
//!   so summing each id's contributions in list order would make its fused score, and so the
//!   ranking of near-ties, depend on the order in which the caller happened to list its
//!   retrievers. Instead every id's contributions are gathered, sorted by value and summed
//!   from `0.0` upwards in that order: the sum is a function of the multiset of contributions
//!   alone. (The hybrid merge adds exactly two terms as its source writes them,
//!   `vw * v + tw * t`: the same in either order.)
//! * Scores `-0.0` and `0.0` compare equal (then tie by id), as they do in Python.

mod additive;
mod common;
mod hybrid;
mod rrf;
mod select;
mod types;
mod weighted;

pub use crate::batch::PAR_THRESHOLD;
pub use additive::{additive_merge, additive_merge_batch};
pub use hybrid::{hybrid_merge_batch, TextScore};
pub use rrf::{rrf, rrf_batch};
pub use select::{dedupe_max_batch, top_k_batch};
pub use types::{
    Fused, Merged, DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_MAX_NEW, DEFAULT_RRF_K, SOURCE_BASE,
    SOURCE_BOTH, SOURCE_GRAPH,
};
pub use weighted::{weighted, weighted_batch};

#[cfg(test)]
mod tests;
