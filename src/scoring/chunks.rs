//! The recipe kernels that score chunks: entity scores spread to chunks, passage seeds,
//! cosine + graph fusion, best-mentioned chunks and seed 003's per-chunk graph score.

use super::common::*;
use super::proximity::{graph_proximity, GraphProximityProfile};
use crate::batch::*;
use crate::{Error, Result};

/// The mention CSR of [`entity_chunk_scores`]: `chunks[offsets[e]..offsets[e + 1]]` are the
/// chunks mentioning entity `e`, with their mention `counts`.
#[derive(Debug, Clone, Copy)]
pub struct MentionCsr<'a> {
    pub offsets: &'a [i64],
    pub chunks: &'a [i64],
    pub counts: &'a [i64],
}

impl MentionCsr<'_> {
    /// Entities the CSR covers, after checking that chunks and counts align.
    pub(super) fn n_entities(&self) -> Result<usize> {
        check_len("mentions", "counts", self.chunks.len(), self.counts.len())?;
        Ok(self.offsets.len().saturating_sub(1))
    }

    /// The CSR slots of entity `e` (input row `row`, for errors), bounds checked.
    pub(super) fn range(&self, row: usize, e: i64) -> Result<std::ops::Range<usize>> {
        if e < 0 || e as usize >= self.offsets.len().saturating_sub(1) {
            return Err(bad_value(row, "entity", e, "outside the mention index"));
        }
        let (a, b) = (self.offsets[e as usize], self.offsets[e as usize + 1]);
        if a < 0 || b < a || b as usize > self.chunks.len() {
            return Err(bad_value(row, "mention offset", b, "out of bounds"));
        }
        Ok(a as usize..b as usize)
    }
}

pub(super) fn bad_value(row: usize, column: &'static str, value: i64, problem: &str) -> Error {
    Error::InvalidValue {
        table: "entities",
        row,
        column,
        value: value.to_string(),
        problem: problem.to_string(),
    }
}

/// The chunks of [`entity_chunk_scores`], ascending, with their scores.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChunkScores {
    pub chunks: Vec<i64>,
    pub scores: Vec<f64>,
    /// How many scores are above 0 (the chunks the graph reached, for the recipe's cut).
    pub n_positive: usize,
}

/// Entity scores spread to chunks (the `ppr` recipe's last random-walk step): an entity's
/// score goes whole to its primary chunk (`primary[e] >= 0`), else to the chunks mentioning
/// it in proportion to the mention counts (`score x count / total count`). Returns the
/// reached chunks ascending, their sums and how many of those are positive.
///
/// Per chunk, the primary shares are summed in entity order, the mention shares in entity
/// then CSR order, and the two sums added: the float operations of the numpy form
/// (`bincount` of each part, then `+`), so the scores are the same to the bit.
///
/// # Errors
/// `LengthMismatch` when `scores` and `entities` (or the CSR's chunks and counts, or
/// `primary` and the CSR's entities) differ in length; `InvalidValue` for an entity outside
/// the CSR, a CSR range out of bounds or decreasing, or a negative chunk.
pub fn entity_chunk_scores(
    csr: MentionCsr<'_>,
    primary: Option<&[i64]>,
    entities: &[i64],
    scores: &[f64],
) -> Result<ChunkScores> {
    check_len("entities", "scores", entities.len(), scores.len())?;
    let n_entities = csr.n_entities()?;
    if let Some(p) = primary {
        check_len("entities", "primary", n_entities, p.len())?;
    }
    // The work is a few hundred scattered reads of the CSR, which is too large for the cache
    // when called between a vector search and a graph walk; each pass below issues reads that
    // do not depend on one another, so that their cache misses overlap instead of queueing
    // behind a hash-map update each. Shares are (chunk, sequence, value): primary shares
    // first, then mention shares, each in input order.
    let mut shares: Vec<(i64, usize, f64)> = Vec::with_capacity(entities.len() * 4);
    let mut rest: Vec<usize> = Vec::with_capacity(entities.len());
    for (i, &e) in entities.iter().enumerate() {
        if e < 0 || e as usize >= n_entities {
            return Err(bad_value(i, "entity", e, "outside the mention index"));
        }
        let pc = primary.map_or(-1, |p| p[e as usize]);
        if pc >= 0 {
            shares.push((pc, shares.len(), scores[i]));
        } else {
            rest.push(i);
        }
    }
    let n_primary = shares.len();
    // The mention ranges; a broken one is reported after the shares of the entities before
    // it (their negative chunks first), as a single pass would.
    let mut spans: Vec<std::ops::Range<usize>> = Vec::with_capacity(rest.len());
    let mut broken: Option<Error> = None;
    for &i in &rest {
        match csr.range(i, entities[i]) {
            Ok(r) => spans.push(r),
            Err(err) => {
                broken = Some(err);
                break;
            }
        }
    }
    for (&i, slots) in rest.iter().zip(&spans) {
        // The count total in CSR order (numpy's bincount of float64 counts).
        let total: f64 = csr.counts[slots.clone()]
            .iter()
            .fold(0.0, |t, &c| t + c as f64);
        let denom = total.max(1e-300);
        for j in slots.clone() {
            let c = csr.chunks[j];
            if c < 0 {
                return Err(bad_value(i, "mention chunk", c, "negative"));
            }
            shares.push((c, shares.len(), scores[i] * csr.counts[j] as f64 / denom));
        }
    }
    if let Some(err) = broken {
        return Err(err);
    }
    let (chunks, sums) = sum_by_chunk(&mut shares, n_primary);
    let n_positive = sums.iter().filter(|&&v| v > 0.0).count();
    Ok(ChunkScores {
        chunks,
        scores: sums,
        n_positive,
    })
}

