//! The `[sandbox]` section of the config file: which sandbox, its image (named, built from a
//! Dockerfile, or the repository's devcontainer), the setup command, limits, timeouts, network,
//! and the Kubernetes pod's placement (`[sandbox.kube]`).
//!
//! Owns: the fields, their defaults and units (sizes such as `2g` or `512Mi`), and turning
//! them into each runtime's settings ([`SandboxSettings::spec`]). Does not own: layering the
//! file under the flags (the `config` module, a layer above), or the flags themselves (`cli`).

use super::docker::DockerSettings;
use super::image::reference::RegistryPrefix;
use super::image::ImageBuild;
use super::kube::KubeSettings;
use super::{KindSettings, SandboxKind, SandboxSpec};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A size in bytes, written `536870912`, `512m`, `2g`, `2GiB` or `2Gi` (binary units).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl std::str::FromStr for ByteSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let n: u64 = num
            .parse()
            .map_err(|_| format!("{s:?} is not a size (e.g. 512m, 2g, 4Gi)"))?;
        let shift = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 0,
            "k" | "kb" | "ki" | "kib" => 10,
            "m" | "mb" | "mi" | "mib" => 20,
            "g" | "gb" | "gi" | "gib" => 30,
            "t" | "tb" | "ti" | "tib" => 40,
            _ => return Err(format!("{s:?}: unknown unit {unit:?} (use k, m, g or t)")),
        };
        n.checked_mul(1u64 << shift)
            .map(ByteSize)
            .ok_or_else(|| format!("{s:?} is too large"))
    }
}

