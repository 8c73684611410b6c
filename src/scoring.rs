//! The scoring formulas of the five source designs, vectorised. Pyo3-free, numbers only.
//!
//! | seed | formula | here |
//! |---|---|---|
//! | 000 | `scoreFact`: confidence × source weight × decay × usage boost × status weight | [`score_fact`], [`score_fact_batch`] |
//! | 001 | indirect mention boost `indirect × (1 / distance) × strength` | [`indirect_boost`], [`MentionBoostProfile`] |
//! | 002 | `rerank_memories`: 0.5 similarity + 0.3 recency + 0.15 confidence + 0.05 access | [`rerank_batch`] |
//! | 003 | `computeGraphScore`: weight / 10 × 1 / 2^(hop−1) × (0.7 + 0.3 mention boost) | [`graph_proximity`], [`graph_proximity_batch`] |
//! | 004 | `composite_score`: match × 1 / (1 + hop) × confidence | [`composite`], [`composite_batch`] |
//!
//! Every constant of a source lives in a profile struct whose `Default` is the source's value.
//! Times are `i64` seconds and `now` is always an argument (no clock is read here); a null
//! timestamp is [`NULL_TIME`] and means "age unknown", which never decays (factor 1.0).
//! Each formula evaluates its products and sums in the order the source writes them, so the
//! results are bit-identical to the straightforward Python of the sources (seed 003's mention
//! part is `floor + (1 - floor) * boost`, one constant for both terms; `1 - 0.7` differs from
//! the source's `0.3` in the last bit).

use rayon::prelude::*;

use crate::batch::{check_finite, check_len, check_offsets, check_weight, per_query, score_key};
use crate::{Error, Result};

/// A null timestamp: "age unknown", never decayed.
pub const NULL_TIME: i64 = i64::MIN;
/// Seconds in a week (seed 000 divides ages in milliseconds by `1000 * 60 * 60 * 24 * 7`).
pub const WEEK_SECONDS: f64 = 604_800.0;
/// Seconds in a day (seed 002's `timedelta.days`).
pub const DAY_SECONDS: i64 = 86_400;
/// Element-wise kernels switch to rayon above this many rows.
pub const PAR_THRESHOLD: usize = crate::fusion::PAR_THRESHOLD;

/// Fact source codes (seed 000).
pub const SOURCE_USER_EDIT: u8 = 0;
pub const SOURCE_FILE: u8 = 1;
pub const SOURCE_SYSTEM: u8 = 2;
pub const SOURCE_CONVERSATION: u8 = 3;

/// Fact status codes (seed 000).
pub const STATUS_STAGED: u8 = 0;
pub const STATUS_CONFIRMED: u8 = 1;
pub const STATUS_REJECTED: u8 = 2;
pub const STATUS_ARCHIVED: u8 = 3;

fn non_finite(table: &'static str, row: usize, column: &'static str, value: f64) -> Error {
    Error::InvalidValue {
        table,
        row,
        column,
        value: value.to_string(),
        problem: "not finite (NaN or infinite)".to_owned(),
    }
}

/// `now - then` in seconds as `f64`, exact in `i128` before the one rounding (as Python's
/// `int - int` then `float`).
#[inline]
fn elapsed(then: i64, now: i64) -> f64 {
    // The i64 difference is exact when it does not overflow; i128 only for the extremes.
    match now.checked_sub(then) {
        Some(d) => d as f64,
        None => (i128::from(now) - i128::from(then)) as f64,
    }
}

/// Fill `out` with `f(i)`, in parallel above [`PAR_THRESHOLD`] rows.
fn fill<F: Fn(usize) -> f64 + Sync + Send>(out: &mut [f64], f: F) {
    if out.len() > PAR_THRESHOLD {
        out.par_iter_mut().enumerate().for_each(|(i, o)| *o = f(i));
    } else {
        out.iter_mut().enumerate().for_each(|(i, o)| *o = f(i));
    }
}

// ---------------------------------------------------------------------------------------------
// Seed 000: scoreFact.

