//! Personalized PageRank (HippoRAG's spreading activation), restricted to one tenant.
//!
//! Power iteration on the tenant's subgraph: `x <- (1 - d) p + d (x P + m(x) p)`, where `P`
//! moves mass along admitted edges in proportion to their weight, `p` is the normalised seed
//! vector and `m(x)` the mass sitting on nodes without admitted edges (dangling mass is
//! returned to the seeds, as NetworkX and igraph do for personalized PageRank). Stops when
//! the L1 change is below `tol` or after `max_iter` rounds. The transition matrix is built
//! once per tenant per call and shared by every query of that tenant.

use rustc_hash::FxHashMap;

use super::{for_each_edge, per_query, Direction, FactFilter, Queries};
use crate::error::{Error, Result};
use crate::graph::{KnowledgeGraph, NONE};

/// What an edge weighs in the transition matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeWeight {
    Strength,
    Confidence,
    Uniform,
}

#[derive(Debug, Clone)]
pub struct PprParams {
    /// Probability of following an edge (HippoRAG uses 0.5).
    pub damping: f64,
    /// L1 convergence threshold.
    pub tol: f64,
    pub max_iter: u32,
    pub weight: EdgeWeight,
    pub direction: Direction,
    pub filter: FactFilter,
    /// Restrict to this tenant; otherwise the seeds' tenant.
    pub tenant: Option<u32>,
    /// Keep the best `top_k` entities (all entities with a score > 0 when `None`).
    pub top_k: Option<usize>,
    /// Keep the best `top_k_chunks` chunks (all scored chunks when `None`).
    pub top_k_chunks: Option<usize>,
    /// Chunk score = sum over mentioned entities of score x (count if true, else 1).
    pub weight_by_count: bool,
}

impl Default for PprParams {
    fn default() -> Self {
        PprParams {
            damping: 0.5,
            tol: 1e-10,
            max_iter: 100,
            weight: EdgeWeight::Strength,
            direction: Direction::Both,
            filter: FactFilter::default(),
            tenant: None,
            top_k: None,
            top_k_chunks: None,
            weight_by_count: false,
        }
    }
}

/// Upper bound on iterations (a guard against absurd parameters, not a tuning knob).
pub const MAX_ITER: u32 = 100_000;

impl PprParams {
    pub fn validate(&self, g: &KnowledgeGraph) -> Result<()> {
        if !(self.damping > 0.0 && self.damping < 1.0) {
            return Err(Error::param(
                "damping",
                format!("{} is not in (0, 1)", self.damping),
            ));
        }
        if !(self.tol.is_finite() && self.tol > 0.0) {
            return Err(Error::param(
                "tol",
                format!("{} is not a positive number", self.tol),
            ));
        }
        if self.max_iter == 0 || self.max_iter > MAX_ITER {
            return Err(Error::param(
                "max_iter",
                format!("{} is not in 1..={MAX_ITER}", self.max_iter),
            ));
        }
        if self.top_k == Some(0) || self.top_k_chunks == Some(0) {
            return Err(Error::param("top_k", "must be at least 1 (or None)"));
        }
        self.filter.validate(g)
    }
}

/// Scores per query, concatenated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PageRank {
    pub entity_offsets: Vec<usize>,
    pub entities: Vec<u32>,
    pub entity_scores: Vec<f64>,
    pub chunk_offsets: Vec<usize>,
    pub chunks: Vec<u32>,
    pub chunk_scores: Vec<f64>,
    /// Iterations run per query.
    pub iterations: Vec<u32>,
}

/// Pull-form transition matrix of one tenant: node `v` receives
/// `sum x[src[i]] * prob[i]` over `i in offsets[v]..offsets[v+1]`.
struct Transition<'t> {
    nodes: &'t [u32],
    offsets: Vec<u32>,
    src: Vec<u32>,
    prob: Vec<f64>,
    dangling: Vec<bool>,
}

fn local(nodes: &[u32], e: u32) -> Option<usize> {
    nodes.binary_search(&e).ok()
}

fn transition<'t>(g: &KnowledgeGraph, nodes: &'t [u32], p: &PprParams) -> Transition<'t> {
    let n = nodes.len();
    // Edge list in local indices (u -> v, weight), with out-weight totals.
    let mut edges: Vec<(u32, u32, f64)> = Vec::new();
    let mut total = vec![0.0f64; n];
    for (u, &e) in nodes.iter().enumerate() {
        for_each_edge(g, e, p.direction, &p.filter, usize::MAX, |pos, other| {
            if other == NONE {
                return true;
            }
            // Facts never cross tenants, so `other` is always in `nodes`.
            if let Some(v) = local(nodes, other) {
                let w = match p.weight {
                    EdgeWeight::Strength => f64::from(g.rec[pos].strength),
                    EdgeWeight::Confidence => f64::from(g.rec[pos].confidence),
                    EdgeWeight::Uniform => 1.0,
                };
                if w > 0.0 {
                    edges.push((u as u32, v as u32, w));
                    total[u] += w;
                }
            }
            true
        });
    }
    let mut offsets = vec![0u32; n + 1];
    for &(_, v, _) in &edges {
        offsets[v as usize + 1] += 1;
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    let mut cursor = offsets[..n].to_vec();
    let mut src = vec![0u32; edges.len()];
    let mut prob = vec![0.0f64; edges.len()];
    for &(u, v, w) in &edges {
        let slot = cursor[v as usize] as usize;
        src[slot] = u;
        prob[slot] = w / total[u as usize];
        cursor[v as usize] += 1;
    }
    let dangling = total.iter().map(|&t| t <= 0.0).collect();
    Transition {
        nodes,
        offsets,
        src,
        prob,
        dangling,
    }
}

