//! Copying an item out of the interface as clean text: the terminal's clipboard through
//! OSC 52 (an escape sequence the terminal, or tmux, or an SSH client's terminal, turns into
//! a clipboard write, so it works over SSH), or, where that cannot work, a file whose path
//! the interface shows. Owns the sequence and the choice; the runner writes the sequence to
//! the terminal between frames. What counts as an item's clean text is the transcript's and
//! the reviews' business.

use std::io::Write;
use std::path::PathBuf;

/// Longest text sent through OSC 52; terminals cap the sequence (about 100 kB of base64 in
/// xterm and tmux), so longer text goes to a file instead.
pub const OSC52_MAX_BYTES: usize = 74_000;

/// Where a copy went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Copied {
    /// Sent to the terminal's clipboard.
    Clipboard { chars: usize },
    /// Written to this file (the terminal could not take it).
    File { path: PathBuf, why: &'static str },
}

/// The OSC 52 sequence that sets the clipboard (`c`) to `text`.
pub fn osc52(text: &str) -> String {
    format!("\x1b]52;c;{}\x07", base64(text.as_bytes()))
}

/// Why the clipboard cannot take `text` on terminal `term` (`$TERM`), if it cannot.
pub fn file_reason(text: &str, term: Option<&str>) -> Option<&'static str> {
    if text.len() > OSC52_MAX_BYTES {
        return Some("too long for the terminal's clipboard");
    }
    match term {
        None | Some("") | Some("dumb") => Some("no terminal clipboard known"),
        // The Linux console has no clipboard sequence.
        Some("linux") => Some("the Linux console has no clipboard sequence"),
        Some(_) => None,
    }
}

/// Copy `text`: through OSC 52 on `out`, or to a file in `dir` named after `name`.
pub fn copy(
    text: &str,
    name: &str,
    term: Option<&str>,
    dir: &std::path::Path,
    out: &mut impl Write,
) -> std::io::Result<Copied> {
    match file_reason(text, term) {
        None => {
            out.write_all(osc52(text).as_bytes())?;
            out.flush()?;
            Ok(Copied::Clipboard {
                chars: text.chars().count(),
            })
        }
        Some(why) => {
            let path = dir.join(format!("lilypad-copy-{name}.txt"));
            std::fs::write(&path, text)?;
            Ok(Copied::File { path, why })
        }
    }
}

/// Standard base64 with padding (RFC 4648), as OSC 52 wants it.
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_as_the_rfc_says() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), coded);
        }
        assert_eq!(osc52("hi"), "\x1b]52;c;aGk=\x07");
    }

    #[test]
    fn long_text_and_consoles_go_to_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = Vec::new();
        let got = copy("a\nb", "x", Some("xterm-256color"), dir.path(), &mut out).unwrap();
        assert_eq!(got, Copied::Clipboard { chars: 3 });
        assert_eq!(out, osc52("a\nb").into_bytes());
        let long = "y".repeat(OSC52_MAX_BYTES + 1);
        let mut out = Vec::new();
        match copy(&long, "s1", Some("xterm"), dir.path(), &mut out).unwrap() {
            Copied::File { path, .. } => {
                assert_eq!(std::fs::read_to_string(path).unwrap(), long);
                assert!(out.is_empty());
            }
            other => panic!("{other:?}"),
        }
        assert!(file_reason("x", Some("linux")).is_some());
    }
}
