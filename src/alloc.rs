//! Fallible allocation of the large arrays: an allocation the process cannot have becomes
//! [`Error::OutOfMemory`] naming what was being built, never an abort.

use rayon::prelude::*;

use crate::{Error, Result};

fn out_of_memory<T>(what: &'static str, n: usize) -> Error {
    Error::OutOfMemory {
        what,
        bytes: n.saturating_mul(std::mem::size_of::<T>()),
    }
}

/// An empty vector with room for exactly `n` items.
pub(crate) fn with_capacity<T>(n: usize, what: &'static str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| out_of_memory::<T>(what, n))?;
    Ok(v)
}

/// `n` copies of `value` (`vec![value; n]`).
pub(crate) fn filled<T: Clone>(n: usize, value: T, what: &'static str) -> Result<Vec<T>> {
    let mut v = with_capacity(n, what)?;
    v.resize(n, value);
    Ok(v)
}

/// A copy of `items` (`items.to_vec()`).
pub(crate) fn copied<T: Copy>(items: &[T], what: &'static str) -> Result<Vec<T>> {
    let mut v = with_capacity(items.len(), what)?;
    v.extend_from_slice(items);
    Ok(v)
}

/// `iter` collected in parallel into a vector allocated up front.
pub(crate) fn collect<T: Send>(
    iter: impl IndexedParallelIterator<Item = T>,
    what: &'static str,
) -> Result<Vec<T>> {
    let mut v = with_capacity(iter.len(), what)?;
    iter.collect_into_vec(&mut v);
    Ok(v)
}
