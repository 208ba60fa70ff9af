//! Attempts: a task run K times, each attempt numbered from 1 and keyed by
//! (`instance_id`, attempt). Owns how an attempt's seed is derived from the base seed, how a
//! scripted engine's path is chosen per attempt, and which instance ids are usable as folder
//! names. Does not own running an attempt (`super::batch`) or storing it (`super::results`).
//!
//! Seeds: attempt `n` (from 1) samples with the seed `crate::launch::attempts::attempt_seed`
//! derives from the base (the one rule, which the interface's `--attempts` follows too):
//! attempt 1 uses the base seed itself, the others are spread over the whole range, so
//! neighbouring base seeds share no attempts. The same for every task. The base is `--seed`,
//! else the preset's, else 0, so the same command run again derives the same seeds.

pub use crate::launch::attempts::attempt_seed;
use crate::launch::EngineChoice;
use std::path::PathBuf;

/// The engine of one attempt: a scripted engine's path may hold `{attempt}` and `{seed}`,
/// replaced by the attempt's number and seed (`script:runs/attempt-{attempt}.txt`), so that
/// attempts differ as sampled ones would; other engines are the same for every attempt.
pub fn engine_for(choice: &EngineChoice, attempt: u32, seed: u32) -> EngineChoice {
    match choice {
        EngineChoice::Script(path) => {
            let text = path.to_string_lossy();
            if !text.contains("{attempt}") && !text.contains("{seed}") {
                return choice.clone();
            }
            EngineChoice::Script(PathBuf::from(
                text.replace("{attempt}", &attempt.to_string())
                    .replace("{seed}", &seed.to_string()),
            ))
        }
        other => other.clone(),
    }
}

/// Why `id` cannot name a results folder, if it cannot.
pub fn bad_instance_id(id: &str) -> Option<&'static str> {
    if id.is_empty() {
        Some("it is empty")
    } else if id == "." || id == ".." {
        Some("it is `.` or `..`")
    } else if id.contains(['/', '\\', '\0']) {
        Some("it holds a slash or a NUL")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_start_at_the_base_and_match_the_interface() {
        assert_eq!(attempt_seed(0, 1), 0);
        assert_eq!(attempt_seed(7, 1), 7);
        // One rule for the interface and batches (this compared the 1-based numbering here
        // with the 0-based one the interface had).
        assert_eq!(
            attempt_seed(7, 3),
            7u32.wrapping_add(0x9E37_79B9u32.wrapping_mul(2))
        );
        assert_ne!(attempt_seed(7, 2), attempt_seed(8, 1));
    }

    #[test]
    fn script_paths_take_the_attempt_and_seed() {
        let c = EngineChoice::Script("s/attempt-{attempt}-{seed}.txt".into());
        assert_eq!(
            engine_for(&c, 2, 41),
            EngineChoice::Script("s/attempt-2-41.txt".into())
        );
        let plain = EngineChoice::Script("s.txt".into());
        assert_eq!(engine_for(&plain, 2, 41), plain);
    }

    #[test]
    fn instance_ids_must_be_folder_names() {
        assert!(bad_instance_id("astropy__astropy-12907").is_none());
        assert!(bad_instance_id("a/b").is_some());
        assert!(bad_instance_id("..").is_some());
        assert!(bad_instance_id("").is_some());
    }
}
