//! In-process model engine (llama.cpp). Work in progress.
