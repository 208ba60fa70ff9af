//! GGUF files: reading metadata and writing models. Work in progress.
