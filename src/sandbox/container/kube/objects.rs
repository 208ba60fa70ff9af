//! The Kubernetes objects of one session: building them, creating them and waiting for the
//! pod, deleting them, and sweeping the leftovers of other sessions.
//!
//! Owns: the objects' shape and hardening, their labels and annotations, the start-up checks
//! that fail early with what to do (image not available, pod unschedulable), and the mapping
//! of the API's errors to [`SandboxError`] ([`runtime_err`]).
//!
//! Does not own: connecting, or anything done through exec (`super`).
//!
//! Invariants: a ConfigMap is the session's root object: the deny-all NetworkPolicy and the pod
//! name it as their owner, so deleting the ConfigMap removes everything (garbage collection),
//! and the policy exists before the pod. All three carry the session labels; the ConfigMap's
//! annotations say who made it and until when it may live, for leftover sweeps.

use super::settings::KubeSettings;
use crate::sandbox::image::reference::find_digest;
use crate::sandbox::machine::{host_name, pid_alive};
use crate::sandbox::{RuntimeError, SandboxError};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, ListParams, PostParams, PropagationPolicy};
use kube::Client;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

pub(super) const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub(super) const LABEL_SESSION: &str = "lilypad.dev/session";
pub(super) const ANN_HOST: &str = "lilypad.dev/host";
pub(super) const ANN_PID: &str = "lilypad.dev/pid";
pub(super) const ANN_EXPIRES: &str = "lilypad.dev/expires-unix";
/// The label selector of every Lilypad object.
pub(super) const SELECTOR: &str = "app.kubernetes.io/managed-by=lilypad";
pub(super) const CONTAINER: &str = "sandbox";
/// Where the init container of a pod seeded from its image sees the workspace volume.
const SEED_DIR: &str = "/lilypad-seed";

fn labels(session: &str) -> Value {
    json!({ MANAGED_BY: "lilypad", LABEL_SESSION: session, "app.kubernetes.io/name": "lilypad-sandbox" })
}

/// A Kubernetes API error in `context`; a refusal (403) says which Role to grant.
pub(super) fn runtime_err(context: impl Into<String>) -> impl FnOnce(kube::Error) -> SandboxError {
    let context = context.into();
    move |e| match &e {
        kube::Error::Api(s) if s.code == 403 => SandboxError::Unavailable {
            what: format!("Kubernetes refused {context}: {}", s.message),
            hint: "grant the sandbox's identity the Role in docs/kube-rbac.yaml in this namespace"
                .into(),
        },
        _ => SandboxError::Runtime {
            runtime: "kubernetes",
            context,
            source: RuntimeError::from(e),
        },
    }
}

fn parse<T: serde::de::DeserializeOwned>(v: Value, what: &str) -> Result<T, SandboxError> {
    serde_json::from_value(v).map_err(|e| SandboxError::Runtime {
        runtime: "kubernetes",
        context: format!("building the {what}"),
        source: RuntimeError::Object(e),
    })
}

pub(super) fn config_map(
    name: &str,
    session: &str,
    deadline_secs: i64,
) -> Result<ConfigMap, SandboxError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    parse(
        json!({
            "metadata": {
                "name": name,
                "labels": labels(session),
                "annotations": {
                    ANN_HOST: host_name(),
                    ANN_PID: std::process::id().to_string(),
                    // The pod's active deadline plus a margin: later, anyone may sweep it.
                    ANN_EXPIRES: (now + deadline_secs + 600).to_string(),
                }
            },
            "data": { "session": session }
        }),
        "session ConfigMap",
    )
}

fn owner(cm: &ConfigMap) -> Value {
    json!([{
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": cm.metadata.name,
        "uid": cm.metadata.uid,
    }])
}

/// No traffic in or out of the session's pod.
pub(super) fn network_policy(
    name: &str,
    session: &str,
    cm: &ConfigMap,
) -> Result<NetworkPolicy, SandboxError> {
    parse(
        json!({
            "metadata": { "name": name, "labels": labels(session), "ownerReferences": owner(cm) },
            "spec": {
                "podSelector": { "matchLabels": { LABEL_SESSION: session } },
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [],
                "egress": []
            }
        }),
        "NetworkPolicy",
    )
}

