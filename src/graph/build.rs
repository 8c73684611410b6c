//! Validation and O(E) construction of the CSR graph from columns.

use rayon::prelude::*;

use super::{Column, FactRec, KnowledgeGraph, NONE, NULL_TIME};
use crate::alloc;
use crate::error::{Error, Result};

/// Columns of a graph, borrowed from the caller (numpy arrays on the Python side).
///
/// Entities, facts and chunks are dense indices `0..n`. `fact_object[i] == NONE` marks a
/// literal-valued fact. Optional time columns use [`NULL_TIME`] for a missing value.
#[derive(Debug, Clone, Copy, Default)]
pub struct GraphInput<'a> {
    pub entity_tenant: &'a [u32],
    pub fact_subject: &'a [u32],
    pub fact_object: &'a [u32],
    pub fact_predicate: &'a [u32],
    pub fact_confidence: &'a [f32],
    pub fact_strength: &'a [f32],
    pub fact_status: &'a [u8],
    pub fact_source: &'a [u8],
    pub fact_access_count: &'a [u32],
    pub fact_last_accessed: Option<&'a [i64]>,
    pub fact_created_at: Option<&'a [i64]>,
    pub fact_valid_from: Option<&'a [i64]>,
    pub fact_valid_to: Option<&'a [i64]>,
    pub fact_sequence: Option<&'a [i64]>,
    pub n_predicates: u32,
    pub n_statuses: u32,
    pub n_sources: u32,
    pub chunk_tenant: &'a [u32],
    pub mention_chunk: &'a [u32],
    pub mention_entity: &'a [u32],
    pub mention_count: &'a [u32],
}

/// Tenants are dense codes assigned by the Python layer; this bound keeps a corrupted code
/// from allocating gigabytes of empty tenant offsets.
pub const MAX_TENANTS: u32 = 1 << 24;
/// Predicates are stored as u16.
pub const MAX_PREDICATES: u32 = 1 << 16;
/// Statuses and sources are stored as u8.
pub const MAX_CODES: u32 = 256;

fn check_len(table: &'static str, column: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected != got {
        return Err(Error::LengthMismatch {
            table,
            column,
            expected,
            got,
        });
    }
    Ok(())
}

/// First index where `bad` holds, searched in parallel (rayon keeps "first" exact).
fn first_bad<T: Sync>(col: &[T], bad: impl Fn(usize, &T) -> bool + Sync) -> Option<usize> {
    col.par_iter()
        .enumerate()
        .position_first(|(i, v)| bad(i, v))
}

fn invalid(
    table: &'static str,
    row: usize,
    column: &'static str,
    value: impl ToString,
    problem: impl Into<String>,
) -> Error {
    Error::InvalidValue {
        table,
        row,
        column,
        value: value.to_string(),
        problem: problem.into(),
    }
}

/// Counting-sort offsets: `offsets[k]..offsets[k+1]` will hold the items with key `k`.
fn offsets_of(
    keys: impl Iterator<Item = u32>,
    n_keys: usize,
    what: &'static str,
) -> Result<Vec<u32>> {
    let mut offsets = alloc::filled(n_keys.saturating_add(1), 0u32, what)?;
    for k in keys {
        offsets[k as usize + 1] += 1;
    }
    for i in 0..n_keys {
        offsets[i + 1] += offsets[i];
    }
    Ok(offsets)
}

/// Stable scatter of `items` into buckets given by `key`, using precomputed offsets.
fn scatter(
    n_items: usize,
    offsets: &[u32],
    key: impl Fn(usize) -> Option<u32>,
    value: impl Fn(usize) -> u32,
    what: &'static str,
) -> Result<Vec<u32>> {
    let total = offsets.last().copied().unwrap_or(0) as usize;
    let mut cursor = alloc::copied(&offsets[..offsets.len().saturating_sub(1)], what)?;
    let mut out = alloc::filled(total, 0u32, what)?;
    for i in 0..n_items {
        if let Some(k) = key(i) {
            let c = &mut cursor[k as usize];
            out[*c as usize] = value(i);
            *c += 1;
        }
    }
    Ok(out)
}

