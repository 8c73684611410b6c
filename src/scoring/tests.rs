#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::float_cmp
)]

use super::chunks::*;
use super::common::*;
use super::*;
use crate::Error;

const NOW: i64 = 1_700_000_000;
const WEEK: i64 = 604_800;
const DAY: i64 = 86_400;

#[test]
fn score_fact_hand_computed() {
    let p = FactScoreProfile::default();
    // Fresh, never accessed, conversation, staged: just the confidence.
    assert_eq!(
        score_fact(0.5, SOURCE_CONVERSATION, STATUS_STAGED, NOW, 0, NOW, &p),
        0.5
    );
    // user_edit (2.0), confirmed (1.2), 9 accesses (1 + log10(10) * 0.5 = 1.5), 3 weeks old
    // (decay 0.95^2 = 0.9025): 0.5 * 2.0 * 0.9025 * 1.5 * 1.2.
    let s = score_fact(
        0.5,
        SOURCE_USER_EDIT,
        STATUS_CONFIRMED,
        NOW - 3 * WEEK,
        9,
        NOW,
        &p,
    );
    assert!((s - 0.5 * 2.0 * 0.9025 * 1.5 * 1.2).abs() < 1e-12, "{s}");
    // Exactly at the grace period: no decay.
    let s = score_fact(1.0, SOURCE_FILE, STATUS_REJECTED, NOW - WEEK, 0, NOW, &p);
    assert_eq!(s, 1.5);
    // Null time: no decay; unknown codes take the defaults.
    let s = score_fact(1.0, 200, 200, NULL_TIME, 0, NOW, &p);
    assert_eq!(s, 1.0);
    // Future access: negative age, no decay.
    let s = score_fact(1.0, SOURCE_SYSTEM, STATUS_ARCHIVED, NOW + WEEK, 0, NOW, &p);
    assert_eq!(s, 1.2);
}

#[test]
fn score_fact_batch_matches_scalar_and_validates() {
    let p = FactScoreProfile::default();
    let conf = [0.9f32, 0.3, 1.0];
    let src = [0u8, 1, 9];
    let st = [1u8, 0, 3];
    let last = [NOW - 10 * WEEK, NULL_TIME, NOW - 2 * DAY];
    let ac = [0u32, 5, u32::MAX];
    let out = score_facts(&conf, &src, &st, Some(&last), &ac, NOW, &p).unwrap();
    for i in 0..3 {
        let s = score_fact(conf[i], src[i], st[i], last[i], ac[i], NOW, &p);
        assert_eq!(out[i].to_bits(), s.to_bits());
    }
    let none = score_facts(&conf, &src, &st, None, &ac, NOW, &p).unwrap();
    assert_eq!(none[1], out[1]);
    assert!(none[0] > out[0]);

    let err = score_facts(&[0.1, f32::NAN], &[0, 0], &[0, 0], None, &[0, 0], NOW, &p).unwrap_err();
    assert_eq!(
        err.to_string(),
        "facts row 1: confidence = NaN is not finite (NaN or infinite)"
    );
    let err = score_facts(&conf, &src[..2], &st, None, &ac, NOW, &p).unwrap_err();
    assert_eq!(err.to_string(), "facts.source has 2 rows, expected 3");
    let bad = FactScoreProfile {
        decay_base: 1.5,
        ..FactScoreProfile::default()
    };
    let err = score_facts(&conf, &src, &st, None, &ac, NOW, &bad).unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidParameter {
            name: "decay_base",
            ..
        }
    ));
    let bad = FactScoreProfile {
        status_weights: vec![1.0, -1.0],
        ..FactScoreProfile::default()
    };
    let err = bad.validate().unwrap_err();
    assert!(err.to_string().contains("status_weights[1] = -1"), "{err}");
}

