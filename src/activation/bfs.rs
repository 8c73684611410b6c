//! Capped N-hop BFS spreading activation (seeds 000, 001; seed 004 with
//! `independent_anchors`).

use rustc_hash::FxHashMap;

use super::{for_each_edge, per_query, Direction, FactFilter, Queries, EVERY_EDGE_IN_ORDER};
use crate::error::{Error, Result};
use crate::graph::{Adjacency, BaseAdj, KnowledgeGraph, OverlaidAdj, NONE};
use crate::scoring::{score_fact, FactScoreProfile};

/// How the reached facts of each query are ranked (fused into the traversal call so that a
/// query costs one FFI crossing).
#[derive(Debug, Clone)]
pub enum Rank {
    /// Keep traversal order (BFS order).
    None,
    /// Seed 000 `scoreFact`, at the `now` given to [`spread`].
    ScoreFact { profile: FactScoreProfile },
    /// Seed 004 composite: anchor match score x 1/(1+hop) x confidence.
    Composite,
}

/// Parameters of one spreading-activation call (shared by every query of the batch).
#[derive(Debug, Clone)]
pub struct SpreadParams {
    /// Number of expansion rounds; facts of the anchors are hop 0.
    pub max_hops: u32,
    /// At most this many admitted facts per expanded entity, by confidence (a prefix).
    pub per_entity_limit: Option<u32>,
    /// Seed 000 stop rule: before each hop, stop if this many facts were collected.
    /// (Checked between hops only, so a query may end with more.)
    pub max_facts: Option<u32>,
    pub direction: Direction,
    pub filter: FactFilter,
    /// Restrict the query to one tenant (every anchor must belong to it).
    pub tenant: Option<u32>,
    /// Seed 004: an independent BFS per anchor (each with its own visited set); a fact
    /// keeps its best (anchor, hop) by `score / (1 + hop)`.
    pub independent_anchors: bool,
    pub rank: Rank,
    /// Keep only the best `top_k` facts after ranking.
    pub top_k: Option<usize>,
}

impl Default for SpreadParams {
    fn default() -> Self {
        SpreadParams {
            max_hops: 2,
            per_entity_limit: None,
            max_facts: None,
            direction: Direction::Out,
            filter: FactFilter::default(),
            tenant: None,
            independent_anchors: false,
            rank: Rank::None,
            top_k: None,
        }
    }
}

/// Upper bound on hops: more is never useful on a knowledge graph and only risks a
/// runaway traversal.
pub const MAX_HOPS: u32 = 64;

impl SpreadParams {
    pub fn validate(&self, g: &KnowledgeGraph) -> Result<()> {
        if self.max_hops > MAX_HOPS {
            return Err(Error::param(
                "max_hops",
                format!("{} exceeds the limit of {MAX_HOPS}", self.max_hops),
            ));
        }
        if self.top_k == Some(0) {
            return Err(Error::param("top_k", "must be at least 1 (or None)"));
        }
        if let Rank::ScoreFact { profile, .. } = &self.rank {
            profile.validate()?;
        }
        self.filter.validate(g)
    }
}

/// Everything one query reached.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryActivation {
    /// Reached facts (fact ids), in BFS order or ranked.
    pub facts: Vec<u32>,
    /// Hop at which the fact was collected (0 = a fact of an anchor).
    pub hops: Vec<u32>,
    /// Entity index of the anchor the fact's path starts from.
    pub anchors: Vec<u32>,
    /// The fact through which the expanded entity was reached (NONE at hop 0).
    pub parents: Vec<u32>,
    /// The expanded entity the fact was walked from.
    pub via: Vec<u32>,
    /// Ranking score (empty when `Rank::None`).
    pub scores: Vec<f64>,
    /// Reached entities: anchors (hop 0) and the far ends of reached facts.
    pub entities: Vec<u32>,
    pub entity_hops: Vec<u32>,
    /// Strongest relation strength among the facts reaching the entity at its hop
    /// (0 for anchors).
    pub entity_strengths: Vec<f32>,
    pub entity_anchors: Vec<u32>,
    /// The fact that reached the entity (the strongest at its hop; NONE for anchors).
    pub entity_parents: Vec<u32>,
}

