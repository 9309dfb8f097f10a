//! Dollar prices ⇄ atomic token amounts, by exact decimal arithmetic on strings.
//!
//! x402 amounts are decimal strings of atomic units (USDC: 6 decimals, "5000" = 0.005 USD).
//! No floats anywhere: a price that the asset cannot represent exactly is an error, never a
//! silent rounding.
//!
//! Accepted USD syntax: `DIGITS` or `DIGITS.DIGITS`, optionally preceded by one `$` (the TS
//! SDK's price syntax, so route configs copied from it keep working). Rejected: signs,
//! exponents, thousands separators, whitespace, a bare `.5` or `5.`, and more than
//! [`MAX_PRICE_DIGITS`] digits. Zero is accepted ("0" → "0"): whether a free price makes
//! sense is the route config's decision.

/// Upper bound on the digits of a price (whole + fraction). uint256 has 78 digits; a price
/// never needs more than a few, so a long input is a typo or abuse.
pub const MAX_PRICE_DIGITS: usize = 60;

/// Largest `decimals` we convert for (ERC-20 tokens use at most 18; 36 leaves margin).
pub const MAX_DECIMALS: u32 = 36;

/// Why a price could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PriceError {
    #[error("the price is empty; write it like \"0.005\"")]
    Empty,
    #[error(
        "the price {0:?} is not a plain decimal number; write it like \"0.005\" or \"$0.005\""
    )]
    Syntax(String),
    #[error("the price {price:?} has more precision than the asset's {decimals} decimals")]
    TooPrecise { price: String, decimals: u32 },
    #[error("the price {0:?} has too many digits")]
    TooLong(String),
    #[error("{0} decimals is more than the {MAX_DECIMALS} supported")]
    Decimals(u32),
    #[error("the atomic amount {0:?} is not a string of digits")]
    Atomic(String),
}

/// Converts a dollar price ("0.005", "$0.01", "2") to atomic units of an asset with
/// `decimals` decimals: `usd_to_atomic("0.005", 6) == Ok("5000")`.
pub fn usd_to_atomic(usd: &str, decimals: u32) -> Result<String, PriceError> {
    if decimals > MAX_DECIMALS {
        return Err(PriceError::Decimals(decimals));
    }
    if usd.is_empty() {
        return Err(PriceError::Empty);
    }
    let body = usd.strip_prefix('$').unwrap_or(usd);
    let (whole, frac) = match body.split_once('.') {
        Some((w, f)) => (w, f),
        None => (body, ""),
    };
    let syntax_ok = !whole.is_empty()
        && whole.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit())
        && !(body.contains('.') && frac.is_empty());
    if !syntax_ok {
        return Err(PriceError::Syntax(usd.to_string()));
    }
    if whole.len() + frac.len() > MAX_PRICE_DIGITS {
        return Err(PriceError::TooLong(usd.to_string()));
    }
    // Digits past the asset's precision are only allowed if they are zeros ("0.0050000").
    let d = decimals as usize;
    let (kept, dropped) = if frac.len() > d {
        frac.split_at(d)
    } else {
        (frac, "")
    };
    if dropped.bytes().any(|b| b != b'0') {
        return Err(PriceError::TooPrecise {
            price: usd.to_string(),
            decimals,
        });
    }
    let mut digits = String::with_capacity(whole.len() + d);
    digits.push_str(whole);
    digits.push_str(kept);
    digits.extend(std::iter::repeat_n('0', d - kept.len()));
    Ok(strip_leading_zeros(&digits))
}

