//! Live changes without a rebuild: a small overlay over an immutable, shared base.
//!
//! A graph generation is the base arrays (shared through `Arc`, never copied) plus an
//! [`Overlay`]. Changing facts appends records after the base positions, and every entity
//! whose out-row or in-row changes gets a row of runs (see `overlay_rows`) in the build's
//! order (confidence descending, fact id ascending): a long row keeps its runs, with the
//! replaced facts cut out and the new ones spliced in by binary search, so its unchanged
//! facts keep their positions; a short or fragmented row is rewritten to one appended run,
//! and its facts move. Every live fact has exactly one position: an in-row entry of a
//! moved or replaced fact is found by its key (which a move does not change) and replaced
//! or dropped. Kernels read through [`KnowledgeGraph::out_range`],
//! [`KnowledgeGraph::in_range`] and the `Column` index: a query on a generation walks the
//! same rows, in the same order, as a fresh build of the same facts, so it gives the same
//! answer bit for bit.
//!
//! Entities and chunks are appended the same way ([`KnowledgeGraph::with_entities`],
//! [`KnowledgeGraph::with_chunks`]: the next dense indices, empty rows, the per-entity and
//! per-chunk arrays grown), and added mentions rewrite the mention rows of the chunks and
//! entities they touch into the overlay ([`KnowledgeGraph::with_mentions`]).
//!
//! [`KnowledgeGraph::compacted`] merges a generation into a new base.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::{Index, Range};
use std::sync::Arc;

use super::build::{f32_order, validate_facts, validate_mentions, MAX_TENANTS};
use super::overlay_rows::{self as rows, RowRef, RowRule, Segs};
use super::retenant::tenant_listing;
use super::{FactRec, GraphInput, KnowledgeGraph, NONE, NULL_TIME};
use crate::error::{Error, Result};

/// A column shared between generations: the base rows and the rows appended after them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Column<T> {
    base: Arc<Vec<T>>,
    ext: Arc<Vec<T>>,
}

impl<T> Column<T> {
    pub(crate) fn base(&self) -> &[T] {
        &self.base
    }
    pub(crate) fn ext(&self) -> &[T] {
        &self.ext
    }
    pub(crate) fn len(&self) -> usize {
        self.base.len() + self.ext.len()
    }
    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(self.base.as_slice()) + std::mem::size_of_val(self.ext.as_slice())
    }
    /// The same base with other appended rows.
    fn with_ext(&self, ext: Vec<T>) -> Self {
        Column {
            base: Arc::clone(&self.base),
            ext: Arc::new(ext),
        }
    }
}

impl<T> From<Vec<T>> for Column<T> {
    fn from(base: Vec<T>) -> Self {
        Column {
            base: Arc::new(base),
            ext: Arc::new(Vec::new()),
        }
    }
}

impl<T> Index<usize> for Column<T> {
    type Output = T;
    #[inline]
    fn index(&self, i: usize) -> &T {
        match self.base.get(i) {
            Some(v) => v,
            None => &self.ext[i - self.base.len()],
        }
    }
}

impl<T: PartialEq> PartialEq<Vec<T>> for Column<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        self.len() == other.len() && self.base.iter().chain(self.ext.iter()).eq(other.iter())
    }
}

/// A hasher for dense u32 ids: one multiplication (the maps are read on every entity a
/// query visits, so SipHash's cost shows).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.0 = (self.0 ^ u64::from(i)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type IdMap<V> = HashMap<u32, V, BuildHasherDefault<IdHasher>>;

/// What a generation changed since its base: the rows moved to appended positions.
#[derive(Debug, Clone, Default)]
pub(crate) struct Overlay {
    /// Entities whose out-row / in-row moved (one bit per entity), checked before the maps.
    out_dirty: Vec<u64>,
    in_dirty: Vec<u64>,
    /// Entity -> its out-row (runs of positions) / in-row (runs of indices into `in_pos`)
    /// in `out_runs` / `in_runs`.
    out_rows: IdMap<RowRef>,
    in_rows: IdMap<RowRef>,
    out_runs: Vec<(u32, u32)>,
    in_runs: Vec<(u32, u32)>,
    /// Fact id -> position, for the facts moved or appended since the base.
    fact_pos: IdMap<u32>,
    /// Subject of each appended position.
    ext_subject: Vec<u32>,
    /// Chunk -> its rewritten mention row (entities ascending, counts), and entity -> its
    /// rewritten mention row (chunks ascending, counts).
    chunk_ment: IdMap<(Vec<u32>, Vec<u32>)>,
    entity_ment: IdMap<(Vec<u32>, Vec<u32>)>,
    /// Mentions added since the base.
    mentions_added: usize,
    /// Mentions removed since the base.
    mentions_removed: usize,
    /// Deleted facts (sorted): cut out of every row, their ids kept until a compaction
    /// renumbers the facts that stay.
    dead: Vec<u32>,
    /// Deleted entities (sorted): no facts, no mentions, in no tenant's listing; their
    /// rows stay until a new base without them.
    dead_entities: Vec<u32>,
    /// Deleted chunks (sorted): no mentions; their rows stay until a new base without them.
    dead_chunks: Vec<u32>,
}

#[inline]
fn bit(bits: &[u64], e: u32) -> bool {
    bits.get(e as usize / 64)
        .is_some_and(|w| w >> (e % 64) & 1 == 1)
}

fn set_bit(bits: &mut [u64], e: u32) {
    if let Some(w) = bits.get_mut(e as usize / 64) {
        *w |= 1 << (e % 64);
    }
}

impl Overlay {
    /// The runs of `e`'s out-row, if this overlay moved it (the bit check inlined, the
    /// look-up not: most entities a query visits are not moved).
    #[inline]
    pub(crate) fn out_row(&self, e: u32) -> Option<Segs<'_>> {
        if !bit(&self.out_dirty, e) {
            return None;
        }
        self.moved_row(&self.out_rows, &self.out_runs, e)
    }
    #[inline]
    pub(crate) fn in_row(&self, e: u32) -> Option<Segs<'_>> {
        if !bit(&self.in_dirty, e) {
            return None;
        }
        self.moved_row(&self.in_rows, &self.in_runs, e)
    }
    fn moved_row<'s>(
        &'s self,
        rows: &'s IdMap<RowRef>,
        pool: &'s [(u32, u32)],
        e: u32,
    ) -> Option<Segs<'s>> {
        let r = rows.get(&e)?;
        Some(match r.n {
            1 => Segs::one(r.one.0 as usize..r.one.1 as usize),
            _ => Segs::runs(r.runs(pool)),
        })
    }
    /// The runs of an entity's out-row / in-row in this overlay, if it moved.
    fn out_runs_of(&self, e: u32) -> Option<&[(u32, u32)]> {
        Some(self.out_rows.get(&e)?.runs(&self.out_runs))
    }
    fn in_runs_of(&self, e: u32) -> Option<&[(u32, u32)]> {
        Some(self.in_rows.get(&e)?.runs(&self.in_runs))
    }
    pub(crate) fn fact_pos(&self, f: u32) -> Option<u32> {
        self.fact_pos.get(&f).copied()
    }
    pub(crate) fn ext_subject(&self, i: usize) -> Option<u32> {
        self.ext_subject.get(i).copied()
    }
    pub(crate) fn heap_bytes(&self) -> usize {
        8 * (self.out_dirty.len() + self.in_dirty.len())
            + 20 * (self.out_rows.len() + self.in_rows.len())
            + 8 * (self.out_runs.len() + self.in_runs.len())
            + 8 * self.fact_pos.len()
            + 4 * self.ext_subject.len()
            + 4 * (self.dead.len() + self.dead_entities.len() + self.dead_chunks.len())
            + self
                .chunk_ment
                .values()
                .chain(self.entity_ment.values())
                .map(|(a, b)| 4 * (a.len() + b.len()) + 52)
                .sum::<usize>()
    }
    /// Mentions added since the base.
    pub(crate) fn mentions_added(&self) -> usize {
        self.mentions_added
    }
    /// Mentions removed since the base.
    pub(crate) fn mentions_removed(&self) -> usize {
        self.mentions_removed
    }
    /// Whether fact `f` is deleted (a tombstone).
    pub(crate) fn is_dead(&self, f: u32) -> bool {
        !self.dead.is_empty() && self.dead.binary_search(&f).is_ok()
    }
}

/// The position sort key of the build: confidence descending, then fact id ascending.
#[inline]
fn order_key(confidence: f32, fact: u32) -> u64 {
    (u64::from(!f32_order(confidence)) << 32) | u64::from(fact)
}

/// Where a record of a rewritten row comes from.
#[derive(Clone, Copy)]
enum Src {
    /// The fact at this position of the previous generation.
    Old(usize),
    /// Row `k` of the change.
    New(usize),
}

fn time_at(col: Option<&[i64]>, k: usize) -> i64 {
    col.map_or(NULL_TIME, |c| c[k])
}

/// The sort key of the record at position `p`: in the base, or in the appended part being
/// built (which starts with the previous generation's appended records).
#[inline]
fn rec_key(base: &[FactRec], ext: &[FactRec], p: usize) -> u64 {
    let r = match base.get(p) {
        Some(r) => r,
        None => &ext[p - base.len()],
    };
    order_key(r.confidence, r.fact)
}