/// The hardened pod: non-root, no capabilities, no privilege escalation, read-only root,
/// seccomp RuntimeDefault, no service-account token, no service links, limits, never
/// restarted, an active deadline; the workspace, /tmp and the scratch directories are
/// size-limited emptyDirs; the image pulled with the settings' pull secrets, if any.
pub(super) fn pod(
    name: &str,
    session: &str,
    cm: &ConfigMap,
    s: &KubeSettings,
) -> Result<Pod, SandboxError> {
    let mut limits =
        json!({ "cpu": s.cpu, "memory": s.memory, "ephemeral-storage": s.ephemeral_storage });
    let mut requests = json!({ "cpu": s.cpu_request, "memory": s.memory_request });
    for (into, extra) in [(&mut limits, &s.limits), (&mut requests, &s.requests)] {
        for (k, v) in extra {
            into[k.as_str()] = json!(v);
        }
    }
    let mut pod = json!({
        "metadata": { "name": name, "labels": labels(session), "ownerReferences": owner(cm) },
        "spec": {
            "automountServiceAccountToken": false,
            "enableServiceLinks": false,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "activeDeadlineSeconds": s.active_deadline_secs,
            "securityContext": {
                "runAsNonRoot": true, "runAsUser": s.uid, "runAsGroup": s.uid, "fsGroup": s.uid,
                "seccompProfile": { "type": "RuntimeDefault" }
            },
            "containers": [{
                "name": CONTAINER,
                "image": s.image,
                "imagePullPolicy": s.image_pull_policy,
                // PID 1 of the container: `kill -9 -1` (the timeout's last resort) spares
                // it, and as a shell waiting for its child it reaps orphans.
                "command": ["sh", "-c", "while :; do sleep 3600; done"],
                "workingDir": s.workdir(),
                "env": [
                    { "name": "HOME", "value": "/tmp" },
                    { "name": "LANG", "value": "C.UTF-8" },
                    { "name": "TERM", "value": "dumb" },
                    // The workspace volume's root belongs to root, not to the sandbox user:
                    // git would refuse the checkout there as of "dubious ownership".
                    { "name": "GIT_CONFIG_COUNT", "value": "1" },
                    { "name": "GIT_CONFIG_KEY_0", "value": "safe.directory" },
                    { "name": "GIT_CONFIG_VALUE_0", "value": s.workdir() }
                ],
                "securityContext": {
                    "allowPrivilegeEscalation": false, "privileged": false,
                    "readOnlyRootFilesystem": true, "runAsNonRoot": true,
                    "capabilities": { "drop": ["ALL"] }
                },
                "resources": { "limits": limits, "requests": requests },
                "volumeMounts": [
                    { "name": "workspace", "mountPath": s.workdir() },
                    { "name": "tmp", "mountPath": "/tmp" }
                ]
            }],
            "volumes": [
                { "name": "workspace", "emptyDir": { "sizeLimit": s.workspace_size } },
                { "name": "tmp", "emptyDir": { "medium": "Memory", "sizeLimit": s.tmp_size } }
            ]
        }
    });
    // Empty, writable directories besides /tmp (a Harbor task's /tests and /logs).
    for (i, dir) in s.scratch_dirs.iter().enumerate() {
        let name = format!("scratch-{i}");
        if let Some(m) = pod["spec"]["containers"][0]["volumeMounts"].as_array_mut() {
            m.push(json!({ "name": name, "mountPath": dir }));
        }
        if let Some(v) = pod["spec"]["volumes"].as_array_mut() {
            v.push(json!({ "name": name, "emptyDir": { "sizeLimit": s.tmp_size } }));
        }
    }
    if !s.pull_secrets.is_empty() {
        let secrets: Vec<Value> = s
            .pull_secrets
            .iter()
            .map(|n| json!({ "name": n }))
            .collect();
        pod["spec"]["imagePullSecrets"] = json!(secrets);
    }
    if s.seed_from_image {
        // The image's own repository, copied into the workspace volume as the sandbox user
        // (so it may write there), before the sandbox starts: nothing crosses the network.
        // The volume's root is not the user's: the archive has no entry for it.
        let script = format!(
            "cd '{}' && find . -mindepth 1 -maxdepth 1 -exec tar -c -f - {{}} + \
             | tar -x -f - -C {SEED_DIR}",
            s.workdir().replace('\'', "'\\''")
        );
        let mut seed = pod["spec"]["containers"][0].clone();
        seed["name"] = json!("seed");
        seed["command"] = json!(["sh", "-c", script]);
        seed["workingDir"] = json!("/");
        seed["volumeMounts"] = json!([{ "name": "workspace", "mountPath": SEED_DIR }]);
        pod["spec"]["initContainers"] = json!([seed]);
    }
    if let Some(rc) = &s.runtime_class {
        pod["spec"]["runtimeClassName"] = json!(rc);
    }
    if !s.node_selector.is_empty() {
        pod["spec"]["nodeSelector"] = json!(s.node_selector);
    }
    parse(pod, "pod")
}

