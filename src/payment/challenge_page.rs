//! The 402 a person sees: a paid route opened in a browser (`Accept` prefers `text/html`, no
//! payment) gets a small HTML page — what the route does, its inputs, its price on each network,
//! how an agent pays, a link to the free demo — with the same status and the same
//! `PAYMENT-REQUIRED` header as the JSON 402. Agents and scripts (JSON, `*/*`, no `Accept`) keep
//! the JSON 402 byte for byte: the page is chosen only when HTML is preferred over JSON.
//!
//! The route's facts are gathered once at startup ([`ChallengePage::for_route`]); the page is
//! rendered from them and the offers of the JSON 402 it stands for, and kept until the offers
//! change (a Solana feePayer appearing, a network left out), so a browser's 402 costs a header
//! comparison. Everything from routes.yaml or the challenge is HTML-escaped; the page has no
//! script, and its Content-Security-Policy allows none.

use std::sync::RwLock;

use http::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};
use serde_json::Value;

use crate::config::{Config, RouteSpec};
use crate::pipeline::Reply;

use super::gate::HEADER_REQUIRED;

const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// What the page says about one route, gathered once from routes.yaml.
#[derive(Debug, Clone)]
pub struct RouteFacts {
    pub path: String,
    pub name: String,
    pub methods: Vec<String>,
    pub summary: String,
    pub description: String,
    pub price_usd: String,
    /// (name, JSON type, required, description)
    pub params: Vec<(String, String, bool, String)>,
    /// `/api/demo/<name>` when the route has a free demo twin.
    pub demo: Option<String>,
    /// What the demo shows, as routes.yaml describes it.
    pub demo_describe: String,
    /// network → (display name, decimals) of `payment.accepts`.
    pub networks: Vec<(String, String, u32)>,
    pub service: String,
}

impl RouteFacts {
    pub fn of(config: &Config, route: &RouteSpec) -> RouteFacts {
        RouteFacts {
            path: route.path.clone(),
            name: route.name.clone(),
            methods: route.methods.iter().map(|m| m.to_string()).collect(),
            summary: route.summary.clone(),
            description: route.description.clone(),
            price_usd: route
                .price
                .as_ref()
                .map(|p| p.usd.clone())
                .unwrap_or_default(),
            params: route
                .input
                .iter()
                .map(|p| {
                    (
                        p.name.clone(),
                        p.ty.json_name().to_string(),
                        p.required,
                        p.description.clone(),
                    )
                })
                .collect(),
            demo: route
                .demo
                .as_ref()
                .map(|_| format!("/api/demo/{}", route.name)),
            demo_describe: route
                .demo
                .as_ref()
                .map(|d| d.describe.clone())
                .unwrap_or_default(),
            networks: config
                .payment
                .accepts
                .iter()
                .map(|a| {
                    (
                        a.network.clone(),
                        network_label(&a.network, &a.name),
                        a.decimals,
                    )
                })
                .collect(),
            service: config.service.name.clone(),
        }
    }
}

/// A route's browser 402, rendered on first use and kept while the challenge stays the same.
pub struct ChallengePage {
    facts: RouteFacts,
    /// The PAYMENT-REQUIRED value the kept page was rendered for, and the page.
    kept: RwLock<Option<(HeaderValue, Reply)>>,
}

impl ChallengePage {
    pub fn for_route(config: &Config, route: &RouteSpec) -> ChallengePage {
        ChallengePage {
            facts: RouteFacts::of(config, route),
            kept: RwLock::new(None),
        }
    }

    /// The browser's form of `json_402` (the gate's plain challenge): same status and headers
    /// (PAYMENT-REQUIRED included), an HTML body.
    pub fn reply(&self, json_402: &Reply) -> Reply {
        let Some(challenge) = json_402.headers.get(HEADER_REQUIRED).cloned() else {
            return json_402.clone();
        };
        if let Some((h, page)) = self.kept.read().ok().as_deref().and_then(Option::as_ref) {
            if *h == challenge {
                return page.clone();
            }
        }
        let offers = json_402
            .body_json()
            .and_then(|b| b.get("accepts").and_then(Value::as_array).cloned())
            .unwrap_or_default();
        let mut page = json_402.clone();
        page.body = render(&self.facts, &offers).into();
        page.headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        page.headers
            .insert("content-security-policy", HeaderValue::from_static(CSP));
        page.headers.insert(
            "x-content-type-options",
            HeaderValue::from_static("nosniff"),
        );
        page.headers
            .insert(http::header::VARY, HeaderValue::from_static("Accept"));
        if let Ok(mut kept) = self.kept.write() {
            *kept = Some((challenge, page.clone()));
        }
        page
    }
}