/// The `ppr` recipe's passage seeds: each seed chunk's weight (`weights`, a softmax of its
/// cosine) split over the entities it mentions (`entities[offsets[c]..offsets[c + 1]]`) in
/// proportion to their mention `counts`, times `specificity[e]` when given (HippoRAG's node
/// specificity), renormalised. Returns the entities ascending with their summed mass.
///
/// The float operations are those of the plain Python it replaces: per chunk the counts
/// (as `f64`) summed in CSR order from `0.0`, each divided by that total; with specificity
/// each share times it, summed again and divided again; an entity's mass is `0.0` plus
/// `share x weight` of each chunk in turn.
///
/// # Errors
/// `LengthMismatch` when `weights` and `chunks` (or `counts` and `entities`) differ in length;
/// `InvalidValue` for a chunk outside the CSR, a broken range, an entity outside
/// `specificity` or negative, or a chunk whose shares sum to zero (Python's division by
/// zero).
pub fn passage_seed_mass(
    offsets: &[i64],
    entities: &[i64],
    counts: &[i64],
    specificity: Option<&[f64]>,
    chunks: &[i64],
    weights: &[f64],
) -> Result<(Vec<i64>, Vec<f64>)> {
    check_len("chunks", "weights", chunks.len(), weights.len())?;
    check_len("mentions", "counts", entities.len(), counts.len())?;
    let n_chunks = offsets.len().saturating_sub(1);
    let chunk_error =
        |row: usize, column: &'static str, value: i64, problem: &str| Error::InvalidValue {
            table: "chunks",
            row,
            column,
            value: value.to_string(),
            problem: problem.to_owned(),
        };
    // (entity, mass) in the order the masses are added; summed per entity after a stable
    // sort.
    let mut parts: Vec<(i64, f64)> = Vec::new();
    let mut x: Vec<f64> = Vec::new();
    for (i, (&c, &wc)) in chunks.iter().zip(weights).enumerate() {
        if c < 0 || c as usize >= n_chunks {
            return Err(chunk_error(i, "chunk", c, "outside the mention index"));
        }
        let (a, b) = (offsets[c as usize], offsets[c as usize + 1]);
        if a < 0 || b < a || b as usize > entities.len() {
            return Err(chunk_error(i, "mention offset", b, "out of bounds"));
        }
        let (ents, cnts) = (
            &entities[a as usize..b as usize],
            &counts[a as usize..b as usize],
        );
        if let Some(&e) = ents
            .iter()
            .find(|&&e| e < 0 || specificity.is_some_and(|s| e as usize >= s.len()))
        {
            return Err(chunk_error(
                i,
                "mentioned entity",
                e,
                "outside the entities",
            ));
        }
        if ents.is_empty() {
            continue;
        }
        let total = cnts.iter().fold(0.0, |t, &v| t + v as f64);
        if total == 0.0 {
            return Err(chunk_error(i, "mention counts", 0, "summing to zero"));
        }
        x.clear();
        x.extend(cnts.iter().map(|&v| v as f64 / total));
        if let Some(spec) = specificity {
            for (v, &e) in x.iter_mut().zip(ents) {
                *v *= spec[e as usize];
            }
            let total = x.iter().fold(0.0, |t, &v| t + v);
            if total == 0.0 {
                return Err(chunk_error(i, "specificity", 0, "summing to zero"));
            }
            for v in &mut x {
                *v /= total;
            }
        }
        parts.extend(ents.iter().zip(&x).map(|(&e, &v)| (e, v * wc)));
    }
    parts.sort_by_key(|&(e, _)| e);
    let mut out_e = Vec::new();
    let mut out_m = Vec::new();
    for same in parts.chunk_by(|a, b| a.0 == b.0) {
        out_e.push(same[0].0);
        out_m.push(same.iter().fold(0.0, |t, &(_, v)| t + v));
    }
    Ok((out_e, out_m))
}

