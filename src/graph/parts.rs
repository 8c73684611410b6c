//! The graph as plain arrays and back: the snapshot format's payload.
//!
//! `from_parts` trusts nothing: a snapshot may be truncated, corrupted or foreign, so every
//! structural invariant that traversal relies on is checked (O(E)) before the graph is
//! handed out. A bad part gives an error naming it, never a panic or a wrong answer.
//!
//! The parts are read borrowed ([`PartsRef`]: a snapshot's memory-mapped files), so each
//! array is read once, in parallel, by the pass that checks it and copies it into the
//! graph's own layout.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use rayon::prelude::*;

use super::multiset::{self, Fingerprint, Lanes};
use super::{Column, FactRec, KnowledgeGraph, NONE, NULL_TIME};
use crate::alloc;
use crate::error::{Error, Result};

/// Every array of a graph, in position order where it applies.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GraphParts {
    pub n_predicates: u32,
    pub n_statuses: u32,
    pub n_sources: u32,
    pub entity_tenant: Vec<u32>,
    pub out_offsets: Vec<u32>,
    // Fact columns by position.
    pub last_accessed: Vec<i64>,
    pub object: Vec<u32>,
    pub confidence: Vec<f32>,
    pub strength: Vec<f32>,
    pub fact: Vec<u32>,
    /// The inverse of `fact` (fact id -> position); optional on the way in (computed when
    /// absent), always given on the way out.
    pub fact_to_pos: Option<Vec<u32>>,
    pub access_count: Vec<u32>,
    pub predicate: Vec<u16>,
    pub status: Vec<u8>,
    pub source: Vec<u8>,
    pub created_at: Option<Vec<i64>>,
    pub valid_from: Option<Vec<i64>>,
    pub valid_to: Option<Vec<i64>>,
    pub sequence: Option<Vec<i64>>,
    pub in_offsets: Vec<u32>,
    pub in_pos: Vec<u32>,
    pub in_subject: Vec<u32>,
    pub chunk_tenant: Vec<u32>,
    pub chunk_offsets: Vec<u32>,
    pub chunk_entity: Vec<u32>,
    pub chunk_count: Vec<u32>,
}

/// Every array of a graph, borrowed (the caller's memory-mapped snapshot files): what
/// [`KnowledgeGraph::from_parts_ref`] reads. Fields as in [`GraphParts`].
#[derive(Debug, Clone, Copy, Default)]
pub struct PartsRef<'a> {
    pub n_predicates: u32,
    pub n_statuses: u32,
    pub n_sources: u32,
    pub entity_tenant: &'a [u32],
    pub out_offsets: &'a [u32],
    pub last_accessed: &'a [i64],
    pub object: &'a [u32],
    pub confidence: &'a [f32],
    pub strength: &'a [f32],
    pub fact: &'a [u32],
    pub fact_to_pos: Option<&'a [u32]>,
    pub access_count: &'a [u32],
    pub predicate: &'a [u16],
    pub status: &'a [u8],
    pub source: &'a [u8],
    pub created_at: Option<&'a [i64]>,
    pub valid_from: Option<&'a [i64]>,
    pub valid_to: Option<&'a [i64]>,
    pub sequence: Option<&'a [i64]>,
    pub in_offsets: &'a [u32],
    pub in_pos: &'a [u32],
    pub in_subject: &'a [u32],
    pub chunk_tenant: &'a [u32],
    pub chunk_offsets: &'a [u32],
    pub chunk_entity: &'a [u32],
    pub chunk_count: &'a [u32],
}

impl GraphParts {
    /// The parts, borrowed.
    pub fn view(&self) -> PartsRef<'_> {
        PartsRef {
            n_predicates: self.n_predicates,
            n_statuses: self.n_statuses,
            n_sources: self.n_sources,
            entity_tenant: &self.entity_tenant,
            out_offsets: &self.out_offsets,
            last_accessed: &self.last_accessed,
            object: &self.object,
            confidence: &self.confidence,
            strength: &self.strength,
            fact: &self.fact,
            fact_to_pos: self.fact_to_pos.as_deref(),
            access_count: &self.access_count,
            predicate: &self.predicate,
            status: &self.status,
            source: &self.source,
            created_at: self.created_at.as_deref(),
            valid_from: self.valid_from.as_deref(),
            valid_to: self.valid_to.as_deref(),
            sequence: self.sequence.as_deref(),
            in_offsets: &self.in_offsets,
            in_pos: &self.in_pos,
            in_subject: &self.in_subject,
            chunk_tenant: &self.chunk_tenant,
            chunk_offsets: &self.chunk_offsets,
            chunk_entity: &self.chunk_entity,
            chunk_count: &self.chunk_count,
        }
    }
}

fn bad(part: &'static str, problem: impl Into<String>) -> Error {
    Error::Corrupt {
        part,
        problem: problem.into(),
    }
}

fn check_offsets(part: &'static str, offsets: &[u32], n: usize, total: usize) -> Result<()> {
    if offsets.len() != n + 1 {
        return Err(bad(
            part,
            format!("has {} entries, expected {}", offsets.len(), n + 1),
        ));
    }
    if offsets[0] != 0 || offsets[n] as usize != total {
        return Err(bad(part, format!("must run from 0 to {total}")));
    }
    if offsets.par_windows(2).any(|w| w[0] > w[1]) {
        return Err(bad(part, "is not non-decreasing"));
    }
    Ok(())
}

/// `src` copied, in parallel; `Ok(Err(i))` if the value at `i` is `>= bound`.
fn copy_below(
    part: &'static str,
    src: &[u32],
    bound: usize,
) -> Result<std::result::Result<Vec<u32>, usize>> {
    let over = AtomicUsize::new(usize::MAX);
    let mut out = alloc::with_capacity(src.len(), part)?;
    src.par_iter()
        .enumerate()
        .map(|(i, &x)| {
            if x as usize >= bound {
                over.fetch_min(i, Ordering::Relaxed);
            }
            x
        })
        .collect_into_vec(&mut out);
    Ok(match over.into_inner() {
        usize::MAX => Ok(out),
        i => Err(i),
    })
}

/// An optional column copied.
fn base(c: &Option<Column<i64>>) -> Option<&[i64]> {
    c.as_ref().map(Column::base)
}

fn opt_copy(src: Option<&[i64]>, part: &'static str) -> Result<Option<Vec<i64>>> {
    src.map(|c| alloc::copied(c, part)).transpose()
}

/// `src` copied, in parallel.
fn copy<T: Copy + Send + Sync>(src: &[T], part: &'static str) -> Result<Vec<T>> {
    alloc::collect(src.par_iter().copied(), part)
}

