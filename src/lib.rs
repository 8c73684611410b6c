//! graphrecall core: numbers only.
//!
//! A CSR knowledge graph (entities, facts, chunks and mentions, all dense `u32` indices and
//! numeric columns), capped BFS spreading activation, Personalized PageRank, the scoring
//! formulas of the five source designs and rank fusion. No text, no Python objects, no
//! storage: the Python layer (`python/graphrecall`) owns those and calls in once per batch.

pub mod activation;
pub mod error;
pub mod fusion;
pub mod graph;
pub mod scoring;
pub mod vectors;

pub use error::{Error, Result};

#[cfg(feature = "python")]
mod py;
