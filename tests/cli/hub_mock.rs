//! A mock of the Hugging Face Hub for the `pull` tests: a plain `TcpListener` thread serving
//! one repository the way the Hub does (`GET api/models/REPO/revision/REV`, `HEAD` and `GET`
//! of `REPO/resolve/REV/FILE`, a large file redirected to another path with `X-Linked-Etag`
//! and `X-Linked-Size`, `Range` requests answered 206), with faults the tests switch on: a
//! connection cut halfway, `Range` ignored (200), bytes that do not match the hash, a gated
//! repository. It records every request. Test code only.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

pub const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
pub const TOKEN: &str = "hf_mocktoken";

/// One file of the mock repository.
#[derive(Clone)]
pub struct MockFile {
    pub path: String,
    pub bytes: Vec<u8>,
    /// Stored as a large (LFS) file: its etag is its sha256 and it is served by redirect.
    pub large: bool,
}

/// The faults and rules the mock follows.
#[derive(Clone, Default)]
pub struct Faults {
    /// The first download of a large file is cut after this many bytes.
    pub cut_at: Option<usize>,
    /// `Range` is ignored: the whole file is sent with 200.
    pub ignore_range: bool,
    /// Large files are served with their last byte changed (the hash no longer matches).
    pub corrupt: bool,
    /// Every request needs `Authorization: Bearer TOKEN`, else 401 with `GatedRepo`.
    pub gated: bool,
}

#[derive(Default)]
struct State {
    requests: Vec<String>,
    cuts_done: usize,
}

pub struct MockHub {
    pub url: String,
    state: Arc<Mutex<State>>,
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A git-like blob hash for small files (any 40 hex digits do for the client).
fn small_etag(bytes: &[u8]) -> String {
    sha256_hex(bytes)[..40].to_string()
}

impl MockHub {
    /// Serve `files` as repository `repo` on a free local port.
    pub fn start(repo: &str, files: Vec<MockFile>, faults: Faults) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        // Large files are redirected to another host name for the same server, as the Hub
        // redirects to its storage host (the official client follows only same-host redirects).
        let storage = url.replace("127.0.0.1", "localhost");
        let (st, repo, base) = (state.clone(), repo.to_string(), storage);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let (st, repo, base, files, faults) = (
                    st.clone(),
                    repo.clone(),
                    base.clone(),
                    files.clone(),
                    faults.clone(),
                );
                std::thread::spawn(move || {
                    let _ = serve(conn, &st, &repo, &base, &files, &faults);
                });
            }
        });
        Self { url, state }
    }

    /// Every request seen, as `METHOD PATH [range]`.
    pub fn requests(&self) -> Vec<String> {
        self.state.lock().unwrap().requests.clone()
    }
}

