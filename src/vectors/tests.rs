#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::cmp::Ordering;

use super::codes::*;
use super::part::*;
use super::quant::*;
use super::search::*;
use super::simd::*;
use crate::Result;
use proptest::prelude::*;

/// A [`Query4`] of given `i16` values (`2 h` of them, in `-127..=127`), blocked as
/// [`quantised_query`] blocks them.
fn query4(wide: &[i16]) -> Query4 {
    let h = wide.len() / 2;
    let body = h - h % STEP4;
    let mut blocks = Vec::new();
    for half in [&wide[..body], &wide[h..h + body]] {
        blocks.extend(
            half.chunks_exact(STEP4)
                .map(|c| std::array::from_fn(|i| c[i] as i8)),
        );
    }
    Query4 {
        wide: wide.to_vec(),
        blocks,
    }
}

/// The obvious exact top-k: every row scored with [`dot`], sorted by (score desc, row).
fn exact(vectors: &[f32], dim: usize, q: &[f32], k: usize) -> Vec<(f32, u32)> {
    let mut all: Vec<(f32, u32)> = vectors
        .chunks_exact(dim)
        .zip(0u32..)
        .map(|(v, i)| (dot(q, v), i))
        .collect();
    all.sort_by(better);
    all.truncate(k);
    all
}

fn unit_rows(raw: &[f32], dim: usize) -> Vec<f32> {
    let mut out = raw.to_vec();
    for row in out.chunks_exact_mut(dim) {
        let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        row.iter_mut().for_each(|x| *x /= norm);
    }
    out
}

fn mean(vectors: &[f32], dim: usize) -> Vec<f32> {
    let n = (vectors.len() / dim).max(1) as f32;
    let mut c = vec![0f32; dim];
    for row in vectors.chunks_exact(dim) {
        c.iter_mut().zip(row).for_each(|(a, b)| *a += b);
    }
    c.iter_mut().for_each(|a| *a /= n);
    c
}

/// A part's arrays built from `v` (owned, for [`Built::part`]).
struct Built {
    v: Vec<f32>,
    centre: Vec<f32>,
    codes: Vec<u64>,
    int4: Vec<u8>,
    scales: Vec<f32>,
    dim: usize,
}

impl Built {
    fn new(v: &[f32], dim: usize) -> Self {
        let centre = mean(v, dim);
        let codes = sketch_codes(v, &centre, dim).unwrap();
        let (int4, scales) = sketch_int4(v, &centre, dim).unwrap();
        Built {
            v: v.to_vec(),
            centre,
            codes,
            int4,
            scales,
            dim,
        }
    }

    fn part(&self) -> SketchPart<'_> {
        SketchPart {
            codes: &self.codes,
            vectors: &self.v,
            centre: &self.centre,
            int4: &self.int4,
            scales: &self.scales,
            dim: self.dim,
        }
    }
}

fn run_refine(
    v: &[f32],
    dim: usize,
    q: &[f32],
    k: usize,
    rerank: usize,
    refine: usize,
) -> SketchMatches {
    sketch_search(&Built::new(v, dim).part(), q, k, rerank, refine).unwrap()
}

/// Without the 4-bit stage (`refine = rerank`).
fn run(v: &[f32], dim: usize, q: &[f32], k: usize, rerank: usize) -> SketchMatches {
    run_refine(v, dim, q, k, rerank, rerank)
}

/// Deterministic pseudo-random values in `[-1, 1)`.
fn noise(len: usize, seed: u64) -> Vec<f32> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ seed;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

#[test]
fn codes_are_signs_of_centred_values() {
    let v = [1.0, -2.0, 3.0, 0.0, 0.5, 0.5];
    let codes = sketch_codes(&v, &[0.0, 0.0, 1.0], 3).unwrap();
    assert_eq!(codes, vec![0b101, 0b010]);
    let wide: Vec<f32> = (0..130)
        .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    let codes = sketch_codes(&wide, &[0.0; 130], 130).unwrap();
    assert_eq!(codes.len(), 3);
    assert_eq!(codes[0], 0x5555_5555_5555_5555);
    assert_eq!(codes[2], 0b01);
}

#[test]
fn dot_matches_naive_sum_closely() {
    let a: Vec<f32> = (0..37).map(|i| (i as f32).sin()).collect();
    let b: Vec<f32> = (0..37).map(|i| (i as f32 * 0.3).cos()).collect();
    let naive: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(x * y)).sum();
    assert!((f64::from(dot(&a, &b)) - naive).abs() < 1e-5);
}