/// The inverse of the position -> fact id permutation `fact`, or the first position whose
/// fact id is out of range or repeated. Scattered in parallel (plain stores), then checked
/// by reading back: `fact_to_pos[fact[pos]] == pos` for every position means that no fact
/// id repeats. A failure is located again sequentially, so that the position reported
/// does not depend on the threads.
fn invert(fact: &[u32]) -> Result<std::result::Result<Vec<u32>, usize>> {
    let m = fact.len();
    if m > 1 << BUCKET_BITS {
        if let Some(slots) = invert_bucketed(fact)? {
            return Ok(Ok(slots));
        }
        return locate_bad_fact(fact);
    }
    let slots: Vec<AtomicU32> = alloc::collect(
        (0..m).into_par_iter().map(|_| AtomicU32::new(NONE)),
        "fact positions",
    )?;
    let in_range = fact.par_iter().enumerate().all(|(pos, &f)| {
        let ok = (f as usize) < m;
        if ok {
            slots[f as usize].store(pos as u32, Ordering::Relaxed);
        }
        ok
    });
    if in_range
        && fact
            .par_iter()
            .enumerate()
            .all(|(pos, &f)| slots[f as usize].load(Ordering::Relaxed) == pos as u32)
    {
        return Ok(Ok(slots.into_iter().map(AtomicU32::into_inner).collect()));
    }
    drop(slots);
    locate_bad_fact(fact)
}

/// Slots per bucket of [`invert_bucketed`] (as a power of two): 1 MiB of `u32`s, so that
/// the stores of one bucket stay in cache.
const BUCKET_BITS: u32 = 18;

/// Keys per chunk of [`group_by_bucket`]'s parallel passes.
const GROUP_CHUNK: usize = 1 << 20;

/// `keys` (each below `n_buckets << bits`) and a value for each, grouped by bucket
/// (`key >> bits`) and in index order within a bucket: (bucket starts, keys, values). Each
/// chunk of `chunk` keys is counted, then written by one thread into its own sub-range of
/// every bucket. `values(start)` makes the value function of the chunk starting at index `start`
/// (called with ascending indexes, so that it may walk offsets).
fn group_by_bucket<F, V>(
    keys: &[u32],
    bits: u32,
    n_buckets: usize,
    chunk: usize,
    values: F,
    what: &'static str,
) -> Result<(Vec<usize>, Vec<u32>, Vec<u32>)>
where
    F: Fn(usize) -> V + Sync,
    V: FnMut(usize) -> u32,
{
    let counts: Vec<Vec<usize>> = keys
        .par_chunks(chunk)
        .map(|chunk| {
            let mut c = vec![0usize; n_buckets];
            for &k in chunk {
                c[(k >> bits) as usize] += 1;
            }
            c
        })
        .collect();
    let mut starts = alloc::filled(n_buckets + 1, 0usize, what)?;
    for b in 0..n_buckets {
        starts[b + 1] = starts[b] + counts.iter().map(|c| c[b]).sum::<usize>();
    }
    let mut out_keys = alloc::filled(keys.len(), 0u32, what)?;
    let mut out_values = alloc::filled(keys.len(), 0u32, what)?;
    // Every chunk's sub-range of every bucket, bucket-major so that a bucket keeps the
    // index order.
    let mut slices: Vec<Vec<(&mut [u32], &mut [u32])>> = counts
        .iter()
        .map(|_| Vec::with_capacity(n_buckets))
        .collect();
    let (mut rest_k, mut rest_v) = (&mut out_keys[..], &mut out_values[..]);
    for b in 0..n_buckets {
        for (c, out) in counts.iter().zip(&mut slices) {
            let (k, tail_k) = std::mem::take(&mut rest_k).split_at_mut(c[b]);
            let (v, tail_v) = std::mem::take(&mut rest_v).split_at_mut(c[b]);
            rest_k = tail_k;
            rest_v = tail_v;
            out.push((k, v));
        }
    }
    keys.par_chunks(chunk)
        .zip(slices)
        .enumerate()
        .for_each(|(c, (part, mut out))| {
            let start = c * chunk;
            let mut value = values(start);
            let mut next = vec![0usize; n_buckets];
            for (i, &k) in part.iter().enumerate() {
                let b = (k >> bits) as usize;
                let (ks, vs) = &mut out[b];
                ks[next[b]] = k;
                vs[next[b]] = value(start + i);
                next[b] += 1;
            }
        });
    Ok((starts, out_keys, out_values))
}

/// [`invert`] for large graphs, where stores scattered over the whole inverse miss the
/// cache and the TLB on almost every fact: the (fact id, position) pairs are first grouped
/// by the bucket of slots they land in (a counting pass and a sequential distribution), then
/// each bucket is filled by one thread within its own cache-sized range of slots. `None`
/// when a fact id is out of range or repeated (located by the caller).
fn invert_bucketed(fact: &[u32]) -> Result<Option<Vec<u32>>> {
    let m = fact.len();
    let n_buckets = (m >> BUCKET_BITS) + 1;
    if fact.par_iter().any(|&f| f as usize >= m) {
        return Ok(None);
    }
    let (starts, ids, positions) = group_by_bucket(
        fact,
        BUCKET_BITS,
        n_buckets,
        GROUP_CHUNK,
        |_| |i| i as u32,
        "fact position buckets",
    )?;
    let mut slots = alloc::filled(m, NONE, "fact positions")?;
    let filled = slots
        .par_chunks_mut(1 << BUCKET_BITS)
        .enumerate()
        .all(|(b, range)| {
            let base = b << BUCKET_BITS;
            (starts[b]..starts[b + 1]).all(|i| {
                let slot = &mut range[ids[i] as usize - base];
                let fresh = *slot == NONE;
                *slot = positions[i];
                fresh
            })
        });
    // m ids, each in range and none repeated: a bijection.
    Ok(filled.then_some(slots))
}

/// The first position whose fact id is out of range or repeated (sequential, so that the
/// position reported does not depend on the threads).
fn locate_bad_fact(fact: &[u32]) -> Result<std::result::Result<Vec<u32>, usize>> {
    let m = fact.len();
    let mut seen = alloc::filled(m, false, "fact positions")?;
    for (pos, &f) in fact.iter().enumerate() {
        if f as usize >= m || seen[f as usize] {
            return Ok(Err(pos));
        }
        seen[f as usize] = true;
    }
    Ok(Err(m)) // unreachable: the parallel passes found a problem
}

/// Items per parallel task of the fingerprint passes.
const FP_CHUNK: usize = 1 << 16;

/// The product of `fp`'s factors of `(inverse[id], id, 0)` over every fact id: equal to
/// the records pass's product over `(position, fact[position], 0)` when `inverse` inverts
/// `fact` (see [`multiset`]).
fn inverse_fingerprint(fp: &Fingerprint, inverse: &[u32]) -> u64 {
    inverse
        .par_chunks(FP_CHUNK)
        .enumerate()
        .map(|(c, part)| {
            let start = c * FP_CHUNK;
            fp.product(0..part.len(), |i| (part[i], (start + i) as u32, 0))
        })
        .reduce(|| 1, multiset::mul)
}

/// Entities per parallel task of the tenant passes.
const ENTITY_CHUNK: usize = 1 << 12;