#[test]
fn score_fact_batch_parallel_path_equals_scalar() {
    let p = FactScoreProfile::default();
    let n = PAR_THRESHOLD + 1000;
    let conf: Vec<f32> = (0..n).map(|i| (i % 101) as f32 / 100.0).collect();
    let src: Vec<u8> = (0..n).map(|i| (i % 5) as u8).collect();
    let st: Vec<u8> = (0..n).map(|i| (i % 4) as u8).collect();
    let last: Vec<i64> = (0..n).map(|i| NOW - (i as i64) * 3_600).collect();
    let ac: Vec<u32> = (0..n).map(|i| (i % 17) as u32).collect();
    let out = score_facts(&conf, &src, &st, Some(&last), &ac, NOW, &p).unwrap();
    for i in (0..n).step_by(997) {
        let s = score_fact(conf[i], src[i], st[i], last[i], ac[i], NOW, &p);
        assert_eq!(out[i].to_bits(), s.to_bits());
    }
}

#[test]
fn indirect_boost_seed_001() {
    // "boost = 0.1 * (1/2) * 0.9 = 0.045" (Tywin Lannister, distance 2, strength 0.9).
    let b = indirect_boost(0.1, 2, 0.9);
    assert!((b - 0.045).abs() < 1e-15, "{b}");
    assert!((0.55 + b - 0.595).abs() < 1e-12);
    let p = MentionBoostProfile::default();
    assert_eq!(p.indirect_boost(2, 0.9), b);
    let no_strength = MentionBoostProfile {
        use_strength: false,
        ..p.clone()
    };
    assert_eq!(no_strength.indirect_boost(2, 0.9), 0.05);
    // Direct: 0.72 + 2 * 0.3 = 1.32.
    assert!((0.72 + 2.0 * p.direct - 1.32).abs() < 1e-12);
    p.validate().unwrap();
    let err = MentionBoostProfile {
        indirect: f64::NAN,
        ..p
    }
    .validate()
    .unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidParameter {
            name: "indirect",
            ..
        }
    ));
}

#[test]
fn graph_proximity_seed_003() {
    let p = GraphProximityProfile::default();
    // weight 8, 1 hop, 3 mentions: 0.8 * 1 * (0.7 + 0.3 * min(log2(4) / 5, 1)) = 0.656.
    let s = graph_proximity(8.0, 1, 3, &p);
    assert!((s - 0.656).abs() < 1e-12, "{s}");
    // 2 hops halve, 3 hops quarter.
    assert!((graph_proximity(8.0, 2, 3, &p) - 0.328).abs() < 1e-12);
    assert!((graph_proximity(8.0, 3, 3, &p) - 0.164).abs() < 1e-12);
    // Mention boost saturates at 1 (log2(32) / 5 = 1): full weight.
    assert!((graph_proximity(10.0, 1, 31, &p) - 1.0).abs() < 1e-12);
    assert!((graph_proximity(10.0, 1, 1000, &p) - 1.0).abs() < 1e-12);
    // No mentions: the 0.7 floor.
    assert!((graph_proximity(5.0, 1, 0, &p) - 0.35).abs() < 1e-12);

    let out = graph_proximity_scores(&[8.0, 5.0], &[1, 2], &[3, 0], &p).unwrap();
    assert_eq!(out[0], graph_proximity(8.0, 1, 3, &p));
    let err = graph_proximity_scores(&[8.0, 5.0], &[1, 0], &[3, 0], &p).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("chunks row 1: hop = 0 is below 1"),
        "{err}"
    );
    let err = graph_proximity_scores(&[f64::INFINITY], &[1], &[3], &p).unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidValue {
            column: "weight",
            row: 0,
            ..
        }
    ));
    let bad = GraphProximityProfile {
        mention_floor: 1.1,
        ..p
    };
    let err = graph_proximity_scores(&[1.0], &[1], &[3], &bad).unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidParameter {
            name: "mention_floor",
            ..
        }
    ));
}

#[test]
fn composite_seed_004() {
    // 0.9 match, 1 hop, 0.8 confidence: 0.9 * 0.5 * 0.8 = 0.36.
    assert!((composite(0.9, 1, 0.8) - 0.36).abs() < 1e-15);
    assert_eq!(composite(0.9, 0, 0.8), 0.9 * 1.0 * 0.8);
    let out = composite_scores(&[0.9, 1.0], &[1, 3], &[0.8, 1.0]).unwrap();
    assert_eq!(out, vec![composite(0.9, 1, 0.8), 0.25]);
    let err = composite_scores(&[0.9, 1.0], &[1, 3], &[0.8, f64::NAN]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "facts row 1: confidence = NaN is not finite (NaN or infinite)"
    );
    let err = composite_scores(&[0.9], &[1, 3], &[0.8]).unwrap_err();
    assert!(matches!(err, Error::LengthMismatch { column: "hop", .. }));
}