/// In-row entry `i`'s position: in the base, or in the appended part being built.
#[inline]
fn in_pos_at(base: &[u32], ext: &[u32], i: usize) -> u32 {
    match base.get(i) {
        Some(&p) => p,
        None => ext[i - base.len()],
    }
}

/// A row's runs: the overlay's when it moved the row, else its base range as one run.
fn runs_now(moved: Option<&[(u32, u32)]>, base: impl FnOnce() -> Range<usize>) -> Vec<(u32, u32)> {
    if let Some(r) = moved {
        return r.to_vec();
    }
    let r = base();
    if r.is_empty() {
        Vec::new()
    } else {
        vec![(r.start as u32, r.end as u32)]
    }
}

impl KnowledgeGraph {
    /// Appended positions (rewritten rows and changed facts) and added mentions not yet
    /// compacted; 0 for a base.
    pub fn overlay_len(&self) -> usize {
        self.rec.ext().len()
            + self.ov.as_ref().map_or(0, |ov| {
                ov.mentions_added + ov.mentions_removed + ov.dead.len()
            })
    }

    /// The deleted facts (tombstones) of this generation, sorted: cut out of every row,
    /// their ids not yet reused; a compaction drops them.
    pub fn dead_facts(&self) -> &[u32] {
        self.ov.as_ref().map_or(&[][..], |ov| ov.dead.as_slice())
    }

    /// The deleted entities of this generation, sorted (see
    /// [`KnowledgeGraph::with_dead_entities`]).
    pub fn dead_entities(&self) -> &[u32] {
        self.ov
            .as_ref()
            .map_or(&[][..], |ov| ov.dead_entities.as_slice())
    }

    /// A new generation in which the entities `entities` are deleted: their facts
    /// `facts` become tombstones (as [`KnowledgeGraph::with_tombstones`]), their mentions
    /// are cut from their chunks' rows and their own, and they leave their tenants'
    /// listings. Their indices stay (every other entity keeps its own) until a new base
    /// without them ([`KnowledgeGraph::without`]). The cost is their facts' and mentions'
    /// rows and the tenant listing (4 bytes an entity), not the facts.
    ///
    /// # Errors
    /// An entity out of range, given twice or already deleted; a bad fact as
    /// [`KnowledgeGraph::with_tombstones`] names it.
    pub fn with_dead_entities(&self, entities: &[u32], facts: &[u32]) -> Result<KnowledgeGraph> {
        let mut de = entities.to_vec();
        de.sort_unstable();
        let bad = de.iter().position(|&e| e >= self.n_entities).or_else(|| {
            de.windows(2)
                .position(|w| w[0] == w[1])
                .map(|k| k + 1)
                .or_else(|| {
                    de.iter()
                        .position(|e| self.dead_entities().binary_search(e).is_ok())
                })
        });
        if let Some(k) = bad {
            return Err(Error::InvalidValue {
                table: "entities",
                row: k,
                column: "id",
                value: de[k].to_string(),
                problem: "out of range, repeated or already deleted".to_string(),
            });
        }
        let g = if facts.is_empty() {
            self.clone()
        } else {
            self.with_tombstones(facts)?
        };
        if de.is_empty() {
            return Ok(g);
        }
        let mut ov = g.ov.as_deref().cloned().unwrap_or_default();
        for &e in &de {
            let chunks = g.entity_mentions(e).0.to_vec();
            for c in chunks {
                let (ents, counts) = match ov.chunk_ment.get(&c) {
                    Some((a, b)) => (a.clone(), b.clone()),
                    None => {
                        let (a, b) = g.chunk_mentions(c);
                        (a.to_vec(), b.to_vec())
                    }
                };
                let keep: Vec<usize> = (0..ents.len()).filter(|&k| ents[k] != e).collect();
                ov.chunk_ment.insert(
                    c,
                    (
                        keep.iter().map(|&k| ents[k]).collect(),
                        keep.iter().map(|&k| counts[k]).collect(),
                    ),
                );
            }
            ov.entity_ment.insert(e, (Vec::new(), Vec::new()));
        }
        let n_t = g.n_tenants as usize;
        let mut tenant_offsets = vec![0u32; n_t + 1];
        let mut tenant_entities = Vec::with_capacity(g.tenant_entities.len());
        for t in 0..n_t {
            let r = g.tenant_offsets[t] as usize..g.tenant_offsets[t + 1] as usize;
            tenant_entities.extend(
                g.tenant_entities[r]
                    .iter()
                    .copied()
                    .filter(|e| de.binary_search(e).is_err()),
            );
            tenant_offsets[t + 1] = tenant_entities.len() as u32;
        }
        ov.dead_entities.extend_from_slice(&de);
        ov.dead_entities.sort_unstable();
        Ok(KnowledgeGraph {
            tenant_offsets: Arc::new(tenant_offsets),
            tenant_entities: Arc::new(tenant_entities),
            ov: Some(Arc::new(ov)),
            ..g
        })
    }

    /// The deleted chunks of this generation, sorted (see
    /// [`KnowledgeGraph::with_dead_chunks`]).
    pub fn dead_chunks(&self) -> &[u32] {
        self.ov
            .as_ref()
            .map_or(&[][..], |ov| ov.dead_chunks.as_slice())
    }

    /// A new generation in which the chunks `chunks` are deleted: their mentions are cut
    /// from their entities' rows and their own. Their indices stay (every other chunk
    /// keeps its own) until a new base without them ([`KnowledgeGraph::without`]). The
    /// cost is their mentions' rows, not the graph.
    ///
    /// # Errors
    /// A chunk out of range, given twice or already deleted.
    pub fn with_dead_chunks(&self, chunks: &[u32]) -> Result<KnowledgeGraph> {
        let mut dc = chunks.to_vec();
        dc.sort_unstable();
        let bad = dc.iter().position(|&c| c >= self.n_chunks).or_else(|| {
            dc.windows(2)
                .position(|w| w[0] == w[1])
                .map(|k| k + 1)
                .or_else(|| {
                    dc.iter()
                        .position(|c| self.dead_chunks().binary_search(c).is_ok())
                })
        });
        if let Some(k) = bad {
            return Err(Error::InvalidValue {
                table: "chunks",
                row: k,
                column: "id",
                value: dc[k].to_string(),
                problem: "out of range, repeated or already deleted".to_string(),
            });
        }
        if dc.is_empty() {
            return Ok(self.clone());
        }
        let mut ov = self.ov.as_deref().cloned().unwrap_or_default();
        for &c in &dc {
            let ents = self.chunk_mentions(c).0.to_vec();
            for e in ents {
                let (chunks, counts) = match ov.entity_ment.get(&e) {
                    Some((a, b)) => (a.clone(), b.clone()),
                    None => {
                        let (a, b) = self.entity_mentions(e);
                        (a.to_vec(), b.to_vec())
                    }
                };
                let keep: Vec<usize> = (0..chunks.len()).filter(|&k| chunks[k] != c).collect();
                ov.entity_ment.insert(
                    e,
                    (
                        keep.iter().map(|&k| chunks[k]).collect(),
                        keep.iter().map(|&k| counts[k]).collect(),
                    ),
                );
            }
            ov.chunk_ment.insert(c, (Vec::new(), Vec::new()));
        }
        ov.dead_chunks.extend_from_slice(&dc);
        ov.dead_chunks.sort_unstable();
        Ok(KnowledgeGraph {
            ov: Some(Arc::new(ov)),
            ..self.clone()
        })
    }

    /// Whether fact `f` is a tombstone of this generation.
    #[inline]
    pub(crate) fn is_dead(&self, f: u32) -> bool {
        self.ov.as_ref().is_some_and(|ov| ov.is_dead(f))
    }

    /// A new generation in which the facts `dead` (ids below [`KnowledgeGraph::n_facts`])
    /// are deleted: cut out of their subject's out-row and their object's in-row like a
    /// replaced fact, with nothing spliced in. Their ids stay (the facts after them keep
    /// theirs, as the caller's rows do) until [`KnowledgeGraph::compacted`] drops them and
    /// renumbers the rest as a fresh build of the remaining facts. `self` is left as it
    /// is; the cost is the facts' rows, not the graph.
    ///
    /// # Errors
    /// An id out of range, given twice, or already deleted.
    pub fn with_tombstones(&self, dead: &[u32]) -> Result<KnowledgeGraph> {
        let empty: &[i64] = &[];
        let held = |c: &Option<Column<i64>>| c.as_ref().map(|_| empty);
        let input = GraphInput {
            fact_created_at: held(&self.created_at),
            fact_valid_from: held(&self.valid_from),
            fact_valid_to: held(&self.valid_to),
            fact_sequence: held(&self.sequence),
            ..GraphInput::default()
        };
        self.with_changes(&[], &input, dead, RowRule::default())
    }

    /// The runs of `e`'s out-row as of this generation.
    fn out_runs_now(&self, e: u32) -> Vec<(u32, u32)> {
        runs_now(self.ov.as_ref().and_then(|ov| ov.out_runs_of(e)), || {
            self.base_out_range(e)
        })
    }

