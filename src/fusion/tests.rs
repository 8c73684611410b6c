#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::common::*;
use super::hybrid::by_rank_nan_last;
use super::*;
use crate::Error;
use proptest::prelude::*;

fn bits(items: &[(i64, f64)]) -> Vec<(i64, u64)> {
    items.iter().map(|&(id, s)| (id, s.to_bits())).collect()
}

#[test]
fn rrf_hand_computed() {
    let a: &[i64] = &[1, 2, 3];
    let b: &[i64] = &[3, 1];
    let out = rrf(&[a, b], None, 60.0, None).unwrap();
    let s1 = 1.0 / 62.0 + 1.0 / 61.0; // id 1: rank 1 in a, rank 2 in b
    let s3 = 1.0 / 63.0 + 1.0 / 61.0; // id 3: rank 3 in a, rank 1 in b
    let s2 = 1.0 / 62.0;
    assert_eq!(out.len(), 3);
    assert_eq!(out[0].0, 1);
    assert!((out[0].1 - s1).abs() < 1e-15);
    assert_eq!(out[1].0, 3);
    assert!((out[1].1 - s3).abs() < 1e-15);
    assert_eq!(out[2], (2, s2));
}

#[test]
fn rrf_duplicate_counts_once_at_best_rank_and_weights() {
    let a: &[i64] = &[7, 8, 7];
    let out = rrf(&[a], Some(&[2.0]), 0.0, None).unwrap();
    assert_eq!(out, vec![(7, 2.0), (8, 1.0)]);
    let out = rrf(&[a], Some(&[2.0]), 0.0, Some(1)).unwrap();
    assert_eq!(out, vec![(7, 2.0)]);
    assert_eq!(rrf(&[a], None, 60.0, Some(0)).unwrap(), vec![]);
}

#[test]
fn rrf_ties_break_by_id() {
    let a: &[i64] = &[5];
    let b: &[i64] = &[4];
    let out = rrf(&[a, b], None, 60.0, None).unwrap();
    assert_eq!(out, vec![(4, 1.0 / 61.0), (5, 1.0 / 61.0)]);
}

#[test]
fn rrf_validation() {
    let a: &[i64] = &[1];
    for k in [f64::NAN, -1.0, f64::INFINITY] {
        let err = rrf(&[a], None, k, None).unwrap_err();
        assert!(
            matches!(err, Error::InvalidParameter { name: "k", .. }),
            "{err}"
        );
    }
    let err = rrf(&[a], Some(&[f64::NAN]), 60.0, None).unwrap_err();
    assert!(err.to_string().contains("weights[0] = NaN"), "{err}");
    let err = rrf(&[a], Some(&[1.0, 1.0]), 60.0, None).unwrap_err();
    assert!(matches!(
        err,
        Error::LengthMismatch {
            column: "weights",
            ..
        }
    ));
    let err = rrf_batch(&[1, 2], &[0, 2, 1], &[0, 2], &[1.0, 1.0], 60.0, None).unwrap_err();
    assert!(
        err.to_string()
            .contains("list_offsets[2] = 1 < list_offsets[1] = 2"),
        "{err}"
    );
    let err = rrf_batch(&[1, 2], &[0, 1], &[0, 1], &[1.0], 60.0, None).unwrap_err();
    assert!(err.to_string().contains("must end at 2"), "{err}");
    let err = rrf_batch(&[], &[], &[0], &[], 60.0, None).unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidParameter {
            name: "list_offsets",
            ..
        }
    ));
    let err = rrf_batch(&[1], &[1, 1], &[0, 1], &[1.0], 60.0, None).unwrap_err();
    assert!(err.to_string().contains("must start at 0"), "{err}");
    let err = rrf_batch(&[1], &[0, 1], &[0, 2], &[1.0], 60.0, None).unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidParameter {
            name: "query_offsets",
            ..
        }
    ));
}

#[test]
fn rrf_batch_offsets_and_empty_queries() {
    // Query 0: lists [1, 2] and [2]; query 1: no lists; query 2: list [9].
    let out = rrf_batch(
        &[1, 2, 2, 9],
        &[0, 2, 3, 4],
        &[0, 2, 2, 3],
        &[1.0; 3],
        60.0,
        None,
    )
    .unwrap();
    assert_eq!(out.offsets, vec![0, 2, 2, 3]);
    assert_eq!(out.ids, vec![2, 1, 9]);
    assert_eq!(out.n_queries(), 3);
    assert_eq!(out.query(1).unwrap().0, &[] as &[i64]);
    assert!(out.query(3).is_none());
}

