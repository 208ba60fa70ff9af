//! Facts about this machine that every leftover sweep asks: its host name (only this host's
//! dead sessions are swept) and whether a process is still alive (a leftover's owner is
//! dead). The container runtimes' sweeps (`crate::sandbox::container`) and the workspaces'
//! (`crate::sandbox::workspace`) both use them, so they live below both.
//!
//! Owns: reading `/proc` for these two answers. Does not own: deciding what is a leftover, or
//! removing it (the sweeps).

/// Host name of this machine (for leftover sweeping: only our own dead sessions are swept).
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// True when a process with this pid is alive on this machine. A zombie (killed, not yet
/// reaped by its parent: a session killed with SIGKILL under a terminal multiplexer, say) is
/// dead: its sandbox is a leftover.
pub(crate) fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `PID (COMM) STATE ...`; COMM may hold spaces and parentheses, so read after the last `)`.
        Ok(stat) => !matches!(
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next()),
            Some("Z" | "X")
        ),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::pid_alive;

    #[test]
    fn a_killed_unreaped_process_is_dead() {
        assert!(pid_alive(std::process::id()));
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        assert!(pid_alive(child.id()));
        child.kill().unwrap();
        // Not waited for: a zombie until `wait` below.
        let start = std::time::Instant::now();
        while pid_alive(child.id()) {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(10),
                "still alive"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(std::path::Path::new(&format!("/proc/{}", child.id())).exists());
        child.wait().unwrap();
        assert!(!pid_alive(child.id()));
    }
}