#[test]
fn rerank_seed_002() {
    let p = RerankProfile::default();
    // Query 0: three memories; the first is 10 days old, the second fresh, the third null.
    let created = [NOW - 10 * DAY, NOW, NULL_TIME, NOW - DAY / 2];
    let r = rerank_batch(&[0, 3, 4], Some(&created), None, None, NOW, &p).unwrap();
    let s0 = 0.5 * 1.0 + 0.3 * 0.95f64.powf(10.0) + 0.15 * 1.0 + 0.05 * 1.0;
    let s1 = 0.5 * 0.5 + 0.3 * 1.0 + 0.15 * 1.0 + 0.05 * 1.0;
    let s2 = 0.5 * (1.0 / 3.0) + 0.3 * 1.0 + 0.15 * 1.0 + 0.05 * 1.0;
    let s3 = 0.5 * 1.0 + 0.3 * 1.0 + 0.15 * 1.0 + 0.05 * 1.0;
    assert_eq!(r.scores, vec![s0, s1, s2, s3]);
    assert_eq!(r.order, vec![0, 1, 2, 3]);
    // Floor division: 1.5 days in the future is -2 days; 36 hours old is 1 day.
    assert_eq!(recency(NOW + DAY + DAY / 2, NOW, &p), 0.95f64.powf(-2.0));
    assert_eq!(recency(NOW - DAY - DAY / 2, NOW, &p), 0.95);
    // Zero confidence and access: 0.5 + 0.3 = 0.8 still beats 0.25 + 0.3 + 0.15 + 0.05.
    let r = rerank_batch(&[0, 2], None, Some(&[0.0, 1.0]), Some(&[0.0, 1.0]), NOW, &p).unwrap();
    assert_eq!(r.order, vec![0, 1]);
    let heavy = RerankProfile {
        w_similarity: 0.0,
        ..p.clone()
    };
    let r = rerank_batch(&[0, 2], None, Some(&[0.0, 1.0]), None, NOW, &heavy).unwrap();
    assert_eq!(r.order, vec![1, 0]);
    // Ties keep input order.
    let r = rerank_batch(&[0, 3], None, None, None, NOW, &heavy).unwrap();
    assert_eq!(r.order, vec![0, 1, 2]);
}

#[test]
fn rerank_large_batch_matches_single_queries() {
    let p = RerankProfile::default();
    let n_queries = 4000;
    let per = 10;
    let n = n_queries * per;
    assert!(n > PAR_THRESHOLD);
    let created: Vec<i64> = (0..n).map(|i| NOW - (i as i64 % 97) * 3_607).collect();
    let confidence: Vec<f64> = (0..n).map(|i| (i % 7) as f64 / 7.0).collect();
    let offsets: Vec<usize> = (0..=n_queries).map(|q| q * per).collect();
    let all = rerank_batch(&offsets, Some(&created), Some(&confidence), None, NOW, &p).unwrap();
    for q in (0..n_queries).step_by(101) {
        let rows = q * per..(q + 1) * per;
        let one = rerank_batch(
            &[0, per],
            Some(&created[rows.clone()]),
            Some(&confidence[rows.clone()]),
            None,
            NOW,
            &p,
        )
        .unwrap();
        assert_eq!(one.scores, all.scores[rows.clone()]);
        let global: Vec<usize> = one.order.iter().map(|i| i + rows.start).collect();
        assert_eq!(global, all.order[rows]);
    }
}

