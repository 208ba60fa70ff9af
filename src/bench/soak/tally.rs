//! What the server says it did, read back after the soak: the samples of `/metrics` (the
//! Prometheus text form, read here with a small parser of just that form: a name, optional
//! `{label="value",...}`, a number) and the audit lines of `--audit DIR`, by request id.
//!
//! Owns: reading those two. Does not own: comparing them with what the clients saw
//! (`checks.rs`).

use super::SoakError;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// One sample: its labels and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// The samples named exactly `name` in exposition `text`.
pub fn samples(text: &str, name: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            let (labels, value) = match rest.strip_prefix('{') {
                Some(r) => {
                    let (labels, after) = split_labels(r)?;
                    (labels, after)
                }
                None if rest.starts_with(' ') => (BTreeMap::new(), rest),
                None => return None,
            };
            let value = value.split_whitespace().next()?.parse().ok()?;
            Some(Sample { labels, value })
        })
        .collect()
}

/// `a="x",b="y"} rest` into the labels and `rest`.
fn split_labels(mut r: &str) -> Option<(BTreeMap<String, String>, &str)> {
    let mut labels = BTreeMap::new();
    loop {
        r = r.trim_start_matches(',');
        if let Some(after) = r.strip_prefix('}') {
            return Some((labels, after));
        }
        let (key, after) = r.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next()? {
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                (i, '"') => break i,
                (_, c) => value.push(c),
            }
        };
        labels.insert(key.to_string(), value);
        r = &after[end + 1..];
    }
}

/// The sum of the samples of `name` whose labels include every one of `with`.
pub fn sum(text: &str, name: &str, with: &[(&str, &str)]) -> f64 {
    samples(text, name)
        .iter()
        .filter(|s| {
            with.iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
        .sum()
}

/// `GET /metrics`.
pub async fn metrics(http: &reqwest::Client, base: &str) -> Result<String, SoakError> {
    let r = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .map_err(SoakError::Http)?;
    r.text().await.map_err(SoakError::Http)
}

/// Requests replica `replica` has finished so far (its end-to-end latency observations).
pub async fn replica_requests(
    http: &reqwest::Client,
    base: &str,
    replica: &str,
) -> Result<f64, SoakError> {
    let text = metrics(http, base).await?;
    Ok(sum(
        &text,
        "lilypad:e2e_request_latency_seconds_count",
        &[("replica", replica)],
    ))
}

/// `lilypad:requests_total` by endpoint and code, all keys together.
pub fn counted(text: &str) -> BTreeMap<(String, u16), u64> {
    let mut by = BTreeMap::new();
    for s in samples(text, "lilypad:requests_total") {
        let endpoint = s.labels.get("endpoint").cloned().unwrap_or_default();
        let code = s
            .labels
            .get("code")
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        *by.entry((endpoint, code)).or_insert(0) += s.value as u64;
    }
    by
}

/// One audit line, as far as the soak reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub endpoint: String,
    pub status: u16,
}

/// Every audit line in `dir`'s files, by request id.
pub fn audited(dir: &Path) -> Result<HashMap<String, Vec<Line>>, SoakError> {
    let io = |source| SoakError::Io {
        what: "reading the audit directory",
        source,
    };
    let mut by: HashMap<String, Vec<Line>> = HashMap::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        for text in std::fs::read_to_string(&path).map_err(io)?.lines() {
            let v: serde_json::Value = serde_json::from_str(text).map_err(|e| SoakError::Io {
                what: "reading an audit line",
                source: std::io::Error::other(format!("{e}: {text}")),
            })?;
            let id = v["request_id"].as_str().unwrap_or("").to_string();
            by.entry(id).or_default().push(Line {
                endpoint: v["endpoint"].as_str().unwrap_or("").to_string(),
                status: v["status"].as_u64().unwrap_or(0) as u16,
            });
        }
    }
    Ok(by)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_samples_with_and_without_labels() {
        let text = "# TYPE lilypad:requests counter\n\
            lilypad:requests_total{model_name=\"m\",key_id=\"a\",endpoint=\"chat_completions\",code=\"200\"} 7\n\
            lilypad:requests_total{model_name=\"m\",key_id=\"b\",endpoint=\"chat_completions\",code=\"200\"} 3\n\
            lilypad:requests_total{model_name=\"q\\\"x\",key_id=\"b\",endpoint=\"tokenize\",code=\"401\"} 1\n\
            lilypad:requests_totalx 5\n\
            lilypad:up 1\n# EOF\n";
        let by = counted(text);
        assert_eq!(by[&("chat_completions".to_string(), 200)], 10);
        assert_eq!(by[&("tokenize".to_string(), 401)], 1);
        assert_eq!(by.len(), 2);
        assert_eq!(sum(text, "lilypad:up", &[]), 1.0);
        let odd = samples(text, "lilypad:requests_total");
        assert_eq!(odd[2].labels["model_name"], "q\"x");
    }
}
