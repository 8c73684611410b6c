#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;

use super::*;

/// Owned columns for tests; `input()` borrows them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cols {
    pub tenant: Vec<u32>,
    pub subject: Vec<u32>,
    pub object: Vec<u32>,
    pub predicate: Vec<u32>,
    pub confidence: Vec<f32>,
    pub strength: Vec<f32>,
    pub status: Vec<u8>,
    pub source: Vec<u8>,
    pub access: Vec<u32>,
    pub last: Vec<i64>,
    pub valid_from: Option<Vec<i64>>,
    pub valid_to: Option<Vec<i64>>,
    pub sequence: Option<Vec<i64>>,
    pub chunk_tenant: Vec<u32>,
    pub m_chunk: Vec<u32>,
    pub m_entity: Vec<u32>,
    pub m_count: Vec<u32>,
}

impl Cols {
    pub fn input(&self) -> GraphInput<'_> {
        GraphInput {
            entity_tenant: &self.tenant,
            fact_subject: &self.subject,
            fact_object: &self.object,
            fact_predicate: &self.predicate,
            fact_confidence: &self.confidence,
            fact_strength: &self.strength,
            fact_status: &self.status,
            fact_source: &self.source,
            fact_access_count: &self.access,
            fact_last_accessed: Some(&self.last),
            fact_created_at: None,
            fact_valid_from: self.valid_from.as_deref(),
            fact_valid_to: self.valid_to.as_deref(),
            fact_sequence: self.sequence.as_deref(),
            n_predicates: 8,
            n_statuses: 4,
            n_sources: 4,
            chunk_tenant: &self.chunk_tenant,
            mention_chunk: &self.m_chunk,
            mention_entity: &self.m_entity,
            mention_count: &self.m_count,
        }
    }

    pub fn push(&mut self, s: u32, o: u32, conf: f32) {
        self.subject.push(s);
        self.object.push(o);
        self.predicate.push(self.subject.len() as u32 % 8);
        self.confidence.push(conf);
        self.strength.push(conf);
        self.status.push(self.subject.len() as u8 % 4);
        self.source.push(self.subject.len() as u8 % 4);
        self.access.push(self.subject.len() as u32 % 5);
        self.last
            .push(1_000_000 - self.subject.len() as i64 * 10_000);
    }

    pub fn graph(&self) -> KnowledgeGraph {
        match KnowledgeGraph::build(&self.input()) {
            Ok(g) => g,
            Err(e) => panic!("test graph must build: {e}"),
        }
    }
}

/// Strategy: a random multi-tenant graph with cycles, self-loops, parallel edges, isolated
/// entities, literal facts, tied confidences, and chunk mentions.
pub(crate) fn arb_cols() -> impl Strategy<Value = Cols> {
    (1usize..40, 1u32..4).prop_flat_map(|(n, n_tenants)| {
        let tenants = proptest::collection::vec(0..n_tenants, n);
        let facts = proptest::collection::vec(
            (
                0..n,
                0..=n,
                0u8..6,
                0u8..4,
                0u8..4,
                0u32..8,
                0u32..20,
                0i64..3_000_000,
            ),
            0..150,
        );
        let chunks = proptest::collection::vec(0..n, 0..20);
        (tenants, facts, chunks).prop_map(move |(tenant, facts, chunk_ents)| {
            let mut c = Cols {
                tenant,
                ..Cols::default()
            };
            for (s, o, q, st, src, pred, acc, last) in facts {
                // Object: n means literal; otherwise redirect to the subject's tenant.
                let obj = if o == n {
                    NONE
                } else {
                    let t = c.tenant[s];
                    (0..n)
                        .map(|k| (o + k) % n)
                        .find(|&k| c.tenant[k] == t)
                        .unwrap_or(s) as u32
                };
                c.subject.push(s as u32);
                c.object.push(obj);
                c.predicate.push(pred);
                // Few distinct values, so ties in confidence are common.
                c.confidence.push(f32::from(q) / 5.0);
                c.strength.push(f32::from(q) * 2.0);
                c.status.push(st);
                c.source.push(src);
                c.access.push(acc);
                c.last.push(last);
            }
            // Each chunk mentions an entity and, maybe, its first same-tenant neighbour.
            for (ci, &e) in chunk_ents.iter().enumerate() {
                c.chunk_tenant.push(c.tenant[e]);
                c.m_chunk.push(ci as u32);
                c.m_entity.push(e as u32);
                c.m_count.push(1 + (ci as u32 % 3));
                if let Some(k) = (0..n).find(|&k| k != e && c.tenant[k] == c.tenant[e]) {
                    c.m_chunk.push(ci as u32);
                    c.m_entity.push(k as u32);
                    c.m_count.push(1);
                }
            }
            c
        })
    })
}

