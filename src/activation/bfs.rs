//! Capped N-hop BFS spreading activation (seeds 000, 001; seed 004 with
//! `independent_anchors`).

use rustc_hash::{FxHashMap, FxHashSet};

use super::{for_each_edge, per_query, Direction, FactFilter, Queries};
use crate::error::{Error, Result};
use crate::graph::{KnowledgeGraph, NONE};
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
}

struct EntityRec {
    idx: usize,
    /// Larger is better (shared mode: -hop; independent mode: score / (1 + hop)).
    key: f64,
    hop: u32,
}

struct Collector<'g> {
    g: &'g KnowledgeGraph,
    out: QueryActivation,
    entity_index: FxHashMap<u32, EntityRec>,
    /// Fact position -> index in `out` (to dedupe facts reached twice).
    fact_index: FxHashMap<u32, usize>,
    fact_keys: Vec<f64>,
    dedupe: bool,
}

impl<'g> Collector<'g> {
    fn new(g: &'g KnowledgeGraph) -> Self {
        Collector {
            g,
            out: QueryActivation::default(),
            entity_index: FxHashMap::default(),
            fact_index: FxHashMap::default(),
            fact_keys: Vec::new(),
            dedupe: true,
        }
    }

    /// Record an entity reached at `hop` from `anchor` via fact position `parent`.
    fn entity(&mut self, e: u32, key: f64, hop: u32, anchor: u32, parent: u32, strength: f32) {
        let out = &mut self.out;
        let parent_fact = if parent == NONE {
            NONE
        } else {
            self.g.pos_to_fact[parent as usize]
        };
        match self.entity_index.get_mut(&e) {
            None => {
                self.entity_index.insert(
                    e,
                    EntityRec {
                        idx: out.entities.len(),
                        key,
                        hop,
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

    /// Record a fact; returns false if it was already collected (keeping the better key).
    fn fact(&mut self, pos: usize, key: f64, hop: u32, anchor: u32, parent: u32, via: u32) -> bool {
        let parent_fact = if parent == NONE {
            NONE
        } else {
            self.g.pos_to_fact[parent as usize]
        };
        let out = &mut self.out;
        if !self.dedupe {
            out.facts.push(pos as u32);
            out.hops.push(hop);
            out.anchors.push(anchor);
            out.parents.push(parent_fact);
            out.via.push(via);
            self.fact_keys.push(key);
            return true;
        }
        match self.fact_index.get(&(pos as u32)) {
            None => {
                self.fact_index.insert(pos as u32, out.facts.len());
                out.facts.push(pos as u32); // positions until `finish`
                out.hops.push(hop);
                out.anchors.push(anchor);
                out.parents.push(parent_fact);
                out.via.push(via);
                self.fact_keys.push(key);
                true
            }
            Some(&i) => {
                if key > self.fact_keys[i] {
                    self.fact_keys[i] = key;
                    out.hops[i] = hop;
                    out.anchors[i] = anchor;
                    out.parents[i] = parent_fact;
                    out.via[i] = via;
                }
                false
            }
        }
    }

    /// Rank, cut, and translate positions to fact ids.
    fn finish(
        mut self,
        anchor_score: &FxHashMap<u32, f64>,
        p: &SpreadParams,
        now: i64,
    ) -> QueryActivation {
        let g = self.g;
        let out = &mut self.out;
        let scores: Vec<f64> = match &p.rank {
            Rank::None => Vec::new(),
            Rank::ScoreFact { profile } => out
                .facts
                .iter()
                .map(|&pos| {
                    let pos = pos as usize;
                    score_fact(
                        g.confidence[pos],
                        g.source[pos],
                        g.status[pos],
                        g.last_accessed
                            .as_ref()
                            .map_or(crate::graph::NULL_TIME, |c| c[pos]),
                        g.access_count[pos],
                        now,
                        profile,
                    )
                })
                .collect(),
            Rank::Composite => out
                .facts
                .iter()
                .zip(out.hops.iter().zip(&out.anchors))
                .map(|(&pos, (&hop, a))| {
                    let s = anchor_score.get(a).copied().unwrap_or(0.0);
                    // Seed 004: match x 1/(1+hop) x confidence, in that order.
                    s * (1.0 / (1.0 + f64::from(hop))) * f64::from(g.confidence[pos as usize]) + 0.0
                })
                .collect(),
        };
        for f in out.facts.iter_mut() {
            *f = g.pos_to_fact[*f as usize];
        }
        if !scores.is_empty() {
            let mut order: Vec<usize> = (0..out.facts.len()).collect();
            let facts = &out.facts;
            order.sort_unstable_by(|&a, &b| {
                scores[b]
                    .total_cmp(&scores[a])
                    .then(facts[a].cmp(&facts[b]))
            });
            if let Some(k) = p.top_k {
                order.truncate(k);
            }
            let pick = |v: &Vec<u32>| order.iter().map(|&i| v[i]).collect::<Vec<u32>>();
            out.facts = pick(&out.facts);
            out.hops = pick(&out.hops);
            out.anchors = pick(&out.anchors);
            out.parents = pick(&out.parents);
            out.via = pick(&out.via);
            out.scores = order.iter().map(|&i| scores[i]).collect();
        } else if let Some(k) = p.top_k {
            out.facts.truncate(k);
            out.hops.truncate(k);
            out.anchors.truncate(k);
            out.parents.truncate(k);
            out.via.truncate(k);
        }
        self.out
    }
}

/// Seed 000 / 001 traversal: one BFS from all anchors with a shared visited set.
fn spread_shared(g: &KnowledgeGraph, anchors: &[u32], p: &SpreadParams, c: &mut Collector<'_>) {
    let limit = p.per_entity_limit.map_or(usize::MAX, |l| l as usize);
    // A fact has one subject and one object, so only a walk in both directions can reach
    // it twice; skip the dedupe map otherwise.
    c.dedupe = p.direction == Direction::Both;
    let mut visited: FxHashSet<u32> = FxHashSet::default();
    // (entity, anchor, parent position)
    let mut frontier: Vec<(u32, u32, u32)> = Vec::with_capacity(anchors.len());
    for &a in anchors {
        c.entity(a, 0.0, 0, a, NONE, 0.0);
        frontier.push((a, a, NONE));
    }
    let mut next: Vec<(u32, u32, u32)> = Vec::new();
    for hop in 0..p.max_hops {
        if p.max_facts.is_some_and(|m| c.out.facts.len() >= m as usize) {
            break;
        }
        next.clear();
        for &(e, anchor, parent_pos) in &frontier {
            if !visited.insert(e) {
                continue;
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
                        g.strength[pos],
                    );
                    next.push((other, anchor, pos as u32));
                }
                true
            });
        }
        std::mem::swap(&mut frontier, &mut next);
    }
}

/// Seed 004 traversal: an independent BFS per anchor; every fact and entity keeps its best
/// (anchor, hop) by `score / (1 + hop)`.
fn spread_independent(
    g: &KnowledgeGraph,
    anchors: &[u32],
    scores: &[f64],
    p: &SpreadParams,
    c: &mut Collector<'_>,
) {
    let limit = p.per_entity_limit.map_or(usize::MAX, |l| l as usize);
    let mut dist: FxHashMap<u32, u32> = FxHashMap::default();
    let mut frontier: Vec<(u32, u32)> = Vec::new();
    let mut next: Vec<(u32, u32)> = Vec::new();
    for (&a, &s) in anchors.iter().zip(scores) {
        dist.clear();
        dist.insert(a, 0);
        frontier.clear();
        frontier.push((a, NONE));
        c.entity(a, s, 0, a, NONE, 0.0);
        let mut collected = 0usize; // the stop rule applies to each anchor's own BFS
        for hop in 0..p.max_hops {
            if p.max_facts.is_some_and(|m| collected >= m as usize) {
                break;
            }
            let key = s * (1.0 / (1.0 + f64::from(hop)));
            let next_key = s * (1.0 / (1.0 + f64::from(hop + 1)));
            next.clear();
            for &(e, parent) in &frontier {
                for_each_edge(g, e, p.direction, &p.filter, limit, |pos, other| {
                    collected += 1;
                    c.fact(pos, key, hop, a, parent, e);
                    if other != NONE {
                        let d = *dist.entry(other).or_insert_with(|| {
                            next.push((other, pos as u32));
                            hop + 1
                        });
                        if d == hop + 1 {
                            c.entity(other, next_key, hop + 1, a, pos as u32, g.strength[pos]);
                        }
                    }
                    true
                });
            }
            std::mem::swap(&mut frontier, &mut next);
        }
    }
}

/// Spreading activation for a batch of queries; `now` (seconds) is the time scores are
/// computed at (unused unless ranking by `scoreFact`).
///
/// # Errors
/// Invalid parameters, anchors outside the graph or across tenants, unknown tenant.
pub fn spread(
    g: &KnowledgeGraph,
    queries: &Queries<'_>,
    p: &SpreadParams,
    now: i64,
) -> Result<Activation> {
    p.validate(g)?;
    queries.validate(g, p.tenant)?;
    let results = per_query(queries.len(), |q| {
        let (anchors, scores) = queries.query(q);
        let mut c = Collector::new(g);
        if p.independent_anchors {
            spread_independent(g, anchors, scores, p, &mut c);
        } else {
            spread_shared(g, anchors, p, &mut c);
        }
        let mut anchor_score: FxHashMap<u32, f64> = FxHashMap::default();
        for (&a, &s) in anchors.iter().zip(scores) {
            let e = anchor_score.entry(a).or_insert(s);
            *e = e.max(s);
        }
        c.finish(&anchor_score, p, now)
    });
    Ok(concat(results))
}

pub(crate) fn concat(results: Vec<QueryActivation>) -> Activation {
    let mut act = Activation {
        fact_offsets: Vec::with_capacity(results.len() + 1),
        entity_offsets: Vec::with_capacity(results.len() + 1),
        all: QueryActivation::default(),
    };
    act.fact_offsets.push(0);
    act.entity_offsets.push(0);
    if results.len() == 1 {
        let mut results = results;
        if let Some(r) = results.pop() {
            act.fact_offsets.push(r.facts.len());
            act.entity_offsets.push(r.entities.len());
            act.all = r;
        }
        return act;
    }
    let a = &mut act.all;
    for r in results {
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
        act.fact_offsets.push(a.facts.len());
        act.entity_offsets.push(a.entities.len());
    }
    act
}
