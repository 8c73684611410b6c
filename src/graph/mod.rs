//! The knowledge graph as a column store with CSR adjacency.
//!
//! Facts are stored in *position order*: grouped by subject (counting sort, O(E)) and, within
//! a subject, by confidence descending then fact id ascending, so that "the first `limit`
//! facts of an entity by confidence" is a slice prefix and the hot columns of one entity are
//! contiguous in memory. `pos_to_fact` / `fact_to_pos` translate between positions and the
//! caller's dense fact ids. The in-adjacency lists positions too, ordered the same way, with
//! the subject inlined so that walking an edge backwards costs no extra random read.

mod build;
mod delete;
mod multiset;
mod overlay;
mod overlay_rows;
mod parts;
mod retenant;
#[cfg(test)]
mod tombstone;

pub use build::GraphInput;
pub(crate) use overlay::{Adjacency, BaseAdj, Column, OverlaidAdj, Overlay};
pub(crate) use overlay_rows::Segs;

pub use parts::{Check, GraphParts, PartsRef};
use std::sync::Arc;

use crate::error::{Error, Result};

/// Sentinel for "no entity" (a literal-valued fact) and "no fact / no chunk".
pub const NONE: u32 = u32::MAX;
/// Null timestamp / sequence (numpy's NaT has the same bit pattern).
pub const NULL_TIME: i64 = i64::MIN;

/// An immutable knowledge graph generation. Cheap to share across threads (`Sync`) and to
/// clone (the arrays are shared); a fact change makes a new generation over the same base
/// (see [`KnowledgeGraph::with_facts`]).
#[derive(Debug, Clone)]
pub struct KnowledgeGraph {
    pub(crate) n_entities: u32,
    pub(crate) n_facts: u32,
    pub(crate) n_tenants: u32,
    pub(crate) n_statuses: u32,
    pub(crate) n_sources: u32,
    pub(crate) n_predicates: u32,

    pub(crate) entity_tenant: Arc<Vec<u32>>,
    /// Entities grouped by tenant (CSR over tenants).
    pub(crate) tenant_offsets: Arc<Vec<u32>>,
    pub(crate) tenant_entities: Arc<Vec<u32>>,

    /// Out-adjacency: facts of entity `e` are positions `out_offsets[e]..out_offsets[e+1]`.
    pub(crate) out_offsets: Arc<Vec<u32>>,
    /// The hot fact columns, one 32-byte record per position: an entity's facts are a
    /// few contiguous cache lines, so a traversal step costs ~2 cache misses, not one per
    /// column.
    pub(crate) rec: Column<FactRec>,
    // Optional, colder columns, indexed by position.
    pub(crate) created_at: Option<Column<i64>>,
    pub(crate) valid_from: Option<Column<i64>>,
    pub(crate) valid_to: Option<Column<i64>>,
    pub(crate) sequence: Option<Column<i64>>,
    pub(crate) fact_to_pos: Arc<Vec<u32>>,

    /// In-adjacency: facts whose object is `e` are `in_pos[in_offsets[e]..in_offsets[e+1]]`,
    /// confidence descending then fact id ascending; `in_subject` is their subject.
    pub(crate) in_offsets: Arc<Vec<u32>>,
    pub(crate) in_pos: Column<u32>,
    pub(crate) in_subject: Column<u32>,

    pub(crate) n_chunks: u32,
    pub(crate) chunk_tenant: Arc<Vec<u32>>,
    /// Chunk -> entities it mentions (entity ascending), with counts.
    pub(crate) chunk_offsets: Arc<Vec<u32>>,
    pub(crate) chunk_entity: Arc<Vec<u32>>,
    pub(crate) chunk_count: Arc<Vec<u32>>,
    /// Entity -> chunks that mention it (chunk ascending), with counts.
    pub(crate) mention_offsets: Arc<Vec<u32>>,
    pub(crate) mention_chunk: Arc<Vec<u32>>,
    pub(crate) mention_count: Arc<Vec<u32>>,
    /// The rows changed since the base (None: a base, as built).
    pub(crate) ov: Option<Arc<Overlay>>,
}

/// One fact at its position: everything traversal and seed-000 scoring read.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(C)]
pub(crate) struct FactRec {
    pub last_accessed: i64,
    /// Object entity, or [`NONE`] for a literal.
    pub object: u32,
    pub confidence: f32,
    pub strength: f32,
    /// The caller's dense fact id.
    pub fact: u32,
    pub access_count: u32,
    pub predicate: u16,
    pub status: u8,
    pub source: u8,
}

/// Per-graph sizes, for reporting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphStats {
    pub entities: usize,
    pub facts: usize,
    pub literal_facts: usize,
    pub tenants: usize,
    pub chunks: usize,
    pub mentions: usize,
    pub bytes: usize,
}