fn small() -> Cols {
    let mut c = Cols {
        tenant: vec![0, 0, 0, 1, 1],
        ..Cols::default()
    };
    c.push(0, 1, 0.5);
    c.push(0, 2, 0.9);
    c.push(0, NONE, 0.9);
    c.push(1, 2, 0.3);
    c.push(3, 4, 1.0);
    c.push(2, 0, 0.7);
    c
}

#[test]
fn out_facts_are_sorted_by_confidence_then_id() {
    let g = small().graph();
    assert_eq!(g.out_facts(0).ok(), Some(vec![1, 2, 0]));
    assert_eq!(g.in_facts(0).ok(), Some(vec![5]));
    assert_eq!(g.in_facts(2).ok(), Some(vec![1, 3]));
    assert_eq!(g.n_tenants(), 2);
    assert_eq!(g.tenant_entities(1).ok(), Some(&[3u32, 4][..]));
    let row = g.fact(2).ok();
    assert_eq!(row.map(|r| (r.subject, r.object)), Some((0, NONE)));
}

#[test]
fn dangling_object_names_row_and_column() {
    let mut c = small();
    c.object[3] = 17;
    let err = KnowledgeGraph::build(&c.input())
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("facts row 3: object = 17 refers to no entity (there are 5)")
    );
}

#[test]
fn nan_and_out_of_range_weights_are_refused() {
    let mut c = small();
    c.confidence[4] = f32::NAN;
    let e = KnowledgeGraph::build(&c.input())
        .err()
        .map(|e| e.to_string());
    assert!(e.is_some_and(|m| m.starts_with("facts row 4: confidence = NaN is NaN")));
    let mut c = small();
    c.confidence[1] = 1.5;
    let e = KnowledgeGraph::build(&c.input())
        .err()
        .map(|e| e.to_string());
    assert!(e.is_some_and(|m| m.contains("row 1: confidence = 1.5 is out of range")));
    let mut c = small();
    c.strength[2] = f32::INFINITY;
    let e = KnowledgeGraph::build(&c.input())
        .err()
        .map(|e| e.to_string());
    assert!(e.is_some_and(|m| m.contains("row 2: strength = inf")));
    let mut c = small();
    c.strength[2] = -1.0;
    assert!(KnowledgeGraph::build(&c.input()).is_err());
}

#[test]
fn cross_tenant_fact_is_refused() {
    let mut c = small();
    c.object[0] = 3;
    let e = KnowledgeGraph::build(&c.input()).err();
    assert!(matches!(e, Some(Error::CrossTenant { row: 0, .. })));
}

#[test]
fn unknown_codes_are_refused() {
    let mut c = small();
    c.status[5] = 4;
    let e = KnowledgeGraph::build(&c.input())
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        e.as_deref(),
        Some("facts row 5: status = 4 is an unknown status code (there are 4)")
    );
    let mut c = small();
    c.source[0] = 9;
    assert!(KnowledgeGraph::build(&c.input()).is_err());
    let mut c = small();
    c.predicate[0] = 8;
    assert!(KnowledgeGraph::build(&c.input()).is_err());
}