/// `scatter` for u64 sort keys.
fn scatter64(
    n_items: usize,
    offsets: &[u32],
    key: impl Fn(usize) -> Option<u32>,
    value: impl Fn(usize) -> u64,
    what: &'static str,
) -> Result<Vec<u64>> {
    let total = offsets.last().copied().unwrap_or(0) as usize;
    let mut cursor = alloc::copied(&offsets[..offsets.len().saturating_sub(1)], what)?;
    let mut out = alloc::filled(total, 0u64, what)?;
    for i in 0..n_items {
        if let Some(k) = key(i) {
            let c = &mut cursor[k as usize];
            out[*c as usize] = value(i);
            *c += 1;
        }
    }
    Ok(out)
}

/// A u32 whose unsigned order is `f32::total_cmp`'s order.
#[inline]
pub(super) fn f32_order(x: f32) -> u32 {
    let b = x.to_bits();
    if b >> 31 == 1 {
        !b
    } else {
        b | (1 << 31)
    }
}

/// Split `data` into the buckets given by `offsets` and sort each one, in parallel.
fn sort_buckets<T: Ord + Send>(data: &mut [T], offsets: &[u32], what: &'static str) -> Result<()> {
    sort_buckets_by(data, offsets, T::cmp, what)
}

/// Split `data` into the buckets given by `offsets` and sort each one with `cmp`, in
/// parallel.
fn sort_buckets_by<T: Send, F>(
    data: &mut [T],
    offsets: &[u32],
    cmp: F,
    what: &'static str,
) -> Result<()>
where
    F: Fn(&T, &T) -> std::cmp::Ordering + Sync,
{
    let mut buckets: Vec<&mut [T]> = alloc::with_capacity(offsets.len(), what)?;
    let mut rest = data;
    for w in offsets.windows(2) {
        let len = (w[1] - w[0]) as usize;
        let (head, tail) = rest.split_at_mut(len);
        if len > 1 {
            buckets.push(head);
        }
        rest = tail;
    }
    buckets
        .par_iter_mut()
        .with_min_len(256)
        .for_each(|b| b.sort_unstable_by(&cmp));
    Ok(())
}

fn gather<T: Copy + Send + Sync>(col: &[T], order: &[u32], what: &'static str) -> Result<Vec<T>> {
    alloc::collect(order.par_iter().map(|&i| col[i as usize]), what)
}

