//! Technical indicators over closing prices, oldest first. Pure functions; each returns None
//! when the series is too short for the indicator to be defined.
//!
//! - RSI (Wilder): the first average gain/loss is the simple mean of the first `n` changes,
//!   then `avg = (avg × (n − 1) + current) / n`; RSI = 100 − 100 / (1 + avgGain / avgLoss)
//!   (100 when there were no losses, 50 when nothing moved).
//! - EMA: α = 2 / (n + 1), seeded with the simple mean of the first `n` values.
//! - MACD(fast, slow, signal): line = EMA(fast) − EMA(slow) from the slow EMA's first value on;
//!   signal = EMA(signal) of the line (seeded with the line's first `signal` values);
//!   histogram = line − signal.
//! - Bollinger(n, k): middle = simple mean of the last `n` closes, σ the population standard
//!   deviation of those closes, upper/lower = middle ± kσ; %B = (close − lower) / (upper − lower);
//!   bandwidth = (upper − lower) / middle.

/// Wilder's RSI of the whole series (the value at its last close).
pub fn rsi_wilder(closes: &[f64], n: usize) -> Option<f64> {
    if n == 0 || closes.len() < n + 1 {
        return None;
    }
    let change = |i: usize| closes[i] - closes[i - 1];
    let (mut gain, mut loss) = (0.0, 0.0);
    for i in 1..=n {
        let c = change(i);
        if c > 0.0 {
            gain += c;
        } else {
            loss -= c;
        }
    }
    gain /= n as f64;
    loss /= n as f64;
    let nf = n as f64;
    for i in n + 1..closes.len() {
        let c = change(i);
        gain = (gain * (nf - 1.0) + c.max(0.0)) / nf;
        loss = (loss * (nf - 1.0) + (-c).max(0.0)) / nf;
    }
    Some(if loss == 0.0 {
        if gain == 0.0 {
            50.0
        } else {
            100.0
        }
    } else {
        100.0 - 100.0 / (1.0 + gain / loss)
    })
}

