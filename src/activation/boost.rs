//! Seed 001 relevance boosting of vector-retrieved chunks by the entities they mention.
//!
//! For each chunk: `direct = |mentioned ∩ query entities| x direct_boost` and
//! `indirect = sum over mentioned related entities (not query entities) of
//! indirect_boost x 1/distance x strength [x centrality]`; `adjusted = similarity + direct +
//! indirect`. Chunks are then re-ranked by `adjusted`, ties kept in their vector order
//! (the source sorts a list with Python's stable sort).

use rustc_hash::FxHashMap;

use super::per_query;
use crate::error::{Error, Result};
use crate::graph::KnowledgeGraph;

#[derive(Debug, Clone)]
pub struct BoostParams {
    pub direct: f64,
    pub indirect: f64,
    pub use_strength: bool,
}

impl Default for BoostParams {
    fn default() -> Self {
        BoostParams {
            direct: 0.3,
            indirect: 0.1,
            use_strength: true,
        }
    }
}

/// One batch: per query q, chunks `chunks[c_off[q]..c_off[q+1]]` (vector order) with their
/// similarities, query entities `query_entities[q_off[q]..q_off[q+1]]`, and related entities
/// with distance (>= 1) and strength `related[r_off[q]..r_off[q+1]]`.
#[derive(Debug, Clone, Copy)]
pub struct BoostInput<'a> {
    pub chunks: &'a [u32],
    pub similarity: &'a [f64],
    pub chunk_offsets: &'a [usize],
    pub query_entities: &'a [u32],
    pub query_offsets: &'a [usize],
    pub related: &'a [u32],
    pub related_distance: &'a [u32],
    pub related_strength: &'a [f64],
    pub related_offsets: &'a [usize],
    /// Optional per-entity centrality in [0, 1] (seed 001's "PageRank-style importance").
    pub centrality: Option<&'a [f64]>,
}

/// Boosts per chunk, aligned with the input, plus the re-ranked order per query.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Boosted {
    pub direct: Vec<f64>,
    pub indirect: Vec<f64>,
    pub adjusted: Vec<f64>,
    /// Per query, the input positions (relative to the query's first chunk) sorted by
    /// adjusted score desc, ties in input order.
    pub order: Vec<u32>,
}

fn check_offsets(
    name: &'static str,
    offsets: &[usize],
    len: usize,
    n_queries: usize,
) -> Result<()> {
    if offsets.len() != n_queries + 1
        || offsets.first() != Some(&0)
        || offsets.last() != Some(&len)
        || offsets.windows(2).any(|w| w[0] > w[1])
    {
        return Err(Error::param(
            name,
            format!(
                "must be {} non-decreasing offsets from 0 to {len}",
                n_queries + 1
            ),
        ));
    }
    Ok(())
}