impl KnowledgeGraph {
    /// Validate the columns and build the graph in O(E) (counting sorts; only each entity's
    /// own facts are comparison-sorted, by confidence).
    ///
    /// # Errors
    /// The first problem found, naming the table, row and column: mismatched lengths,
    /// dangling entity or chunk indices, NaN / infinite / out-of-range weights, unknown
    /// codes, facts or mentions crossing tenants, duplicate mentions, inverted validity
    /// intervals, or sizes beyond the u32 layout.
    ///
    /// # Examples
    /// Two facts in one tenant, `0 -> 1 -> 2`:
    /// ```
    /// use graphrecall::graph::{GraphInput, KnowledgeGraph};
    ///
    /// let input = GraphInput {
    ///     entity_tenant: &[0, 0, 0],
    ///     fact_subject: &[0, 1],
    ///     fact_object: &[1, 2],
    ///     fact_predicate: &[0, 0],
    ///     fact_confidence: &[0.9, 0.8],
    ///     fact_strength: &[1.0, 1.0],
    ///     fact_status: &[1, 1],
    ///     fact_source: &[0, 0],
    ///     fact_access_count: &[0, 0],
    ///     n_predicates: 1,
    ///     n_statuses: 4,
    ///     n_sources: 4,
    ///     ..GraphInput::default()
    /// };
    /// let g = KnowledgeGraph::build(&input)?;
    /// assert_eq!((g.n_entities(), g.n_facts()), (3, 2));
    /// assert_eq!(g.out_facts(1)?, vec![1]);
    ///
    /// // A fact pointing at an entity that does not exist names its table, row and column.
    /// let bad = GraphInput { fact_object: &[1, 7], ..input };
    /// let err = KnowledgeGraph::build(&bad).unwrap_err();
    /// assert!(matches!(err, graphrecall::Error::Dangling { table: "facts", row: 1, .. }));
    /// # Ok::<(), graphrecall::Error>(())
    /// ```
    pub fn build(input: &GraphInput<'_>) -> Result<Self> {
        let n_ent = input.entity_tenant.len();
        let n_facts = input.fact_subject.len();
        let n_chunks = input.chunk_tenant.len();
        if n_ent >= NONE as usize {
            return Err(Error::Capacity {
                what: "entities",
                value: n_ent,
                limit: NONE as usize - 1,
            });
        }
        if n_facts >= NONE as usize {
            return Err(Error::Capacity {
                what: "facts",
                value: n_facts,
                limit: NONE as usize - 1,
            });
        }
        if n_chunks >= NONE as usize {
            return Err(Error::Capacity {
                what: "chunks",
                value: n_chunks,
                limit: NONE as usize - 1,
            });
        }
        for (what, v, limit) in [
            ("predicate codes", input.n_predicates, MAX_PREDICATES),
            ("status codes", input.n_statuses, MAX_CODES),
            ("source codes", input.n_sources, MAX_CODES),
        ] {
            if v > limit {
                return Err(Error::Capacity {
                    what,
                    value: v as usize,
                    limit: limit as usize,
                });
            }
        }
        validate_entities(input)?;
        validate_facts(input)?;
        validate_mentions(input)?;

        let n_tenants = input
            .entity_tenant
            .iter()
            .chain(input.chunk_tenant.iter())
            .copied()
            .max()
            .map_or(0, |t| t + 1);

        // Tenants -> entities.
        let tenant_offsets = offsets_of(
            input.entity_tenant.iter().copied(),
            n_tenants as usize,
            "tenant offsets",
        )?;
        let tenant_entities = scatter(
            n_ent,
            &tenant_offsets,
            |i| Some(input.entity_tenant[i]),
            |i| i as u32,
            "tenant entities",
        )?;

        // Out-adjacency: counting sort by subject of u64 keys (confidence desc, fact id asc),
        // then a plain integer sort of each entity's keys: no comparator reads memory at
        // random.
        let conf = input.fact_confidence;
        let key = |f: usize| (u64::from(!f32_order(conf[f])) << 32) | f as u64;
        let out_offsets = offsets_of(input.fact_subject.iter().copied(), n_ent, "out offsets")?;
        let mut keys = scatter64(
            n_facts,
            &out_offsets,
            |f| Some(input.fact_subject[f]),
            key,
            "out-adjacency sort keys",
        )?;
        sort_buckets(&mut keys, &out_offsets, "out-adjacency buckets")?;
        let mut fact_to_pos = alloc::filled(n_facts, 0u32, "fact positions")?;
        for (p, &k) in keys.iter().enumerate() {
            fact_to_pos[k as u32 as usize] = p as u32;
        }
        drop(keys);
        // Rows are read in order and written to their position: one random write per fact
        // instead of one random read per column.
        let last = input.fact_last_accessed;
        let mut rec = alloc::filled(n_facts, FactRec::default(), "fact records")?;
        for (f, &p) in fact_to_pos.iter().enumerate() {
            rec[p as usize] = FactRec {
                last_accessed: last.map_or(NULL_TIME, |c| c[f]),
                object: input.fact_object[f],
                confidence: input.fact_confidence[f],
                strength: input.fact_strength[f],
                fact: f as u32,
                access_count: input.fact_access_count[f],
                predicate: input.fact_predicate[f] as u16,
                status: input.fact_status[f],
                source: input.fact_source[f],
            };
        }
        let opt = |c: Option<&[i64]>, what: &'static str| {
            c.map(|c| {
                let mut out = alloc::filled(n_facts, NULL_TIME, what)?;
                for (f, &p) in fact_to_pos.iter().enumerate() {
                    out[p as usize] = c[f];
                }
                Ok(out)
            })
            .transpose()
        };
        let created_at = opt(input.fact_created_at, "facts.created_at")?;
        let valid_from = opt(input.fact_valid_from, "facts.valid_from")?;
        let valid_to = opt(input.fact_valid_to, "facts.valid_to")?;
        let sequence = opt(input.fact_sequence, "facts.sequence")?;