#[test]
fn padding_ties_and_k_beyond_size() {
    // Rows 0 and 2 are the same vector: a tie broken by position.
    let v = unit_rows(&[1.0, 0.0, 0.0, 1.0, 1.0, 0.0, -1.0, 0.0], 2);
    let m = run(&v, 2, &[1.0, 0.0], 6, 100);
    assert_eq!(m.counts, vec![4]);
    assert_eq!(&m.positions[..4], &[0, 2, 1, 3]);
    assert_eq!(&m.positions[4..], &[-1, -1]);
    assert!(m.scores[4].is_nan() && m.scores[5].is_nan());
    assert_eq!(m.scores[0], 1.0);
}

#[test]
fn int4_rows_are_scaled_centred_values() {
    let v = [1.0, -2.0, 0.5, 3.0, 0.0, 0.5];
    let (int4, scales) = sketch_int4(&v, &[0.0, 1.0, 0.5], 3).unwrap();
    // Column maxima of |v - c|: 3, 3, 0 (a constant column quantises to 0).
    assert_eq!(scales, vec![3.0 / 7.0, 3.0 / 7.0, 0.0]);
    // Values (2, -7, 0) and (7, -2, 0), stored + 8; h = 2: byte 0 holds dimensions 0
    // and 2, byte 1 dimension 1 and the padding (8).
    assert_eq!(int4, vec![10 | 8 << 4, 1 | 8 << 4, 15 | 8 << 4, 6 | 8 << 4]);
    let mut q4 = Query4::default();
    quantised_query(&[0.25, -1.0, 9.0], &scales, &mut q4);
    // q * scales = (0.75, -3, 0) / 7: the peak 3 / 7 maps to 127; padded to 2 h = 4.
    assert_eq!(q4.wide, vec![32, -127, 0, 0]);
    assert!(q4.blocks.is_empty()); // h = 2: no whole 16-byte block
    quantised_query(&[1.0, 1.0, 1.0], &[0.0, 0.0, 0.0], &mut q4);
    assert_eq!(q4.wide, vec![0, 0, 0, 0]);
    // 40 dimensions: h = 20, one block per half, dimensions 0..16 and 20..36.
    let q: Vec<f32> = (0..40).map(|j| j as f32 - 20.0).collect();
    quantised_query(&q, &[1.0; 40], &mut q4);
    assert_eq!(q4.blocks.len(), 2);
    for i in 0..16 {
        assert_eq!(i16::from(q4.blocks[0][i]), q4.wide[i]);
        assert_eq!(i16::from(q4.blocks[1][i]), q4.wide[20 + i]);
    }
}

#[test]
fn int4_dot_matches_the_plain_sum() {
    for dim in [1usize, 2, 37, 64, 75, 384] {
        let h = int4_bytes(dim);
        let wide: Vec<i16> = (0..2 * h).map(|i| (i * 7 % 255) as i16 - 127).collect();
        let q = query4(&wide);
        let rows: Vec<Vec<u8>> = (0..3)
            .map(|r| (0..h).map(|i| ((i * 13 + r * 31) % 256) as u8).collect())
            .collect();
        for row in &rows {
            let want: i32 = (0..h)
                .map(|j| {
                    i32::from(wide[j]) * i32::from(row[j] & 15)
                        + i32::from(wide[h + j]) * i32::from(row[j] >> 4)
                })
                .sum();
            assert_eq!(dot4(&q, row), want, "dim {dim}");
            assert_eq!(dot4_portable(&wide, row), want, "dim {dim}");
        }
    }
}

#[test]
fn empty_part_and_empty_batch() {
    let empty = SketchPart {
        codes: &[],
        vectors: &[],
        centre: &[0.0, 0.0],
        int4: &[],
        scales: &[0.0, 0.0],
        dim: 2,
    };
    let m = sketch_search(&empty, &[1.0, 0.0], 3, 8, 4).unwrap();
    assert_eq!(m.counts, vec![0]);
    assert_eq!(m.positions, vec![-1; 3]);
    let v = unit_rows(&[1.0, 0.0], 2);
    let m = run(&v, 2, &[], 3, 8);
    assert!(m.counts.is_empty() && m.positions.is_empty());
}