/// Constants of seed 000's `scoreFact`. Weights are indexed by code; a code past the end of a
/// table takes the default weight.
#[derive(Debug, Clone, PartialEq)]
pub struct FactScoreProfile {
    /// By source code: user_edit, file, system, conversation.
    pub source_weights: Vec<f64>,
    /// Weight of a source code past the end of `source_weights`.
    pub default_source_weight: f64,
    /// By status code: staged, confirmed, rejected, archived.
    pub status_weights: Vec<f64>,
    /// Weight of a status code past the end of `status_weights`.
    pub default_status_weight: f64,
    /// Decay per week after the grace period, in (0, 1].
    pub decay_base: f64,
    /// Weeks without decay.
    pub grace_weeks: f64,
    /// `usageBoost = 1 + log10(accessCount + 1) * usage_log_factor`.
    pub usage_log_factor: f64,
}

impl Default for FactScoreProfile {
    fn default() -> Self {
        Self {
            source_weights: vec![2.0, 1.5, 1.2, 1.0],
            default_source_weight: 1.0,
            status_weights: vec![1.0, 1.2, 1.0, 1.0],
            default_status_weight: 1.0,
            decay_base: 0.95,
            grace_weeks: 1.0,
            usage_log_factor: 0.5,
        }
    }
}

fn check_weight_table(weights: &[f64], name: &'static str) -> Result<()> {
    match weights.iter().position(|w| !(w.is_finite() && *w >= 0.0)) {
        None => Ok(()),
        Some(i) => Err(Error::param(
            name,
            format!(
                "{name}[{i}] = {} must be finite and >= 0",
                weights.get(i).copied().unwrap_or(f64::NAN)
            ),
        )),
    }
}

impl FactScoreProfile {
    /// # Errors
    /// `InvalidParameter` unless every weight is finite and `>= 0`, `decay_base` is in (0, 1]
    /// and `grace_weeks` and `usage_log_factor` are finite and `>= 0`.
    pub fn validate(&self) -> Result<()> {
        check_weight_table(&self.source_weights, "source_weights")?;
        check_weight(self.default_source_weight, "default_source_weight")?;
        check_weight_table(&self.status_weights, "status_weights")?;
        check_weight(self.default_status_weight, "default_status_weight")?;
        if !(self.decay_base > 0.0 && self.decay_base <= 1.0) {
            return Err(Error::param(
                "decay_base",
                format!("decay_base = {} must be in (0, 1]", self.decay_base),
            ));
        }
        check_weight(self.grace_weeks, "grace_weeks")?;
        check_weight(self.usage_log_factor, "usage_log_factor")
    }
}

/// Seed 000's `scoreFact` for one fact:
///
/// ```text
/// ageWeeks    = (now - lastAccessed) / 604800            (seconds)
/// decay       = ageWeeks > grace ? 0.95 ** (ageWeeks - grace) : 1.0   (1.0 when lastAccessed is null)
/// usageBoost  = 1 + log10(accessCount + 1) * 0.5
/// score       = confidence * sourceWeight * decay * usageBoost * statusWeight
/// ```
///
/// evaluated left to right in `f64`. Unlike the source's `sourceWeights[s] || 1.0`, a weight
/// configured as 0 stays 0. The profile is not validated here; see [`score_fact_batch`].
#[inline]
pub fn score_fact(
    confidence: f32,
    source: u8,
    status: u8,
    last_accessed: i64,
    access_count: u32,
    now: i64,
    p: &FactScoreProfile,
) -> f64 {
    let source_weight = p
        .source_weights
        .get(usize::from(source))
        .copied()
        .unwrap_or(p.default_source_weight);
    let decay = if last_accessed == NULL_TIME {
        1.0
    } else {
        let age_weeks = elapsed(last_accessed, now) / WEEK_SECONDS;
        if age_weeks > p.grace_weeks {
            p.decay_base.powf(age_weeks - p.grace_weeks)
        } else {
            1.0
        }
    };
    let usage_boost = 1.0 + (f64::from(access_count) + 1.0).log10() * p.usage_log_factor;
    let status_weight = p
        .status_weights
        .get(usize::from(status))
        .copied()
        .unwrap_or(p.default_status_weight);
    f64::from(confidence) * source_weight * decay * usage_boost * status_weight
}