/// One fact as stored, for inspection and explain.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FactRow {
    pub subject: u32,
    pub object: u32,
    pub predicate: u16,
    pub confidence: f32,
    pub strength: f32,
    pub status: u8,
    pub source: u8,
    pub access_count: u32,
    pub last_accessed: i64,
    pub created_at: i64,
    pub valid_from: i64,
    pub valid_to: i64,
    pub sequence: i64,
}

#[inline]
fn opt_at(col: &Option<Column<i64>>, pos: usize) -> i64 {
    col.as_ref().map_or(NULL_TIME, |c| c[pos])
}

impl KnowledgeGraph {
    pub fn n_entities(&self) -> usize {
        self.n_entities as usize
    }
    pub fn n_facts(&self) -> usize {
        self.n_facts as usize
    }
    pub fn n_tenants(&self) -> usize {
        self.n_tenants as usize
    }
    pub fn n_chunks(&self) -> usize {
        self.n_chunks as usize
    }
    pub fn n_statuses(&self) -> usize {
        self.n_statuses as usize
    }
    pub fn n_sources(&self) -> usize {
        self.n_sources as usize
    }
    pub fn n_predicates(&self) -> usize {
        self.n_predicates as usize
    }

    /// Tenant of an entity (caller guarantees the index is valid).
    #[inline]
    pub fn entity_tenant(&self, e: u32) -> u32 {
        self.entity_tenant[e as usize]
    }

    /// Entities of one tenant, ascending.
    pub fn tenant_entities(&self, tenant: u32) -> Result<&[u32]> {
        self.check_tenant(tenant)?;
        let t = tenant as usize;
        Ok(&self.tenant_entities
            [self.tenant_offsets[t] as usize..self.tenant_offsets[t + 1] as usize])
    }

    pub(crate) fn check_tenant(&self, tenant: u32) -> Result<()> {
        if tenant >= self.n_tenants {
            return Err(Error::UnknownTenant {
                tenant,
                n_tenants: self.n_tenants,
            });
        }
        Ok(())
    }

