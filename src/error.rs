//! The one error type of the core. Every message names the offending table, row, column
//! or parameter so that a user can find the bad input without a debugger.

use thiserror::Error;

/// Everything that can go wrong in the core. No code path that user input reaches panics.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Error {
    /// A column's length does not match its table.
    #[error("{table}.{column} has {got} rows, expected {expected}")]
    LengthMismatch {
        table: &'static str,
        column: &'static str,
        expected: usize,
        got: usize,
    },
    /// A row refers to an entity (or chunk) index that does not exist.
    #[error("{table} row {row}: {column} = {value} refers to no {target} (there are {count})")]
    Dangling {
        table: &'static str,
        row: usize,
        column: &'static str,
        value: i64,
        target: &'static str,
        count: usize,
    },
    /// A value is NaN, infinite, out of range, an unknown code or otherwise unusable.
    #[error("{table} row {row}: {column} = {value} is {problem}")]
    InvalidValue {
        table: &'static str,
        row: usize,
        column: &'static str,
        value: String,
        problem: String,
    },
    /// A fact joins entities of two tenants.
    #[error(
        "{table} row {row}: {left} {left_id} belongs to tenant {left_tenant} but {right} \
         {right_id} belongs to tenant {right_tenant}; rows may not cross tenants"
    )]
    CrossTenant {
        table: &'static str,
        row: usize,
        left: &'static str,
        left_id: u32,
        left_tenant: u32,
        right: &'static str,
        right_id: u32,
        right_tenant: u32,
    },
    /// The same key appears twice where it must be unique.
    #[error("{table} row {row}: duplicate {what}")]
    Duplicate {
        table: &'static str,
        row: usize,
        what: String,
    },
    /// A query or kernel parameter is out of its allowed range.
    #[error("invalid parameter {name}: {problem}")]
    InvalidParameter { name: &'static str, problem: String },
    /// A tenant code that the graph does not hold.
    #[error("unknown tenant {tenant} ({})", tenant_codes(*.n_tenants))]
    UnknownTenant { tenant: u32, n_tenants: u32 },
    /// One query of a batch is malformed (bad anchor, anchor of another tenant, ...).
    #[error("query {query}: {problem}")]
    InvalidQuery { query: usize, problem: String },
    /// A part of a stored graph (snapshot) is inconsistent: truncated, corrupted or foreign.
    #[error("corrupted graph part {part}: {problem}")]
    Corrupt { part: &'static str, problem: String },
    /// The input exceeds what the compact u32 layout can index.
    #[error("{what} = {value} exceeds the limit of {limit}")]
    Capacity {
        what: &'static str,
        value: usize,
        limit: usize,
    },
    /// An array the input needs cannot be allocated (the machine or the process's limit is
    /// out of memory).
    #[error("out of memory: {what} needs {bytes} bytes that could not be allocated")]
    OutOfMemory { what: &'static str, bytes: usize },
}

/// Result alias used throughout the core.
pub type Result<T> = std::result::Result<T, Error>;

/// The tenant codes a graph holds, in words (an empty graph holds none).
fn tenant_codes(n_tenants: u32) -> String {
    match n_tenants {
        0 => "the graph holds no tenant".to_string(),
        1 => "the graph holds tenant code 0 only".to_string(),
        n => format!("the graph holds tenant codes 0 to {}", n - 1),
    }
}

impl Error {
    pub(crate) fn param(name: &'static str, problem: impl Into<String>) -> Self {
        Error::InvalidParameter {
            name,
            problem: problem.into(),
        }
    }

    pub(crate) fn query(query: usize, problem: impl Into<String>) -> Self {
        Error::InvalidQuery {
            query,
            problem: problem.into(),
        }
    }
}

impl Error {
    /// What went wrong, as a stable snake_case code (the `kind` Python errors carry).
    pub fn kind(&self) -> &'static str {
        match self {
            Error::LengthMismatch { .. } => "length_mismatch",
            Error::Dangling { .. } => "dangling",
            Error::InvalidValue { .. } => "invalid_value",
            Error::CrossTenant { .. } => "cross_tenant",
            Error::Duplicate { .. } => "duplicate",
            Error::InvalidParameter { .. } => "invalid_parameter",
            Error::UnknownTenant { .. } => "unknown_tenant",
            Error::InvalidQuery { .. } => "invalid_query",
            Error::Corrupt { .. } => "corrupt",
            Error::Capacity { .. } => "capacity",
            Error::OutOfMemory { .. } => "out_of_memory",
        }
    }

    /// The table of the offending value: a data table, `"queries"` for one query of a batch,
    /// or the stored part of a corrupted graph.
    pub fn table(&self) -> Option<&'static str> {
        match self {
            Error::LengthMismatch { table, .. }
            | Error::Dangling { table, .. }
            | Error::InvalidValue { table, .. }
            | Error::CrossTenant { table, .. }
            | Error::Duplicate { table, .. } => Some(table),
            Error::InvalidQuery { .. } => Some("queries"),
            Error::Corrupt { part, .. } => Some(part),
            Error::InvalidParameter { .. }
            | Error::UnknownTenant { .. }
            | Error::Capacity { .. }
            | Error::OutOfMemory { .. } => None,
        }
    }

    /// The row of the offending value (for a batch of queries, the query's position).
    pub fn row(&self) -> Option<usize> {
        match self {
            Error::Dangling { row, .. }
            | Error::InvalidValue { row, .. }
            | Error::CrossTenant { row, .. }
            | Error::Duplicate { row, .. } => Some(*row),
            Error::InvalidQuery { query, .. } => Some(*query),
            Error::LengthMismatch { .. }
            | Error::InvalidParameter { .. }
            | Error::UnknownTenant { .. }
            | Error::Corrupt { .. }
            | Error::Capacity { .. }
            | Error::OutOfMemory { .. } => None,
        }
    }

    /// The column of the offending value (for a row crossing tenants, the second column,
    /// whose tenant differs from the first's).
    pub fn column(&self) -> Option<&'static str> {
        match self {
            Error::LengthMismatch { column, .. }
            | Error::Dangling { column, .. }
            | Error::InvalidValue { column, .. } => Some(column),
            Error::CrossTenant { right, .. } => Some(right),
            Error::Duplicate { .. }
            | Error::InvalidParameter { .. }
            | Error::UnknownTenant { .. }
            | Error::InvalidQuery { .. }
            | Error::Corrupt { .. }
            | Error::Capacity { .. }
            | Error::OutOfMemory { .. } => None,
        }
    }
}