/// A batch of activations, concatenated; query `q` owns `fact_offsets[q]..fact_offsets[q+1]`
/// and `entity_offsets[q]..entity_offsets[q+1]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Activation {
    pub fact_offsets: Vec<usize>,
    pub entity_offsets: Vec<usize>,
    pub all: QueryActivation,
    /// Whether facts were ranked (then `all.scores` aligns with `all.facts`).
    pub ranked: bool,
}

struct EntityRec {
    idx: usize,
    /// Larger is better (shared mode: -hop; independent mode: score / (1 + hop)).
    key: f64,
    hop: u32,
    /// Shared mode: already expanded (seed 000's `visited`).
    expanded: bool,
}

/// Per-thread buffers, kept between calls: a small query should not pay for allocating and
/// growing its hash maps every time.
#[derive(Default)]
struct Scratch {
    entity_index: FxHashMap<u32, EntityRec>,
    fact_index: FxHashMap<u32, usize>,
    fact_keys: Vec<f64>,
    dist: FxHashMap<u32, u32>,
    anchor_score: FxHashMap<u32, f64>,
    frontier: Vec<(u32, u32, u32)>,
    next: Vec<(u32, u32, u32)>,
    order: Vec<u128>,
    tmp_u32: Vec<u32>,
    scores: Vec<f64>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Option<Scratch>> = const { std::cell::RefCell::new(None) };
}

/// Buffers larger than this are not kept after a call (a huge query should not pin memory).
const KEEP_CAPACITY: usize = 1 << 16;

impl Scratch {
    fn take() -> Scratch {
        SCRATCH
            .try_with(|s| s.borrow_mut().take())
            .ok()
            .flatten()
            .unwrap_or_else(|| {
                let mut s = Scratch::default();
                s.entity_index.reserve(128);
                s.anchor_score.reserve(8);
                s
            })
    }

    fn give_back(self) {
        let small = self.entity_index.capacity() <= KEEP_CAPACITY
            && self.fact_index.capacity() <= KEEP_CAPACITY
            && self.dist.capacity() <= KEEP_CAPACITY
            && self.order.capacity() <= KEEP_CAPACITY;
        if small {
            let _ = SCRATCH.try_with(|s| *s.borrow_mut() = Some(self));
        }
    }
}

/// Collects the activations of a chunk of queries into one set of flat vectors, reusing its
/// maps and buffers from query to query (allocation, not traversal, dominates small queries).
struct Collector<'g> {
    g: &'g KnowledgeGraph,
    out: QueryActivation,
    fact_offsets: Vec<usize>,
    entity_offsets: Vec<usize>,
    /// First fact / entity of the current query in `out`.
    f0: usize,
    entity_index: FxHashMap<u32, EntityRec>,
    /// Fact position -> index in `out` (to dedupe facts reached twice).
    fact_index: FxHashMap<u32, usize>,
    fact_keys: Vec<f64>,
    dedupe: bool,
    dist: FxHashMap<u32, u32>,
    anchor_score: FxHashMap<u32, f64>,
    frontier: Vec<(u32, u32, u32)>,
    next: Vec<(u32, u32, u32)>,
    order: Vec<u128>,
    tmp_u32: Vec<u32>,
    scores: Vec<f64>,
    /// Sink of [`touch`]'s loads, so that they are not optimised away.
    warm: u32,
}

impl<'g> Collector<'g> {
    fn new(g: &'g KnowledgeGraph, n_queries: usize) -> Self {
        let mut fact_offsets = Vec::with_capacity(n_queries + 1);
        fact_offsets.push(0);
        let mut entity_offsets = Vec::with_capacity(n_queries + 1);
        entity_offsets.push(0);
        let cap = 64 * n_queries.min(64);
        let sc = Scratch::take();
        Collector {
            g,
            out: QueryActivation {
                facts: Vec::with_capacity(cap),
                hops: Vec::with_capacity(cap),
                anchors: Vec::with_capacity(cap),
                parents: Vec::with_capacity(cap),
                via: Vec::with_capacity(cap),
                scores: Vec::new(),
                entities: Vec::with_capacity(cap),
                entity_hops: Vec::with_capacity(cap),
                entity_strengths: Vec::with_capacity(cap),
                entity_anchors: Vec::with_capacity(cap),
                entity_parents: Vec::with_capacity(cap),
            },
            fact_offsets,
            entity_offsets,
            f0: 0,
            entity_index: sc.entity_index,
            fact_index: sc.fact_index,
            fact_keys: sc.fact_keys,
            dedupe: true,
            dist: sc.dist,
            anchor_score: sc.anchor_score,
            frontier: sc.frontier,
            next: sc.next,
            order: sc.order,
            tmp_u32: sc.tmp_u32,
            scores: sc.scores,
            warm: 0,
        }
    }

