//! The Hub's HTTP API, as `huggingface_hub` calls it: `GET api/models/REPO/revision/REV` for
//! the commit and the file list, `HEAD REPO/resolve/REV/FILE` for a file's metadata
//! (`X-Repo-Commit`, `X-Linked-Etag`, `X-Linked-Size`, `Location`; only relative redirects
//! followed), and errors from `X-Error-Code` and `X-Error-Message`. Owns the requests and the
//! mapping of answers to [`HubError`]; does not write files.

use super::{HubError, HubSettings};
use reqwest::header::{HeaderMap, AUTHORIZATION, CONTENT_LENGTH, ETAG, LOCATION};
use reqwest::StatusCode;

pub(crate) const X_REPO_COMMIT: &str = "X-Repo-Commit";
pub(crate) const X_LINKED_ETAG: &str = "X-Linked-Etag";
pub(crate) const X_LINKED_SIZE: &str = "X-Linked-Size";
pub(crate) const X_ERROR_CODE: &str = "X-Error-Code";
pub(crate) const X_ERROR_MESSAGE: &str = "X-Error-Message";

/// A client for one endpoint, with the token if there is one.
pub(crate) struct Api {
    pub(crate) endpoint: String,
    token: Option<String>,
    /// Follows no redirect (metadata requests read the redirect's own headers).
    head: reqwest::Client,
    /// Follows redirects (downloads go to wherever the Hub sends them).
    pub(crate) get: reqwest::Client,
}

/// What `revision` names in a repository.
pub(crate) struct RepoInfo {
    pub(crate) commit: String,
    pub(crate) files: Vec<String>,
}

/// A file's metadata from the resolve endpoint.
pub(crate) struct FileMeta {
    pub(crate) etag: String,
    /// `X-Repo-Commit`: the commit the file was resolved at.
    pub(crate) commit: Option<String>,
    pub(crate) size: Option<u64>,
    /// Where to download it from.
    pub(crate) location: String,
}

/// Which request failed, for naming the error kind.
pub(crate) struct Context<'a> {
    pub(crate) repo: &'a str,
    pub(crate) revision: &'a str,
    pub(crate) file: Option<&'a str>,
}

