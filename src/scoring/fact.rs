//! Seed 000's `scoreFact`: confidence × source weight × decay × usage boost × status weight.

use super::common::*;
use crate::batch::*;
use crate::{Error, Result};

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

impl FactScoreProfile {
    /// # Errors
    /// `InvalidParameter` unless every weight is finite and `>= 0`, `decay_base` is in (0, 1]
    /// and `grace_weeks` and `usage_log_factor` are finite and `>= 0`.
    pub fn validate(&self) -> Result<()> {
        check_weights(&self.source_weights, "source_weights")?;
        check_weight(self.default_source_weight, "default_source_weight")?;
        check_weights(&self.status_weights, "status_weights")?;
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
