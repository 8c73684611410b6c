//! `CoreGraph`: the compiled graph, its build from columns and its per-batch entry points.

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::activation::{
    mention_boost, personalized_pagerank_cached, BoostInput, BoostParams, Dedupe, EdgeWeight,
    PprCache, PprParams, Queries, Rank, RecallParams, SpreadParams,
};
use crate::graph::{Check, GraphInput, KnowledgeGraph, PartsRef, NONE};
use crate::py::slice;
use crate::scoring::FactScoreProfile;
use crate::Error;

use super::args::*;
use super::plans::*;
use crate::py::enter;

/// The compiled knowledge graph (numbers only). Build it through
/// `graphrecall.KnowledgeGraph`, which maps ids and keeps text.
#[pyclass(frozen, module = "graphrecall._core")]
pub struct CoreGraph {
    pub(crate) inner: KnowledgeGraph,
    /// Exact PPR's walk matrices, reused across calls.
    ppr: PprCache,
}

#[pymethods]
impl CoreGraph {
    #[new]
    #[pyo3(signature = (
        entity_tenant, fact_subject, fact_object, fact_predicate, fact_confidence,
        fact_strength, fact_status, fact_source, fact_access_count, *, n_predicates,
        n_statuses, n_sources, last_accessed=None, created_at=None, valid_from=None,
        valid_to=None, sequence=None, chunk_tenant=None, mention_chunk=None,
        mention_entity=None, mention_count=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        entity_tenant: Arr<'_, u32>,
        fact_subject: Arr<'_, u32>,
        fact_object: Arr<'_, u32>,
        fact_predicate: Arr<'_, u32>,
        fact_confidence: Arr<'_, f32>,
        fact_strength: Arr<'_, f32>,
        fact_status: Arr<'_, u8>,
        fact_source: Arr<'_, u8>,
        fact_access_count: Arr<'_, u32>,
        n_predicates: u32,
        n_statuses: u32,
        n_sources: u32,
        last_accessed: Option<Arr<'_, i64>>,
        created_at: Option<Arr<'_, i64>>,
        valid_from: Option<Arr<'_, i64>>,
        valid_to: Option<Arr<'_, i64>>,
        sequence: Option<Arr<'_, i64>>,
        chunk_tenant: Option<Arr<'_, u32>>,
        mention_chunk: Option<Arr<'_, u32>>,
        mention_entity: Option<Arr<'_, u32>>,
        mention_count: Option<Arr<'_, u32>>,
    ) -> PyResult<Self> {
        let input = GraphInput {
            entity_tenant: slice(&entity_tenant, "entity_tenant")?,
            fact_subject: slice(&fact_subject, "fact_subject")?,
            fact_object: slice(&fact_object, "fact_object")?,
            fact_predicate: slice(&fact_predicate, "fact_predicate")?,
            fact_confidence: slice(&fact_confidence, "fact_confidence")?,
            fact_strength: slice(&fact_strength, "fact_strength")?,
            fact_status: slice(&fact_status, "fact_status")?,
            fact_source: slice(&fact_source, "fact_source")?,
            fact_access_count: slice(&fact_access_count, "fact_access_count")?,
            fact_last_accessed: opt(&last_accessed, "last_accessed")?,
            fact_created_at: opt(&created_at, "created_at")?,
            fact_valid_from: opt(&valid_from, "valid_from")?,
            fact_valid_to: opt(&valid_to, "valid_to")?,
            fact_sequence: opt(&sequence, "sequence")?,
            n_predicates,
            n_statuses,
            n_sources,
            chunk_tenant: o32(&chunk_tenant, "chunk_tenant")?,
            mention_chunk: o32(&mention_chunk, "mention_chunk")?,
            mention_entity: o32(&mention_entity, "mention_entity")?,
            mention_count: o32(&mention_count, "mention_count")?,
        };
        let inner = enter(py, || KnowledgeGraph::build(&input))?;
        Ok(CoreGraph {
            inner,
            ppr: PprCache::default(),
        })
    }

    /// A new generation in which fact `fact[k]` holds row `k` of the columns (an id below
    /// `n_facts` replaces that fact's record, the next ids append facts); this graph is
    /// left as it is. Costs the changed rows and their entities' rows, not the graph.
    #[pyo3(signature = (
        fact, fact_subject, fact_object, fact_predicate, fact_confidence, fact_strength,
        fact_status, fact_source, fact_access_count, *, last_accessed=None, created_at=None,
        valid_from=None, valid_to=None, sequence=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn with_facts(
        &self,
        py: Python<'_>,
        fact: Arr<'_, u32>,
        fact_subject: Arr<'_, u32>,
        fact_object: Arr<'_, u32>,
        fact_predicate: Arr<'_, u32>,
        fact_confidence: Arr<'_, f32>,
        fact_strength: Arr<'_, f32>,
        fact_status: Arr<'_, u8>,
        fact_source: Arr<'_, u8>,
        fact_access_count: Arr<'_, u32>,
        last_accessed: Option<Arr<'_, i64>>,
        created_at: Option<Arr<'_, i64>>,
        valid_from: Option<Arr<'_, i64>>,
        valid_to: Option<Arr<'_, i64>>,
        sequence: Option<Arr<'_, i64>>,
    ) -> PyResult<Self> {
        let fact = slice(&fact, "fact")?;
        let input = GraphInput {
            fact_subject: slice(&fact_subject, "fact_subject")?,
            fact_object: slice(&fact_object, "fact_object")?,
            fact_predicate: slice(&fact_predicate, "fact_predicate")?,
            fact_confidence: slice(&fact_confidence, "fact_confidence")?,
            fact_strength: slice(&fact_strength, "fact_strength")?,
            fact_status: slice(&fact_status, "fact_status")?,
            fact_source: slice(&fact_source, "fact_source")?,
            fact_access_count: slice(&fact_access_count, "fact_access_count")?,
            fact_last_accessed: opt(&last_accessed, "last_accessed")?,
            fact_created_at: opt(&created_at, "created_at")?,
            fact_valid_from: opt(&valid_from, "valid_from")?,
            fact_valid_to: opt(&valid_to, "valid_to")?,
            fact_sequence: opt(&sequence, "sequence")?,
            ..GraphInput::default()
        };
        let inner = enter(py, || self.inner.with_facts(fact, &input))?;
        Ok(CoreGraph {
            inner,
            ppr: PprCache::default(),
        })
    }

    /// A new generation with entities appended (entity `n_entities + k` has tenant code
    /// `tenant[k]`, no facts, no mentions); this graph is left as it is. Costs the
    /// per-entity offsets and tenants, not the facts.
    fn with_entities(&self, py: Python<'_>, tenant: Arr<'_, u32>) -> PyResult<Self> {
        let tenant = slice(&tenant, "tenant")?;
        let inner = enter(py, || self.inner.with_entities(tenant))?;
        Ok(CoreGraph {
            inner,
            ppr: PprCache::default(),
        })
    }

    /// A new generation with chunks appended (chunk `n_chunks + k` has tenant code
    /// `tenant[k]`, no mentions); this graph is left as it is.
    fn with_chunks(&self, py: Python<'_>, tenant: Arr<'_, u32>) -> PyResult<Self> {
        let tenant = slice(&tenant, "tenant")?;
        let inner = enter(py, || self.inner.with_chunks(tenant))?;
        Ok(CoreGraph {
            inner,
            ppr: PprCache::default(),
        })
    }

    /// A new generation with mentions added (chunk `chunk[k]` mentions entity
    /// `entity[k]`, `count[k]` times); costs the rows of the touched chunks and entities.
    fn with_mentions(
        &self,
        py: Python<'_>,
        chunk: Arr<'_, u32>,
        entity: Arr<'_, u32>,
        count: Arr<'_, u32>,
    ) -> PyResult<Self> {
        let (chunk, entity) = (slice(&chunk, "chunk")?, slice(&entity, "entity")?);
        let count = slice(&count, "count")?;
        let inner = enter(py, || self.inner.with_mentions(chunk, entity, count))?;
        Ok(CoreGraph {
            inner,
            ppr: PprCache::default(),
        })
    }

    /// A new generation in which entity `entities[k]` has tenant `entity_tenant[k]` and
    /// chunk `chunks[k]` tenant `chunk_tenant[k]` (codes the graph holds); the caller checks
    /// that no fact or mention joins two tenants. Costs the tenant arrays, not the facts.
    fn with_tenants(
        &self,
        py: Python<'_>,
        entities: Arr<'_, u32>,
        entity_tenant: Arr<'_, u32>,
        chunks: Arr<'_, u32>,
        chunk_tenant: Arr<'_, u32>,
    ) -> PyResult<Self> {
        let (entities, entity_tenant) = (
            slice(&entities, "entities")?,
            slice(&entity_tenant, "entity_tenant")?,
        );
        let (chunks, chunk_tenant) = (
            slice(&chunks, "chunks")?,
            slice(&chunk_tenant, "chunk_tenant")?,
        );
        let inner = enter(py, || {
            self.inner
                .with_tenants(entities, entity_tenant, chunks, chunk_tenant)
        })?;
        Ok(CoreGraph {
            inner,
            ppr: PprCache::default(),
        })
    }

    /// A new generation without the mentions of entity `entity[k]` by chunk `chunk[k]`;
    /// costs the rows of the touched chunks and entities.
    fn without_mentions(
        &self,
        py: Python<'_>,
        chunk: Arr<'_, u32>,
        entity: Arr<'_, u32>,
    ) -> PyResult<Self> {
        let (chunk, entity) = (slice(&chunk, "chunk")?, slice(&entity, "entity")?);
        let inner = enter(py, || self.inner.without_mentions(chunk, entity))?;
        Ok(CoreGraph {
            inner,
            ppr: PprCache::default(),
        })
    }

    /// The same graph merged into one new base (what a fresh build gives); a base is
    /// returned sharing its arrays.
    fn compacted(&self, py: Python<'_>) -> PyResult<Self> {
        let inner = enter(py, || self.inner.compacted())?;
        Ok(CoreGraph {
            inner,
            ppr: PprCache::default(),
        })
    }

    /// A new base without the entities, facts and chunks at these dense indices (the
    /// rows that stay renumbered in order, as a fresh build of them numbers them); a
    /// deleted entity's facts must be deleted with it. This graph is left as it is.
    #[pyo3(signature = (*, entities, facts, chunks))]
    fn without(
        &self,
        py: Python<'_>,
        entities: Arr<'_, u32>,
        facts: Arr<'_, u32>,
        chunks: Arr<'_, u32>,
    ) -> PyResult<Self> {
        let (e, f, c) = (
            slice(&entities, "entities")?,
            slice(&facts, "facts")?,
            slice(&chunks, "chunks")?,
        );
        let inner = enter(py, || self.inner.without(e, f, c))?;
        Ok(CoreGraph {
            inner,
            ppr: PprCache::default(),
        })
    }

    /// A new generation with the facts at these dense indices deleted as tombstones: cut
    /// out of their rows at once, their indices kept (the facts after them keep theirs)
    /// until `compacted` renumbers the rest. Costs the facts' rows, not the graph.
    fn with_tombstones(&self, py: Python<'_>, facts: Arr<'_, u32>) -> PyResult<Self> {
        let facts = slice(&facts, "facts")?;
        let inner = enter(py, || self.inner.with_tombstones(facts))?;
        Ok(CoreGraph {
            inner,
            ppr: PprCache::default(),
        })
    }

    /// A new generation with the entities at these dense indices deleted: their facts
    /// `facts` become tombstones, their mentions are cut and they leave their tenants'
    /// listings; their indices stay until `without` drops them.
    fn with_dead_entities(
        &self,
        py: Python<'_>,
        entities: Arr<'_, u32>,
        facts: Arr<'_, u32>,
    ) -> PyResult<Self> {
        let entities = slice(&entities, "entities")?;
        let facts = slice(&facts, "facts")?;
        let inner = enter(py, || self.inner.with_dead_entities(entities, facts))?;
        Ok(CoreGraph {
            inner,
            ppr: PprCache::default(),
        })
    }

    /// The deleted entities not yet dropped by a new base, sorted.
    fn dead_entities<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u32>> {
        self.inner.dead_entities().to_vec().into_pyarray(py)
    }

    /// A new generation with the chunks at these dense indices deleted: their mentions
    /// are cut; their indices stay until `without` drops them.
    fn with_dead_chunks(&self, py: Python<'_>, chunks: Arr<'_, u32>) -> PyResult<Self> {
        let chunks = slice(&chunks, "chunks")?;
        let inner = enter(py, || self.inner.with_dead_chunks(chunks))?;
        Ok(CoreGraph {
            inner,
            ppr: PprCache::default(),
        })
    }

    /// The deleted chunks not yet dropped by a new base, sorted.
    fn dead_chunks<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u32>> {
        self.inner.dead_chunks().to_vec().into_pyarray(py)
    }

    /// The deleted facts (tombstones) not yet compacted, sorted.
    fn dead_facts<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u32>> {
        self.inner.dead_facts().to_vec().into_pyarray(py)
    }

    /// Appended positions, added mentions and tombstones not yet compacted (0 for a
    /// base).
    #[getter]
    fn overlay_len(&self) -> usize {
        self.inner.overlay_len()
    }

    #[getter]
    fn n_entities(&self) -> usize {
        self.inner.n_entities()
    }
    #[getter]
    fn n_facts(&self) -> usize {
        self.inner.n_facts()
    }
    #[getter]
    fn n_tenants(&self) -> usize {
        self.inner.n_tenants()
    }
    #[getter]
    fn n_chunks(&self) -> usize {
        self.inner.n_chunks()
    }
    #[getter]
    fn n_predicates(&self) -> usize {
        self.inner.n_predicates()
    }
    #[getter]
    fn n_statuses(&self) -> usize {
        self.inner.n_statuses()
    }
    #[getter]
    fn n_sources(&self) -> usize {
        self.inner.n_sources()
    }

    /// Sizes and heap bytes of the arrays.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.stats();
        let d = PyDict::new(py);
        d.set_item("entities", s.entities)?;
        d.set_item("facts", s.facts)?;
        d.set_item("literal_facts", s.literal_facts)?;
        d.set_item("tenants", s.tenants)?;
        d.set_item("chunks", s.chunks)?;
        d.set_item("mentions", s.mentions)?;
        d.set_item("bytes", s.bytes)?;
        Ok(d)
    }

    /// Columns of the given facts: (subject, object (-1 literal), predicate, confidence,
    /// strength, status, source, access_count, last_accessed, created_at, valid_from,
    /// valid_to, sequence); missing times are the int64 minimum (NaT).
    #[allow(clippy::type_complexity)]
    fn fact_rows<'py>(
        &self,
        py: Python<'py>,
        facts: Arr<'py, i64>,
    ) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        let ids = slice(&facts, "facts")?;
        let mut rows = Vec::with_capacity(ids.len());
        for &f in ids {
            let f32_ = u32::try_from(f)
                .map_err(|_| PyErr::from(Error::param("facts", format!("{f} is not a fact id"))))?;
            rows.push(self.inner.fact(f32_)?);
        }
        let col =
            |f: &dyn Fn(&crate::graph::FactRow) -> i64| rows.iter().map(f).collect::<Vec<i64>>();
        let subject = col(&|r| i64::from(r.subject));
        let object = col(&|r| {
            if r.object == NONE {
                -1
            } else {
                i64::from(r.object)
            }
        });
        let predicate = col(&|r| i64::from(r.predicate));
        let confidence: Vec<f32> = rows.iter().map(|r| r.confidence).collect();
        let strength: Vec<f32> = rows.iter().map(|r| r.strength).collect();
        let status: Vec<u8> = rows.iter().map(|r| r.status).collect();
        let source: Vec<u8> = rows.iter().map(|r| r.source).collect();
        let access = col(&|r| i64::from(r.access_count));
        let last = col(&|r| r.last_accessed);
        let created = col(&|r| r.created_at);
        let vf = col(&|r| r.valid_from);
        let vt = col(&|r| r.valid_to);
        let seq = col(&|r| r.sequence);
        pyo3::types::PyTuple::new(
            py,
            [
                subject.into_pyarray(py).into_any(),
                object.into_pyarray(py).into_any(),
                predicate.into_pyarray(py).into_any(),
                confidence.into_pyarray(py).into_any(),
                strength.into_pyarray(py).into_any(),
                status.into_pyarray(py).into_any(),
                source.into_pyarray(py).into_any(),
                access.into_pyarray(py).into_any(),
                last.into_pyarray(py).into_any(),
                created.into_pyarray(py).into_any(),
                vf.into_pyarray(py).into_any(),
                vt.into_pyarray(py).into_any(),
                seq.into_pyarray(py).into_any(),
            ],
        )
    }

    /// Out- and in-facts of an entity, confidence desc then id asc.
    fn adjacency<'py>(&self, py: Python<'py>, entity: u32) -> PyResult<Pair<'py, i64, i64>> {
        let out = self.inner.out_facts(entity)?;
        let inn = self.inner.in_facts(entity)?;
        Ok((id64(&out).into_pyarray(py), id64(&inn).into_pyarray(py)))
    }

    /// Chunks mentioning an entity, with counts.
    fn entity_chunks<'py>(&self, py: Python<'py>, entity: u32) -> PyResult<Pair<'py, i64, u32>> {
        let (c, n) = self.inner.entity_chunks(entity)?;
        Ok((id64(c).into_pyarray(py), n.to_vec().into_pyarray(py)))
    }

    /// Entities a chunk mentions, with counts.
    fn chunk_entities<'py>(&self, py: Python<'py>, chunk: u32) -> PyResult<Pair<'py, i64, u32>> {
        let (e, n) = self.inner.chunk_entities(chunk)?;
        Ok((id64(e).into_pyarray(py), n.to_vec().into_pyarray(py)))
    }

    /// Entities of a tenant, ascending.
    fn tenant_entities<'py>(
        &self,
        py: Python<'py>,
        tenant: u32,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        Ok(id64(self.inner.tenant_entities(tenant)?).into_pyarray(py))
    }

    /// Every array of the graph, by name (the snapshot payload); see `from_parts`.
    fn to_parts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let p = enter(py, || self.inner.to_parts())?;
        let d = PyDict::new(py);
        d.set_item("n_predicates", p.n_predicates)?;
        d.set_item("n_statuses", p.n_statuses)?;
        d.set_item("n_sources", p.n_sources)?;
        d.set_item("entity_tenant", p.entity_tenant.into_pyarray(py))?;
        d.set_item("out_offsets", p.out_offsets.into_pyarray(py))?;
        d.set_item("last_accessed", p.last_accessed.into_pyarray(py))?;
        d.set_item("object", p.object.into_pyarray(py))?;
        d.set_item("confidence", p.confidence.into_pyarray(py))?;
        d.set_item("strength", p.strength.into_pyarray(py))?;
        d.set_item("fact", p.fact.into_pyarray(py))?;
        match p.fact_to_pos {
            Some(inverse) => d.set_item("fact_to_pos", inverse.into_pyarray(py))?,
            None => d.set_item("fact_to_pos", py.None())?,
        }
        d.set_item("access_count", p.access_count.into_pyarray(py))?;
        d.set_item("predicate", p.predicate.into_pyarray(py))?;
        d.set_item("status", p.status.into_pyarray(py))?;
        d.set_item("source", p.source.into_pyarray(py))?;
        for (name, col) in [
            ("created_at", p.created_at),
            ("valid_from", p.valid_from),
            ("valid_to", p.valid_to),
            ("sequence", p.sequence),
        ] {
            match col {
                Some(c) => d.set_item(name, c.into_pyarray(py))?,
                None => d.set_item(name, py.None())?,
            }
        }
        d.set_item("in_offsets", p.in_offsets.into_pyarray(py))?;
        d.set_item("in_pos", p.in_pos.into_pyarray(py))?;
        d.set_item("in_subject", p.in_subject.into_pyarray(py))?;
        d.set_item("chunk_tenant", p.chunk_tenant.into_pyarray(py))?;
        d.set_item("chunk_offsets", p.chunk_offsets.into_pyarray(py))?;
        d.set_item("chunk_entity", p.chunk_entity.into_pyarray(py))?;
        d.set_item("chunk_count", p.chunk_count.into_pyarray(py))?;
        Ok(d)
    }

    /// Rebuild a graph from `to_parts` arrays (a corrupted or foreign payload raises
    /// DataError, never a crash). `check`: "trusted" (memory safety only), "tenants"
    /// (also isolation: no link crosses tenants) or "full" (every invariant). `fact_to_pos`
    /// (the inverse of `fact`) is checked against `fact` when given, computed when not.
    #[staticmethod]
    #[pyo3(signature = (
        *, n_predicates, n_statuses, n_sources, entity_tenant, out_offsets, last_accessed,
        object, confidence, strength, fact, access_count, predicate, status, source,
        in_offsets, in_pos, in_subject, chunk_tenant, chunk_offsets, chunk_entity,
        chunk_count, fact_to_pos=None, created_at=None, valid_from=None, valid_to=None,
        sequence=None, check="full"
    ))]
    #[allow(clippy::too_many_arguments)]
    fn from_parts(
        py: Python<'_>,
        n_predicates: u32,
        n_statuses: u32,
        n_sources: u32,
        entity_tenant: Arr<'_, u32>,
        out_offsets: Arr<'_, u32>,
        last_accessed: Arr<'_, i64>,
        object: Arr<'_, u32>,
        confidence: Arr<'_, f32>,
        strength: Arr<'_, f32>,
        fact: Arr<'_, u32>,
        access_count: Arr<'_, u32>,
        predicate: Arr<'_, u16>,
        status: Arr<'_, u8>,
        source: Arr<'_, u8>,
        in_offsets: Arr<'_, u32>,
        in_pos: Arr<'_, u32>,
        in_subject: Arr<'_, u32>,
        chunk_tenant: Arr<'_, u32>,
        chunk_offsets: Arr<'_, u32>,
        chunk_entity: Arr<'_, u32>,
        chunk_count: Arr<'_, u32>,
        fact_to_pos: Option<Arr<'_, u32>>,
        created_at: Option<Arr<'_, i64>>,
        valid_from: Option<Arr<'_, i64>>,
        valid_to: Option<Arr<'_, i64>>,
        sequence: Option<Arr<'_, i64>>,
        check: &str,
    ) -> PyResult<Self> {
        let check = match check {
            "trusted" => Check::Trusted,
            "tenants" => Check::Tenants,
            "full" => Check::Full,
            other => {
                return Err(Error::param(
                    "check",
                    format!("{other:?} is not 'trusted', 'tenants' or 'full'"),
                )
                .into())
            }
        };
        let parts = PartsRef {
            n_predicates,
            n_statuses,
            n_sources,
            entity_tenant: slice(&entity_tenant, "entity_tenant")?,
            out_offsets: slice(&out_offsets, "out_offsets")?,
            last_accessed: slice(&last_accessed, "last_accessed")?,
            object: slice(&object, "object")?,
            confidence: slice(&confidence, "confidence")?,
            strength: slice(&strength, "strength")?,
            fact: slice(&fact, "fact")?,
            fact_to_pos: fact_to_pos
                .as_ref()
                .map(|a| slice(a, "fact_to_pos"))
                .transpose()?,
            access_count: slice(&access_count, "access_count")?,
            predicate: slice(&predicate, "predicate")?,
            status: slice(&status, "status")?,
            source: slice(&source, "source")?,
            created_at: opt(&created_at, "created_at")?,
            valid_from: opt(&valid_from, "valid_from")?,
            valid_to: opt(&valid_to, "valid_to")?,
            sequence: opt(&sequence, "sequence")?,
            in_offsets: slice(&in_offsets, "in_offsets")?,
            in_pos: slice(&in_pos, "in_pos")?,
            in_subject: slice(&in_subject, "in_subject")?,
            chunk_tenant: slice(&chunk_tenant, "chunk_tenant")?,
            chunk_offsets: slice(&chunk_offsets, "chunk_offsets")?,
            chunk_entity: slice(&chunk_entity, "chunk_entity")?,
            chunk_count: slice(&chunk_count, "chunk_count")?,
        };
        // Read in place (a snapshot's memory-mapped files), copied once into the graph's
        // layout by the checking passes.
        let inner = enter(py, || KnowledgeGraph::from_parts_ref(&parts, check))?;
        Ok(CoreGraph {
            inner,
            ppr: PprCache::default(),
        })
    }

    /// Tenant code of every entity.
    fn entity_tenants<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u32>> {
        self.inner.entity_tenant.to_vec().into_pyarray(py)
    }

    /// Tenant code of every chunk.
    fn chunk_tenants<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u32>> {
        self.inner.chunk_tenant.to_vec().into_pyarray(py)
    }

    /// Prepare a spreading-activation plan (validated once, called per batch).
    #[pyo3(signature = (
        *, max_hops, per_entity_limit, max_facts, direction, statuses, predicates,
        min_confidence, as_of, max_sequence, tenant, independent_anchors, rank, top_k,
        source_weights=None, default_source_weight=1.0, status_weights=None,
        default_status_weight=1.0, decay_base=0.95, grace_weeks=1.0, usage_log_factor=0.5
    ))]
    #[allow(clippy::too_many_arguments)]
    fn spread_plan(
        slf: Bound<'_, Self>,
        max_hops: u32,
        per_entity_limit: Option<u32>,
        max_facts: Option<u32>,
        direction: &str,
        statuses: Option<Arr<'_, u8>>,
        predicates: Option<Arr<'_, u32>>,
        min_confidence: Option<f32>,
        as_of: Option<i64>,
        max_sequence: Option<i64>,
        tenant: Option<u32>,
        independent_anchors: bool,
        rank: &str,
        top_k: Option<usize>,
        source_weights: Option<Vec<f64>>,
        default_source_weight: f64,
        status_weights: Option<Vec<f64>>,
        default_status_weight: f64,
        decay_base: f64,
        grace_weeks: f64,
        usage_log_factor: f64,
    ) -> PyResult<CoreSpreadPlan> {
        let g = &slf.get().inner;
        let rank = match rank {
            "none" => Rank::None,
            "composite" => Rank::Composite,
            "score_fact" => {
                let d = FactScoreProfile::default();
                Rank::ScoreFact {
                    profile: FactScoreProfile {
                        source_weights: source_weights.unwrap_or(d.source_weights),
                        default_source_weight,
                        status_weights: status_weights.unwrap_or(d.status_weights),
                        default_status_weight,
                        decay_base,
                        grace_weeks,
                        usage_log_factor,
                    },
                }
            }
            other => {
                return Err(Error::param(
                    "rank",
                    format!("{other:?} is not one of 'none', 'score_fact', 'composite'"),
                )
                .into())
            }
        };
        let params = SpreadParams {
            max_hops,
            per_entity_limit,
            max_facts,
            direction: parse_direction(direction)?,
            filter: filter(g, statuses, predicates, min_confidence, as_of, max_sequence)?,
            tenant,
            independent_anchors,
            rank,
            top_k,
        };
        params.validate(g)?;
        if let Some(t) = tenant {
            g.check_tenant(t)?;
        }
        Ok(CoreSpreadPlan {
            graph: slf.unbind(),
            params,
        })
    }

    /// Prepare a seed-004 graph-recall plan.
    #[pyo3(signature = (
        *, max_hops, direction, statuses, predicates, min_confidence, as_of, max_sequence,
        tenant, top_k, dedupe
    ))]
    #[allow(clippy::too_many_arguments)]
    fn recall_plan(
        slf: Bound<'_, Self>,
        max_hops: u32,
        direction: &str,
        statuses: Option<Arr<'_, u8>>,
        predicates: Option<Arr<'_, u32>>,
        min_confidence: Option<f32>,
        as_of: Option<i64>,
        max_sequence: Option<i64>,
        tenant: Option<u32>,
        top_k: usize,
        dedupe: &str,
    ) -> PyResult<CoreRecallPlan> {
        let g = &slf.get().inner;
        let dedupe = match dedupe {
            "fact" => Dedupe::Fact,
            "triple" => Dedupe::Triple,
            other => {
                return Err(Error::param(
                    "dedupe",
                    format!("{other:?} is not one of 'fact', 'triple'"),
                )
                .into())
            }
        };
        let params = RecallParams {
            max_hops,
            direction: parse_direction(direction)?,
            filter: filter(g, statuses, predicates, min_confidence, as_of, max_sequence)?,
            tenant,
            top_k,
            dedupe,
        };
        if top_k == 0 {
            return Err(Error::param("top_k", "must be at least 1").into());
        }
        if max_hops > crate::activation::MAX_HOPS {
            return Err(Error::param(
                "max_hops",
                format!(
                    "{max_hops} exceeds the limit of {}",
                    crate::activation::MAX_HOPS
                ),
            )
            .into());
        }
        params.filter.validate(g)?;
        if let Some(t) = tenant {
            g.check_tenant(t)?;
        }
        Ok(CoreRecallPlan {
            graph: slf.unbind(),
            params,
        })
    }

    /// Personalized PageRank for a batch; returns (entity_offsets, entities, entity_scores,
    /// chunk_offsets, chunks, chunk_scores, iterations).
    #[pyo3(signature = (
        seeds, weights, offsets=None, *, damping, tol, max_iter, weight, direction, statuses,
        predicates, min_confidence, as_of, max_sequence, tenant, top_k, top_k_chunks,
        weight_by_count, epsilon=None, score_chunks=true
    ))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn personalized_pagerank<'py>(
        &self,
        py: Python<'py>,
        seeds: Arr<'py, i64>,
        weights: Option<Arr<'py, f64>>,
        offsets: Option<Arr<'py, i64>>,
        damping: f64,
        tol: f64,
        max_iter: u32,
        weight: &str,
        direction: &str,
        statuses: Option<Arr<'py, u8>>,
        predicates: Option<Arr<'py, u32>>,
        min_confidence: Option<f32>,
        as_of: Option<i64>,
        max_sequence: Option<i64>,
        tenant: Option<u32>,
        top_k: Option<usize>,
        top_k_chunks: Option<usize>,
        weight_by_count: bool,
        epsilon: Option<f64>,
        score_chunks: bool,
    ) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        let g = &self.inner;
        let weight = match weight {
            "strength" => EdgeWeight::Strength,
            "confidence" => EdgeWeight::Confidence,
            "uniform" => EdgeWeight::Uniform,
            other => {
                return Err(Error::param(
                    "weight",
                    format!("{other:?} is not one of 'strength', 'confidence', 'uniform'"),
                )
                .into())
            }
        };
        let params = PprParams {
            damping,
            tol,
            max_iter,
            weight,
            direction: parse_direction(direction)?,
            filter: filter(g, statuses, predicates, min_confidence, as_of, max_sequence)?,
            tenant,
            top_k,
            top_k_chunks,
            weight_by_count,
            score_chunks,
            epsilon,
        };
        let b = batch(&seeds, &weights, &offsets)?;
        let r = enter(py, || {
            let q = Queries {
                anchors: &b.anchors,
                scores: &b.scores,
                offsets: &b.offsets,
            };
            personalized_pagerank_cached(g, &q, &params, &self.ppr)
        })?;
        pyo3::types::PyTuple::new(
            py,
            [
                offsets64(&r.entity_offsets).into_pyarray(py).into_any(),
                id64(&r.entities).into_pyarray(py).into_any(),
                r.entity_scores.into_pyarray(py).into_any(),
                offsets64(&r.chunk_offsets).into_pyarray(py).into_any(),
                id64(&r.chunks).into_pyarray(py).into_any(),
                r.chunk_scores.into_pyarray(py).into_any(),
                r.iterations.into_pyarray(py).into_any(),
            ],
        )
    }

    /// Seed 001 mention boosts; returns (direct, indirect, adjusted, order).
    #[pyo3(signature = (
        chunks, similarity, chunk_offsets, query_entities, query_offsets, related,
        related_distance, related_strength, related_offsets, *, direct=0.3, indirect=0.1,
        use_strength=true, centrality=None
    ))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn mention_boost<'py>(
        &self,
        py: Python<'py>,
        chunks: Arr<'py, u32>,
        similarity: Arr<'py, f64>,
        chunk_offsets: Arr<'py, usize>,
        query_entities: Arr<'py, u32>,
        query_offsets: Arr<'py, usize>,
        related: Arr<'py, u32>,
        related_distance: Arr<'py, u32>,
        related_strength: Arr<'py, f64>,
        related_offsets: Arr<'py, usize>,
        direct: f64,
        indirect: f64,
        use_strength: bool,
        centrality: Option<Arr<'py, f64>>,
    ) -> PyResult<(
        Bound<'py, PyArray1<f64>>,
        Bound<'py, PyArray1<f64>>,
        Bound<'py, PyArray1<f64>>,
        Bound<'py, PyArray1<u32>>,
    )> {
        let input = BoostInput {
            chunks: slice(&chunks, "chunks")?,
            similarity: slice(&similarity, "similarity")?,
            chunk_offsets: slice(&chunk_offsets, "chunk_offsets")?,
            query_entities: slice(&query_entities, "query_entities")?,
            query_offsets: slice(&query_offsets, "query_offsets")?,
            related: slice(&related, "related")?,
            related_distance: slice(&related_distance, "related_distance")?,
            related_strength: slice(&related_strength, "related_strength")?,
            related_offsets: slice(&related_offsets, "related_offsets")?,
            centrality: centrality
                .as_ref()
                .map(|c| slice(c, "centrality"))
                .transpose()?,
        };
        let p = BoostParams {
            direct,
            indirect,
            use_strength,
        };
        let g = &self.inner;
        let r = enter(py, || mention_boost(g, &input, &p))?;
        Ok((
            r.direct.into_pyarray(py),
            r.indirect.into_pyarray(py),
            r.adjusted.into_pyarray(py),
            r.order.into_pyarray(py),
        ))
    }
}