    /// Positions of the out-facts of `e`, in order.
    #[inline]
    pub(crate) fn out_range(&self, e: u32) -> Segs<'_> {
        if let Some(r) = self.ov.as_ref().and_then(|ov| ov.out_row(e)) {
            return r;
        }
        Segs::one(self.base_out_range(e))
    }

    /// Indices into `in_pos` / `in_subject` of the in-facts of `e`, in order.
    #[inline]
    pub(crate) fn in_range(&self, e: u32) -> Segs<'_> {
        if let Some(r) = self.ov.as_ref().and_then(|ov| ov.in_row(e)) {
            return r;
        }
        Segs::one(self.base_in_range(e))
    }

    /// The out-row of `e` in the base.
    #[inline]
    pub(crate) fn base_out_range(&self, e: u32) -> std::ops::Range<usize> {
        self.out_offsets[e as usize] as usize..self.out_offsets[e as usize + 1] as usize
    }

    /// The in-row of `e` in the base.
    #[inline]
    pub(crate) fn base_in_range(&self, e: u32) -> std::ops::Range<usize> {
        self.in_offsets[e as usize] as usize..self.in_offsets[e as usize + 1] as usize
    }

    /// Subject of the fact at a position (binary search over the out offsets; used only on
    /// the output path, never inside traversal).
    pub(crate) fn subject_at(&self, pos: u32) -> u32 {
        let base = self.rec.base().len();
        if let Some(ov) = &self.ov {
            if pos as usize >= base {
                return ov.ext_subject(pos as usize - base).unwrap_or(NONE);
            }
        }
        // partition_point returns the first entity whose range starts after pos.
        let idx = self.out_offsets.partition_point(|&o| o <= pos);
        (idx - 1) as u32
    }

    /// Out-degree and in-degree of an entity.
    pub fn degree(&self, e: u32) -> Result<(usize, usize)> {
        self.check_entity(e, "entity")?;
        Ok((self.out_range(e).len(), self.in_range(e).len()))
    }

    pub(crate) fn check_entity(&self, e: u32, name: &'static str) -> Result<()> {
        if e >= self.n_entities {
            return Err(Error::param(
                name,
                format!(
                    "entity {e} is out of range (the graph has {} entities)",
                    self.n_entities
                ),
            ));
        }
        Ok(())
    }

    /// The stored row of a fact, by fact id.
    pub fn fact(&self, fact: u32) -> Result<FactRow> {
        if fact >= self.n_facts {
            return Err(Error::param(
                "fact",
                format!(
                    "fact {fact} is out of range (the graph has {} facts)",
                    self.n_facts
                ),
            ));
        }
        if self.is_dead(fact) {
            return Err(Error::param(
                "fact",
                format!("fact {fact} is deleted (a tombstone until the next compaction)"),
            ));
        }
        Ok(self.row_at(self.pos_of(fact) as u32))
    }

    /// Position of a live fact id (caller guarantees `fact < n_facts`).
    #[inline]
    pub(crate) fn pos_of(&self, fact: u32) -> usize {
        if let Some(p) = self.ov.as_ref().and_then(|ov| ov.fact_pos(fact)) {
            return p as usize;
        }
        self.fact_to_pos[fact as usize] as usize
    }

    pub(crate) fn row_at(&self, pos: u32) -> FactRow {
        let p = pos as usize;
        FactRow {
            subject: self.subject_at(pos),
            object: self.rec[p].object,
            predicate: self.rec[p].predicate,
            confidence: self.rec[p].confidence,
            strength: self.rec[p].strength,
            status: self.rec[p].status,
            source: self.rec[p].source,
            access_count: self.rec[p].access_count,
            last_accessed: self.rec[p].last_accessed,
            created_at: opt_at(&self.created_at, p),
            valid_from: opt_at(&self.valid_from, p),
            valid_to: opt_at(&self.valid_to, p),
            sequence: opt_at(&self.sequence, p),
        }
    }

    /// Out-facts of an entity in stored order (confidence desc, id asc), as fact ids.
    pub fn out_facts(&self, e: u32) -> Result<Vec<u32>> {
        self.check_entity(e, "entity")?;
        Ok(self.out_range(e).map(|p| self.rec[p].fact).collect())
    }

    /// In-facts of an entity in stored order (confidence desc, id asc), as fact ids.
    pub fn in_facts(&self, e: u32) -> Result<Vec<u32>> {
        self.check_entity(e, "entity")?;
        Ok(self
            .in_range(e)
            .map(|i| self.rec[self.in_pos[i] as usize].fact)
            .collect())
    }

    /// Chunks mentioning an entity (chunk ascending) with mention counts.
    pub fn entity_chunks(&self, e: u32) -> Result<(&[u32], &[u32])> {
        self.check_entity(e, "entity")?;
        Ok(self.entity_mentions(e))
    }

    /// Entities mentioned by a chunk (entity ascending) with mention counts.
    pub fn chunk_entities(&self, c: u32) -> Result<(&[u32], &[u32])> {
        if c >= self.n_chunks {
            return Err(Error::param(
                "chunk",
                format!(
                    "chunk {c} is out of range (the graph has {} chunks)",
                    self.n_chunks
                ),
            ));
        }
        Ok(self.chunk_mentions(c))
    }

    #[inline]
    pub(crate) fn chunk_range(&self, c: u32) -> std::ops::Range<usize> {
        self.chunk_offsets[c as usize] as usize..self.chunk_offsets[c as usize + 1] as usize
    }

    #[inline]
    pub(crate) fn mention_range(&self, e: u32) -> std::ops::Range<usize> {
        self.mention_offsets[e as usize] as usize..self.mention_offsets[e as usize + 1] as usize
    }

    /// Sizes and the heap bytes held by the graph's arrays.
    pub fn stats(&self) -> GraphStats {
        fn b<T>(v: &[T]) -> usize {
            std::mem::size_of_val(v)
        }
        fn ob(v: &Option<Column<i64>>) -> usize {
            v.as_ref().map_or(0, Column::heap_bytes)
        }
        let bytes = b(&self.entity_tenant)
            + b(&self.tenant_offsets)
            + b(&self.tenant_entities)
            + b(&self.out_offsets)
            + self.rec.heap_bytes()
            + ob(&self.created_at)
            + ob(&self.valid_from)
            + ob(&self.valid_to)
            + ob(&self.sequence)
            + b(&self.fact_to_pos)
            + b(&self.in_offsets)
            + self.in_pos.heap_bytes()
            + self.in_subject.heap_bytes()
            + b(&self.chunk_tenant)
            + b(&self.chunk_offsets)
            + b(&self.chunk_entity)
            + b(&self.chunk_count)
            + b(&self.mention_offsets)
            + b(&self.mention_chunk)
            + b(&self.mention_count)
            + self.ov.as_ref().map_or(0, |ov| ov.heap_bytes());
        GraphStats {
            entities: self.n_entities as usize,
            facts: self.n_facts as usize,
            literal_facts: (0..self.n_entities)
                .flat_map(|e| self.out_range(e))
                .filter(|&p| self.rec[p].object == NONE)
                .count(),
            tenants: self.n_tenants as usize,
            chunks: self.n_chunks as usize,
            mentions: (self.chunk_entity.len()
                + self.ov.as_ref().map_or(0, |ov| ov.mentions_added()))
            .saturating_sub(self.ov.as_ref().map_or(0, |ov| ov.mentions_removed())),
            bytes,
        }
    }

    /// Export every fact as columns in fact-id order (subject, object with NONE for
    /// literals): the CSR round trip (a tombstone reads subject 0, object 0).
    pub fn fact_columns(&self) -> (Vec<u32>, Vec<u32>) {
        let n = self.n_facts as usize;
        let mut subject = vec![0u32; n];
        let mut object = vec![0u32; n];
        for e in 0..self.n_entities {
            for p in self.out_range(e) {
                let f = self.rec[p].fact as usize;
                subject[f] = e;
                object[f] = self.rec[p].object;
            }
        }
        (subject, object)
    }
}

#[cfg(test)]
pub(crate) mod tests;
