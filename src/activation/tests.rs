#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashMap, HashSet};

use proptest::prelude::*;

use super::*;
use crate::graph::tests::{arb_cols, Cols};
use crate::graph::NONE;

fn incident(c: &Cols, e: u32, dir: Direction) -> Vec<(u32, u32)> {
    // (fact, other endpoint), sorted by confidence desc then id asc.
    let mut v: Vec<(u32, u32)> = Vec::new();
    for f in 0..c.subject.len() {
        let (s, o) = (c.subject[f], c.object[f]);
        let out = s == e && matches!(dir, Direction::Out | Direction::Both);
        let inn = o == e && matches!(dir, Direction::In | Direction::Both);
        if out {
            v.push((f as u32, o));
        } else if inn {
            v.push((f as u32, s));
        }
    }
    v.sort_by(|a, b| {
        c.confidence[b.0 as usize]
            .total_cmp(&c.confidence[a.0 as usize])
            .then(a.0.cmp(&b.0))
    });
    v
}

/// The seed-000 BFS, literally.
fn ref_shared(
    c: &Cols,
    anchors: &[u32],
    max_hops: u32,
    limit: usize,
    max_facts: Option<usize>,
    dir: Direction,
    statuses: Option<&[u8]>,
) -> Vec<(u32, u32)> {
    let mut visited = HashSet::new();
    let mut seen = HashSet::new();
    let mut facts = Vec::new();
    let mut frontier: Vec<u32> = anchors.to_vec();
    for hop in 0..max_hops {
        if max_facts.is_some_and(|m| facts.len() >= m) {
            break;
        }
        let mut next = Vec::new();
        for &e in &frontier {
            if !visited.insert(e) {
                continue;
            }
            let admitted: Vec<(u32, u32)> = incident(c, e, dir)
                .into_iter()
                .filter(|(f, _)| statuses.is_none_or(|s| s.contains(&c.status[*f as usize])))
                .take(limit)
                .collect();
            for (f, other) in admitted {
                if !seen.insert(f) {
                    continue;
                }
                facts.push((f, hop));
                if other != NONE {
                    next.push(other);
                }
            }
        }
        frontier = next;
    }
    facts
}

/// WORKLOADS.md W4, literally: an independent BFS per anchor, best value per edge.
fn ref_recall(
    c: &Cols,
    anchors: &[u32],
    scores: &[f64],
    max_hops: u32,
    k: usize,
) -> Vec<(u32, f64)> {
    let mut best: HashMap<u32, f64> = HashMap::new();
    for (&a, &s) in anchors.iter().zip(scores) {
        let mut dist: HashMap<u32, u32> = HashMap::from([(a, 0)]);
        let mut frontier = vec![a];
        for h in 0..max_hops {
            let mut next = Vec::new();
            for &e in &frontier {
                for (f, o) in incident(c, e, Direction::Both) {
                    if o == NONE {
                        continue;
                    }
                    let v = s * (1.0 / (1.0 + f64::from(h))) * f64::from(c.confidence[f as usize]);
                    let slot = best.entry(f).or_insert(f64::NEG_INFINITY);
                    if v > *slot {
                        *slot = v;
                    }
                    if let std::collections::hash_map::Entry::Vacant(x) = dist.entry(o) {
                        x.insert(h + 1);
                        next.push(o);
                    }
                }
            }
            frontier = next;
        }
    }
    let mut v: Vec<(u32, f64)> = best.into_iter().map(|(f, s)| (f, s + 0.0)).collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(k);
    v
}

/// A batch of queries of up to 3 anchors each (one tenant per query) from `picks`: anchors,
/// their scores (1.0, 0.9, 0.8 repeating) and the per-query offsets.
pub(crate) fn batch_of(c: &Cols, picks: &[usize]) -> (Vec<u32>, Vec<f64>, Vec<usize>) {
    let mut anchors = Vec::new();
    let mut offsets = vec![0usize];
    for w in picks.chunks(3) {
        anchors.extend(anchors_of(c, w));
        offsets.push(anchors.len());
    }
    let scores = (0..anchors.len())
        .map(|i| 1.0 - (i % 3) as f64 * 0.1)
        .collect();
    (anchors, scores, offsets)
}

pub(crate) fn anchors_of(c: &Cols, picks: &[usize]) -> Vec<u32> {
    // All anchors in the tenant of the first pick.
    let n = c.tenant.len();
    let t = c.tenant[picks[0] % n];
    picks
        .iter()
        .map(|&p| {
            (0..n)
                .map(|k| (p + k) % n)
                .find(|&k| c.tenant[k] == t)
                .unwrap_or(0) as u32
        })
        .collect()
}

