//! Seed 004 graph recall, fused: per-anchor BFS, composite score
//! `match x 1/(1+hop) x confidence`, dedupe, top-k, in one pass with pruning.
//!
//! Closed form (WORKLOADS.md): with `g(x) = max over anchors a with d_a(x) < max_hops of
//! s_a / (1 + d_a(x))`, an edge's composite is `max over its walkable endpoints x of g(x) *
//! confidence`. Adjacency lists are sorted by confidence, so entities are visited in
//! decreasing `g` and each list is cut as soon as `g * confidence` falls below the current
//! k-th best: most edges of a 2-hop neighbourhood are never touched.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use rustc_hash::{FxHashMap, FxHashSet};

use super::bfs::total_order_key;
use super::{for_each_edge, per_query, Direction, FactFilter, Queries};
use crate::error::{Error, Result};
use crate::graph::{Adjacency, BaseAdj, KnowledgeGraph, OverlaidAdj, NONE};

/// Which duplicates are removed before the top-k cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dedupe {
    /// One entry per fact (WORKLOADS W4).
    Fact,
    /// One entry per (subject, object, predicate), keeping the best (seed 004's "same
    /// source + target + relation").
    Triple,
}

#[derive(Debug, Clone)]
pub struct RecallParams {
    pub max_hops: u32,
    pub direction: Direction,
    pub filter: FactFilter,
    pub tenant: Option<u32>,
    pub top_k: usize,
    pub dedupe: Dedupe,
}

impl Default for RecallParams {
    fn default() -> Self {
        RecallParams {
            max_hops: 2,
            direction: Direction::Both,
            filter: FactFilter::default(),
            tenant: None,
            top_k: 20,
            dedupe: Dedupe::Fact,
        }
    }
}

/// Ranked edges per query, concatenated (`offsets` per query).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recall {
    pub offsets: Vec<usize>,
    pub facts: Vec<u32>,
    pub scores: Vec<f64>,
    /// BFS distance of the endpoint the edge was scored from (0 = an anchor).
    pub hops: Vec<u32>,
    /// The anchor (entity) whose BFS gave the best score.
    pub anchors: Vec<u32>,
    /// The endpoint the edge was scored from.
    pub via: Vec<u32>,
}

#[derive(Clone, Copy)]
struct Hit {
    score: f64,
    fact: u32,
    hop: u32,
    anchor: u32,
    via: u32,
}