fn respond(
    conn: &mut TcpStream,
    status: &str,
    headers: &[(String, String)],
    body: &[u8],
    head: bool,
) -> std::io::Result<()> {
    let mut text = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    if !headers.iter().any(|(k, _)| k == "Content-Length") {
        text.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    text.push_str("\r\n");
    conn.write_all(text.as_bytes())?;
    if !head {
        conn.write_all(body)?;
    }
    conn.flush()
}

fn h(k: &str, v: impl Into<String>) -> (String, String) {
    (k.to_string(), v.into())
}

fn serve(
    mut conn: TcpStream,
    state: &Mutex<State>,
    repo: &str,
    base: &str,
    files: &[MockFile],
    faults: &Faults,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let (mut range, mut auth) = (None::<u64>, None::<String>);
    loop {
        let mut l = String::new();
        if reader.read_line(&mut l)? == 0 || l.trim().is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap_or((&l, ""));
        match k.trim().to_ascii_lowercase().as_str() {
            "range" => {
                range = v
                    .trim()
                    .strip_prefix("bytes=")
                    .and_then(|r| r.trim_end_matches('-').parse().ok())
            }
            "authorization" => auth = Some(v.trim().to_string()),
            _ => {}
        }
    }
    state.lock().unwrap().requests.push(match range {
        Some(r) => format!("{method} {path} bytes={r}-"),
        None => format!("{method} {path}"),
    });
    let head = method == "HEAD";
    if faults.gated && auth.as_deref() != Some(&format!("Bearer {TOKEN}")) {
        let headers = [
            h("X-Error-Code", "GatedRepo"),
            h("X-Error-Message", "Access to this model is restricted."),
        ];
        return respond(&mut conn, "401 Unauthorized", &headers, b"gated", head);
    }
    let not_found = |conn: &mut TcpStream, code: &str| {
        respond(
            conn,
            "404 Not Found",
            &[h("X-Error-Code", code)],
            b"{}",
            head,
        )
    };
    if let Some(rest) = path.strip_prefix("/api/models/") {
        let Some(rev) = rest.strip_prefix(&format!("{repo}/revision/")) else {
            return respond(
                &mut conn,
                "401 Unauthorized",
                &[h("X-Error-Code", "RepoNotFound")],
                b"{}",
                head,
            );
        };
        if rev != "main" && rev != COMMIT {
            return not_found(&mut conn, "RevisionNotFound");
        }
        let siblings: Vec<String> = files
            .iter()
            .map(|f| format!("{{\"rfilename\":\"{}\"}}", f.path))
            .collect();
        let body = format!(
            "{{\"id\":\"{repo}\",\"sha\":\"{COMMIT}\",\"siblings\":[{}]}}",
            siblings.join(",")
        );
        return respond(
            &mut conn,
            "200 OK",
            &[h("Content-Type", "application/json")],
            body.as_bytes(),
            head,
        );
    }
    if let Some(sha) = path.strip_prefix("/cdn/") {
        // The storage host a large file's resolve redirects to.
        let Some(f) = files.iter().find(|f| sha256_hex(&f.bytes) == sha) else {
            return not_found(&mut conn, "EntryNotFound");
        };
        let mut bytes = f.bytes.clone();
        if faults.corrupt {
            if let Some(last) = bytes.last_mut() {
                *last ^= 0xff;
            }
        }
        let start = if faults.ignore_range {
            0
        } else {
            range.unwrap_or(0) as usize
        };
        let cut = {
            let mut s = state.lock().unwrap();
            match faults.cut_at {
                Some(at) if s.cuts_done == 0 && !head => {
                    s.cuts_done += 1;
                    Some(at)
                }
                _ => None,
            }
        };
        let body = &bytes[start.min(bytes.len())..];
        let mut headers = vec![
            h("Content-Length", body.len().to_string()),
            h("ETag", format!("\"{sha}\"")),
        ];
        let status = if start > 0 {
            headers.push(h(
                "Content-Range",
                format!("bytes {start}-{}/{}", bytes.len() - 1, bytes.len()),
            ));
            "206 Partial Content"
        } else {
            "200 OK"
        };
        if let Some(at) = cut {
            // Promise the whole body, send part of it, and hang up.
            let mut text = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
            for (k, v) in &headers {
                text.push_str(&format!("{k}: {v}\r\n"));
            }
            text.push_str("\r\n");
            conn.write_all(text.as_bytes())?;
            conn.write_all(&body[..at.min(body.len())])?;
            conn.flush()?;
            return conn.shutdown(std::net::Shutdown::Both);
        }
        return respond(&mut conn, status, &headers, body, head);
    }
    let prefix = format!("/{repo}/resolve/");
    let Some(rest) = path.strip_prefix(&prefix) else {
        return respond(
            &mut conn,
            "401 Unauthorized",
            &[h("X-Error-Code", "RepoNotFound")],
            b"{}",
            head,
        );
    };
    let (rev, file) = rest.split_once('/').unwrap_or((rest, ""));
    if rev != "main" && rev != COMMIT {
        return not_found(&mut conn, "RevisionNotFound");
    }
    let Some(f) = files.iter().find(|f| f.path == file) else {
        return not_found(&mut conn, "EntryNotFound");
    };
    let mut headers = vec![h("X-Repo-Commit", COMMIT)];
    if f.large {
        let sha = sha256_hex(&f.bytes);
        headers.extend([
            h("Location", format!("{base}/cdn/{sha}")),
            h("X-Linked-Etag", format!("\"{sha}\"")),
            h("X-Linked-Size", f.bytes.len().to_string()),
            h("ETag", format!("\"{}\"", small_etag(&f.bytes))),
            h("Content-Length", "0"),
        ]);
        respond(&mut conn, "302 Found", &headers, b"", head)
    } else {
        headers.push(h("ETag", format!("\"{}\"", small_etag(&f.bytes))));
        respond(&mut conn, "200 OK", &headers, &f.bytes, head)
    }
}
