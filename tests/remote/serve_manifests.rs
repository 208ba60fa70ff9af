//! The Kubernetes manifests in `deploy/kubernetes/` against the real `lilypad serve`: each
//! reads into k8s-openapi's types (what the API server would take), the selectors and ports
//! agree with one another, and the server started with the Deployment's own arguments (paths
//! swapped for local ones) answers the probes the Deployment names.

use crate::remote_common::{self, http_status, serve_with_config};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, Service};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

fn manifest(name: &str) -> String {
    let path = format!("{}/deploy/kubernetes/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn container(d: &Deployment) -> &Container {
    let spec = d.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    assert_eq!(spec.containers.len(), 1);
    &spec.containers[0]
}

fn probe_path(p: Option<&k8s_openapi::api::core::v1::Probe>) -> String {
    let get = p.and_then(|p| p.http_get.as_ref()).expect("an HTTP probe");
    assert_eq!(get.port, IntOrString::String("http".into()));
    get.path.clone().expect("a path")
}

#[test]
fn the_manifests_agree_with_each_other() {
    let d: Deployment = serde_saphyr::from_str(&manifest("deployment.yaml")).unwrap();
    let s: Service = serde_saphyr::from_str(&manifest("service.yaml")).unwrap();
    let monitor: serde_json::Value =
        serde_saphyr::from_str(&manifest("servicemonitor.yaml")).unwrap();

    let spec = d.spec.as_ref().unwrap();
    let pod_labels = spec
        .template
        .metadata
        .as_ref()
        .unwrap()
        .labels
        .clone()
        .unwrap();
    let selects = |selector: &BTreeMap<String, String>| {
        selector.iter().all(|(k, v)| pod_labels.get(k) == Some(v))
    };
    assert!(selects(spec.selector.match_labels.as_ref().unwrap()));
    let service = s.spec.as_ref().unwrap();
    assert!(selects(service.selector.as_ref().unwrap()));

    let c = container(&d);
    let http = c
        .ports
        .as_ref()
        .unwrap()
        .iter()
        .find(|p| p.name.as_deref() == Some("http"))
        .expect("a port named http");
    assert!(c
        .args
        .as_ref()
        .unwrap()
        .contains(&format!("--listen=0.0.0.0:{}", http.container_port)));
    let port = &service.ports.as_ref().unwrap()[0];
    assert_eq!(port.target_port, Some(IntOrString::String("http".into())));

    // The ServiceMonitor selects the Service and scrapes /metrics on its named port.
    let service_labels = s.metadata.labels.clone().unwrap();
    let wanted = monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .unwrap();
    for (k, v) in wanted {
        assert_eq!(service_labels.get(k).map(String::as_str), v.as_str(), "{k}");
    }
    let endpoint = &monitor["spec"]["endpoints"][0];
    assert_eq!(endpoint["port"], port.name.clone().unwrap().as_str());
    assert_eq!(endpoint["path"], "/metrics");

    // The keys come from a Secret, mounted where --keys reads.
    let volumes = spec
        .template
        .spec
        .as_ref()
        .unwrap()
        .volumes
        .clone()
        .unwrap();
    let keys = volumes
        .iter()
        .find(|v| v.secret.is_some())
        .expect("a Secret");
    let mount = c
        .volume_mounts
        .as_ref()
        .unwrap()
        .iter()
        .find(|m| m.name == keys.name)
        .unwrap();
    assert!(c
        .args
        .as_ref()
        .unwrap()
        .iter()
        .any(|a| a.starts_with(&format!("--keys={}/", mount.mount_path))));
}

#[test]
fn the_server_takes_the_deployments_arguments_and_answers_its_probes() {
    let d: Deployment = serde_saphyr::from_str(&manifest("deployment.yaml")).unwrap();
    let c = container(&d);
    assert_eq!(c.command.as_deref(), Some(&["lilypad".to_string()][..]));
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.jsonl");
    std::fs::copy(
        format!(
            "{}/deploy/kubernetes/keys.example.jsonl",
            env!("CARGO_MANIFEST_DIR")
        ),
        &keys,
    )
    .unwrap();
    let audit = dir.path().join("audit");
    let model = remote_common::tiny_model().display().to_string();
    let mut args: Vec<String> = Vec::new();
    let given = c.args.clone().unwrap();
    assert_eq!(given.first().map(String::as_str), Some("serve"));
    for a in &given[1..] {
        let (flag, _) = a.split_once('=').unwrap_or((a, ""));
        match flag {
            // The test listens on a free loopback port of its own.
            "--listen" => continue,
            "--model" => args.push(format!("--model={model}")),
            "--keys" => args.push(format!("--keys={}", keys.display())),
            "--audit" => args.push(format!("--audit={}", audit.display())),
            _ => args.push(a.clone()),
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = serve_with_config(&args, &[], "");
    let port = server.port();
    for probe in [
        probe_path(c.readiness_probe.as_ref()),
        probe_path(c.liveness_probe.as_ref()),
        probe_path(c.startup_probe.as_ref()),
    ] {
        assert_eq!(http_status(port, &probe), Some(200), "{probe}");
    }
    // The example keys require a key.
    assert_eq!(
        remote_common::chat(port, Some("not-a-key"), "hi", &[]).status,
        401
    );
    assert!(audit.is_dir(), "the audit directory was made");
}
