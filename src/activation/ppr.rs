//! Personalized PageRank (HippoRAG's spreading activation), restricted to one tenant.
//!
//! The chain on the tenant's subgraph is `x = (1 - d) p + d (x P + m(x) p)`, where `P`
//! moves mass along admitted edges in proportion to their weight, `p` is the normalised seed
//! vector and `m(x)` the mass sitting on nodes without admitted edges (dangling mass is
//! returned to the seeds, as NetworkX and igraph do for personalized PageRank). The exact
//! mode solves it in [`super::ppr_exact`] (conjugate gradients for undirected walks,
//! Gauss-Seidel otherwise) and stops when the residual of one power step certifies an L1
//! error of at most `tol`; when `max_iter` passes do not certify it, it runs plain power
//! iteration for `max_iter` rounds instead (stopping when the L1 change is below `tol`).
//! The walk matrix is built once per tenant per call, or kept across calls in a
//! [`PprCache`], and shared by every query of that tenant.
//!
//! With `epsilon` set, the vector is instead approximated by local forward push (Andersen,
//! Chung and Lang, FOCS 2006) on the same chain: every node starts with its seed mass as
//! *residual*; a node whose residual exceeds `epsilon x max(degree, 1)` (degree: its facts in
//! the walked direction) keeps `1 - d` of it as score and passes `d` of it along its admitted
//! edges in proportion to their weight (a dangling node passes it back to the seeds). It only
//! reads the edges of the nodes it touches, builds no matrix, and stops when no residual is
//! above its threshold; every score is then at most the exact one, and the L1 error is the
//! mass still in residuals, at most `epsilon x` the summed degree of the touched nodes.

use rustc_hash::FxHashMap;

use std::sync::Arc;

use super::ppr_exact::{solve, PprCache, Pull};
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
    /// Exact mode: the certified L1 error bound against the true vector.
    pub tol: f64,
    /// Exact mode: passes over the edges allowed to certify `tol` (then power iteration
    /// rounds, when they do not).
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
    /// Score chunks through mentions (false: no chunk scores, saves the mention walk).
    pub score_chunks: bool,
    /// Approximate by forward push with this residual threshold per out-edge (`tol` and
    /// `max_iter` then unused); the exact mode when `None`.
    pub epsilon: Option<f64>,
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
            score_chunks: true,
            epsilon: None,
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
        if let Some(eps) = self.epsilon {
            if !(eps.is_finite() && eps > 0.0 && eps < 1.0) {
                return Err(Error::param(
                    "epsilon",
                    format!("{eps} is not in (0, 1) (or None)"),
                ));
            }
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
    /// Iterations run per query (pushes with `epsilon`).
    pub iterations: Vec<u32>,
}

/// Pull-form transition matrix of one tenant: node `v` receives
/// `sum x[src[i]] * prob[i]` over `i in offsets[v]..offsets[v+1]`.
pub(super) struct Transition<'t> {
    pub(super) nodes: &'t [u32],
    pub(super) offsets: Vec<u32>,
    pub(super) src: Vec<u32>,
    pub(super) prob: Vec<f64>,
    pub(super) dangling: Vec<bool>,
}

fn local(nodes: &[u32], e: u32) -> Option<usize> {
    nodes.binary_search(&e).ok()
}

#[inline]
pub(super) fn edge_weight(g: &KnowledgeGraph, pos: usize, weight: EdgeWeight) -> f64 {
    match weight {
        EdgeWeight::Strength => f64::from(g.rec[pos].strength),
        EdgeWeight::Confidence => f64::from(g.rec[pos].confidence),
        EdgeWeight::Uniform => 1.0,
    }
}

