//! Validated query plans bound to a graph, and the batch results they return.

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;

use crate::activation::{
    graph_recall, spread, Activation, Queries, Rank, Recall, RecallParams, SpreadParams,
};
use crate::Error;

use super::args::*;
use super::core_graph::CoreGraph;
use crate::py::enter;

/// A validated spreading-activation configuration bound to a graph.
#[pyclass(frozen, module = "graphrecall._core")]
pub struct CoreSpreadPlan {
    pub(super) graph: Py<CoreGraph>,
    pub(super) params: SpreadParams,
}

#[pymethods]
impl CoreSpreadPlan {
    /// Run a batch: `anchors` (int64) with optional match `scores` (float64) and per-query
    /// `offsets` (int64, len Q+1; one query when omitted). `now` is required for
    /// `score_fact` ranking.
    #[pyo3(signature = (anchors, scores=None, offsets=None, now=None))]
    fn __call__(
        &self,
        py: Python<'_>,
        anchors: Arr<'_, i64>,
        scores: Option<Arr<'_, f64>>,
        offsets: Option<Arr<'_, i64>>,
        now: Option<i64>,
    ) -> PyResult<CoreActivation> {
        let b = batch(&anchors, &scores, &offsets)?;
        let now = match (&self.params.rank, now) {
            (Rank::ScoreFact { .. }, None) => {
                return Err(Error::param("now", "is required to rank by score_fact").into())
            }
            (_, now) => now.unwrap_or(0),
        };
        let g = &self.graph.get().inner;
        let p = &self.params;
        let inner = enter(py, || {
            let q = Queries {
                anchors: &b.anchors,
                scores: &b.scores,
                offsets: &b.offsets,
            };
            spread(g, &q, p, now)
        })?;
        Ok(CoreActivation { inner })
    }
}

/// A validated seed-004 recall configuration bound to a graph.
#[pyclass(frozen, module = "graphrecall._core")]
pub struct CoreRecallPlan {
    pub(super) graph: Py<CoreGraph>,
    pub(super) params: RecallParams,
}

#[pymethods]
impl CoreRecallPlan {
    /// Run a batch; see `CoreSpreadPlan.__call__`. Scores are the anchors' match scores.
    #[pyo3(signature = (anchors, scores=None, offsets=None))]
    fn __call__(
        &self,
        py: Python<'_>,
        anchors: Arr<'_, i64>,
        scores: Option<Arr<'_, f64>>,
        offsets: Option<Arr<'_, i64>>,
    ) -> PyResult<CoreRecall> {
        let b = batch(&anchors, &scores, &offsets)?;
        let g = &self.graph.get().inner;
        let p = &self.params;
        let inner = enter(py, || {
            let q = Queries {
                anchors: &b.anchors,
                scores: &b.scores,
                offsets: &b.offsets,
            };
            graph_recall(g, &q, p)
        })?;
        Ok(CoreRecall { inner })
    }
}

/// Result of a spreading activation batch; arrays are built on access.
#[pyclass(frozen, module = "graphrecall._core")]
pub struct CoreActivation {
    pub(super) inner: Activation,
}

#[pymethods]
impl CoreActivation {
    #[getter]
    fn fact_offsets<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        offsets64(&self.inner.fact_offsets).into_pyarray(py)
    }
    #[getter]
    fn facts<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        id64(&self.inner.all.facts).into_pyarray(py)
    }
    #[getter]
    fn hops<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u32>> {
        PyArray1::from_slice(py, &self.inner.all.hops)
    }
    #[getter]
    fn anchors<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        id64(&self.inner.all.anchors).into_pyarray(py)
    }
    #[getter]
    fn parents<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        id64(&self.inner.all.parents).into_pyarray(py)
    }
    #[getter]
    fn via<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        id64(&self.inner.all.via).into_pyarray(py)
    }
    #[getter]
    fn scores<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray1<f64>>> {
        self.inner
            .ranked
            .then(|| PyArray1::from_slice(py, &self.inner.all.scores))
    }
    #[getter]
    fn entity_offsets<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        offsets64(&self.inner.entity_offsets).into_pyarray(py)
    }
    #[getter]
    fn entities<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        id64(&self.inner.all.entities).into_pyarray(py)
    }
    #[getter]
    fn entity_hops<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u32>> {
        PyArray1::from_slice(py, &self.inner.all.entity_hops)
    }
    #[getter]
    fn entity_strengths<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f32>> {
        PyArray1::from_slice(py, &self.inner.all.entity_strengths)
    }
    #[getter]
    fn entity_anchors<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        id64(&self.inner.all.entity_anchors).into_pyarray(py)
    }
    #[getter]
    fn entity_parents<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        id64(&self.inner.all.entity_parents).into_pyarray(py)
    }
    #[getter]
    fn n_queries(&self) -> usize {
        self.inner.fact_offsets.len().saturating_sub(1)
    }
}

/// Result of a graph-recall batch; arrays are built on access.
#[pyclass(frozen, module = "graphrecall._core")]
pub struct CoreRecall {
    pub(super) inner: Recall,
}

#[pymethods]
impl CoreRecall {
    #[getter]
    fn offsets<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        offsets64(&self.inner.offsets).into_pyarray(py)
    }
    #[getter]
    fn facts<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        id64(&self.inner.facts).into_pyarray(py)
    }
    #[getter]
    fn scores<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, &self.inner.scores)
    }
    #[getter]
    fn hops<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u32>> {
        PyArray1::from_slice(py, &self.inner.hops)
    }
    #[getter]
    fn anchors<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        id64(&self.inner.anchors).into_pyarray(py)
    }
    #[getter]
    fn via<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        id64(&self.inner.via).into_pyarray(py)
    }
    #[getter]
    fn n_queries(&self) -> usize {
        self.inner.offsets.len().saturating_sub(1)
    }
}
