//! One module per stage, named as in pipelines/*.yaml, and the registry that maps those names
//! to factories. Adding a stage = one module + one line in `REGISTRY` + tests in the module.
//! Stages that differ only in what they read share one module (`market_source`: spot_prices,
//! funding_rates, yield_pools). Stages never import each other: they meet through the
//! Exchange, and what they share lives in the domain modules (market/, net/, audit/, doc/).
//! A stage that adapts one domain module bears its name (`stages::gas` reads its parameters and
//! the Exchange, `market::gas` does the work), so the pair is meant, not a clash.
//! The three payment stages (payment_gate, bill, settle) live with the rest of the money path in
//! `crate::payment`.

pub mod bazaar_check;
pub mod extract;
pub mod fetch;
pub mod http_record;
pub mod markdown;
pub mod pdf_text;
pub mod screenshot;
pub mod search;
pub mod static_file;
pub mod static_reply;
pub mod url_guard;
pub mod x402_check;

pub mod funding;
pub mod gas;
pub mod market_source;
pub mod portfolio;
pub mod pulse;
pub mod signals;
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
    market_source::SPOT_PRICES,
    pulse::FACTORY,
    market_source::FUNDING_RATES,
    funding::FACTORY,
    signals::FACTORY,
    gas::FACTORY,
    portfolio::FACTORY,
    market_source::YIELD_POOLS,
    yields::FACTORY,
    x402_check::FACTORY,
    bazaar_check::FACTORY,
    screenshot::FACTORY,
];

/// The market's upstream errors answer through the engine's [`crate::pipeline::UpstreamFailure`]:
/// implemented here, where stages join the two, so neither the engine nor the market imports the
/// other.
impl crate::pipeline::UpstreamFailure for crate::market::UpstreamError {
    fn status(&self) -> u16 {
        crate::market::UpstreamError::status(self)
    }
    fn code(&self) -> &str {
        crate::market::UpstreamError::code(self)
    }
    fn upstream(&self) -> &str {
        &self.upstream
    }
    fn retry_after_s(&self) -> Option<u64> {
        crate::market::UpstreamError::retry_after_s(self)
    }
}

#[cfg(test)]
mod tests {
    use super::REGISTRY;
    use crate::pipeline::chain::PAID_ARTEFACTS;

    /// An artefact nobody reads is a declaration that says nothing (the route's reply is not an
    /// artefact: docs/decisions.md#artefacts). A paid chain's own artefacts are read by the
    /// chain check and the server.
    #[test]
    fn every_artefact_given_is_needed_by_a_stage_or_the_paid_chain() {
        for f in REGISTRY {
            for given in f.gives {
                let needed = REGISTRY
                    .iter()
                    .any(|other| other.needs.iter().any(|n| n.is(given)));
                assert!(
                    needed || PAID_ARTEFACTS.contains(&given.name),
                    "`{}` gives `{given:?}`, which no stage needs",
                    f.name
                );
            }
        }
    }

    #[test]
    fn every_artefact_needed_is_given_by_a_stage_with_its_type() {
        for f in REGISTRY {
            for need in f.needs {
                assert!(
                    REGISTRY
                        .iter()
                        .any(|other| other.gives.iter().any(|g| g.is(need))),
                    "`{}` needs `{need:?}`, which no stage gives",
                    f.name
                );
            }
        }
    }
}