/// The first entity (in index order) one of whose out-facts points at an entity of another
/// tenant. Objects must already be known to be `NONE` or `< tenant.len()`. The random reads
/// of `tenant` are independent, so their misses overlap (keep other work out of this loop);
/// with few tenants they read a narrower copy, which the cache holds whole.
fn cross_tenant_fact(out_offsets: &[u32], object: &[u32], tenant: &[u32]) -> Result<Option<usize>> {
    fn first<T: Copy + PartialEq + Sync>(
        out_offsets: &[u32],
        object: &[u32],
        tenant: &[T],
    ) -> Option<usize> {
        (0..tenant.len()).into_par_iter().position_first(|e| {
            let t = tenant[e];
            object[out_offsets[e] as usize..out_offsets[e + 1] as usize]
                .iter()
                .any(|&o| o != NONE && tenant[o as usize] != t)
        })
    }
    let max = tenant.par_iter().copied().max().unwrap_or(0);
    Ok(if u8::try_from(max).is_ok() {
        let narrow = alloc::collect(tenant.par_iter().map(|&t| t as u8), "entity tenants")?;
        first(out_offsets, object, &narrow)
    } else if u16::try_from(max).is_ok() {
        let narrow = alloc::collect(tenant.par_iter().map(|&t| t as u16), "entity tenants")?;
        first(out_offsets, object, &narrow)
    } else {
        first(out_offsets, object, tenant)
    })
}

/// The subject of position `pos` (`< out_offsets[n]`), found from `hint` (the subject of an
/// earlier position of the same pass, or anything else) by walking, or else by a search.
#[inline]
fn subject_at(out_offsets: &[u32], pos: usize, hint: usize) -> usize {
    let mut e = hint;
    if e >= out_offsets.len() - 1 || pos < out_offsets[e] as usize {
        e = out_offsets.partition_point(|&o| o as usize <= pos) - 1;
    }
    while out_offsets[e + 1] as usize <= pos {
        e += 1;
    }
    e
}

/// The fingerprint of every in-adjacency entry as `(position, entity, subject)`: equal to
/// the records pass's fingerprint of the facts' links when the in-adjacency holds exactly
/// the facts that point at an entity, each under that entity with its subject.
fn in_facts_fingerprint(
    fp: &Fingerprint,
    in_offsets: &[u32],
    in_pos: &[u32],
    in_subject: &[u32],
) -> u64 {
    let n = in_offsets.len() - 1;
    (0..n.div_ceil(ENTITY_CHUNK))
        .into_par_iter()
        .map(|c| {
            let mut acc = [1u64; 4];
            let mut k = 0usize;
            for e in c * ENTITY_CHUNK..n.min((c + 1) * ENTITY_CHUNK) {
                for i in in_offsets[e] as usize..in_offsets[e + 1] as usize {
                    let a = &mut acc[k & 3];
                    *a = multiset::mul(*a, fp.factor(in_pos[i], e as u32, in_subject[i]));
                    k += 1;
                }
            }
            multiset::mul(multiset::mul(acc[0], acc[1]), multiset::mul(acc[2], acc[3]))
        })
        .reduce(|| 1, multiset::mul)
}

/// The first entity whose in-adjacency is not exactly the facts pointing at it, each with
/// its subject (sequential, for the error after a fingerprint mismatch). `in_pos` and
/// `in_subject` must already be in bounds.
fn locate_in_mismatch(
    p: &PartsRef<'_>,
    in_pos: &[u32],
    in_subject: &[u32],
) -> Result<Option<usize>> {
    let (n, m) = (p.entity_tenant.len(), p.object.len());
    let mut subject = alloc::filled(m, 0u32, "fact subjects")?;
    let mut in_count = alloc::filled(n, 0usize, "in-adjacency counts")?;
    for e in 0..n {
        subject[p.out_offsets[e] as usize..p.out_offsets[e + 1] as usize].fill(e as u32);
    }
    for &o in p.object {
        if o != NONE {
            in_count[o as usize] += 1;
        }
    }
    let mut seen = alloc::filled(m, false, "fact positions")?;
    for (e, &count) in in_count.iter().enumerate() {
        let r = p.in_offsets[e] as usize..p.in_offsets[e + 1] as usize;
        if r.len() != count {
            return Ok(Some(e));
        }
        for i in r {
            let pos = in_pos[i] as usize;
            if p.object[pos] != e as u32 || in_subject[i] != subject[pos] || seen[pos] {
                return Ok(Some(e));
            }
            seen[pos] = true;
        }
    }
    Ok(None)
}

/// How much of a graph's parts [`KnowledgeGraph::from_parts_ref`] checks. Every level
/// checks what memory safety needs (lengths, bounds, codes, the fact/position bijection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Check {
    /// Memory safety only: for payloads you wrote yourself, whose integrity a checksum has
    /// established. A crafted payload may link tenants.
    Trusted,
    /// Memory safety and isolation (the default): every link a traversal follows (a fact's
    /// object, an in-adjacency entry, a mention) stays within one tenant.
    #[default]
    Tenants,
    /// Every invariant: also orders, validity and that the in-adjacency is exactly the facts'
    /// objects.
    Full,
}

fn same_len(part: &'static str, len: usize, expected: usize) -> Result<()> {
    if len != expected {
        return Err(bad(part, format!("has {len} entries, expected {expected}")));
    }
    Ok(())
}

impl KnowledgeGraph {
    /// All arrays of the graph (the inverse of [`KnowledgeGraph::from_parts`]).
    ///
    /// # Errors
    /// `OutOfMemory` naming the array that cannot be allocated.
    pub fn to_parts(&self) -> Result<GraphParts> {
        if self.ov.is_some() {
            return self.compacted()?.to_parts();
        }
        let rec = self.rec.base();
        Ok(GraphParts {
            n_predicates: self.n_predicates,
            n_statuses: self.n_statuses,
            n_sources: self.n_sources,
            entity_tenant: alloc::copied(&self.entity_tenant, "entity_tenant")?,
            out_offsets: alloc::copied(&self.out_offsets, "out_offsets")?,
            last_accessed: alloc::collect(
                rec.par_iter().map(|r| r.last_accessed),
                "last_accessed",
            )?,
            object: alloc::collect(rec.par_iter().map(|r| r.object), "object")?,
            confidence: alloc::collect(rec.par_iter().map(|r| r.confidence), "confidence")?,
            strength: alloc::collect(rec.par_iter().map(|r| r.strength), "strength")?,
            fact: alloc::collect(rec.par_iter().map(|r| r.fact), "fact")?,
            fact_to_pos: Some(alloc::copied(&self.fact_to_pos, "fact_to_pos")?),
            access_count: alloc::collect(rec.par_iter().map(|r| r.access_count), "access_count")?,
            predicate: alloc::collect(rec.par_iter().map(|r| r.predicate), "predicate")?,
            status: alloc::collect(rec.par_iter().map(|r| r.status), "status")?,
            source: alloc::collect(rec.par_iter().map(|r| r.source), "source")?,
            created_at: opt_copy(base(&self.created_at), "created_at")?,
            valid_from: opt_copy(base(&self.valid_from), "valid_from")?,
            valid_to: opt_copy(base(&self.valid_to), "valid_to")?,
            sequence: opt_copy(base(&self.sequence), "sequence")?,
            in_offsets: alloc::copied(&self.in_offsets, "in_offsets")?,
            in_pos: alloc::copied(self.in_pos.base(), "in_pos")?,
            in_subject: alloc::copied(self.in_subject.base(), "in_subject")?,
            chunk_tenant: alloc::copied(&self.chunk_tenant, "chunk_tenant")?,
            chunk_offsets: alloc::copied(&self.chunk_offsets, "chunk_offsets")?,
            chunk_entity: alloc::copied(&self.chunk_entity, "chunk_entity")?,
            chunk_count: alloc::copied(&self.chunk_count, "chunk_count")?,
        })
    }