/// True when the request's `Accept` prefers HTML to JSON: `text/html` (or XHTML) listed with a
/// higher q than `application/json`. Wildcards count for neither, so `*/*`, no `Accept` and
/// `application/json, text/html` (a tie) keep the JSON 402 agents parse.
pub fn wants_html(headers: &HeaderMap) -> bool {
    let mut html = 0.0f32;
    let mut json = 0.0f32;
    for value in headers.get_all(ACCEPT) {
        let Ok(text) = value.to_str() else { continue };
        for item in text.split(',') {
            let mut parts = item.split(';');
            let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .filter_map(|q| q.trim().parse::<f32>().ok())
                .next_back()
                .unwrap_or(1.0)
                .clamp(0.0, 1.0);
            match media.as_str() {
                "text/html" | "application/xhtml+xml" => html = html.max(q),
                "application/json" => json = json.max(q),
                _ => {}
            }
        }
    }
    html > 0.0 && html > json
}

/// "Base" for eip155:8453, "Solana" for Solana mainnet, else the accept's own name.
fn network_label(network: &str, name: &str) -> String {
    match network {
        "eip155:8453" => "Base".into(),
        "eip155:84532" => "Base Sepolia".into(),
        "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" => "Solana".into(),
        "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1" => "Solana devnet".into(),
        _ => {
            let mut c = name.chars();
            match c.next() {
                Some(first) => first.to_uppercase().chain(c).collect(),
                None => network.to_string(),
            }
        }
    }
}

/// `amount` atomic units as a decimal with `decimals` places, trailing zeros dropped:
/// ("20000", 6) → "0.02". None when `amount` is not a plain unsigned integer.
pub fn atomic_to_decimal(amount: &str, decimals: u32) -> Option<String> {
    if amount.is_empty() || !amount.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let d = decimals as usize;
    let digits = amount.trim_start_matches('0');
    let padded = format!("{digits:0>width$}", width = d + 1);
    let (int, frac) = padded.split_at(padded.len() - d);
    let frac = frac.trim_end_matches('0');
    Some(if frac.is_empty() {
        int.to_string()
    } else {
        format!("{int}.{frac}")
    })
}