        // In-adjacency over positions, same order (confidence desc, fact id asc).
        let object = input.fact_object;
        let in_offsets = offsets_of(
            object.iter().copied().filter(|&o| o != NONE),
            n_ent,
            "in offsets",
        )?;
        let mut in_keys = scatter64(
            n_facts,
            &in_offsets,
            |f| (object[f] != NONE).then_some(object[f]),
            key,
            "in-adjacency sort keys",
        )?;
        sort_buckets(&mut in_keys, &in_offsets, "in-adjacency buckets")?;
        let in_pos = alloc::collect(
            in_keys.par_iter().map(|&k| fact_to_pos[k as u32 as usize]),
            "in-adjacency positions",
        )?;
        let in_subject = alloc::collect(
            in_keys
                .par_iter()
                .map(|&k| input.fact_subject[k as u32 as usize]),
            "in-adjacency subjects",
        )?;
        drop(in_keys);

        // Mentions, both directions, each sorted by the other side.
        let n_mentions = input.mention_chunk.len();
        let chunk_offsets = offsets_of(
            input.mention_chunk.iter().copied(),
            n_chunks,
            "chunk mention offsets",
        )?;
        let mut by_chunk = scatter(
            n_mentions,
            &chunk_offsets,
            |i| Some(input.mention_chunk[i]),
            |i| i as u32,
            "mentions by chunk",
        )?;
        let ment_entity = input.mention_entity;
        sort_buckets_by(
            &mut by_chunk,
            &chunk_offsets,
            |&a, &b| {
                ment_entity[a as usize]
                    .cmp(&ment_entity[b as usize])
                    .then(a.cmp(&b))
            },
            "chunk mention buckets",
        )?;
        // Duplicate (chunk, entity) pairs are adjacent now.
        for c in 0..n_chunks {
            let r = chunk_offsets[c] as usize..chunk_offsets[c + 1] as usize;
            for w in by_chunk[r].windows(2) {
                if ment_entity[w[0] as usize] == ment_entity[w[1] as usize] {
                    let row = w[0].max(w[1]) as usize;
                    return Err(Error::Duplicate {
                        table: "mentions",
                        row,
                        what: format!(
                            "mention of entity {} by chunk {c} (first given at row {})",
                            ment_entity[row],
                            w[0].min(w[1])
                        ),
                    });
                }
            }
        }
        let chunk_entity = gather(input.mention_entity, &by_chunk, "chunk mention entities")?;
        let chunk_count = gather(input.mention_count, &by_chunk, "chunk mention counts")?;
        let mention_offsets = offsets_of(
            input.mention_entity.iter().copied(),
            n_ent,
            "entity mention offsets",
        )?;
        // Scatter in chunk-major order so each entity's chunks come out ascending.
        let mut mention_chunk = alloc::filled(n_mentions, 0u32, "entity mention chunks")?;
        let mut mention_count = alloc::filled(n_mentions, 0u32, "entity mention counts")?;
        let mut cursor = alloc::copied(&mention_offsets[..n_ent], "entity mention offsets")?;
        for c in 0..n_chunks {
            for i in chunk_offsets[c] as usize..chunk_offsets[c + 1] as usize {
                let e = chunk_entity[i] as usize;
                let slot = cursor[e] as usize;
                mention_chunk[slot] = c as u32;
                mention_count[slot] = chunk_count[i];
                cursor[e] += 1;
            }
        }

