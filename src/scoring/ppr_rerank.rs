//! The `ppr` recipe's re-ranking from its top passage: bridge, cover and terms.
//!
//! A multi-hop question's second passage rarely looks like the question: it names the first
//! hop's answer. After fusion the recipe keeps its best chunk first and re-ranks the next ones
//! by what they add to it: a rare entity shared with it (`bridge`), a name the query gives
//! that it does not mention (`cover`), and query words it lacks (`terms`, read from the BM25
//! postings). One call per query, a dozen candidates: every sum is taken in the order of the
//! Python form (`tests/test_recipe_ppr_rerank.py` checks it to the bit).

use std::cmp::Ordering;

use crate::batch::check_len;
use crate::{Error, Result};

/// The query's named chunks (the cover step): primary chunk `chunks[i]` is named with match
/// score `scores[i]` by the entities `entities[offsets[i]..offsets[i + 1]]`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NamedChunks<'a> {
    pub chunks: &'a [i64],
    pub scores: &'a [f64],
    pub offsets: &'a [i64],
    pub entities: &'a [i64],
}

/// One tenant's BM25 postings and the query's terms (the terms step).
///
/// Rows `rows` (ascending) are the tenant's; term `terms[g]` (ascending) has its postings
/// `postings[offsets[g]..offsets[g + 1]]`, each a position in `rows` (ascending). The query's
/// distinct words (stopwords aside) number `n_words`; `query_terms` are the term ids of
/// those the vocabulary knows (-1 or an id the tenant lacks: no posting).
#[derive(Debug, Clone, Copy)]
pub struct TermPostings<'a> {
    pub rows: &'a [i64],
    pub terms: &'a [i64],
    pub offsets: &'a [i64],
    pub postings: &'a [u32],
    pub query_terms: &'a [i64],
    pub n_words: usize,
    pub weight: f64,
}

/// The re-ranking's weights and inputs besides the candidates.
#[derive(Debug, Clone, Copy)]
pub struct TopRerank<'a> {
    /// Chunk -> entities CSR of the mentions: chunk `c` mentions
    /// `chunk_entities[chunk_offsets[c]..chunk_offsets[c + 1]]`.
    pub chunk_offsets: &'a [i64],
    pub chunk_entities: &'a [i64],
    /// Each entity's bridge weight (`1 / sqrt(chunks mentioning it)`); read only when
    /// `bridge != 0`.
    pub bridge_weights: &'a [f64],
    pub bridge: f64,
    pub named: NamedChunks<'a>,
    pub cover: f64,
    /// The top chunk's cover gain (`cover x` the best match score, 0 when the query names
    /// no chunk).
    pub top_cover: f64,
    /// None: no terms step (no keyword index, no word, or one candidate).
    pub terms: Option<TermPostings<'a>>,
    /// Candidates kept.
    pub k: usize,
}

/// The re-ranked candidates, best first: positions in the input, final scores, and the
/// bridge, cover and terms gains of each.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TopReranked {
    pub order: Vec<usize>,
    pub scores: Vec<f64>,
    pub bridge: Vec<f64>,
    pub cover: Vec<f64>,
    pub terms: Vec<f64>,
}

fn bad(name: &'static str, problem: String) -> Error {
    Error::param(name, problem)
}

/// Slots `a..b` of a CSR's offsets at `i`, checked against `len` items.
fn csr_range(offsets: &[i64], i: usize, len: usize, name: &'static str) -> Result<(usize, usize)> {
    let (a, b) = match (offsets.get(i), offsets.get(i + 1)) {
        (Some(&a), Some(&b)) => (a, b),
        _ => return Err(bad(name, format!("row {i} is outside the offsets"))),
    };
    if a < 0 || b < a || b as usize > len {
        return Err(bad(
            name,
            format!("offsets {a}..{b} of row {i} are out of bounds"),
        ));
    }
    Ok((a as usize, b as usize))
}

/// The entities chunk `c` mentions.
fn entities_of<'a>(p: &TopRerank<'a>, c: i64) -> Result<&'a [i64]> {
    if c < 0 {
        return Err(bad("rows", format!("chunk {c} is negative")));
    }
    let (a, b) = csr_range(
        p.chunk_offsets,
        c as usize,
        p.chunk_entities.len(),
        "chunk_offsets",
    )?;
    Ok(&p.chunk_entities[a..b])
}

