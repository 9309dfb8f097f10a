//! USD decimal strings ↔ atomic token amounts, exactly (placeholder; replaced by the x402 branch).

pub fn usd_to_atomic(usd: &str, decimals: u32) -> Result<String, String> {
    let s = usd.trim().trim_start_matches('$');
    let (i, f) = s.split_once('.').unwrap_or((s, ""));
    if i.is_empty() && f.is_empty()
        || !i.chars().all(|c| c.is_ascii_digit())
        || !f.chars().all(|c| c.is_ascii_digit())
    {
        return Err("not a decimal".into());
    }
    let f = f.trim_end_matches('0');
    if f.len() > decimals as usize {
        return Err("more precision than the asset has".into());
    }
    let mut digits = format!("{i}{f}{}", "0".repeat(decimals as usize - f.len()));
    digits = digits.trim_start_matches('0').to_string();
    Ok(if digits.is_empty() {
        "0".into()
    } else {
        digits
    })
}