/// EMA series: element `i` is the EMA at `values[i + n − 1]` (len = values.len() − n + 1).
pub fn ema_series(values: &[f64], n: usize) -> Vec<f64> {
    if n == 0 || values.len() < n {
        return Vec::new();
    }
    let alpha = 2.0 / (n as f64 + 1.0);
    let mut out = Vec::with_capacity(values.len() - n + 1);
    let mut e = values[..n].iter().sum::<f64>() / n as f64;
    out.push(e);
    for v in &values[n..] {
        e = alpha * v + (1.0 - alpha) * e;
        out.push(e);
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Macd {
    pub line: f64,
    pub signal: f64,
    pub histogram: f64,
    /// The histogram one candle earlier (widening or narrowing); None on the first signal value.
    pub prev_histogram: Option<f64>,
}

pub fn macd(closes: &[f64], fast: usize, slow: usize, signal: usize) -> Option<Macd> {
    if fast == 0 || signal == 0 || fast >= slow || closes.len() + 1 < slow + signal {
        return None;
    }
    let f = ema_series(closes, fast);
    let s = ema_series(closes, slow);
    // Align: s[j] is at closes[j + slow − 1]; f at index j + slow − fast.
    let line: Vec<f64> = s
        .iter()
        .enumerate()
        .map(|(j, sv)| f[j + slow - fast] - sv)
        .collect();
    let sig = ema_series(&line, signal);
    let k = sig.len();
    let last = *line.last()?;
    Some(Macd {
        line: last,
        signal: sig[k - 1],
        histogram: last - sig[k - 1],
        prev_histogram: (k >= 2).then(|| line[line.len() - 2] - sig[k - 2]),
    })
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bollinger {
    pub upper: f64,
    pub middle: f64,
    pub lower: f64,
    pub percent_b: f64,
    pub bandwidth: f64,
}

pub fn bollinger(closes: &[f64], n: usize, k: f64) -> Option<Bollinger> {
    if n == 0 || closes.len() < n {
        return None;
    }
    let w = &closes[closes.len() - n..];
    let mean = w.iter().sum::<f64>() / n as f64;
    let var = w.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
    let sd = var.sqrt();
    let upper = mean + k * sd;
    let lower = mean - k * sd;
    let last = closes[closes.len() - 1];
    let width = upper - lower;
    Some(Bollinger {
        upper,
        middle: mean,
        lower,
        percent_b: if width > 0.0 {
            (last - lower) / width
        } else {
            0.5
        },
        bandwidth: if mean != 0.0 { width / mean } else { 0.0 },
    })
}

#[cfg(test)]
mod tests {
    //! Expected values and how they were obtained:
    //! - RSI: the 33-close worked example of StockCharts' "Relative Strength Index (RSI)"
    //!   ChartSchool article (Wilder smoothing); its published RSI values are 70.53 at the 15th
    //!   close, 66.32 at the 16th and 37.77 at the last. That spreadsheet rounds its
    //!   intermediate averages to two decimals, so it agrees only to about 0.1. The exact values
    //!   come from an independent Python implementation (scripts/indicator_reference.py, plain
    //!   float arithmetic from the textbook definitions, written separately from this file):
    //!   70.46413502109705, 66.24961855355505, 37.788771982057824.
    //! - MACD and Bollinger on a straight line 1, 2, …, N: analytically, an SMA-seeded EMA(n)
    //!   of a line with slope 1 lags it by exactly (n − 1) / 2, so MACD(12,26,9) = 12.5 − 5.5 = 7
    //!   everywhere, the signal is 7 and the histogram 0; twenty consecutive integers have
    //!   mean = last − 9.5 and population σ = √((20² − 1) / 12) = √33.25.
    //! - RSI, MACD and Bollinger on WAVE (100 + 10 sin(i / 5) + 0.3 i, i = 0..59): the Python
    //!   reference above.
    use super::*;

    const STOCKCHARTS: [f64; 33] = [
        44.34, 44.09, 44.15, 43.61, 44.33, 44.83, 45.10, 45.42, 45.84, 46.08, 45.89, 46.03, 45.61,
        46.28, 46.28, 46.00, 46.03, 46.41, 46.22, 45.64, 46.21, 46.25, 45.71, 46.45, 45.78, 45.35,
        44.03, 44.18, 44.22, 44.57, 43.42, 42.66, 43.13,
    ];

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn rsi_matches_the_published_wilder_example() {
        let r15 = rsi_wilder(&STOCKCHARTS[..15], 14).unwrap();
        assert!(close(r15, 70.53, 0.1), "{r15}");
        assert!(close(r15, 70.46413502109705, 1e-9), "{r15}");
        let r16 = rsi_wilder(&STOCKCHARTS[..16], 14).unwrap();
        assert!(close(r16, 66.32, 0.1), "{r16}");
        assert!(close(r16, 66.24961855355505, 1e-9), "{r16}");
        let last = rsi_wilder(&STOCKCHARTS, 14).unwrap();
        assert!(close(last, 37.77, 0.1), "{last}");
        assert!(close(last, 37.788771982057824, 1e-9), "{last}");
        assert_eq!(rsi_wilder(&STOCKCHARTS[..14], 14), None);
    }

    #[test]
    fn rsi_edges() {
        assert_eq!(rsi_wilder(&[1.0; 20], 14), Some(50.0));
        let up: Vec<f64> = (0..20).map(f64::from).collect();
        assert_eq!(rsi_wilder(&up, 14), Some(100.0));
        let down: Vec<f64> = (0..20).rev().map(f64::from).collect();
        assert_eq!(rsi_wilder(&down, 14), Some(0.0));
    }

    #[test]
    fn macd_and_bollinger_on_a_line() {
        let line: Vec<f64> = (1..=60).map(f64::from).collect();
        let m = macd(&line, 12, 26, 9).unwrap();
        assert!(close(m.line, 7.0, 1e-9), "{m:?}");
        assert!(close(m.signal, 7.0, 1e-9), "{m:?}");
        assert!(close(m.histogram, 0.0, 1e-9), "{m:?}");
        let b = bollinger(&line, 20, 2.0).unwrap();
        assert!(close(b.middle, 50.5, 1e-12));
        let sd = 33.25f64.sqrt();
        assert!(close(b.upper, 50.5 + 2.0 * sd, 1e-9));
        assert!(close(b.lower, 50.5 - 2.0 * sd, 1e-9));
        // last close 60: (60 − lower) / (4σ)
        assert!(close(
            b.percent_b,
            (60.0 - (50.5 - 2.0 * sd)) / (4.0 * sd),
            1e-12
        ));
        assert!(macd(&line[..34], 12, 26, 9).is_some());
        assert!(macd(&line[..33], 12, 26, 9).is_none());
        assert!(bollinger(&line[..19], 20, 2.0).is_none());
    }

    #[test]
    fn macd_and_bollinger_match_the_python_reference() {
        let wave: Vec<f64> = (0..60)
            .map(|i| 100.0 + 10.0 * (i as f64 / 5.0).sin() + 0.3 * i as f64)
            .collect();
        let r = rsi_wilder(&wave, 14).unwrap();
        assert!(close(r, 51.35917226541755, 1e-9), "{r}");
        let m = macd(&wave, 12, 26, 9).unwrap();
        assert!(close(m.line, MACD_PY.0, 1e-9), "{m:?}");
        assert!(close(m.signal, MACD_PY.1, 1e-9), "{m:?}");
        assert!(close(m.histogram, MACD_PY.2, 1e-9), "{m:?}");
        let b = bollinger(&wave, 20, 2.0).unwrap();
        assert!(close(b.upper, BOLL_PY.0, 1e-9), "{b:?}");
        assert!(close(b.middle, BOLL_PY.1, 1e-9), "{b:?}");
        assert!(close(b.lower, BOLL_PY.2, 1e-9), "{b:?}");
        assert!(close(b.percent_b, BOLL_PY.3, 1e-9), "{b:?}");
        assert!(close(b.bandwidth, BOLL_PY.4, 1e-9), "{b:?}");
    }

    // Printed by scripts/indicator_reference.py for WAVE.
    const MACD_PY: (f64, f64, f64) = (
        -1.1491258002188687,
        -0.6309636012503513,
        -0.5181621989685173,
    );
    const BOLL_PY: (f64, f64, f64, f64, f64) = (
        123.89463630613166,
        112.76634792805866,
        101.63805954998567,
        0.4100670872362632,
        0.1973689594908667,
    );
}