impl ByteSize {
    /// As a Kubernetes quantity (`512Mi`, `2Gi`, or bytes).
    pub fn quantity(self) -> String {
        for (shift, unit) in [(40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki")] {
            if self.0 >= 1 << shift && self.0.is_multiple_of(1 << shift) {
                return format!("{}{unit}", self.0 >> shift);
            }
        }
        self.0.to_string()
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(u64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) => Ok(ByteSize(n)),
            Raw::S(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

/// `[sandbox]`: every field optional; unset fields keep each runtime's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxSettings {
    /// `docker`, `kube` or `host` (default: the command's own, docker for sessions).
    pub kind: Option<SandboxKind>,
    /// The image to run (default `debian:bookworm-slim`). Setting it (or `dockerfile`) turns
    /// the devcontainer lookup off.
    pub image: Option<String>,
    /// A registry (and path) put in front of `image` when it names no registry of its own
    /// (`--image-registry`): `swebench/x:latest` becomes `PREFIX/swebench/x:latest`.
    pub image_registry: Option<RegistryPrefix>,
    /// Where the workspace appears in the container and commands run (default `/workspace`):
    /// the directory an image documents as its repository's (`/testbed` in SWE-bench's).
    pub workdir: Option<String>,
    /// Empty, writable directories the container gets besides /tmp (a batch's Harbor tasks:
    /// `/tests` and `/logs` for their verifier). Not a config key.
    #[serde(skip)]
    pub scratch_dirs: Vec<String>,
    /// The repository is a copy made for this session alone (an image's repository directory
    /// copied out of it): the workspace takes it as it is, every file and its own `.git`,
    /// instead of copying it by git's rules ([`crate::sandbox::workspace::Workspace::adopt`]).
    /// Not a config key.
    #[serde(skip)]
    pub repo_as_is: bool,
    /// A Dockerfile to build the image from, relative to the repository.
    pub dockerfile: Option<PathBuf>,
    /// Its build context, relative to the repository (default: the Dockerfile's folder).
    pub context: Option<PathBuf>,
    /// Use the repository's `.devcontainer/devcontainer.json` when neither `image` nor
    /// `dockerfile` is set.
    pub devcontainer: bool,
    /// A command run once, as root with the network, on the image with the repository at
    /// /workspace; sessions start from the committed result (docker only).
    pub setup: Option<String>,
    /// A command run in each headless run's sandbox after the agent finishes (`lilypad run
    /// --check`); its exit status says whether the attempt passed.
    pub check: Option<String>,
    pub cpus: Option<f64>,
    pub memory: Option<ByteSize>,
    /// Processes (docker).
    pub pids: Option<i64>,
    /// Scratch space: the size of /tmp (docker) or the pod's ephemeral storage (kube).
    pub disk: Option<ByteSize>,
    /// Docker network mode of the session's container (default `none`).
    pub network: Option<String>,
    /// Docker network mode while building and setting up the image (default `default`).
    pub build_network: Option<String>,
    /// Bash timeout when a call gives none (default 120).
    pub command_timeout_secs: Option<u64>,
    /// Longest Bash timeout a call may ask for (default 10800).
    pub max_command_timeout_secs: Option<u64>,
    /// Longest the setup command may run (default 3600).
    pub setup_timeout_secs: Option<u64>,
    /// Longest the pod may take to be ready, image pull included (kube; default 180).
    pub start_timeout_secs: Option<u64>,
    pub kube: KubeSection,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        Self {
            kind: None,
            image: None,
            image_registry: None,
            workdir: None,
            scratch_dirs: Vec::new(),
            repo_as_is: false,
            dockerfile: None,
            context: None,
            devcontainer: true,
            setup: None,
            check: None,
            cpus: None,
            memory: None,
            pids: None,
            disk: None,
            network: None,
            build_network: None,
            command_timeout_secs: None,
            max_command_timeout_secs: None,
            setup_timeout_secs: None,
            start_timeout_secs: None,
            kube: KubeSection::default(),
        }
    }
}

/// `[sandbox.kube]`: where and how the pod runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KubeSection {
    pub namespace: Option<String>,
    pub context: Option<String>,
    pub kubeconfig: Option<PathBuf>,
    #[serde(alias = "runtimeClassName", alias = "runtimeClass")]
    pub runtime_class: Option<String>,
    #[serde(alias = "nodeSelector")]
    pub node_selector: BTreeMap<String, String>,
    /// Given as they are, over the ones `cpus`, `memory` and `disk` make.
    pub resources: Resources,
    #[serde(alias = "imagePullPolicy")]
    pub image_pull_policy: Option<String>,
    /// Secrets the pod pulls its image with (`imagePullSecrets`, `--pull-secret`): names of
    /// Secrets of type `kubernetes.io/dockerconfigjson` in the namespace.
    #[serde(alias = "imagePullSecrets")]
    pub pull_secrets: Vec<String>,
    /// The cluster stops the pod after this long, whatever happens to Lilypad (default 14400).
    pub lifetime_secs: Option<i64>,
}

/// `[sandbox.kube.resources]`: `requests` and `limits`, as in a pod spec.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Resources {
    pub requests: BTreeMap<String, String>,
    pub limits: BTreeMap<String, String>,
}

impl SandboxSettings {
    /// The sandbox for `repo`: of kind `kind` (the command's choice) or else this section's,
    /// else `default`.
    pub fn spec(
        &self,
        repo: &Path,
        kind: Option<SandboxKind>,
        default: SandboxKind,
    ) -> SandboxSpec {
        let settings = match kind.or(self.kind).unwrap_or(default) {
            SandboxKind::Host => KindSettings::Host(Default::default()),
            SandboxKind::Docker => KindSettings::Docker(self.docker(repo)),
            SandboxKind::Kube => KindSettings::Kube(self.kube(repo)),
        };
        SandboxSpec {
            repo: repo.to_path_buf(),
            in_place: self.repo_as_is,
            settings,
        }
    }

    fn devcontainer_on(&self) -> bool {
        self.devcontainer && self.image.is_none() && self.dockerfile.is_none()
    }

    /// `image` as the sandbox runs it: under `image_registry` when it names no registry.
    pub fn image_ref(&self) -> Option<String> {
        let image = self.image.as_deref()?;
        Some(match &self.image_registry {
            Some(r) => r.apply(image),
            None => image.to_string(),
        })
    }

