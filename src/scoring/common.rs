//! What every formula shares: source and status codes, time constants, the non-finite
//! error, exact elapsed seconds and the parallel fill.

use rayon::prelude::*;

use crate::{Error, Result};

/// A null timestamp: "age unknown", never decayed.
pub const NULL_TIME: i64 = i64::MIN;
/// Seconds in a week (seed 000 divides ages in milliseconds by `1000 * 60 * 60 * 24 * 7`).
pub const WEEK_SECONDS: f64 = 604_800.0;
/// Seconds in a day (seed 002's `timedelta.days`).
pub const DAY_SECONDS: i64 = 86_400;
/// Element-wise kernels switch to rayon above this many rows.
pub const PAR_THRESHOLD: usize = crate::batch::PAR_THRESHOLD;

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

pub(super) fn non_finite(
    table: &'static str,
    row: usize,
    column: &'static str,
    value: f64,
) -> Error {
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
pub(super) fn elapsed(then: i64, now: i64) -> f64 {
    // The i64 difference is exact when it does not overflow; i128 only for the extremes.
    match now.checked_sub(then) {
        Some(d) => d as f64,
        None => (i128::from(now) - i128::from(then)) as f64,
    }
}

/// Fill `out` with `f(i)`, in parallel above [`PAR_THRESHOLD`] rows.
pub(super) fn fill<F: Fn(usize) -> f64 + Sync + Send>(out: &mut [f64], f: F) {
    if out.len() > PAR_THRESHOLD {
        out.par_iter_mut().enumerate().for_each(|(i, o)| *o = f(i));
    } else {
        out.iter_mut().enumerate().for_each(|(i, o)| *o = f(i));
    }
}

pub(super) fn check_positive(value: f64, name: &'static str) -> Result<()> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(Error::param(
            name,
            format!("{name} = {value} must be finite and > 0"),
        ))
    }
}
