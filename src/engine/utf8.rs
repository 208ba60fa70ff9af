//! Turning a stream of token byte pieces into text without ever splitting a multi-byte
//! character: bytes of an unfinished character are held until the next piece completes them;
//! bytes that can never form a character become U+FFFD.

/// Incremental UTF-8 decoder.
#[derive(Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add bytes; returns the text that is complete so far (possibly empty).
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // SAFETY-free: the prefix up to `valid` is valid UTF-8 by definition.
                    out.push_str(&String::from_utf8_lossy(&self.pending[..valid]));
                    match e.error_len() {
                        // An unfinished character at the end: keep it for the next piece.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        Some(bad) => {
                            out.push('\u{FFFD}');
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// End of stream: whatever is held is an incomplete character.
    pub fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_split_of_multibyte_text_gives_the_same_string() {
        let text = "añ€😀z";
        let bytes = text.as_bytes();
        for i in 0..=bytes.len() {
            for j in i..=bytes.len() {
                let mut d = Utf8Stream::new();
                let mut out = d.push(&bytes[..i]);
                out += &d.push(&bytes[i..j]);
                out += &d.push(&bytes[j..]);
                out += &d.finish();
                assert_eq!(out, text, "split at {i},{j}");
            }
        }
    }

    #[test]
    fn pieces_never_end_inside_a_character() {
        let mut d = Utf8Stream::new();
        assert_eq!(d.push(&[0xE2, 0x82]), "");
        assert_eq!(d.push(&[0xAC, b'x']), "€x");
    }

    #[test]
    fn invalid_bytes_become_replacement() {
        let mut d = Utf8Stream::new();
        assert_eq!(d.push(&[b'a', 0xFF, b'b']), "a\u{FFFD}b");
        assert_eq!(d.push(&[0xE2]), "");
        assert_eq!(d.finish(), "\u{FFFD}");
    }
}