#[test]
fn length_mismatch_and_bad_intervals_are_refused() {
    let mut c = small();
    c.strength.pop();
    let e = KnowledgeGraph::build(&c.input())
        .err()
        .map(|e| e.to_string());
    assert_eq!(e.as_deref(), Some("facts.strength has 5 rows, expected 6"));
    let mut c = small();
    c.valid_from = Some(vec![NULL_TIME, 5, NULL_TIME, 0, 0, 0]);
    c.valid_to = Some(vec![NULL_TIME, 4, NULL_TIME, NULL_TIME, 1, 1]);
    let e = KnowledgeGraph::build(&c.input())
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        e.as_deref(),
        Some("facts row 1: valid_from = 5 is after valid_to = 4")
    );
}

#[test]
fn mention_errors() {
    let mut c = small();
    c.chunk_tenant = vec![0, 1];
    c.m_chunk = vec![0, 1, 0];
    c.m_entity = vec![1, 3, 1];
    c.m_count = vec![1, 2, 1];
    let e = KnowledgeGraph::build(&c.input())
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        e.as_deref(),
        Some("mentions row 2: duplicate mention of entity 1 by chunk 0 (first given at row 0)")
    );
    c.m_entity = vec![1, 0, 2];
    let e = KnowledgeGraph::build(&c.input()).err();
    assert!(matches!(
        e,
        Some(Error::CrossTenant {
            table: "mentions",
            row: 1,
            ..
        })
    ));
    c.m_entity = vec![1, 3, 9];
    let e = KnowledgeGraph::build(&c.input()).err();
    assert!(matches!(
        e,
        Some(Error::Dangling {
            table: "mentions",
            row: 2,
            ..
        })
    ));
    c.m_entity = vec![1, 3, 2];
    c.m_count = vec![1, 0, 1];
    assert!(KnowledgeGraph::build(&c.input()).is_err());
}

#[test]
fn empty_graph_builds() {
    let c = Cols::default();
    let g = c.graph();
    assert_eq!(g.n_entities(), 0);
    assert_eq!(g.n_facts(), 0);
    assert_eq!(g.n_tenants(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// CSR round trip: every fact comes back with its subject and object, each entity's
    /// out- and in-lists are sorted by (confidence desc, id asc), and the mention CSRs agree.
    #[test]
    fn csr_round_trip(c in arb_cols()) {
        let g = c.graph();
        let (subject, object) = g.fact_columns();
        prop_assert_eq!(&subject, &c.subject);
        prop_assert_eq!(&object, &c.object);
        for e in 0..g.n_entities() as u32 {
            let mut expect_out: Vec<u32> = (0..c.subject.len() as u32)
                .filter(|&f| c.subject[f as usize] == e).collect();
            let key = |f: &u32| (std::cmp::Reverse(c.confidence[*f as usize].to_bits()), *f);
            expect_out.sort_by_key(key);
            prop_assert_eq!(g.out_facts(e).ok(), Some(expect_out));
            let mut expect_in: Vec<u32> = (0..c.object.len() as u32)
                .filter(|&f| c.object[f as usize] == e).collect();
            expect_in.sort_by_key(key);
            prop_assert_eq!(g.in_facts(e).ok(), Some(expect_in));
            let (chunks, counts) = g.entity_chunks(e).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let mut expect: Vec<(u32, u32)> = (0..c.m_chunk.len())
                .filter(|&i| c.m_entity[i] == e).map(|i| (c.m_chunk[i], c.m_count[i])).collect();
            expect.sort_unstable();
            let got: Vec<(u32, u32)> = chunks.iter().copied().zip(counts.iter().copied()).collect();
            prop_assert_eq!(got, expect);
        }
        for f in 0..c.subject.len() as u32 {
            let row = g.fact(f).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(row.confidence, c.confidence[f as usize]);
            prop_assert_eq!(row.status, c.status[f as usize]);
            prop_assert_eq!(row.access_count, c.access[f as usize]);
            prop_assert_eq!(row.last_accessed, c.last[f as usize]);
        }
    }
}
