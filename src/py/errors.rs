//! The one way into the core from Python: [`enter`] releases the GIL around a kernel and
//! maps its [`Error`] to the Python exception that carries the error's fields.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};

use crate::Error;

/// Runs `f` with the GIL released and maps its error: every kernel is entered through here.
pub(crate) fn enter<T, F>(py: Python<'_>, f: F) -> PyResult<T>
where
    T: Send,
    F: Send + FnOnce() -> crate::Result<T>,
{
    py.detach(f).map_err(PyErr::from)
}

/// Exception classes live in `graphrecall.errors` (pure Python) so that each one can also
/// subclass the builtin that callers already catch (`ValueError`, `KeyError`).
fn error_class<'py>(py: Python<'py>, name: &'static str) -> PyResult<Bound<'py, PyType>> {
    static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    let module =
        MODULE.get_or_try_init(py, || py.import("graphrecall.errors").map(Bound::unbind))?;
    Ok(module.bind(py).getattr(name)?.cast_into::<PyType>()?)
}

/// The exception of `err`: its class by variant, the message, and the keyword fields
/// `table`, `row`, `column`, `kind`, `input` (the offending value), `parameter` and `ctx`
/// (the variant's other fields).
fn exception(py: Python<'_>, err: &Error) -> PyResult<PyErr> {
    let kw = PyDict::new(py);
    let ctx = PyDict::new(py);
    kw.set_item("table", err.table())?;
    kw.set_item("row", err.row())?;
    kw.set_item("column", err.column())?;
    kw.set_item("kind", err.kind())?;
    let class = match err {
        Error::LengthMismatch { expected, got, .. } => {
            ctx.set_item("expected", expected)?;
            ctx.set_item("got", got)?;
            "DataError"
        }
        Error::Dangling {
            value,
            target,
            count,
            ..
        } => {
            kw.set_item("input", value)?;
            ctx.set_item("target", target)?;
            ctx.set_item("count", count)?;
            "DataError"
        }
        Error::InvalidValue { value, problem, .. } => {
            kw.set_item("input", value)?;
            ctx.set_item("problem", problem)?;
            "DataError"
        }
        Error::CrossTenant {
            left,
            left_id,
            left_tenant,
            right,
            right_id,
            right_tenant,
            ..
        } => {
            kw.set_item("input", right_id)?;
            ctx.set_item("left", left)?;
            ctx.set_item("left_id", left_id)?;
            ctx.set_item("left_tenant", left_tenant)?;
            ctx.set_item("right", right)?;
            ctx.set_item("right_id", right_id)?;
            ctx.set_item("right_tenant", right_tenant)?;
            "DataError"
        }
        Error::Duplicate { what, .. } => {
            ctx.set_item("what", what)?;
            "DataError"
        }
        Error::Corrupt { problem, .. } => {
            ctx.set_item("problem", problem)?;
            "DataError"
        }
        Error::Capacity { what, value, limit } => {
            kw.set_item("input", value)?;
            ctx.set_item("what", what)?;
            ctx.set_item("limit", limit)?;
            "DataError"
        }
        Error::OutOfMemory { what, bytes } => {
            ctx.set_item("what", what)?;
            ctx.set_item("bytes", bytes)?;
            "OutOfMemoryError"
        }
        Error::InvalidParameter { name, problem } => {
            kw.set_item("parameter", name)?;
            ctx.set_item("problem", problem)?;
            "ParameterError"
        }
        Error::UnknownTenant { tenant, n_tenants } => {
            kw.set_item("input", tenant)?;
            ctx.set_item("n_tenants", n_tenants)?;
            "UnknownTenantError"
        }
        Error::InvalidQuery { problem, .. } => {
            ctx.set_item("problem", problem)?;
            "QueryError"
        }
    };
    kw.set_item("ctx", ctx)?;
    let value = error_class(py, class)?.call((err.to_string(),), Some(&kw))?;
    Ok(PyErr::from_value(value))
}

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        Python::attach(|py| {
            exception(py, &err).unwrap_or_else(|_| PyRuntimeError::new_err(err.to_string()))
        })
    }
}
