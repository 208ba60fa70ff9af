//! The engine's device and kernel settings ([`crate::engine::FlashAttention`],
//! [`crate::engine::CacheType`], [`crate::engine::SplitMode`]) as llama.cpp's parameters.

use crate::engine::{CacheType, FlashAttention, SplitMode};
use llama_cpp_2::context::params::KvCacheType;
use llama_cpp_2::model::params::LlamaSplitMode;

pub(super) fn flash_attention(f: FlashAttention) -> llama_cpp_sys_2::llama_flash_attn_type {
    match f {
        FlashAttention::Auto => llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_AUTO,
        FlashAttention::On => llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_ENABLED,
        FlashAttention::Off => llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED,
    }
}

pub(super) fn cache_type(c: CacheType) -> KvCacheType {
    match c {
        CacheType::F32 => KvCacheType::F32,
        CacheType::F16 => KvCacheType::F16,
        CacheType::Bf16 => KvCacheType::BF16,
        CacheType::Q8_0 => KvCacheType::Q8_0,
        CacheType::Q5_1 => KvCacheType::Q5_1,
        CacheType::Q5_0 => KvCacheType::Q5_0,
        CacheType::Q4_1 => KvCacheType::Q4_1,
        CacheType::Q4_0 => KvCacheType::Q4_0,
    }
}

pub(super) fn split_mode(s: SplitMode) -> LlamaSplitMode {
    match s {
        SplitMode::None => LlamaSplitMode::None,
        SplitMode::Layer => LlamaSplitMode::Layer,
        SplitMode::Row => LlamaSplitMode::Row,
    }
}
