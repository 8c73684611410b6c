//! The scoring formulas of the five source designs, vectorised. Pyo3-free, numbers only.
//!
//! | seed | formula | here |
//! |---|---|---|
//! | 000 | `scoreFact`: confidence × source weight × decay × usage boost × status weight | [`score_fact`], [`score_fact_batch`] |
//! | 001 | indirect mention boost `indirect × (1 / distance) × strength` | [`indirect_boost`], [`MentionBoostProfile`] |
//! | 002 | `rerank_memories`: 0.5 similarity + 0.3 recency + 0.15 confidence + 0.05 access | [`rerank_batch`] |
//! | 003 | `computeGraphScore`: weight / 10 × 1 / 2^(hop−1) × (0.7 + 0.3 mention boost) | [`graph_proximity`], [`graph_proximity_batch`] |
//! | 004 | `composite_score`: match × 1 / (1 + hop) × confidence | [`composite`], [`composite_batch`] |
//!
//! Every constant of a source lives in a profile struct whose `Default` is the source's value.
//! Times are `i64` seconds and `now` is always an argument (no clock is read here); a null
//! timestamp is [`NULL_TIME`] and means "age unknown", which never decays (factor 1.0).
//! Each formula evaluates its products and sums in the order the source writes them, so the
//! results are bit-identical to the straightforward Python of the sources (seed 003's mention
//! part is `floor + (1 - floor) * boost`, one constant for both terms; `1 - 0.7` differs from
//! the source's `0.3` in the last bit).

mod chunks;
mod common;
mod composite;
mod fact;
mod mention;
mod ppr_rerank;
mod proximity;
mod rerank;
mod support;

pub use chunks::{
    best_mentioned_chunks, cosine_graph_top, entity_chunk_scores, graph_proximity_chunks,
    passage_seed_mass, ChunkScores, CosineGraphTop, MentionCsr,
};
pub use common::{
    DAY_SECONDS, NULL_TIME, PAR_THRESHOLD, SOURCE_CONVERSATION, SOURCE_FILE, SOURCE_SYSTEM,
    SOURCE_USER_EDIT, STATUS_ARCHIVED, STATUS_CONFIRMED, STATUS_REJECTED, STATUS_STAGED,
    WEEK_SECONDS,
};
pub use composite::{composite, composite_batch, composite_scores};
pub use fact::{score_fact, score_fact_batch, score_facts, FactScoreProfile};
pub use mention::{indirect_boost, MentionBoostProfile};
pub use ppr_rerank::{rerank_from_top, NamedChunks, TermPostings, TopRerank, TopReranked};
pub use proximity::{
    graph_proximity, graph_proximity_batch, graph_proximity_scores, GraphProximityProfile,
};
pub use rerank::{recency, rerank_batch, RerankProfile, Reranked};
pub use support::{supporting_chunks, SupportingChunks};

#[cfg(test)]
mod ppr_kernel_tests;
#[cfg(test)]
mod ppr_rerank_tests;
#[cfg(test)]
mod tests;
