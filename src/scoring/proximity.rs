//! Seed 003's `computeGraphScore`: relationship weight, hop decay and mention boost.

use super::common::*;
use crate::batch::*;
use crate::{Error, Result};

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