/// Per chunk ascending, `p + m` where `p` sums its shares at sequence numbers below
/// `n_primary` and `m` the others, each from `0.0` in sequence order.
pub(super) fn sum_by_chunk(
    shares: &mut [(i64, usize, f64)],
    n_primary: usize,
) -> (Vec<i64>, Vec<f64>) {
    let mut chunks: Vec<i64> = Vec::with_capacity(shares.len());
    let mut sums: Vec<f64> = Vec::with_capacity(shares.len());
    let fits = shares.len() < 1 << SEQ_BITS
        && shares
            .iter()
            .all(|&(c, _, _)| (0..1 << (64 - SEQ_BITS)).contains(&c));
    if fits {
        // (chunk, sequence) packed into one integer: sorting a few hundred u64 costs a
        // third of sorting the tuples.
        let mut keys: Vec<u64> = shares
            .iter()
            .map(|&(c, seq, _)| ((c as u64) << SEQ_BITS) | seq as u64)
            .collect();
        keys.sort_unstable();
        for run in keys.chunk_by(|a, b| a >> SEQ_BITS == b >> SEQ_BITS) {
            let (mut p, mut m) = (0.0, 0.0);
            for k in run {
                let seq = (k & ((1 << SEQ_BITS) - 1)) as usize;
                if seq < n_primary {
                    p += shares[seq].2;
                } else {
                    m += shares[seq].2;
                }
            }
            chunks.push((run[0] >> SEQ_BITS) as i64);
            sums.push(p + m);
        }
    } else {
        shares.sort_unstable_by_key(|&(c, seq, _)| (c, seq));
        for run in shares.chunk_by(|a, b| a.0 == b.0) {
            let (mut p, mut m) = (0.0, 0.0);
            for &(_, seq, v) in run {
                if seq < n_primary {
                    p += v;
                } else {
                    m += v;
                }
            }
            chunks.push(run[0].0);
            sums.push(p + m);
        }
    }
    (chunks, sums)
}

/// Bits of a share's sequence number in [`sum_by_chunk`]'s packed sort key.
pub(super) const SEQ_BITS: u32 = 24;

/// The ranked chunks of [`cosine_graph_top`], best first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CosineGraphTop {
    pub chunks: Vec<i64>,
    /// `cosine + graph_weight x graph / graph_max`.
    pub scores: Vec<f64>,
    pub cosines: Vec<f64>,
    /// Raw graph scores (`0.0` for a chunk the graph did not reach).
    pub graph: Vec<f64>,
    /// The largest graph score (`0.0` when none was reached).
    pub graph_max: f64,
}