#[test]
fn errors_not_panics() {
    let b = Built::new(&[1.0f32, 0.0], 2);
    let ok = b.part();
    let q = [1.0, 0.0];
    assert!(sketch_search(&ok, &q, 1, 4, 4).is_ok());
    assert!(sketch_search(&ok, &q, 0, 4, 4).is_err());
    assert!(sketch_search(&ok, &q, 1, 0, 4).is_err());
    assert!(sketch_search(&ok, &q, 1, 4, 0).is_err());
    assert!(sketch_search(&ok, &[1.0], 1, 4, 4).is_err());
    let bad = [
        SketchPart { codes: &[], ..ok },
        SketchPart {
            centre: &[0.0],
            ..ok
        },
        SketchPart {
            int4: &[1, 2],
            ..ok
        },
        SketchPart {
            scales: &[1.0],
            ..ok
        },
        SketchPart { dim: 0, ..ok },
    ];
    for part in &bad {
        assert!(sketch_search(part, &q, 1, 4, 4).is_err());
    }
    assert!(sketch_codes(&[1.0, 2.0, 3.0], &[0.0, 0.0], 2).is_err());
    assert!(sketch_int4(&[1.0, 2.0, 3.0], &[0.0, 0.0], 2).is_err());
    assert!(sketch_int4(&[1.0, 2.0], &[0.0], 2).is_err());
}

/// Embedding-like rows: a rank-8 signal plus a little noise, unit length.
fn structured(n: usize, dim: usize, seed: u64) -> Vec<f32> {
    let basis = noise(8 * dim, 1);
    let mix = noise(n * 8, seed);
    let eps = noise(n * dim, seed + 1);
    let mut raw = vec![0f32; n * dim];
    for (i, row) in raw.chunks_exact_mut(dim).enumerate() {
        for (j, x) in row.iter_mut().enumerate() {
            *x = (0..8)
                .map(|b| mix[i * 8 + b] * basis[b * dim + j])
                .sum::<f32>()
                + 0.2 * eps[i * dim + j];
        }
    }
    unit_rows(&raw, dim)
}

#[test]
fn int4_stage_keeps_recall_on_structured_data() {
    // 2,000 rows of dimension 96, 40 queries from the same distribution: the 4-bit
    // stage (rerank 400 -> refine 40) finds what the exact rerank of 400 finds.
    let (n, dim, k) = (2000, 96, 10);
    let v = structured(n, dim, 10);
    let qs = structured(40, dim, 20);
    let b = Built::new(&v, dim);
    let with = sketch_search(&b.part(), &qs, k, 400, 40).unwrap();
    let without = sketch_search(&b.part(), &qs, k, 400, 400).unwrap();
    let (mut hits, mut same) = (0, 0);
    for (i, q) in qs.chunks_exact(dim).enumerate() {
        let want: Vec<i64> = exact(&v, dim, q, k)
            .iter()
            .map(|x| i64::from(x.1))
            .collect();
        let got = &with.positions[i * k..(i + 1) * k];
        hits += got.iter().filter(|p| want.contains(p)).count();
        same += got
            .iter()
            .filter(|p| without.positions[i * k..(i + 1) * k].contains(p))
            .count();
    }
    assert!(hits >= 396, "recall@10 {hits} / 400");
    assert!(same >= 396, "4-bit stage agrees on {same} / 400");
}

#[test]
fn scan_keeps_the_nearest_codes() {
    // 200 rows: the query equals row 123; with rerank 1 only Hamming distance 0 rows
    // (row 123 and any other row with its exact code) can be returned.
    let dim = 64;
    let v = unit_rows(&noise(200 * dim, 0), dim);
    let q = v[123 * dim..124 * dim].to_vec();
    let m = run(&v, dim, &q, 1, 1);
    assert_eq!(m.positions, vec![123]);
    // Through the 4-bit stage too: 20 candidates, the best 1 by 4-bit score.
    let m = run_refine(&v, dim, &q, 1, 20, 1);
    assert_eq!(m.positions, vec![123]);
}

/// A part of `n` rows and `q` queries: batches below and from [`SKETCH_PARALLEL_FROM`] (8).
fn part() -> impl Strategy<Value = (usize, Vec<f32>, Vec<f32>)> {
    (1usize..80, 1usize..40, 1usize..12).prop_flat_map(|(dim, n, q)| {
        (
            Just(dim),
            // Small integer grids make exact score ties likely.
            prop::collection::vec((-3i8..=3).prop_map(f32::from), n * dim),
            prop::collection::vec((-3i8..=3).prop_map(f32::from), q * dim),
        )
    })
}

