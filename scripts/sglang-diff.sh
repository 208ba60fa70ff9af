#!/usr/bin/env bash
# Differential check of Lilypad's parser against SGLang 0.5.21 (the server FrogNano was trained
# and evaluated behind): generates random outputs, reads each with `lilypad parse` and with
# SGLang's own qwen3_coder detector (from its PyPI wheel, downloaded once without dependencies
# into the cache), and prints the kinds of difference. Needs python3 with pydantic.
# Usage: scripts/sglang-diff.sh [LILYPAD_BIN] [SEED] [COUNT]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$here/target/debug/lilypad}"
seed="${2:-1}"
count="${3:-500}"
cache="${LILYPAD_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lilypad-test}/sglang-0.5.21"
if [ ! -f "$cache/.complete" ]; then
  mkdir -p "$cache"
  python3 -m pip download --quiet --no-deps --dest "$cache" "sglang==0.5.21" >&2
  (cd "$cache" && python3 -m zipfile -e sglang-0.5.21-*.whl . >&2)
  touch "$cache/.complete"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["tools"])' \
  "$here/assets/harness/lilypad.toml" > "$work/tools.json"
python3 "$here/tests/py/sglang_diff/generate.py" "$seed" "$count" > "$work/cases.jsonl"
SGLANG_DIR="$cache" python3 "$here/tests/py/sglang_diff/compare.py" "$bin" "$work/cases.jsonl" \
  "$work/tools.json" 5 calls
