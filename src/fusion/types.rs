//! What the fusion kernels return, and the defaults of seed 003's merge.

/// Default RRF constant `k` (Cormack, Clarke and Büttcher, 2009).
pub const DEFAULT_RRF_K: f64 = 60.0;
/// Seed 003: weight of the hybrid (base) score in the additive merge.
pub const DEFAULT_ALPHA: f64 = 0.7;
/// Seed 003: weight of the graph proximity score in the additive merge.
pub const DEFAULT_BETA: f64 = 0.3;
/// Seed 003: at most this many graph-only chunks are added to the hybrid results.
pub const DEFAULT_MAX_NEW: usize = 4;

/// [`Merged::sources`] code: the id came from the base (hybrid) list only.
pub const SOURCE_BASE: u8 = 0;
/// [`Merged::sources`] code: the id came from the graph list only.
pub const SOURCE_GRAPH: u8 = 1;
/// [`Merged::sources`] code: the id is in both lists.
pub const SOURCE_BOTH: u8 = 2;

/// Fused results of a batch: query `q` owns `ids[offsets[q]..offsets[q + 1]]` and the same
/// range of `scores`, sorted by score descending, ties by id ascending.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Fused {
    pub ids: Vec<i64>,
    pub scores: Vec<f64>,
    /// `n_queries + 1` entries.
    pub offsets: Vec<usize>,
}

impl Fused {
    /// Number of queries in the batch.
    pub fn n_queries(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Ids and scores of query `q`, or `None` when there is no such query.
    pub fn query(&self, q: usize) -> Option<(&[i64], &[f64])> {
        let range = self.offsets.get(q).copied()?..self.offsets.get(q + 1).copied()?;
        Some((self.ids.get(range.clone())?, self.scores.get(range)?))
    }
}

/// Result of [`additive_merge_batch`](super::additive_merge_batch): like [`Fused`] plus, per output, where it came from
/// ([`SOURCE_BASE`], [`SOURCE_GRAPH`] or [`SOURCE_BOTH`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Merged {
    pub ids: Vec<i64>,
    pub scores: Vec<f64>,
    pub sources: Vec<u8>,
    /// `n_queries + 1` entries.
    pub offsets: Vec<usize>,
}
