//! One module per stage, named as in pipelines/*.yaml, and the registry that maps those names
//! to factories. Adding a stage = one module + one line in `REGISTRY` + tests in the module.
//! The three payment stages (payment_gate, bill, settle) live with the rest of the money path in
//! `crate::payment`.

pub mod bazaar_check;
pub mod extract;
pub mod fetch;
pub mod http_record;
pub mod markdown;
pub mod parse_slots;
pub mod pdf_text;
pub mod screenshot;
pub mod search;
pub mod static_file;
pub mod static_reply;
pub mod url_guard;
pub mod x402_check;

pub mod funding;
pub mod funding_rates;
pub mod gas;
pub mod market_common;
pub mod portfolio;
pub mod pulse;
pub mod signals;
pub mod spot_prices;
pub mod yield_pools;
pub mod yields;

use crate::payment::{bill, gate as payment_gate, settle};
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
    extract::FACTORY,
    pdf_text::FACTORY,
    static_file::FACTORY,
    static_file::OWN_FILE,
    search::FACTORY,
    spot_prices::FACTORY,
    pulse::FACTORY,
    funding_rates::FACTORY,
    funding::FACTORY,
    signals::FACTORY,
    gas::FACTORY,
    portfolio::FACTORY,
    yield_pools::FACTORY,
    yields::FACTORY,
    x402_check::FACTORY,
    bazaar_check::FACTORY,
    screenshot::FACTORY,
];