#[test]
fn rerank_validation() {
    let p = RerankProfile::default();
    let err = rerank_batch(&[0, 2], None, Some(&[0.5, f64::NAN]), None, NOW, &p).unwrap_err();
    assert_eq!(
        err.to_string(),
        "memories row 1: confidence = NaN is not finite (NaN or infinite)"
    );
    let err = rerank_batch(&[0, 2], Some(&[NOW]), None, None, NOW, &p).unwrap_err();
    assert_eq!(
        err.to_string(),
        "memories.created_at has 1 rows, expected 2"
    );
    let err = rerank_batch(&[0, 2, 1], None, None, None, NOW, &p).unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidParameter {
            name: "query_offsets",
            ..
        }
    ));
    let err = rerank_batch(&[], None, None, None, NOW, &p).unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidParameter {
            name: "query_offsets",
            ..
        }
    ));
    let bad = RerankProfile {
        day_seconds: 0,
        ..p
    };
    let err = rerank_batch(&[0], None, None, None, NOW, &bad).unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidParameter {
            name: "day_seconds",
            ..
        }
    ));
}

/// The numpy form of [`graph_proximity_chunks`]: every mention slot scored by
/// [`graph_proximity_scores`], then a scan keeping each chunk's first best above -1.
fn proximity_chunks_reference(
    csr: MentionCsr<'_>,
    entities: &[i64],
    weights: &[f64],
    hops: &[u32],
    p: &GraphProximityProfile,
) -> (Vec<i64>, Vec<f64>, Vec<i64>) {
    let (mut w, mut h, mut m, mut c, mut e) = (vec![], vec![], vec![], vec![], vec![]);
    for (i, &ent) in entities.iter().enumerate() {
        let (a, b) = (csr.offsets[ent as usize], csr.offsets[ent as usize + 1]);
        for j in a as usize..b as usize {
            w.push(weights[i]);
            h.push(hops[i]);
            m.push(csr.counts[j] as u32);
            c.push(csr.chunks[j]);
            e.push(ent);
        }
    }
    let scores = graph_proximity_scores(&w, &h, &m, p).unwrap();
    let (mut chunks, mut best, mut from): (Vec<i64>, Vec<f64>, Vec<i64>) = (vec![], vec![], vec![]);
    for ((&ch, &s), &ent) in c.iter().zip(&scores).zip(&e) {
        match chunks.iter().position(|&x| x == ch) {
            Some(k) if s > best[k] => {
                best[k] = s;
                from[k] = ent;
            }
            Some(_) => {}
            None if s > -1.0 => {
                chunks.push(ch);
                best.push(s);
                from.push(ent);
            }
            None => {}
        }
    }
    (chunks, best, from)
}

#[test]
fn graph_proximity_chunks_seed_003() {
    let p = GraphProximityProfile::default();
    // Entity 0 -> chunks 5 (3 mentions), 6 (1); entity 1 -> chunks 6 (31), 7 (1);
    // entity 2 -> none.
    let csr = MentionCsr {
        offsets: &[0, 2, 4, 4],
        chunks: &[5, 6, 6, 7],
        counts: &[3, 1, 31, 1],
    };
    let (c, s, e) =
        graph_proximity_chunks(csr, &[0, 1, 2], &[8.0, 10.0, 1.0], &[1, 2, 1], &p).unwrap();
    assert_eq!(c, vec![5, 6, 7]);
    // Chunk 6: entity 0's 0.8 * (0.7 + 0.3 * 0.2) = 0.608 beats entity 1's
    // 1.0 * 0.5 * (0.7 + 0.3 * 1) = 0.5.
    assert_eq!(e, vec![0, 0, 1]);
    assert_eq!(s[0], graph_proximity(8.0, 1, 3, &p));
    assert_eq!(s[1], graph_proximity(8.0, 1, 1, &p));
    assert!((s[1] - 0.608).abs() < 1e-12 && graph_proximity(10.0, 2, 31, &p) == 0.5);
    let (c2, s2, e2) =
        proximity_chunks_reference(csr, &[0, 1, 2], &[8.0, 10.0, 1.0], &[1, 2, 1], &p);
    assert_eq!((c.clone(), s.clone()), (c2, s2));
    assert_eq!(e, e2);
    // Ties go to the first entity; scores at or below -1 never count.
    let (c, _, e) =
        graph_proximity_chunks(csr, &[1, 0, 1], &[1.0, 1.0, 5.0], &[1, 1, 1], &p).unwrap();
    assert_eq!((c, e), (vec![6, 7, 5], vec![1, 1, 0]));
    let neg = graph_proximity_chunks(csr, &[0], &[-100.0], &[1], &p).unwrap();
    assert!(neg.0.is_empty());
    // Nothing related: nothing scored.
    let none = graph_proximity_chunks(csr, &[], &[], &[], &p).unwrap();
    assert!(none.0.is_empty());
}