pub fn mention_boost(
    g: &KnowledgeGraph,
    input: &BoostInput<'_>,
    p: &BoostParams,
) -> Result<Boosted> {
    let nq = input.chunk_offsets.len().saturating_sub(1);
    if input.chunk_offsets.is_empty() {
        return Err(Error::param(
            "chunk_offsets",
            "must hold at least one entry (0)",
        ));
    }
    check_offsets("chunk_offsets", input.chunk_offsets, input.chunks.len(), nq)?;
    check_offsets(
        "query_offsets",
        input.query_offsets,
        input.query_entities.len(),
        nq,
    )?;
    check_offsets(
        "related_offsets",
        input.related_offsets,
        input.related.len(),
        nq,
    )?;
    for (name, v) in [("direct", p.direct), ("indirect", p.indirect)] {
        if !v.is_finite() {
            return Err(Error::param(name, format!("{v} is not finite")));
        }
    }
    if input.similarity.len() != input.chunks.len() {
        return Err(Error::param("similarity", "must align with chunks"));
    }
    if input.related_distance.len() != input.related.len()
        || input.related_strength.len() != input.related.len()
    {
        return Err(Error::param(
            "related",
            "distance and strength must align with related",
        ));
    }
    if let Some(i) = input.chunks.iter().position(|&c| c >= g.n_chunks) {
        return Err(Error::param(
            "chunks",
            format!(
                "chunk {} at position {i} is not in the graph ({} chunks)",
                input.chunks[i], g.n_chunks
            ),
        ));
    }
    for (name, ids) in [
        ("query_entities", input.query_entities),
        ("related", input.related),
    ] {
        if let Some(i) = ids.iter().position(|&e| e >= g.n_entities) {
            return Err(Error::param(
                name,
                format!(
                    "entity {} at position {i} is not in the graph ({} entities)",
                    ids[i], g.n_entities
                ),
            ));
        }
    }
    if let Some(i) = input.similarity.iter().position(|s| !s.is_finite()) {
        return Err(Error::param(
            "similarity",
            format!("value at position {i} is not finite"),
        ));
    }
    if let Some(i) = input.related_distance.iter().position(|&d| d == 0) {
        return Err(Error::param(
            "related_distance",
            format!("value at position {i} is 0; related entities are at distance >= 1"),
        ));
    }
    if let Some(i) = input
        .related_strength
        .iter()
        .position(|s| !s.is_finite() || *s < 0.0)
    {
        return Err(Error::param(
            "related_strength",
            format!("value at position {i} is not a finite number >= 0"),
        ));
    }
    if let Some(c) = input.centrality {
        if c.len() != g.n_entities() {
            return Err(Error::param(
                "centrality",
                format!(
                    "has {} entries, the graph has {} entities",
                    c.len(),
                    g.n_entities
                ),
            ));
        }
        if let Some(i) = c.iter().position(|v| !v.is_finite()) {
            return Err(Error::param(
                "centrality",
                format!("value of entity {i} is not finite"),
            ));
        }
    }

    let per = per_query(nq, |q| {
        let chunks = &input.chunks[input.chunk_offsets[q]..input.chunk_offsets[q + 1]];
        let sims = &input.similarity[input.chunk_offsets[q]..input.chunk_offsets[q + 1]];
        let qents = &input.query_entities[input.query_offsets[q]..input.query_offsets[q + 1]];
        let r = input.related_offsets[q]..input.related_offsets[q + 1];
        // Related entity -> per-mention indirect boost (query entities excluded).
        let mut rel: FxHashMap<u32, f64> = FxHashMap::default();
        for i in r {
            let e = input.related[i];
            if qents.contains(&e) {
                continue;
            }
            let strength = if p.use_strength {
                input.related_strength[i]
            } else {
                1.0
            };
            let mut b = p.indirect * (1.0 / f64::from(input.related_distance[i])) * strength;
            if let Some(c) = input.centrality {
                b *= c[e as usize];
            }
            // An entity listed twice keeps its best boost.
            let slot = rel.entry(e).or_insert(b);
            *slot = slot.max(b);
        }
        let mut direct = Vec::with_capacity(chunks.len());
        let mut indirect = Vec::with_capacity(chunks.len());
        let mut adjusted = Vec::with_capacity(chunks.len());
        for (&c, &sim) in chunks.iter().zip(sims) {
            let mut n_direct = 0u32;
            let mut ind = 0.0;
            // Mentions are unique per chunk and sorted by entity: a set, as in the source.
            for &e in g.chunk_mentions(c).0 {
                if qents.contains(&e) {
                    n_direct += 1;
                } else if let Some(b) = rel.get(&e) {
                    ind += b;
                }
            }
            let d = f64::from(n_direct) * p.direct;
            direct.push(d);
            indirect.push(ind);
            adjusted.push(sim + d + ind);
        }
        let mut order: Vec<u32> = (0..chunks.len() as u32).collect();
        order.sort_by(|&a, &b| adjusted[b as usize].total_cmp(&adjusted[a as usize]));
        (direct, indirect, adjusted, order)
    });
    let mut out = Boosted::default();
    for (d, i, a, o) in per {
        out.direct.extend(d);
        out.indirect.extend(i);
        out.adjusted.extend(a);
        out.order.extend(o);
    }
    Ok(out)
}