    /// Hand the results out and the buffers back to the thread.
    fn finish(self) -> (QueryActivation, Vec<usize>, Vec<usize>) {
        std::hint::black_box(self.warm);
        Scratch {
            entity_index: self.entity_index,
            fact_index: self.fact_index,
            fact_keys: self.fact_keys,
            dist: self.dist,
            anchor_score: self.anchor_score,
            frontier: self.frontier,
            next: self.next,
            order: self.order,
            tmp_u32: self.tmp_u32,
            scores: self.scores,
        }
        .give_back();
        (self.out, self.fact_offsets, self.entity_offsets)
    }

    /// Number of facts collected by the current query so far.
    #[inline]
    fn n_facts(&self) -> usize {
        self.out.facts.len() - self.f0
    }

    /// Record an entity reached at `hop` from `anchor` via fact position `parent`.
    fn entity(&mut self, e: u32, key: f64, hop: u32, anchor: u32, parent: u32, strength: f32) {
        let out = &mut self.out;
        let parent_fact = if parent == NONE {
            NONE
        } else {
            self.g.rec[parent as usize].fact
        };
        match self.entity_index.get_mut(&e) {
            None => {
                self.entity_index.insert(
                    e,
                    EntityRec {
                        idx: out.entities.len(),
                        key,
                        hop,
                        expanded: false,
                    },
                );
                out.entities.push(e);
                out.entity_hops.push(hop);
                out.entity_strengths.push(strength);
                out.entity_anchors.push(anchor);
                out.entity_parents.push(parent_fact);
            }
            Some(rec) => {
                let i = rec.idx;
                let better = key > rec.key
                    || (key == rec.key && hop == rec.hop && strength > out.entity_strengths[i]);
                if better {
                    rec.key = key;
                    rec.hop = hop;
                    out.entity_hops[i] = hop;
                    out.entity_strengths[i] = strength;
                    out.entity_anchors[i] = anchor;
                    out.entity_parents[i] = parent_fact;
                }
            }
        }
    }

    /// Record a fact (as a position until the query ends); returns false if it was already
    /// collected (keeping the better key).
    fn fact(&mut self, pos: usize, key: f64, hop: u32, anchor: u32, parent: u32, via: u32) -> bool {
        let parent_fact = if parent == NONE {
            NONE
        } else {
            self.g.rec[parent as usize].fact
        };
        let out = &mut self.out;
        if self.dedupe {
            if let Some(&i) = self.fact_index.get(&(pos as u32)) {
                if key > self.fact_keys[i - self.f0] {
                    self.fact_keys[i - self.f0] = key;
                    out.hops[i] = hop;
                    out.anchors[i] = anchor;
                    out.parents[i] = parent_fact;
                    out.via[i] = via;
                }
                return false;
            }
            self.fact_index.insert(pos as u32, out.facts.len());
            self.fact_keys.push(key);
        }
        out.facts.push(pos as u32);
        out.hops.push(hop);
        out.anchors.push(anchor);
        out.parents.push(parent_fact);
        out.via.push(via);
        true
    }

    fn begin(&mut self, anchors: &[u32], scores: &[f64], dedupe: bool) {
        self.f0 = self.out.facts.len();
        self.entity_index.clear();
        self.fact_index.clear();
        self.fact_keys.clear();
        self.dedupe = dedupe;
        self.anchor_score.clear();
        for (&a, &s) in anchors.iter().zip(scores) {
            let e = self.anchor_score.entry(a).or_insert(s);
            *e = e.max(s);
        }
    }

