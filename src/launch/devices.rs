//! How several engines of one model are laid over the machine: which GPU devices llama.cpp
//! lists (within `[engine] devices`), and the settings of engine `i` of `count`: the `i`-th
//! GPU alone (round robin), or on a CPU-only machine its share of the threads. Used by
//! `lilypad serve --replicas` and by a batch's attempts (`lilypad run --parallel`).
//!
//! Does not own: loading the engines (`super::build_model`, `crate::cli`), or choosing which
//! engine a request or an attempt goes to (`crate::serve`, `crate::headless`).

use crate::engine::{EngineSettings, SplitMode};

/// The indices of the GPU devices llama.cpp lists, within `[engine] devices` when it names
/// some; none when offload is off (`gpu_layers = 0`) or on a CPU-only build.
pub fn gpu_devices(engine: &EngineSettings) -> Vec<usize> {
    if engine.gpu_layers == Some(0) {
        return Vec::new();
    }
    crate::engine::devices()
        .into_iter()
        .filter(|d| d.is_gpu())
        .map(|d| d.index)
        .filter(|i| engine.devices.is_empty() || engine.devices.contains(i))
        .collect()
}

/// The engine settings of engine `i` of `count`: with GPUs, the `i`-th (round robin) alone;
/// without, `1 / count` of the threads. A single engine keeps the settings as they are.
pub fn engine_settings(
    engine: &EngineSettings,
    gpus: &[usize],
    i: usize,
    count: usize,
) -> EngineSettings {
    let mut s = engine.clone();
    if count == 1 {
        return s;
    }
    if gpus.is_empty() {
        let all = if engine.threads > 0 {
            engine.threads as usize
        } else {
            std::thread::available_parallelism().map_or(4, |n| n.get().min(16))
        };
        // Spread the remainder over the first engines.
        let share = all / count + usize::from(i < all % count);
        s.threads = share.max(1) as u32;
    } else {
        s.devices = vec![gpus[i % gpus.len()]];
        s.split_mode = SplitMode::None;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_share_threads_or_take_one_gpu_each() {
        let engine = EngineSettings {
            threads: 10,
            ..EngineSettings::default()
        };
        let threads: Vec<u32> = (0..3)
            .map(|i| engine_settings(&engine, &[], i, 3).threads)
            .collect();
        assert_eq!(threads, vec![4, 3, 3]);
        let one = engine_settings(&engine, &[2, 5], 1, 2);
        assert_eq!((one.devices, one.split_mode), (vec![5], SplitMode::None));
        // Round robin past the last GPU.
        assert_eq!(engine_settings(&engine, &[2, 5], 2, 3).devices, vec![2]);
        // A single engine keeps the settings as they are.
        assert_eq!(engine_settings(&engine, &[2, 5], 0, 1), engine);
    }

    #[test]
    fn no_gpu_is_listed_when_offload_is_off() {
        let engine = EngineSettings {
            gpu_layers: Some(0),
            ..EngineSettings::default()
        };
        assert!(gpu_devices(&engine).is_empty());
    }
}