#[test]
fn graph_proximity_chunks_errors() {
    let p = GraphProximityProfile::default();
    let csr = MentionCsr {
        offsets: &[0, 2, 2],
        chunks: &[5, 6],
        counts: &[3, 1],
    };
    let err = graph_proximity_chunks(csr, &[0], &[1.0, 2.0], &[1], &p).unwrap_err();
    assert_eq!(err.to_string(), "entities.weights has 2 rows, expected 1");
    let err = graph_proximity_chunks(csr, &[0], &[1.0], &[], &p).unwrap_err();
    assert_eq!(err.to_string(), "entities.hops has 0 rows, expected 1");
    let err = graph_proximity_chunks(csr, &[0, 2], &[1.0, 1.0], &[1, 1], &p).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("entities row 1: entity = 2 is outside"),
        "{err}"
    );
    let err = graph_proximity_chunks(csr, &[0], &[f64::NAN], &[1], &p).unwrap_err();
    assert!(
        err.to_string().starts_with("entities row 0: weight = NaN"),
        "{err}"
    );
    let err = graph_proximity_chunks(csr, &[0], &[1.0], &[0], &p).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("entities row 0: hop = 0 is below 1"),
        "{err}"
    );
    // Weight and hop are only checked where they are used (an entity with mentions).
    graph_proximity_chunks(csr, &[1], &[f64::NAN], &[0], &p).unwrap();
    let bad = MentionCsr {
        counts: &[3, -1],
        ..csr
    };
    let err = graph_proximity_chunks(bad, &[0], &[1.0], &[1], &p).unwrap_err();
    assert!(err.to_string().contains("mention count = -1"), "{err}");
    let bad = MentionCsr {
        offsets: &[0, 3, 3],
        ..csr
    };
    let err = graph_proximity_chunks(bad, &[0], &[1.0], &[1], &p).unwrap_err();
    assert!(err.to_string().contains("out of bounds"), "{err}");
    let bad_profile = GraphProximityProfile { hop_base: 0.0, ..p };
    let err = graph_proximity_chunks(csr, &[], &[], &[], &bad_profile).unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidParameter {
            name: "hop_base",
            ..
        }
    ));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// The kernel equals the numpy form (score every slot, keep each chunk's first best).
    #[test]
    fn graph_proximity_chunks_equals_the_numpy_form(
        degrees in proptest::collection::vec(0usize..5, 1..8),
        chunk_seed in proptest::collection::vec(0i64..10, 40),
        count_seed in proptest::collection::vec(0i64..40, 40),
        picks in proptest::collection::vec((0usize..8, 0usize..6, 1u32..4), 0..12),
    ) {
        let p = GraphProximityProfile::default();
        let mut offsets = vec![0i64];
        for d in &degrees {
            offsets.push(offsets[offsets.len() - 1] + *d as i64);
        }
        let n = *offsets.last().unwrap() as usize;
        let csr = MentionCsr { offsets: &offsets, chunks: &chunk_seed[..n], counts: &count_seed[..n] };
        let weight_of = [0.0, 1.0, 3.0, 3.0, 10.0, -2.0];
        let entities: Vec<i64> = picks.iter().map(|t| (t.0 % degrees.len()) as i64).collect();
        let weights: Vec<f64> = picks.iter().map(|t| weight_of[t.1]).collect();
        let hops: Vec<u32> = picks.iter().map(|t| t.2).collect();
        let got = graph_proximity_chunks(csr, &entities, &weights, &hops, &p).unwrap();
        let want = proximity_chunks_reference(csr, &entities, &weights, &hops, &p);
        proptest::prop_assert_eq!(&got.0, &want.0);
        proptest::prop_assert_eq!(&got.2, &want.2);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        proptest::prop_assert_eq!(bits(&got.1), bits(&want.1));
    }
}