    /// Rebuild a graph from its arrays, checking every invariant traversal relies on.
    ///
    /// # Errors
    /// `Corrupt` naming the inconsistent part.
    pub fn from_parts(p: GraphParts) -> Result<Self> {
        Self::from_parts_checked(p, Check::Full)
    }

    /// [`KnowledgeGraph::from_parts`] with a choice of checks (see [`Check`]).
    ///
    /// # Errors
    /// `Corrupt` naming the inconsistent part.
    pub fn from_parts_checked(p: GraphParts, check: Check) -> Result<Self> {
        Self::from_parts_ref(&p.view(), check)
    }

    /// [`KnowledgeGraph::from_parts_checked`] from borrowed arrays (memory-mapped files):
    /// each array is read once, by the parallel pass that checks it and copies it into the
    /// graph's layout.
    ///
    /// # Errors
    /// `Corrupt` naming the inconsistent part.
    pub fn from_parts_ref(p: &PartsRef<'_>, check: Check) -> Result<Self> {
        let full = check == Check::Full;
        let tenants = check != Check::Trusted;
        let n = p.entity_tenant.len();
        let m = p.object.len();
        if n >= NONE as usize || m >= NONE as usize || p.chunk_tenant.len() >= NONE as usize {
            return Err(bad("sizes", "exceed the u32 layout"));
        }
        for (part, len) in [
            ("last_accessed", p.last_accessed.len()),
            ("confidence", p.confidence.len()),
            ("strength", p.strength.len()),
            ("fact", p.fact.len()),
            ("access_count", p.access_count.len()),
            ("predicate", p.predicate.len()),
            ("status", p.status.len()),
            ("source", p.source.len()),
        ] {
            same_len(part, len, m)?;
        }
        for (part, col) in [
            ("created_at", p.created_at),
            ("valid_from", p.valid_from),
            ("valid_to", p.valid_to),
            ("sequence", p.sequence),
        ] {
            if let Some(c) = col {
                same_len(part, c.len(), m)?;
            }
        }
        check_offsets("out_offsets", p.out_offsets, n, m)?;
        check_offsets("in_offsets", p.in_offsets, n, p.in_pos.len())?;
        same_len("in_subject", p.in_subject.len(), p.in_pos.len())?;
        let n_chunks = p.chunk_tenant.len();
        check_offsets(
            "chunk_offsets",
            p.chunk_offsets,
            n_chunks,
            p.chunk_entity.len(),
        )?;
        same_len("chunk_count", p.chunk_count.len(), p.chunk_entity.len())?;
        if p.n_predicates > 1 << 16 || p.n_statuses > 256 || p.n_sources > 256 {
            return Err(bad("codes", "vocabulary sizes exceed their limits"));
        }
        let entity_tenant = copy_below("entity_tenant", p.entity_tenant, 1 << 24)?
            .map_err(|_| bad("entity_tenant", "holds a tenant code beyond the limit"))?;
        let chunk_tenant = copy_below("chunk_tenant", p.chunk_tenant, 1 << 24)?
            .map_err(|_| bad("entity_tenant", "holds a tenant code beyond the limit"))?;

        // Subject of every position, from the out offsets.
        // (Only the full check reads subjects.)
        let mut subject = alloc::filled(if full { m } else { 0 }, 0u32, "fact subjects")?;
        if full {
            for e in 0..n {
                let r = p.out_offsets[e] as usize..p.out_offsets[e + 1] as usize;
                subject[r].fill(e as u32);
            }
        }
        // Fact columns: ranges, codes, tenants, and the fact <-> position bijection.
        // The stored inverse of `fact`, range-checked; whether it inverts `fact` is checked
        // by fingerprints after the records pass, which folds `fact`'s own.
        let inverse = p
            .fact_to_pos
            .map(|inverse| {
                same_len("fact_to_pos", inverse.len(), m)?;
                copy_below("fact_to_pos", inverse, m)
            })
            .transpose()?;
        let tenant = &entity_tenant;
        let row_ok = |pos: usize| -> bool {
            let o = p.object[pos];
            let c = p.confidence[pos];
            let s = p.strength[pos];
            (o == NONE || (o as usize) < n)
                && (0.0..=1.0).contains(&c)
                && s.is_finite()
                && s >= 0.0
                && u32::from(p.predicate[pos]) < p.n_predicates
                && u32::from(p.status[pos]) < p.n_statuses
                && u32::from(p.source[pos]) < p.n_sources
        };
        // One pass reads the fact columns, checks each row and writes its record, folding
        // the fingerprints of its (position, fact id) pairs (against the stored inverse) and
        // of its (position, object, subject) links (against the in-adjacency).
        let fp = Fingerprint::random();
        let (want_by_fact, want_by_object) = (inverse.is_some(), tenants && !full);
        let (by_fact, by_object) = (AtomicU64::new(1), AtomicU64::new(1));
        let first_bad = AtomicUsize::new(usize::MAX);
        let mut rec: Vec<FactRec> = alloc::with_capacity(m, "fact records")?;
        (0..m)
            .into_par_iter()
            .map_init(
                || (Lanes::new(&by_fact), Lanes::new(&by_object), usize::MAX),
                |(fact_lanes, object_lanes, subject), pos| {
                    if !row_ok(pos) {
                        first_bad.fetch_min(pos, Ordering::Relaxed);
                    }
                    let r = FactRec {
                        last_accessed: p.last_accessed[pos],
                        object: p.object[pos],
                        confidence: p.confidence[pos],
                        strength: p.strength[pos],
                        fact: p.fact[pos],
                        access_count: p.access_count[pos],
                        predicate: p.predicate[pos],
                        status: p.status[pos],
                        source: p.source[pos],
                    };
                    if want_by_fact {
                        fact_lanes.push(fp.factor(pos as u32, r.fact, 0));
                    }
                    if want_by_object && r.object != NONE {
                        *subject = subject_at(p.out_offsets, pos, *subject);
                        object_lanes.push(fp.factor(pos as u32, r.object, *subject as u32));
                    }
                    r
                },
            )
            .collect_into_vec(&mut rec);
        let fact_to_pos = match inverse {
            Some(Ok(slots)) if inverse_fingerprint(&fp, &slots) == by_fact.into_inner() => {
                // m pairs (position, id), one per position and one per id: a bijection.
                Ok(slots)
            }
            Some(_) => match locate_bad_fact(p.fact)? {
                Err(pos) if pos < m => Err(pos),
                _ => return Err(bad("fact_to_pos", "is not the inverse of fact")),
            },
            None => invert(p.fact)?,
        }
        .map_err(|pos| {
            bad(
                "fact",
                format!(
                    "position {pos}: fact id {} is out of range or repeated",
                    p.fact.get(pos).copied().unwrap_or(NONE)
                ),
            )
        })?;
        let pos = first_bad.into_inner();
        if pos != usize::MAX {
            return Err(bad(
                "facts",
                format!("position {pos} holds an invalid fact"),
            ));
        }
        let out_fingerprint = by_object.into_inner();
        if tenants {
            if let Some(e) = cross_tenant_fact(p.out_offsets, p.object, tenant)? {
                return Err(bad(
                    "object",
                    format!("entity {e} has a fact pointing at an entity of another tenant"),
                ));
            }
        }
        if let (Some(from), Some(to)) = (p.valid_from, p.valid_to) {
            if from
                .par_iter()
                .zip(to)
                .any(|(&f, &t)| f != NULL_TIME && t != NULL_TIME && f > t)
            {
                return Err(bad("valid_from", "a validity interval is inverted"));
            }
        }
        // Out order: confidence desc, fact id asc within each entity.
        let ordered = |a: usize, b: usize| -> bool {
            let (ca, cb) = (p.confidence[a], p.confidence[b]);
            ca > cb || (ca == cb && p.fact[a] < p.fact[b])
        };
        if full
            && (1..m)
                .into_par_iter()
                .any(|pos| subject[pos] == subject[pos - 1] && !ordered(pos - 1, pos))
        {
            return Err(bad(
                "out_offsets",
                "an entity's facts are not in confidence order",
            ));
        }
        // In-adjacency: exactly the non-literal facts, each under its object, ordered.
        let mut in_count = alloc::filled(if full { n } else { 0 }, 0u32, "in-adjacency counts")?;
        if full {
            for &o in p.object {
                if o != NONE {
                    in_count[o as usize] += 1;
                }
            }
        }
        let in_ok = |e: usize| -> bool {
            let r = p.in_offsets[e] as usize..p.in_offsets[e + 1] as usize;
            r.len() == in_count[e] as usize
                && r.clone().all(|i| {
                    let pos = p.in_pos[i] as usize;
                    pos < m
                        && p.object[pos] == e as u32
                        && p.in_subject[i] == subject[pos]
                        && (i == r.start || ordered(p.in_pos[i - 1] as usize, pos))
                })
        };
        let out_of_range = |_| bad("in_pos", "holds an index out of range");
        let in_pos = copy_below("in_pos", p.in_pos, m)?.map_err(out_of_range)?;
        let in_subject = copy_below("in_subject", p.in_subject, n)?.map_err(out_of_range)?;
        let bad_in = if full {
            (0..n).into_par_iter().position_first(|e| !in_ok(e))
        } else if tenants
            && in_facts_fingerprint(&fp, p.in_offsets, &in_pos, &in_subject) != out_fingerprint
        {
            // Every in-adjacency entry is a fact pointing at its entity, with its subject, so
            // (the out-facts being checked) of the entity's tenant.
            Some(
                locate_in_mismatch(p, &in_pos, &in_subject)?
                    .ok_or_else(|| bad("in_pos", "the in-adjacency does not match the facts"))?,
            )
        } else {
            None
        };
        if let Some(e) = bad_in {
            return Err(bad(
                "in_pos",
                format!("entity {e}: the in-facts do not match the facts pointing at it"),
            ));
        }
        // Mentions: entities in range, same tenant, strictly ascending per chunk, counts >= 1.
        for (c, &ct) in chunk_tenant.iter().enumerate() {
            let r = p.chunk_offsets[c] as usize..p.chunk_offsets[c + 1] as usize;
            for i in r.clone() {
                let e = p.chunk_entity[i] as usize;
                if e >= n || (tenants && tenant[e] != ct) || p.chunk_count[i] == 0 {
                    return Err(bad(
                        "chunk_entity",
                        format!("chunk {c} holds an invalid mention"),
                    ));
                }
                if i > r.start && p.chunk_entity[i - 1] >= p.chunk_entity[i] {
                    return Err(bad(
                        "chunk_entity",
                        format!("chunk {c}: mentions are not ascending"),
                    ));
                }
            }
        }
        drop(subject);
        // Derived indexes: tenants -> entities, entity -> chunks.
        let n_tenants = tenant
            .par_iter()
            .chain(&chunk_tenant)
            .copied()
            .max()
            .map_or(0, |t| t + 1);
        let mut tenant_offsets = alloc::filled(n_tenants as usize + 1, 0u32, "tenant offsets")?;
        for &t in tenant {
            tenant_offsets[t as usize + 1] += 1;
        }
        for t in 0..n_tenants as usize {
            tenant_offsets[t + 1] += tenant_offsets[t];
        }
        let mut cursor = alloc::copied(&tenant_offsets[..n_tenants as usize], "tenant offsets")?;
        let mut tenant_entities = alloc::filled(n, 0u32, "tenant entities")?;
        for (e, &t) in tenant.iter().enumerate() {
            tenant_entities[cursor[t as usize] as usize] = e as u32;
            cursor[t as usize] += 1;
        }
        let mut mention_offsets = alloc::filled(n + 1, 0u32, "entity mention offsets")?;
        for &e in p.chunk_entity {
            mention_offsets[e as usize + 1] += 1;
        }
        for e in 0..n {
            mention_offsets[e + 1] += mention_offsets[e];
        }
        let mut cursor = alloc::copied(&mention_offsets[..n], "entity mention offsets")?;
        let n_mentions = p.chunk_entity.len();
        let mut mention_chunk = alloc::filled(n_mentions, 0u32, "entity mention chunks")?;
        let mut mention_count = alloc::filled(n_mentions, 0u32, "entity mention counts")?;
        for c in 0..n_chunks {
            for i in p.chunk_offsets[c] as usize..p.chunk_offsets[c + 1] as usize {
                let e = p.chunk_entity[i] as usize;
                mention_chunk[cursor[e] as usize] = c as u32;
                mention_count[cursor[e] as usize] = p.chunk_count[i];
                cursor[e] += 1;
            }
        }
        Ok(KnowledgeGraph {
            n_entities: n as u32,
            n_facts: m as u32,
            n_tenants,
            n_statuses: p.n_statuses,
            n_sources: p.n_sources,
            n_predicates: p.n_predicates,
            entity_tenant: entity_tenant.into(),
            tenant_offsets: tenant_offsets.into(),
            tenant_entities: tenant_entities.into(),
            out_offsets: copy(p.out_offsets, "out_offsets")?.into(),
            rec: rec.into(),
            created_at: (p.created_at.map(|c| copy(c, "created_at")).transpose()?)
                .map(Column::from),
            valid_from: (p.valid_from.map(|c| copy(c, "valid_from")).transpose()?)
                .map(Column::from),
            valid_to: (p.valid_to.map(|c| copy(c, "valid_to")).transpose()?).map(Column::from),
            sequence: (p.sequence.map(|c| copy(c, "sequence")).transpose()?).map(Column::from),
            fact_to_pos: fact_to_pos.into(),
            in_offsets: copy(p.in_offsets, "in_offsets")?.into(),
            in_pos: in_pos.into(),
            in_subject: in_subject.into(),
            n_chunks: n_chunks as u32,
            chunk_tenant: chunk_tenant.into(),
            chunk_offsets: copy(p.chunk_offsets, "chunk_offsets")?.into(),
            chunk_entity: copy(p.chunk_entity, "chunk_entity")?.into(),
            chunk_count: copy(p.chunk_count, "chunk_count")?.into(),
            mention_offsets: mention_offsets.into(),
            mention_chunk: mention_chunk.into(),
            mention_count: mention_count.into(),
            ov: None,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]
    use proptest::prelude::*;

    use super::*;
    use crate::graph::tests::arb_cols;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(100))]
        #[test]
        fn parts_round_trip(c in arb_cols()) {
            let g = c.graph();
            let back = KnowledgeGraph::from_parts(g.to_parts().unwrap()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(back.to_parts().unwrap(), g.to_parts().unwrap());
            prop_assert_eq!(&back.tenant_entities, &g.tenant_entities);
            prop_assert_eq!(&back.mention_chunk, &g.mention_chunk);
            prop_assert_eq!(&back.fact_to_pos, &g.fact_to_pos);
        }

        /// Any single corrupted value is either harmless (the same graph) or refused.
        #[test]
        fn corrupted_parts_are_refused_or_harmless(c in arb_cols(), which in 0usize..8, at in any::<usize>(), v in any::<u32>()) {
            let g = c.graph();
            let mut p = g.to_parts().unwrap();
            let poke = |col: &mut Vec<u32>| { if !col.is_empty() { let i = at % col.len(); col[i] = v; } };
            match which {
                0 => poke(&mut p.out_offsets),
                1 => poke(&mut p.object),
                2 => poke(&mut p.fact),
                3 => poke(&mut p.in_offsets),
                4 => poke(&mut p.in_pos),
                5 => poke(&mut p.in_subject),
                6 => poke(&mut p.chunk_entity),
                _ => poke(&mut p.entity_tenant),
            }
            if let Ok(back) = KnowledgeGraph::from_parts(p.clone()) {
                // Accepted only if it is still a consistent graph: rebuilding from its own
                // parts gives the same parts.
                let again = KnowledgeGraph::from_parts(back.to_parts().unwrap()).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(again.to_parts().unwrap(), p);
            }
        }
    }