    /// The runs of `e`'s in-row as of this generation.
    fn in_runs_now(&self, e: u32) -> Vec<(u32, u32)> {
        runs_now(self.ov.as_ref().and_then(|ov| ov.in_runs_of(e)), || {
            self.base_in_range(e)
        })
    }

    /// The entities a chunk mentions (ascending) and the counts, as of this generation.
    #[inline]
    pub(crate) fn chunk_mentions(&self, c: u32) -> (&[u32], &[u32]) {
        if let Some((e, n)) = self.ov.as_ref().and_then(|ov| ov.chunk_ment.get(&c)) {
            return (e, n);
        }
        let r = self.chunk_range(c);
        (&self.chunk_entity[r.clone()], &self.chunk_count[r])
    }

    /// The chunks mentioning an entity (ascending) and the counts, as of this generation.
    #[inline]
    pub(crate) fn entity_mentions(&self, e: u32) -> (&[u32], &[u32]) {
        if let Some((c, n)) = self.ov.as_ref().and_then(|ov| ov.entity_ment.get(&e)) {
            return (c, n);
        }
        let r = self.mention_range(e);
        (&self.mention_chunk[r.clone()], &self.mention_count[r])
    }

    /// A new generation in which each fact `fact[k]` holds row `k` of `input`'s fact
    /// columns: an id below [`KnowledgeGraph::n_facts`] replaces that fact's record (its
    /// id, hence its place among equal confidences, stays), and the ids at and after it
    /// append facts, in order. `self` is left as it is (readers keep it); the cost is the
    /// changed rows, the short rows of their entities and the overlay so far, not the
    /// graph nor its hubs' rows.
    ///
    /// `input.entity_tenant`, the code counts and the chunk and mention columns are
    /// ignored: the graph's own apply. The optional time columns must be present exactly
    /// when the graph holds them.
    ///
    /// # Errors
    /// The first bad row, as [`KnowledgeGraph::build`] names it (row numbers are rows of
    /// the change); a repeated or out-of-sequence fact id; time columns that do not match.
    pub fn with_facts(&self, fact: &[u32], input: &GraphInput<'_>) -> Result<KnowledgeGraph> {
        self.with_facts_by(fact, input, RowRule::default())
    }

    /// [`KnowledgeGraph::with_facts`] with the rule that picks the rows rewritten whole.
    pub(crate) fn with_facts_by(
        &self,
        fact: &[u32],
        input: &GraphInput<'_>,
        rule: RowRule,
    ) -> Result<KnowledgeGraph> {
        self.with_changes(fact, input, &[], rule)
    }