/// The `ppr` recipe's fusion of one query: every candidate chunk scores
/// `cosine + graph_weight x graph / graph_max`, where `graph` is its score in the sparse
/// `reached` / `reached_scores` (`0.0` when absent) and `graph_max` the largest of those (the
/// graph part is `0.0` when `graph_max <= 0`). Returns the best `k`, score descending, ties by
/// chunk ascending (`-0.0` equal to `0.0`), as Python's `sort(key=(-score, chunk))`.
///
/// The candidates are `chunks` (the dense ones) then `more_chunks` (the graph's others), each
/// distinct chunk once with its last cosine: a dict built in that order. Each score is one
/// multiply and one add in `f64`, as the Python expression `c + norm * g`.
///
/// # Errors
/// `LengthMismatch` for misaligned columns; `InvalidParameter` for a `graph_weight` that is
/// not finite and `>= 0`; `InvalidValue` for a NaN or infinite cosine or graph score,
/// `reached` not strictly ascending, or a score that is NaN (a subnormal `graph_max`
/// overflowing the normalisation).
#[allow(clippy::too_many_arguments)]
pub fn cosine_graph_top(
    chunks: &[i64],
    cosines: &[f64],
    more_chunks: &[i64],
    more_cosines: &[f64],
    reached: &[i64],
    reached_scores: &[f64],
    graph_weight: f64,
    k: usize,
) -> Result<CosineGraphTop> {
    check_len("candidates", "cosines", chunks.len(), cosines.len())?;
    check_len("more", "cosines", more_chunks.len(), more_cosines.len())?;
    check_len("reached", "scores", reached.len(), reached_scores.len())?;
    check_weight(graph_weight, "graph_weight")?;
    check_finite(cosines, "candidates", "cosines")?;
    check_finite(more_cosines, "more", "cosines")?;
    check_finite(reached_scores, "reached", "scores")?;
    if let Some(i) = reached.windows(2).position(|w| w[1] <= w[0]) {
        return Err(Error::InvalidValue {
            table: "reached",
            row: i + 1,
            column: "chunk",
            value: reached[i + 1].to_string(),
            problem: "not above the previous one (reached chunks must be strictly ascending)"
                .to_owned(),
        });
    }
    // numpy's max (finite here), 0.0 for none.
    let graph_max = reached_scores
        .iter()
        .copied()
        .reduce(f64::max)
        .unwrap_or(0.0);
    let norm = if graph_max > 0.0 {
        graph_weight / graph_max
    } else {
        0.0
    };
    let mut cand: Vec<(i64, f64)> = chunks
        .iter()
        .zip(cosines)
        .chain(more_chunks.iter().zip(more_cosines))
        .map(|(&c, &v)| (c, v))
        .collect();
    // Stable: a repeated chunk keeps its last cosine, as a dict does.
    cand.sort_by_key(|&(c, _)| c);
    let mut scored: Vec<(f64, i64, f64, f64)> = Vec::with_capacity(cand.len());
    for same in cand.chunk_by(|a, b| a.0 == b.0) {
        let (c, cos) = same[same.len() - 1];
        let g = reached.binary_search(&c).map_or(0.0, |i| reached_scores[i]);
        let score = cos + norm * g;
        if score.is_nan() {
            return Err(Error::InvalidValue {
                table: "candidates",
                row: scored.len(),
                column: "score",
                value: score.to_string(),
                problem: format!(
                    "not a number (graph_weight / max graph score = {norm} overflows)"
                ),
            });
        }
        scored.push((score, c, cos, g));
    }
    scored.sort_unstable_by(|a, b| {
        score_key(b.0)
            .total_cmp(&score_key(a.0))
            .then(a.1.cmp(&b.1))
    });
    scored.truncate(k);
    let mut out = CosineGraphTop {
        graph_max,
        ..CosineGraphTop::default()
    };
    for (score, c, cos, g) in scored {
        out.chunks.push(c);
        out.scores.push(score);
        out.cosines.push(cos);
        out.graph.push(g);
    }
    Ok(out)
}

