//! One module per stage, named as in pipelines/*.yaml, and the registry that maps those names
//! to factories. Adding a stage = one module + one line in `REGISTRY` + tests in the module.

pub mod bill;
pub mod fetch;
pub mod http_record;
pub mod markdown;
pub mod payment_gate;
pub mod screenshot;
pub mod settle;
pub mod static_reply;
pub mod url_guard;

use crate::pipeline::StageFactory;

/// Every stage a pipeline may name.
pub static REGISTRY: &[StageFactory] = &[
    payment_gate::FACTORY,
    url_guard::FACTORY,
    fetch::FACTORY,
    http_record::FACTORY,
    markdown::FACTORY,
    static_reply::FACTORY,
    bill::FACTORY,
    settle::FACTORY,
    screenshot::FACTORY,
];