    /// [`KnowledgeGraph::with_facts_by`] that also deletes the facts `dead` (see
    /// [`KnowledgeGraph::with_tombstones`]).
    fn with_changes(
        &self,
        fact: &[u32],
        input: &GraphInput<'_>,
        dead: &[u32],
        rule: RowRule,
    ) -> Result<KnowledgeGraph> {
        let n = fact.len();
        let input = GraphInput {
            entity_tenant: self.entity_tenant.as_slice(),
            n_predicates: self.n_predicates,
            n_statuses: self.n_statuses,
            n_sources: self.n_sources,
            chunk_tenant: &[],
            mention_chunk: &[],
            mention_entity: &[],
            mention_count: &[],
            ..*input
        };
        if input.fact_subject.len() != n {
            return Err(Error::LengthMismatch {
                table: "facts",
                column: "subject",
                expected: n,
                got: input.fact_subject.len(),
            });
        }
        validate_facts(&input)?;
        for (name, given, held) in [
            (
                "created_at",
                input.fact_created_at.is_some(),
                self.created_at.is_some(),
            ),
            (
                "valid_from",
                input.fact_valid_from.is_some(),
                self.valid_from.is_some(),
            ),
            (
                "valid_to",
                input.fact_valid_to.is_some(),
                self.valid_to.is_some(),
            ),
            (
                "sequence",
                input.fact_sequence.is_some(),
                self.sequence.is_some(),
            ),
        ] {
            if given != held {
                return Err(Error::param(
                    name,
                    if held {
                        "the graph holds this column: give it for the changed facts"
                    } else {
                        "the graph does not hold this column: rebuild to add it"
                    },
                ));
            }
        }
        let n_old = self.n_facts as usize;
        let mut replaced: IdMap<usize> = IdMap::default();
        let mut next = n_old;
        for (k, &f) in fact.iter().enumerate() {
            let fresh = f as usize == next;
            if (f as usize) >= n_old && !fresh {
                return Err(Error::InvalidValue {
                    table: "facts",
                    row: k,
                    column: "id",
                    value: f.to_string(),
                    problem: format!("a new fact takes the next id, {next}"),
                });
            }
            if fresh {
                next += 1;
            } else if self.is_dead(f) {
                return Err(Error::InvalidValue {
                    table: "facts",
                    row: k,
                    column: "id",
                    value: f.to_string(),
                    problem: "a deleted fact cannot be changed".to_string(),
                });
            } else if replaced.insert(f, k).is_some() {
                return Err(Error::Duplicate {
                    table: "facts",
                    row: k,
                    what: format!("fact {f} (changed twice in one change)"),
                });
            }
        }
        for (k, &f) in dead.iter().enumerate() {
            if f as usize >= n_old || self.is_dead(f) {
                return Err(Error::InvalidValue {
                    table: "facts",
                    row: k,
                    column: "id",
                    value: f.to_string(),
                    problem: format!(
                        "not a live fact of the graph ({n_old} facts, {} deleted)",
                        self.dead_facts().len()
                    ),
                });
            }
            if replaced.insert(f, usize::MAX).is_some() {
                return Err(Error::Duplicate {
                    table: "facts",
                    row: k,
                    what: format!("fact {f} (deleted twice, or changed and deleted)"),
                });
            }
        }
        if next >= NONE as usize {
            return Err(Error::Capacity {
                what: "facts",
                value: next,
                limit: NONE as usize - 1,
            });
        }

        let base_pos = self.rec.base().len();
        let base_in = self.in_pos.base().len();
        let n_words = (self.n_entities as usize).div_ceil(64);
        let mut ov = match &self.ov {
            Some(ov) => (**ov).clone(),
            None => Overlay::default(),
        };
        ov.out_dirty.resize(n_words, 0);
        ov.in_dirty.resize(n_words, 0);
        let old_times = [
            &self.created_at,
            &self.valid_from,
            &self.valid_to,
            &self.sequence,
        ];
        let new_times = [
            input.fact_created_at,
            input.fact_valid_from,
            input.fact_valid_to,
            input.fact_sequence,
        ];
        let new_key = |k: usize| order_key(input.fact_confidence[k], fact[k]);

        // Out-rows to change: the new subjects' (rows of the change, by key) and the old
        // subjects' of replaced facts (their old positions). In-rows to change: the
        // entries that leave (old keys) and come (key, position, subject), by object.
        let mut by_subject: IdMap<Vec<usize>> = IdMap::default();
        for k in 0..n {
            by_subject.entry(input.fact_subject[k]).or_default().push(k);
        }
        for ks in by_subject.values_mut() {
            ks.sort_unstable_by_key(|&k| new_key(k));
        }
        let mut gone_out: IdMap<Vec<u32>> = IdMap::default();
        let mut in_gone: IdMap<Vec<u64>> = IdMap::default();
        let mut in_come: IdMap<Vec<(u64, u32, u32)>> = IdMap::default();
        for &f in replaced.keys() {
            let pos = self.pos_of(f);
            let r = &self.rec[pos];
            gone_out
                .entry(self.subject_at(pos as u32))
                .or_default()
                .push(pos as u32);
            if r.object != NONE {
                in_gone
                    .entry(r.object)
                    .or_default()
                    .push(order_key(r.confidence, r.fact));
            }
        }
        let mut dirty_out: Vec<u32> = by_subject.keys().chain(gone_out.keys()).copied().collect();
        dirty_out.sort_unstable();
        dirty_out.dedup();
        // Each row's current runs and whether it is rewritten whole.
        let mut plans: Vec<(Vec<(u32, u32)>, bool)> = Vec::with_capacity(dirty_out.len());
        let mut grow_out = 0usize;
        for &s in &dirty_out {
            let runs = self.out_runs_now(s);
            let gone = gone_out.get(&s).map_or(0, Vec::len);
            let adds = by_subject.get(&s).map_or(0, Vec::len);
            let len = rows::runs_len(&runs) - gone + adds;
            let rewrite = rule.rewrite(len, runs.len() + gone + 2 * adds);
            grow_out += if rewrite { len } else { adds };
            plans.push((runs, rewrite));
        }
        // The appended parts are copied once, with room for what this change appends (a
        // vector that doubles while it is filled copies them again).
        let with_room = |old: &[u32], more: usize| {
            let mut v = Vec::with_capacity(old.len() + more);
            v.extend_from_slice(old);
            v
        };
        let mut rec = Vec::with_capacity(self.rec.ext().len() + grow_out);
        rec.extend_from_slice(self.rec.ext());
        let ext_of = |c: &Option<Column<i64>>| {
            c.as_ref().map(|c| {
                let mut v = Vec::with_capacity(c.ext().len() + grow_out);
                v.extend_from_slice(c.ext());
                v
            })
        };
        let mut times = [
            ext_of(&self.created_at),
            ext_of(&self.valid_from),
            ext_of(&self.valid_to),
            ext_of(&self.sequence),
        ];
        ov.ext_subject.reserve(grow_out);

        let new_rec = |k: usize| FactRec {
            last_accessed: time_at(input.fact_last_accessed, k),
            object: input.fact_object[k],
            confidence: input.fact_confidence[k],
            strength: input.fact_strength[k],
            fact: fact[k],
            access_count: input.fact_access_count[k],
            predicate: input.fact_predicate[k] as u16,
            status: input.fact_status[k],
            source: input.fact_source[k],
        };
        // Appends the record of `src` (and its times) for subject `s`; its position.
        let append = |src: Src,
                      s: u32,
                      rec: &mut Vec<FactRec>,
                      times: &mut [Option<Vec<i64>>; 4],
                      ext_subject: &mut Vec<u32>| {
            let q = (base_pos + rec.len()) as u32;
            rec.push(match src {
                Src::Old(p) => self.rec[p],
                Src::New(k) => new_rec(k),
            });
            for (t, col) in times.iter_mut().enumerate() {
                if let Some(col) = col {
                    col.push(match src {
                        Src::Old(p) => old_times[t].as_ref().map_or(NULL_TIME, |c| c[p]),
                        Src::New(k) => time_at(new_times[t], k),
                    });
                }
            }
            ext_subject.push(s);
            q
        };
        let mut moved: Vec<(u32, u32)> = Vec::with_capacity(grow_out);
        let mut row: Vec<(u64, Src)> = Vec::new();
        for (&s, (runs, rewrite)) in dirty_out.iter().zip(plans) {
            let adds = by_subject.get(&s).map_or(&[][..], Vec::as_slice);
            let runs = if rewrite {
                // The whole row, in order, to one appended run: its facts move.
                row.clear();
                for p in Segs::runs(&runs) {
                    let r = &self.rec[p];
                    if replaced.is_empty() || !replaced.contains_key(&r.fact) {
                        row.push((order_key(r.confidence, r.fact), Src::Old(p)));
                    }
                }
                row.extend(adds.iter().map(|&k| (new_key(k), Src::New(k))));
                row.sort_unstable_by_key(|x| x.0);
                let start = (base_pos + rec.len()) as u32;
                for &(key, src) in &row {
                    let q = append(src, s, &mut rec, &mut times, &mut ov.ext_subject);
                    let r = &rec[q as usize - base_pos];
                    moved.push((r.fact, q));
                    if r.object != NONE {
                        if let Src::Old(_) = src {
                            in_gone.entry(r.object).or_default().push(key);
                        }
                        in_come.entry(r.object).or_default().push((key, q, s));
                    }
                }
                let end = (base_pos + rec.len()) as u32;
                if start < end {
                    vec![(start, end)]
                } else {
                    Vec::new()
                }
            } else {
                // The row keeps its runs: replaced facts cut out, new ones spliced in.
                let mut runs = runs;
                for &p in gone_out.get(&s).map_or(&[][..], Vec::as_slice) {
                    rows::remove(&mut runs, p);
                }
                for &k in adds {
                    let q = append(Src::New(k), s, &mut rec, &mut times, &mut ov.ext_subject);
                    let key = new_key(k);
                    let key_at = |p: u32| rec_key(self.rec.base(), &rec, p as usize);
                    rows::insert(&mut runs, q, key, &key_at);
                    moved.push((fact[k], q));
                    if input.fact_object[k] != NONE {
                        in_come
                            .entry(input.fact_object[k])
                            .or_default()
                            .push((key, q, s));
                    }
                }
                runs
            };
            let row = RowRef::of(&runs, &mut ov.out_runs);
            ov.out_rows.insert(s, row);
            set_bit(&mut ov.out_dirty, s);
        }
        ov.fact_pos.reserve(moved.len());
        ov.fact_pos.extend(moved);
        if !dead.is_empty() {
            ov.dead.extend_from_slice(dead);
            ov.dead.sort_unstable();
        }

        // In-rows keep their entries' keys: the leaving entries are found by key and the
        // coming ones put in by key (binary searches: the records of the rest are not
        // read); short or fragmented rows are then copied to one appended run.
        let mut dirty_in: Vec<u32> = in_gone.keys().chain(in_come.keys()).copied().collect();
        dirty_in.sort_unstable();
        dirty_in.dedup();
        let mut plans: Vec<(Vec<(u32, u32)>, bool)> = Vec::with_capacity(dirty_in.len());
        let mut grow_in = 0usize;
        for &o in &dirty_in {
            let runs = self.in_runs_now(o);
            let gone = in_gone.get(&o).map_or(0, Vec::len);
            let come = in_come.get(&o).map_or(0, Vec::len);
            let len = rows::runs_len(&runs) - gone + come;
            let rewrite = rule.rewrite(len, runs.len() + gone + 2 * come);
            grow_in += if rewrite { len + come } else { come };
            plans.push((runs, rewrite));
        }
        let mut in_pos = with_room(self.in_pos.ext(), grow_in);
        let mut in_subject = with_room(self.in_subject.ext(), grow_in);
        let (base_in_pos, base_rec) = (self.in_pos.base(), self.rec.base());
        for (&o, (mut runs, rewrite)) in dirty_in.iter().zip(plans) {
            {
                let key_at = |i: u32| {
                    let p = in_pos_at(base_in_pos, &in_pos, i as usize);
                    rec_key(base_rec, &rec, p as usize)
                };
                for &key in in_gone.get(&o).map_or(&[][..], Vec::as_slice) {
                    let found = rows::remove_key(&mut runs, key, &key_at);
                    debug_assert!(found, "in-row {o} lacks an entry it held");
                }
            }
            let come = in_come.get_mut(&o).map_or(&mut [][..], Vec::as_mut_slice);
            come.sort_unstable_by_key(|x| x.0);
            for &(key, q, s) in come.iter() {
                let y = (base_in + in_pos.len()) as u32;
                in_pos.push(q);
                in_subject.push(s);
                let key_at = |i: u32| {
                    let p = in_pos_at(base_in_pos, &in_pos, i as usize);
                    rec_key(base_rec, &rec, p as usize)
                };
                rows::insert(&mut runs, y, key, &key_at);
            }
            if rewrite && runs.len() > 1 {
                // One appended run: the entries copied in order (no record read).
                let start = (base_in + in_pos.len()) as u32;
                for &(a, b) in &runs {
                    // A run may cross from the base into the appended part.
                    let (a, b) = (a as usize, b as usize);
                    if a < base_in {
                        let mid = b.min(base_in);
                        in_pos.extend_from_slice(&base_in_pos[a..mid]);
                        in_subject.extend_from_slice(&self.in_subject.base()[a..mid]);
                    }
                    if b > base_in {
                        let ext = a.max(base_in) - base_in..b - base_in;
                        in_pos.extend_from_within(ext.clone());
                        in_subject.extend_from_within(ext);
                    }
                }
                runs = vec![(start, (base_in + in_pos.len()) as u32)];
            }
            let row = RowRef::of(&runs, &mut ov.in_runs);
            ov.in_rows.insert(o, row);
            set_bit(&mut ov.in_dirty, o);
        }
        if base_pos + rec.len() >= NONE as usize
            || base_in + in_pos.len() >= NONE as usize
            || ov.out_runs.len().max(ov.in_runs.len()) >= NONE as usize
        {
            return Err(Error::Capacity {
                what: "overlay positions (compact the graph)",
                value: base_pos + rec.len(),
                limit: NONE as usize - 1,
            });
        }
        let [created_at, valid_from, valid_to, sequence] = times;
        let with = |c: &Option<Column<i64>>, ext: Option<Vec<i64>>| {
            c.as_ref().zip(ext).map(|(c, e)| c.with_ext(e))
        };
        Ok(KnowledgeGraph {
            n_facts: next as u32,
            rec: self.rec.with_ext(rec),
            created_at: with(&self.created_at, created_at),
            valid_from: with(&self.valid_from, valid_from),
            valid_to: with(&self.valid_to, valid_to),
            sequence: with(&self.sequence, sequence),
            in_pos: self.in_pos.with_ext(in_pos),
            in_subject: self.in_subject.with_ext(in_subject),
            ov: Some(Arc::new(ov)),
            ..self.clone()
        })
    }

