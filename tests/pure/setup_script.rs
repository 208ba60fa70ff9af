//! The decisions of `scripts/setup.sh` (its functions in `scripts/setup-lib.sh`), run by bash on
//! fake root trees: which Debian packages a machine lacks for the build.

use std::path::Path;
use std::process::Command;

const TOOLS: &[&str] = &[
    "cmake",
    "ccache",
    "tmux",
    "git",
    "curl",
    "cc",
    "c++",
    "make",
    "pkg-config",
    "bwrap",
];

fn touch(root: &Path, rel: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, "").unwrap();
}

fn executable(root: &Path, rel: &str) {
    use std::os::unix::fs::PermissionsExt;
    touch(root, rel);
    std::fs::set_permissions(root.join(rel), std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A tree with every tool on /usr/bin and the CA bundle, but no libclang at all.
fn machine() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for t in TOOLS {
        executable(dir.path(), &format!("usr/bin/{t}"));
    }
    touch(dir.path(), "etc/ssl/certs/ca-certificates.crt");
    dir
}

fn missing(root: &Path) -> Vec<String> {
    let lib = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/setup-lib.sh");
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            ". '{lib}' && setup_missing_packages '{}'",
            root.display()
        ))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn libclang_cpp_alone_is_not_libclang() {
    // What a fresh machine of this project's kind has: the libclang-cpp14 package only.
    let m = machine();
    touch(m.path(), "usr/lib/llvm-14/lib/libclang-cpp.so.14");
    touch(m.path(), "usr/lib/x86_64-linux-gnu/libclang-cpp.so.14");
    touch(m.path(), "usr/lib/llvm-14/lib/libclang-cpp.so");
    assert_eq!(missing(m.path()), vec!["libclang-dev"]);
}

#[test]
fn libclang_dev_present_needs_nothing() {
    let m = machine();
    touch(m.path(), "usr/lib/llvm-14/lib/libclang.so");
    touch(m.path(), "usr/lib/llvm-14/lib/libclang-cpp.so.14");
    touch(
        m.path(),
        "usr/lib/llvm-14/lib/clang/14.0.6/include/stddef.h",
    );
    assert_eq!(missing(m.path()), Vec::<String>::new());
}

#[test]
fn a_versioned_libclang_counts_but_its_headers_are_needed_too() {
    let m = machine();
    touch(m.path(), "usr/lib/x86_64-linux-gnu/libclang-14.so");
    assert_eq!(missing(m.path()), vec!["libclang-dev"], "no clang headers");
    touch(
        m.path(),
        "usr/lib/llvm-14/lib/clang/14.0.6/include/stddef.h",
    );
    assert_eq!(missing(m.path()), Vec::<String>::new());
}

#[test]
fn an_empty_machine_needs_everything() {
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(
        missing(empty.path()),
        vec![
            "cmake",
            "ccache",
            "tmux",
            "git",
            "curl",
            "build-essential",
            "pkg-config",
            "bubblewrap",
            "libclang-dev",
            "ca-certificates"
        ]
    );
    // A tool that is there but not executable does not count.
    let m = machine();
    std::fs::remove_file(m.path().join("usr/bin/cmake")).unwrap();
    touch(m.path(), "usr/bin/cmake");
    touch(m.path(), "usr/lib/llvm-14/lib/libclang.so");
    touch(
        m.path(),
        "usr/lib/llvm-14/lib/clang/14.0.6/include/stddef.h",
    );
    assert_eq!(missing(m.path()), vec!["cmake"]);
}