/// HTML-escapes text for element content and double- or single-quoted attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The page for `facts` and the offers of the challenge (`accepts`, as sent). Pure.
pub fn render(facts: &RouteFacts, offers: &[Value]) -> String {
    let e = escape;
    let price_rows = price_rows(facts, offers);
    let params = params_table(facts);
    let demo = demo_line(facts);
    let methods = facts.methods.join(", ");
    let title = format!("{} — {} — 402 Payment Required", facts.path, facts.service);
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>{title}</title>
<style>
body {{ font: 16px/1.5 system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; color: #1d232a; }}
h1 {{ font-size: 1.4rem; margin-bottom: .2rem; }}
.status {{ color: #8a4b00; font-weight: 600; margin-top: 0; }}
table {{ border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; font-size: .92rem; }}
th, td {{ border: 1px solid #d7dce1; padding: .35rem .5rem; text-align: left; vertical-align: top; }}
th {{ background: #f3f5f7; }}
code {{ font-size: .85rem; overflow-wrap: anywhere; }}
.demo {{ background: #eef7ee; border: 1px solid #b9dcb9; padding: .5rem .75rem; }}
ol li {{ margin-bottom: .3rem; }}
footer {{ margin-top: 2rem; font-size: .85rem; color: #59636e; }}
</style>
</head>
<body>
<h1>{summary}</h1>
<p class="status">402 Payment Required · <code>{methods} {path}</code> · ${price} per call</p>
<p>{description}</p>
{demo}
<h2>Price</h2>
<table><thead><tr><th>Network</th><th>Price</th><th>Paid to</th></tr></thead>
<tbody>
{price_rows}</tbody></table>
<h2>Input</h2>
{params}
<h2>How an agent pays</h2>
<ol>
<li>Call <code>{path}</code> without payment: the answer is this 402, whose <code>PAYMENT-REQUIRED</code> header holds the x402 v2 challenge (base64 JSON; the same JSON is the body for clients that ask for JSON).</li>
<li>Sign one of its <code>accepts</code> with an x402 v2 client (an EIP-3009 USDC authorization on Base, or a Solana transfer): <code>@x402/fetch</code> (TypeScript), <code>x402</code> (Python), <code>x402-reqwest</code> (Rust).</li>
<li>Repeat the same request with the signed payment in the <code>PAYMENT-SIGNATURE</code> header. You are charged only when the call succeeds; the receipt comes back in <code>PAYMENT-RESPONSE</code>.</li>
</ol>
<p>MCP clients call the same route as the paid tool <code>{name}</code> at <a href="/mcp">/mcp</a>, the payment in <code>_meta["x402/payment"]</code>.</p>
<footer>{service} · <a href="/openapi.json">OpenAPI</a> · <a href="/llms.txt">llms.txt</a> · <a href="/.well-known/x402">/.well-known/x402</a></footer>
</body>
</html>
"#,
        title = e(&title),
        summary = e(if facts.summary.is_empty() {
            &facts.path
        } else {
            &facts.summary
        }),
        methods = e(&methods),
        path = e(&facts.path),
        price = e(&facts.price_usd),
        description = e(&facts.description),
        demo = demo,
        price_rows = price_rows,
        params = params,
        name = e(&facts.name),
        service = e(&facts.service),
    )
}

/// One table row per offer: network, price in USDC and atomic units, payee.
fn price_rows(facts: &RouteFacts, offers: &[Value]) -> String {
    let e = escape;
    let mut price_rows = String::new();
    for offer in offers {
        let network = str_of(offer, "network");
        let (label, decimals) = facts
            .networks
            .iter()
            .find(|(n, _, _)| n == network)
            .map(|(_, l, d)| (l.clone(), *d))
            .unwrap_or_else(|| (network.to_string(), 6));
        let amount = str_of(offer, "amount");
        let shown = atomic_to_decimal(amount, decimals)
            .map(|a| format!("{a} USDC"))
            .unwrap_or_else(|| format!("{amount} (atomic units)"));
        price_rows.push_str(&format!(
            "<tr><td>{}<br><code>{}</code></td><td><b>{}</b><br><small>{} atomic units of <code>{}</code></small></td><td><code>{}</code></td></tr>\n",
            e(&label),
            e(network),
            e(&shown),
            e(amount),
            e(str_of(offer, "asset")),
            e(str_of(offer, "payTo")),
        ));
    }
    if price_rows.is_empty() {
        price_rows.push_str(
            "<tr><td colspan=\"3\">No network can be paid right now; try again later.</td></tr>\n",
        );
    }
    price_rows
}

/// The input table, or a line saying there is none.
fn params_table(facts: &RouteFacts) -> String {
    let e = escape;
    let mut param_rows = String::new();
    for (name, ty, required, description) in &facts.params {
        param_rows.push_str(&format!(
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            e(name),
            e(ty),
            if *required { "yes" } else { "no" },
            e(description),
        ));
    }
    if param_rows.is_empty() {
        "<p>No input.</p>".to_string()
    } else {
        format!(
            "<table><thead><tr><th>Input</th><th>Type</th><th>Required</th><th>Meaning</th></tr></thead>\n<tbody>\n{param_rows}</tbody></table>"
        )
    }
}

/// The free sample's link, when the route has one.
fn demo_line(facts: &RouteFacts) -> String {
    let e = escape;
    match &facts.demo {
        Some(url) => format!(
            "<p class=\"demo\">Try it free: <a href=\"{}\">{}</a>{}</p>",
            e(url),
            e(url),
            if facts.demo_describe.is_empty() {
                String::new()
            } else {
                format!(" — {}.", e(&facts.demo_describe))
            }
        ),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(ACCEPT, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn only_a_preference_for_html_gets_the_page() {
        // What browsers send.
        assert!(wants_html(&accept(
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
        )));
        assert!(wants_html(&accept("application/xhtml+xml")));
        assert!(wants_html(&accept("application/json;q=0.5, text/html")));
        // Agents, scripts, curl, the x402 clients.
        assert!(!wants_html(&HeaderMap::new()));
        assert!(!wants_html(&accept("*/*")));
        assert!(!wants_html(&accept("application/json")));
        assert!(!wants_html(&accept("application/json, text/html")));
        assert!(!wants_html(&accept("text/html;q=0.4, application/json")));
        assert!(!wants_html(&accept("text/html;q=0")));
        assert!(!wants_html(&accept("text/*")));
        assert!(!wants_html(&accept("application/json, text/event-stream")));
    }

    #[test]
    fn atomic_amounts_read_as_decimals() {
        assert_eq!(atomic_to_decimal("20000", 6).as_deref(), Some("0.02"));
        assert_eq!(atomic_to_decimal("5000", 6).as_deref(), Some("0.005"));
        assert_eq!(atomic_to_decimal("1000000", 6).as_deref(), Some("1"));
        assert_eq!(atomic_to_decimal("1234567", 6).as_deref(), Some("1.234567"));
        assert_eq!(atomic_to_decimal("0", 6).as_deref(), Some("0"));
        assert_eq!(atomic_to_decimal("7", 0).as_deref(), Some("7"));
        assert_eq!(atomic_to_decimal("", 6), None);
        assert_eq!(atomic_to_decimal("-1", 6), None);
        assert_eq!(atomic_to_decimal("1e6", 6), None);
    }

    fn facts() -> RouteFacts {
        RouteFacts {
            path: "/api/fetch".into(),
            name: "fetch".into(),
            methods: vec!["GET".into()],
            summary: "Public URL to <b>markdown</b>".into(),
            description: "Fetches a page & returns \"markdown\" <script>alert(1)</script>".into(),
            price_usd: "0.02".into(),
            params: vec![(
                "url".into(),
                "string".into(),
                true,
                "Absolute <i>http(s)</i> URL".into(),
            )],
            demo: Some("/api/demo/fetch".into()),
            demo_describe: "the sample page".into(),
            networks: vec![
                ("eip155:8453".into(), "Base".into(), 6),
                (
                    "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp".into(),
                    "Solana".into(),
                    6,
                ),
            ],
            service: "paycall".into(),
        }
    }

    #[test]
    fn the_page_names_price_per_network_demo_and_how_to_pay() {
        let offers = vec![
            json!({"scheme": "exact", "network": "eip155:8453", "amount": "20000",
                   "asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "payTo": "0xabc"}),
            json!({"scheme": "exact", "network": "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
                   "amount": "20000", "asset": "EPjF", "payTo": "FYA2"}),
        ];
        let html = render(&facts(), &offers);
        assert!(
            html.contains("<td>Base<br><code>eip155:8453</code>"),
            "{html}"
        );
        assert!(html.contains("<td>Solana<br>"), "{html}");
        assert_eq!(html.matches("<b>0.02 USDC</b>").count(), 2, "{html}");
        assert!(html.contains("<a href=\"/api/demo/fetch\">"), "{html}");
        assert!(html.contains("PAYMENT-SIGNATURE"));
        assert!(html.contains("$0.02 per call"));
        assert!(html.contains("<code>url</code>"));
    }

    #[test]
    fn everything_from_config_or_challenge_is_escaped() {
        let offers = vec![json!({"network": "eip155:8453\"><script>x()</script>",
                                 "amount": "<img src=x onerror=y()>", "payTo": "'><svg onload=z()>"})];
        let html = render(&facts(), &offers);
        for bad in ["<script>", "<img", "<svg", "<b>markdown</b>", "<i>http"] {
            assert!(!html.contains(bad), "{bad} reached the page:\n{html}");
        }
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("&lt;img src=x onerror=y()&gt; (atomic units)"));
        assert!(html.contains("&#39;&gt;&lt;svg onload=z()&gt;"));
        assert_eq!(
            escape(r#"<a href="x" title='y'>&</a>"#),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
        );
    }

    #[test]
    fn no_payable_network_says_so() {
        let html = render(&facts(), &[]);
        assert!(html.contains("No network can be paid right now"));
    }

    #[test]
    fn the_page_keeps_status_and_challenge_header_and_is_reused_until_it_changes() {
        let page = ChallengePage {
            facts: facts(),
            kept: RwLock::new(None),
        };
        let json_402 = |amount: &str| {
            Reply::json(
                http::StatusCode::PAYMENT_REQUIRED,
                &json!({"x402Version": 2, "accepts": [{"network": "eip155:8453", "amount": amount}]}),
            )
            .with_header(HEADER_REQUIRED, &format!("challenge-{amount}"))
        };
        let a = page.reply(&json_402("20000"));
        assert_eq!(a.status, http::StatusCode::PAYMENT_REQUIRED);
        assert_eq!(a.headers[HEADER_REQUIRED], "challenge-20000");
        assert_eq!(a.headers[CONTENT_TYPE], "text/html; charset=utf-8");
        assert!(String::from_utf8_lossy(&a.body).contains("0.02 USDC"));
        let again = page.reply(&json_402("20000"));
        assert_eq!(again.body, a.body);
        let b = page.reply(&json_402("30000"));
        assert_eq!(b.headers[HEADER_REQUIRED], "challenge-30000");
        assert!(String::from_utf8_lossy(&b.body).contains("0.03 USDC"));
        // A reply that is not a challenge passes through untouched.
        let plain = Reply::json(http::StatusCode::PAYMENT_REQUIRED, &json!({}));
        assert_eq!(page.reply(&plain).body, plain.body);
    }
}
