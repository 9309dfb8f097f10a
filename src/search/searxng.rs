//! SearXNG's search API (self-hostable, no key): `GET {base}/search?q=…&format=json`.
//! Parameters used: `q`, `format=json` (the instance must enable the json format, or it
//! answers 403), `pageno=1`, `language` (`en`, `en-US`), `time_range` (`day`, `month`,
//! `year` — the values the API documents; there is no week and no country). Results are
//! `results[]` with `url`, `title` and `content`; SearXNG cannot limit the count, so the first
//! n are kept. An empty answer whose engines all failed (`unresponsive_engines`) is a provider
//! failure, not "no results".

use http::{HeaderMap, HeaderValue, Method};
use serde_json::Value;
use url::Url;

use super::{endpoint, hit, json_body, Freshness, Hit, Provider, ProviderRequest, Query};

pub struct Searxng {
    base: Url,
}

impl Searxng {
    pub fn new(base: Url) -> Searxng {
        Searxng { base }
    }
}

impl Provider for Searxng {
    fn name(&self) -> &'static str {
        "searxng"
    }

    fn check(&self, query: &Query) -> Result<(), String> {
        if query.country.is_some() {
            return Err(
                "the search provider searxng does not support `country`; use `lang` (e.g. en-US) instead"
                    .into(),
            );
        }
        if query.freshness == Some(Freshness::Week) {
            return Err(
                "the search provider searxng does not support freshness `week`; use day, month or year"
                    .into(),
            );
        }
        Ok(())
    }

    fn configured(&self) -> Result<(), String> {
        Ok(())
    }

    fn request(&self, query: &Query) -> ProviderRequest {
        let mut url = endpoint(&self.base, "search");
        {
            let mut qp = url.query_pairs_mut();
            qp.append_pair("q", &query.q);
            qp.append_pair("format", "json");
            qp.append_pair("pageno", "1");
            if let Some(l) = &query.lang {
                qp.append_pair("language", l);
            }
            if let Some(f) = query.freshness {
                qp.append_pair("time_range", f.as_str());
            }
        }
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        ProviderRequest {
            method: Method::GET,
            url,
            headers,
            body: None,
        }
    }

    fn parse(&self, body: &[u8]) -> Result<Vec<Hit>, String> {
        let v = json_body("searxng", body)?;
        let Some(results) = v.get("results").and_then(Value::as_array) else {
            return Err("searxng sent an answer without a results list".into());
        };
        let hits: Vec<Hit> = results
            .iter()
            .filter_map(|r| {
                hit(
                    r.get("url").and_then(Value::as_str),
                    r.get("title").and_then(Value::as_str),
                    r.get("content").and_then(Value::as_str),
                )
            })
            .collect();
        if hits.is_empty() {
            let failed: Vec<String> = v
                .get("unresponsive_engines")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|e| match e {
                            Value::Array(pair) => {
                                let name = pair.first().and_then(Value::as_str)?;
                                let why = pair.get(1).and_then(Value::as_str).unwrap_or("");
                                Some(format!("{name}: {why}"))
                            }
                            Value::String(s) => Some(s.clone()),
                            _ => None,
                        })
                        .collect()
                })
                .unwrap_or_default();
            if !failed.is_empty() {
                let list: String = failed.join(", ").chars().take(200).collect();
                return Err(format!("its engines did not respond ({list})"));
            }
        }
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sx() -> Searxng {
        Searxng::new(Url::parse("http://searx.internal:8080/").unwrap())
    }

    fn q() -> Query {
        Query {
            q: "weather".into(),
            n: 2,
            country: None,
            lang: Some("en-US".into()),
            freshness: Some(Freshness::Month),
        }
    }

    #[test]
    fn request_shape_and_options() {
        let r = sx().request(&q());
        assert_eq!(
            r.url.as_str(),
            "http://searx.internal:8080/search?q=weather&format=json&pageno=1&language=en-US&time_range=month"
        );
        assert!(sx().check(&q()).is_ok());
        let mut c = q();
        c.country = Some("us".into());
        assert!(sx().check(&c).unwrap_err().contains("searxng"));
        let mut w = q();
        w.freshness = Some(Freshness::Week);
        assert!(sx().check(&w).unwrap_err().contains("week"));
        assert!(sx().configured().is_ok());
    }

    #[test]
    fn parses_results_and_engine_failures() {
        let body = br#"{"query":"weather","number_of_results":0,"results":[
            {"url":"https://w.example/","title":"W","content":"sunny","engine":"duckduckgo","engines":["duckduckgo"],"score":1.0,"category":"general"}],
            "answers":[],"corrections":[],"infoboxes":[],"suggestions":[],"unresponsive_engines":[]}"#;
        let hits = sx().parse(body).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].snippet, "sunny");
        let none = br#"{"query":"zzz","results":[],"unresponsive_engines":[]}"#;
        assert!(sx().parse(none).unwrap().is_empty());
        let broken =
            br#"{"query":"zzz","results":[],"unresponsive_engines":[["google","timeout"]]}"#;
        assert!(sx().parse(broken).unwrap_err().contains("google: timeout"));
    }
}