pub(super) fn transition<'t>(
    g: &KnowledgeGraph,
    nodes: &'t [u32],
    p: &PprParams,
) -> Transition<'t> {
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
                let w = edge_weight(g, pos, p.weight);
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
    if items.iter().all(|&(_, s)| s.is_sign_positive()) {
        // The same order by integer keys: on sign-positive floats `total_cmp` is the order
        // of the bits, so (!bits, id) ascending is score descending, id ascending.
        let mut keyed: Vec<(u64, u32)> = items.iter().map(|&(e, s)| (!s.to_bits(), e)).collect();
        keyed.sort_unstable();
        return keyed
            .into_iter()
            .map(|(b, e)| (e, f64::from_bits(!b)))
            .unzip();
    }
    items.sort_unstable_by(cmp);
    items.into_iter().unzip()
}

/// The normalised seed vector over `nodes`, scaled by the largest weight first so that
/// huge finite weights cannot sum to inf.
pub(super) fn reset_vector(nodes: &[u32], seeds: &[u32], weights: &[f64]) -> Vec<f64> {
    let mut reset = vec![0.0f64; nodes.len()];
    let max = weights.iter().copied().fold(0.0f64, f64::max);
    let total: f64 = weights.iter().map(|w| w / max).sum();
    for (&s, &w) in seeds.iter().zip(weights) {
        if let Some(i) = local(nodes, s) {
            reset[i] += (w / max) / total;
        }
    }
    reset
}

/// Exact scores of one query: certified Gauss-Seidel, or plain power iteration for
/// `max_iter` rounds when that many passes do not certify `tol`.
fn rank_one(
    g: &KnowledgeGraph,
    pull: &Pull,
    seeds: &[u32],
    weights: &[f64],
    p: &PprParams,
) -> QueryRank {
    let reset = reset_vector(&pull.nodes, seeds, weights);
    let (x, iterations) = match solve(pull, &reset, p) {
        Some(done) => done,
        None => power(&transition(g, &pull.nodes, p), reset, p),
    };
    let scored: Vec<(u32, f64)> = pull
        .nodes
        .iter()
        .zip(&x)
        .filter(|(_, &s)| s > 0.0)
        .map(|(&e, &s)| (e, s))
        .collect();
    finish(g, scored, p, iterations)
}

/// Power iteration from the seed vector until the L1 change of a round is below `tol`, at
/// most `max_iter` rounds.
pub(super) fn power(t: &Transition<'_>, reset: Vec<f64>, p: &PprParams) -> (Vec<f64>, u32) {
    let n = t.nodes.len();
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
    (x, iterations)
}