#[test]
fn exact_search_errors_not_panics() {
    let v = [1.0f32, 0.0, 0.0, 1.0];
    let err = |r: Result<SketchMatches>| r.unwrap_err().to_string();
    assert!(err(exact_search(&v, 0, &v[..2], 1, None)).contains("dim must be >= 1"));
    assert!(err(exact_search(&v, 2, &v[..2], 0, None)).contains("k must be >= 1"));
    assert!(err(exact_search(&v[..3], 2, &v[..2], 1, None))
        .contains("vectors: 3 values are not whole rows of dimension 2"));
    assert!(err(exact_search(&v, 2, &v[..1], 1, None))
        .contains("queries: 1 values are not whole rows of dimension 2"));
    assert!(err(exact_search(&v, 2, &v[..2], 1, Some(&[0, 2])))
        .contains("positions: position 2 is out of range for 2 rows"));
    let none = exact_search(&[], 2, &v[..2], 3, None).unwrap();
    assert_eq!(none.counts, vec![0]);
    assert_eq!(none.positions, vec![-1, -1, -1]);
    // An absurd k is an error, not an allocation that aborts the process.
    assert!(err(exact_search(&v, 2, &v[..2], 1 << 60, None)).contains(
        "invalid parameter k: 1152921504606846976 result cells (queries x k) cannot be allocated"
    ));
    let empty = exact_search(&v, 2, &[], 3, Some(&[])).unwrap();
    assert!(empty.counts.is_empty() && empty.positions.is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Exact search equals the obvious sort by (score desc, row), bit for bit, over
    /// every row or a subset; a batch equals its queries one by one.
    #[test]
    fn exact_search_is_the_sorted_scores(
        (dim, raw, qraw) in part(), k in 1usize..12, pick in prop::collection::vec(any::<u16>(), 0..20),
    ) {
        let n = raw.len() / dim;
        let all = exact_search(&raw, dim, &qraw, k, None).unwrap();
        let subset: Vec<u32> = pick.iter().map(|&p| u32::from(p) % n as u32).collect();
        let some = exact_search(&raw, dim, &qraw, k, Some(&subset)).unwrap();
        for (i, q) in qraw.chunks_exact(dim).enumerate() {
            let want = exact(&raw, dim, q, k);
            let got: Vec<(f32, u32)> = (0..all.counts[i] as usize)
                .map(|j| (all.scores[i * k + j], all.positions[i * k + j] as u32))
                .collect();
            prop_assert_eq!(got, want);
            let mut sub: Vec<(f32, u32)> = subset
                .iter()
                .map(|&r| (dot(q, &raw[r as usize * dim..(r as usize + 1) * dim]), r))
                .collect();
            sub.sort_by(better);
            sub.truncate(k);
            let got: Vec<(f32, u32)> = (0..some.counts[i] as usize)
                .map(|j| (some.scores[i * k + j], some.positions[i * k + j] as u32))
                .collect();
            prop_assert_eq!(got, sub);
            let single = exact_search(&raw, dim, q, k, None).unwrap();
            prop_assert_eq!(&single.positions[..], &all.positions[i * k..(i + 1) * k]);
        }
    }

    /// The SSE dot products (where compiled) are the portable ones, bit for bit, for
    /// any length (whole 8-lane chunks and tails) and any number of rows at once.
    #[test]
    fn dot_forms_agree(
        (q, rows) in (0usize..70).prop_flat_map(|d| (
            prop::collection::vec(-4.0f32..4.0, d),
            prop::collection::vec(prop::collection::vec(-4.0f32..4.0, d), 4),
        )),
    ) {
        let r: [&[f32]; 4] = [&rows[0], &rows[1], &rows[2], &rows[3]];
        let many = dot_many::<4>(&q, r);
        prop_assert_eq!(many.map(f32::to_bits), dot_many_portable::<4>(&q, r).map(f32::to_bits));
        for (j, row) in rows.iter().enumerate() {
            prop_assert_eq!(dot(&q, row).to_bits(), many[j].to_bits());
        }
    }

    /// The SIMD 4-bit dot product (where compiled) equals the portable one and the
    /// plain sum, for every width (whole 16-byte blocks and tails) and extreme values.
    #[test]
    fn dot4_forms_agree(
        (wide, row) in (1usize..200).prop_flat_map(|h| (
            prop::collection::vec(-127i16..=127, 2 * h),
            prop::collection::vec(any::<u8>(), h),
        )),
    ) {
        let h = row.len();
        let want: i32 = (0..h)
            .map(|j| i32::from(wide[j]) * i32::from(row[j] & 15)
                + i32::from(wide[h + j]) * i32::from(row[j] >> 4))
            .sum();
        prop_assert_eq!(dot4(&query4(&wide), &row), want);
        prop_assert_eq!(dot4_portable(&wide, &row), want);
        let peak = vec![-127i16; 2 * h];
        let full = vec![0xffu8; h];
        prop_assert_eq!(dot4(&query4(&peak), &full), -127 * 30 * h as i32);
    }

    /// With `rerank >= n` the result is the exact top-k, ties by row, bit for bit.
    #[test]
    fn full_rerank_is_exact(
        (dim, raw, qraw) in part(), k in 1usize..50, extra in 0usize..5, refine in 1usize..60,
    ) {
        let v: Vec<f32> = raw.chunks_exact(dim).flat_map(|r| {
            if r.iter().all(|x| *x == 0.0) { let mut r = r.to_vec(); r[0] = 1.0; r } else { r.to_vec() }
        }).collect();
        let n = v.len() / dim;
        // `rerank >= n` scores every row exactly whatever `refine` is.
        let m = run_refine(&v, dim, &qraw, k, n + extra, refine);
        for (i, q) in qraw.chunks_exact(dim).enumerate() {
            let want = exact(&v, dim, q, k);
            prop_assert_eq!(m.counts[i] as usize, want.len());
            for (j, (s, r)) in want.iter().enumerate() {
                prop_assert_eq!(m.positions[i * k + j], i64::from(*r));
                prop_assert_eq!(m.scores[i * k + j].to_bits(), s.to_bits());
            }
            for j in want.len()..k {
                prop_assert_eq!(m.positions[i * k + j], -1);
                prop_assert!(m.scores[i * k + j].is_nan());
            }
        }
    }

    /// Any rerank: results are distinct rows, sorted best first (ties by row), each with
    /// its exact score, and a batch answers as its queries one by one.
    #[test]
    fn partial_rerank_is_consistent(
        (dim, raw, qraw) in part(), k in 1usize..20, rerank in 1usize..30, refine in 1usize..30,
    ) {
        let n = raw.len() / dim;
        let m = run_refine(&raw, dim, &qraw, k, rerank, refine);
        for (i, q) in qraw.chunks_exact(dim).enumerate() {
            let c = m.counts[i] as usize;
            prop_assert_eq!(c, k.min(n));
            let got: Vec<(f32, u32)> = (0..c)
                .map(|j| (m.scores[i * k + j], m.positions[i * k + j] as u32))
                .collect();
            for w in got.windows(2) {
                prop_assert_eq!(better(&w[0], &w[1]), Ordering::Less);
            }
            for (s, r) in &got {
                let r = *r as usize;
                prop_assert_eq!(s.to_bits(), dot(q, &raw[r * dim..(r + 1) * dim]).to_bits());
            }
            let single = run_refine(&raw, dim, q, k, rerank, refine);
            prop_assert_eq!(&single.positions[..], &m.positions[i * k..(i + 1) * k]);
        }
    }

    /// Every nibble holds a value in `-7..=7` plus 8 within half a scale of the centred
    /// value; the high nibbles past `dim` (odd `dim`) hold 8, the value 0.
    #[test]
    fn int4_nibbles_round_the_centred_values((dim, raw, _q) in part()) {
        let n = raw.len() / dim;
        let centre = mean(&raw, dim);
        let (int4, scales) = sketch_int4(&raw, &centre, dim).unwrap();
        let h = int4_bytes(dim);
        prop_assert_eq!(int4.len(), n * h);
        for (row, v) in int4.chunks_exact(h).zip(raw.chunks_exact(dim)) {
            for j in 0..2 * h {
                let nibble = if j < h { row[j] & 15 } else { row[j - h] >> 4 };
                if j >= dim {
                    prop_assert_eq!(nibble, NIBBLE_ZERO);
                    continue;
                }
                prop_assert!((1..=15).contains(&nibble));
                let back = f32::from(i8::try_from(nibble).unwrap() - 8) * scales[j];
                let x = v[j] - centre[j];
                prop_assert!((back - x).abs() <= scales[j] * 0.5001 + 1e-6, "{back} vs {x}");
            }
        }
    }

    /// `refine >= rerank`: the 4-bit stage is skipped, the answer is the f32 rerank's.
    #[test]
    fn refine_beyond_rerank_skips_int4(
        (dim, raw, qraw) in part(), k in 1usize..20, rerank in 1usize..30, extra in 0usize..5,
    ) {
        let a = run_refine(&raw, dim, &qraw, k, rerank, rerank + extra);
        let b = run(&raw, dim, &qraw, k, rerank);
        prop_assert_eq!(a.positions, b.positions);
        prop_assert_eq!(
            a.scores.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            b.scores.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
    }

    /// The 4-bit stage keeps the `refine` best approximate scores (ties by position):
    /// checked against the stages written out by hand (signed values, no offset).
    #[test]
    fn int4_stage_matches_reference(
        (dim, raw, qraw) in part(), k in 1usize..10, rerank in 1usize..40, refine in 1usize..40,
    ) {
        let n = raw.len() / dim;
        let b = Built::new(&raw, dim);
        let m = sketch_search(&b.part(), &qraw, k, rerank, refine).unwrap();
        let (rerank, refine) = (rerank.max(k), refine.max(k));
        for (i, q) in qraw.chunks_exact(dim).enumerate() {
            let mut keep: Vec<u32> = (0..n as u32).collect();
            if rerank < n {
                let mut code = vec![0u64; words_for(dim)];
                sign_code(q, &b.centre, &mut code);
                let words = code.len();
                let ham = |r: u32| -> u32 {
                    let c = &b.codes[r as usize * words..(r as usize + 1) * words];
                    c.iter().zip(&code).map(|(x, y)| (x ^ y).count_ones()).sum()
                };
                keep.sort_by_key(|&r| (ham(r), r));
                keep.truncate(rerank);
                if refine < rerank {
                    // Signed values of the quantised query and rows, dimension by
                    // dimension; the stored + 8 offset must not change the ranking.
                    let h = int4_bytes(dim);
                    let mut q4 = Query4::default();
                    quantised_query(q, &b.scales, &mut q4);
                    let q4 = q4.wide;
                    let approx = |r: u32| -> i32 {
                        let row = &b.int4[r as usize * h..(r as usize + 1) * h];
                        // Dimension j sits at q4[j] and in byte j (low) or j - h (high).
                        (0..dim).map(|j| {
                            let nibble = if j < h { row[j] & 15 } else { row[j - h] >> 4 };
                            i32::from(q4[j]) * (i32::from(nibble) - 8)
                        }).sum()
                    };
                    keep.sort_by_key(|&r| (std::cmp::Reverse(approx(r)), r));
                    keep.truncate(refine);
                }
            }
            let mut want: Vec<(f32, u32)> = keep
                .iter()
                .map(|&r| (dot(q, &raw[r as usize * dim..(r as usize + 1) * dim]), r))
                .collect();
            want.sort_by(better);
            want.truncate(k);
            let got: Vec<i64> = m.positions[i * k..i * k + want.len()].to_vec();
            prop_assert_eq!(got, want.iter().map(|x| i64::from(x.1)).collect::<Vec<_>>());
        }
    }
}

/// The rows [`nearest`] keeps, the obvious way: sorted by (distance, position), the first
/// `rerank`, back in position order.
fn nearest_reference(dist: &[u32], rerank: usize) -> Vec<u32> {
    let mut order: Vec<u32> = (0..dist.len() as u32).collect();
    order.sort_by_key(|&i| (dist[i as usize], i));
    order.truncate(rerank);
    order.sort_unstable();
    order
}

proptest! {
    #[test]
    fn nearest_keeps_the_rerank_nearest_by_position(
        dist in prop::collection::vec(0u32..6, 1..70),
        share in 0.0f64..1.0,
    ) {
        let rerank = ((dist.len() as f64 * share) as usize).clamp(1, dist.len());
        let mut hist = vec![0u32; 7];
        for &d in &dist {
            hist[d as usize] += 1;
        }
        let mut idx = vec![99];
        nearest(&dist, &hist, rerank, &mut idx);
        prop_assert_eq!(idx, nearest_reference(&dist, rerank));
    }
}
