//! The small POSIX `sh` helpers that container sandboxes run through exec (`sh -c SCRIPT sh
//! ARGS...`). They use only what busybox and coreutils both have, and report failures by exit
//! code so the caller can name them: 2 not found, 13 permission, 20 not a directory, 21 is a
//! directory, 27 too large, 28 no space.
//!
//! Data never travels in arguments: file contents go through stdin, sized by an argument
//! (`head -c N`), because a Kubernetes exec stream cannot signal the end of stdin.

/// `RESOLVE PATH`: prints `KIND\nREALPATH` (kind: file, dir, missing, other). The deepest
/// existing ancestor is resolved with `readlink -f`; missing components are appended.
pub(super) const RESOLVE: &str = r#"p=$1; rest=
while [ ! -e "$p" ]; do
  case $p in /|'') break ;; esac
  rest=/${p##*/}$rest; p=${p%/*}; [ -n "$p" ] || p=/
done
r=$(readlink -f "$p") || exit 13
[ -n "$r" ] || exit 13
if [ -n "$rest" ]; then k=missing; elif [ -d "$r" ]; then k=dir; elif [ -f "$r" ]; then k=file; else k=other; fi
printf '%s\n%s' "$k" "$r$rest""#;

/// `READ PATH MAXBYTES`: the file's bytes on stdout.
pub(super) const READ: &str = r#"[ -e "$1" ] || exit 2
[ -d "$1" ] && exit 21
[ -r "$1" ] || exit 13
s=$(wc -c < "$1") || exit 13
[ "$s" -le "$2" ] || exit 27
exec cat "$1""#;

/// `WRITE PATH SIZE`: SIZE bytes from stdin into PATH, atomically (temporary file in the same
/// directory, then `mv`), keeping an existing file's mode.
pub(super) const WRITE: &str = r#"f=$1; d=${f%/*}; [ -n "$d" ] || d=/
[ -d "$f" ] && exit 21
if [ ! -d "$d" ]; then
  mkdir -p "$d" 2>/dev/null || { head -c "$2" >/dev/null; exit 20; }
fi
t=$(mktemp "$d/.lilypad-write.XXXXXX" 2>/dev/null) || { head -c "$2" >/dev/null; exit 13; }
if ! head -c "$2" > "$t"; then rm -f "$t"; exit 28; fi
[ "$(wc -c < "$t")" -eq "$2" ] || { rm -f "$t"; exit 28; }
if [ -f "$f" ]; then chmod "$(stat -c %a "$f")" "$t"; else chmod 644 "$t"; fi
mv -f "$t" "$f" || { rm -f "$t"; exit 13; }"#;

/// `LIST DIR [IGNORE_FILE...]`: in one exec, the NUL-separated `./`-relative paths of regular
/// files below DIR (`.git` pruned), an empty record, then `path NUL content NUL` for each given
/// ignore file (absolute: DIR's ancestors') and each `.gitignore` in the listing (missing files:
/// empty content). Exits with find's status (2 when DIR cannot be entered).
pub(super) const LIST: &str = r#"d=$1; shift
cd "$d" || exit 2
t=$(mktemp) || exit 3
find . -name .git -prune -o -type f -print0 > "$t"; s=$?
cat "$t"; printf '\0'
{ for f in "$@"; do printf '%s\n' "$f"; done
  tr '\0' '\n' < "$t" | grep -E '(^|/)\.gitignore$'
} | while IFS= read -r f; do printf '%s\0' "$f"; cat "$f" 2>/dev/null; printf '\0'; done
rm -f "$t"
exit $s"#;

/// `RUN ID CWD COMMAND SHELL...`: runs `SHELL... COMMAND` in CWD as the leader of a new
/// session (so its process group id is its pid, recorded in /tmp/.lilypad/ID.pgid), after
/// recording the processes that existed before it (ID.before, `pid:starttime`, so a reused
/// pid is not mistaken for an old process), so that a timeout can find what it started even
/// after a `setsid`. The shell argv is split on spaces (it is `/bin/bash -lc` or `sh -c`). `setsid` runs as a background job: not being a process
/// group leader there, it does not fork, so `wait` gets the command's own exit status (an
/// exec's first process often is a group leader, where `setsid` would fork and exit 0).
pub(super) const RUN: &str = r#"id=$1; cwd=$2; cmd=$3; shift 3
shell="$*"
d=/tmp/.lilypad; mkdir -p "$d" 2>/dev/null
for p in /proc/[0-9]*; do
  line=; read -r line < "$p/stat" 2>/dev/null || continue
  set -- ${line##*) }; shift 19; echo "${p#/proc/}:$1"
done > "$d/$id.before" 2>/dev/null
set -- $shell
cd "$cwd" || exit 1
if command -v setsid >/dev/null 2>&1; then
  setsid sh -c 'echo $$ > "$1"; shift; exec "$@"' sh "$d/$id.pgid" "$@" "$cmd" <&0 &
  wait $!
  exit $?
fi
echo $$ > "$d/$id.pgid"
exec "$@" "$cmd""#;

/// `KILL ID`: SIGKILL the process group of exec ID, then (in rounds, until none is found)
/// every process that did not exist before it; prints the pids still alive after that (escapees that need the
/// heavier remedy). Uses only shell builtins after start-up, so it works while a fork bomb
/// holds every pid the limit allows.
pub(super) const KILL: &str = r#"d=/tmp/.lilypad; id=$1; pg=
read -r pg < "$d/$id.pgid" 2>/dev/null
[ -n "$pg" ] && kill -9 -"$pg" 2>/dev/null
before=" "
while read -r p; do before="$before$p "; done < "$d/$id.before" 2>/dev/null
sweep() {
  mode=$1; found=
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = "$$" ] && continue
    line=
    read -r line < "/proc/$p/stat" 2>/dev/null || continue
    set -- ${line##*) }
    [ "$2" = "$$" ] && continue
    [ "$1" = Z ] && continue
    shift 19
    case $before in *" $p:$1 "*) continue ;; esac
    found=1
    if [ "$mode" = kill ]; then kill -9 "$p" 2>/dev/null; else echo "$p"; fi
  done
}
for i in 1 2 3 4 5 6 7 8; do sweep kill; [ -z "$found" ] && break; done
rm -f "$d/$id.pgid" "$d/$id.before" 2>/dev/null
sweep list"#;

/// `REMOVE DIR SIZE`: delete the NUL-separated paths (relative to DIR) read from stdin (SIZE
/// bytes). A path whose directory is a symlink is skipped, so nothing outside DIR is removed.
pub(super) const REMOVE: &str = r#"cd "$1" || exit 2
head -c "$2" | xargs -0 sh -c 'for f; do
  d=${f%/*}; [ "$d" = "$f" ] && d=.
  case $(cd "$d" 2>/dev/null && pwd -P) in "$0"|"$0"/*) rm -rf -- "$f" ;; esac
done' "$(pwd -P)""#;

/// `UNPACK DIR SIZE`: extract the tar read from stdin (SIZE bytes) into DIR.
pub(super) const UNPACK: &str = r#"head -c "$2" | tar -x -f - -C "$1""#;

/// Picks the shell for commands: bash when the image has it (the model was trained on
/// `bash -lc`), else plain `sh -c`. Prints `bash` or `sh`.
pub(super) const DETECT_SHELL: &str = r#"if [ -x /bin/bash ]; then echo bash; else echo sh; fi"#;