    /// The same graph as one base with no overlay: what a fresh build of the same facts
    /// gives (a base is returned as it is, sharing its arrays). Tombstones are dropped:
    /// the facts after a deleted one take the next lower ids, as a fresh build of the
    /// facts that stay numbers them.
    ///
    /// # Errors
    /// `OutOfMemory` naming the array that cannot be allocated.
    pub fn compacted(&self) -> Result<KnowledgeGraph> {
        if self.ov.is_none() {
            return Ok(self.clone());
        }
        if !self.dead_facts().is_empty() {
            // One pass over the rows drops the tombstones and renumbers the rest.
            return self.without(&[], &[], &[]);
        }
        let n = self.n_facts as usize;
        let mut subject = vec![0u32; n];
        let mut rows = vec![FactRec::default(); n];
        let mut times: [Option<Vec<i64>>; 4] = [
            self.created_at.as_ref().map(|_| vec![NULL_TIME; n]),
            self.valid_from.as_ref().map(|_| vec![NULL_TIME; n]),
            self.valid_to.as_ref().map(|_| vec![NULL_TIME; n]),
            self.sequence.as_ref().map(|_| vec![NULL_TIME; n]),
        ];
        let cols = [
            &self.created_at,
            &self.valid_from,
            &self.valid_to,
            &self.sequence,
        ];
        for e in 0..self.n_entities {
            for p in self.out_range(e) {
                let r = self.rec[p];
                let f = r.fact as usize;
                subject[f] = e;
                rows[f] = r;
                for (t, col) in times.iter_mut().enumerate() {
                    if let (Some(out), Some(c)) = (col.as_mut(), cols[t]) {
                        out[f] = c[p];
                    }
                }
            }
        }
        let col = |get: fn(&FactRec) -> u32| rows.iter().map(get).collect::<Vec<u32>>();
        let object = col(|r| r.object);
        let predicate = col(|r| u32::from(r.predicate));
        let access = col(|r| r.access_count);
        let confidence: Vec<f32> = rows.iter().map(|r| r.confidence).collect();
        let strength: Vec<f32> = rows.iter().map(|r| r.strength).collect();
        let status: Vec<u8> = rows.iter().map(|r| r.status).collect();
        let source: Vec<u8> = rows.iter().map(|r| r.source).collect();
        let last: Vec<i64> = rows.iter().map(|r| r.last_accessed).collect();
        drop(rows);
        let (mut m_chunk, mut m_entity, mut m_count) = (Vec::new(), Vec::new(), Vec::new());
        for c in 0..self.n_chunks {
            let (ents, counts) = self.chunk_mentions(c);
            for (&e, &n) in ents.iter().zip(counts) {
                m_chunk.push(c);
                m_entity.push(e);
                m_count.push(n);
            }
        }
        let [created_at, valid_from, valid_to, sequence] = &times;
        KnowledgeGraph::build(&GraphInput {
            entity_tenant: &self.entity_tenant,
            fact_subject: &subject,
            fact_object: &object,
            fact_predicate: &predicate,
            fact_confidence: &confidence,
            fact_strength: &strength,
            fact_status: &status,
            fact_source: &source,
            fact_access_count: &access,
            fact_last_accessed: Some(&last),
            fact_created_at: created_at.as_deref(),
            fact_valid_from: valid_from.as_deref(),
            fact_valid_to: valid_to.as_deref(),
            fact_sequence: sequence.as_deref(),
            n_predicates: self.n_predicates,
            n_statuses: self.n_statuses,
            n_sources: self.n_sources,
            chunk_tenant: &self.chunk_tenant,
            mention_chunk: &m_chunk,
            mention_entity: &m_entity,
            mention_count: &m_count,
        })
    }
}

impl KnowledgeGraph {
    /// A new generation with entities appended: entity `n_entities() + k` has tenant
    /// `tenant[k]`, no facts and no mentions, as a fresh build of the tables with these
    /// entities after the others gives (indices follow the rows; each tenant lists its
    /// entities ascending). The fact overlay carries over; the cost is the per-entity
    /// arrays (offsets and tenants, 4 bytes an entity), not the facts.
    ///
    /// # Errors
    /// A tenant code beyond the limit, or more entities than the core can index.
    pub fn with_entities(&self, tenant: &[u32]) -> Result<KnowledgeGraph> {
        if let Some(k) = tenant.iter().position(|&t| t >= MAX_TENANTS) {
            return Err(Error::InvalidValue {
                table: "entities",
                row: k,
                column: "tenant",
                value: tenant[k].to_string(),
                problem: format!("beyond the tenant code limit {MAX_TENANTS}"),
            });
        }
        let n_old = self.n_entities as usize;
        let n_new = n_old + tenant.len();
        if n_new >= NONE as usize {
            return Err(Error::Capacity {
                what: "entities",
                value: n_new,
                limit: NONE as usize - 1,
            });
        }
        if tenant.is_empty() {
            return Ok(self.clone());
        }
        let mut entity_tenant = Vec::with_capacity(n_new);
        entity_tenant.extend_from_slice(&self.entity_tenant);
        entity_tenant.extend_from_slice(tenant);
        let n_tenants = tenant
            .iter()
            .copied()
            .max()
            .map_or(self.n_tenants, |t| self.n_tenants.max(t + 1));
        let (tenant_offsets, tenant_entities) =
            tenant_listing(&entity_tenant, n_tenants, self.dead_entities());
        // New entities own empty rows: each offsets array repeats its end.
        let grown = |offsets: &Arc<Vec<u32>>| {
            let mut v = Vec::with_capacity(n_new + 1);
            v.extend_from_slice(offsets);
            let end = v.last().copied().unwrap_or(0);
            v.resize(n_new + 1, end);
            Arc::new(v)
        };
        let ov = self.ov.as_ref().map(|ov| {
            let mut ov = (**ov).clone();
            let n_words = n_new.div_ceil(64);
            ov.out_dirty.resize(n_words, 0);
            ov.in_dirty.resize(n_words, 0);
            Arc::new(ov)
        });
        Ok(KnowledgeGraph {
            n_entities: n_new as u32,
            n_tenants,
            entity_tenant: Arc::new(entity_tenant),
            tenant_offsets: Arc::new(tenant_offsets),
            tenant_entities: Arc::new(tenant_entities),
            out_offsets: grown(&self.out_offsets),
            in_offsets: grown(&self.in_offsets),
            mention_offsets: grown(&self.mention_offsets),
            ov,
            ..self.clone()
        })
    }

    /// A new generation with chunks appended: chunk `n_chunks() + k` has tenant
    /// `tenant[k]` and no mentions, as a fresh build of the tables with these chunks after
    /// the others gives. The cost is the per-chunk arrays, not the graph.
    ///
    /// # Errors
    /// A tenant code beyond the limit, or more chunks than the core can index.
    pub fn with_chunks(&self, tenant: &[u32]) -> Result<KnowledgeGraph> {
        if let Some(k) = tenant.iter().position(|&t| t >= MAX_TENANTS) {
            return Err(Error::InvalidValue {
                table: "chunks",
                row: k,
                column: "tenant",
                value: tenant[k].to_string(),
                problem: format!("beyond the tenant code limit {MAX_TENANTS}"),
            });
        }
        let n_new = self.n_chunks as usize + tenant.len();
        if n_new >= NONE as usize {
            return Err(Error::Capacity {
                what: "chunks",
                value: n_new,
                limit: NONE as usize - 1,
            });
        }
        if tenant.is_empty() {
            return Ok(self.clone());
        }
        let mut chunk_tenant = Vec::with_capacity(n_new);
        chunk_tenant.extend_from_slice(&self.chunk_tenant);
        chunk_tenant.extend_from_slice(tenant);
        let mut chunk_offsets = Vec::with_capacity(n_new + 1);
        chunk_offsets.extend_from_slice(&self.chunk_offsets);
        let end = chunk_offsets.last().copied().unwrap_or(0);
        chunk_offsets.resize(n_new + 1, end);
        let n_tenants = tenant
            .iter()
            .copied()
            .max()
            .map_or(self.n_tenants, |t| self.n_tenants.max(t + 1));
        if n_tenants != self.n_tenants {
            // Tenants without entities still own an (empty) entity group.
            let mut offsets = self.tenant_offsets.to_vec();
            let end = offsets.last().copied().unwrap_or(0);
            offsets.resize(n_tenants as usize + 1, end);
            return Ok(KnowledgeGraph {
                n_chunks: n_new as u32,
                n_tenants,
                chunk_tenant: Arc::new(chunk_tenant),
                chunk_offsets: Arc::new(chunk_offsets),
                tenant_offsets: Arc::new(offsets),
                ..self.clone()
            });
        }
        Ok(KnowledgeGraph {
            n_chunks: n_new as u32,
            chunk_tenant: Arc::new(chunk_tenant),
            chunk_offsets: Arc::new(chunk_offsets),
            ..self.clone()
        })
    }