// Heap order: "greater" = worse, so the heap's top is the current k-th best.
impl PartialEq for Hit {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Hit {}
impl PartialOrd for Hit {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Hit {
    fn cmp(&self, o: &Self) -> Ordering {
        o.score.total_cmp(&self.score).then(self.fact.cmp(&o.fact))
    }
}

#[derive(Clone, Copy)]
struct Reach {
    g: f64,
    hop: u32,
    anchor: u32,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Option<Scratch>> = const { std::cell::RefCell::new(None) };
}

/// Buffers reused from query to query (and call to call) on a thread.
#[derive(Default)]
struct Scratch {
    reach: FxHashMap<u32, Reach>,
    dist: FxHashMap<u32, u32>,
    frontier: Vec<u32>,
    next: Vec<u32>,
    order: Vec<(u32, Reach)>,
    heap: Vec<Hit>,
}

/// `g(x)` for every entity that gets expanded (distance < max_hops from some anchor), into
/// `sc.reach`.
fn expanded_entities<'a>(
    graph: impl Adjacency<'a>,
    anchors: &[u32],
    scores: &[f64],
    p: &RecallParams,
    sc: &mut Scratch,
) {
    let Scratch {
        reach,
        dist,
        frontier,
        next,
        ..
    } = sc;
    reach.clear();
    if p.max_hops == 0 {
        return;
    }
    for (&a, &s) in anchors.iter().zip(scores) {
        dist.clear();
        dist.insert(a, 0);
        frontier.clear();
        frontier.push(a);
        let mut offer = |x: u32, hop: u32| {
            let g = s * (1.0 / (1.0 + f64::from(hop)));
            let r = reach.entry(x).or_insert(Reach {
                g: f64::NEG_INFINITY,
                hop,
                anchor: a,
            });
            if g > r.g {
                *r = Reach { g, hop, anchor: a };
            }
        };
        offer(a, 0);
        // Levels 1..max_hops-1 are expanded too; finding them walks levels 0..max_hops-2.
        for hop in 0..p.max_hops.saturating_sub(1) {
            next.clear();
            for &e in frontier.iter() {
                for_each_edge(graph, e, p.direction, &p.filter, usize::MAX, |_, other| {
                    if other != NONE && !dist.contains_key(&other) {
                        dist.insert(other, hop + 1);
                        next.push(other);
                    }
                    true
                });
            }
            for &x in next.iter() {
                offer(x, hop + 1);
            }
            std::mem::swap(frontier, next);
        }
    }
}

fn recall_one<'a>(
    g: impl Adjacency<'a>,
    anchors: &[u32],
    scores: &[f64],
    p: &RecallParams,
    sc: &mut Scratch,
) -> Vec<Hit> {
    expanded_entities(g, anchors, scores, p, sc);
    sc.order.clear();
    sc.order.extend(sc.reach.iter().map(|(&x, &r)| (x, r)));
    if p.dedupe == Dedupe::Fact {
        // Only g decides when the walk may stop, and g takes a handful of values (one per
        // anchor and hop): sorting by g alone is near-linear even around a hub. Which end
        // an edge is scored from is decided by (g desc, entity asc) below, not by order.
        sc.order.sort_unstable_by(|a, b| b.1.g.total_cmp(&a.1.g));
    } else {
        sc.order
            .sort_unstable_by(|a, b| b.1.g.total_cmp(&a.1.g).then(a.0.cmp(&b.0)));
    }
    let mut heap_buf = std::mem::take(&mut sc.heap);
    let reach = &sc.reach;
    let order = &sc.order;
    let both = p.direction == Direction::Both;

    match p.dedupe {
        Dedupe::Fact => {
            let k = p.top_k;
            heap_buf.clear();
            let mut heap: BinaryHeap<Hit> = BinaryHeap::from(heap_buf);
            for &(x, r) in order.iter() {
                if heap.len() >= k {
                    if let Some(worst) = heap.peek() {
                        // Confidence is in [0, 1], so g * confidence <= max(g, 0), and g only
                        // decreases from here on: nothing later can enter.
                        if r.g.max(0.0) < worst.score {
                            break;
                        }
                    }
                }
                let mut visit = |pos: usize, other: u32| -> bool {
                    if other == NONE {
                        return true; // edges only: literal facts have no far end
                    }
                    // `+ 0.0` turns -0.0 into 0.0 so that ties compare equal.
                    let score = r.g * f64::from(g.rec(pos).confidence) + 0.0;
                    if heap.len() >= k {
                        if let Some(worst) = heap.peek() {
                            if score < worst.score {
                                // Sorted by confidence: for g >= 0 the rest is no better.
                                return r.g < 0.0;
                            }
                        }
                    }
                    if both && other != x {
                        if let Some(o) = reach.get(&other) {
                            // Scored from the other end: the larger g, ties to the smaller
                            // entity. That end comes no later in `order` (same or larger g),
                            // and a bucket of equal g is walked whole or not at all.
                            if o.g > r.g || (o.g == r.g && other < x) {
                                return true;
                            }
                        }
                    }
                    let hit = Hit {
                        score,
                        fact: g.rec(pos).fact,
                        hop: r.hop,
                        anchor: r.anchor,
                        via: x,
                    };
                    if heap.len() < k {
                        heap.push(hit);
                    } else if let Some(mut worst) = heap.peek_mut() {
                        if hit < *worst {
                            *worst = hit;
                        }
                    }
                    true
                };
                walk_sorted(g, x, p.direction, &p.filter, &mut visit);
            }
            heap.into_sorted_vec()
        }
        Dedupe::Triple => {
            // Candidates are pruned as in the fact mode, against a lower bound of the k-th
            // best distinct triple: `floor` holds the first score seen of each new triple
            // (never above that triple's best), so its k-th largest can only under-estimate
            // the cut, and whatever falls below it cannot reach the top k. The result is
            // the unpruned rule's: every hit sorted, the best per triple, the first k.
            let k = p.top_k;
            let mut hits: Vec<Hit> = Vec::new();
            let mut seen: FxHashSet<u32> = FxHashSet::default();
            let mut triples: FxHashSet<(u32, u32, u16)> = FxHashSet::default();
            let mut floor: BinaryHeap<Reverse<u64>> = BinaryHeap::with_capacity(k.min(1024));
            for &(x, r) in order.iter() {
                if floor.len() >= k {
                    if let Some(Reverse(min)) = floor.peek() {
                        if total_order_key(r.g.max(0.0)) < *min {
                            break;
                        }
                    }
                }
                let mut visit = |pos: usize, other: u32| -> bool {
                    if other == NONE {
                        return true;
                    }
                    let rec = &g.rec(pos);
                    let score = r.g * f64::from(rec.confidence) + 0.0;
                    let key = total_order_key(score);
                    if floor.len() >= k {
                        if let Some(Reverse(min)) = floor.peek() {
                            if key < *min {
                                // Sorted by confidence: for g >= 0 the rest is no better.
                                return r.g < 0.0;
                            }
                        }
                    }
                    // The first visit of an edge is its best (entities come by g desc).
                    if !seen.insert(pos as u32) {
                        return true;
                    }
                    // An out-edge's far end is its object; an in-edge's is its subject
                    // (in-side self-loops are not walked).
                    let subject = if rec.object == other { x } else { other };
                    hits.push(Hit {
                        score,
                        fact: rec.fact,
                        hop: r.hop,
                        anchor: r.anchor,
                        via: x,
                    });
                    if triples.insert((subject, rec.object, rec.predicate)) {
                        floor.push(Reverse(key));
                        if floor.len() > k {
                            floor.pop();
                        }
                    }
                    true
                };
                walk_sorted(g, x, p.direction, &p.filter, &mut visit);
            }
            hits.sort_unstable();
            triples.clear();
            let mut out = Vec::with_capacity(p.top_k.min(hits.len()));
            for h in hits {
                let pos = g.graph().pos_of(h.fact) as u32;
                let key = (
                    g.graph().subject_at(pos),
                    g.rec(pos as usize).object,
                    g.rec(pos as usize).predicate,
                );
                if triples.insert(key) {
                    out.push(h);
                    if out.len() == p.top_k {
                        break;
                    }
                }
            }
            out
        }
    }
}