struct QueryRank {
    entities: Vec<u32>,
    entity_scores: Vec<f64>,
    chunks: Vec<u32>,
    chunk_scores: Vec<f64>,
    iterations: u32,
}

fn top(mut items: Vec<(u32, f64)>, k: Option<usize>) -> (Vec<u32>, Vec<f64>) {
    let cmp = |a: &(u32, f64), b: &(u32, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if let Some(k) = k {
        if items.len() > k {
            items.select_nth_unstable_by(k - 1, cmp);
            items.truncate(k);
        }
    }
    items.sort_unstable_by(cmp);
    items.into_iter().unzip()
}

fn rank_one(
    g: &KnowledgeGraph,
    t: &Transition<'_>,
    seeds: &[u32],
    weights: &[f64],
    p: &PprParams,
) -> QueryRank {
    let n = t.nodes.len();
    let mut reset = vec![0.0f64; n];
    // Scale by the largest weight first so that huge finite weights cannot sum to inf.
    let max = weights.iter().copied().fold(0.0f64, f64::max);
    let total: f64 = weights.iter().map(|w| w / max).sum();
    for (&s, &w) in seeds.iter().zip(weights) {
        if let Some(i) = local(t.nodes, s) {
            reset[i] += (w / max) / total;
        }
    }
    let d = p.damping;
    let mut x = reset.clone();
    let mut next = vec![0.0f64; n];
    let mut iterations = 0;
    for _ in 0..p.max_iter {
        iterations += 1;
        let dangling: f64 = x
            .iter()
            .zip(&t.dangling)
            .filter(|(_, &dg)| dg)
            .map(|(v, _)| v)
            .sum();
        let mut delta = 0.0;
        for v in 0..n {
            let mut acc = 0.0;
            for i in t.offsets[v] as usize..t.offsets[v + 1] as usize {
                acc += x[t.src[i] as usize] * t.prob[i];
            }
            let nv = (1.0 - d) * reset[v] + d * (acc + dangling * reset[v]);
            delta += (nv - x[v]).abs();
            next[v] = nv;
        }
        std::mem::swap(&mut x, &mut next);
        if delta < p.tol {
            break;
        }
    }
    let scored: Vec<(u32, f64)> = t
        .nodes
        .iter()
        .zip(&x)
        .filter(|(_, &s)| s > 0.0)
        .map(|(&e, &s)| (e, s))
        .collect();
    let mut chunk_acc: FxHashMap<u32, f64> = FxHashMap::default();
    if g.n_chunks > 0 {
        for &(e, s) in &scored {
            for i in g.mention_range(e) {
                let w = if p.weight_by_count {
                    f64::from(g.mention_count[i])
                } else {
                    1.0
                };
                *chunk_acc.entry(g.mention_chunk[i]).or_insert(0.0) += s * w;
            }
        }
    }
    let (entities, entity_scores) = top(scored, p.top_k);
    let (chunks, chunk_scores) = top(chunk_acc.into_iter().collect(), p.top_k_chunks);
    QueryRank {
        entities,
        entity_scores,
        chunks,
        chunk_scores,
        iterations,
    }
}

/// Personalized PageRank for a batch of queries; the anchors are the seeds and the anchor
/// scores their (non-negative) weights.
///
/// # Errors
/// Invalid parameters, seeds outside the graph or across tenants, negative or all-zero
/// seed weights, unknown tenant.
pub fn personalized_pagerank(
    g: &KnowledgeGraph,
    queries: &Queries<'_>,
    p: &PprParams,
) -> Result<PageRank> {
    p.validate(g)?;
    queries.validate(g, p.tenant)?;
    let mut tenant_of = Vec::with_capacity(queries.len());
    for q in 0..queries.len() {
        let (seeds, weights) = queries.query(q);
        if seeds.is_empty() {
            return Err(Error::query(q, "has no seeds"));
        }
        if let Some(w) = weights.iter().find(|w| **w < 0.0) {
            return Err(Error::query(q, format!("seed weight {w} is negative")));
        }
        if weights.iter().sum::<f64>() <= 0.0 {
            return Err(Error::query(q, "seed weights sum to zero"));
        }
        tenant_of.push(p.tenant.unwrap_or_else(|| g.entity_tenant(seeds[0])));
    }
    let mut tenants: Vec<u32> = tenant_of.clone();
    tenants.sort_unstable();
    tenants.dedup();
    let mut matrices: FxHashMap<u32, Transition<'_>> = FxHashMap::default();
    for &t in &tenants {
        matrices.insert(t, transition(g, g.tenant_entities(t)?, p));
    }
    let per = per_query(queries.len(), |q| {
        let (seeds, weights) = queries.query(q);
        let t = &matrices[&tenant_of[q]];
        rank_one(g, t, seeds, weights, p)
    });
    let mut out = PageRank {
        entity_offsets: vec![0],
        chunk_offsets: vec![0],
        ..PageRank::default()
    };
    for r in per {
        out.entities.extend_from_slice(&r.entities);
        out.entity_scores.extend_from_slice(&r.entity_scores);
        out.chunks.extend_from_slice(&r.chunks);
        out.chunk_scores.extend_from_slice(&r.chunk_scores);
        out.iterations.push(r.iterations);
        out.entity_offsets.push(out.entities.len());
        out.chunk_offsets.push(out.chunks.len());
    }
    Ok(out)
}