/// [`score_fact`] over columns of facts, written into `out`. `last_accessed = None` means
/// every timestamp is null.
///
/// # Errors
/// `InvalidParameter` for a bad profile; `LengthMismatch` when a column (or `out`) differs in
/// length from `confidence`; `InvalidValue` (table `facts`) for a non-finite confidence.
#[allow(clippy::too_many_arguments)]
pub fn score_fact_batch(
    confidence: &[f32],
    source: &[u8],
    status: &[u8],
    last_accessed: Option<&[i64]>,
    access_count: &[u32],
    now: i64,
    p: &FactScoreProfile,
    out: &mut [f64],
) -> Result<()> {
    p.validate()?;
    let n = confidence.len();
    check_len("facts", "source", n, source.len())?;
    check_len("facts", "status", n, status.len())?;
    if let Some(times) = last_accessed {
        check_len("facts", "last_accessed", n, times.len())?;
    }
    check_len("facts", "access_count", n, access_count.len())?;
    check_len("facts", "out", n, out.len())?;
    if let Some(row) = confidence.iter().position(|c| !c.is_finite()) {
        let value = confidence.get(row).copied().map_or(f64::NAN, f64::from);
        return Err(non_finite("facts", row, "confidence", value));
    }
    fill(out, |i| {
        let last = last_accessed.map_or(NULL_TIME, |t| t[i]);
        score_fact(
            confidence[i],
            source[i],
            status[i],
            last,
            access_count[i],
            now,
            p,
        )
    });
    Ok(())
}

/// [`score_fact_batch`] into a new vector.
///
/// # Errors
/// As [`score_fact_batch`].
pub fn score_facts(
    confidence: &[f32],
    source: &[u8],
    status: &[u8],
    last_accessed: Option<&[i64]>,
    access_count: &[u32],
    now: i64,
    p: &FactScoreProfile,
) -> Result<Vec<f64>> {
    let mut out = vec![0.0; confidence.len()];
    score_fact_batch(
        confidence,
        source,
        status,
        last_accessed,
        access_count,
        now,
        p,
        &mut out,
    )?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Seed 001: mention boosts.

/// Seed 001's boosts: `adjusted = similarity + direct × (query entities mentioned)
/// + Σ indirect_boost(indirect, distance, strength)` over mentioned related entities.
#[derive(Debug, Clone, PartialEq)]
pub struct MentionBoostProfile {
    /// `entity_boost_direct`: per mention of a query entity.
    pub direct: f64,
    /// `entity_boost_indirect`: per mention of a related entity, before distance and strength.
    pub indirect: f64,
    /// `use_relationship_strength`: when false, strength counts as 1.0.
    pub use_strength: bool,
}

impl Default for MentionBoostProfile {
    fn default() -> Self {
        Self {
            direct: 0.3,
            indirect: 0.1,
            use_strength: true,
        }
    }
}

impl MentionBoostProfile {
    /// # Errors
    /// `InvalidParameter` unless `direct` and `indirect` are finite and `>= 0`.
    pub fn validate(&self) -> Result<()> {
        check_weight(self.direct, "direct")?;
        check_weight(self.indirect, "indirect")
    }

    /// Boost of one mention of a related entity `distance` hops away (`distance >= 1`), honouring
    /// `use_strength`.
    #[inline]
    pub fn indirect_boost(&self, distance: u32, strength: f64) -> f64 {
        let strength = if self.use_strength { strength } else { 1.0 };
        indirect_boost(self.indirect, distance, strength)
    }
}

/// Seed 001: `indirect * (1.0 / distance) * strength`, in that order. `distance` counts hops
/// and starts at 1 (a distance of 0 divides by zero and gives infinity, as the source would).
#[inline]
pub fn indirect_boost(indirect: f64, distance: u32, strength: f64) -> f64 {
    indirect * (1.0 / f64::from(distance)) * strength
}

// ---------------------------------------------------------------------------------------------
// Seed 003: graph proximity.

/// Constants of seed 003's `computeGraphScore`.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphProximityProfile {
    /// Relationship weights are divided by this (the source extracts weights 1..=10).
    pub weight_scale: f64,
    /// Hop decay `1 / hop_base^(hop - 1)`.
    pub hop_base: f64,
    /// Mention part `floor + (1 - floor) * mentionBoost`, in [0, 1].
    pub mention_floor: f64,
    /// `mentionBoost = min(log2(mentionCount + 1) / mention_log_divisor, 1)`.
    pub mention_log_divisor: f64,
}