/// Which of the query's terms (their posting slots `groups`) chunk `row` holds, into `out`;
/// a row outside the tenant holds none.
fn holds(t: &TermPostings<'_>, groups: &[Option<(usize, usize)>], row: i64, out: &mut Vec<bool>) {
    out.clear();
    let loc = t.rows.binary_search(&row).ok();
    for g in groups {
        let held = match (loc, g) {
            (Some(loc), Some((a, b))) => u32::try_from(loc)
                .map(|l| t.postings[*a..*b].binary_search(&l).is_ok())
                .unwrap_or(false),
            _ => false,
        };
        out.push(held);
    }
}

/// The candidates `rows` (best first, final scores `scores`) re-ranked from the top one.
///
/// Each other chunk gains `bridge x` the largest bridge weight of an entity it shares with
/// the top chunk; `cover x` its name match score when the query names it by no entity the
/// top chunk mentions; and `weight x` the share of the query's words it holds and the top
/// chunk does not (`count x (weight / n_words)`). The top chunk gains `bridge`, `cover x`
/// the best match score (0 when the query names no chunk) and `weight` (when the terms step
/// runs), so it stays first. `final = score + bridge + cover + terms`, added in that order;
/// best `k` first, ties by chunk row.
///
/// # Errors
/// `LengthMismatch` when `rows` and `scores` (or the named chunks' columns) differ in
/// length; `InvalidParameter` for a chunk or entity outside its CSR, offsets out of bounds,
/// or a shared entity without a bridge weight.
pub fn rerank_from_top(rows: &[i64], scores: &[f64], p: &TopRerank<'_>) -> Result<TopReranked> {
    check_len("candidates", "scores", rows.len(), scores.len())?;
    let named = p.named;
    check_len("named", "scores", named.chunks.len(), named.scores.len())?;
    if !named.chunks.is_empty() {
        check_len(
            "named",
            "offsets",
            named.chunks.len() + 1,
            named.offsets.len(),
        )?;
    }
    let Some(&top) = rows.first() else {
        return Ok(TopReranked::default());
    };
    let n = rows.len();
    let top_ents = entities_of(p, top)?;
    let shares = |e: i64| top_ents.contains(&e);

    // The query's terms: each one's posting slots in the tenant (None: no posting).
    let mut groups: Vec<Option<(usize, usize)>> = Vec::new();
    let mut top_held: Vec<bool> = Vec::new();
    if let Some(t) = &p.terms {
        for &id in t.query_terms {
            groups.push(match t.terms.binary_search(&id) {
                Ok(g) => Some(csr_range(t.offsets, g, t.postings.len(), "term offsets")?),
                Err(_) => None,
            });
        }
        holds(t, &groups, top, &mut top_held);
    }

    let mut bridge = vec![0.0; n];
    let mut cover = vec![0.0; n];
    let mut terms = vec![0.0; n];
    bridge[0] = p.bridge;
    cover[0] = p.top_cover;
    if let Some(t) = &p.terms {
        terms[0] = t.weight;
    }
    let mut held = Vec::with_capacity(groups.len());
    for i in 1..n {
        let r = rows[i];
        let mut best = 0.0;
        if p.bridge != 0.0 && !top_ents.is_empty() {
            for &e in entities_of(p, r)? {
                if shares(e) {
                    let w = usize::try_from(e)
                        .ok()
                        .and_then(|e| p.bridge_weights.get(e))
                        .copied()
                        .ok_or_else(|| {
                            bad("bridge_weights", format!("no weight for entity {e}"))
                        })?;
                    if w > best {
                        best = w;
                    }
                }
            }
        }
        bridge[i] = p.bridge * best;
        if p.cover != 0.0 {
            if let Some(j) = named.chunks.iter().position(|&c| c == r) {
                let (a, b) = csr_range(named.offsets, j, named.entities.len(), "named offsets")?;
                if !named.entities[a..b].iter().any(|&e| shares(e)) {
                    cover[i] = p.cover * named.scores[j];
                }
            }
        }
        if let Some(t) = &p.terms {
            holds(t, &groups, r, &mut held);
            let count = held
                .iter()
                .zip(&top_held)
                .filter(|&(&h, &on_top)| h && !on_top)
                .count();
            terms[i] = count as f64 * (t.weight / t.n_words as f64);
        }
    }
    let finals: Vec<f64> = (0..n)
        .map(|i| scores[i] + bridge[i] + cover[i] + terms[i])
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| {
        finals[b]
            .partial_cmp(&finals[a])
            .unwrap_or(Ordering::Equal)
            .then(rows[a].cmp(&rows[b]))
    });
    order.truncate(p.k);
    Ok(TopReranked {
        scores: order.iter().map(|&i| finals[i]).collect(),
        bridge: order.iter().map(|&i| bridge[i]).collect(),
        cover: order.iter().map(|&i| cover[i]).collect(),
        terms: order.iter().map(|&i| terms[i]).collect(),
        order,
    })
}