    /// The Docker runtime's settings.
    pub fn docker(&self, repo: &Path) -> DockerSettings {
        let mut d = DockerSettings::default();
        if let Some(i) = self.image_ref() {
            d.image = i;
        }
        if let Some(df) = &self.dockerfile {
            let dockerfile = repo.join(df);
            let context = match &self.context {
                Some(c) => repo.join(c),
                None => dockerfile.parent().unwrap_or(repo).to_path_buf(),
            };
            d.build = Some(ImageBuild {
                dockerfile,
                context,
            });
        }
        d.devcontainer = self.devcontainer_on();
        d.setup.clone_from(&self.setup);
        d.workdir.clone_from(&self.workdir);
        d.scratch_dirs.clone_from(&self.scratch_dirs);
        if let Some(c) = self.cpus {
            d.cpus = c;
        }
        if let Some(m) = self.memory {
            d.memory_bytes = i64::try_from(m.0).unwrap_or(i64::MAX);
        }
        if let Some(p) = self.pids {
            d.pids = p;
        }
        if let Some(disk) = self.disk {
            d.tmp_size = disk.0.to_string();
        }
        if let Some(n) = &self.network {
            d.network.clone_from(n);
        }
        if let Some(n) = &self.build_network {
            d.build_network.clone_from(n);
        }
        if let Some(t) = self.setup_timeout_secs {
            d.setup_timeout_secs = t;
        }
        d
    }

    /// The Kubernetes runtime's settings.
    pub fn kube(&self, repo: &Path) -> KubeSettings {
        let k8 = &self.kube;
        let mut s = KubeSettings::default();
        if let Some(i) = self.image_ref() {
            s.image = i;
        }
        s.devcontainer = self.devcontainer_on();
        s.setup.clone_from(&self.setup);
        s.dockerfile = self.dockerfile.as_ref().map(|d| repo.join(d));
        s.workdir.clone_from(&self.workdir);
        s.scratch_dirs.clone_from(&self.scratch_dirs);
        s.seed_from_image = self.repo_as_is && self.workdir.is_some();
        if let Some(c) = self.cpus {
            s.cpu = format!("{}m", (c * 1000.0).round() as i64);
        }
        if let Some(m) = self.memory {
            s.memory = m.quantity();
        }
        if let Some(d) = self.disk {
            s.ephemeral_storage = d.quantity();
        }
        if let Some(t) = self.start_timeout_secs {
            s.ready_timeout_secs = t;
        }
        s.namespace.clone_from(&k8.namespace);
        s.context.clone_from(&k8.context);
        s.kubeconfig.clone_from(&k8.kubeconfig);
        s.runtime_class.clone_from(&k8.runtime_class);
        s.node_selector.clone_from(&k8.node_selector);
        s.requests.clone_from(&k8.resources.requests);
        s.limits.clone_from(&k8.resources.limits);
        if let Some(p) = &k8.image_pull_policy {
            s.image_pull_policy.clone_from(p);
        }
        s.pull_secrets.clone_from(&k8.pull_secrets);
        if let Some(l) = k8.lifetime_secs {
            s.active_deadline_secs = l;
        }
        s
    }

