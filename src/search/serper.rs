//! Serper (Google results): `POST {base}/search` with a JSON body and the key in `X-API-KEY`.
//! Body fields used: `q`, `num`, `gl` (country, lower case), `hl` (language), `tbs`
//! (`qdr:d`, `qdr:w`, `qdr:m`, `qdr:y` for freshness). Results are `organic[]` with `link`,
//! `title` and `snippet`; an answer without `organic` has no results.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method};
use serde_json::{json, Map, Value};
use url::Url;

use super::{endpoint, hit, json_body, Freshness, Hit, Provider, ProviderRequest, Query};

pub struct Serper {
    base: Url,
    key: Option<String>,
    key_source: String,
}

impl Serper {
    pub fn new(base: Url, key: Option<String>, key_source: String) -> Serper {
        Serper {
            base,
            key: key.map(|k| k.trim().to_string()).filter(|k| !k.is_empty()),
            key_source,
        }
    }
}

impl Provider for Serper {
    fn name(&self) -> &'static str {
        "serper"
    }

    fn check(&self, _query: &Query) -> Result<(), String> {
        // gl, hl and tbs cover country, lang and every freshness value.
        Ok(())
    }

    fn configured(&self) -> Result<(), String> {
        super::key_configured(self.key.as_deref(), &self.key_source)
    }

    fn request(&self, query: &Query) -> ProviderRequest {
        let mut body = Map::new();
        body.insert("q".into(), json!(query.q));
        body.insert("num".into(), json!(query.n));
        if let Some(c) = &query.country {
            body.insert("gl".into(), json!(c.to_ascii_lowercase()));
        }
        if let Some(l) = &query.lang {
            body.insert("hl".into(), json!(l));
        }
        if let Some(f) = query.freshness {
            let tbs = match f {
                Freshness::Day => "qdr:d",
                Freshness::Week => "qdr:w",
                Freshness::Month => "qdr:m",
                Freshness::Year => "qdr:y",
            };
            body.insert("tbs".into(), json!(tbs));
        }
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            http::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        if let Some(Ok(v)) = self.key.as_deref().map(HeaderValue::from_str) {
            headers.insert("x-api-key", v);
        }
        ProviderRequest {
            method: Method::POST,
            url: endpoint(&self.base, "search"),
            headers,
            body: Some(Bytes::from(Value::Object(body).to_string())),
        }
    }

    fn parse(&self, body: &[u8]) -> Result<Vec<Hit>, String> {
        let v = json_body("serper", body)?;
        if !v.is_object() {
            return Err("serper sent an unexpected answer".into());
        }
        let Some(organic) = v.get("organic") else {
            return Ok(Vec::new());
        };
        let Some(organic) = organic.as_array() else {
            return Err("serper sent organic results that are not a list".into());
        };
        let mut hits: Vec<(i64, Hit)> = organic
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let pos = r
                    .get("position")
                    .and_then(Value::as_i64)
                    .unwrap_or(i as i64 + 1);
                hit(
                    r.get("link").and_then(Value::as_str),
                    r.get("title").and_then(Value::as_str),
                    r.get("snippet").and_then(Value::as_str),
                )
                .map(|h| (pos, h))
            })
            .collect();
        hits.sort_by_key(|(pos, _)| *pos);
        Ok(hits.into_iter().map(|(_, h)| h).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serper() -> Serper {
        Serper::new(
            Url::parse("https://google.serper.dev").unwrap(),
            Some("sk".into()),
            "SERPER_API_KEY".into(),
        )
    }

    #[test]
    fn request_shape() {
        let q = Query {
            q: "rust async".into(),
            n: 5,
            country: Some("GB".into()),
            lang: Some("en".into()),
            freshness: Some(Freshness::Day),
        };
        let r = serper().request(&q);
        assert_eq!(r.method, Method::POST);
        assert_eq!(r.url.as_str(), "https://google.serper.dev/search");
        assert_eq!(r.headers["x-api-key"], "sk");
        let body: Value = serde_json::from_slice(r.body.as_ref().unwrap()).unwrap();
        assert_eq!(
            body,
            json!({"q": "rust async", "num": 5, "gl": "gb", "hl": "en", "tbs": "qdr:d"})
        );
    }

    #[test]
    fn parses_organic_in_position_order() {
        let body = br#"{"searchParameters":{"q":"x","type":"search","engine":"google"},
            "organic":[{"title":"B","link":"https://b.example/","snippet":"b","position":2},
                       {"title":"A","link":"https://a.example/","snippet":"a","position":1}],
            "relatedSearches":[]}"#;
        let hits = serper().parse(body).unwrap();
        assert_eq!(hits[0].url, "https://a.example/");
        assert_eq!(hits[1].title, "B");
        assert!(serper()
            .parse(br#"{"searchParameters":{"q":"x"}}"#)
            .unwrap()
            .is_empty());
    }
}