#[test]
fn weighted_hand_computed() {
    let out = weighted(
        &[(&[1, 2], &[0.5, 0.25]), (&[2, 3], &[1.0, 4.0])],
        Some(&[2.0, 0.5]),
        false,
        None,
    )
    .unwrap();
    assert_eq!(out, vec![(3, 2.0), (1, 1.0), (2, 1.0)]);
    // Normalised: list 0 -> {1: 1.0, 2: 0.0}, list 1 -> {2: 0.0, 3: 1.0}.
    let out = weighted(
        &[(&[1, 2], &[0.5, 0.25]), (&[2, 3], &[1.0, 4.0])],
        None,
        true,
        None,
    )
    .unwrap();
    assert_eq!(out, vec![(1, 1.0), (3, 1.0), (2, 0.0)]);
    // All-equal list -> 1.0; duplicate keeps max.
    let out = weighted(&[(&[4, 5, 4], &[0.3, 0.3, 0.1])], None, true, None).unwrap();
    assert_eq!(out, vec![(4, 1.0), (5, 1.0)]);
    let out = weighted(&[(&[4, 4], &[0.1, 0.3])], None, false, None).unwrap();
    assert_eq!(out, vec![(4, 0.3)]);
}

#[test]
fn weighted_validation() {
    let err = weighted(&[(&[1, 2], &[0.5, f64::NAN])], None, false, None).unwrap_err();
    assert_eq!(
        err,
        Error::InvalidValue {
            table: "lists",
            row: 1,
            column: "scores",
            value: "NaN".into(),
            problem: "not finite (NaN or infinite)".into()
        }
    );
    let err = weighted(&[(&[1, 2], &[1e308, -1e308])], None, true, None).unwrap_err();
    assert!(err.to_string().contains("too wide to normalise"), "{err}");
    let err = weighted(
        &[(&[1], &[1e308]), (&[1], &[1e308])],
        Some(&[1e308, 1.0]),
        false,
        None,
    )
    .unwrap_err();
    assert!(matches!(err, Error::InvalidQuery { query: 0, .. }), "{err}");
    let err = weighted_batch(&[1], &[], &[0, 1], &[0, 1], &[1.0], false, None).unwrap_err();
    assert!(matches!(
        err,
        Error::LengthMismatch {
            column: "scores",
            ..
        }
    ));
    let err = weighted(&[(&[1], &[1.0])], Some(&[-1.0]), false, None).unwrap_err();
    assert!(
        err.to_string()
            .contains("weights[0] = -1 must be finite and >= 0"),
        "{err}"
    );
}

#[test]
fn additive_merge_seed_003() {
    // Base (hybrid) results 10, 11, 12; graph results 11, 20..26.
    let base_ids = [10, 11, 12];
    let base_scores = [0.9, 0.5, 0.01];
    let graph_ids = [11, 20, 21, 22, 23, 24, 25];
    let graph_scores = [0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2];
    let out = additive_merge(
        (&base_ids, &base_scores),
        (&graph_ids, &graph_scores),
        0.7,
        0.3,
        4,
    )
    .unwrap();
    let expect = vec![
        (10, 0.7 * 0.9 + 0.3 * 0.0, SOURCE_BASE),
        (11, 0.7 * 0.5 + 0.3 * 0.8, SOURCE_BOTH),
        (20, 0.7 * 0.0 + 0.3 * 0.7, SOURCE_GRAPH),
        (21, 0.7 * 0.0 + 0.3 * 0.6, SOURCE_GRAPH),
        (22, 0.7 * 0.0 + 0.3 * 0.5, SOURCE_GRAPH),
        (23, 0.7 * 0.0 + 0.3 * 0.4, SOURCE_GRAPH),
        (12, 0.7 * 0.01 + 0.3 * 0.0, SOURCE_BASE),
    ];
    assert_eq!(out, expect);
    let out = additive_merge((&[], &[]), (&[3, 2], &[1.0, 1.0]), 0.7, 0.3, 1).unwrap();
    assert_eq!(out, vec![(2, 0.3, SOURCE_GRAPH)]);
}