        Ok(KnowledgeGraph {
            n_entities: n_ent as u32,
            n_facts: n_facts as u32,
            n_tenants,
            n_statuses: input.n_statuses,
            n_sources: input.n_sources,
            n_predicates: input.n_predicates,
            entity_tenant: (alloc::copied(input.entity_tenant, "entities.tenant")?).into(),
            tenant_offsets: tenant_offsets.into(),
            tenant_entities: tenant_entities.into(),
            out_offsets: out_offsets.into(),
            rec: rec.into(),
            created_at: created_at.map(Column::from),
            valid_from: valid_from.map(Column::from),
            valid_to: valid_to.map(Column::from),
            sequence: sequence.map(Column::from),
            fact_to_pos: fact_to_pos.into(),
            in_offsets: in_offsets.into(),
            in_pos: in_pos.into(),
            in_subject: in_subject.into(),
            n_chunks: n_chunks as u32,
            chunk_tenant: (alloc::copied(input.chunk_tenant, "chunks.tenant")?).into(),
            chunk_offsets: chunk_offsets.into(),
            chunk_entity: chunk_entity.into(),
            chunk_count: chunk_count.into(),
            mention_offsets: mention_offsets.into(),
            mention_chunk: mention_chunk.into(),
            mention_count: mention_count.into(),
            ov: None,
        })
    }
}

fn validate_entities(input: &GraphInput<'_>) -> Result<()> {
    if let Some(i) = first_bad(input.entity_tenant, |_, &t| t >= MAX_TENANTS) {
        return Err(invalid(
            "entities",
            i,
            "tenant",
            input.entity_tenant[i],
            format!("beyond the tenant code limit {MAX_TENANTS}"),
        ));
    }
    if let Some(i) = first_bad(input.chunk_tenant, |_, &t| t >= MAX_TENANTS) {
        return Err(invalid(
            "chunks",
            i,
            "tenant",
            input.chunk_tenant[i],
            format!("beyond the tenant code limit {MAX_TENANTS}"),
        ));
    }
    Ok(())
}

