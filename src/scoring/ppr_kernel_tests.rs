#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::float_cmp
)]

use super::chunks::*;
use crate::batch::check_len;
use crate::{Error, Result};
use proptest::prelude::*;

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The single-pass form [`entity_chunk_scores`] replaced: a hash map of per-chunk
/// (primary, mention) sums, filled in input order.
fn chunk_scores_ref(
    csr: MentionCsr<'_>,
    primary: Option<&[i64]>,
    entities: &[i64],
    scores: &[f64],
) -> Result<(Vec<i64>, Vec<f64>)> {
    check_len("entities", "scores", entities.len(), scores.len())?;
    let n_entities = csr.n_entities()?;
    if let Some(p) = primary {
        check_len("entities", "primary", n_entities, p.len())?;
    }
    let mut acc: rustc_hash::FxHashMap<i64, (f64, f64)> = Default::default();
    let mut rest = Vec::new();
    for (i, &e) in entities.iter().enumerate() {
        if e < 0 || e as usize >= n_entities {
            return Err(bad_value(i, "entity", e, "outside the mention index"));
        }
        let pc = primary.map_or(-1, |p| p[e as usize]);
        if pc >= 0 {
            acc.entry(pc).or_insert((0.0, 0.0)).0 += scores[i];
        } else {
            rest.push(i);
        }
    }
    for i in rest {
        let slots = csr.range(i, entities[i])?;
        let total: f64 = csr.counts[slots.clone()]
            .iter()
            .fold(0.0, |t, &c| t + c as f64);
        let denom = total.max(1e-300);
        for j in slots {
            let c = csr.chunks[j];
            if c < 0 {
                return Err(bad_value(i, "mention chunk", c, "negative"));
            }
            acc.entry(c).or_insert((0.0, 0.0)).1 += scores[i] * csr.counts[j] as f64 / denom;
        }
    }
    let mut out: Vec<(i64, f64)> = acc.into_iter().map(|(c, (p, m))| (c, p + m)).collect();
    out.sort_unstable_by_key(|&(c, _)| c);
    Ok(out.into_iter().unzip())
}

/// A mention CSR over `n_e` entities and `n_c` chunks, a primary column (maybe), and
/// entity scores (repeats, zeros and negative zeros included).
#[allow(clippy::type_complexity)]
fn csr_case() -> impl Strategy<
    Value = (
        Vec<i64>,
        Vec<i64>,
        Vec<i64>,
        Option<Vec<i64>>,
        Vec<i64>,
        Vec<f64>,
    ),