#[test]
fn additive_merge_validation() {
    let err = additive_merge((&[1], &[1.0]), (&[], &[]), f64::NAN, 0.3, 4).unwrap_err();
    assert!(matches!(err, Error::InvalidParameter { name: "alpha", .. }));
    let err = additive_merge((&[1], &[1.0]), (&[], &[]), 0.7, -0.3, 4).unwrap_err();
    assert!(matches!(err, Error::InvalidParameter { name: "beta", .. }));
    let err = additive_merge((&[1], &[1.0]), (&[2], &[f64::INFINITY]), 0.7, 0.3, 4).unwrap_err();
    assert!(
        err.to_string().starts_with("graph row 0: scores = inf"),
        "{err}"
    );
    let err =
        additive_merge_batch(&[1], &[1.0], &[0, 1], &[], &[], &[0, 0, 0], 0.7, 0.3, 4).unwrap_err();
    assert!(matches!(
        err,
        Error::LengthMismatch {
            column: "graph_offsets",
            ..
        }
    ));
}

#[test]
fn dedupe_and_top_k() {
    let ids = [3, 1, 3, 2, 5, 5];
    let scores = [0.1, 0.5, 0.7, 0.5, 1.0, 2.0];
    let out = dedupe_max_batch(&ids, &scores, &[0, 4, 6]).unwrap();
    assert_eq!(out.ids, vec![3, 1, 2, 5]);
    assert_eq!(out.scores, vec![0.7, 0.5, 0.5, 2.0]);
    assert_eq!(out.offsets, vec![0, 3, 4]);
    let out = top_k_batch(&ids, &scores, &[0, 4, 6], 2).unwrap();
    assert_eq!(out.ids, vec![3, 1, 5, 5]);
    assert_eq!(out.scores, vec![0.7, 0.5, 2.0, 1.0]);
    let err = top_k_batch(&ids, &scores[..5], &[0, 6], 2).unwrap_err();
    assert!(matches!(err, Error::LengthMismatch { .. }));
    // -0.0 and 0.0 tie, then by id.
    let out = top_k_batch(&[2, 1], &[0.0, -0.0], &[0, 2], 2).unwrap();
    assert_eq!(out.ids, vec![1, 2]);
}

#[test]
fn large_batches_take_the_parallel_path_and_match_single_queries() {
    // 2000 queries x 2 lists x 10 ids = 40000 ids > PAR_THRESHOLD.
    let n_queries = 2000;
    let ids: Vec<i64> = (0..n_queries * 20)
        .map(|i| (i * 7919 % 37) as i64)
        .collect();
    let scores: Vec<f64> = (0..ids.len()).map(|i| (i % 13) as f64 - 6.0).collect();
    assert!(ids.len() > PAR_THRESHOLD);
    let list_offsets: Vec<usize> = (0..=2 * n_queries).map(|l| l * 10).collect();
    let query_offsets: Vec<usize> = (0..=n_queries).map(|q| q * 2).collect();
    let weights = [1.0, 0.5].repeat(n_queries);
    let fused = rrf_batch(&ids, &list_offsets, &query_offsets, &weights, 60.0, Some(5)).unwrap();
    let mixed = weighted_batch(
        &ids,
        &scores,
        &list_offsets,
        &query_offsets,
        &weights,
        true,
        None,
    )
    .unwrap();
    let query_rows: Vec<usize> = (0..=n_queries).map(|q| q * 20).collect();
    let top = top_k_batch(&ids, &scores, &query_rows, 3).unwrap();
    let merged = additive_merge_batch(
        &ids,
        &scores,
        &query_rows,
        &ids,
        &scores,
        &query_rows,
        0.7,
        0.3,
        4,
    )
    .unwrap();
    assert_eq!(fused.n_queries(), n_queries);
    for q in (0..n_queries).step_by(97) {
        let (a, b) = (&ids[q * 20..q * 20 + 10], &ids[q * 20 + 10..q * 20 + 20]);
        let (sa, sb) = (
            &scores[q * 20..q * 20 + 10],
            &scores[q * 20 + 10..q * 20 + 20],
        );
        let single = rrf(&[a, b], Some(&[1.0, 0.5]), 60.0, Some(5)).unwrap();
        let (got_ids, got_scores) = fused.query(q).unwrap();
        assert_eq!(
            bits(&single),
            bits(
                &got_ids
                    .iter()
                    .copied()
                    .zip(got_scores.iter().copied())
                    .collect::<Vec<_>>()
            )
        );
        let single = weighted(&[(a, sa), (b, sb)], Some(&[1.0, 0.5]), true, None).unwrap();
        let (got_ids, got_scores) = mixed.query(q).unwrap();
        assert_eq!(
            bits(&single),
            bits(
                &got_ids
                    .iter()
                    .copied()
                    .zip(got_scores.iter().copied())
                    .collect::<Vec<_>>()
            )
        );
        let rows = q * 20..q * 20 + 20;
        let single = top_k_batch(&ids[rows.clone()], &scores[rows.clone()], &[0, 20], 3).unwrap();
        assert_eq!(top.query(q), single.query(0));
        let single = additive_merge(
            (&ids[rows.clone()], &scores[rows.clone()]),
            (&ids[rows.clone()], &scores[rows]),
            0.7,
            0.3,
            4,
        )
        .unwrap();
        let range = merged.offsets[q]..merged.offsets[q + 1];
        assert_eq!(single.len(), range.len());
        for (i, row) in range.enumerate() {
            assert_eq!(
                single[i],
                (merged.ids[row], merged.scores[row], merged.sources[row])
            );
        }
    }
}

