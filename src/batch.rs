//! The batch layout every kernel shares, and its checks: flat arrays cut into lists or queries
//! by offsets (`n + 1` entries, starting at 0, never decreasing, ending at the length they
//! cut), column lengths, finite values and weights, and the per-query loop that runs a batch
//! in parallel once it is large enough.

use std::ops::Range;

use rayon::prelude::*;

use crate::{Error, Result};

/// Batches with more entries than this are processed in parallel across queries (or rows).
pub const PAR_THRESHOLD: usize = 32_768;

/// `-0.0` and `0.0` become the same key, so that `total_cmp` orders like Python's `<` on every
/// non-NaN score while staying a total order (Rust's sorts may panic on a comparator that is
/// not one).
#[inline]
pub(crate) fn score_key(x: f64) -> f64 {
    if x == 0.0 {
        0.0
    } else {
        x
    }
}

/// Check that `offsets` starts at 0, never decreases and ends at `total`.
pub(crate) fn check_offsets(offsets: &[usize], name: &'static str, total: usize) -> Result<()> {
    let Some(&first) = offsets.first() else {
        return Err(Error::param(
            name,
            "is empty; it needs n + 1 entries starting at 0",
        ));
    };
    if first != 0 {
        return Err(Error::param(name, format!("must start at 0, got {first}")));
    }
    for (i, pair) in offsets.windows(2).enumerate() {
        if pair[1] < pair[0] {
            return Err(Error::param(
                name,
                format!(
                    "must never decrease, but {name}[{}] = {} < {name}[{}] = {}",
                    i + 1,
                    pair[1],
                    i,
                    pair[0]
                ),
            ));
        }
    }
    let last = offsets.last().copied().unwrap_or(0);
    if last != total {
        return Err(Error::param(
            name,
            format!("must end at {total} (the length it cuts), got {last}"),
        ));
    }
    Ok(())
}

pub(crate) fn check_len(
    table: &'static str,
    column: &'static str,
    expected: usize,
    got: usize,
) -> Result<()> {
    if expected == got {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            table,
            column,
            expected,
            got,
        })
    }
}

/// First non-finite value of a column, as an `InvalidValue` naming table, row and column.
pub(crate) fn check_finite(
    values: &[f64],
    table: &'static str,
    column: &'static str,
) -> Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(row) => Err(Error::InvalidValue {
            table,
            row,
            column,
            value: values.get(row).map_or_else(String::new, f64::to_string),
            problem: "not finite (NaN or infinite)".to_owned(),
        }),
    }
}

/// A weight-like parameter must be finite and non-negative.
pub(crate) fn check_weight(value: f64, name: &'static str) -> Result<()> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(Error::param(
            name,
            format!("{name} = {value} must be finite and >= 0"),
        ))
    }
}

pub(crate) fn check_weights(weights: &[f64], name: &'static str) -> Result<()> {
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

/// Run `f` for every query, in parallel when the batch is large. Results keep query order.
pub(crate) fn per_query<T, F>(n_queries: usize, work: usize, f: F) -> Vec<T>
where
    T: Send,
    F: Fn(usize) -> T + Sync + Send,
{
    if n_queries > 1 && work > PAR_THRESHOLD {
        (0..n_queries).into_par_iter().map(f).collect()
    } else {
        (0..n_queries).map(f).collect()
    }
}

#[inline]
pub(crate) fn span(offsets: &[usize], i: usize) -> Range<usize> {
    // Callers validated `offsets` with `check_offsets` and `i + 1 < offsets.len()`.
    offsets[i]..offsets[i + 1]
}
