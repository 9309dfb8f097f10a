//! The engine: Exchange, the Stage trait, the registry entry type, the chain runner and input
//! validation, the parse slots that bound how many documents a route parses at once, and the
//! headers every answer carries.
//! Nothing here knows any particular route.

pub mod artefact;
pub mod chain;
pub mod exchange;
pub mod input;
pub mod parse_slots;
pub mod reply_headers;

pub use artefact::Artefact;
pub use chain::{
    build_chain, params, BillingCase, BuildCtx, Chain, Phase, Services, Stage, StageFactory,
};
pub use exchange::{now_iso, priced_block, Exchange, Flow, Reply, UpstreamFailure};
