//! Downloading one file into the cache: written to `blobs/ETAG.incomplete`, resumed with a
//! `Range` request after a cut (a server that answers 200 to it is read from the start),
//! retried with backoff on transient failures, its size and sha256 checked against the
//! Hub's before it is renamed to `blobs/ETAG`. A mismatch deletes the download.

use super::api::Api;
use super::HubError;
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

/// How many times a transfer is tried before its failure is returned.
const ATTEMPTS: u32 = 5;

/// What one file's download did.
pub(crate) struct Fetched {
    /// Bytes received in this pull (resumed bytes not counted).
    pub(crate) received: u64,
}

/// Whether an etag is a sha256 (a large file's, `X-Linked-Etag`) rather than a git hash.
pub(crate) fn is_sha256(etag: &str) -> bool {
    etag.len() == 64 && etag.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Download `url` to `blob` (through `blob.incomplete`), checking `size` and, when the etag
/// is one, the sha256. `on_bytes` hears the running total.
pub(crate) async fn fetch(
    api: &Api,
    url: &str,
    file: &str,
    blob: &Path,
    etag: &str,
    size: Option<u64>,
    on_bytes: &mut dyn FnMut(u64, Option<u64>),
) -> Result<Fetched, HubError> {
    let partial = blob.with_file_name(format!("{etag}.incomplete"));
    if let Some(dir) = blob.parent() {
        std::fs::create_dir_all(dir).map_err(HubError::io(dir))?;
    }
    let mut received = 0;
    let mut attempt = 0;
    loop {
        attempt += 1;
        match transfer(api, url, &partial, size, on_bytes, &mut received).await {
            Ok(()) => break,
            Err(e) if attempt < ATTEMPTS && transient(&e) => {
                tokio::time::sleep(Duration::from_millis(250 << attempt)).await;
            }
            Err(e) => return Err(e),
        }
    }
    let have = std::fs::metadata(&partial)
        .map_err(HubError::io(&partial))?
        .len();
    if let Some(want) = size.filter(|w| *w != have) {
        let _ = std::fs::remove_file(&partial);
        return Err(HubError::SizeMismatch {
            file: file.to_string(),
            expected: want,
            actual: have,
        });
    }
    if is_sha256(etag) {
        let actual = sha256(&partial)?;
        if !actual.eq_ignore_ascii_case(etag) {
            std::fs::remove_file(&partial).map_err(HubError::io(&partial))?;
            return Err(HubError::HashMismatch {
                file: file.to_string(),
                expected: etag.to_ascii_lowercase(),
                actual,
            });
        }
    }
    std::fs::rename(&partial, blob).map_err(HubError::io(blob))?;
    Ok(Fetched { received })
}

/// Whether trying again may help: a cut or refused connection, a server error.
fn transient(e: &HubError) -> bool {
    match e {
        HubError::Http { .. } | HubError::Interrupted { .. } => true,
        HubError::Status { status, .. } => *status >= 500 || *status == 429,
        _ => false,
    }
}

/// One request: resume from what `partial` holds, append what arrives.
async fn transfer(
    api: &Api,
    url: &str,
    partial: &Path,
    size: Option<u64>,
    on_bytes: &mut dyn FnMut(u64, Option<u64>),
    received: &mut u64,
) -> Result<(), HubError> {
    let have = std::fs::metadata(partial).map(|m| m.len()).unwrap_or(0);
    if size.is_some_and(|s| have == s) {
        return Ok(());
    }
    let mut rb = api.auth(api.get.get(url));
    if have > 0 {
        rb = rb.header(reqwest::header::RANGE, format!("bytes={have}-"));
    }
    let http = |source| HubError::Http {
        url: url.to_string(),
        source,
    };
    let mut resp = rb.send().await.map_err(http)?;
    let status = resp.status();
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(partial)
        .map_err(HubError::io(partial))?;
    let mut total = have;
    match status.as_u16() {
        206 => {}
        200 => {
            // The server ignored the Range: start again from the first byte.
            out.set_len(0).map_err(HubError::io(partial))?;
            total = 0;
        }
        416 => {
            // Nothing left to send, or a stale partial file: start again.
            out.set_len(0).map_err(HubError::io(partial))?;
            return Err(HubError::Interrupted {
                url: url.to_string(),
                why: "the range was refused; starting again".to_string(),
            });
        }
        _ if status.is_success() => {}
        401 | 403 => {
            return Err(HubError::Unauthorized {
                url: url.to_string(),
                status: status.as_u16(),
            })
        }
        _ => {
            return Err(HubError::Status {
                url: url.to_string(),
                status: status.as_u16(),
                message: None,
            })
        }
    }
    on_bytes(total, size);
    while let Some(chunk) = resp.chunk().await.map_err(http)? {
        out.write_all(&chunk).map_err(HubError::io(partial))?;
        total += chunk.len() as u64;
        *received += chunk.len() as u64;
        on_bytes(total, size);
    }
    out.flush().map_err(HubError::io(partial))?;
    if size.is_some_and(|s| total < s) {
        // The body ended early without an error from the connection: a cut.
        return Err(HubError::Interrupted {
            url: url.to_string(),
            why: format!("the transfer ended after {total} bytes"),
        });
    }
    Ok(())
}

/// The sha256 of a file, as lowercase hex.
fn sha256(path: &Path) -> Result<String, HubError> {
    let mut f = std::fs::File::open(path).map_err(HubError::io(path))?;
    let mut cx = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(HubError::io(path))?;
        if n == 0 {
            break;
        }
        cx.update(&buf[..n]);
    }
    Ok(cx
        .finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}