fn one(anchors: &[u32], scores: &[f64], offsets: &mut Vec<usize>) -> Queries<'static> {
    offsets.clear();
    offsets.push(0);
    offsets.push(anchors.len());
    let a: &'static [u32] = Box::leak(anchors.to_vec().into_boxed_slice());
    let s: &'static [f64] = Box::leak(scores.to_vec().into_boxed_slice());
    let o: &'static [usize] = Box::leak(offsets.clone().into_boxed_slice());
    Queries {
        anchors: a,
        scores: s,
        offsets: o,
    }
}

fn dir_of(d: u8) -> Direction {
    match d % 3 {
        0 => Direction::Out,
        1 => Direction::In,
        _ => Direction::Both,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn shared_bfs_matches_reference_and_respects_caps(
        c in arb_cols(),
        picks in proptest::collection::vec(0usize..1000, 1..4),
        max_hops in 0u32..4,
        limit in 1usize..6,
        max_facts in proptest::option::of(0usize..12),
        d in 0u8..3,
        filter_status in any::<bool>(),
    ) {
        let g = c.graph();
        let anchors = anchors_of(&c, &picks);
        let statuses: Option<&[u8]> = if filter_status { Some(&[0, 1]) } else { None };
        let dir = dir_of(d);
        // 5: no per-entity limit (every edge, still in the merged order for `Both`).
        let (per_entity_limit, limit) =
            if limit < 5 { (Some(limit as u32), limit) } else { (None, usize::MAX) };
        let p = SpreadParams {
            max_hops,
            per_entity_limit,
            max_facts: max_facts.map(|m| m as u32),
            direction: dir,
            filter: FactFilter { statuses: statuses.map(CodeSet::from_codes), ..FactFilter::default() },
            ..SpreadParams::default()
        };
        let mut off = Vec::new();
        let q = one(&anchors, &vec![1.0; anchors.len()], &mut off);
        let act = spread(&g, &q, &p, 0).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let want = ref_shared(&c, &anchors, max_hops, limit, max_facts, dir, statuses);
        let got: Vec<(u32, u32)> = act.all.facts.iter().copied().zip(act.all.hops.iter().copied()).collect();
        prop_assert_eq!(&got, &want);
        // Caps and filters.
        let mut per_via: BTreeMap<u32, usize> = BTreeMap::new();
        for (i, &f) in act.all.facts.iter().enumerate() {
            prop_assert!(act.all.hops[i] < max_hops.max(1));
            if filter_status { prop_assert!(c.status[f as usize] <= 1); }
            *per_via.entry(act.all.via[i]).or_default() += 1;
            // The parent chain leads back to the fact's anchor in hop steps.
            let mut hop = act.all.hops[i];
            let mut parent = act.all.parents[i];
            while parent != NONE {
                let j = act.all.facts.iter().position(|&x| x == parent);
                prop_assert!(j.is_some());
                let j = j.unwrap_or(0);
                prop_assert_eq!(act.all.hops[j] + 1, hop);
                prop_assert_eq!(act.all.anchors[j], act.all.anchors[i]);
                hop = act.all.hops[j];
                parent = act.all.parents[j];
            }
            prop_assert_eq!(hop, 0);
        }
        prop_assert!(per_via.values().all(|&n| n <= limit));
        let unique: HashSet<u32> = act.all.facts.iter().copied().collect();
        prop_assert_eq!(unique.len(), act.all.facts.len());
        // Entities: anchors at hop 0, every other entity at 1 + the hop of a fact reaching it.
        for (i, &e) in act.all.entities.iter().enumerate() {
            if anchors.contains(&e) {
                prop_assert_eq!(act.all.entity_hops[i], 0);
            } else {
                prop_assert!(act.all.entity_hops[i] >= 1 && act.all.entity_hops[i] <= max_hops);
                let pf = act.all.entity_parents[i];
                let j = act.all.facts.iter().position(|&x| x == pf);
                prop_assert!(j.is_some());
                prop_assert_eq!(act.all.hops[j.unwrap_or(0)] + 1, act.all.entity_hops[i]);
            }
        }
    }

    #[test]
    fn fused_recall_equals_literal_bfs_and_unfused_spread(
        c in arb_cols(),
        picks in proptest::collection::vec(0usize..1000, 1..4),
        max_hops in 1u32..4,
        k in 1usize..25,
    ) {
        let g = c.graph();
        let anchors = anchors_of(&c, &picks);
        let scores: Vec<f64> = [1.0, 0.9, 0.8][..anchors.len()].to_vec();
        let mut off = Vec::new();
        let q = one(&anchors, &scores, &mut off);
        let want = ref_recall(&c, &anchors, &scores, max_hops, k);
        let r = graph_recall(&g, &q, &RecallParams { max_hops, top_k: k, ..RecallParams::default() })
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let got: Vec<(u32, f64)> = r.facts.iter().copied().zip(r.scores.iter().copied()).collect();
        prop_assert_eq!(&got, &want);
        // The unfused path: independent spread + composite rank + top-k (edges only).
        let p = SpreadParams {
            max_hops,
            direction: Direction::Both,
            independent_anchors: true,
            rank: Rank::Composite,
            ..SpreadParams::default()
        };
        let act = spread(&g, &q, &p, 0).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let unfused: Vec<(u32, f64)> = act.all.facts.iter().copied().zip(act.all.scores.iter().copied())
            .filter(|(f, _)| c.object[*f as usize] != NONE).take(k).collect();
        prop_assert_eq!(&unfused, &want);
    }

    #[test]
    fn pagerank_sums_to_one(c in arb_cols(), picks in proptest::collection::vec(0usize..1000, 1..4), damping in 0.05f64..0.95) {
        let g = c.graph();
        let anchors = anchors_of(&c, &picks);
        let mut off = Vec::new();
        let q = one(&anchors, &vec![1.0; anchors.len()], &mut off);
        let p = PprParams { damping, tol: 1e-13, max_iter: 10_000, weight: EdgeWeight::Uniform, ..PprParams::default() };
        let r = personalized_pagerank(&g, &q, &p).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let total: f64 = r.entity_scores.iter().sum();
        prop_assert!((total - 1.0).abs() < 1e-9, "sum {}", total);
        prop_assert!(r.entity_scores.iter().all(|&s| s > 0.0));
        let t = c.tenant[anchors[0] as usize];
        prop_assert!(r.entities.iter().all(|&e| c.tenant[e as usize] == t));
        prop_assert!(r.chunks.iter().all(|&ch| c.chunk_tenant[ch as usize] == t));
    }
}

#[test]
fn seed_000_stop_rule_is_checked_between_hops_only() {
    // Anchor 0 has 12 facts; max_facts 5 does not cut hop 0, but stops hop 1.
    let mut c = Cols {
        tenant: vec![0; 14],
        ..Cols::default()
    };
    for k in 1..13u32 {
        c.push(0, k, 0.5);
        if let Some(s) = c.status.last_mut() {
            *s = 1;
        }
    }
    c.push(1, 13, 0.9);
    let g = c.graph();
    let mut off = Vec::new();
    let q = one(&[0], &[1.0], &mut off);
    let p = SpreadParams {
        max_hops: 2,
        per_entity_limit: None,
        max_facts: Some(5),
        ..SpreadParams::default()
    };
    let act = spread(&g, &q, &p, 0).unwrap_or_default();
    assert_eq!(act.all.facts.len(), 12);
    assert!(act.all.hops.iter().all(|&h| h == 0));
    let p = SpreadParams {
        max_facts: Some(13),
        ..p
    };
    let act = spread(&g, &q, &p, 0).unwrap_or_default();
    assert_eq!(act.all.facts.len(), 13);
}

#[test]
fn bad_queries_are_refused_with_their_index() {
    let mut c = Cols {
        tenant: vec![0, 0, 1],
        ..Cols::default()
    };
    c.push(0, 1, 0.5);
    let g = c.graph();
    let offsets = [0usize, 1, 3];
    let q = Queries {
        anchors: &[0, 0, 2],
        scores: &[1.0, 1.0, 1.0],
        offsets: &offsets,
    };
    let e = spread(&g, &q, &SpreadParams::default(), 0)
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        e.as_deref(),
        Some("query 1: anchor 2 belongs to tenant 1, not to the query's tenant 0")
    );
    let q = Queries {
        anchors: &[0, 7],
        scores: &[1.0, 1.0],
        offsets: &[0, 2],
    };
    let e = graph_recall(&g, &q, &RecallParams::default())
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        e.as_deref(),
        Some("query 0: anchor 7 is not an entity (the graph has 3 entities)")
    );
    let q = Queries {
        anchors: &[0],
        scores: &[f64::NAN],
        offsets: &[0, 1],
    };
    assert!(spread(&g, &q, &SpreadParams::default(), 0).is_err());
    let q = Queries {
        anchors: &[0],
        scores: &[1.0],
        offsets: &[0, 1],
    };
    let p = SpreadParams {
        tenant: Some(1),
        ..SpreadParams::default()
    };
    assert!(spread(&g, &q, &p, 0).is_err());
    let p = SpreadParams {
        tenant: Some(5),
        ..SpreadParams::default()
    };
    assert!(matches!(
        spread(&g, &q, &p, 0),
        Err(crate::Error::UnknownTenant { tenant: 5, .. })
    ));
    let p = SpreadParams {
        max_hops: 1000,
        ..SpreadParams::default()
    };
    assert!(spread(&g, &q, &p, 0).is_err());
    let pp = PprParams {
        damping: 1.0,
        ..PprParams::default()
    };
    assert!(personalized_pagerank(&g, &q, &pp).is_err());
    let q0 = Queries {
        anchors: &[0],
        scores: &[0.0],
        offsets: &[0, 1],
    };
    assert!(personalized_pagerank(&g, &q0, &PprParams::default()).is_err());
}

