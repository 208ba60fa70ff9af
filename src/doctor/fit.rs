//! Which quantisation of FrogNano fits this machine: the largest type whose weights and a
//! 32K-token context fit in the free memory of the GPU (all layers offloaded), else of the
//! host, with the CPU's vector instructions deciding how large is worth it on the CPU. Used
//! by `lilypad doctor` (without a model) and as `lilypad pull`'s default `--type` for a
//! checkpoint.
//!
//! Owns the rule and the sizes it uses (docs/convert.md, "Which type fits": the weights and a
//! 32K context with a q8_0 cache, compute buffers included). Does not own: reading devices
//! (`crate::engine::devices`) or pulling.

use crate::engine::BackendDevice;

/// The types a pull can convert to, largest first, with the memory FrogNano-4B needs in each
/// for its weights and a 32K-token context (q8_0 cache), in bytes.
const TYPES: [(&str, u64); 6] = [
    ("bf16", 9_800_000_000),
    ("q8_0", 5_700_000_000),
    ("q6_k", 4_700_000_000),
    ("q5_k_m", 4_200_000_000),
    ("q4_k_m", 3_900_000_000),
    ("q4_0", 3_700_000_000),
];

/// What of the machine the choice reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// The GPU with the most free memory: its name and free bytes.
    pub gpu: Option<(String, u64)>,
    /// Free host memory, bytes.
    pub host_free: u64,
    /// The CPU's vector instructions that llama.cpp's quantised kernels use, as named in the
    /// line (`AVX2`, `AVX-512`, `NEON`); empty when it has none of them.
    pub cpu: Vec<&'static str>,
}

impl Machine {
    /// This machine, as llama.cpp's devices and the CPU report it.
    pub fn detect() -> Self {
        Self::from_devices(&crate::engine::devices(), cpu_features())
    }

    pub fn from_devices(devices: &[BackendDevice], cpu: Vec<&'static str>) -> Self {
        let gpu = devices
            .iter()
            .filter(|d| d.is_gpu())
            .max_by_key(|d| d.memory_free)
            .map(|d| (d.name.clone(), d.memory_free));
        let host_free = devices
            .iter()
            .find(|d| d.kind == "cpu")
            .map_or(0, |d| d.memory_free);
        Self {
            gpu,
            host_free,
            cpu,
        }
    }
}

/// The CPU features llama.cpp's kernels are fast with.
fn cpu_features() -> Vec<&'static str> {
    #[allow(unused_mut, reason = "pushed to only on some targets")]
    let mut out = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            out.push("AVX2");
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            out.push("AVX-512");
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if std::arch::is_aarch64_feature_detected!("neon") {
            out.push("NEON");
        }
        if std::arch::is_aarch64_feature_detected!("dotprod") {
            out.push("dotprod");
        }
    }
    out
}

/// The type chosen and why, in one line.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// `q8_0`, `q4_k_m`, ... (as `--type` takes it).
    pub ty: &'static str,
    pub why: String,
}

/// Bytes in GiB, as `doctor`'s device lines say them.
fn gb(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30))
}

/// The largest type that fits `machine`.
///
/// On a GPU every type is fast, so the largest that fits its free memory wins (bf16 too). On
/// the CPU, decoding reads every weight for every token, so bf16 (twice q8_0's bytes, and
/// without fast kernels on most CPUs) is never chosen; without AVX2 or NEON, q8_0 and the
/// K-quants lose their fast kernels too and the smallest, q4_0, is chosen.
pub fn recommend(machine: &Machine) -> Fit {
    if let Some((name, free)) = &machine.gpu {
        if let Some(&(ty, need)) = TYPES.iter().find(|(_, need)| need <= free) {
            return Fit {
                ty,
                why: format!(
                    "the largest that fits {name}'s {} free with a 32K context (about {} needed)",
                    gb(*free),
                    gb(need)
                ),
            };
        }
    }
    let on = match &machine.gpu {
        Some((name, free)) => format!("no type fits {name}'s {} free; on the CPU: ", gb(*free)),
        None => "no GPU; on the CPU: ".to_string(),
    };
    let features = if machine.cpu.is_empty() {
        "no AVX2 or NEON".to_string()
    } else {
        machine.cpu.join(", ")
    };
    if machine.cpu.is_empty() {
        return Fit {
            ty: "q4_0",
            why: format!("{on}{features}, so the smallest type decodes fastest"),
        };
    }
    let host = &TYPES[1..];
    match host.iter().find(|(_, need)| *need <= machine.host_free) {
        Some(&(ty, need)) => Fit {
            ty,
            why: format!(
                "{on}the largest that fits {} of free memory with a 32K context (about {} needed; {features}; bf16 is not worth its bytes on a CPU)",
                gb(machine.host_free),
                gb(need)
            ),
        },
        None => {
            let (ty, need) = TYPES[TYPES.len() - 1];
            Fit {
                ty,
                why: format!(
                    "{on}only {} of memory is free and the smallest type needs about {} with a 32K context: use a shorter --ctx",
                    gb(machine.host_free),
                    gb(need)
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(gpu: Option<u64>, host: u64, cpu: &[&'static str]) -> Machine {
        Machine {
            gpu: gpu.map(|g| ("CUDA0".to_string(), g)),
            host_free: host,
            cpu: cpu.to_vec(),
        }
    }

    #[test]
    fn the_largest_type_that_fits() {
        const G: u64 = 1_000_000_000;
        let big_gpu = recommend(&machine(Some(80 * G), 100 * G, &["AVX2"]));
        assert_eq!(big_gpu.ty, "bf16");
        assert!(
            big_gpu.why.contains("CUDA0's 74.5 GiB free"),
            "{}",
            big_gpu.why
        );
        assert_eq!(
            recommend(&machine(Some(6 * G), 100 * G, &["AVX2"])).ty,
            "q8_0"
        );
        assert_eq!(
            recommend(&machine(Some(4 * G), 100 * G, &["AVX2"])).ty,
            "q4_k_m"
        );
        // A GPU too small for any: the host decides, and bf16 is never chosen there.
        let small = recommend(&machine(Some(2 * G), 100 * G, &["AVX2"]));
        assert_eq!(small.ty, "q8_0");
        assert!(small.why.contains("no type fits CUDA0"), "{}", small.why);
        assert_eq!(recommend(&machine(None, 5 * G, &["AVX2"])).ty, "q6_k");
        let old_cpu = recommend(&machine(None, 64 * G, &[]));
        assert_eq!(old_cpu.ty, "q4_0");
        assert!(old_cpu.why.contains("no AVX2 or NEON"), "{}", old_cpu.why);
        let tight = recommend(&machine(None, 2 * G, &["NEON"]));
        assert_eq!(tight.ty, "q4_0");
        assert!(tight.why.contains("--ctx"), "{}", tight.why);
    }
}
