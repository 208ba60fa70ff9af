//! Tiny random-weight models for tests. Work in progress.