impl Default for GraphProximityProfile {
    fn default() -> Self {
        Self {
            weight_scale: 10.0,
            hop_base: 2.0,
            mention_floor: 0.7,
            mention_log_divisor: 5.0,
        }
    }
}

fn check_positive(value: f64, name: &'static str) -> Result<()> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(Error::param(
            name,
            format!("{name} = {value} must be finite and > 0"),
        ))
    }
}

impl GraphProximityProfile {
    /// # Errors
    /// `InvalidParameter` unless `weight_scale`, `hop_base` and `mention_log_divisor` are finite
    /// and `> 0` and `mention_floor` is in [0, 1].
    pub fn validate(&self) -> Result<()> {
        check_positive(self.weight_scale, "weight_scale")?;
        check_positive(self.hop_base, "hop_base")?;
        if !(self.mention_floor >= 0.0 && self.mention_floor <= 1.0) {
            return Err(Error::param(
                "mention_floor",
                format!("mention_floor = {} must be in [0, 1]", self.mention_floor),
            ));
        }
        check_positive(self.mention_log_divisor, "mention_log_divisor")
    }
}

/// Seed 003's `computeGraphScore` for one graph-sourced chunk:
///
/// ```text
/// hopDecay         = 1 / 2^(hop - 1)
/// normalizedWeight = weight / 10
/// mentionBoost     = min(log2(mentionCount + 1) / 5, 1)
/// score            = normalizedWeight * hopDecay * (0.7 + (1 - 0.7) * mentionBoost)
/// ```
///
/// `hop` starts at 1 (the batch rejects 0; here 0 extrapolates to a decay of `hop_base`).
#[inline]
pub fn graph_proximity(
    weight: f64,
    hop: u32,
    mention_count: u32,
    p: &GraphProximityProfile,
) -> f64 {
    let hop_decay = 1.0 / p.hop_base.powf(f64::from(hop) - 1.0);
    let normalized_weight = weight / p.weight_scale;
    let mention_boost = ((f64::from(mention_count) + 1.0).log2() / p.mention_log_divisor).min(1.0);
    normalized_weight * hop_decay * (p.mention_floor + (1.0 - p.mention_floor) * mention_boost)
}

/// [`graph_proximity`] over columns (table `chunks`), written into `out`.
///
/// # Errors
/// `InvalidParameter` for a bad profile; `LengthMismatch`; `InvalidValue` for a non-finite
/// weight or a hop of 0.
pub fn graph_proximity_batch(
    weight: &[f64],
    hop: &[u32],
    mention_count: &[u32],
    p: &GraphProximityProfile,
    out: &mut [f64],
) -> Result<()> {
    p.validate()?;
    let n = weight.len();
    check_len("chunks", "hop", n, hop.len())?;
    check_len("chunks", "mention_count", n, mention_count.len())?;
    check_len("chunks", "out", n, out.len())?;
    check_finite(weight, "chunks", "weight")?;
    if let Some(row) = hop.iter().position(|&h| h == 0) {
        return Err(Error::InvalidValue {
            table: "chunks",
            row,
            column: "hop",
            value: "0".to_owned(),
            problem: "below 1 (hop distances start at 1 for direct neighbours)".to_owned(),
        });
    }
    fill(out, |i| {
        graph_proximity(weight[i], hop[i], mention_count[i], p)
    });
    Ok(())
}

