//! The attack cases of docs/testing.md ("Attack cases"), each asserted. Network checks only
//! ever aim at 127.0.0.1.

use super::Harness;
use serde_json::json;
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// The secret the test process holds in its environment; no sandbox may show it.
pub const SECRET_VAR: &str = "LILYPAD_TEST_SECRET";
pub const SECRET: &str = "hunter2-do-not-leak";

/// Put the secret into this process's environment (call before starting a sandbox).
pub fn plant_secret() {
    static PLANTED: std::sync::Once = std::sync::Once::new();
    // SAFETY: set once per process (the host, Docker and Kubernetes tests share one), before any
    // sandbox or thread that reads the environment.
    PLANTED.call_once(|| unsafe { std::env::set_var(SECRET_VAR, SECRET) });
}

/// Environment variables whose names mark them as secrets (the contained host sandbox keeps
/// them out by name), and one that is not a secret (passed there).
pub const SECRET_NAMED: &[&str] = &[
    "ZZ_TEST_ACCESS_TOKEN",
    "ZZ_TEST_API_KEY",
    "ZZ_TEST_CLIENT_SECRET",
    "ZZ_TEST_DB_PASSWORD",
];
pub const PLAIN_VAR: &str = "ZZ_TEST_PLAIN";

/// A fake home directory with the usual secrets in it, and an agent socket: set as this
/// process's `HOME` and `SSH_AUTH_SOCK` (once, with the secret variables) by [`plant_home`].
/// It lies outside `/tmp`, which the contained host sandbox replaces anyway.
pub const HOME_SECRETS: &[&str] = &[
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".config/gh/hosts.yml",
    ".netrc",
    ".kube/config",
    ".docker/config.json",
];

/// Plant [`HOME_SECRETS`] (each holding [`SECRET`]), an agent socket, the secret-named
/// variables and [`PLAIN_VAR`]; returns the fake home. Call before starting a sandbox.
pub fn plant_home() -> &'static std::path::Path {
    static HOME: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let base = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
        std::fs::create_dir_all(base).unwrap();
        let home = tempfile::Builder::new()
            .prefix("fake-home-")
            .tempdir_in(base)
            .unwrap()
            .keep();
        for rel in HOME_SECRETS {
            let p = home.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, SECRET).unwrap();
        }
        let sock = home.join("agent.sock");
        // Leaked on purpose: the socket stays connectable for the whole test process.
        std::mem::forget(std::os::unix::net::UnixListener::bind(&sock).unwrap());
        // SAFETY: once per process, before the sandboxes that read them (see plant_secret).
        unsafe {
            std::env::set_var("HOME", &home);
            std::env::set_var("SSH_AUTH_SOCK", &sock);
            for name in SECRET_NAMED {
                std::env::set_var(name, SECRET);
            }
            std::env::set_var(PLAIN_VAR, "plain-value");
        }
        home
    })
}

/// The contained host sandbox: the planted home secrets, the agent socket, the engine sockets
/// and the secret-named variables are out of sight; the plain variable and the rest of the
/// host's files are there (read-only).
pub async fn host_secrets_hidden(h: &Harness, home: &std::path::Path) {
    for rel in HOME_SECRETS {
        let p = home.join(rel);
        let r = h.sh(&format!("cat '{}'", p.display())).await;
        assert!(!r.contains(SECRET), "{rel} is readable: {r}");
    }
    let sock = home.join("agent.sock");
    assert_eq!(
        h.out(&format!(
            "test -S '{}' && echo socket || echo none",
            sock.display()
        ))
        .await,
        "none
"
    );
    let r = h
        .sh("ls /var/run/docker.sock /run/docker.sock /run/containerd")
        .await;
    assert!(!r.starts_with("Exit code: 0"), "{r}");
    let env = h.out("env").await;
    for name in SECRET_NAMED
        .iter()
        .chain(&["SSH_AUTH_SOCK", "DOCKER_HOST", "KUBECONFIG"])
    {
        assert!(!env.contains(&format!("{name}=")), "{name} passed:\n{env}");
    }
    assert!(env.contains(&format!("{PLAIN_VAR}=plain-value")), "{env}");
    // The host's toolchain is there, read-only.
    assert!(h.out("git --version").await.starts_with("git version"));
    assert!(h.out("cat /etc/hostname >/dev/null && echo ok").await == "ok\n");
}

/// No capabilities and no new privileges (the uid may be the user's own, root included).
pub async fn no_privileges(h: &Harness) {
    let status = h
        .out("grep -E '^(CapEff|CapPrm|NoNewPrivs):' /proc/self/status")
        .await;
    assert!(status.contains("CapEff:\t0000000000000000"), "{status}");
    assert!(status.contains("CapPrm:\t0000000000000000"), "{status}");
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    let r = h
        .sh("mount -o remount,rw / 2>&1; echo x > /etc/lilypad-evil")
        .await;
    assert!(!r.starts_with("Exit code: 0"), "{r}");
}