#[test]
fn filters_as_of_and_sequence() {
    let mut c = Cols {
        tenant: vec![0; 4],
        ..Cols::default()
    };
    c.push(0, 1, 0.9);
    c.push(0, 2, 0.8);
    c.push(0, 3, 0.7);
    c.valid_from = Some(vec![NULL_TIME, 100, 0]);
    c.valid_to = Some(vec![50, NULL_TIME, NULL_TIME]);
    c.sequence = Some(vec![1, 5, NULL_TIME]);
    let g = c.graph();
    let mut off = Vec::new();
    let q = one(&[0], &[1.0], &mut off);
    let run = |filter: FactFilter| {
        let p = SpreadParams {
            max_hops: 1,
            filter,
            ..SpreadParams::default()
        };
        spread(&g, &q, &p, 0)
            .map(|a| a.all.facts)
            .unwrap_or_default()
    };
    assert_eq!(run(FactFilter::default()), vec![0, 1, 2]);
    let at = |t| FactFilter {
        as_of: Some(t),
        ..FactFilter::default()
    };
    assert_eq!(run(at(10)), vec![0, 2]);
    assert_eq!(run(at(50)), vec![2]);
    assert_eq!(run(at(100)), vec![1, 2]);
    let seq = |m| FactFilter {
        max_sequence: Some(m),
        ..FactFilter::default()
    };
    assert_eq!(run(seq(1)), vec![0]);
    assert_eq!(run(seq(5)), vec![0, 1]);
    let mut preds = vec![false; 8];
    preds[c.predicate[1] as usize] = true;
    let f = FactFilter {
        predicates: Some(preds),
        min_confidence: Some(0.75),
        ..FactFilter::default()
    };
    assert_eq!(run(f), vec![1]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// A batch (spanning several rayon chunks) equals its queries run one by one.
    #[test]
    fn batch_equals_singles(c in arb_cols(), picks in proptest::collection::vec(0usize..1000, 1..90), d in 0u8..3) {
        let g = c.graph();
        let (anchors, scores, offsets) = batch_of(&c, &picks);
        let all = Queries { anchors: &anchors, scores: &scores, offsets: &offsets };
        let p = SpreadParams {
            per_entity_limit: Some(3),
            direction: dir_of(d),
            rank: Rank::ScoreFact { profile: crate::scoring::FactScoreProfile::default() },
            ..SpreadParams::default()
        };
        let batch = spread(&g, &all, &p, 2_000_000).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let rp = RecallParams { top_k: 5, ..RecallParams::default() };
        let rbatch = graph_recall(&g, &all, &rp).map_err(|e| TestCaseError::fail(e.to_string()))?;
        for q in 0..offsets.len() - 1 {
            let r = offsets[q]..offsets[q + 1];
            let one = Queries { anchors: &anchors[r.clone()], scores: &scores[r], offsets: &[0, offsets[q + 1] - offsets[q]] };
            let single = spread(&g, &one, &p, 2_000_000).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let fr = batch.fact_offsets[q]..batch.fact_offsets[q + 1];
            prop_assert_eq!(&batch.all.facts[fr.clone()], &single.all.facts[..]);
            prop_assert_eq!(&batch.all.scores[fr.clone()], &single.all.scores[..]);
            prop_assert_eq!(&batch.all.parents[fr], &single.all.parents[..]);
            let er = batch.entity_offsets[q]..batch.entity_offsets[q + 1];
            prop_assert_eq!(&batch.all.entities[er], &single.all.entities[..]);
            let rsingle = graph_recall(&g, &one, &rp).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&rbatch.facts[rbatch.offsets[q]..rbatch.offsets[q + 1]], &rsingle.facts[..]);
        }
    }
}