    proptest! {
        /// Grouping by bucket in parallel chunks is a stable sort by bucket.
        #[test]
        fn group_by_bucket_is_a_stable_bucket_sort(keys in proptest::collection::vec(0u32..64, 0..200), bits in 0u32..4, chunk in 1usize..20) {
            let n_buckets = (64 >> bits) + 1;
            let (starts, k, v) = group_by_bucket(&keys, bits, n_buckets, chunk, |_| |i| i as u32, "test").unwrap();
            let mut want: Vec<(u32, u32)> = keys.iter().enumerate().map(|(i, &k)| (k, i as u32)).collect();
            want.sort_by_key(|&(k, _)| k >> bits);
            prop_assert_eq!(k.iter().copied().zip(v.iter().copied()).collect::<Vec<_>>(), want);
            for b in 0..n_buckets {
                prop_assert!(k[starts[b]..starts[b + 1]].iter().all(|&x| (x >> bits) as usize == b));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]
        /// With only the memory-safety checks, a corrupted payload is refused or gives a
        /// graph every kernel runs on without panicking.
        #[test]
        fn unchecked_corruption_never_panics(c in arb_cols(), which in 0usize..8, at in any::<usize>(), v in any::<u32>()) {
            use crate::activation::{graph_recall, personalized_pagerank, spread, Direction, PprParams, Queries, RecallParams, SpreadParams};
            let g = c.graph();
            let mut p = g.to_parts().unwrap();
            let poke = |col: &mut Vec<u32>| { if !col.is_empty() { let i = at % col.len(); col[i] = v % (col.len() as u32 + 3); } };
            match which {
                0 => poke(&mut p.out_offsets),
                1 => poke(&mut p.object),
                2 => poke(&mut p.fact),
                3 => poke(&mut p.in_offsets),
                4 => poke(&mut p.in_pos),
                5 => poke(&mut p.in_subject),
                6 => poke(&mut p.chunk_entity),
                _ => poke(&mut p.entity_tenant),
            }
            if let Ok(back) = KnowledgeGraph::from_parts_checked(p, Check::Trusted) {
                for e in 0..back.n_entities() as u32 {
                    let q = Queries { anchors: &[e], scores: &[1.0], offsets: &[0, 1] };
                    let sp = SpreadParams { direction: Direction::Both, ..SpreadParams::default() };
                    let _ = spread(&back, &q, &sp, 0);
                    let _ = graph_recall(&back, &q, &RecallParams::default());
                    let _ = personalized_pagerank(&back, &q, &PprParams::default());
                    let _ = back.fact_columns();
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// With the tenant check (the default), a corrupted payload is refused or every link a
        /// traversal follows stays within one tenant.
        #[test]
        fn accepted_payloads_keep_tenants_apart(c in arb_cols(), which in 0usize..8, at in any::<usize>(), v in any::<u32>()) {
            let g = c.graph();
            let mut p = g.to_parts().unwrap();
            let poke = |col: &mut Vec<u32>| { if !col.is_empty() { let i = at % col.len(); col[i] = v % (col.len() as u32 + 3); } };
            match which {
                0 => poke(&mut p.object),
                1 => poke(&mut p.entity_tenant),
                2 => poke(&mut p.in_subject),
                3 => poke(&mut p.in_pos),
                4 => poke(&mut p.chunk_entity),
                5 => poke(&mut p.chunk_tenant),
                6 => poke(&mut p.out_offsets),
                _ => poke(&mut p.in_offsets),
            }
            if let Ok(b) = KnowledgeGraph::from_parts_checked(p, Check::Tenants) {
                let t = &b.entity_tenant;
                for e in 0..b.n_entities as usize {
                    for pos in b.out_offsets[e] as usize..b.out_offsets[e + 1] as usize {
                        let o = b.rec[pos].object;
                        prop_assert!(o == NONE || t[o as usize] == t[e]);
                    }
                    for i in b.in_offsets[e] as usize..b.in_offsets[e + 1] as usize {
                        prop_assert_eq!(t[b.in_subject[i] as usize], t[e]);
                        prop_assert_eq!(b.rec[b.in_pos[i] as usize].object, e as u32);
                    }
                }
                for c in 0..b.n_chunks as usize {
                    for i in b.chunk_offsets[c] as usize..b.chunk_offsets[c + 1] as usize {
                        prop_assert_eq!(t[b.chunk_entity[i] as usize], b.chunk_tenant[c]);
                    }
                }
            }
        }
    }

    /// Fuzz cases: `GRAPHRECALL_FUZZ_CASES` (the documented long run) or `default`.
    fn fuzz_cases(default: u32) -> u32 {
        std::env::var("GRAPHRECALL_FUZZ_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    /// Every kernel over every entity of an accepted graph (none may panic).
    fn exercise(g: &KnowledgeGraph) {
        use crate::activation::{
            graph_recall, personalized_pagerank, spread, Direction, PprParams, Queries,
            RecallParams, SpreadParams,
        };
        for e in 0..g.n_entities() as u32 {
            let q = Queries {
                anchors: &[e],
                scores: &[1.0],
                offsets: &[0, 1],
            };
            let sp = SpreadParams {
                direction: Direction::Both,
                ..SpreadParams::default()
            };
            let _ = spread(g, &q, &sp, 0);
            let _ = graph_recall(g, &q, &RecallParams::default());
            let _ = personalized_pagerank(g, &q, &PprParams::default());
        }
        let _ = g.fact_columns();
        let _ = g.to_parts();
    }

    fn check_of(i: u8) -> Check {
        [Check::Trusted, Check::Tenants, Check::Full][usize::from(i % 3)]
    }

    /// A column cut, extended or overwritten at a few places (lengths and values both).
    fn mutate<T: Copy>(col: &mut Vec<T>, how: u8, at: usize, v: T) {
        match how % 4 {
            0 if !col.is_empty() => col.truncate(at % col.len()),
            1 => col.push(v),
            _ if !col.is_empty() => {
                let i = at % col.len();
                col[i] = v;
            }
            _ => {}
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(fuzz_cases(300)))]
        /// Fuzz: arbitrary arrays (any lengths, any values) are refused or give a graph
        /// every kernel runs on; never a panic, at every check level.
        #[test]
        fn fuzz_arbitrary_parts(
            sizes in proptest::collection::vec(0usize..12, 16),
            vals in proptest::collection::vec(any::<u32>(), 160),
            floats in proptest::collection::vec(any::<f32>(), 24),
            scal in (0u32..300, 0u32..300, 0u32..300),
            level in any::<u8>(),
        ) {
            let mut k = 0usize;
            let mut take = |len: usize, small: bool| -> Vec<u32> {
                (0..len).map(|_| { k = (k + 1) % vals.len(); let v = vals[k]; if small { v % 16 } else { v } }).collect()
            };
            let sm = vals[0] % 2 == 0;
            let p = GraphParts {
                n_predicates: scal.0, n_statuses: scal.1, n_sources: scal.2,
                entity_tenant: take(sizes[0], sm),
                out_offsets: take(sizes[1], sm),
                last_accessed: take(sizes[2], false).into_iter().map(i64::from).collect(),
                object: take(sizes[2], sm),
                confidence: (0..sizes[2]).map(|i| floats[i % floats.len()]).collect(),
                strength: (0..sizes[2]).map(|i| floats[(i + 7) % floats.len()]).collect(),
                fact: take(sizes[2], sm),
                fact_to_pos: (sizes[9] % 2 == 0).then(|| take(sizes[2], sm)),
                access_count: take(sizes[2], false),
                predicate: take(sizes[2], sm).into_iter().map(|v| v as u16).collect(),
                status: take(sizes[2], sm).into_iter().map(|v| v as u8).collect(),
                source: take(sizes[2], sm).into_iter().map(|v| v as u8).collect(),
                created_at: None,
                valid_from: (sizes[3] % 2 == 0).then(|| take(sizes[2], false).into_iter().map(i64::from).collect()),
                valid_to: (sizes[3] % 3 == 0).then(|| take(sizes[2], false).into_iter().map(i64::from).collect()),
                sequence: None,
                in_offsets: take(sizes[4], sm),
                in_pos: take(sizes[5], sm),
                in_subject: take(sizes[5], sm),
                chunk_tenant: take(sizes[6], sm),
                chunk_offsets: take(sizes[7], sm),
                chunk_entity: take(sizes[8], sm),
                chunk_count: take(sizes[8], sm),
            };
            if let Ok(g) = KnowledgeGraph::from_parts_checked(p, check_of(level)) {
                exercise(&g);
            }
        }

        /// Fuzz: a valid graph's parts with several columns cut, extended or overwritten
        /// (any type, any value) are refused or give a graph every kernel runs on.
        #[test]
        fn fuzz_mutated_parts(
            c in arb_cols(),
            edits in proptest::collection::vec((0u8..25, any::<u8>(), any::<usize>(), any::<u32>()), 1..5),
            level in any::<u8>(),
        ) {
            let mut p = c.graph().to_parts().unwrap();
            for (col, how, at, v) in edits {
                let f = f32::from_bits(v);
                let w = i64::from(v as i32);
                match col {
                    0 => mutate(&mut p.entity_tenant, how, at, v),
                    1 => mutate(&mut p.out_offsets, how, at, v),
                    2 => mutate(&mut p.last_accessed, how, at, w),
                    3 => mutate(&mut p.object, how, at, v),
                    4 => mutate(&mut p.confidence, how, at, f),
                    5 => mutate(&mut p.strength, how, at, f),
                    6 => mutate(&mut p.fact, how, at, v),
                    7 => mutate(&mut p.access_count, how, at, v),
                    8 => mutate(&mut p.predicate, how, at, v as u16),
                    9 => mutate(&mut p.status, how, at, v as u8),
                    10 => mutate(&mut p.source, how, at, v as u8),
                    11 => mutate(p.valid_from.get_or_insert_with(Vec::new), how, at, w),
                    12 => mutate(p.valid_to.get_or_insert_with(Vec::new), how, at, w),
                    13 => mutate(&mut p.in_offsets, how, at, v),
                    14 => mutate(&mut p.in_pos, how, at, v),
                    15 => mutate(&mut p.in_subject, how, at, v),
                    16 => mutate(&mut p.chunk_tenant, how, at, v),
                    17 => mutate(&mut p.chunk_offsets, how, at, v),
                    18 => mutate(&mut p.chunk_entity, how, at, v),
                    19 => mutate(&mut p.chunk_count, how, at, v),
                    20 => p.n_predicates = v,
                    21 => p.n_statuses = v % 512,
                    22 => mutate(&mut p.object, how, at, v % 64),
                    23 => mutate(&mut p.in_pos, how, at, v % 64),
                    _ => mutate(p.fact_to_pos.get_or_insert_with(Vec::new), how, at, v % 64),
                }
            }
            if let Ok(g) = KnowledgeGraph::from_parts_checked(p, check_of(level)) {
                exercise(&g);
            }
        }
    }

    /// Two tenants, 0 -> 1 in tenant 0 and 2 -> 3 in tenant 1.
    fn two_tenants() -> KnowledgeGraph {
        let mut c = crate::graph::tests::Cols {
            tenant: vec![0, 0, 1, 1],
            ..Default::default()
        };
        c.push(0, 1, 0.5);
        c.push(2, 3, 0.7);
        c.graph()
    }

    fn refusal(p: &GraphParts, check: Check) -> Option<String> {
        KnowledgeGraph::from_parts_checked(p.clone(), check)
            .err()
            .map(|e| e.to_string())
    }

    #[test]
    fn a_cross_tenant_fact_is_refused_unless_trusted() {
        let mut p = two_tenants().to_parts().unwrap();
        let pos = p.object.iter().position(|&o| o == 1).unwrap();
        p.object[pos] = 3; // entity 0's fact now points into tenant 1
        for check in [Check::Tenants, Check::Full] {
            let e = refusal(&p, check);
            assert!(e.is_some_and(|e| e.contains("another tenant") || e.contains("in-facts")));
        }
        assert_eq!(
            refusal(&p, Check::Tenants).as_deref(),
            Some("corrupted graph part object: entity 0 has a fact pointing at an entity of another tenant")
        );
        assert!(refusal(&p, Check::Trusted).is_none());
    }

    #[test]
    fn a_foreign_in_fact_is_refused_unless_trusted() {
        let g = two_tenants();
        let mut p = g.to_parts().unwrap();
        // Entity 1 (tenant 0) is reached from entity 2 (tenant 1).
        let i = p.in_offsets[1] as usize;
        p.in_subject[i] = 2;
        assert_eq!(
            refusal(&p, Check::Tenants).as_deref(),
            Some("corrupted graph part in_pos: entity 1: the in-facts do not match the facts pointing at it")
        );
        assert!(refusal(&p, Check::Trusted).is_none());
        // Entity 1's in-fact swapped for tenant 1's fact.
        let mut p = g.to_parts().unwrap();
        let other = p.in_pos[p.in_offsets[3] as usize];
        p.in_pos[i] = other;
        assert!(refusal(&p, Check::Tenants).is_some());
    }

    #[test]
    fn a_mention_of_another_tenant_is_refused_unless_trusted() {
        let mut p = two_tenants().to_parts().unwrap();
        p.chunk_tenant = vec![0];
        p.chunk_offsets = vec![0, 1];
        p.chunk_entity = vec![3];
        p.chunk_count = vec![1];
        assert_eq!(
            refusal(&p, Check::Tenants).as_deref(),
            Some("corrupted graph part chunk_entity: chunk 0 holds an invalid mention")
        );
        assert!(refusal(&p, Check::Trusted).is_none());
    }

    fn small() -> KnowledgeGraph {
        let mut c = crate::graph::tests::Cols {
            tenant: vec![0, 0, 0, 0],
            ..Default::default()
        };
        c.push(0, 1, 0.5);
        c.push(1, 2, 0.7);
        c.push(2, 3, 0.9);
        c.push(3, 0, 0.2);
        c.graph()
    }

    #[test]
    fn repeated_fact_ids_are_refused_at_their_first_repeat() {
        let mut p = small().to_parts().unwrap();
        p.fact = vec![2, 0, 2, 0];
        for check in [Check::Trusted, Check::Tenants, Check::Full] {
            let e = KnowledgeGraph::from_parts_checked(p.clone(), check)
                .err()
                .map(|e| e.to_string());
            assert_eq!(
                e.as_deref(),
                Some(
                    "corrupted graph part fact: position 2: fact id 2 is out of range or repeated"
                )
            );
        }
        p.fact = vec![0, 1, 2, 4];
        let e = KnowledgeGraph::from_parts_checked(p, Check::Trusted)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("corrupted graph part fact: position 3: fact id 4 is out of range or repeated")
        );
    }

    #[test]
    fn a_wrong_fact_inverse_is_refused() {
        let g = small();
        let mut p = g.to_parts().unwrap();
        p.fact_to_pos.as_mut().unwrap().swap(0, 1);
        for check in [Check::Trusted, Check::Tenants, Check::Full] {
            assert_eq!(
                refusal(&p, check).as_deref(),
                Some("corrupted graph part fact_to_pos: is not the inverse of fact")
            );
        }
        p.fact_to_pos = Some(vec![0, 1, 2]);
        assert_eq!(
            refusal(&p, Check::Trusted).as_deref(),
            Some("corrupted graph part fact_to_pos: has 3 entries, expected 4")
        );
        // Without the inverse (older snapshots) it is computed: the same graph.
        p.fact_to_pos = None;
        let back = KnowledgeGraph::from_parts_checked(p, Check::Tenants).unwrap();
        assert_eq!(back.fact_to_pos, g.fact_to_pos);
    }

    #[test]
    fn a_missing_or_repeated_in_fact_is_refused_unless_trusted() {
        let g = two_tenants();
        let p = g.to_parts().unwrap();
        // Entity 1's only in-fact dropped.
        let mut dropped = p.clone();
        dropped.in_pos.remove(0);
        dropped.in_subject.remove(0);
        for o in &mut dropped.in_offsets[2..] {
            *o -= 1;
        }
        // Entity 3's in-fact listed twice, in place of entity 1's.
        let mut repeated = p.clone();
        repeated.in_pos[0] = p.in_pos[1];
        repeated.in_subject[0] = p.in_subject[1];
        for q in [dropped, repeated] {
            assert_eq!(
                refusal(&q, Check::Tenants).as_deref(),
                Some("corrupted graph part in_pos: entity 1: the in-facts do not match the facts pointing at it")
            );
            assert!(refusal(&q, Check::Trusted).is_none());
        }
    }

    #[test]
    fn the_first_invalid_fact_is_named() {
        let mut p = small().to_parts().unwrap();
        p.confidence[3] = f32::NAN;
        p.strength[1] = -1.0;
        let e = KnowledgeGraph::from_parts_checked(p, Check::Trusted)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("corrupted graph part facts: position 1 holds an invalid fact")
        );
    }

    #[test]
    fn in_adjacency_out_of_range_is_refused_without_the_full_check() {
        let g = small();
        for (which, v) in [(0, 4), (1, 4)] {
            let mut p = g.to_parts().unwrap();
            if which == 0 {
                p.in_pos[1] = v;
            } else {
                p.in_subject[1] = v;
            }
            let e = KnowledgeGraph::from_parts_checked(p, Check::Trusted)
                .err()
                .map(|e| e.to_string());
            assert_eq!(
                e.as_deref(),
                Some("corrupted graph part in_pos: holds an index out of range")
            );
        }
    }

    #[test]
    fn borrowed_parts_give_the_same_graph() {
        let g = small();
        let p = g.to_parts().unwrap();
        let back = KnowledgeGraph::from_parts_ref(&p.view(), Check::Trusted).unwrap();
        assert_eq!(back.to_parts().unwrap(), p);
        assert_eq!(back.fact_to_pos, g.fact_to_pos);
        assert_eq!(back.tenant_entities, g.tenant_entities);
    }

    #[test]
    fn truncated_parts_are_refused() {
        let mut c = crate::graph::tests::Cols {
            tenant: vec![0, 0, 0],
            ..Default::default()
        };
        c.push(0, 1, 0.5);
        c.push(1, 2, 0.7);
        let g = c.graph();
        let mut p = g.to_parts().unwrap();
        p.confidence.pop();
        let e = KnowledgeGraph::from_parts(p).err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("corrupted graph part confidence: has 1 entries, expected 2")
        );
    }
}

#[cfg(test)]
mod invert_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The bucketed inversion (large graphs) against the direct one, and its refusals.
    #[test]
    fn bucketed_inversion_matches_and_locates_bad_ids() {
        let m = (1usize << BUCKET_BITS) * 3 + 12_345;
        // A permutation with no structure: a multiplicative step coprime with m.
        let fact: Vec<u32> = (0..m).map(|i| ((i * 7_919 + 11) % m) as u32).collect();
        let inv = invert(&fact).unwrap().unwrap();
        for (pos, &f) in fact.iter().enumerate() {
            assert_eq!(inv[f as usize], pos as u32);
        }
        let mut repeated = fact.clone();
        repeated[m - 5] = repeated[17];
        assert_eq!(invert(&repeated).unwrap().unwrap_err(), m - 5);
        let mut out = fact;
        out[400_000] = m as u32;
        assert_eq!(invert(&out).unwrap().unwrap_err(), 400_000);
    }
}
