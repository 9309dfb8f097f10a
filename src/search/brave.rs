//! Brave Search API, web search: `GET {base}/res/v1/web/search` with the key in
//! `X-Subscription-Token`. Parameters used: `q`, `count`, `country` (2-letter, upper case),
//! `search_lang` (`en`, `pt-br`), `freshness` (`pd`, `pw`, `pm`, `py`), `text_decorations=false`
//! (plain snippets), `result_filter=web`. Results are `web.results[]` with `url`, `title` and
//! `description`; an answer without `web` has no web results.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method};
use url::Url;

use super::{endpoint, hit, json_body, Freshness, Hit, Provider, ProviderRequest, Query};

pub struct Brave {
    base: Url,
    key: Option<String>,
    key_source: String,
}

impl Brave {
    pub fn new(base: Url, key: Option<String>, key_source: String) -> Brave {
        Brave {
            base,
            key: key.map(|k| k.trim().to_string()).filter(|k| !k.is_empty()),
            key_source,
        }
    }
}

/// Brave's `search_lang` codes are lower case (`en`, `en-gb`, `pt-br`, `zh-hans`) and use `jp`
/// for Japanese.
fn search_lang(lang: &str) -> String {
    let l = lang.to_ascii_lowercase();
    match l.as_str() {
        "ja" => "jp".into(),
        "zh-cn" => "zh-hans".into(),
        "zh-tw" | "zh-hk" => "zh-hant".into(),
        _ => l,
    }
}

impl Provider for Brave {
    fn name(&self) -> &'static str {
        "brave"
    }

    fn check(&self, _query: &Query) -> Result<(), String> {
        // country, lang and every freshness value map onto Brave parameters.
        Ok(())
    }

    fn configured(&self) -> Result<(), String> {
        super::key_configured(self.key.as_deref(), &self.key_source)
    }

    fn request(&self, query: &Query) -> ProviderRequest {
        let mut url = endpoint(&self.base, "res/v1/web/search");
        {
            let mut qp = url.query_pairs_mut();
            qp.append_pair("q", &query.q);
            qp.append_pair("count", &query.n.to_string());
            qp.append_pair("text_decorations", "false");
            qp.append_pair("result_filter", "web");
            if let Some(c) = &query.country {
                qp.append_pair("country", &c.to_ascii_uppercase());
            }
            if let Some(l) = &query.lang {
                qp.append_pair("search_lang", &search_lang(l));
            }
            if let Some(f) = query.freshness {
                qp.append_pair(
                    "freshness",
                    match f {
                        Freshness::Day => "pd",
                        Freshness::Week => "pw",
                        Freshness::Month => "pm",
                        Freshness::Year => "py",
                    },
                );
            }
        }
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        if let Some(Ok(v)) = self.key.as_deref().map(HeaderValue::from_str) {
            headers.insert("x-subscription-token", v);
        }
        ProviderRequest {
            method: Method::GET,
            url,
            headers,
            body: None::<Bytes>,
        }
    }

    fn parse(&self, body: &[u8]) -> Result<Vec<Hit>, String> {
        let v = json_body("brave", body)?;
        if !v.is_object() {
            return Err("brave sent an unexpected answer".into());
        }
        let Some(results) = v.pointer("/web/results") else {
            return Ok(Vec::new());
        };
        let Some(results) = results.as_array() else {
            return Err("brave sent web.results that is not a list".into());
        };
        Ok(results
            .iter()
            .filter_map(|r| {
                hit(
                    r.get("url").and_then(|x| x.as_str()),
                    r.get("title").and_then(|x| x.as_str()),
                    r.get("description").and_then(|x| x.as_str()),
                )
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brave(key: Option<&str>) -> Brave {
        Brave::new(
            Url::parse("https://api.search.brave.com").unwrap(),
            key.map(str::to_string),
            "BRAVE_API_KEY".into(),
        )
    }

    #[test]
    fn request_shape() {
        let q = Query {
            q: "x402 protocol".into(),
            n: 3,
            country: Some("de".into()),
            lang: Some("EN".into()),
            freshness: Some(Freshness::Week),
        };
        let r = brave(Some("k1")).request(&q);
        assert_eq!(r.method, Method::GET);
        assert_eq!(
            r.url.as_str(),
            "https://api.search.brave.com/res/v1/web/search?q=x402+protocol&count=3&text_decorations=false&result_filter=web&country=DE&search_lang=en&freshness=pw"
        );
        assert_eq!(r.headers["x-subscription-token"], "k1");
        assert_eq!(r.headers["accept"], "application/json");
        assert_eq!(search_lang("ja"), "jp");
        assert_eq!(search_lang("pt-BR"), "pt-br");
        assert_eq!(search_lang("zh-TW"), "zh-hant");
    }

    #[test]
    fn unconfigured_without_key() {
        assert_eq!(
            brave(None).configured().unwrap_err(),
            "BRAVE_API_KEY is not set"
        );
        assert!(brave(Some(" ")).configured().is_err());
        assert!(brave(Some("a\u{7f}b")).configured().is_err());
        let trimmed = brave(Some("k2\n"));
        assert!(trimmed.configured().is_ok());
        let q = Query {
            q: "x".into(),
            n: 1,
            country: None,
            lang: None,
            freshness: None,
        };
        assert_eq!(trimmed.request(&q).headers["x-subscription-token"], "k2");
        assert!(brave(Some("k")).configured().is_ok());
    }

    #[test]
    fn parses_web_results() {
        let body = br#"{"type":"search","query":{"original":"q"},"web":{"type":"search","results":[
            {"title":"One <strong>x</strong>","url":"https://a.example/1","description":"first &amp; best","type":"search_result"},
            {"title":"No url"},
            {"title":"Two","url":"https://b.example/2","description":"second"}]}}"#;
        let hits = brave(Some("k")).parse(body).unwrap();
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].title, "One x");
        assert_eq!(hits[0].snippet, "first & best");
        assert_eq!(hits[1].url, "https://b.example/2");
        assert!(brave(Some("k"))
            .parse(br#"{"type":"search","query":{"original":"q"}}"#)
            .unwrap()
            .is_empty());
        assert!(brave(Some("k")).parse(b"<html>").is_err());
    }
}
