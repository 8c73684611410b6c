#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::float_cmp
)]

use super::ppr_rerank::*;
use crate::Error;

// Chunks 0..4; chunk 0 mentions entities {0, 1}, chunk 1 {1}, chunk 2 {2}, chunk 3 {0, 2}.
const CO: [i64; 5] = [0, 2, 3, 4, 6];
const CE: [i64; 6] = [0, 1, 1, 2, 0, 2];
const BW: [f64; 3] = [0.5, 0.25, 1.0];

fn params<'a>(named: NamedChunks<'a>, terms: Option<TermPostings<'a>>, k: usize) -> TopRerank<'a> {
    TopRerank {
        chunk_offsets: &CO,
        chunk_entities: &CE,
        bridge_weights: &BW,
        bridge: 0.4,
        named,
        cover: 0.4,
        top_cover: 0.4 * named.scores.iter().copied().fold(0.0, f64::max),
        terms,
        k,
    }
}

#[test]
fn bridge_takes_the_largest_shared_weight_and_the_top_stays_first() {
    let r = rerank_from_top(
        &[0, 1, 2, 3],
        &[1.0, 0.9, 0.95, 0.85],
        &params(NamedChunks::default(), None, 10),
    )
    .unwrap();
    // 1 shares entity 1 (0.25), 2 shares none, 3 shares entity 0 (0.5).
    assert_eq!(r.bridge, vec![0.4, 0.4 * 0.5, 0.4 * 0.25, 0.0]);
    assert_eq!(r.order, vec![0, 3, 1, 2]);
    assert_eq!(
        r.scores,
        vec![1.0 + 0.4, 0.85 + 0.4 * 0.5, 0.9 + 0.4 * 0.25, 0.95]
    );
}

#[test]
fn cover_needs_a_name_the_top_chunk_lacks_and_terms_count_new_words() {
    // Chunk 2 named by entity 2 (not in chunk 0), chunk 1 by entity 1 (in chunk 0).
    let named = NamedChunks {
        chunks: &[2, 1],
        scores: &[0.5, 1.0],
        offsets: &[0, 1, 2],
        entities: &[2, 1],
    };
    // Tenant rows 0..4; term 7 in rows {0, 2}, term 9 in rows {2, 3}; word 11 unknown.
    let terms = TermPostings {
        rows: &[0, 1, 2, 3],
        terms: &[7, 9],
        offsets: &[0, 2, 4],
        postings: &[0, 2, 2, 3],
        query_terms: &[7, 9, -1],
        n_words: 3,
        weight: 0.6,
    };
    let r = rerank_from_top(
        &[0, 1, 2, 3],
        &[1.0, 0.6, 0.5, 0.1],
        &params(named, Some(terms), 2),
    )
    .unwrap();
    assert_eq!(r.order, vec![0, 2]);
    assert_eq!(r.cover, vec![0.4 * 1.0, 0.4 * 0.5]);
    assert_eq!(r.terms, vec![0.6, 1.0 * (0.6 / 3.0)]);
    assert_eq!(r.scores[1], 0.5 + 0.0 + 0.4 * 0.5 + 0.6 / 3.0);
}

#[test]
fn empty_candidates_and_bad_input() {
    let p = params(NamedChunks::default(), None, 10);
    assert_eq!(
        rerank_from_top(&[], &[], &p).unwrap(),
        TopReranked::default()
    );
    assert!(matches!(
        rerank_from_top(&[0], &[], &p),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        rerank_from_top(&[9, 0], &[1.0, 0.5], &p),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        rerank_from_top(&[0, -1], &[1.0, 0.5], &p),
        Err(Error::InvalidParameter { .. })
    ));
}