    /// Rank and cut the current query's facts, translate positions to fact ids, close the
    /// query's offsets.
    fn end(&mut self, p: &SpreadParams, now: i64) {
        let g = self.g;
        let f0 = self.f0;
        let out = &mut self.out;
        let ranked = !matches!(p.rank, Rank::None);
        if ranked {
            self.scores.clear();
            match &p.rank {
                Rank::None => {}
                Rank::ScoreFact { profile } => {
                    self.scores.extend(out.facts[f0..].iter().map(|&pos| {
                        let r = &g.rec[pos as usize];
                        score_fact(
                            r.confidence,
                            r.source,
                            r.status,
                            r.last_accessed,
                            r.access_count,
                            now,
                            profile,
                        )
                    }));
                }
                Rank::Composite => {
                    let anchor_score = &self.anchor_score;
                    self.scores.extend(
                        out.facts[f0..]
                            .iter()
                            .zip(out.hops[f0..].iter().zip(&out.anchors[f0..]))
                            .map(|(&pos, (&hop, a))| {
                                let s = anchor_score.get(a).copied().unwrap_or(0.0);
                                // Seed 004: match x 1/(1+hop) x confidence, in that order.
                                s * (1.0 / (1.0 + f64::from(hop)))
                                    * f64::from(g.rec[pos as usize].confidence)
                                    + 0.0
                            }),
                    );
                }
            }
        }
        for f in out.facts[f0..].iter_mut() {
            *f = g.rec[*f as usize].fact;
        }
        if ranked {
            // One u128 key per fact (score descending, then fact id, then slot): integer
            // comparisons sort several times faster than float comparator closures.
            self.order.clear();
            self.order
                .extend(self.scores.iter().zip(&out.facts[f0..]).enumerate().map(
                    |(i, (&s, &f))| {
                        (u128::from(!total_order_key(s)) << 64) | (u128::from(f) << 32) | i as u128
                    },
                ));
            self.order.sort_unstable();
            if let Some(k) = p.top_k {
                self.order.truncate(k);
            }
            let keep = self.order.len();
            let tmp = &mut self.tmp_u32;
            let order = &self.order;
            for col in [
                &mut out.hops,
                &mut out.anchors,
                &mut out.parents,
                &mut out.via,
            ] {
                tmp.clear();
                tmp.extend(order.iter().map(|&o| col[f0 + (o as u32) as usize]));
                col.truncate(f0);
                col.extend_from_slice(tmp);
            }
            out.facts.truncate(f0);
            out.facts.extend(order.iter().map(|&o| (o >> 32) as u32));
            out.scores
                .extend(order.iter().map(|&o| self.scores[(o as u32) as usize]));
            debug_assert_eq!(out.facts.len(), f0 + keep);
        } else if let Some(k) = p.top_k {
            let end = (f0 + k).min(out.facts.len());
            out.facts.truncate(end);
            out.hops.truncate(end);
            out.anchors.truncate(end);
            out.parents.truncate(end);
            out.via.truncate(end);
        }
        self.fact_offsets.push(out.facts.len());
        self.entity_offsets.push(out.entities.len());
    }
}

/// Read the first fact records of every frontier entity up front. The loads are
/// independent, so the CPU overlaps their cache misses instead of paying them one entity
/// at a time inside the dependent traversal loop (a prefetch without `unsafe`).
#[inline]
fn touch<'a>(
    g: impl Adjacency<'a>,
    entities: impl Iterator<Item = u32>,
    direction: Direction,
) -> u32 {
    let mut acc = 0u32;
    for e in entities {
        if direction != Direction::In {
            let mut r = g.out_range(e);
            if let Some(p) = r.next() {
                acc = acc.wrapping_add(g.rec(p).object);
                if let Some(p) = r.nth(1) {
                    acc = acc.wrapping_add(g.rec(p).object);
                }
            }
        }
        if direction != Direction::Out {
            if let Some(i) = g.in_range(e).next() {
                acc = acc.wrapping_add(g.in_pos(i));
            }
        }
    }
    acc
}