fn lists_strategy() -> impl Strategy<Value = Vec<Vec<(i64, f64)>>> {
    prop::collection::vec(
        prop::collection::vec((0i64..12, -1.0e3f64..1.0e3), 0..10),
        0..6,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn rrf_is_invariant_under_list_permutation(
        (lists, perm) in lists_strategy().prop_flat_map(|lists| {
            let n = lists.len();
            (Just(lists), Just((0..n).collect::<Vec<_>>()).prop_shuffle())
        }),
        k in 0.0f64..100.0,
        weights in prop::collection::vec(0.0f64..5.0, 6),
    ) {
        let ids: Vec<Vec<i64>> =
            lists.iter().map(|l| l.iter().map(|x| x.0).collect()).collect();
        let refs: Vec<&[i64]> = ids.iter().map(Vec::as_slice).collect();
        let w = &weights[..ids.len()];
        let permuted: Vec<&[i64]> = perm.iter().map(|&i| refs[i]).collect();
        let pw: Vec<f64> = perm.iter().map(|&i| w[i]).collect();
        let a = rrf(&refs, Some(w), k, None).unwrap();
        let b = rrf(&permuted, Some(&pw), k, None).unwrap();
        prop_assert_eq!(bits(&a), bits(&b));
    }

    #[test]
    fn weighted_is_invariant_under_list_permutation(
        (lists, perm) in lists_strategy().prop_flat_map(|lists| {
            let n = lists.len();
            (Just(lists), Just((0..n).collect::<Vec<_>>()).prop_shuffle())
        }),
        normalize in any::<bool>(),
        weights in prop::collection::vec(0.0f64..5.0, 6),
    ) {
        let ids: Vec<Vec<i64>> =
            lists.iter().map(|l| l.iter().map(|x| x.0).collect()).collect();
        let scores: Vec<Vec<f64>> =
            lists.iter().map(|l| l.iter().map(|x| x.1).collect()).collect();
        let pairs: Vec<(&[i64], &[f64])> =
            ids.iter().zip(&scores).map(|(i, s)| (i.as_slice(), s.as_slice())).collect();
        let w = &weights[..ids.len()];
        let permuted: Vec<(&[i64], &[f64])> = perm.iter().map(|&i| pairs[i]).collect();
        let pw: Vec<f64> = perm.iter().map(|&i| w[i]).collect();
        let a = weighted(&pairs, Some(w), normalize, None).unwrap();
        let b = weighted(&permuted, Some(&pw), normalize, None).unwrap();
        prop_assert_eq!(bits(&a), bits(&b));
    }

    #[test]
    fn additive_merge_keeps_every_base_id_and_adds_at_most_max_new(
        base in prop::collection::vec((0i64..20, -10.0f64..10.0), 0..12),
        graph in prop::collection::vec((0i64..20, -10.0f64..10.0), 0..12),
        max_new in 0usize..6,
        alpha in 0.0f64..2.0,
        beta in 0.0f64..2.0,
    ) {
        let (bi, bs): (Vec<i64>, Vec<f64>) = base.iter().copied().unzip();
        let (gi, gs): (Vec<i64>, Vec<f64>) = graph.iter().copied().unzip();
        let out = additive_merge((&bi, &bs), (&gi, &gs), alpha, beta, max_new).unwrap();
        let mut base_set: Vec<i64> = bi.clone();
        base_set.sort_unstable();
        base_set.dedup();
        let mut out_ids: Vec<i64> = out.iter().map(|x| x.0).collect();
        out_ids.sort_unstable();
        let before = out_ids.len();
        out_ids.dedup();
        prop_assert_eq!(before, out_ids.len(), "an id appears twice");
        for id in &base_set {
            prop_assert!(out_ids.binary_search(id).is_ok(), "base id {} dropped", id);
        }
        let new = out.iter().filter(|x| x.2 == SOURCE_GRAPH).count();
        prop_assert!(new <= max_new);
        prop_assert_eq!(out.len(), base_set.len() + new);
        for id in out.iter().filter(|x| x.2 == SOURCE_GRAPH).map(|x| x.0) {
            prop_assert!(base_set.binary_search(&id).is_err());
        }
        for pair in out.windows(2) {
            prop_assert!(by_rank(&(pair[0].0, pair[0].1), &(pair[1].0, pair[1].1)).is_lt());
        }
    }

    #[test]
    fn top_k_equals_prefix_of_full_sort(
        items in prop::collection::vec((0i64..50, prop::sample::select(vec![-1.0, -0.0, 0.0, 0.5, 1.0, 2.5])), 0..40),
        k in 0usize..45,
    ) {
        let (ids, scores): (Vec<i64>, Vec<f64>) = items.iter().copied().unzip();
        let got = top_k_batch(&ids, &scores, &[0, ids.len()], k).unwrap();
        let mut full = items.clone();
        full.sort_by(by_rank);
        full.truncate(k);
        let got: Vec<(i64, f64)> = got.ids.into_iter().zip(got.scores).collect();
        // -0.0 and 0.0 rank equal, so compare with == on scores.
        prop_assert_eq!(got.len(), full.len());
        for (g, f) in got.iter().zip(&full) {
            prop_assert_eq!(g.0, f.0);
            prop_assert!(g.1 == f.1);
        }
    }
}

/// The source's form: per-chunk dicts (the last score of a repeated id), the hybrid
/// score per chunk as written, then a full sort by (score desc, NaN last, id).
fn hybrid_reference(
    vector: &[(i64, f64)],
    text: &[(i64, f64)],
    vw: f64,
    tw: f64,
    how: TextScore,
    k: usize,
) -> Vec<(i64, f64)> {
    let v: std::collections::HashMap<i64, f64> = vector.iter().copied().collect();
    let top = text.first().map_or(0.0, |x| x.1);
    let t: std::collections::HashMap<i64, f64> = text
        .iter()
        .map(|&(id, s)| {
            let ts = match how {
                TextScore::OpenClaw => 1.0,
                TextScore::Max if top > 0.0 => s / top,
                TextScore::Max => 0.0,
            };
            (id, ts)
        })
        .collect();
    let mut out: Vec<(i64, f64)> = v
        .iter()
        .map(|(&id, &vs)| (id, vw * vs + tw * t.get(&id).copied().unwrap_or(0.0)))
        .collect();
    for (&id, &ts) in &t {
        if !v.contains_key(&id) {
            out.push((id, vw * 0.0 + tw * ts));
        }
    }
    out.sort_by(by_rank_nan_last);
    out.truncate(k);
    out
}

#[test]
fn hybrid_merge_seed_003() {
    // Vector: 1 -> 0.9, 2 -> 0.5 (then 0.4: the last wins); text (BM25 best first):
    // 2 -> 4.0, 3 -> 2.0; max-normalised: 2 -> 1.0, 3 -> 0.5.
    let run = |how, k| {
        hybrid_merge_batch(
            &[1, 2, 2],
            &[0.9, 0.5, 0.4],
            &[0, 3],
            &[2, 3],
            &[4.0, 2.0],
            &[0, 2],
            0.7,
            0.3,
            how,
            k,
        )
        .unwrap()
    };
    let got = run(TextScore::Max, 10);
    let want = [
        (1, 0.7 * 0.9 + 0.3 * 0.0),
        (2, 0.7 * 0.4 + 0.3 * 1.0),
        (3, 0.7 * 0.0 + 0.3 * 0.5),
    ];
    let mut want = want.to_vec();
    want.sort_by(by_rank_nan_last);
    assert_eq!(got.ids, want.iter().map(|x| x.0).collect::<Vec<_>>());
    assert_eq!(got.scores, want.iter().map(|x| x.1).collect::<Vec<_>>());
    assert_eq!(got.offsets, vec![0, 3]);
    assert_eq!(run(TextScore::Max, 1).ids, vec![1]);
    assert!(run(TextScore::Max, 0).ids.is_empty());
    let oc = run(TextScore::OpenClaw, 10);
    assert_eq!(oc.ids, vec![1, 2, 3]);
    assert_eq!(oc.scores[1], 0.7 * 0.4 + 0.3 * 1.0);
    assert_eq!(oc.scores[2], 0.7 * 0.0 + 0.3 * 1.0);
    // A query without BM25 scores above 0: text scores 0.0.
    let zero = hybrid_merge_batch(
        &[],
        &[],
        &[0, 0],
        &[5],
        &[0.0],
        &[0, 1],
        0.7,
        0.3,
        TextScore::Max,
        3,
    )
    .unwrap();
    assert_eq!((zero.ids, zero.scores), (vec![5], vec![0.0]));
    // NaN ranks last, as numpy's lexsort puts it.
    let nan = hybrid_merge_batch(
        &[1, 2],
        &[f64::NAN, -1.0],
        &[0, 2],
        &[],
        &[],
        &[0, 0],
        1.0,
        0.0,
        TextScore::Max,
        3,
    )
    .unwrap();
    assert_eq!(nan.ids, vec![2, 1]);
}

#[test]
fn hybrid_merge_errors() {
    let err = hybrid_merge_batch(
        &[1],
        &[],
        &[0, 1],
        &[],
        &[],
        &[0, 0],
        0.7,
        0.3,
        TextScore::Max,
        3,
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "vector.scores has 0 rows, expected 1");
    let err = hybrid_merge_batch(
        &[],
        &[],
        &[0],
        &[],
        &[],
        &[0, 0],
        0.7,
        0.3,
        TextScore::Max,
        3,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("text_offsets: holds 1 queries but vector_offsets holds 0"),
        "{err}"
    );
    let err = hybrid_merge_batch(
        &[],
        &[],
        &[0, 2],
        &[],
        &[],
        &[0, 0],
        0.7,
        0.3,
        TextScore::Max,
        3,
    )
    .unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidParameter {
            name: "vector_offsets",
            ..
        }
    ));
    let err = hybrid_merge_batch(
        &[],
        &[],
        &[0, 0],
        &[],
        &[],
        &[0, 0],
        f64::NAN,
        0.3,
        TextScore::Max,
        3,
    )
    .unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidParameter {
            name: "vector_weight",
            ..
        }
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The kernel equals the per-chunk dict form, bit for bit, on batches of queries.
    #[test]
    fn hybrid_merge_equals_the_dict_form(
        queries in prop::collection::vec(
            (
                prop::collection::vec((0i64..20, prop::sample::select(vec![-0.75, -0.0, 0.0, 0.1, 0.3, 0.9, 1.0])), 0..12),
                prop::collection::btree_map(0i64..20, prop::sample::select(vec![0.0, 1e-6, 0.5, 1.7, 3.25]), 0..12),
            ),
            0..5,
        ),
        vw in prop::sample::select(vec![0.0, 0.3, 0.7, 1.0, 2.5]),
        tw in prop::sample::select(vec![0.0, 0.3, 0.7, 1.0, 2.5]),
        openclaw in any::<bool>(),
        k in 0usize..25,
    ) {
        let how = if openclaw { TextScore::OpenClaw } else { TextScore::Max };
        let (mut vi, mut vs, mut vo, mut ti, mut ts, mut to) =
            (vec![], vec![], vec![0], vec![], vec![], vec![0]);
        let mut texts = Vec::new();
        for (vector, text) in &queries {
            for &(id, s) in vector {
                vi.push(id);
                vs.push(s);
            }
            vo.push(vi.len());
            // BM25 hits come best first.
            let mut t: Vec<(i64, f64)> = text.iter().map(|(&id, &s)| (id, s)).collect();
            t.sort_by(|a, b| b.1.total_cmp(&a.1));
            for &(id, s) in &t {
                ti.push(id);
                ts.push(s);
            }
            to.push(ti.len());
            texts.push(t);
        }
        let got = hybrid_merge_batch(&vi, &vs, &vo, &ti, &ts, &to, vw, tw, how, k).unwrap();
        prop_assert_eq!(got.n_queries(), queries.len());
        for (q, (vector, _)) in queries.iter().enumerate() {
            let want = hybrid_reference(vector, &texts[q], vw, tw, how, k);
            let (ids, scores) = got.query(q).unwrap();
            let want_ids: Vec<i64> = want.iter().map(|x| x.0).collect();
            prop_assert_eq!(ids, want_ids.as_slice());
            let to_bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let want_scores: Vec<f64> = want.iter().map(|x| x.1).collect();
            prop_assert_eq!(to_bits(scores), to_bits(&want_scores));
        }
    }
}