/// Create the session's objects (ConfigMap, NetworkPolicy, pod) in `ns` and wait for the pod
/// to be ready; on failure, delete what was created. Returns the pods' API and the digest of
/// the image the container runs, where the pod's status says it.
pub(super) async fn create_session(
    client: &Client,
    ns: &str,
    name: &str,
    session: &str,
    s: &KubeSettings,
) -> Result<(Api<Pod>, Option<String>), SandboxError> {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let cm = cms
        .create(
            &PostParams::default(),
            &config_map(name, session, s.active_deadline_secs)?,
        )
        .await
        .map_err(runtime_err("creating the session ConfigMap"))?;
    match create_pod(client, ns, name, session, &cm, s).await {
        Ok(pods) => Ok(pods),
        Err(e) => {
            // The start-up error is the one to report; a failed delete is swept later.
            let _ = delete_session(client, ns, name).await;
            Err(e)
        }
    }
}

/// The policy, then the pod, owned by the session's ConfigMap `cm`; waits until it is ready.
async fn create_pod(
    client: &Client,
    ns: &str,
    name: &str,
    session: &str,
    cm: &ConfigMap,
    s: &KubeSettings,
) -> Result<(Api<Pod>, Option<String>), SandboxError> {
    let nps: Api<NetworkPolicy> = Api::namespaced(client.clone(), ns);
    nps.create(&PostParams::default(), &network_policy(name, session, cm)?)
        .await
        .map_err(runtime_err("creating the NetworkPolicy"))?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    pods.create(&PostParams::default(), &pod(name, session, cm, s)?)
        .await
        .map_err(runtime_err("creating the sandbox pod"))?;
    let ready = Duration::from_secs(s.ready_timeout_secs);
    let digest = wait_ready(&pods, name, &s.image, ready).await?;
    Ok((pods, digest))
}

/// Delete the sessions of this namespace that expired, or belong to dead processes of this
/// host. Returns how many were deleted.
pub async fn sweep_leftovers(client: &Client, ns: &str) -> Result<usize, SandboxError> {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let list = cms
        .list(&ListParams::default().labels(SELECTOR))
        .await
        .map_err(runtime_err("listing sessions"))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let host = host_name();
    let mut n = 0;
    for cm in list {
        let ann = cm.metadata.annotations.clone().unwrap_or_default();
        let expired = ann
            .get(ANN_EXPIRES)
            .and_then(|v| v.parse::<i64>().ok())
            .is_some_and(|t| t < now);
        let dead = ann.get(ANN_HOST) == Some(&host)
            && ann
                .get(ANN_PID)
                .and_then(|p| p.parse::<u32>().ok())
                .is_some_and(|p| !pid_alive(p));
        if let (true, Some(name)) = (expired || dead, cm.metadata.name) {
            delete_session(client, ns, &name).await?;
            n += 1;
        }
    }
    Ok(n)
}

/// Delete a session's objects: the pod at once, the rest through its owner.
pub(super) async fn delete_session(
    client: &Client,
    ns: &str,
    name: &str,
) -> Result<(), SandboxError> {
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        propagation_policy: Some(PropagationPolicy::Background),
        ..Default::default()
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    for r in [
        pods.delete(name, &now).await.map(|_| ()),
        cms.delete(name, &now).await.map(|_| ()),
    ] {
        match r {
            Ok(()) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(runtime_err(format!("deleting session {name}"))(e)),
        }
    }
    Ok(())
}

