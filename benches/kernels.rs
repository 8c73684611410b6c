//! criterion benches of the core kernels on a synthetic power-law graph shaped like
//! WORKLOADS.md (Pareto out-degree with mean ~10, 20% literals, 4 statuses, 4 sources,
//! 10 tenants, objects by Pareto attractiveness within the tenant).
//! `cargo bench --bench kernels` (set GR_BENCH_ENTITIES to change the size, default 100k).

#![allow(clippy::panic)]

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

use graphrecall::activation::{
    graph_recall, personalized_pagerank, spread, CodeSet, Direction, FactFilter, PprParams,
    Queries, Rank, RecallParams, SpreadParams,
};
use graphrecall::fusion::rrf_batch;
use graphrecall::graph::{GraphInput, KnowledgeGraph, NONE};
use graphrecall::scoring::FactScoreProfile;

/// xorshift64*: a tiny deterministic generator, enough for synthetic data.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

struct Data {
    tenant: Vec<u32>,
    subject: Vec<u32>,
    object: Vec<u32>,
    predicate: Vec<u32>,
    confidence: Vec<f32>,
    strength: Vec<f32>,
    status: Vec<u8>,
    source: Vec<u8>,
    access: Vec<u32>,
    last: Vec<i64>,
}

const NOW: i64 = 1_767_225_600;

fn generate(n: usize) -> Data {
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let tenant: Vec<u32> = (0..n).map(|_| (r.next() % 10) as u32).collect();
    let mut by_tenant: Vec<Vec<u32>> = vec![Vec::new(); 10];
    let mut weights: Vec<Vec<f64>> = vec![Vec::new(); 10];
    for (e, &t) in tenant.iter().enumerate() {
        by_tenant[t as usize].push(e as u32);
        let w = (1.0 - r.unit()).powf(-1.0 / 2.5);
        let cum = weights[t as usize].last().copied().unwrap_or(0.0) + w;
        weights[t as usize].push(cum);
    }
    let mut d = Data {
        tenant,
        subject: Vec::new(),
        object: Vec::new(),
        predicate: Vec::new(),
        confidence: Vec::new(),
        strength: Vec::new(),
        status: Vec::new(),
        source: Vec::new(),
        access: Vec::new(),
        last: Vec::new(),
    };
    for s in 0..n {
        let deg = ((10.55 * ((1.0 - r.unit()).powf(-0.5) - 1.0)).floor() as usize).min(2000);
        let t = d.tenant[s] as usize;
        for _ in 0..deg {
            let obj = if r.unit() < 0.2 {
                NONE
            } else {
                let cum = &weights[t];
                let x = r.unit() * cum[cum.len() - 1];
                let i = cum.partition_point(|&c| c < x).min(cum.len() - 1);
                let o = by_tenant[t][i];
                if o as usize == s {
                    NONE
                } else {
                    o
                }
            };
            d.subject.push(s as u32);
            d.object.push(obj);
            d.predicate.push((r.next() % 50) as u32);
            d.confidence.push(r.unit() as f32);
            d.strength.push(r.unit() as f32);
            let u = r.unit();
            d.status.push(if u < 0.35 {
                0
            } else if u < 0.7 {
                1
            } else if u < 0.85 {
                2
            } else {
                3
            });
            let u = r.unit();
            d.source.push(if u < 0.15 {
                0
            } else if u < 0.45 {
                1
            } else if u < 0.65 {
                2
            } else {
                3
            });
            d.access.push(if r.unit() < 0.6 {
                0
            } else {
                (r.next() % 20) as u32
            });
            d.last.push(NOW - (r.next() % (365 * 86_400)) as i64);
        }
    }
    d
}

fn build(d: &Data) -> KnowledgeGraph {
    let input = GraphInput {
        entity_tenant: &d.tenant,
        fact_subject: &d.subject,
        fact_object: &d.object,
        fact_predicate: &d.predicate,
        fact_confidence: &d.confidence,
        fact_strength: &d.strength,
        fact_status: &d.status,
        fact_source: &d.source,
        fact_access_count: &d.access,
        fact_last_accessed: Some(&d.last),
        n_predicates: 50,
        n_statuses: 4,
        n_sources: 4,
        ..GraphInput::default()
    };
    match KnowledgeGraph::build(&input) {
        Ok(g) => g,
        Err(e) => panic!("bench graph: {e}"),
    }
}