    /// The Bash timeouts: (when a call gives none, the longest a call may ask for).
    pub fn command_timeouts(&self) -> (Option<Duration>, Option<Duration>) {
        (
            self.command_timeout_secs.map(Duration::from_secs),
            self.max_command_timeout_secs.map(Duration::from_secs),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        let p = |s: &str| s.parse::<ByteSize>().map(|b| b.0);
        assert_eq!(p("512m"), Ok(512 << 20));
        assert_eq!(p("2g"), Ok(2 << 30));
        assert_eq!(p("2GiB"), Ok(2 << 30));
        assert_eq!(p("4Gi"), Ok(4 << 30));
        assert_eq!(p("1000"), Ok(1000));
        assert!(p("2 parsecs").is_err() && p("g").is_err());
        assert_eq!(ByteSize(2 << 30).quantity(), "2Gi");
        assert_eq!(ByteSize(1536 << 20).quantity(), "1536Mi");
        assert_eq!(ByteSize(1000).quantity(), "1000");
    }

    #[test]
    fn the_section_becomes_each_runtimes_settings() {
        let s: SandboxSettings = toml::from_str(
            r#"
kind = "kube"
dockerfile = "docker/dev.Dockerfile"
setup = "pip install -e ."
cpus = 1.5
memory = "3g"
disk = 1073741824
network = "none"
[kube]
namespace = "ci"
runtimeClassName = "gvisor"
node_selector = { pool = "sandbox" }
resources = { limits = { "nvidia.com/gpu" = "1" } }
"#,
        )
        .unwrap();
        let spec = s.spec(Path::new("/r"), None, SandboxKind::Docker);
        assert_eq!(spec.kind(), SandboxKind::Kube);
        let crate::sandbox::KindSettings::Kube(kube) = &spec.settings else {
            panic!("{spec:?}")
        };
        let docker = s.docker(Path::new("/r"));
        let b = docker.build.clone().unwrap();
        assert_eq!(b.dockerfile, Path::new("/r/docker/dev.Dockerfile"));
        assert_eq!(b.context, Path::new("/r/docker"));
        assert!(
            !docker.devcontainer,
            "a Dockerfile turns the devcontainer off"
        );
        assert_eq!(docker.memory_bytes, 3 << 30);
        assert_eq!(docker.cpus, 1.5);
        assert_eq!(docker.tmp_size, "1073741824");
        assert_eq!(docker.pids, 512, "unset fields keep the runtime's defaults");
        assert_eq!(kube.cpu, "1500m");
        assert_eq!(kube.memory, "3Gi");
        assert_eq!(kube.ephemeral_storage, "1Gi");
        assert_eq!(kube.namespace.as_deref(), Some("ci"));
        assert_eq!(kube.runtime_class.as_deref(), Some("gvisor"));
        assert_eq!(kube.node_selector["pool"], "sandbox");
        assert_eq!(kube.limits["nvidia.com/gpu"], "1");
        let forced = s.spec(
            Path::new("/r"),
            Some(SandboxKind::Host),
            SandboxKind::Docker,
        );
        assert_eq!(
            forced.kind(),
            SandboxKind::Host,
            "the command's choice wins"
        );
        let d = SandboxSettings::default().spec(Path::new("/r"), None, SandboxKind::Docker);
        let crate::sandbox::KindSettings::Docker(d) = d.settings else {
            panic!("{d:?}")
        };
        assert!(d.devcontainer && d.build.is_none());
        assert_eq!(d.image, "debian:bookworm-slim");
        assert!(toml::from_str::<SandboxSettings>("memory = \"lots\"").is_err());
        assert!(toml::from_str::<SandboxSettings>("imag = \"x\"").is_err());
    }

    #[test]
    fn the_registry_goes_before_named_images_and_pull_secrets_reach_kube() {
        let s: SandboxSettings = toml::from_str(
            r#"
image = "swebench/x:latest"
image_registry = "mirror.example.com/hub/"
[kube]
imagePullSecrets = ["regcred"]
"#,
        )
        .unwrap();
        let r = Path::new("/r");
        assert_eq!(
            s.docker(r).image,
            "mirror.example.com/hub/swebench/x:latest"
        );
        let k = s.kube(r);
        assert_eq!(k.image, "mirror.example.com/hub/swebench/x:latest");
        assert_eq!(k.pull_secrets, ["regcred"]);
        let own = SandboxSettings {
            image: Some("ghcr.io/o/x:1".into()),
            ..s.clone()
        };
        assert_eq!(own.kube(r).image, "ghcr.io/o/x:1", "a named registry stays");
        let none = SandboxSettings { image: None, ..s };
        assert_eq!(none.docker(r).image, "debian:bookworm-slim");
        let bad = toml::from_str::<SandboxSettings>("image_registry = \"a b\"");
        assert!(bad.is_err(), "{bad:?}");
    }
}
