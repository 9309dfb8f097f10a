//! One module per stage, named as in pipelines/*.yaml, and the registry that maps those names
//! to factories. Adding a stage = one module + one line in `REGISTRY` + tests in the module.

pub mod bill;
pub mod static_reply;

use crate::pipeline::StageFactory;

/// Every stage a pipeline may name.
pub static REGISTRY: &[StageFactory] = &[bill::FACTORY, static_reply::FACTORY];
