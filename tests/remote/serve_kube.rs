//! The manifests of `deploy/kubernetes/` applied to the test cluster (scripts/k8s-up.sh) as a
//! user would apply them: an image built from `lilypad-sandbox:debian` with this build's
//! `lilypad` and the tiny model, only what a user must change substituted (image, pull
//! policy, the model's path, resources, the keys Secret), in a namespace of the test's own.
//! The pod becomes Ready, the Service's endpoints name it on its `http` port, and it answers
//! health and chat requests, with and without a key; the namespace is deleted at the end.
//!
//! Two ways to reach the pod:
//! - `LILYPAD_TEST_KUBE_POD_NETWORK=1` (a cluster whose API server and kubelet reach pod
//!   addresses): the probes as written (HTTP, from the kubelet) and requests through the API
//!   server's service proxy. That proxy consumes the `Authorization` header (it authenticates
//!   the caller to the API server), so a key cannot travel through it: a chat through the
//!   proxy gets the server's 401, and the keyed chat goes through exec as below.
//! - otherwise (scripts/k8s-up.sh: the node has no address on the pod bridge, and nothing may
//!   send traffic to pod addresses), each HTTP probe becomes an exec probe that sends the same
//!   GET to the same port from inside the pod, and the requests are sent from inside the pod
//!   (exec, Python's urllib) to the port the Service targets.
//!
//! Without a cluster (or Docker to build the image) the test skips loudly, unless
//! LILYPAD_REQUIRE_KUBE=1, where it fails.

