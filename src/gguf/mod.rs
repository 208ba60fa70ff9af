//! GGUF files: the format llama.cpp loads. This module owns the byte layout (header, metadata,
//! tensor table, aligned data), reading it with bounds checks ([`GgufFile`]) and writing it in
//! a streaming fashion ([`GgufWriter`]), plus the ggml tensor types it needs to size data and
//! quantise to Q8_0 bit-for-bit like ggml. It knows nothing about any model architecture:
//! `testmodel` and `convert` decide which keys and tensors to write.

mod quant;
mod reader;
mod types;
mod writer;

pub use quant::{f32_to_bf16_bytes, f32_to_f16_bytes, quantize_q8_0};
pub use reader::{GgufError, GgufFile, TensorInfo};
pub use types::{GgmlType, Value, ValueType};
pub use writer::{GgufWriteError, GgufWriter, TensorSpec, TensorStream};

/// `GGUF` in little-endian byte order.
pub const MAGIC: [u8; 4] = *b"GGUF";
/// The version this crate writes; the reader accepts 2 and 3.
pub const VERSION: u32 = 3;
/// Token types of `tokenizer.ggml.token_type`, as llama.cpp numbers them.
pub const TOKEN_NORMAL: i32 = 1;
pub const TOKEN_CONTROL: i32 = 3;
pub const TOKEN_USER_DEFINED: i32 = 4;
pub const TOKEN_UNUSED: i32 = 5;
/// Alignment of the data section and of each tensor when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;
