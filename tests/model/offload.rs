//! GPU offload, exercised for real: built with a GPU backend (`--features vulkan`, run on
//! Mesa's software Vulkan device, lavapipe, where no GPU is present; or `cuda`), the tiny model
//! with every layer offloaded gives the same greedy tokens as with none, its next-token
//! logits agree with the CPU's (within 0.1, the device computing with f16 activations; the
//! same most likely token), and llama.cpp lists the device with its memory. Compiled only into a GPU build (`scripts/test-vulkan.sh`); a CPU build has none
//! of these tests.
#![cfg(any(feature = "vulkan", feature = "cuda"))]

use crate::common::{chat, load, serial, test_settings};
use lilypad::engine::{GenerateRequest, SamplingParams};

fn greedy(gpu_layers: u32) -> (Vec<u32>, Vec<f32>, u32) {
    let mut s = test_settings();
    s.gpu_layers = Some(gpu_layers);
    let e = load(&s);
    let prompt = chat("s", "offload every layer");
    let (logits, _) = e.logits(&prompt).unwrap();
    e.reset().unwrap();
    let (_, g) = e
        .generate(GenerateRequest::new(prompt, 12, SamplingParams::greedy()))
        .unwrap()
        .wait()
        .unwrap();
    (g.tokens, logits, e.model().gpu_layers)
}

#[test]
fn every_layer_offloaded_gives_the_cpu_greedy_tokens() {
    let _g = serial();
    let (cpu, cpu_logits, none) = greedy(0);
    let (gpu, gpu_logits, all) = greedy(999);
    assert_eq!(none, 0);
    let layers = load(&test_settings()).model().layers;
    assert_eq!(
        all,
        layers + 1,
        "every block and the output layer offloaded"
    );
    assert_eq!(gpu, cpu, "greedy tokens with {all} layers offloaded");
    crate::common::assert_same_logits(&gpu_logits, &cpu_logits);
}

#[test]
fn the_gpu_device_is_listed_with_its_memory() {
    let _g = serial();
    let _ = load(&test_settings());
    let devices = llama_cpp_2::list_llama_ggml_backend_devices();
    let gpu: Vec<_> = devices.iter().filter(|d| d.backend != "CPU").collect();
    assert!(!gpu.is_empty(), "no GPU device: {devices:?}");
    assert!(gpu.iter().all(|d| d.memory_total > 0), "{gpu:?}");
}