fn queries(d: &Data, n_queries: usize) -> (Vec<u32>, Vec<f64>, Vec<usize>) {
    let mut r = Rng(42);
    let n = d.tenant.len();
    let mut anchors = Vec::new();
    let mut offsets = vec![0];
    for _ in 0..n_queries {
        let first = (r.next() % n as u64) as u32;
        let t = d.tenant[first as usize];
        anchors.push(first);
        while anchors.len() - offsets[offsets.len() - 1] < 3 {
            let e = (r.next() % n as u64) as u32;
            if d.tenant[e as usize] == t && !anchors[offsets[offsets.len() - 1]..].contains(&e) {
                anchors.push(e);
            }
        }
        offsets.push(anchors.len());
    }
    let scores = (0..anchors.len()).map(|i| [1.0, 0.9, 0.8][i % 3]).collect();
    (anchors, scores, offsets)
}

fn benches(c: &mut Criterion) {
    let n: usize = std::env::var("GR_BENCH_ENTITIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let d = generate(n);
    c.bench_function(&format!("build/{n}"), |b| b.iter(|| black_box(build(&d))));
    let g = build(&d);
    let (anchors, scores, offsets) = queries(&d, 1000);
    let w1 = SpreadParams {
        max_hops: 2,
        per_entity_limit: Some(10),
        max_facts: Some(30),
        direction: Direction::Out,
        filter: FactFilter {
            statuses: Some(CodeSet::from_codes(&[0, 1])),
            ..FactFilter::default()
        },
        rank: Rank::ScoreFact {
            profile: FactScoreProfile::default(),
        },
        ..SpreadParams::default()
    };
    let w4 = RecallParams::default();
    let mut i = 0usize;
    c.bench_function("w1/single", |b| {
        b.iter(|| {
            let q = i % 1000;
            i += 1;
            let o = [0, 3];
            let qs = Queries {
                anchors: &anchors[offsets[q]..offsets[q + 1]],
                scores: &scores[offsets[q]..offsets[q + 1]],
                offsets: &o,
            };
            black_box(spread(&g, &qs, &w1, NOW).map(|a| a.all.facts.len()))
        })
    });
    c.bench_function("w4/single", |b| {
        b.iter(|| {
            let q = i % 1000;
            i += 1;
            let o = [0, 3];
            let qs = Queries {
                anchors: &anchors[offsets[q]..offsets[q + 1]],
                scores: &scores[offsets[q]..offsets[q + 1]],
                offsets: &o,
            };
            black_box(graph_recall(&g, &qs, &w4).map(|r| r.facts.len()))
        })
    });
    let all = Queries {
        anchors: &anchors,
        scores: &scores,
        offsets: &offsets,
    };
    c.bench_function("w1/batch1000", |b| {
        b.iter(|| black_box(spread(&g, &all, &w1, NOW).map(|a| a.all.facts.len())))
    });
    c.bench_function("w4/batch1000", |b| {
        b.iter(|| black_box(graph_recall(&g, &all, &w4).map(|r| r.facts.len())))
    });
    let one = Queries {
        anchors: &anchors[..3],
        scores: &[1.0, 1.0, 1.0],
        offsets: &[0, 3],
    };
    let mut group = c.benchmark_group("ppr");
    group.sample_size(10);
    group.bench_function("single", |b| {
        b.iter(|| {
            black_box(personalized_pagerank(&g, &one, &PprParams::default()).map(|r| r.iterations))
        })
    });
    group.finish();
    // RRF of 1000 queries x 2 lists x 50 ids.
    let ids: Vec<i64> = (0..100_000).map(|k| (k * 7919 % 5000) as i64).collect();
    let list_offsets: Vec<usize> = (0..=2000).map(|k| k * 50).collect();
    let query_offsets: Vec<usize> = (0..=1000).map(|k| k * 2).collect();
    let weights = vec![1.0; 2000];
    c.bench_function("rrf/batch1000x2x50", |b| {
        b.iter(|| {
            black_box(
                rrf_batch(
                    &ids,
                    &list_offsets,
                    &query_offsets,
                    &weights,
                    60.0,
                    Some(20),
                )
                .map(|f| f.ids.len()),
            )
        })
    });
}

criterion_group!(kernels, benches);
criterion_main!(kernels);
