//! graphrecall core: numbers only.
//!
//! A CSR knowledge graph (entities, facts, chunks and mentions, all dense `u32` indices and
//! numeric columns), capped BFS spreading activation, Personalized PageRank, the scoring
//! formulas of the five source designs, rank fusion and BM25's query over term ids. No text,
//! no Python objects, no storage: the Python layer (`python/graphrecall`) owns those and
//! calls in once per batch (or query).

pub mod activation;
mod alloc;
pub(crate) mod batch;
pub mod embed;
pub mod error;
pub mod fusion;
pub mod graph;
pub mod ingest_text;
pub mod scoring;
pub mod text;
pub mod vectors;

pub use error::{Error, Result};

#[cfg(feature = "python")]
mod py;
