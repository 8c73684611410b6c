//! Spreading activation over the knowledge graph: capped BFS (the source designs' N-hop
//! expansion), the fused top-k graph recall of seed 004, and Personalized PageRank.
//!
//! Every kernel takes a batch of queries (flat anchors + offsets) and runs the queries in
//! parallel with rayon; a single query runs inline, without touching the thread pool.

mod bfs;
mod boost;
mod ppr;
mod ppr_exact;
mod recall;

pub use bfs::{spread, Activation, QueryActivation, Rank, SpreadParams, MAX_HOPS};
pub use boost::{mention_boost, BoostInput, BoostParams, Boosted};
pub use ppr::{
    personalized_pagerank, personalized_pagerank_cached, EdgeWeight, PageRank, PprParams,
};
pub use ppr_exact::PprCache;
pub use recall::{graph_recall, Dedupe, Recall, RecallParams};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::graph::{Adjacency, KnowledgeGraph, NULL_TIME};

/// Which way edges are walked from an expanded entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Subject -> object (the facts an entity states).
    Out,
    /// Object -> subject (the facts that point at an entity).
    In,
    /// Both ways (relationships as undirected edges).
    Both,
}

/// A set of u8 codes (statuses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CodeSet([u64; 4]);

impl CodeSet {
    pub fn from_codes(codes: &[u8]) -> Self {
        let mut s = CodeSet::default();
        for &c in codes {
            s.0[(c >> 6) as usize] |= 1u64 << (c & 63);
        }
        s
    }
    #[inline]
    pub fn contains(&self, c: u8) -> bool {
        self.0[(c >> 6) as usize] & (1u64 << (c & 63)) != 0
    }
}

/// Which facts may be traversed. A fact that fails the filter is neither returned nor
/// walked through.
#[derive(Debug, Clone, Default)]
pub struct FactFilter {
    /// Allowed status codes; `None` admits every status.
    pub statuses: Option<CodeSet>,
    /// Allowed predicates, indexed by predicate code; `None` admits every predicate.
    pub predicates: Option<Vec<bool>>,
    /// Facts below this confidence are skipped.
    pub min_confidence: Option<f32>,
    /// Only facts valid at this time: `valid_from <= t < valid_to` (nulls are open ends).
    pub as_of: Option<i64>,
    /// Only facts established at or before this sequence number ("chapter N"); facts with
    /// no sequence are excluded, as SQL's `sequence <= N` would.
    pub max_sequence: Option<i64>,
}

impl FactFilter {
    /// Check the filter against the graph (codes in range, columns present).
    pub fn validate(&self, g: &KnowledgeGraph) -> Result<()> {
        if let Some(p) = &self.predicates {
            if p.len() != g.n_predicates() {
                return Err(Error::param(
                    "predicates",
                    format!(
                        "mask has {} entries, the graph has {} predicate codes",
                        p.len(),
                        g.n_predicates()
                    ),
                ));
            }
        }
        if let Some(c) = self.min_confidence {
            if !(0.0..=1.0).contains(&c) {
                return Err(Error::param(
                    "min_confidence",
                    format!("{c} is not in [0, 1]"),
                ));
            }
        }
        if self.max_sequence.is_some() && g.sequence.is_none() {
            return Err(Error::param(
                "max_sequence",
                "the graph holds no fact sequence numbers",
            ));
        }
        Ok(())
    }

    /// Whether the filter admits every fact (no condition set).
    #[inline]
    pub(crate) fn admits_all(&self) -> bool {
        self.statuses.is_none()
            && self.predicates.is_none()
            && self.min_confidence.is_none()
            && self.as_of.is_none()
            && self.max_sequence.is_none()
    }

    #[inline]
    pub(crate) fn admits<'a>(&self, g: impl Adjacency<'a>, pos: usize) -> bool {
        if let Some(s) = &self.statuses {
            if !s.contains(g.rec(pos).status) {
                return false;
            }
        }
        if let Some(p) = &self.predicates {
            if !p[g.rec(pos).predicate as usize] {
                return false;
            }
        }
        if let Some(c) = self.min_confidence {
            if g.rec(pos).confidence < c {
                return false;
            }
        }
        if let Some(t) = self.as_of {
            if let Some(from) = &g.graph().valid_from {
                let f = from[pos];
                if f != NULL_TIME && f > t {
                    return false;
                }
            }
            if let Some(to) = &g.graph().valid_to {
                let v = to[pos];
                if v != NULL_TIME && t >= v {
                    return false;
                }
            }
        }
        if let Some(m) = self.max_sequence {
            if let Some(seq) = &g.graph().sequence {
                let s = seq[pos];
                if s == NULL_TIME || s > m {
                    return false;
                }
            }
        }
        true
    }
}

/// A batch of queries: anchors of query `q` are `anchors[offsets[q]..offsets[q+1]]`, with
/// `scores` aligned to `anchors` (match scores; 1.0 when the caller has none).
#[derive(Debug, Clone, Copy)]
pub struct Queries<'a> {
    pub anchors: &'a [u32],
    pub scores: &'a [f64],
    pub offsets: &'a [usize],
}

impl<'a> Queries<'a> {
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub(crate) fn query(&self, q: usize) -> (&'a [u32], &'a [f64]) {
        let r = self.offsets[q]..self.offsets[q + 1];
        (&self.anchors[r.clone()], &self.scores[r])
    }