/// Chunks ranked by the best score among the entities that they mention (seed 004's graph
/// ranking of chunks: each recalled edge scores the chunks mentioning either end). Entities
/// below 0 (a literal's missing end) are skipped, and only scores above -1 count (NaN never
/// does). Returns the chunks by best score descending, ties by chunk ascending, with their
/// best scores.
///
/// # Errors
/// `LengthMismatch` when `entities` and `scores` (or the CSR's chunks and counts) differ in
/// length; `InvalidValue` for an entity outside the CSR or a broken CSR range.
pub fn best_mentioned_chunks(
    csr: MentionCsr<'_>,
    entities: &[i64],
    scores: &[f64],
) -> Result<(Vec<i64>, Vec<f64>)> {
    check_len("entities", "scores", entities.len(), scores.len())?;
    csr.n_entities()?;
    let mut best: rustc_hash::FxHashMap<i64, f64> = rustc_hash::FxHashMap::default();
    for (i, (&e, &s)) in entities.iter().zip(scores).enumerate() {
        if e < 0 {
            continue;
        }
        let slots = csr.range(i, e)?;
        if s.is_nan() || s <= -1.0 {
            continue;
        }
        let s = s + 0.0; // -0.0 ranks as 0.0 (numpy's sort sees them equal)
        for &c in &csr.chunks[slots] {
            let v = best.entry(c).or_insert(s);
            if s > *v {
                *v = s;
            }
        }
    }
    let mut out: Vec<(i64, f64)> = best.into_iter().collect();
    out.sort_unstable_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    Ok(out.into_iter().unzip())
}

/// Seed 003's graph-sourced chunks: every chunk mentioning a related entity scores
/// [`graph_proximity`]`(weights[i], hops[i], count)` (`count`: how often the chunk mentions
/// entity `entities[i]`), and each chunk keeps its best score with the entity that gave it,
/// the first one on ties. Entities are taken in input order, each one's chunks in CSR
/// order; only scores above -1 count (NaN never does).
///
/// Returns `(chunks, scores, entities)`, the chunks in the order they were first scored.
/// The scores are [`graph_proximity`]'s, bit for bit: the numpy form (`graph_proximity_score`
/// over the gathered mention slots, then a scan keeping each chunk's first best) gives the
/// same triples.
///
/// # Errors
/// `InvalidParameter` for a bad profile; `LengthMismatch` when `weights` or `hops` (or the
/// CSR's counts) do not align with `entities`; `InvalidValue` for an entity outside the CSR,
/// a broken CSR range, or, on an entity with mentions, a non-finite weight, a hop of 0 or a
/// mention count outside `0..=u32::MAX`.
pub fn graph_proximity_chunks(
    csr: MentionCsr<'_>,
    entities: &[i64],
    weights: &[f64],
    hops: &[u32],
    p: &GraphProximityProfile,
) -> Result<(Vec<i64>, Vec<f64>, Vec<i64>)> {
    p.validate()?;
    check_len("entities", "weights", entities.len(), weights.len())?;
    check_len("entities", "hops", entities.len(), hops.len())?;
    csr.n_entities()?;
    // chunk -> its slot in the outputs; a few hundred chunks per query.
    let mut slot: rustc_hash::FxHashMap<i64, usize> = rustc_hash::FxHashMap::default();
    let (mut chunks, mut scores, mut from) = (Vec::new(), Vec::new(), Vec::new());
    for (i, &e) in entities.iter().enumerate() {
        let slots = csr.range(i, e)?;
        if slots.is_empty() {
            continue;
        }
        let (w, hop) = (weights[i], hops[i]);
        if !w.is_finite() {
            return Err(non_finite("entities", i, "weight", w));
        }
        if hop == 0 {
            return Err(Error::InvalidValue {
                table: "entities",
                row: i,
                column: "hop",
                value: "0".to_owned(),
                problem: "below 1 (hop distances start at 1 for direct neighbours)".to_owned(),
            });
        }
        for j in slots {
            let count = csr.counts[j];
            let Ok(count) = u32::try_from(count) else {
                return Err(bad_value(
                    i,
                    "mention count",
                    count,
                    "outside 0..=4294967295",
                ));
            };
            let s = graph_proximity(w, hop, count, p);
            let c = csr.chunks[j];
            match slot.get(&c) {
                Some(&k) if s > scores[k] => {
                    scores[k] = s;
                    from[k] = e;
                }
                Some(_) => {}
                None if s > -1.0 => {
                    slot.insert(c, chunks.len());
                    chunks.push(c);
                    scores.push(s);
                    from.push(e);
                }
                None => {}
            }
        }
    }
    Ok((chunks, scores, from))
}