pub(super) fn validate_facts(input: &GraphInput<'_>) -> Result<()> {
    let n = input.fact_subject.len();
    let n_ent = input.entity_tenant.len();
    check_len("facts", "object", n, input.fact_object.len())?;
    check_len("facts", "predicate", n, input.fact_predicate.len())?;
    check_len("facts", "confidence", n, input.fact_confidence.len())?;
    check_len("facts", "strength", n, input.fact_strength.len())?;
    check_len("facts", "status", n, input.fact_status.len())?;
    check_len("facts", "source", n, input.fact_source.len())?;
    check_len("facts", "access_count", n, input.fact_access_count.len())?;
    for (name, col) in [
        ("last_accessed", input.fact_last_accessed),
        ("created_at", input.fact_created_at),
        ("valid_from", input.fact_valid_from),
        ("valid_to", input.fact_valid_to),
        ("sequence", input.fact_sequence),
    ] {
        if let Some(c) = col {
            check_len("facts", name, n, c.len())?;
        }
    }

    let dangling = |row: usize, column: &'static str, value: u32| Error::Dangling {
        table: "facts",
        row,
        column,
        value: i64::from(value),
        target: "entity",
        count: n_ent,
    };
    if let Some(i) = first_bad(input.fact_subject, |_, &s| s as usize >= n_ent) {
        return Err(dangling(i, "subject", input.fact_subject[i]));
    }
    if let Some(i) = first_bad(input.fact_object, |_, &o| o != NONE && o as usize >= n_ent) {
        return Err(dangling(i, "object", input.fact_object[i]));
    }
    let tenant = input.entity_tenant;
    if let Some(i) = first_bad(input.fact_object, |i, &o| {
        o != NONE && tenant[o as usize] != tenant[input.fact_subject[i] as usize]
    }) {
        let (s, o) = (input.fact_subject[i], input.fact_object[i]);
        return Err(Error::CrossTenant {
            table: "facts",
            row: i,
            left: "subject",
            left_id: s,
            left_tenant: tenant[s as usize],
            right: "object",
            right_id: o,
            right_tenant: tenant[o as usize],
        });
    }
    if let Some(i) = first_bad(input.fact_predicate, |_, &p| p >= input.n_predicates) {
        return Err(invalid(
            "facts",
            i,
            "predicate",
            input.fact_predicate[i],
            format!(
                "an unknown predicate code (there are {})",
                input.n_predicates
            ),
        ));
    }
    if let Some(i) = first_bad(input.fact_confidence, |_, c| !(0.0..=1.0).contains(c)) {
        let c = input.fact_confidence[i];
        let problem = if c.is_nan() {
            "NaN; confidence must be a number in [0, 1]"
        } else {
            "out of range; confidence must be in [0, 1]"
        };
        return Err(invalid("facts", i, "confidence", c, problem));
    }
    if let Some(i) = first_bad(input.fact_strength, |_, s| !(s.is_finite() && *s >= 0.0)) {
        let s = input.fact_strength[i];
        let problem = if s.is_nan() {
            "NaN; strength must be a finite number >= 0"
        } else {
            "out of range; strength must be a finite number >= 0"
        };
        return Err(invalid("facts", i, "strength", s, problem));
    }
    if let Some(i) = first_bad(input.fact_status, |_, &s| u32::from(s) >= input.n_statuses) {
        return Err(invalid(
            "facts",
            i,
            "status",
            input.fact_status[i],
            format!("an unknown status code (there are {})", input.n_statuses),
        ));
    }
    if let Some(i) = first_bad(input.fact_source, |_, &s| u32::from(s) >= input.n_sources) {
        return Err(invalid(
            "facts",
            i,
            "source",
            input.fact_source[i],
            format!("an unknown source code (there are {})", input.n_sources),
        ));
    }
    if let (Some(from), Some(to)) = (input.fact_valid_from, input.fact_valid_to) {
        if let Some(i) = first_bad(from, |i, &f| {
            f != NULL_TIME && to[i] != NULL_TIME && f > to[i]
        }) {
            return Err(invalid(
                "facts",
                i,
                "valid_from",
                from[i],
                format!("after valid_to = {}", to[i]),
            ));
        }
    }
    Ok(())
}

pub(super) fn validate_mentions(input: &GraphInput<'_>) -> Result<()> {
    let n = input.mention_chunk.len();
    let n_ent = input.entity_tenant.len();
    let n_chunks = input.chunk_tenant.len();
    check_len("mentions", "entity", n, input.mention_entity.len())?;
    check_len("mentions", "count", n, input.mention_count.len())?;
    if let Some(i) = first_bad(input.mention_chunk, |_, &c| c as usize >= n_chunks) {
        return Err(Error::Dangling {
            table: "mentions",
            row: i,
            column: "chunk",
            value: i64::from(input.mention_chunk[i]),
            target: "chunk",
            count: n_chunks,
        });
    }
    if let Some(i) = first_bad(input.mention_entity, |_, &e| e as usize >= n_ent) {
        return Err(Error::Dangling {
            table: "mentions",
            row: i,
            column: "entity",
            value: i64::from(input.mention_entity[i]),
            target: "entity",
            count: n_ent,
        });
    }
    if let Some(i) = first_bad(input.mention_count, |_, &c| c == 0) {
        return Err(invalid(
            "mentions",
            i,
            "count",
            0,
            "not a mention; counts must be >= 1",
        ));
    }
    let (ct, et) = (input.chunk_tenant, input.entity_tenant);
    if let Some(i) = first_bad(input.mention_chunk, |i, &c| {
        ct[c as usize] != et[input.mention_entity[i] as usize]
    }) {
        let (c, e) = (input.mention_chunk[i], input.mention_entity[i]);
        return Err(Error::CrossTenant {
            table: "mentions",
            row: i,
            left: "chunk",
            left_id: c,
            left_tenant: ct[c as usize],
            right: "entity",
            right_id: e,
            right_tenant: et[e as usize],
        });
    }
    Ok(())
}
