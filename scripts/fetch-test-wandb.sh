#!/usr/bin/env bash
# Installs the official Weights & Biases client (`wandb` from PyPI) into a virtual environment
# cached outside the clone, once, for the test of `lilypad run --wandb` (tests/cli/wandb_cli.rs),
# which logs in the client's offline mode (no network) and reads the offline run back. Prints an
# `export` line for the test command to evaluate; on failure it prints nothing to stdout and the
# test fails under LILYPAD_TEST_STRICT=1.
set -euo pipefail
cache="${LILYPAD_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lilypad-test}"
wandb_version=0.31.0
venv="$cache/py-wandb-$wandb_version"
if [ ! -f "$venv/.complete" ]; then
  rm -rf "$venv"
  mkdir -p "$cache"
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "wandb==$wandb_version" >&2
  touch "$venv/.complete"
fi
echo "export LILYPAD_TEST_WANDB_PYTHON='$venv/bin/python'"