use crate::remote_common::{self, key_line};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{
    Container, Endpoints, ExecAction, Namespace, Pod, Probe, ResourceRequirements, Secret, Service,
    ServiceAccount,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::ByteString;
use kube::api::{Api, AttachParams, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::Client;
use lilypad::sandbox::kube::KubeSettings;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

/// Where the image holds the model (the Deployment's `models` volume is left out: the model
/// travels in the image).
const MODEL: &str = "/opt/lilypad/models/tiny-chat.gguf";
/// The image the test's image is built from (a Debian 12 root, like the host's, with python3).
const BASE: &str = "lilypad-sandbox:debian";
const TOKEN: &str = "kube-test-token-0123456789";

fn manifest(name: &str) -> String {
    let path = format!("{}/deploy/kubernetes/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn skip(why: &str) {
    let required = std::env::var("LILYPAD_REQUIRE_KUBE").is_ok_and(|v| v == "1");
    assert!(!required, "LILYPAD_REQUIRE_KUBE=1 but: {why}");
    eprintln!("!!!!! SKIPPED: the Kubernetes manifests test: {why}");
}

/// An admin client of the test cluster (namespaces are made and deleted), or `None` (skipped
/// loudly) where there is none or no Docker engine to build the image with.
fn admin(rt: &tokio::runtime::Runtime) -> Option<Client> {
    let path = std::env::var("LILYPAD_TEST_ADMIN_KUBECONFIG")
        .unwrap_or_else(|_| "/tmp/lilypad-k8s/admin.kubeconfig".into());
    if !Path::new(&path).exists() {
        skip(&format!("no admin kubeconfig at {path}"));
        return None;
    }
    let s = KubeSettings {
        kubeconfig: Some(path.into()),
        ..Default::default()
    };
    let client = match rt.block_on(lilypad::sandbox::kube::connect(&s)) {
        Ok((client, _)) => client,
        Err(e) => {
            skip(&e.to_string());
            return None;
        }
    };
    let docker = Command::new("docker").args(["version"]).output();
    if !docker.is_ok_and(|o| o.status.success()) {
        skip("no Docker engine to build the image with");
        return None;
    }
    let base = Command::new("docker")
        .args(["image", "inspect", BASE])
        .output();
    if !base.is_ok_and(|o| o.status.success()) {
        skip(&format!("no image {BASE} (scripts/docker-up.sh --debian)"));
        return None;
    }
    Some(client)
}

/// Deletes the namespace when dropped (test passed or not).
struct NamespaceGuard {
    api: Api<Namespace>,
    name: String,
    rt: tokio::runtime::Handle,
}

impl Drop for NamespaceGuard {
    fn drop(&mut self) {
        let _ = self
            .rt
            .block_on(self.api.delete(&self.name, &DeleteParams::default()));
    }
}

/// Removes the image when dropped.
struct ImageGuard(String);

impl Drop for ImageGuard {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .args(["image", "rm", "-f", &self.0])
            .output();
    }
}

/// The shared libraries `binary` loads (as `ldd` resolves them on this host) that `image`
/// lacks at the same path.
fn missing_libraries(binary: &Path, image: &str) -> Vec<String> {
    let ldd = Command::new("ldd").arg(binary).output().unwrap();
    assert!(ldd.status.success(), "ldd: {ldd:?}");
    let libs: Vec<String> = String::from_utf8_lossy(&ldd.stdout)
        .lines()
        .filter_map(|l| l.split_once("=> ")?.1.split_whitespace().next())
        .filter(|p| p.starts_with('/'))
        .map(str::to_string)
        .collect();
    let mut check = Command::new("docker");
    check
        .args(["run", "--rm", "--network", "none", image])
        .args([
            "sh",
            "-c",
            r#"for f; do [ -e "$f" ] || echo "$f"; done"#,
            "sh",
        ])
        .args(&libs);
    let out = check.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Build the test image: `lilypad-sandbox:debian` with this build's `lilypad` on PATH, the
/// libraries it needs that the base lacks, and the tiny model at [`MODEL`].
fn build_image(tag: &str) {
    let base = BASE;
    let binary = Path::new(env!("CARGO_BIN_EXE_lilypad"));
    let ctx = tempfile::tempdir().unwrap();
    let lib = ctx.path().join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    for l in missing_libraries(binary, base) {
        let name = Path::new(&l).file_name().unwrap();
        std::fs::copy(&l, lib.join(name)).unwrap();
    }
    if std::fs::hard_link(binary, ctx.path().join("lilypad")).is_err() {
        std::fs::copy(binary, ctx.path().join("lilypad")).unwrap();
    }
    std::fs::copy(
        remote_common::tiny_model(),
        ctx.path().join("tiny-chat.gguf"),
    )
    .unwrap();
    std::fs::write(
        ctx.path().join("Dockerfile"),
        format!(
            "FROM {base}\n\
             COPY lib/ /opt/lilypad/lib/\n\
             COPY lilypad /usr/local/bin/lilypad\n\
             COPY tiny-chat.gguf {MODEL}\n\
             ENV LD_LIBRARY_PATH=/opt/lilypad/lib\n"
        ),
    )
    .unwrap();
    let built = Command::new("docker")
        .args(["build", "-q", "-t", tag])
        .arg(ctx.path())
        .output()
        .unwrap();
    assert!(built.status.success(), "docker build: {built:?}");
}

/// An exec probe sending the HTTP probe's GET from inside the pod.
fn exec_probe(p: &mut Probe, port: i32) {
    let get = p.http_get.take().expect("an HTTP probe");
    let path = get.path.expect("a path");
    p.exec = Some(ExecAction {
        command: Some(vec![
            "python3".into(),
            "-c".into(),
            "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)".into(),
            format!("http://127.0.0.1:{port}{path}"),
        ]),
    });
    // Python starts in well under a second, but the node's two cores may be busy.
    p.timeout_seconds = Some(10);
}

/// The Deployment of deploy/kubernetes/ with what a user changes substituted.
fn deployment(image: &str, pod_network: bool) -> (Deployment, i32) {
    let mut d: Deployment = serde_saphyr::from_str(&manifest("deployment.yaml")).unwrap();
    let pod = d.spec.as_mut().unwrap().template.spec.as_mut().unwrap();
    // The model is in the image, so the PersistentVolumeClaim it would come from goes.
    let volumes = pod.volumes.as_mut().unwrap();
    let before = volumes.len();
    volumes.retain(|v| v.persistent_volume_claim.is_none());
    assert_eq!(volumes.len(), before - 1, "one PVC volume, for the model");
    let kept: Vec<String> = volumes.iter().map(|v| v.name.clone()).collect();
    let c: &mut Container = &mut pod.containers[0];
    c.image = Some(image.into());
    c.image_pull_policy = Some("Never".into());
    c.volume_mounts
        .as_mut()
        .unwrap()
        .retain(|m| kept.contains(&m.name));
    for a in c.args.as_mut().unwrap() {
        if a.starts_with("--model=") {
            *a = format!("--model={MODEL}");
        }
    }
    // Sized for the tiny model on a two-core node.
    let q = |s: &str| Quantity(s.into());
    c.resources = Some(ResourceRequirements {
        requests: Some(BTreeMap::from([
            ("cpu".into(), q("100m")),
            ("memory".into(), q("256Mi")),
        ])),
        limits: Some(BTreeMap::from([("memory".into(), q("2Gi"))])),
        ..Default::default()
    });
    let port = c
        .ports
        .as_ref()
        .unwrap()
        .iter()
        .find(|p| p.name.as_deref() == Some("http"))
        .expect("a port named http")
        .container_port;
    if !pod_network {
        for p in [
            c.readiness_probe.as_mut(),
            c.liveness_probe.as_mut(),
            c.startup_probe.as_mut(),
        ] {
            exec_probe(p.expect("a probe"), port);
        }
    }
    (d, port)
}

/// The standard output of `argv` run in `pod`'s container.
async fn exec(pods: &Api<Pod>, pod: &str, argv: Vec<String>) -> String {
    let ap = AttachParams::default()
        .container("lilypad")
        .stdout(true)
        .stderr(false);
    let mut proc = pods.exec(pod, argv, &ap).await.unwrap();
    let mut out = String::new();
    proc.stdout()
        .unwrap()
        .read_to_string(&mut out)
        .await
        .unwrap();
    proc.join().await.unwrap();
    out
}

/// `(status, body)` of an HTTP request sent from inside `pod` to its own `port`.
async fn from_inside(
    pods: &Api<Pod>,
    pod: &str,
    port: i32,
    path: &str,
    token: Option<&str>,
    body: Option<&serde_json::Value>,
) -> (u16, String) {
    const CLIENT: &str = r#"
import sys, urllib.request, urllib.error
url, token, body = sys.argv[1], sys.argv[2], sys.argv[3]
headers = {"Content-Type": "application/json"}
if token:
    headers["Authorization"] = "Bearer " + token
req = urllib.request.Request(url, data=body.encode() if body else None, headers=headers)
try:
    r = urllib.request.urlopen(req, timeout=120)
    status, text = r.status, r.read()
except urllib.error.HTTPError as e:
    status, text = e.code, e.read()
sys.stdout.write("%d\n%s" % (status, text.decode()))
"#;
    let argv = vec![
        "python3".to_string(),
        "-c".into(),
        CLIENT.into(),
        format!("http://127.0.0.1:{port}{path}"),
        token.unwrap_or("").into(),
        body.map(ToString::to_string).unwrap_or_default(),
    ];
    let out = exec(pods, pod, argv).await;
    let (status, body) = out
        .split_once('\n')
        .unwrap_or_else(|| panic!("no status from inside the pod: {out:?}"));
    (status.parse().unwrap(), body.to_string())
}

fn chat_body() -> serde_json::Value {
    serde_json::json!({
        "model": "tiny",
        "messages": [{"role": "user", "content": "hello"}],
        "max_tokens": 8,
    })
}

/// Wait (polling, up to `limit`) until `ready` returns `Some`.
async fn wait_for<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    limit: Duration,
    mut ready: impl FnMut() -> F,
    why_not: impl AsyncFnOnce() -> String,
) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = ready().await {
            return v;
        }
        if Instant::now() > deadline {
            panic!("gave up waiting for {what}:\n{}", why_not().await);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn is_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

#[test]
fn the_manifests_run_on_the_cluster_and_the_pod_answers() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some(client) = admin(&rt) else { return };
    let pod_network = std::env::var("LILYPAD_TEST_KUBE_POD_NETWORK").is_ok_and(|v| v == "1");
    if !pod_network {
        eprintln!(
            "note: probes and requests are sent from inside the pod (set \
             LILYPAD_TEST_KUBE_POD_NETWORK=1 where the cluster reaches pod addresses, for the \
             HTTP probes as written and the API server's service proxy)"
        );
    }
    let unique = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    );
    let tag = format!("lilypad-test-deploy:{unique}");
    build_image(&tag);
    let _image = ImageGuard(tag.clone());
    let ns = format!("lilypad-deploy-{unique}");

    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut n = Namespace::default();
    n.metadata.name = Some(ns.clone());
    rt.block_on(namespaces.create(&PostParams::default(), &n))
        .unwrap();
    let _guard = NamespaceGuard {
        api: namespaces.clone(),
        name: ns.clone(),
        rt: rt.handle().clone(),
    };

    rt.block_on(async {
        // Pods are refused until the controller manager has made the default ServiceAccount
        // (the Deployment would retry; waiting keeps the failure messages plain).
        let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &ns);
        wait_for(
            "the namespace's default ServiceAccount",
            Duration::from_secs(60),
            || async { accounts.get_opt("default").await.unwrap() },
            async || String::new(),
        )
        .await;

        // The keys Secret, as `kubectl create secret generic lilypad-keys --from-file=keys.jsonl`
        // makes it, with a key whose token the test knows.
        let mut secret = Secret::default();
        secret.metadata.name = Some("lilypad-keys".into());
        secret.data = Some(BTreeMap::from([(
            "keys.jsonl".into(),
            ByteString(format!("{}\n", key_line("kube-test", TOKEN, "")).into_bytes()),
        )]));
        Api::<Secret>::namespaced(client.clone(), &ns)
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();

        let (d, port) = deployment(&tag, pod_network);
        Api::<Deployment>::namespaced(client.clone(), &ns)
            .create(&PostParams::default(), &d)
            .await
            .unwrap();
        let s: Service = serde_saphyr::from_str(&manifest("service.yaml")).unwrap();
        let services: Api<Service> = Api::namespaced(client.clone(), &ns);
        services.create(&PostParams::default(), &s).await.unwrap();
        let service = s.metadata.name.clone().unwrap();
        let service_port = s.spec.as_ref().unwrap().ports.as_ref().unwrap()[0].port;

        // The ServiceMonitor only where the Prometheus operator's CRD exists.
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        if crds
            .get_opt("servicemonitors.monitoring.coreos.com")
            .await
            .unwrap()
            .is_some()
        {
            let m: DynamicObject =
                serde_saphyr::from_str(&manifest("servicemonitor.yaml")).unwrap();
            let gvk = GroupVersionKind::gvk("monitoring.coreos.com", "v1", "ServiceMonitor");
            let monitors: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), &ns, &ApiResource::from_gvk(&gvk));
            monitors.create(&PostParams::default(), &m).await.unwrap();
        } else {
            eprintln!(
                "note: servicemonitor.yaml not applied: the cluster has no \
                 servicemonitors.monitoring.coreos.com (no Prometheus operator)"
            );
        }

        // The pod becomes Ready: its readiness probe asks /health/ready.
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let selector = "app.kubernetes.io/name=lilypad";
        let pod = wait_for(
            "a Ready lilypad pod",
            Duration::from_secs(300),
            || async {
                let list = pods
                    .list(&ListParams::default().labels(selector))
                    .await
                    .unwrap();
                list.items.into_iter().find(is_ready)
            },
            async || {
                let list = pods
                    .list(&ListParams::default().labels(selector))
                    .await
                    .unwrap();
                let mut why = String::new();
                for p in list.items {
                    let name = p.metadata.name.clone().unwrap();
                    why.push_str(&format!("{name}: {:?}\n", p.status));
                    if let Ok(log) = pods.logs(&name, &Default::default()).await {
                        why.push_str(&log);
                    }
                }
                why
            },
        )
        .await;
        let pod_name = pod.metadata.name.clone().unwrap();
        let pod_ip = pod.status.as_ref().unwrap().pod_ip.clone().unwrap();

        // The Service's endpoints name the ready pod, on the port its `http` target names.
        let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), &ns);
        wait_for(
            "the Service's endpoints to list the pod",
            Duration::from_secs(60),
            || async {
                let e = endpoints.get_opt(&service).await.unwrap()?;
                let subsets = e.subsets.unwrap_or_default();
                subsets
                    .iter()
                    .any(|s| {
                        let at_pod = s.addresses.iter().flatten().any(|a| {
                            a.ip == pod_ip
                                && a.target_ref.as_ref().and_then(|r| r.name.as_deref())
                                    == Some(pod_name.as_str())
                        });
                        let on_port = s
                            .ports
                            .iter()
                            .flatten()
                            .any(|p| p.name.as_deref() == Some("http") && p.port == port);
                        at_pod && on_port
                    })
                    .then_some(())
            },
            async || format!("{:?}", endpoints.get_opt(&service).await),
        )
        .await;
        assert_eq!(
            s.spec.as_ref().unwrap().ports.as_ref().unwrap()[0].target_port,
            Some(IntOrString::String("http".into()))
        );

        if pod_network {
            // Through the API server's service proxy.
            let base = format!("/api/v1/namespaces/{ns}/services/{service}:{service_port}/proxy");
            let req = axum::http::Request::get(format!("{base}/health/ready"))
                .body(Vec::new())
                .unwrap();
            assert_eq!(client.request_text(req).await.unwrap(), "ready");
            let req = axum::http::Request::post(format!("{base}/v1/chat/completions"))
                .header("Content-Type", "application/json")
                .body(chat_body().to_string().into_bytes())
                .unwrap();
            let e = client.request_text(req).await.unwrap_err();
            assert!(
                e.to_string().contains("invalid_api_key") || e.to_string().contains("401"),
                "the server's 401 through the proxy: {e}"
            );
        }

        // From inside the pod, to the port the Service targets.
        let (status, body) = from_inside(&pods, &pod_name, port, "/health/ready", None, None).await;
        assert_eq!((status, body.as_str()), (200, "ready"));
        let (status, body) = from_inside(
            &pods,
            &pod_name,
            port,
            "/v1/chat/completions",
            None,
            Some(&chat_body()),
        )
        .await;
        assert_eq!(status, 401, "{body}");
        assert!(body.contains("invalid_api_key"), "{body}");
        let (status, body) = from_inside(
            &pods,
            &pod_name,
            port,
            "/v1/chat/completions",
            Some("not-the-token"),
            Some(&chat_body()),
        )
        .await;
        assert_eq!(status, 401, "{body}");
        let (status, body) = from_inside(
            &pods,
            &pod_name,
            port,
            "/v1/chat/completions",
            Some(TOKEN),
            Some(&chat_body()),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let reply: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(reply["object"], "chat.completion", "{reply}");
        assert_eq!(
            reply["choices"][0]["message"]["role"], "assistant",
            "{reply}"
        );
        assert!(
            reply["usage"]["completion_tokens"].as_u64().unwrap() > 0,
            "{reply}"
        );

        // The container runs as the manifest says (UID 1000, read-only root, no
        // capabilities), and the audit line of the keyed request is in the audit volume.
        let args = d
            .spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap()
            .containers[0]
            .args
            .clone()
            .unwrap();
        let audit = args
            .iter()
            .find_map(|a| a.strip_prefix("--audit="))
            .expect("an --audit argument");
        let out = exec(
            &pods,
            &pod_name,
            vec![
                "sh".into(),
                "-c".into(),
                "id -u; touch /written 2>/dev/null && echo writable || echo read-only; \
                 grep CapEff /proc/self/status; cat \"$1\"/*.jsonl"
                    .into(),
                "sh".into(),
                audit.into(),
            ],
        )
        .await;
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some("1000"), "{out}");
        assert_eq!(lines.next(), Some("read-only"), "{out}");
        assert_eq!(
            lines
                .next()
                .map(|l| l.split_whitespace().collect::<Vec<_>>()),
            Some(vec!["CapEff:", "0000000000000000"]),
            "{out}"
        );
        let audited: Vec<serde_json::Value> = lines
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        assert!(
            audited
                .iter()
                .any(|l| l["key_id"] == "kube-test" && l["status"] == 200),
            "{audited:?}"
        );

        // Deleting the namespace ends the pod: SIGTERM drains (nothing in flight) and exits.
        namespaces
            .delete(&ns, &DeleteParams::default())
            .await
            .unwrap();
        wait_for(
            "the pod to be gone",
            Duration::from_secs(240),
            || async {
                pods.get_opt(&pod_name)
                    .await
                    .unwrap()
                    .is_none()
                    .then_some(())
            },
            async || format!("{:?}", pods.get_opt(&pod_name).await),
        )
        .await;
    });
}
