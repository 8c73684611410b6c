//! `CoreGraph` and its query plans: the long-lived state and the per-batch entry points.

mod args;
mod core_graph;
mod plans;

pub use core_graph::CoreGraph;
pub use plans::{CoreActivation, CoreRecall, CoreRecallPlan, CoreSpreadPlan};