/// [`graph_proximity_batch`] into a new vector.
///
/// # Errors
/// As [`graph_proximity_batch`].
pub fn graph_proximity_scores(
    weight: &[f64],
    hop: &[u32],
    mention_count: &[u32],
    p: &GraphProximityProfile,
) -> Result<Vec<f64>> {
    let mut out = vec![0.0; weight.len()];
    graph_proximity_batch(weight, hop, mention_count, p, &mut out)?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Seed 004: composite score.

/// Seed 004's `GraphFact.composite_score()`: `match * (1.0 / (1 + hop)) * confidence`, in that
/// order (`hop` = 0 for a fact of the matched entity itself).
#[inline]
pub fn composite(match_score: f64, hop: u32, confidence: f64) -> f64 {
    match_score * (1.0 / (1.0 + f64::from(hop))) * confidence
}

/// [`composite`] over columns (table `facts`), written into `out`.
///
/// # Errors
/// `LengthMismatch`; `InvalidValue` for a non-finite match score or confidence.
pub fn composite_batch(
    match_score: &[f64],
    hop: &[u32],
    confidence: &[f64],
    out: &mut [f64],
) -> Result<()> {
    let n = match_score.len();
    check_len("facts", "hop", n, hop.len())?;
    check_len("facts", "confidence", n, confidence.len())?;
    check_len("facts", "out", n, out.len())?;
    check_finite(match_score, "facts", "match_score")?;
    check_finite(confidence, "facts", "confidence")?;
    fill(out, |i| composite(match_score[i], hop[i], confidence[i]));
    Ok(())
}

/// [`composite_batch`] into a new vector.
///
/// # Errors
/// As [`composite_batch`].
pub fn composite_scores(match_score: &[f64], hop: &[u32], confidence: &[f64]) -> Result<Vec<f64>> {
    let mut out = vec![0.0; match_score.len()];
    composite_batch(match_score, hop, confidence, &mut out)?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Seed 002: rerank_memories.

/// Constants of seed 002's `rerank_memories`.
#[derive(Debug, Clone, PartialEq)]
pub struct RerankProfile {
    pub w_similarity: f64,
    pub w_recency: f64,
    pub w_confidence: f64,
    pub w_access: f64,
    /// `recency = recency_base ** days_old`.
    pub recency_base: f64,
    /// Length of a "day" in seconds.
    pub day_seconds: i64,
}

impl Default for RerankProfile {
    fn default() -> Self {
        Self {
            w_similarity: 0.5,
            w_recency: 0.3,
            w_confidence: 0.15,
            w_access: 0.05,
            recency_base: 0.95,
            day_seconds: DAY_SECONDS,
        }
    }
}

impl RerankProfile {
    /// # Errors
    /// `InvalidParameter` unless the weights are finite and `>= 0`, `recency_base` is finite
    /// and `> 0` and `day_seconds > 0`.
    pub fn validate(&self) -> Result<()> {
        check_weight(self.w_similarity, "w_similarity")?;
        check_weight(self.w_recency, "w_recency")?;
        check_weight(self.w_confidence, "w_confidence")?;
        check_weight(self.w_access, "w_access")?;
        check_positive(self.recency_base, "recency_base")?;
        if self.day_seconds <= 0 {
            return Err(Error::param(
                "day_seconds",
                format!("day_seconds = {} must be > 0", self.day_seconds),
            ));
        }
        Ok(())
    }
}

/// Scores of [`rerank_batch`] (in input order) and, per query, the rows sorted by score.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reranked {
    /// One final score per memory, in input order.
    pub scores: Vec<f64>,
    /// Global row indices: `order[offsets[q]..offsets[q + 1]]` is query `q`'s rows sorted by
    /// score descending, equal scores kept in input (vector-rank) order.
    pub order: Vec<usize>,
}

/// Seed 002's recency factor: `recency_base ** days_old` with `days_old` the floor of the age
/// in days (Python's `timedelta.days`: a memory created in the future has a negative age and a
/// recency above 1). A null time gives 1.0.
#[inline]
pub fn recency(created_at: i64, now: i64, p: &RerankProfile) -> f64 {
    if created_at == NULL_TIME {
        return 1.0;
    }
    let age = i128::from(now) - i128::from(created_at);
    let days_old = age.div_euclid(i128::from(p.day_seconds.max(1)));
    p.recency_base.powf(days_old as f64)
}

/// Seed 002's `rerank_memories` over a batch of queries.
///
/// Within query `q` (rows `query_offsets[q]..query_offsets[q + 1]`, in vector-rank order), the
/// memory at position `i` (0-based) scores
///
/// ```text
/// similarity = 1.0 / (i + 1)
/// recency    = 0.95 ** days_old               (1.0 for a null created_at)
/// final      = 0.5 * similarity + 0.3 * recency + 0.15 * confidence + 0.05 * access_score
/// ```
///
/// summed left to right. A `created_at` tens of thousands of days in the future makes
/// `recency_base ** days_old` overflow to infinity (where Python would raise `OverflowError`). `confidence` and `access_score` default to 1.0 per memory when `None`
/// (the source's `getattr(memory, 'confidence', 1.0)` and its constant `access_score = 1.0`);
/// `created_at = None` means every time is null. The source takes a memory's position with
/// `memories.index(memory)`, which gives equal memories the same (first) position; rows here
/// are distinct and each takes its own position.
///
/// # Errors
/// `InvalidParameter` for a bad profile or `query_offsets`; `LengthMismatch` when a column
/// does not hold `query_offsets[last]` rows; `InvalidValue` (table `memories`) for a
/// non-finite confidence or access score.
pub fn rerank_batch(
    query_offsets: &[usize],
    created_at: Option<&[i64]>,
    confidence: Option<&[f64]>,
    access_score: Option<&[f64]>,
    now: i64,
    p: &RerankProfile,
) -> Result<Reranked> {
    p.validate()?;
    let n = query_offsets.last().copied().unwrap_or(0);
    check_offsets(query_offsets, "query_offsets", n)?;
    if let Some(times) = created_at {
        check_len("memories", "created_at", n, times.len())?;
    }
    if let Some(values) = confidence {
        check_len("memories", "confidence", n, values.len())?;
        check_finite(values, "memories", "confidence")?;
    }
    if let Some(values) = access_score {
        check_len("memories", "access_score", n, values.len())?;
        check_finite(values, "memories", "access_score")?;
    }
    let n_queries = query_offsets.len() - 1;
    let per_query = per_query(n_queries, n, |q| {
        let rows = query_offsets[q]..query_offsets[q + 1];
        let start = rows.start;
        let scores: Vec<f64> = rows
            .clone()
            .map(|row| {
                let similarity = 1.0 / ((row - start) as f64 + 1.0);
                let recency = recency(created_at.map_or(NULL_TIME, |t| t[row]), now, p);
                let confidence = confidence.map_or(1.0, |c| c[row]);
                let access = access_score.map_or(1.0, |a| a[row]);
                p.w_similarity * similarity
                    + p.w_recency * recency
                    + p.w_confidence * confidence
                    + p.w_access * access
            })
            .collect();
        let mut order: Vec<usize> = rows.collect();
        // Stable: equal scores keep their input order, as Python's sort(reverse=True) does.
        order.sort_by(|&a, &b| {
            score_key(scores[b - start]).total_cmp(&score_key(scores[a - start]))
        });
        (scores, order)
    });
    let mut out = Reranked {
        scores: Vec::with_capacity(n),
        order: Vec::with_capacity(n),
    };
    for (scores, order) in per_query {
        out.scores.extend(scores);
        out.order.extend(order);
    }
    Ok(out)
}

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
    fn n_entities(&self) -> Result<usize> {
        check_len("mentions", "counts", self.chunks.len(), self.counts.len())?;
        Ok(self.offsets.len().saturating_sub(1))
    }

    /// The CSR slots of entity `e` (input row `row`, for errors), bounds checked.
    fn range(&self, row: usize, e: i64) -> Result<std::ops::Range<usize>> {
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

fn bad_value(row: usize, column: &'static str, value: i64, problem: &str) -> Error {
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
fn sum_by_chunk(shares: &mut [(i64, usize, f64)], n_primary: usize) -> (Vec<i64>, Vec<f64>) {
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
const SEQ_BITS: u32 = 24;

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

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::float_cmp
)]
mod tests {
    use super::*;

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

        let err =
            score_facts(&[0.1, f32::NAN], &[0, 0], &[0, 0], None, &[0, 0], NOW, &p).unwrap_err();
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
        let (mut chunks, mut best, mut from): (Vec<i64>, Vec<f64>, Vec<i64>) =
            (vec![], vec![], vec![]);
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
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::float_cmp
)]
mod ppr_kernel_tests {
    use super::*;
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
        let (e, m) =
            passage_seed_mass(&offsets, &ents, &counts, None, &[0, 1], &[0.5, 0.5]).unwrap();
        assert_eq!(e, vec![1, 2]);
        assert_eq!(m, vec![0.125, 0.375 + 0.5]);
        // Specificity 1 for entity 1, 1/3 for entity 2: shares 1/4 x 1, 3/4 x 1/3, renormalised.
        let spec = [1.0, 1.0, 1.0 / 3.0];
        let (e, m) =
            passage_seed_mass(&offsets, &ents, &counts, Some(&spec), &[0], &[1.0]).unwrap();
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
        let err = passage_seed_mass(&offsets, &ents, &counts, Some(&spec[..2]), &[1], &[1.0])
            .unwrap_err();
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
}
