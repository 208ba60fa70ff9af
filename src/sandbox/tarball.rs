//! Tar archives of a workspace (placeholder).
