//! Pulling an image the Docker engine lacks, through the engine (bollard's `create_image`), with
//! progress: the bytes downloaded and to download, summed over the image's layers, said at most
//! once a second, and one line when the pull ends.
//!
//! Owns: deciding that a pull is needed (the engine answers 404 for the image), the pull, the
//! tally of its layers ([`Tally`]), how often progress is said ([`Throttle`]), and the error of a
//! failed pull ([`ImageError::PullFailed`], today's hint with the pull's reason). Does not own:
//! which image a sandbox uses (`super`), splitting the reference (`super::reference`), registry
//! credentials (none are sent: the engine's own configuration decides what it may pull).

use super::reference::name_and_tag;
use super::{ImageError, Progress};
use bollard::query_parameters::CreateImageOptionsBuilder;
use bollard::Docker;
use futures_util::StreamExt;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How often a pull's progress is said at most.
pub const EVERY: Duration = Duration::from_secs(1);

/// Make sure the engine has `image`: nothing when it does, else pull it, telling `progress`.
pub async fn ensure(
    docker: &Docker,
    image: &str,
    progress: Progress<'_>,
) -> Result<(), ImageError> {
    if super::build::present(docker, image).await? {
        return Ok(());
    }
    pull(docker, image, progress).await
}

/// Pull `image` (see the module docs).
pub async fn pull(docker: &Docker, image: &str, progress: Progress<'_>) -> Result<(), ImageError> {
    let (name, tag) = name_and_tag(image);
    progress(&format!("{image} is not on the Docker engine: pulling it"));
    let opts = CreateImageOptionsBuilder::default()
        .from_image(name)
        .tag(tag)
        .build();
    let mut stream = docker.create_image(Some(opts), None, None);
    let mut tally = Tally::default();
    let mut throttle = Throttle::new(EVERY);
    let failed = |source| ImageError::PullFailed {
        image: image.to_string(),
        source: Box::new(source),
    };
    while let Some(item) = stream.next().await {
        let info = item.map_err(failed)?;
        let detail = info.progress_detail.as_ref();
        tally.note(
            info.id.as_deref(),
            info.status.as_deref().unwrap_or(""),
            detail.and_then(|d| d.current),
            detail.and_then(|d| d.total),
        );
        if tally.downloading() && throttle.due(Instant::now()) {
            progress(&format!("pulling {image}: {}", tally.summary()));
        }
    }
    // The stream can end without an error and still leave no image (an engine that answers
    // oddly): say so rather than fail later at the container's creation.
    if !super::build::present(docker, image).await? {
        return Err(failed(bollard::errors::Error::DockerStreamError {
            error: "the pull ended without the image".into(),
        }));
    }
    progress(&format!("pulled {image}: {}", tally.summary()));
    Ok(())
}

/// One layer of a pull, as the engine's messages describe it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Layer {
    /// Bytes downloaded so far.
    done: u64,
    /// Bytes to download, once the engine has said.
    total: Option<u64>,
    /// Downloaded (or extracted) in full.
    complete: bool,
    /// On the engine already: nothing to download.
    present: bool,
}

/// What a pull has done so far, summed over its layers.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    layers: BTreeMap<String, Layer>,
}

impl Tally {
    /// Take one message of the engine's pull stream: the layer it is about (`id`), its status,
    /// and the progress numbers when it has them. Messages about the whole image (`Pulling
    /// from`, `Digest:`, `Status:`) change nothing.
    pub fn note(
        &mut self,
        id: Option<&str>,
        status: &str,
        current: Option<i64>,
        total: Option<i64>,
    ) {
        let Some(id) = id.filter(|i| !i.is_empty()) else {
            return;
        };
        let bytes = |n: Option<i64>| n.and_then(|n| u64::try_from(n).ok());
        let layer = || Layer::default();
        match status {
            "Pulling fs layer" | "Waiting" => {
                self.layers.entry(id.to_string()).or_insert_with(layer);
            }
            "Downloading" => {
                let l = self.layers.entry(id.to_string()).or_insert_with(layer);
                if let Some(c) = bytes(current) {
                    l.done = c;
                }
                if let Some(t) = bytes(total).filter(|t| *t > 0) {
                    l.total = Some(t);
                }
            }
            "Verifying Checksum" | "Download complete" | "Extracting" | "Pull complete" => {
                let l = self.layers.entry(id.to_string()).or_insert_with(layer);
                l.complete = true;
                if let Some(t) = l.total {
                    l.done = t;
                }
            }
            "Already exists" => {
                let l = self.layers.entry(id.to_string()).or_insert_with(layer);
                l.present = true;
                l.complete = true;
            }
            // `Pulling from <name>` carries the tag as its id; other statuses say nothing new.
            _ => {}
        }
    }