/// A u64 whose unsigned order is `f64::total_cmp`'s order.
#[inline]
pub(crate) fn total_order_key(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

/// Seed 000 / 001 traversal: one BFS from all anchors with a shared visited set.
fn spread_shared<'a>(
    g: impl Adjacency<'a>,
    anchors: &[u32],
    p: &SpreadParams,
    c: &mut Collector<'_>,
) {
    let limit = p
        .per_entity_limit
        .map_or(EVERY_EDGE_IN_ORDER, |l| l as usize);
    let mut frontier = std::mem::take(&mut c.frontier);
    let mut next = std::mem::take(&mut c.next);
    frontier.clear();
    for &a in anchors {
        c.entity(a, 0.0, 0, a, NONE, 0.0);
        frontier.push((a, a, NONE));
    }
    for hop in 0..p.max_hops {
        if p.max_facts.is_some_and(|m| c.n_facts() >= m as usize) {
            break;
        }
        next.clear();
        c.warm ^= touch(g, frontier.iter().map(|f| f.0), p.direction);
        for &(e, anchor, parent_pos) in &frontier {
            // Every frontier entity has a record; the flag is seed 000's `visited` set.
            match c.entity_index.get_mut(&e) {
                Some(r) if !r.expanded => r.expanded = true,
                _ => continue,
            }
            // The first path that reached `e` (frontier order) is the one it is expanded on.
            for_each_edge(g, e, p.direction, &p.filter, limit, |pos, other| {
                let fresh = c.fact(pos, 0.0, hop, anchor, parent_pos, e);
                if fresh && other != NONE {
                    c.entity(
                        other,
                        -f64::from(hop + 1),
                        hop + 1,
                        anchor,
                        pos as u32,
                        g.rec(pos).strength,
                    );
                    next.push((other, anchor, pos as u32));
                }
                true
            });
        }
        std::mem::swap(&mut frontier, &mut next);
    }
    c.frontier = frontier;
    c.next = next;
}

/// Seed 004 traversal: an independent BFS per anchor; every fact and entity keeps its best
/// (anchor, hop) by `score / (1 + hop)`.
fn spread_independent<'a>(
    g: impl Adjacency<'a>,
    anchors: &[u32],
    scores: &[f64],
    p: &SpreadParams,
    c: &mut Collector<'_>,
) {
    let limit = p
        .per_entity_limit
        .map_or(EVERY_EDGE_IN_ORDER, |l| l as usize);
    let mut dist = std::mem::take(&mut c.dist);
    let mut frontier = std::mem::take(&mut c.frontier);
    let mut next = std::mem::take(&mut c.next);
    for (&a, &s) in anchors.iter().zip(scores) {
        dist.clear();
        dist.insert(a, 0);
        frontier.clear();
        frontier.push((a, a, NONE));
        c.entity(a, s, 0, a, NONE, 0.0);
        let mut collected = 0usize; // the stop rule applies to each anchor's own BFS
        for hop in 0..p.max_hops {
            if p.max_facts.is_some_and(|m| collected >= m as usize) {
                break;
            }
            let key = s * (1.0 / (1.0 + f64::from(hop)));
            let next_key = s * (1.0 / (1.0 + f64::from(hop + 1)));
            next.clear();
            for &(e, _, parent) in &frontier {
                for_each_edge(g, e, p.direction, &p.filter, limit, |pos, other| {
                    collected += 1;
                    c.fact(pos, key, hop, a, parent, e);
                    if other != NONE {
                        let d = *dist.entry(other).or_insert_with(|| {
                            next.push((other, a, pos as u32));
                            hop + 1
                        });
                        if d == hop + 1 {
                            c.entity(other, next_key, hop + 1, a, pos as u32, g.rec(pos).strength);
                        }
                    }
                    true
                });
            }
            std::mem::swap(&mut frontier, &mut next);
        }
    }
    c.dist = dist;
    c.frontier = frontier;
    c.next = next;
}

/// One query's walk, with the adjacency reads of `g`.
fn traverse<'a>(
    g: impl Adjacency<'a>,
    anchors: &[u32],
    scores: &[f64],
    p: &SpreadParams,
    c: &mut Collector<'_>,
) {
    if p.independent_anchors {
        spread_independent(g, anchors, scores, p, c);
    } else {
        spread_shared(g, anchors, p, c);
    }
}

/// Queries per rayon task: large enough to amortise the collector, small enough to balance.
const CHUNK: usize = 32;