/// Walk `x`'s admitted edges with early exit; the out and in lists are each sorted by
/// confidence, so each is cut independently when `visit` says the rest cannot score.
fn walk_sorted<'a>(
    g: impl Adjacency<'a>,
    x: u32,
    direction: Direction,
    filter: &FactFilter,
    visit: &mut impl FnMut(usize, u32) -> bool,
) {
    if matches!(direction, Direction::Out | Direction::Both) {
        for pos in g.out_range(x) {
            if filter.admits(g, pos) && !visit(pos, g.rec(pos).object) {
                break;
            }
        }
    }
    if matches!(direction, Direction::In | Direction::Both) {
        for i in g.in_range(x) {
            let pos = g.in_pos(i) as usize;
            let other = g.in_subject(i);
            if direction == Direction::Both && other == x {
                continue; // a self-loop was already walked from the out side
            }
            if filter.admits(g, pos) && !visit(pos, other) {
                break;
            }
        }
    }
}

/// Seed 004 graph recall for a batch of queries (anchor scores are the match scores).
///
/// # Errors
/// Invalid parameters, anchors outside the graph or across tenants, unknown tenant.
pub fn graph_recall(g: &KnowledgeGraph, queries: &Queries<'_>, p: &RecallParams) -> Result<Recall> {
    if p.top_k == 0 {
        return Err(Error::param("top_k", "must be at least 1"));
    }
    if p.max_hops > super::bfs::MAX_HOPS {
        return Err(Error::param(
            "max_hops",
            format!(
                "{} exceeds the limit of {}",
                p.max_hops,
                super::bfs::MAX_HOPS
            ),
        ));
    }
    p.filter.validate(g)?;
    queries.validate(g, p.tenant)?;
    const CHUNK: usize = 32;
    let n = queries.len();
    let per = per_query(n.div_ceil(CHUNK), |c| {
        let mut sc = SCRATCH
            .try_with(|s| s.borrow_mut().take())
            .ok()
            .flatten()
            .unwrap_or_default();
        let out = (c * CHUNK..((c + 1) * CHUNK).min(n))
            .map(|q| {
                let (anchors, scores) = queries.query(q);
                // Plain slices for a graph with no overlay; overlay-aware reads otherwise.
                match (BaseAdj::of(g), g.ov.as_deref()) {
                    (Some(b), _) => recall_one(b, anchors, scores, p, &mut sc),
                    (None, Some(ov)) => {
                        recall_one(OverlaidAdj::of(g, ov), anchors, scores, p, &mut sc)
                    }
                    (None, None) => recall_one(g, anchors, scores, p, &mut sc),
                }
            })
            .collect::<Vec<_>>();
        // Keep the buffers for the thread's next call unless a huge query inflated them.
        if sc.reach.capacity() <= 1 << 16 && sc.dist.capacity() <= 1 << 16 {
            let _ = SCRATCH.try_with(|s| *s.borrow_mut() = Some(sc));
        }
        out
    });
    let total: usize = per.iter().flatten().map(Vec::len).sum();
    let mut out = Recall {
        offsets: Vec::with_capacity(n + 1),
        facts: Vec::with_capacity(total),
        scores: Vec::with_capacity(total),
        hops: Vec::with_capacity(total),
        anchors: Vec::with_capacity(total),
        via: Vec::with_capacity(total),
    };
    out.offsets.push(0);
    for hits in per.into_iter().flatten() {
        for h in hits {
            out.facts.push(h.fact);
            out.scores.push(h.score);
            out.hops.push(h.hop);
            out.anchors.push(h.anchor);
            out.via.push(h.via);
        }
        out.offsets.push(out.facts.len());
    }
    Ok(out)
}