/// Container states that will not get better by waiting.
const FATAL_WAITING: &[&str] = &[
    "ErrImagePull",
    "ImagePullBackOff",
    "ErrImageNeverPull",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
];

/// Wait until the pod is Ready; fail early with a clear message when it cannot become so.
/// Returns the digest of the sandbox container's image (`containerStatuses[].imageID`).
async fn wait_ready(
    pods: &kube::Api<Pod>,
    name: &str,
    image: &str,
    timeout: Duration,
) -> Result<Option<String>, SandboxError> {
    let start = Instant::now();
    let mut unschedulable_since: Option<Instant> = None;
    loop {
        let pod = pods.get(name).await.map_err(|e| SandboxError::Runtime {
            runtime: "kubernetes",
            context: format!("reading pod {name}"),
            source: RuntimeError::from(e),
        })?;
        let status = pod.status.unwrap_or_default();
        let ready = status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if ready {
            let digest = status
                .container_statuses
                .iter()
                .flatten()
                .find(|c| c.name == CONTAINER)
                .and_then(|c| find_digest(&c.image_id).map(str::to_string));
            return Ok(digest);
        }
        let phase = status.phase.clone().unwrap_or_default();
        // The seed container (an image's own repository copied into the workspace) failed.
        let seed_failed = status
            .init_container_statuses
            .iter()
            .flatten()
            .find_map(|c| {
                let t = c.state.as_ref()?.terminated.as_ref()?;
                (t.exit_code != 0).then_some(t.exit_code)
            });
        if let (Some(code), true) = (seed_failed, phase == "Failed") {
            return Err(SandboxError::Unavailable {
                what: format!(
                    "the sandbox pod {name} could not copy the image's repository into its \
                     workspace (exit {code})"
                ),
                hint: "every file of the image's repository directory must be readable by the \
                       sandbox user (uid in [sandbox.kube])"
                    .into(),
            });
        }
        if phase == "Failed" || phase == "Succeeded" {
            return Err(SandboxError::Unavailable {
                what: format!(
                    "the sandbox pod {name} stopped ({phase}): {}",
                    status.message.unwrap_or_default()
                ),
                hint: "check the image's entrypoint can run `sh` as a non-root user".into(),
            });
        }
        for cs in status.container_statuses.iter().flatten() {
            if let Some(w) = cs.state.as_ref().and_then(|s| s.waiting.as_ref()) {
                let reason = w.reason.clone().unwrap_or_default();
                if FATAL_WAITING.contains(&reason.as_str()) {
                    return Err(SandboxError::Unavailable {
                        what: format!(
                            "the sandbox pod cannot start its container ({reason}): {}",
                            w.message.clone().unwrap_or_default()
                        ),
                        hint: format!(
                            "make the image {image} available to the cluster's nodes (or choose \
                             another with --image); with imagePullPolicy Never it must already \
                             be on the node"
                        ),
                    });
                }
            }
        }
        let unschedulable = status.conditions.iter().flatten().find(|c| {
            c.type_ == "PodScheduled"
                && c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
        });
        match (unschedulable, unschedulable_since) {
            (Some(c), Some(t)) if t.elapsed() > Duration::from_secs(10) => {
                return Err(SandboxError::Unavailable {
                    what: format!(
                        "the sandbox pod cannot be scheduled: {}",
                        c.message.clone().unwrap_or_default()
                    ),
                    hint: "free capacity on a node or lower the sandbox's cpu/memory limits".into(),
                });
            }
            (Some(_), None) => unschedulable_since = Some(Instant::now()),
            (None, _) => unschedulable_since = None,
            _ => {}
        }
        if start.elapsed() > timeout {
            return Err(SandboxError::Unavailable {
                what: format!(
                    "the sandbox pod {name} was not ready after {}s (phase {phase})",
                    timeout.as_secs()
                ),
                hint: "look at `kubectl describe pod` for the reason; pulling a large image may \
                       need a longer start-up timeout"
                    .into(),
            });
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    #[test]
    fn pod_carries_runtime_class_node_selector_and_resources() {
        let cm = config_map("lilypad-t", "t", 60).unwrap();
        let mut s = KubeSettings {
            runtime_class: Some("gvisor".into()),
            cpu: "2".into(),
            ..Default::default()
        };
        s.node_selector.insert("pool".into(), "sandbox".into());
        s.limits.insert("nvidia.com/gpu".into(), "1".into());
        s.requests.insert("cpu".into(), "250m".into());
        let spec = pod("lilypad-t", "t", &cm, &s).unwrap().spec.unwrap();
        assert_eq!(spec.runtime_class_name.as_deref(), Some("gvisor"));
        assert_eq!(
            spec.node_selector.unwrap().get("pool").map(String::as_str),
            Some("sandbox")
        );
        let res = spec.containers[0].resources.clone().unwrap();
        let (limits, requests) = (res.limits.unwrap(), res.requests.unwrap());
        let q = |v: &str| Quantity(v.into());
        assert_eq!(limits.get("cpu"), Some(&q("2")));
        assert_eq!(limits.get("nvidia.com/gpu"), Some(&q("1")));
        assert_eq!(limits.get("memory"), Some(&q("2Gi")), "defaults stay");
        assert_eq!(requests.get("cpu"), Some(&q("250m")), "given requests win");
        assert_eq!(requests.get("memory"), Some(&q("64Mi")));
        // Without them the pod has neither field.
        let plain = pod("lilypad-t", "t", &cm, &KubeSettings::default())
            .unwrap()
            .spec
            .unwrap();
        assert!(plain.runtime_class_name.is_none() && plain.node_selector.is_none());
        assert!(plain.image_pull_secrets.is_none());
        assert_eq!(plain.volumes.as_ref().map(Vec::len), Some(2));
    }

    #[test]
    fn pod_carries_pull_secrets_and_scratch_directories() {
        let cm = config_map("lilypad-t", "t", 60).unwrap();
        let s = KubeSettings {
            pull_secrets: vec!["regcred".into()],
            scratch_dirs: vec!["/tests".into(), "/logs".into()],
            ..Default::default()
        };
        let spec = pod("lilypad-t", "t", &cm, &s).unwrap().spec.unwrap();
        let secrets = spec.image_pull_secrets.unwrap();
        assert_eq!(secrets.len(), 1);
        assert_eq!(secrets[0].name, "regcred");
        let mounts = spec.containers[0].volume_mounts.clone().unwrap();
        let at: Vec<&str> = mounts.iter().map(|m| m.mount_path.as_str()).collect();
        assert_eq!(at, ["/workspace", "/tmp", "/tests", "/logs"]);
        let volumes = spec.volumes.unwrap();
        for m in &mounts[2..] {
            let v = volumes.iter().find(|v| v.name == m.name).unwrap();
            let dir = v.empty_dir.as_ref().unwrap();
            assert_eq!(dir.medium, None, "on the node's disk, not in memory");
        }
    }

    #[test]
    fn a_pod_seeded_from_its_image_copies_the_workdir_in_an_init_container() {
        let cm = config_map("lilypad-t", "t", 60).unwrap();
        let s = KubeSettings {
            image: "task:1".into(),
            workdir: Some("/testbed".into()),
            seed_from_image: true,
            ..Default::default()
        };
        let spec = pod("lilypad-t", "t", &cm, &s).unwrap().spec.unwrap();
        let init = spec.init_containers.unwrap();
        assert_eq!(init.len(), 1);
        let seed = &init[0];
        assert_eq!(seed.image.as_deref(), Some("task:1"));
        let script = seed.command.as_ref().unwrap().join(" ");
        assert!(script.contains("cd '/testbed'"), "{script}");
        let mounts = seed.volume_mounts.as_ref().unwrap();
        assert_eq!(mounts[0].name, "workspace");
        assert_eq!(mounts[0].mount_path, SEED_DIR);
        // As unprivileged as the sandbox itself.
        let sc = seed.security_context.as_ref().unwrap();
        assert_eq!(sc.allow_privilege_escalation, Some(false));
        let plain = pod("lilypad-t", "t", &cm, &KubeSettings::default())
            .unwrap()
            .spec
            .unwrap();
        assert!(plain.init_containers.is_none());
    }
}