/// Spreading activation for a batch of queries; `now` (seconds) is the time scores are
/// computed at (unused unless ranking by `scoreFact`).
///
/// # Errors
/// Invalid parameters, anchors outside the graph or across tenants, unknown tenant.
///
/// # Examples
/// Two hops out from entity 0 along `0 -> 1 -> 2` reach both facts:
/// ```
/// use graphrecall::activation::{spread, Queries, SpreadParams};
/// use graphrecall::graph::{GraphInput, KnowledgeGraph};
///
/// let g = KnowledgeGraph::build(&GraphInput {
///     entity_tenant: &[0, 0, 0],
///     fact_subject: &[0, 1],
///     fact_object: &[1, 2],
///     fact_predicate: &[0, 0],
///     fact_confidence: &[0.9, 0.8],
///     fact_strength: &[1.0, 1.0],
///     fact_status: &[1, 1],
///     fact_source: &[0, 0],
///     fact_access_count: &[0, 0],
///     n_predicates: 1,
///     n_statuses: 4,
///     n_sources: 4,
///     ..GraphInput::default()
/// })?;
/// let queries = Queries { anchors: &[0], scores: &[1.0], offsets: &[0, 1] };
/// let params = SpreadParams { max_hops: 2, ..SpreadParams::default() };
/// let act = spread(&g, &queries, &params, 0)?;
/// assert_eq!(act.fact_offsets, vec![0, 2]);
/// assert_eq!(act.all.facts, vec![0, 1]);
/// assert_eq!(act.all.hops, vec![0, 1]);
/// # Ok::<(), graphrecall::Error>(())
/// ```
pub fn spread(
    g: &KnowledgeGraph,
    queries: &Queries<'_>,
    p: &SpreadParams,
    now: i64,
) -> Result<Activation> {
    p.validate(g)?;
    queries.validate(g, p.tenant)?;
    let n = queries.len();
    let chunks = per_query(n.div_ceil(CHUNK), |k| {
        let range = k * CHUNK..((k + 1) * CHUNK).min(n);
        let mut c = Collector::new(g, range.len());
        for q in range {
            let (anchors, scores) = queries.query(q);
            // A fact has one subject and one object, so only a walk in both directions (or
            // several independent walks) can reach it twice; skip the dedupe map otherwise.
            let dedupe = p.independent_anchors || p.direction == Direction::Both;
            c.begin(anchors, scores, dedupe);
            // Plain slices for a graph with no overlay; the overlay-aware reads otherwise.
            match (BaseAdj::of(g), g.ov.as_deref()) {
                (Some(b), _) => traverse(b, anchors, scores, p, &mut c),
                (None, Some(ov)) => traverse(OverlaidAdj::of(g, ov), anchors, scores, p, &mut c),
                (None, None) => traverse(g, anchors, scores, p, &mut c),
            }
            c.end(p, now);
        }
        c.finish()
    });
    let mut act = concat(chunks);
    act.ranked = !matches!(p.rank, Rank::None);
    Ok(act)
}

/// Concatenate per-chunk results (each with its own offsets starting at 0).
fn concat(chunks: Vec<(QueryActivation, Vec<usize>, Vec<usize>)>) -> Activation {
    let mut chunks = chunks;
    if chunks.len() == 1 {
        if let Some((all, fact_offsets, entity_offsets)) = chunks.pop() {
            return Activation {
                fact_offsets,
                entity_offsets,
                all,
                ranked: false,
            };
        }
    }
    let mut act = Activation {
        fact_offsets: vec![0],
        entity_offsets: vec![0],
        all: QueryActivation::default(),
        ranked: false,
    };
    let a = &mut act.all;
    for (r, fo, eo) in chunks {
        let (fbase, ebase) = (a.facts.len(), a.entities.len());
        act.fact_offsets.extend(fo[1..].iter().map(|o| o + fbase));
        act.entity_offsets.extend(eo[1..].iter().map(|o| o + ebase));
        a.facts.extend_from_slice(&r.facts);
        a.hops.extend_from_slice(&r.hops);
        a.anchors.extend_from_slice(&r.anchors);
        a.parents.extend_from_slice(&r.parents);
        a.via.extend_from_slice(&r.via);
        a.scores.extend_from_slice(&r.scores);
        a.entities.extend_from_slice(&r.entities);
        a.entity_hops.extend_from_slice(&r.entity_hops);
        a.entity_strengths.extend_from_slice(&r.entity_strengths);
        a.entity_anchors.extend_from_slice(&r.entity_anchors);
        a.entity_parents.extend_from_slice(&r.entity_parents);
    }
    act
}