    /// A new generation with mentions added: chunk `chunk[k]` mentions entity `entity[k]`
    /// `count[k]` times. The mention rows of the touched chunks and entities are rewritten
    /// in the overlay (entities ascending in a chunk's row, chunks ascending in an
    /// entity's row, as the build orders them); the cost is those rows.
    ///
    /// # Errors
    /// The first bad row, as [`KnowledgeGraph::build`] names it (row numbers are rows of
    /// the change), or a mention the graph (or the change) holds already.
    pub fn with_mentions(
        &self,
        chunk: &[u32],
        entity: &[u32],
        count: &[u32],
    ) -> Result<KnowledgeGraph> {
        validate_mentions(&GraphInput {
            entity_tenant: &self.entity_tenant,
            chunk_tenant: &self.chunk_tenant,
            mention_chunk: chunk,
            mention_entity: entity,
            mention_count: count,
            ..GraphInput::default()
        })?;
        if chunk.is_empty() {
            return Ok(self.clone());
        }
        let mut by_chunk: HashMap<u32, Vec<(u32, u32, usize)>> = HashMap::new();
        let mut by_entity: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
        for k in 0..chunk.len() {
            by_chunk
                .entry(chunk[k])
                .or_default()
                .push((entity[k], count[k], k));
            by_entity
                .entry(entity[k])
                .or_default()
                .push((chunk[k], count[k]));
        }
        let mut ov = match &self.ov {
            Some(ov) => (**ov).clone(),
            None => Overlay::default(),
        };
        let mut row: Vec<(u32, u32, usize)> = Vec::new();
        for (&c, adds) in &by_chunk {
            let (ents, counts) = self.chunk_mentions(c);
            row.clear();
            row.extend(ents.iter().zip(counts).map(|(&e, &n)| (e, n, usize::MAX)));
            row.extend_from_slice(adds);
            row.sort_unstable_by_key(|x| (x.0, x.2));
            if let Some(w) = row.windows(2).find(|w| w[0].0 == w[1].0) {
                return Err(Error::Duplicate {
                    table: "mentions",
                    row: w[0].2.min(w[1].2),
                    what: format!("mention of entity {} by chunk {c}", w[0].0),
                });
            }
            ov.chunk_ment.insert(
                c,
                (
                    row.iter().map(|x| x.0).collect(),
                    row.iter().map(|x| x.1).collect(),
                ),
            );
        }
        let mut erow: Vec<(u32, u32)> = Vec::new();
        for (&e, adds) in &by_entity {
            let (chunks, counts) = self.entity_mentions(e);
            erow.clear();
            erow.extend(chunks.iter().copied().zip(counts.iter().copied()));
            erow.extend_from_slice(adds);
            erow.sort_unstable_by_key(|x| x.0);
            ov.entity_ment.insert(
                e,
                (
                    erow.iter().map(|x| x.0).collect(),
                    erow.iter().map(|x| x.1).collect(),
                ),
            );
        }
        ov.mentions_added += chunk.len();
        Ok(KnowledgeGraph {
            ov: Some(Arc::new(ov)),
            ..self.clone()
        })
    }

