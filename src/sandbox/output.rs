//! Capturing a command's output without holding all of it: the first `keep` bytes of a stream
//! are kept, the rest is only counted (bytes and characters), and every chunk can be forwarded
//! to a live view. A command printing 50 MB costs a few kilobytes of memory.

use tokio::sync::mpsc::UnboundedSender;

/// Which output stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    Stdout,
    Stderr,
}

/// A piece of live output.
#[derive(Debug, Clone)]
pub struct OutputChunk {
    pub stream: StreamKind,
    pub data: Vec<u8>,
}

/// What was kept of one stream, and how much there was in all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// The first bytes of the stream (at most the collector's `keep`).
    pub head: Vec<u8>,
    /// Bytes seen in all.
    pub total_bytes: u64,
    /// Characters seen in all, counting each UTF-8 sequence (or stray byte) as one.
    pub total_chars: u64,
}

impl Captured {
    /// True when bytes were dropped.
    pub fn truncated(&self) -> bool {
        (self.head.len() as u64) < self.total_bytes
    }

    /// Characters seen but not kept.
    pub fn dropped_chars(&self) -> u64 {
        self.total_chars.saturating_sub(count_chars(&self.head))
    }
}

/// Characters in a byte string as a lossy UTF-8 decoder would produce them (approximately for
/// invalid input): every byte that is not a continuation byte starts one.
pub fn count_chars(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|b| (**b & 0xC0) != 0x80).count() as u64
}

/// Collects one stream.
#[derive(Debug)]
pub struct Collector {
    keep: usize,
    captured: Captured,
    live: Option<(UnboundedSender<OutputChunk>, StreamKind)>,
}

impl Collector {
    pub fn new(keep: usize) -> Self {
        Self {
            keep,
            captured: Captured::default(),
            live: None,
        }
    }

    /// Also forward every chunk to `tx`.
    pub fn with_live(mut self, tx: Option<UnboundedSender<OutputChunk>>, kind: StreamKind) -> Self {
        self.live = tx.map(|t| (t, kind));
        self
    }

    pub fn push(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let c = &mut self.captured;
        c.total_bytes += data.len() as u64;
        c.total_chars += count_chars(data);
        let room = self.keep.saturating_sub(c.head.len());
        c.head.extend_from_slice(&data[..room.min(data.len())]);
        if let Some((tx, kind)) = &self.live {
            // A closed receiver only means nobody watches any more.
            let _ = tx.send(OutputChunk {
                stream: *kind,
                data: data.to_vec(),
            });
        }
    }

    /// True once more than `keep` bytes were seen.
    pub fn overflowed(&self) -> bool {
        self.captured.total_bytes > self.keep as u64
    }

    pub fn finish(self) -> Captured {
        self.captured
    }
}

/// Read both pipes to their end, or until the deadline. True when both ended in time.
pub(crate) async fn pump<A, B>(
    so: &mut Option<A>,
    se: &mut Option<B>,
    out: &mut Collector,
    err: &mut Collector,
    deadline: std::time::Instant,
) -> bool
where
    A: tokio::io::AsyncRead + Unpin,
    B: tokio::io::AsyncRead + Unpin,
{
    let mut b1 = vec![0u8; 16 * 1024];
    let mut b2 = vec![0u8; 16 * 1024];
    let sleep = tokio::time::sleep_until(deadline.into());
    tokio::pin!(sleep);
    while so.is_some() || se.is_some() {
        tokio::select! {
            r = read_some(so, &mut b1), if so.is_some() => match r {
                Ok(0) | Err(_) => *so = None,
                Ok(n) => out.push(&b1[..n]),
            },
            r = read_some(se, &mut b2), if se.is_some() => match r {
                Ok(0) | Err(_) => *se = None,
                Ok(n) => err.push(&b2[..n]),
            },
            _ = &mut sleep => return false,
        }
    }
    true
}

/// Read from a stream that may be gone (then: never ready).
async fn read_some<R: tokio::io::AsyncRead + Unpin>(
    r: &mut Option<R>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    use tokio::io::AsyncReadExt;
    match r {
        Some(r) => r.read(buf).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_head_counts_rest() {
        let mut c = Collector::new(4);
        c.push(b"ab");
        c.push("cdé".as_bytes());
        assert!(c.overflowed());
        let cap = c.finish();
        assert_eq!(cap.head, b"abcd");
        assert_eq!(cap.total_bytes, 6);
        assert_eq!(cap.total_chars, 5);
        assert_eq!(cap.dropped_chars(), 1);
        assert!(cap.truncated());
    }

    #[test]
    fn live_chunks_are_forwarded() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut c = Collector::new(1).with_live(Some(tx), StreamKind::Stderr);
        c.push(b"xyz");
        let chunk = rx.try_recv().unwrap();
        assert_eq!(chunk.stream, StreamKind::Stderr);
        assert_eq!(chunk.data, b"xyz");
    }
}