/// Its own PID namespace: a process of the host is not in sight, and background processes end
/// with the command that started them.
pub async fn own_pid_namespace(h: &Harness) {
    let mut host = std::process::Command::new("sleep")
        .arg("1008")
        .spawn()
        .unwrap();
    let list = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done";
    let seen = h.out(list).await;
    host.kill().unwrap();
    let _ = host.wait();
    assert!(
        !seen.contains("sleep 1008"),
        "a host process is visible:\n{seen}"
    );
    h.out("setsid sleep 1009 > /dev/null 2>&1 < /dev/null &")
        .await;
    let t0 = Instant::now();
    while host_cmdlines().contains("sleep 1009") {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "a background process outlived its command"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Host environment and secrets are not visible; for containers also no engine socket, no
/// service-account token, not root, no capabilities, no new privileges.
pub async fn secrets_and_privileges(h: &Harness, container: bool) {
    let env = h.out("env").await;
    assert!(
        !env.contains(SECRET),
        "the host's secret is visible:\n{env}"
    );
    if !container {
        return;
    }
    let r = h
        .sh("ls /var/run/docker.sock /run/docker.sock /var/run/secrets/kubernetes.io/serviceaccount/token")
        .await;
    assert!(
        r.starts_with("Exit code: 1") || r.starts_with("Exit code: 2"),
        "{r}"
    );
    assert_eq!(
        h.out("mount | grep -c serviceaccount || true").await.trim(),
        "0"
    );
    assert_ne!(h.out("id -u").await.trim(), "0", "runs as root");
    let status = h
        .out("grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status")
        .await;
    assert!(status.contains("CapEff:\t0000000000000000"), "{status}");
    assert!(status.contains("CapPrm:\t0000000000000000"), "{status}");
    assert!(status.contains("CapBnd:\t0000000000000000"), "{status}");
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
}

/// Nothing outside the workspace and /tmp can be written.
pub async fn writes_outside(h: &Harness) {
    for target in ["/etc/evil", "/evil", "/usr/bin/evil", "/bin/sh"] {
        let r = h.sh(&format!("echo x > {target}")).await;
        assert!(!r.starts_with("Exit code: 0"), "wrote {target}: {r}");
    }
    assert_eq!(h.out("echo ok > /tmp/ok && cat /tmp/ok").await, "ok\n");
    assert_eq!(
        h.out("echo ok > ws-ok && cat ws-ok && rm ws-ok").await,
        "ok\n"
    );
}

/// A listener on the host's 127.0.0.1 is unreachable from the sandbox; with `only_loopback`
/// the sandbox has no network interface but `lo`.
pub async fn egress(h: &Harness, only_loopback: bool) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let cmd = format!(
        "if command -v wget >/dev/null; then wget -q -T 3 -O- http://127.0.0.1:{port}/; \
         elif [ -n \"$BASH_VERSION\" ]; then exec 3<>/dev/tcp/127.0.0.1/{port}; \
         else nc -w 3 127.0.0.1 {port} </dev/null; fi"
    );
    let r = h.text("Bash", json!({"command": cmd, "timeout": 20})).await;
    assert!(
        !r.starts_with("Exit code: 0"),
        "reached the host listener: {r}"
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        listener.accept().is_err(),
        "the host listener accepted a connection: {r}"
    );
    if only_loopback {
        let devs = h
            .out("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
            .await;
        assert_eq!(devs.trim(), "lo", "interfaces other than lo: {devs}");
    }
}

/// A fork bomb is contained by the pids limit and cleaned up at the timeout.
pub async fn fork_bomb(h: &Harness) {
    let r = h
        .text(
            "Bash",
            json!({"command": "b(){ b | b & }; b; sleep 60", "timeout": 5}),
        )
        .await;
    assert!(
        r.starts_with("Timed out after 5.0s") || r.starts_with("Exit code:"),
        "{r}"
    );
    wait_quiet(h, "fork bomb").await;
}

/// Wait until the sandbox answers again with (almost) no processes left.
async fn wait_quiet(h: &Harness, what: &str) {
    let t0 = Instant::now();
    loop {
        let n = h.sh("ls -d /proc/[0-9]* | wc -l").await;
        if let Some(count) = n
            .strip_prefix("Exit code: 0\nSTDOUT:\n")
            .and_then(|s| s.split('\n').next())
            .and_then(|s| s.trim().parse::<u32>().ok())
        {
            if count < 12 {
                return;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{what} not cleaned up: {n}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// A fork bomb that left the command's session (`setsid`): found by the timeout's rounds
/// over new processes or, failing those, stopped by recycling the sandbox. The workspace
/// survives either way.
pub async fn escaping_fork_bomb(h: &Harness) {
    h.out("echo kept > kept.txt").await;
    let r = h
        .text(
            "Bash",
            json!({"command": "setsid sh -c 'b(){ b | b & }; b' & sleep 60", "timeout": 3}),
        )
        .await;
    assert!(r.starts_with("Timed out after 3.0s"), "{r}");
    wait_quiet(h, "escaped fork bomb").await;
    assert_eq!(h.out("cat kept.txt && rm kept.txt").await, "kept\n");
}

/// A memory hog is killed by the memory limit; the sandbox survives.
pub async fn memory_hog(h: &Harness) {
    let r = h
        .text(
            "Bash",
            json!({"command": "x=$(head -c 2000000000 /dev/zero | tr '\\0' a); echo survived ${#x}", "timeout": 120}),
        )
        .await;
    assert!(
        !r.contains("survived"),
        "no memory limit: {}",
        &r[..r.len().min(300)]
    );
    assert!(
        r.starts_with("Exit code: 137") || r.starts_with("Exit code: 1"),
        "{}",
        &r[..r.len().min(300)]
    );
    assert_eq!(h.out("echo alive").await, "alive\n");
}

/// Filling /tmp stops at its size limit; the root file system takes nothing.
pub async fn disk_filler(h: &Harness, tmp_mb: u64) {
    let r = h
        .text(
            "Bash",
            json!({"command": format!("head -c {}m /dev/zero > /tmp/fill", tmp_mb * 2), "timeout": 60}),
        )
        .await;
    assert!(!r.starts_with("Exit code: 0"), "{r}");
    // GNU tools say "No space left on device"; busybox's head only "I/O error".
    assert!(
        r.contains("No space left on device") || r.contains("I/O error"),
        "{r}"
    );
    let size: u64 = h.out("wc -c < /tmp/fill").await.trim().parse().unwrap();
    assert!(size <= tmp_mb << 20, "{size}");
    h.out("rm -f /tmp/fill").await;
}

/// 50 MB of output: the result is capped and says how much was cut; memory stays small.
pub async fn big_output(h: &Harness) {
    let n: u64 = 50_000_000;
    let r = h
        .text(
            "Bash",
            json!({"command": format!("head -c {n} /dev/zero | tr '\\0' a"), "timeout": 120}),
        )
        .await;
    let total = "Exit code: 0\nSTDOUT:\n".len() as u64 + n + "\nSTDERR:\n".len() as u64;
    let suffix = format!("\n[truncated {} chars]", total - 30_000);
    assert!(
        r.starts_with("Exit code: 0\nSTDOUT:\naaaa"),
        "{}",
        &r[..r.len().min(200)]
    );
    assert!(
        r.ends_with(&suffix),
        "{}",
        &r[r.len().saturating_sub(200)..]
    );
    assert_eq!(r.chars().count(), 30_000 + suffix.chars().count());
}

/// A hung command and a `setsid` escapee are both gone after the timeout. `alive` lists the
/// sandbox's processes' command lines (inside the sandbox, or on the host for host).
pub async fn hung_and_escapee(h: &Harness, in_sandbox_listing: bool) {
    let t0 = Instant::now();
    let r = h
        .text(
            "Bash",
            json!({"command": "setsid sleep 1002 & (trap '' HUP TERM INT; exec sleep 1003) & sleep 1001", "timeout": 2}),
        )
        .await;
    assert!(r.starts_with("Timed out after 2.0s\nSTDOUT:\n"), "{r}");
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    let t0 = Instant::now();
    loop {
        let procs = if in_sandbox_listing {
            h.out("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done")
                .await
        } else {
            host_cmdlines()
        };
        let left: Vec<&str> = procs
            .lines()
            .filter(|l| {
                l.contains("sleep 1001") || l.contains("sleep 1002") || l.contains("sleep 1003")
            })
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "still running after the timeout: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Command lines of this machine's processes, one per line (arguments joined by spaces).
pub fn host_cmdlines() -> String {
    let mut s = String::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(c) = std::fs::read(e.path().join("cmdline")) {
            s.push_str(&String::from_utf8_lossy(&c).replace('\0', " "));
            s.push('\n');
        }
    }
    s
}

/// `kill_all` (the timeout's last resort) stops every process, background ones included, and
/// keeps the workspace; the sandbox works afterwards.
pub async fn last_resort<F: std::future::Future<Output = ()>>(h: &Harness, kill_all: F) {
    h.out("echo kept > kept.txt; setsid sleep 1006 > /dev/null 2>&1 < /dev/null &")
        .await;
    let list = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done";
    assert!(h.out(list).await.contains("sleep 1006"));
    kill_all.await;
    assert!(
        !h.out(list).await.contains("sleep 1006"),
        "survived kill_all"
    );
    assert_eq!(h.out("cat kept.txt && rm kept.txt").await, "kept\n");
}