    /// A new generation without the mentions of entity `entity[k]` by chunk `chunk[k]`:
    /// the mention rows of the touched chunks and entities are rewritten in the overlay
    /// with those entries left out (what a fresh build of the mentions without these rows
    /// gives); the cost is those rows.
    ///
    /// # Errors
    /// A chunk or entity index beyond the graph, or a pair the graph does not hold (also
    /// a pair named twice); row numbers are rows of the change.
    pub fn without_mentions(&self, chunk: &[u32], entity: &[u32]) -> Result<KnowledgeGraph> {
        if chunk.len() != entity.len() {
            return Err(Error::LengthMismatch {
                table: "mentions",
                column: "entity",
                expected: chunk.len(),
                got: entity.len(),
            });
        }
        let dangling =
            |row: usize, column: &'static str, value: u32, target, count: u32| Error::Dangling {
                table: "mentions",
                row,
                column,
                value: i64::from(value),
                target,
                count: count as usize,
            };
        for k in 0..chunk.len() {
            if chunk[k] >= self.n_chunks {
                return Err(dangling(k, "chunk", chunk[k], "chunk", self.n_chunks));
            }
            if entity[k] >= self.n_entities {
                return Err(dangling(k, "entity", entity[k], "entity", self.n_entities));
            }
        }
        if chunk.is_empty() {
            return Ok(self.clone());
        }
        let mut by_chunk: HashMap<u32, Vec<(u32, usize)>> = HashMap::new();
        let mut by_entity: HashMap<u32, Vec<u32>> = HashMap::new();
        for k in 0..chunk.len() {
            by_chunk.entry(chunk[k]).or_default().push((entity[k], k));
            by_entity.entry(entity[k]).or_default().push(chunk[k]);
        }
        let mut ov = match &self.ov {
            Some(ov) => (**ov).clone(),
            None => Overlay::default(),
        };
        for (&c, gone) in &mut by_chunk {
            gone.sort_unstable();
            if let Some(w) = gone.windows(2).find(|w| w[0].0 == w[1].0) {
                return Err(Error::Duplicate {
                    table: "mentions",
                    row: w[1].1,
                    what: format!("mention of entity {} by chunk {c}", w[0].0),
                });
            }
            let (ents, counts) = self.chunk_mentions(c);
            for &(e, k) in gone.iter() {
                if ents.binary_search(&e).is_err() {
                    return Err(Error::InvalidValue {
                        table: "mentions",
                        row: k,
                        column: "entity",
                        value: e.to_string(),
                        problem: format!("not mentioned by chunk {c}"),
                    });
                }
            }
            let keep = |e: &u32| gone.binary_search_by_key(e, |x| x.0).is_err();
            let (e2, n2): (Vec<u32>, Vec<u32>) = ents
                .iter()
                .zip(counts)
                .filter(|(e, _)| keep(e))
                .map(|(&e, &n)| (e, n))
                .unzip();
            ov.chunk_ment.insert(c, (e2, n2));
        }
        for (&e, gone) in &mut by_entity {
            gone.sort_unstable();
            let (chunks, counts) = self.entity_mentions(e);
            let (c2, n2): (Vec<u32>, Vec<u32>) = chunks
                .iter()
                .zip(counts)
                .filter(|(c, _)| gone.binary_search(c).is_err())
                .map(|(&c, &n)| (c, n))
                .unzip();
            ov.entity_ment.insert(e, (c2, n2));
        }
        ov.mentions_removed += chunk.len();
        Ok(KnowledgeGraph {
            ov: Some(Arc::new(ov)),
            ..self.clone()
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

    use proptest::prelude::*;

    use super::super::tests::{arb_cols, Cols};
    use super::*;

    /// Rules from "every touched row takes delta runs" to "most rows are rewritten",
    /// and the default.
    pub(crate) fn arb_rule() -> impl Strategy<Value = RowRule> {
        prop_oneof![
            (0usize..4, 0usize..3).prop_map(|(min_len, min_run)| RowRule { min_len, min_run }),
            Just(RowRule::default()),
        ]
    }

    /// A hub's row keeps its base runs when a few of its facts change: the overlay holds
    /// the changed facts, not the row, and the row reads as a fresh build's.
    #[test]
    fn hub_rows_take_delta_runs() {
        let mut c = Cols {
            tenant: vec![0; 4],
            ..Cols::default()
        };
        for k in 0..100u32 {
            c.push(0, 1 + k % 3, (k % 7) as f32 / 7.0);
        }
        let g = c.graph();
        let mut want = c.clone();
        want.push(0, 2, 0.5);
        let rows = Cols {
            tenant: c.tenant.clone(),
            subject: want.subject[100..].to_vec(),
            object: want.object[100..].to_vec(),
            predicate: want.predicate[100..].to_vec(),
            confidence: want.confidence[100..].to_vec(),
            strength: want.strength[100..].to_vec(),
            status: want.status[100..].to_vec(),
            source: want.source[100..].to_vec(),
            access: want.access[100..].to_vec(),
            last: want.last[100..].to_vec(),
            ..Cols::default()
        };
        let h = g.with_facts(&[100], &rows.input()).unwrap();
        assert_eq!(h.overlay_len(), 1);
        assert_eq!(h.out_range(0).len(), 101);
        assert!(h.ov.as_ref().unwrap().out_runs_of(0).unwrap().len() > 1);
        assert_eq!(h.out_facts(0).unwrap(), want.graph().out_facts(0).unwrap());
        assert_eq!(h.in_facts(2).unwrap(), want.graph().in_facts(2).unwrap());
        assert_eq!(
            h.compacted().unwrap().to_parts().unwrap(),
            want.graph().to_parts().unwrap()
        );
    }

    /// One change: (replace fact `which % n_facts` or append, subject, object pick,
    /// confidence step, access count).
    type Change = (bool, usize, usize, u8, u32);

    /// Apply `changes` to the columns (the fresh-build side) and return the change rows.
    fn apply(c: &mut Cols, changes: &[Change]) -> (Vec<u32>, Cols) {
        let n = c.tenant.len();
        let mut ids = Vec::new();
        let mut rows = Cols {
            tenant: c.tenant.clone(),
            valid_from: c.valid_from.as_ref().map(|_| Vec::new()),
            valid_to: c.valid_to.as_ref().map(|_| Vec::new()),
            sequence: c.sequence.as_ref().map(|_| Vec::new()),
            ..Cols::default()
        };
        let mut seen = std::collections::HashSet::new();
        let n0 = c.subject.len(); // a change replaces facts that existed before it
        for &(replace, which, obj, q, acc) in changes {
            let s = which % n;
            let t = c.tenant[s];
            let o = if obj % 5 == 0 {
                NONE
            } else {
                (0..n)
                    .map(|k| (obj + k) % n)
                    .find(|&k| c.tenant[k] == t)
                    .unwrap_or(s) as u32
            };
            let n_facts = c.subject.len();
            let f = if replace && n0 > 0 {
                let f = which % n0;
                if !seen.insert(f) {
                    continue;
                }
                f
            } else {
                n_facts
            };
            let conf = f32::from(q % 6) / 5.0;
            let row = (s as u32, o, conf, acc);
            if f == n_facts {
                c.push(row.0, row.1, row.2);
                if let Some(v) = c.valid_from.as_mut() {
                    v.push(NULL_TIME);
                }
                if let Some(v) = c.valid_to.as_mut() {
                    v.push(NULL_TIME);
                }
                if let Some(v) = c.sequence.as_mut() {
                    v.push(7);
                }
            } else {
                c.subject[f] = row.0;
                c.object[f] = row.1;
                c.confidence[f] = row.2;
                c.access[f] = acc;
            }
            ids.push(f as u32);
            rows.subject.push(c.subject[f]);
            rows.object.push(c.object[f]);
            rows.predicate.push(c.predicate[f]);
            rows.confidence.push(c.confidence[f]);
            rows.strength.push(c.strength[f]);
            rows.status.push(c.status[f]);
            rows.source.push(c.source[f]);
            rows.access.push(c.access[f]);
            rows.last.push(c.last[f]);
            for (dst, src) in [
                (&mut rows.valid_from, &c.valid_from),
                (&mut rows.valid_to, &c.valid_to),
                (&mut rows.sequence, &c.sequence),
            ] {
                if let (Some(d), Some(s)) = (dst.as_mut(), src.as_ref()) {
                    d.push(s[f]);
                }
            }
        }
        (ids, rows)
    }

    fn same(a: &KnowledgeGraph, b: &KnowledgeGraph) -> std::result::Result<(), TestCaseError> {
        prop_assert_eq!(a.n_facts(), b.n_facts());
        for e in 0..a.n_entities() as u32 {
            prop_assert_eq!(
                a.out_facts(e).unwrap(),
                b.out_facts(e).unwrap(),
                "out {}",
                e
            );
            prop_assert_eq!(a.in_facts(e).unwrap(), b.in_facts(e).unwrap(), "in {}", e);
            for i in a.in_range(e) {
                let p = a.in_pos[i] as usize;
                prop_assert_eq!(a.subject_at(p as u32), a.in_subject[i]);
                prop_assert_eq!(a.rec[p].object, e);
                // Every live fact has one position: the one its out-row holds.
                prop_assert_eq!(p, a.pos_of(a.rec[p].fact));
            }
        }
        for f in 0..a.n_facts() as u32 {
            prop_assert_eq!(a.fact(f).unwrap(), b.fact(f).unwrap(), "fact {}", f);
        }
        prop_assert_eq!(a.fact_columns(), b.fact_columns());
        prop_assert_eq!(a.stats().literal_facts, b.stats().literal_facts);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Any sequence of change batches answers as a fresh build of the changed columns,
        /// and compacts to it.
        #[test]
        fn overlay_equals_fresh_build(
            c in arb_cols(),
            batches in proptest::collection::vec(
                proptest::collection::vec(
                    (any::<bool>(), any::<usize>(), any::<usize>(), any::<u8>(), 0u32..9),
                    0..12,
                ),
                1..5,
            ),
            rule in arb_rule(),
        ) {
            let mut cols = c;
            let mut g = cols.graph();
            for batch in &batches {
                let (ids, rows) = apply(&mut cols, batch);
                g = g.with_facts_by(&ids, &rows.input(), rule).unwrap();
                let fresh = cols.graph();
                same(&g, &fresh)?;
                prop_assert_eq!(g.compacted().unwrap().to_parts().unwrap(), fresh.to_parts().unwrap());
                prop_assert_eq!(g.to_parts().unwrap(), fresh.to_parts().unwrap());
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(100))]
        /// Entities appended to a generation (with or without an overlay) answer as a
        /// fresh build, before and after facts reach them, and compact to it.
        #[test]
        fn entity_growth_equals_fresh_build(
            c in arb_cols(),
            extra in proptest::collection::vec(0u32..4, 0..5),
            batches in proptest::collection::vec(
                proptest::collection::vec(
                    (any::<bool>(), any::<usize>(), any::<usize>(), any::<u8>(), 0u32..9),
                    0..8,
                ),
                2,
            ),
            rule in arb_rule(),
        ) {
            let mut cols = c;
            let mut g = cols.graph();
            let (ids, rows) = apply(&mut cols, &batches[0]);
            if !ids.is_empty() {
                g = g.with_facts_by(&ids, &rows.input(), rule).unwrap();
            }
            cols.tenant.extend_from_slice(&extra);
            g = g.with_entities(&extra).unwrap();
            let fresh = cols.graph();
            same(&g, &fresh)?;
            prop_assert_eq!(g.compacted().unwrap().to_parts().unwrap(), fresh.to_parts().unwrap());
            let (ids, rows) = apply(&mut cols, &batches[1]);
            g = g.with_facts_by(&ids, &rows.input(), rule).unwrap();
            let fresh = cols.graph();
            same(&g, &fresh)?;
            prop_assert_eq!(g.compacted().unwrap().to_parts().unwrap(), fresh.to_parts().unwrap());
            prop_assert_eq!(g.to_parts().unwrap(), fresh.to_parts().unwrap());
        }
    }

    fn same_mentions(
        a: &KnowledgeGraph,
        b: &KnowledgeGraph,
    ) -> std::result::Result<(), TestCaseError> {
        prop_assert_eq!(a.n_chunks(), b.n_chunks());
        prop_assert_eq!(a.stats().mentions, b.stats().mentions);
        for c in 0..a.n_chunks() as u32 {
            prop_assert_eq!(a.chunk_entities(c).unwrap(), b.chunk_entities(c).unwrap());
        }
        for e in 0..a.n_entities() as u32 {
            prop_assert_eq!(a.entity_chunks(e).unwrap(), b.entity_chunks(e).unwrap());
        }
        prop_assert_eq!(
            a.compacted().unwrap().to_parts().unwrap(),
            b.to_parts().unwrap()
        );
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(100))]
        /// Mentions added to a generation, and chunks appended with their mentions, answer
        /// as a fresh build of all of them.
        #[test]
        fn mention_growth_equals_fresh_build(
            c in arb_cols(),
            keep in proptest::collection::vec(any::<bool>(), 40),
            new_chunks in proptest::collection::vec(any::<usize>(), 0..4),
        ) {
            let full = c;
            let mut base = full.clone();
            let (mut ch, mut en, mut co) = (Vec::new(), Vec::new(), Vec::new());
            base.m_chunk.clear();
            base.m_entity.clear();
            base.m_count.clear();
            for k in 0..full.m_chunk.len() {
                let (a, b, n) = (full.m_chunk[k], full.m_entity[k], full.m_count[k]);
                if keep[k % keep.len()] {
                    base.m_chunk.push(a);
                    base.m_entity.push(b);
                    base.m_count.push(n);
                } else {
                    ch.push(a);
                    en.push(b);
                    co.push(n);
                }
            }
            let g = base.graph().with_mentions(&ch, &en, &co).unwrap();
            same_mentions(&g, &full.graph())?;
            // Removing them again gives the base's mentions, compacted or not.
            let h = g.without_mentions(&ch, &en).unwrap();
            same_mentions(&h, &base.graph())?;
            same_mentions(&h.compacted().unwrap(), &base.graph())?;
            prop_assert_eq!(h.stats().mentions, base.m_chunk.len());
            let r = full.graph().without_mentions(&ch, &en).unwrap();
            same_mentions(&r, &base.graph())?;
            if !ch.is_empty() {
                // A mention the graph no longer holds, or one named twice.
                prop_assert!(h.without_mentions(&ch[..1], &en[..1]).is_err());
                let twice = [ch[0], ch[0]];
                prop_assert!(g.without_mentions(&twice, &[en[0], en[0]]).is_err());
            }
            // Twice is a duplicate.
            if !ch.is_empty() {
                prop_assert!(g.with_mentions(&ch[..1], &en[..1], &co[..1]).is_err());
            }
            let mut full = full;
            let n = full.tenant.len();
            let tenants: Vec<u32> = new_chunks.iter().map(|&e| full.tenant[e % n]).collect();
            let g = g.with_chunks(&tenants).unwrap();
            let (mut ch, mut en) = (Vec::new(), Vec::new());
            for (k, &e) in new_chunks.iter().enumerate() {
                let c = (full.chunk_tenant.len()) as u32;
                full.chunk_tenant.push(tenants[k]);
                for x in [e % n, (e + 1) % n] {
                    if full.tenant[x] == tenants[k] && !en[en.len().saturating_sub(1)..].contains(&(x as u32)) {
                        full.m_chunk.push(c);
                        full.m_entity.push(x as u32);
                        full.m_count.push(2);
                        ch.push(c);
                        en.push(x as u32);
                    }
                }
            }
            let co = vec![2; ch.len()];
            let g = g.with_mentions(&ch, &en, &co).unwrap();
            same_mentions(&g, &full.graph())?;
        }
    }