/// Chunk scores from entity scores, and the kept top entities / chunks.
fn finish(
    g: &KnowledgeGraph,
    scored: Vec<(u32, f64)>,
    p: &PprParams,
    iterations: u32,
) -> QueryRank {
    let mut chunk_acc: FxHashMap<u32, f64> = FxHashMap::default();
    if g.n_chunks > 0 && p.score_chunks {
        for &(e, s) in &scored {
            let (chunks, counts) = g.entity_mentions(e);
            for (&c, &n) in chunks.iter().zip(counts) {
                let w = if p.weight_by_count { f64::from(n) } else { 1.0 };
                *chunk_acc.entry(c).or_insert(0.0) += s * w;
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

/// The admitted out-edges of `u` (other end, weight > 0) into `out`; returns their total.
fn out_edges(g: &KnowledgeGraph, u: u32, p: &PprParams, out: &mut Vec<(u32, f64)>) -> f64 {
    out.clear();
    let mut total = 0.0;
    for_each_edge(g, u, p.direction, &p.filter, usize::MAX, |pos, other| {
        if other != NONE {
            let w = edge_weight(g, pos, p.weight);
            if w > 0.0 {
                out.push((other, w));
                total += w;
            }
        }
        true
    });
    total
}

/// Scores and residuals of forward pushes, dense over the graph's entities and reused by
/// every push of a thread: only the touched entries are written, and they are zeroed again
/// when a push ends, so a push costs nothing in the size of the graph.
#[derive(Default)]
struct Push {
    score: Vec<f64>,
    residual: Vec<f64>,
    /// Push threshold per node (`eps x max(degree, 1)`), 0 until the node is touched.
    threshold: Vec<f64>,
    queued: Vec<bool>,
    touched: Vec<u32>,
    queue: std::collections::VecDeque<u32>,
}

thread_local! {
    static PUSH: std::cell::RefCell<Push> = std::cell::RefCell::new(Push::default());
}

impl Push {
    /// All-zero state over `n` nodes (entries are zero between pushes).
    fn reset(&mut self, n: usize) {
        if self.score.len() != n {
            *self = Push {
                score: vec![0.0; n],
                residual: vec![0.0; n],
                threshold: vec![0.0; n],
                queued: vec![false; n],
                ..Push::default()
            };
        }
    }

    /// Zero the touched entries again.
    fn clear(&mut self) {
        for &v in &self.touched {
            let i = v as usize;
            self.score[i] = 0.0;
            self.residual[i] = 0.0;
            self.threshold[i] = 0.0;
            self.queued[i] = false;
        }
        self.touched.clear();
        self.queue.clear();
    }

    /// Add residual mass `m` to `v` and queue it when it crosses its threshold.
    fn add(&mut self, g: &KnowledgeGraph, p: &PprParams, eps: f64, v: u32, m: f64) {
        let i = v as usize;
        if self.threshold[i] == 0.0 {
            self.touched.push(v);
            // The facts at `v` in the walked direction (before filters): a cheap degree.
            let deg = match p.direction {
                Direction::Out => g.out_range(v).len(),
                Direction::In => g.in_range(v).len(),
                Direction::Both => g.out_range(v).len() + g.in_range(v).len(),
            };
            self.threshold[i] = eps * (deg.max(1) as f64);
        }
        self.residual[i] += m;
        if !self.queued[i] && self.residual[i] > self.threshold[i] {
            self.queued[i] = true;
            self.queue.push_back(v);
        }
    }
}

/// Forward push (Andersen-Chung-Lang) from the seeds on the chain of [`transition`], reading
/// each pushed node's edges from the graph (no matrix built up front).
fn push_one(
    g: &KnowledgeGraph,
    seeds: &[u32],
    weights: &[f64],
    eps: f64,
    p: &PprParams,
) -> QueryRank {
    // The normalised seed vector (dangling mass returns to it), scaled by the largest
    // weight first so that huge finite weights cannot sum to inf.
    let max = weights.iter().copied().fold(0.0f64, f64::max);
    let total: f64 = weights.iter().map(|w| w / max).sum();
    let reset: Vec<(u32, f64)> = seeds
        .iter()
        .zip(weights)
        .map(|(&s, &w)| (s, (w / max) / total))
        .filter(|&(_, v)| v > 0.0)
        .collect();
    let d = p.damping;
    let (scored, pushes) = PUSH.with(|cell| {
        let mut st = cell.borrow_mut();
        st.reset(g.n_entities());
        for &(s, v) in &reset {
            st.add(g, p, eps, s, v);
        }
        let mut pushes = 0u32;
        let mut out: Vec<(u32, f64)> = Vec::new();
        while let Some(u) = st.queue.pop_front() {
            let ui = u as usize;
            st.queued[ui] = false;
            let r = st.residual[ui];
            st.residual[ui] = 0.0;
            st.score[ui] += (1.0 - d) * r;
            pushes = pushes.saturating_add(1);
            let moved = d * r;
            let tot = out_edges(g, u, p, &mut out);
            if tot > 0.0 {
                for &(v, w) in &out {
                    st.add(g, p, eps, v, moved * (w / tot));
                }
            } else {
                for &(s, v) in &reset {
                    st.add(g, p, eps, s, moved * v);
                }
            }
        }
        let scored: Vec<(u32, f64)> = st
            .touched
            .iter()
            .map(|&e| (e, st.score[e as usize]))
            .filter(|&(_, s)| s > 0.0)
            .collect();
        st.clear();
        (scored, pushes)
    });
    finish(g, scored, p, pushes)
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
    run(g, queries, p, None)
}

/// [`personalized_pagerank`] reusing the exact mode's walk matrices across calls on the same
/// graph (`cache` must belong to `g`).
///
/// # Errors
/// As [`personalized_pagerank`].
pub fn personalized_pagerank_cached(
    g: &KnowledgeGraph,
    queries: &Queries<'_>,
    p: &PprParams,
    cache: &PprCache,
) -> Result<PageRank> {
    run(g, queries, p, Some(cache))
}

fn run(
    g: &KnowledgeGraph,
    queries: &Queries<'_>,
    p: &PprParams,
    cache: Option<&PprCache>,
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
    if let Some(eps) = p.epsilon {
        let per = per_query(queries.len(), |q| {
            let (seeds, weights) = queries.query(q);
            push_one(g, seeds, weights, eps, p)
        });
        return Ok(collect(per));
    }
    let mut tenants: Vec<u32> = tenant_of.clone();
    tenants.sort_unstable();
    tenants.dedup();
    let mut matrices: FxHashMap<u32, Arc<Pull>> = FxHashMap::default();
    for &t in &tenants {
        let nodes = g.tenant_entities(t)?;
        let pull = match cache {
            Some(c) => c.walk(g, t, nodes, p),
            None => Arc::new(Pull::new(g, nodes, p)),
        };
        matrices.insert(t, pull);
    }
    let per = per_query(queries.len(), |q| {
        let (seeds, weights) = queries.query(q);
        rank_one(g, &matrices[&tenant_of[q]], seeds, weights, p)
    });
    Ok(collect(per))
}

fn collect(per: Vec<QueryRank>) -> PageRank {
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
    out
}

#[cfg(test)]
mod push_tests {
    use proptest::prelude::*;

    use super::*;
    use crate::activation::tests::{anchors_of, batch_of};
    use crate::graph::tests::{arb_cols, Cols};

    fn scores(r: &PageRank, q: usize) -> FxHashMap<u32, f64> {
        let e = r.entity_offsets[q]..r.entity_offsets[q + 1];
        r.entities[e.clone()]
            .iter()
            .copied()
            .zip(r.entity_scores[e].iter().copied())
            .collect()
    }

    fn params(damping: f64, w: u8, d: u8) -> PprParams {
        PprParams {
            damping,
            tol: 1e-13,
            max_iter: 10_000,
            weight: [
                EdgeWeight::Strength,
                EdgeWeight::Confidence,
                EdgeWeight::Uniform,
            ][w as usize % 3],
            direction: [Direction::Both, Direction::Out, Direction::In][d as usize % 3],
            ..PprParams::default()
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Push never overshoots the exact vector, its L1 error is exactly the mass it has
        /// not settled (1 - its total) and at most epsilon x the tenant's summed degree; with
        /// a tiny epsilon it is the exact vector.
        #[test]
        fn push_is_a_lower_bound_within_its_error(
            c in arb_cols(),
            picks in proptest::collection::vec(0usize..1000, 1..4),
            weights in proptest::collection::vec(0.0f64..2.0, 4),
            damping in 0.05f64..0.95,
            w in 0u8..3,
            d in 0u8..3,
            eps in prop_oneof![Just(1e-13), 1e-6f64..0.2],
        ) {
            let g = c.graph();
            let anchors = anchors_of(&c, &picks);
            let mut ws: Vec<f64> = weights[..anchors.len()].to_vec();
            ws[0] += 0.1;
            let offsets = [0, anchors.len()];
            let q = Queries { anchors: &anchors, scores: &ws, offsets: &offsets };
            let exact_p = params(damping, w, d);
            let exact = personalized_pagerank(&g, &q, &exact_p)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let push_p = PprParams { epsilon: Some(eps), ..exact_p.clone() };
            let push = personalized_pagerank(&g, &q, &push_p)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let (want, got) = (scores(&exact, 0), scores(&push, 0));
            let mut l1 = 0.0;
            for (e, s) in &got {
                let x = want.get(e).copied().unwrap_or(0.0);
                prop_assert!(*s <= x + 1e-9, "entity {} push {} > exact {}", e, s, x);
            }
            for (e, x) in &want {
                l1 += (x - got.get(e).copied().unwrap_or(0.0)).abs();
            }
            let settled: f64 = got.values().sum();
            prop_assert!((l1 - (1.0 - settled)).abs() < 1e-8, "l1 {} vs unsettled {}", l1, 1.0 - settled);
            let t = c.tenant[anchors[0] as usize];
            let degrees: f64 = (0..g.n_entities() as u32)
                .filter(|&e| c.tenant[e as usize] == t)
                .map(|e| (g.out_range(e).len() + g.in_range(e).len()).max(1) as f64)
                .sum();
            prop_assert!(l1 <= eps * degrees + 1e-9, "l1 {} > bound {}", l1, eps * degrees);
            if eps < 1e-12 {
                prop_assert!(l1 < 1e-8, "tiny epsilon, l1 {}", l1);
            }
            // Chunk scores follow the entity scores as in exact mode.
            let ch = push.chunk_offsets[0]..push.chunk_offsets[1];
            let mut acc: FxHashMap<u32, f64> = FxHashMap::default();
            for (e, s) in &got {
                for i in g.mention_range(*e) {
                    *acc.entry(g.mention_chunk[i]).or_insert(0.0) += s;
                }
            }
            prop_assert_eq!(ch.len(), acc.len());
            for (k, s) in push.chunks[ch.clone()].iter().zip(&push.chunk_scores[ch]) {
                prop_assert!((acc[k] - s).abs() < 1e-12);
            }
        }

        /// `top` orders by score descending then id ascending, with or without a cut.
        #[test]
        fn top_orders_by_score_then_id(
            scores in proptest::collection::vec(prop_oneof![Just(0.5), Just(0.0), 0.0f64..2.0], 0..300),
            k in proptest::option::of(1usize..50),
        ) {
            let items: Vec<(u32, f64)> = scores.iter().enumerate().map(|(i, &s)| ((i * 7919 % 1000) as u32, s)).collect();
            let mut want = items.clone();
            want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            want.truncate(k.unwrap_or(usize::MAX));
            let (ids, got) = top(items, k);
            prop_assert_eq!(ids, want.iter().map(|x| x.0).collect::<Vec<_>>());
            prop_assert_eq!(got, want.iter().map(|x| x.1).collect::<Vec<_>>());
        }

        /// A batch (several rayon threads, reused buffers) equals its queries one by one.
        #[test]
        fn push_batch_equals_singles(
            c in arb_cols(),
            picks in proptest::collection::vec(0usize..1000, 1..60),
            eps in 1e-6f64..0.05,
        ) {
            let g = c.graph();
            let (anchors, ws, offsets) = batch_of(&c, &picks);
            let all = Queries { anchors: &anchors, scores: &ws, offsets: &offsets };
            let p = PprParams { epsilon: Some(eps), score_chunks: false, ..PprParams::default() };
            let batch = personalized_pagerank(&g, &all, &p)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(batch.chunks.is_empty());
            for q in 0..offsets.len() - 1 {
                let r = offsets[q]..offsets[q + 1];
                let local = [0, r.len()];
                let one = Queries { anchors: &anchors[r.clone()], scores: &ws[r], offsets: &local };
                let single = personalized_pagerank(&g, &one, &p)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let er = batch.entity_offsets[q]..batch.entity_offsets[q + 1];
                prop_assert_eq!(&batch.entities[er.clone()], &single.entities[..]);
                prop_assert_eq!(&batch.entity_scores[er], &single.entity_scores[..]);
                prop_assert_eq!(batch.iterations[q], single.iterations[0]);
            }
        }
    }

    #[test]
    fn epsilon_out_of_range_is_refused() {
        let mut c = Cols {
            tenant: vec![0; 2],
            ..Cols::default()
        };
        c.push(0, 1, 0.5);
        let g = c.graph();
        let q = Queries {
            anchors: &[0],
            scores: &[1.0],
            offsets: &[0, 1],
        };
        for eps in [0.0, -1.0, 1.0, f64::NAN, f64::INFINITY] {
            let p = PprParams {
                epsilon: Some(eps),
                ..PprParams::default()
            };
            assert!(personalized_pagerank(&g, &q, &p).is_err(), "{eps}");
        }
    }
}