/// Percent-encode a path segment as Python's `quote(s, safe="")` would.
fn quote(s: &str, keep_slash: bool) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) || (keep_slash && b == b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Api {
    pub(crate) fn new(settings: &HubSettings) -> Result<Self, HubError> {
        let agent = concat!("lilypad/", env!("CARGO_PKG_VERSION"));
        let head = reqwest::Client::builder()
            .user_agent(agent)
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(HubError::Client)?;
        let get = reqwest::Client::builder()
            .user_agent(agent)
            .connect_timeout(std::time::Duration::from_secs(30))
            .read_timeout(std::time::Duration::from_secs(60))
            .build()
            .map_err(HubError::Client)?;
        Ok(Self {
            endpoint: settings.endpoint().to_string(),
            token: settings.token(),
            head,
            get,
        })
    }

    pub(crate) fn auth(&self, rb: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(t) => rb.header(AUTHORIZATION, format!("Bearer {t}")),
            None => rb,
        }
    }

    /// The commit `revision` names and the repository's files there.
    pub(crate) async fn info(&self, repo: &str, revision: &str) -> Result<RepoInfo, HubError> {
        let url = format!(
            "{}/api/models/{repo}/revision/{}",
            self.endpoint,
            quote(revision, false)
        );
        let resp = self
            .auth(self.get.get(&url))
            .send()
            .await
            .map_err(|source| HubError::Http {
                url: url.clone(),
                source,
            })?;
        let cx = Context {
            repo,
            revision,
            file: None,
        };
        check(&url, resp.status(), resp.headers(), &cx, &self.endpoint)?;
        let body = resp.bytes().await.map_err(|source| HubError::Http {
            url: url.clone(),
            source,
        })?;
        #[derive(serde::Deserialize)]
        struct Sibling {
            rfilename: String,
        }
        #[derive(serde::Deserialize)]
        struct Info {
            sha: String,
            #[serde(default)]
            siblings: Vec<Sibling>,
        }
        let info: Info =
            serde_json::from_slice(&body).map_err(|source| HubError::Json { url, source })?;
        Ok(RepoInfo {
            commit: info.sha,
            files: info.siblings.into_iter().map(|s| s.rfilename).collect(),
        })
    }

    /// The metadata of `file` at `revision`, following relative redirects only.
    pub(crate) async fn meta(
        &self,
        repo: &str,
        revision: &str,
        file: &str,
    ) -> Result<FileMeta, HubError> {
        let mut url = format!(
            "{}/{repo}/resolve/{}/{}",
            self.endpoint,
            quote(revision, false),
            quote(file, true)
        );
        let cx = Context {
            repo,
            revision,
            file: Some(file),
        };
        for _ in 0..10 {
            let resp = self
                .auth(self.head.head(&url))
                .header(reqwest::header::ACCEPT_ENCODING, "identity")
                .send()
                .await
                .map_err(|source| HubError::Http {
                    url: url.clone(),
                    source,
                })?;
            let status = resp.status();
            let headers = resp.headers();
            let location = header(headers, LOCATION.as_str());
            if status.is_redirection() {
                if let Some(loc) = location.as_deref().filter(|l| l.starts_with('/')) {
                    // A relative redirect (a renamed repository): follow it, as the client does.
                    let base = reqwest::Url::parse(&url).map_err(|_| HubError::MissingHeader {
                        url: url.clone(),
                        header: "Location",
                    })?;
                    url = base
                        .join(loc)
                        .map_err(|_| HubError::MissingHeader {
                            url: url.clone(),
                            header: "Location",
                        })?
                        .to_string();
                    continue;
                }
            } else {
                check(&url, status, headers, &cx, &self.endpoint)?;
            }
            let etag = header(headers, X_LINKED_ETAG)
                .or_else(|| header(headers, ETAG.as_str()))
                .map(|e| normalize_etag(&e))
                .ok_or(HubError::MissingHeader {
                    url: url.clone(),
                    header: "ETag",
                })?;
            let size = header(headers, X_LINKED_SIZE)
                .or_else(|| {
                    (!status.is_redirection())
                        .then(|| header(headers, CONTENT_LENGTH.as_str()))
                        .flatten()
                })
                .and_then(|s| s.parse().ok());
            return Ok(FileMeta {
                etag,
                commit: header(headers, X_REPO_COMMIT),
                size,
                location: location.unwrap_or(url),
            });
        }
        Err(HubError::Status {
            url,
            status: 310,
            message: Some("too many redirects".to_string()),
        })
    }
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// `W/"abc"` or `"abc"` to `abc`, as `huggingface_hub`'s `_normalize_etag`.
fn normalize_etag(e: &str) -> String {
    e.trim()
        .trim_start_matches("W/")
        .trim_matches('"')
        .to_string()
}

/// An error answer said in plain words: the Hub's `X-Error-Code` first, then the status.
pub(crate) fn check(
    url: &str,
    status: StatusCode,
    headers: &HeaderMap,
    cx: &Context<'_>,
    endpoint: &str,
) -> Result<(), HubError> {
    if status.is_success() || status.is_redirection() {
        return Ok(());
    }
    let repo = cx.repo.to_string();
    let code = header(headers, X_ERROR_CODE);
    Err(match code.as_deref() {
        Some("GatedRepo") => HubError::Gated {
            repo,
            status: status.as_u16(),
        },
        _ if matches!(status.as_u16(), 401 | 403) => HubError::Unauthorized {
            url: url.to_string(),
            status: status.as_u16(),
        },
        Some("RepoNotFound") => HubError::RepoNotFound {
            repo,
            endpoint: endpoint.to_string(),
        },
        Some("RevisionNotFound") => HubError::RevisionNotFound {
            repo,
            revision: cx.revision.to_string(),
        },
        Some("EntryNotFound") => HubError::EntryNotFound {
            repo,
            file: cx.file.unwrap_or_default().to_string(),
        },
        _ if status == StatusCode::NOT_FOUND && cx.file.is_none() => HubError::RepoNotFound {
            repo,
            endpoint: endpoint.to_string(),
        },
        _ => HubError::Status {
            url: url.to_string(),
            status: status.as_u16(),
            message: header(headers, X_ERROR_MESSAGE),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etags_and_quoting() {
        assert_eq!(normalize_etag("W/\"abc\""), "abc");
        assert_eq!(normalize_etag("\"abc\""), "abc");
        assert_eq!(quote("refs/pr/1", false), "refs%2Fpr%2F1");
        assert_eq!(quote("a b/c.gguf", true), "a%20b/c.gguf");
    }

    fn said(status: u16, code: Option<&str>, file: Option<&str>) -> String {
        let mut headers = HeaderMap::new();
        if let Some(c) = code {
            headers.insert(X_ERROR_CODE, c.parse().unwrap());
        }
        let cx = Context {
            repo: "o/m",
            revision: "v2",
            file,
        };
        let status = StatusCode::from_u16(status).unwrap();
        check("http://h/x", status, &headers, &cx, "http://h")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn error_codes_in_plain_words() {
        assert!(said(404, Some("RevisionNotFound"), None).contains("no revision `v2`"));
        assert!(said(404, Some("EntryNotFound"), Some("f.gguf")).contains("has no file f.gguf"));
        assert!(said(404, Some("RepoNotFound"), None).contains("o/m was not found"));
        let gated = said(403, Some("GatedRepo"), None);
        assert!(
            gated.contains("gated") && gated.contains("HF_TOKEN"),
            "{gated}"
        );
        let refused = said(401, Some("RepoNotFound"), None);
        assert!(
            refused.contains("HF_TOKEN") && refused.contains("gated"),
            "{refused}"
        );
        assert!(said(500, None, None).contains("HTTP 500"));
    }
}
