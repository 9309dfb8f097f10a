//! The engine: Exchange, the Stage trait, the registry entry type, the chain runner and input
//! validation. Nothing here knows any particular route.

pub mod artefacts;
pub mod chain;
pub mod exchange;
pub mod input;

pub use chain::{
    build_chain, params, BillingCase, BuildCtx, Chain, Phase, Services, Stage, StageFactory,
};
pub use exchange::{now_iso, priced_block, Exchange, Flow, Reply};