    /// Offsets monotone and in range, anchors in the graph, scores finite, and every anchor
    /// of a query in one tenant (the given one, if any): a query never reads two tenants.
    pub fn validate(&self, g: &KnowledgeGraph, tenant: Option<u32>) -> Result<()> {
        if self.offsets.is_empty() {
            return Err(Error::param("offsets", "must hold at least one entry (0)"));
        }
        if self.offsets[0] != 0 {
            return Err(Error::param("offsets", "must start at 0"));
        }
        if self.scores.len() != self.anchors.len() {
            return Err(Error::param(
                "anchor_scores",
                format!(
                    "{} scores for {} anchors",
                    self.scores.len(),
                    self.anchors.len()
                ),
            ));
        }
        if self.offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err(Error::param("offsets", "must be non-decreasing"));
        }
        if *self.offsets.last().unwrap_or(&0) != self.anchors.len() {
            return Err(Error::param(
                "offsets",
                format!("must end at the number of anchors ({})", self.anchors.len()),
            ));
        }
        if let Some(t) = tenant {
            g.check_tenant(t)?;
        }
        for q in 0..self.len() {
            let (anchors, scores) = self.query(q);
            let mut query_tenant = tenant;
            for (&a, &s) in anchors.iter().zip(scores) {
                if a >= g.n_entities {
                    return Err(Error::query(
                        q,
                        format!(
                            "anchor {a} is not an entity (the graph has {} entities)",
                            g.n_entities
                        ),
                    ));
                }
                if !s.is_finite() {
                    return Err(Error::query(
                        q,
                        format!("anchor {a} has a non-finite score {s}"),
                    ));
                }
                let t = g.entity_tenant(a);
                match query_tenant {
                    None => query_tenant = Some(t),
                    Some(qt) if qt != t => {
                        return Err(Error::query(
                            q,
                            format!(
                                "anchor {a} belongs to tenant {t}, not to the query's tenant {qt}"
                            ),
                        ))
                    }
                    Some(_) => {}
                }
            }
        }
        Ok(())
    }
}

/// Run `f` on every query: inline for one query, on the rayon pool for more.
pub(crate) fn per_query<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    if n <= 1 {
        (0..n).map(f).collect()
    } else {
        (0..n).into_par_iter().map(f).collect()
    }
}

/// A [`for_each_edge`] limit that takes every edge in the merged order. `usize::MAX` walks
/// `Both` as out-edges, then in-edges: for callers whose result does not depend on the order.
pub(crate) const EVERY_EDGE_IN_ORDER: usize = usize::MAX - 1;

/// Walk the admitted edges of `e` in `direction`, in confidence-desc / fact-id-asc order
/// (both lists merged for `Both`, except with `limit == usize::MAX`), calling
/// `visit(pos, other_endpoint)` until it returns `false` or `limit` edges were visited.
/// Literal facts have `other == NONE`.
#[inline]
pub(crate) fn for_each_edge<'a>(
    g: impl Adjacency<'a>,
    e: u32,
    direction: Direction,
    filter: &FactFilter,
    limit: usize,
    mut visit: impl FnMut(usize, u32) -> bool,
) {
    let mut taken = 0usize;
    if limit == 0 {
        return;
    }
    match direction {
        Direction::Out => {
            for p in g.out_range(e) {
                if filter.admits(g, p) {
                    taken += 1;
                    if !visit(p, g.rec(p).object) || taken >= limit {
                        return;
                    }
                }
            }
        }
        Direction::In => {
            for i in g.in_range(e) {
                let p = g.in_pos(i) as usize;
                if filter.admits(g, p) {
                    taken += 1;
                    if !visit(p, g.in_subject(i)) || taken >= limit {
                        return;
                    }
                }
            }
        }
        Direction::Both if limit == usize::MAX => {
            // No limit, so no need to merge the two lists by confidence (which would read
            // every in-fact's record at random): walk out, then in.
            if filter.admits_all() {
                // The unfiltered walk (PPR's): no per-edge filter call.
                for p in g.out_range(e) {
                    if !visit(p, g.rec(p).object) {
                        return;
                    }
                }
                for i in g.in_range(e) {
                    let other = g.in_subject(i);
                    if other != e && !visit(g.in_pos(i) as usize, other) {
                        return;
                    }
                }
                return;
            }
            for p in g.out_range(e) {
                if filter.admits(g, p) && !visit(p, g.rec(p).object) {
                    return;
                }
            }
            for i in g.in_range(e) {
                let (p, other) = (g.in_pos(i) as usize, g.in_subject(i));
                if other != e && filter.admits(g, p) && !visit(p, other) {
                    return;
                }
            }
        }
        Direction::Both => {
            let (mut out, mut inn) = (g.out_range(e), g.in_range(e));
            let (mut o, mut i) = (out.next(), inn.next());
            loop {
                // Pick the next edge of the merged (confidence desc, fact id asc) order.
                let (p, other, take_out) = match (o, i) {
                    (None, None) => return,
                    (Some(po), None) => {
                        o = out.next();
                        (po, g.rec(po).object, true)
                    }
                    (None, Some(ii)) => {
                        i = inn.next();
                        (g.in_pos(ii) as usize, g.in_subject(ii), false)
                    }
                    (Some(po), Some(ii)) => {
                        let pi = g.in_pos(ii) as usize;
                        let (co, ci) = (g.rec(po).confidence, g.rec(pi).confidence);
                        if co > ci || (co == ci && g.rec(po).fact <= g.rec(pi).fact) {
                            o = out.next();
                            (po, g.rec(po).object, true)
                        } else {
                            i = inn.next();
                            (pi, g.in_subject(ii), false)
                        }
                    }
                };
                // A self-loop appears in both lists; walk it once (from the out side).
                if !take_out && other == e {
                    continue;
                }
                if filter.admits(g, p) {
                    taken += 1;
                    if !visit(p, other) || taken >= limit {
                        return;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