> {
    (1usize..8, 1i64..8).prop_flat_map(|(n_e, n_c)| {
        (
            prop::collection::vec(prop::collection::vec((0..n_c, 0i64..5), 0..4), n_e),
            prop::option::of(prop::collection::vec(-1..n_c, n_e)),
            prop::collection::vec(
                (
                    0..n_e as i64,
                    prop_oneof![Just(0.0), Just(-0.0), -1.0f64..1.0, 1e-9f64..1e-6],
                ),
                0..12,
            ),
        )
            .prop_map(|(per, primary, picks)| {
                let mut offsets = vec![0i64];
                let (mut chunks, mut counts) = (Vec::new(), Vec::new());
                for slots in per {
                    for (c, n) in slots {
                        chunks.push(c);
                        counts.push(n);
                    }
                    offsets.push(chunks.len() as i64);
                }
                let (ents, scores) = picks.into_iter().unzip();
                (offsets, chunks, counts, primary, ents, scores)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn entity_chunk_scores_equal_the_single_pass_form(
        (offsets, chunks, counts, primary, ents, scores) in csr_case()
    ) {
        let csr = MentionCsr { offsets: &offsets, chunks: &chunks, counts: &counts };
        let got = entity_chunk_scores(csr, primary.as_deref(), &ents, &scores).unwrap();
        let (c, s) = chunk_scores_ref(csr, primary.as_deref(), &ents, &scores).unwrap();
        prop_assert_eq!(&got.chunks, &c);
        prop_assert_eq!(bits(&got.scores), bits(&s));
        prop_assert_eq!(got.n_positive, s.iter().filter(|&&v| v > 0.0).count());
        // Chunk ids beyond the packed sort key's 40 bits take the tuple sort.
        let big = |c: i64| if c >= 0 { c + (1 << 41) } else { c };
        let chunks: Vec<i64> = chunks.iter().map(|&c| big(c)).collect();
        let primary: Option<Vec<i64>> =
            primary.map(|p| p.into_iter().map(big).collect());
        let csr = MentionCsr { offsets: &offsets, chunks: &chunks, counts: &counts };
        let got = entity_chunk_scores(csr, primary.as_deref(), &ents, &scores).unwrap();
        let (c, s) = chunk_scores_ref(csr, primary.as_deref(), &ents, &scores).unwrap();
        prop_assert_eq!(&got.chunks, &c);
        prop_assert_eq!(bits(&got.scores), bits(&s));
    }

    #[test]
    fn passage_seed_mass_equals_the_python_loop(
        (offsets, ents, counts, _, _, _) in csr_case(),
        spec in prop::option::of(prop::collection::vec(
            prop_oneof![Just(1.0), 0.01f64..1.0], 8)),
        seeds in prop::collection::vec((0usize..8, 0.0f64..1.0), 0..5),
    ) {
        // `ents` plays the chunk -> entity side here: chunk ids index `offsets`.
        let n = offsets.len() - 1;
        let chunks: Vec<i64> = seeds.iter().map(|&(c, _)| (c % n) as i64).collect();
        let weights: Vec<f64> = seeds.iter().map(|&(_, w)| w).collect();
        let got = passage_seed_mass(&offsets, &ents, &counts, spec.as_deref(), &chunks,
            &weights);
        // The Python: a dict in insertion order, sorted at the end.
        let mut mass: Vec<(i64, f64)> = Vec::new();
        let mut failed = false;
        for (&c, &wc) in chunks.iter().zip(&weights) {
            let (a, b) = (offsets[c as usize] as usize, offsets[c as usize + 1] as usize);
            let mut x: Vec<f64> = counts[a..b].iter().map(|&v| v as f64).collect();
            let mut tot = 0.0;
            for v in &x { tot += v; }
            if !x.is_empty() && tot == 0.0 { failed = true; break; }
            x = x.iter().map(|v| v / tot).collect();
            if let Some(s) = &spec {
                x = x.iter().zip(&ents[a..b]).map(|(v, &e)| v * s[e as usize]).collect();
                let mut tot = 0.0;
                for v in &x { tot += v; }
                x = x.iter().map(|v| v / tot).collect();
            }
            for (&e, &v) in ents[a..b].iter().zip(&x) {
                match mass.iter_mut().find(|m| m.0 == e) {
                    Some(m) => m.1 += v * wc,
                    None => mass.push((e, 0.0 + v * wc)),
                }
            }
        }
        if failed {
            prop_assert!(got.is_err());
        } else {
            let (e, m) = got.unwrap();
            mass.sort_by_key(|m| m.0);
            let (we, wm): (Vec<i64>, Vec<f64>) = mass.into_iter().unzip();
            prop_assert_eq!(e, we);
            prop_assert_eq!(bits(&m), bits(&wm));
        }
    }

    #[test]
    fn cosine_graph_top_equals_a_dict_and_a_sort(
        dense in prop::collection::vec((0i64..30, -1.0f64..1.0), 0..12),
        more in prop::collection::vec((0i64..30, -1.0f64..1.0), 0..12),
        graph in prop::collection::btree_map(0i64..30,
            prop_oneof![Just(0.0), Just(-0.0), Just(0.25), 0.0f64..1.0], 0..20),
        graph_weight in prop_oneof![Just(0.0), Just(1.0), 0.0f64..3.0],
        k in 0usize..15,
    ) {
        let (dc, dv): (Vec<i64>, Vec<f64>) = dense.iter().copied().unzip();
        let (mc, mv): (Vec<i64>, Vec<f64>) = more.iter().copied().unzip();
        let (gc, gv): (Vec<i64>, Vec<f64>) = graph.iter().map(|(&c, &v)| (c, v)).unzip();
        let got = cosine_graph_top(&dc, &dv, &mc, &mv, &gc, &gv, graph_weight, k).unwrap();
        // The Python: a dict (first position, last value), `c + norm * g`, a sort by
        // (-score, chunk).
        let mut cos: Vec<(i64, f64)> = Vec::new();
        for (c, v) in dense.iter().chain(&more) {
            match cos.iter_mut().find(|x| x.0 == *c) {
                Some(x) => x.1 = *v,
                None => cos.push((*c, *v)),
            }
        }
        let gmax = gv.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let gmax = if gv.is_empty() { 0.0 } else { gmax };
        let norm = if gmax > 0.0 { graph_weight / gmax } else { 0.0 };
        let mut scored: Vec<(f64, i64, f64, f64)> = cos
            .iter()
            .map(|&(c, v)| {
                let g = graph.get(&c).copied().unwrap_or(0.0);
                (v + norm * g, c, v, g)
            })
            .collect();
        scored.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap().then(a.1.cmp(&b.1)));
        scored.truncate(k);
        prop_assert_eq!(&got.chunks, &scored.iter().map(|x| x.1).collect::<Vec<_>>());
        prop_assert_eq!(bits(&got.scores), bits(&scored.iter().map(|x| x.0).collect::<Vec<_>>()));
        prop_assert_eq!(bits(&got.cosines), bits(&scored.iter().map(|x| x.2).collect::<Vec<_>>()));
        prop_assert_eq!(bits(&got.graph), bits(&scored.iter().map(|x| x.3).collect::<Vec<_>>()));
        prop_assert!(got.graph_max == gmax);
    }
}

#[test]
fn entity_chunk_scores_report_errors_in_single_pass_order() {
    // Entity 0's mentions hold a negative chunk, entity 1's range is broken: a single
    // pass meets the negative chunk first.
    let offsets = [0i64, 1, 9];
    let chunks = [-2i64, 1];
    let counts = [1i64, 1];
    let csr = MentionCsr {
        offsets: &offsets,
        chunks: &chunks,
        counts: &counts,
    };
    let err = entity_chunk_scores(csr, None, &[0, 1], &[0.5, 0.5]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "entities row 0: mention chunk = -2 is negative"
    );
    let err = entity_chunk_scores(csr, None, &[1, 0], &[0.5, 0.5]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "entities row 0: mention offset = 9 is out of bounds"
    );
    let err = entity_chunk_scores(csr, None, &[1, 7], &[0.5, 0.5]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "entities row 1: entity = 7 is outside the mention index"
    );
    assert!(matches!(
        entity_chunk_scores(csr, None, &[0, 1], &[0.5]),
        Err(Error::LengthMismatch { .. })
    ));
}

#[test]
fn passage_seed_mass_by_hand_and_errors() {
    // Chunk 0 mentions entities 1 (once) and 2 (three times); chunk 1 mentions 2.
    let offsets = [0i64, 2, 3];
    let ents = [1i64, 2, 2];
    let counts = [1i64, 3, 2];
    let (e, m) = passage_seed_mass(&offsets, &ents, &counts, None, &[0, 1], &[0.5, 0.5]).unwrap();
    assert_eq!(e, vec![1, 2]);
    assert_eq!(m, vec![0.125, 0.375 + 0.5]);
    // Specificity 1 for entity 1, 1/3 for entity 2: shares 1/4 x 1, 3/4 x 1/3, renormalised.
    let spec = [1.0, 1.0, 1.0 / 3.0];
    let (e, m) = passage_seed_mass(&offsets, &ents, &counts, Some(&spec), &[0], &[1.0]).unwrap();
    assert_eq!(e, vec![1, 2]);
    assert!(
        (m[0] - 0.5).abs() < 1e-15 && (m[1] - 0.5).abs() < 1e-15,
        "{m:?}"
    );
    let err = passage_seed_mass(&offsets, &ents, &counts, None, &[2], &[1.0]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "chunks row 0: chunk = 2 is outside the mention index"
    );
    let err =
        passage_seed_mass(&offsets, &ents, &counts, Some(&spec[..2]), &[1], &[1.0]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "chunks row 0: mentioned entity = 2 is outside the entities"
    );
    let err = passage_seed_mass(&offsets, &ents, &[1, 3, 0], None, &[1], &[1.0]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "chunks row 0: mention counts = 0 is summing to zero"
    );
    let err = passage_seed_mass(&[0, 5], &ents, &counts, None, &[0], &[1.0]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "chunks row 0: mention offset = 5 is out of bounds"
    );
    assert!(matches!(
        passage_seed_mass(&offsets, &ents, &counts, None, &[0], &[]),
        Err(Error::LengthMismatch { .. })
    ));
}

#[test]
fn cosine_graph_top_by_hand_and_errors() {
    // Dense 5 (0.9) and 7 (0.2); the graph reached 3 (0.4), 7 (0.8): max 0.8, weight 1.
    let top = cosine_graph_top(
        &[5, 7],
        &[0.9, 0.2],
        &[3],
        &[0.1],
        &[3, 7],
        &[0.4, 0.8],
        1.0,
        2,
    )
    .unwrap();
    assert_eq!(top.chunks, vec![7, 5]);
    assert_eq!(top.scores, vec![0.2 + 1.25 * 0.8, 0.9]);
    assert_eq!(top.cosines, vec![0.2, 0.9]);
    assert_eq!(top.graph, vec![0.8, 0.0]);
    assert_eq!(top.graph_max, 0.8);
    // Equal scores (-0.0 and 0.0 alike) tie by chunk.
    let top = cosine_graph_top(&[9, 4], &[-0.0, 0.0], &[], &[], &[], &[], 1.0, 5).unwrap();
    assert_eq!(top.chunks, vec![4, 9]);
    let err = cosine_graph_top(&[], &[], &[], &[], &[3, 3], &[0.1, 0.2], 1.0, 2).unwrap_err();
    assert_eq!(
        err.to_string(),
        "reached row 1: chunk = 3 is not above the previous one (reached chunks must be \
         strictly ascending)"
    );
    let err = cosine_graph_top(&[1], &[f64::NAN], &[], &[], &[], &[], 1.0, 2).unwrap_err();
    assert_eq!(
        err.to_string(),
        "candidates row 0: cosines = NaN is not finite (NaN or infinite)"
    );
    let err = cosine_graph_top(&[1], &[0.5], &[], &[], &[], &[], -1.0, 2).unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidParameter {
            name: "graph_weight",
            ..
        }
    ));
    // A subnormal maximum overflows the normalisation: inf x 0 is NaN, refused.
    let err = cosine_graph_top(&[1], &[0.5], &[], &[], &[2], &[5e-324], 1.0, 2).unwrap_err();
    assert!(
        err.to_string().starts_with("candidates row 0: score = NaN"),
        "{err}"
    );
    assert!(matches!(
        cosine_graph_top(&[1, 2], &[0.5], &[], &[], &[], &[], 1.0, 2),
        Err(Error::LengthMismatch { .. })
    ));
}