/// Converts atomic units back to the shortest exact dollar string:
/// `atomic_to_usd("5000", 6) == Ok("0.005")`, `("1000000", 6)` → `"1"`.
pub fn atomic_to_usd(atomic: &str, decimals: u32) -> Result<String, PriceError> {
    if decimals > MAX_DECIMALS {
        return Err(PriceError::Decimals(decimals));
    }
    if atomic.is_empty() || !atomic.bytes().all(|b| b.is_ascii_digit()) {
        return Err(PriceError::Atomic(atomic.to_string()));
    }
    if atomic.len() > MAX_PRICE_DIGITS + MAX_DECIMALS as usize {
        return Err(PriceError::TooLong(atomic.to_string()));
    }
    let atomic = strip_leading_zeros(atomic);
    let d = decimals as usize;
    // Left-pad so there is at least one whole digit.
    let padded = if atomic.len() <= d {
        format!("{}{}", "0".repeat(d + 1 - atomic.len()), atomic)
    } else {
        atomic
    };
    let (whole, frac) = padded.split_at(padded.len() - d);
    let frac = frac.trim_end_matches('0');
    Ok(if frac.is_empty() {
        whole.to_string()
    } else {
        format!("{whole}.{frac}")
    })
}

fn strip_leading_zeros(digits: &str) -> String {
    let s = digits.trim_start_matches('0');
    if s.is_empty() {
        "0".to_string()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_usd_to_atomic_exactly() {
        let ok = [
            ("0.005", 6, "5000"),
            ("$0.005", 6, "5000"),
            ("0.01", 6, "10000"),
            ("0.02", 6, "20000"),
            ("1", 6, "1000000"),
            ("12.5", 6, "12500000"),
            ("0.000001", 6, "1"),
            ("0.0050000", 6, "5000"),
            ("00.5", 6, "500000"),
            ("0", 6, "0"),
            ("0.0", 6, "0"),
            ("7", 0, "7"),
            ("1.5", 18, "1500000000000000000"),
            // Beyond u64/f64: string arithmetic stays exact.
            (
                "123456789012345678901234567890.123456",
                6,
                "123456789012345678901234567890123456",
            ),
        ];
        for (usd, d, want) in ok {
            assert_eq!(usd_to_atomic(usd, d).as_deref(), Ok(want), "{usd} with {d}");
        }
    }

    #[test]
    fn rejects_bad_prices() {
        assert_eq!(usd_to_atomic("", 6), Err(PriceError::Empty));
        assert!(matches!(
            usd_to_atomic("0.0000001", 6),
            Err(PriceError::TooPrecise { .. })
        ));
        assert!(matches!(
            usd_to_atomic("0.5", 0),
            Err(PriceError::TooPrecise { .. })
        ));
        for bad in [
            "-0.01", "+0.01", "NaN", "nan", "inf", "1e-3", "1,000", " 0.01", "0.01 ", ".5", "5.",
            "$", "$$1", "1.2.3", "0x10", "١", "0.0١", "$-1", "US$1", "1_000",
        ] {
            assert!(
                matches!(usd_to_atomic(bad, 6), Err(PriceError::Syntax(_))),
                "{bad:?} should be a syntax error, got {:?}",
                usd_to_atomic(bad, 6)
            );
        }
        assert!(matches!(
            usd_to_atomic(&"9".repeat(61), 6),
            Err(PriceError::TooLong(_))
        ));
        assert_eq!(usd_to_atomic("1", 37), Err(PriceError::Decimals(37)));
    }

    #[test]
    fn converts_atomic_to_usd() {
        let ok = [
            ("5000", 6, "0.005"),
            ("10000", 6, "0.01"),
            ("1000000", 6, "1"),
            ("12500000", 6, "12.5"),
            ("1", 6, "0.000001"),
            ("0", 6, "0"),
            ("000", 6, "0"),
            ("0005000", 6, "0.005"),
            ("7", 0, "7"),
        ];
        for (atomic, d, want) in ok {
            assert_eq!(
                atomic_to_usd(atomic, d).as_deref(),
                Ok(want),
                "{atomic} with {d}"
            );
        }
        for bad in ["", "-1", "1.5", "abc", " 1"] {
            assert!(
                matches!(atomic_to_usd(bad, 6), Err(PriceError::Atomic(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn round_trips() {
        for usd in ["0.005", "0.01", "1", "3.141592", "1000000"] {
            let atomic = usd_to_atomic(usd, 6).unwrap();
            assert_eq!(atomic_to_usd(&atomic, 6).unwrap(), usd);
        }
    }
}
