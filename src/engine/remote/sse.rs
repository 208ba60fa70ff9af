//! Server-sent events, decoded by hand: bytes in, the `data` of each complete event out.
//!
//! Invariants: lines end at `\n`, `\r\n` or `\r`; an event ends at a blank line; several
//! `data:` lines of one event are joined with `\n`; comments (`:`) and other fields (`event`,
//! `id`, `retry`) are ignored; bytes of an unfinished line wait for the next chunk, so a
//! multi-byte character split across chunks is never damaged.

/// The incremental decoder.
#[derive(Debug, Default)]
pub(super) struct SseDecoder {
    buf: Vec<u8>,
    data: Option<String>,
    /// A `\r` ended the last line: a `\n` right after it belongs to the same line end.
    after_cr: bool,
}

impl SseDecoder {
    /// Feed bytes; returns the data of every event completed by them.
    pub(super) fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    let line = std::mem::take(&mut self.buf);
                    self.line(&String::from_utf8_lossy(&line), &mut out);
                }
                _ => self.buf.push(b),
            }
        }
        out
    }

    /// The stream has ended: an event not closed by a blank line still counts.
    pub(super) fn finish(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            self.line(&String::from_utf8_lossy(&line), &mut out);
        }
        self.line("", &mut out);
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<String>) {
        if line.is_empty() {
            if let Some(d) = self.data.take() {
                out.push(d);
            }
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        if field == "data" {
            match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_string()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_across_chunks_and_line_ends() {
        let mut d = SseDecoder::default();
        let mut got = d.push(b": keep-alive\n\ndata: {\"a\"");
        assert!(got.is_empty());
        got.extend(d.push(b":1}\r\n\r\ndata:x\rdata: y\r\n\r"));
        got.extend(d.push(b"\nevent: e\ndata: [DONE]\n\n"));
        assert_eq!(got, vec!["{\"a\":1}", "x\ny", "[DONE]"]);
    }

    #[test]
    fn split_utf8_and_unterminated_end() {
        let mut d = SseDecoder::default();
        let bytes = "data: é\n\ndata: ü".as_bytes();
        let (a, b) = bytes.split_at(7);
        let mut got = d.push(a);
        got.extend(d.push(b));
        got.extend(d.finish());
        assert_eq!(got, vec!["é", "ü"]);
    }
}