    /// Whether a layer is being downloaded (what is worth saying while the pull runs).
    pub fn downloading(&self) -> bool {
        self.layers.values().any(|l| l.done > 0 && !l.complete)
    }

    /// Bytes downloaded and bytes to download, over the layers whose size the engine said.
    pub fn bytes(&self) -> (u64, u64) {
        let fetched = self.layers.values().filter(|l| !l.present);
        fetched.fold((0, 0), |(d, t), l| {
            (d + l.done, t + l.total.unwrap_or(l.done))
        })
    }

    /// `3 of 5 layers, 12.3 MB of 45.6 MB` (layers on the engine already count as done, with
    /// no bytes); `every layer was on the engine already` when none had to be downloaded (or
    /// the engine named none: it had the same image under another name).
    pub fn summary(&self) -> String {
        let n = self.layers.len();
        let complete = self.layers.values().filter(|l| l.complete).count();
        let (done, total) = self.bytes();
        // No layer at all: the engine had the very image under another name, and said only
        // that the tag is now there.
        if total == 0 && self.layers.values().all(|l| l.present) {
            return "every layer was on the engine already".into();
        }
        format!(
            "{complete} of {n} layers, {} of {}",
            megabytes(done),
            megabytes(total)
        )
    }
}

/// Bytes in decimal megabytes, one decimal, as Docker's own client says them.
fn megabytes(n: u64) -> String {
    format!("{:.1} MB", n as f64 / 1e6)
}

/// Says whether progress is due: the first time, then once `every` has passed since the last.
#[derive(Debug, Clone)]
pub struct Throttle {
    every: Duration,
    last: Option<Instant>,
}

impl Throttle {
    pub fn new(every: Duration) -> Self {
        Self { every, last: None }
    }

    /// Whether to say progress at `now` (and, if so, remember that it was said).
    pub fn due(&mut self, now: Instant) -> bool {
        let due = self
            .last
            .is_none_or(|last| now.saturating_duration_since(last) >= self.every);
        if due {
            self.last = Some(now);
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tally_sums_the_layers_being_downloaded() {
        let mut t = Tally::default();
        t.note(Some("1"), "Pulling from x/y", None, None);
        t.note(Some("aaa"), "Already exists", None, None);
        t.note(Some("bbb"), "Pulling fs layer", None, None);
        t.note(Some("ccc"), "Waiting", None, None);
        assert!(!t.downloading());
        t.note(Some("bbb"), "Downloading", Some(1_000_000), Some(4_000_000));
        t.note(Some("ccc"), "Downloading", Some(500_000), Some(2_000_000));
        assert!(t.downloading());
        assert_eq!(t.bytes(), (1_500_000, 6_000_000));
        assert_eq!(t.summary(), "1 of 3 layers, 1.5 MB of 6.0 MB");
        t.note(Some("bbb"), "Download complete", None, None);
        t.note(Some("ccc"), "Extracting", Some(10), Some(2_000_000));
        t.note(Some("ccc"), "Pull complete", None, None);
        t.note(None, "Digest: sha256:0", None, None);
        assert!(!t.downloading());
        assert_eq!(t.bytes(), (6_000_000, 6_000_000));
        assert_eq!(t.summary(), "3 of 3 layers, 6.0 MB of 6.0 MB");
    }

    #[test]
    fn a_pull_of_layers_all_present_says_so() {
        let mut t = Tally::default();
        t.note(Some("aaa"), "Already exists", None, None);
        t.note(Some("bbb"), "Already exists", None, None);
        assert_eq!(t.summary(), "every layer was on the engine already");
        // The same image under another name: the engine names no layer at all.
        let mut t = Tally::default();
        t.note(Some("7"), "Pulling from x/y", None, None);
        t.note(None, "Digest: sha256:0", None, None);
        assert_eq!(t.summary(), "every layer was on the engine already");
    }

    #[test]
    fn progress_is_said_at_most_once_a_period() {
        let start = Instant::now();
        let mut th = Throttle::new(Duration::from_secs(1));
        assert!(th.due(start), "the first time");
        assert!(!th.due(start + Duration::from_millis(400)));
        assert!(!th.due(start + Duration::from_millis(999)));
        assert!(th.due(start + Duration::from_millis(1000)));
        assert!(!th.due(start + Duration::from_millis(1500)));
        assert!(th.due(start + Duration::from_millis(2100)));
    }
}