    #[test]
    fn mention_changes_refuse_bad_rows() {
        let c = Cols {
            tenant: vec![0, 1],
            chunk_tenant: vec![0],
            ..Cols::default()
        };
        let g = c.graph();
        assert!(g.with_mentions(&[0], &[1], &[1]).is_err()); // crosses tenants
        assert!(g.with_mentions(&[1], &[0], &[1]).is_err()); // no chunk 1
        assert!(g.with_mentions(&[0], &[0], &[0]).is_err()); // count 0
        assert!(g.with_mentions(&[0, 0], &[0, 0], &[1, 1]).is_err()); // twice
        let h = g.with_mentions(&[0], &[0], &[3]).unwrap();
        assert_eq!(h.entity_chunks(0).unwrap(), (&[0u32][..], &[3u32][..]));
        assert_eq!(g.entity_chunks(0).unwrap().0.len(), 0); // the old generation is unchanged
        assert!(g.with_chunks(&[MAX_TENANTS]).is_err());
        assert_eq!(g.with_chunks(&[1, 2]).unwrap().n_tenants(), 3);
        assert!(h.without_mentions(&[1], &[0]).is_err()); // no chunk 1
        assert!(h.without_mentions(&[0], &[2]).is_err()); // no entity 2
        assert!(h.without_mentions(&[0], &[1]).is_err()); // not mentioned
        assert!(h.without_mentions(&[0], &[]).is_err()); // lengths differ
        let k = h.without_mentions(&[0], &[0]).unwrap();
        assert_eq!(k.entity_chunks(0).unwrap().0.len(), 0);
        assert_eq!(k.overlay_len(), 2); // one added, one removed
    }

    #[test]
    fn entity_growth_refuses_bad_tenants() {
        let c = Cols {
            tenant: vec![0, 1],
            ..Cols::default()
        };
        let g = c.graph();
        assert!(g.with_entities(&[MAX_TENANTS]).is_err());
        let h = g.with_entities(&[1, 0]).unwrap();
        assert_eq!(h.n_entities(), 4);
        assert_eq!(g.n_entities(), 2); // the old generation is unchanged
    }

    #[test]
    fn bad_changes_are_refused() {
        let mut c = Cols {
            tenant: vec![0, 0, 1],
            ..Cols::default()
        };
        c.push(0, 1, 0.5);
        let g = c.graph();
        let mut rows = Cols {
            tenant: c.tenant.clone(),
            ..Cols::default()
        };
        rows.push(0, 2, 0.5); // crosses tenants
        assert!(g.with_facts(&[1], &rows.input()).is_err());
        let mut rows = Cols {
            tenant: c.tenant.clone(),
            ..Cols::default()
        };
        rows.push(0, 1, 0.5);
        assert!(g.with_facts(&[5], &rows.input()).is_err()); // not the next id
        assert!(g.with_facts(&[0, 0], &rows.input()).is_err()); // lengths differ
        let two = Cols {
            subject: vec![0, 1],
            object: vec![1, 0],
            predicate: vec![0, 0],
            confidence: vec![0.5, 0.5],
            strength: vec![1.0, 1.0],
            status: vec![0, 0],
            source: vec![0, 0],
            access: vec![0, 0],
            last: vec![0, 0],
            ..rows.clone()
        };
        assert!(g.with_facts(&[0, 0], &two.input()).is_err()); // twice
        let ok = g.with_facts(&[0, 1], &two.input()).unwrap();
        assert_eq!(ok.n_facts(), 2);
        assert_eq!(ok.overlay_len(), 2);
        assert_eq!(g.n_facts(), 1); // the old generation is unchanged
    }
}

/// The adjacency reads of the traversal kernels: fact records by position, an entity's
/// out-row and in-row, and the in-rows' positions and subjects. Kernels generic over it are
/// monomorphised twice and pick one per query: [`BaseAdj`] for a graph with no overlay
/// (plain slices, no overlay check), `&KnowledgeGraph` for any graph.
pub(crate) trait Adjacency<'a>: Copy {
    /// The graph read (for its colder columns).
    fn graph(self) -> &'a KnowledgeGraph;
    /// The entries of a row, in order: a plain range for a base, runs for an overlay.
    type Row: ExactSizeIterator<Item = usize> + Clone;
    /// The fact record at a position.
    fn rec(self, pos: usize) -> &'a FactRec;
    /// Positions of the out-facts of `e`, in order.
    fn out_range(self, e: u32) -> Self::Row;
    /// Indices into the in-rows of the in-facts of `e`, in order.
    fn in_range(self, e: u32) -> Self::Row;
    /// The position of in-row entry `i`.
    fn in_pos(self, i: usize) -> u32;
    /// The subject of in-row entry `i`.
    fn in_subject(self, i: usize) -> u32;
}

impl<'a> Adjacency<'a> for &'a KnowledgeGraph {
    type Row = Segs<'a>;
    #[inline]
    fn graph(self) -> &'a KnowledgeGraph {
        self
    }
    #[inline]
    fn rec(self, pos: usize) -> &'a FactRec {
        &self.rec[pos]
    }
    #[inline]
    fn out_range(self, e: u32) -> Segs<'a> {
        KnowledgeGraph::out_range(self, e)
    }
    #[inline]
    fn in_range(self, e: u32) -> Segs<'a> {
        KnowledgeGraph::in_range(self, e)
    }
    #[inline]
    fn in_pos(self, i: usize) -> u32 {
        self.in_pos[i]
    }
    #[inline]
    fn in_subject(self, i: usize) -> u32 {
        self.in_subject[i]
    }
}

/// The adjacency of a graph with an overlay, read through plain slices of its base and
/// appended parts (the overlay's maps only for the entities it moved).
#[derive(Clone, Copy)]
pub(crate) struct OverlaidAdj<'a> {
    base: BaseAdj<'a>,
    ov: &'a Overlay,
    rec_ext: &'a [FactRec],
    in_pos_ext: &'a [u32],
    in_subject_ext: &'a [u32],
}

impl<'a> OverlaidAdj<'a> {
    /// The view of `g` (with or without an overlay).
    #[inline]
    pub(crate) fn of(g: &'a KnowledgeGraph, ov: &'a Overlay) -> Self {
        OverlaidAdj {
            base: BaseAdj {
                g,
                rec: g.rec.base(),
                out_offsets: &g.out_offsets[..],
                in_offsets: &g.in_offsets[..],
                in_pos: g.in_pos.base(),
                in_subject: g.in_subject.base(),
            },
            ov,
            rec_ext: g.rec.ext(),
            in_pos_ext: g.in_pos.ext(),
            in_subject_ext: g.in_subject.ext(),
        }
    }
}

impl<'a> Adjacency<'a> for OverlaidAdj<'a> {
    type Row = Segs<'a>;
    #[inline]
    fn graph(self) -> &'a KnowledgeGraph {
        self.base.g
    }
    #[inline]
    fn rec(self, pos: usize) -> &'a FactRec {
        match self.base.rec.get(pos) {
            Some(r) => r,
            None => &self.rec_ext[pos - self.base.rec.len()],
        }
    }
    #[inline]
    fn out_range(self, e: u32) -> Segs<'a> {
        match self.ov.out_row(e) {
            Some(r) => r,
            None => Segs::one(self.base.out_range(e)),
        }
    }
    #[inline]
    fn in_range(self, e: u32) -> Segs<'a> {
        match self.ov.in_row(e) {
            Some(r) => r,
            None => Segs::one(self.base.in_range(e)),
        }
    }
    #[inline]
    fn in_pos(self, i: usize) -> u32 {
        match self.base.in_pos.get(i) {
            Some(&p) => p,
            None => self.in_pos_ext[i - self.base.in_pos.len()],
        }
    }
    #[inline]
    fn in_subject(self, i: usize) -> u32 {
        match self.base.in_subject.get(i) {
            Some(&s) => s,
            None => self.in_subject_ext[i - self.base.in_subject.len()],
        }
    }
}

/// The adjacency of a graph with no overlay, read through plain slices.
#[derive(Clone, Copy)]
pub(crate) struct BaseAdj<'a> {
    g: &'a KnowledgeGraph,
    rec: &'a [FactRec],
    out_offsets: &'a [u32],
    in_offsets: &'a [u32],
    in_pos: &'a [u32],
    in_subject: &'a [u32],
}

impl<'a> BaseAdj<'a> {
    /// The plain view of `g`, or None when `g` has an overlay (appended rows).
    #[inline]
    pub(crate) fn of(g: &'a KnowledgeGraph) -> Option<Self> {
        if g.ov.is_some() || !g.rec.ext().is_empty() || !g.in_pos.ext().is_empty() {
            return None;
        }
        Some(BaseAdj {
            g,
            rec: g.rec.base(),
            out_offsets: &g.out_offsets[..],
            in_offsets: &g.in_offsets[..],
            in_pos: g.in_pos.base(),
            in_subject: g.in_subject.base(),
        })
    }
}

impl<'a> Adjacency<'a> for BaseAdj<'a> {
    type Row = std::ops::Range<usize>;
    #[inline]
    fn graph(self) -> &'a KnowledgeGraph {
        self.g
    }
    #[inline]
    fn rec(self, pos: usize) -> &'a FactRec {
        &self.rec[pos]
    }
    #[inline]
    fn out_range(self, e: u32) -> std::ops::Range<usize> {
        self.out_offsets[e as usize] as usize..self.out_offsets[e as usize + 1] as usize
    }
    #[inline]
    fn in_range(self, e: u32) -> std::ops::Range<usize> {
        self.in_offsets[e as usize] as usize..self.in_offsets[e as usize + 1] as usize
    }
    #[inline]
    fn in_pos(self, i: usize) -> u32 {
        self.in_pos[i]
    }
    #[inline]
    fn in_subject(self, i: usize) -> u32 {
        self.in_subject[i]
    }
}
