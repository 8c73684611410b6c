//! Argument extraction shared by `CoreGraph` and its plans: optional arrays, anchors,
//! query batches, fact filters, and the int64 forms of ids and offsets.

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::activation::{CodeSet, Direction, FactFilter};
use crate::graph::{KnowledgeGraph, NONE};
use crate::py::slice;
use crate::Error;

pub(super) type Arr<'py, T> = PyReadonlyArray1<'py, T>;
pub(super) type Pair<'py, A, B> = (Bound<'py, PyArray1<A>>, Bound<'py, PyArray1<B>>);

pub(super) fn opt<'a>(
    a: &'a Option<Arr<'_, i64>>,
    name: &'static str,
) -> PyResult<Option<&'a [i64]>> {
    a.as_ref().map(|a| slice(a, name)).transpose()
}

pub(super) fn o32<'a>(a: &'a Option<Arr<'_, u32>>, name: &'static str) -> PyResult<&'a [u32]> {
    match a {
        None => Ok(&[]),
        Some(a) => slice(a, name),
    }
}

pub(super) fn parse_direction(s: &str) -> PyResult<Direction> {
    match s {
        "out" => Ok(Direction::Out),
        "in" => Ok(Direction::In),
        "both" => Ok(Direction::Both),
        other => Err(Error::param(
            "direction",
            format!("{other:?} is not one of 'out', 'in', 'both'"),
        )
        .into()),
    }
}

pub(super) fn id64(v: &[u32]) -> Vec<i64> {
    v.iter()
        .map(|&x| if x == NONE { -1 } else { i64::from(x) })
        .collect()
}

pub(super) fn offsets64(v: &[usize]) -> Vec<i64> {
    v.iter().map(|&x| x as i64).collect()
}

/// Anchors arrive as int64 (numpy's default); negative or huge values are query errors.
pub(super) fn anchors_u32(anchors: &[i64], offsets: &[usize]) -> PyResult<Vec<u32>> {
    let mut out = Vec::with_capacity(anchors.len());
    for (i, &a) in anchors.iter().enumerate() {
        match u32::try_from(a) {
            Ok(v) if v != NONE => out.push(v),
            _ => {
                let q = offsets.partition_point(|&o| o <= i).saturating_sub(1);
                return Err(Error::query(q, format!("anchor {a} is not an entity index")).into());
            }
        }
    }
    Ok(out)
}

/// Borrowed batch arguments shared by every plan's `__call__`.
pub(super) struct Batch {
    pub(super) anchors: Vec<u32>,
    pub(super) scores: Vec<f64>,
    pub(super) offsets: Vec<usize>,
}

pub(super) fn batch(
    anchors: &Arr<'_, i64>,
    scores: &Option<Arr<'_, f64>>,
    offsets: &Option<Arr<'_, i64>>,
) -> PyResult<Batch> {
    let a = slice(anchors, "anchors")?;
    let offsets: Vec<usize> = match offsets {
        None => vec![0, a.len()],
        Some(o) => {
            let o = slice(o, "offsets")?;
            let mut v = Vec::with_capacity(o.len());
            for &x in o {
                v.push(usize::try_from(x).map_err(|_| {
                    PyErr::from(Error::param("offsets", format!("{x} is negative")))
                })?);
            }
            v
        }
    };
    let scores = match scores {
        None => vec![1.0; a.len()],
        Some(s) => slice(s, "anchor_scores")?.to_vec(),
    };
    Ok(Batch {
        anchors: anchors_u32(a, &offsets)?,
        scores,
        offsets,
    })
}

#[allow(clippy::too_many_arguments)]
pub(super) fn filter(
    g: &KnowledgeGraph,
    statuses: Option<Arr<'_, u8>>,
    predicates: Option<Arr<'_, u32>>,
    min_confidence: Option<f32>,
    as_of: Option<i64>,
    max_sequence: Option<i64>,
) -> PyResult<FactFilter> {
    let statuses = match statuses {
        None => None,
        Some(s) => {
            let s = slice(&s, "statuses")?;
            if let Some(&bad) = s.iter().find(|&&c| u32::from(c) >= g.n_statuses) {
                return Err(Error::param(
                    "statuses",
                    format!(
                        "code {bad} is unknown (the graph has {} statuses)",
                        g.n_statuses
                    ),
                )
                .into());
            }
            Some(CodeSet::from_codes(s))
        }
    };
    let predicates = match predicates {
        None => None,
        Some(p) => {
            let p = slice(&p, "predicates")?;
            let mut mask = vec![false; g.n_predicates()];
            for &c in p {
                match mask.get_mut(c as usize) {
                    Some(m) => *m = true,
                    None => {
                        return Err(Error::param(
                            "predicates",
                            format!(
                                "code {c} is unknown (the graph has {} predicates)",
                                g.n_predicates
                            ),
                        )
                        .into())
                    }
                }
            }
            Some(mask)
        }
    };
    if let Some(c) = min_confidence {
        if c.is_nan() {
            return Err(Error::param("min_confidence", "is NaN").into());
        }
    }
    Ok(FactFilter {
        statuses,
        predicates,
        min_confidence,
        as_of,
        max_sequence,
    })
}
