# shellcheck shell=bash
# Sourced, never run: the compiler cache settings every llama.cpp build here shares, so that
# llama.cpp's library is compiled once on a fresh machine. Cargo's build of llama-cpp-sys-2
# (through cmake) compiles it first; scripts/build-llama-tools.sh then configures llama.cpp's
# tools with the same flags (read from cargo's CMakeCache.txt), and ccache answers the
# library's objects from that first build.
#
# Two compiles of one source differ only in the `-I` of their cmake build directory (cargo's
# OUT_DIR or the tools' build tree), so those options are left out of ccache's hash
# (CCACHE_IGNOREOPTIONS). That is safe: in direct mode ccache still hashes every header a
# compile actually includes, by path and content, wherever it was found. Paths stay absolute
# (no CCACHE_BASEDIR): relative paths would differ with the depth of each build directory.
# ccache also hashes the locale (LANG, LC_ALL): cargo's cc crate compiles with LC_ALL=C, so
# scripts/build-llama-tools.sh runs its compiles with LC_ALL=C too.
#
# Needs CARGO_TARGET_DIR (or defaults to ./target) and LILYPAD_CI_CACHE (or
# ~/.cache/lilypad-ci); changing what this exports makes ccache miss once, nothing worse.
lilypad_ccache_target="${CARGO_TARGET_DIR:-$PWD/target}"
case "$lilypad_ccache_target" in /*) ;; *) lilypad_ccache_target="$PWD/$lilypad_ccache_target" ;; esac
export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
export CCACHE_IGNOREOPTIONS="-I$lilypad_ccache_target/* -I${LILYPAD_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lilypad-ci}/llama-tools/*"
unset CCACHE_BASEDIR lilypad_ccache_target
