//! The container sandboxes: Docker and Kubernetes.

pub mod docker;
pub mod kube;
mod ops;
mod scripts;
