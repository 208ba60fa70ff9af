# Compares `lilypad parse` with reference.py case by case; prints differing cases of one kind and
# counts of each kind. Usage: compare.py LILYPAD CASES TOOLS_JSON [SHOW [KIND]]
# Kinds: same; reasoning, content, calls (differences); calls+errors (Lilypad refused calls it
# reports to the model: the deliberate differences of docs/prompt-format.md).
import json, os, subprocess, sys
bin_, cases_file, tools = sys.argv[1], sys.argv[2], sys.argv[3]
cases = [json.loads(l) for l in open(cases_file)]
ref = subprocess.run(["python3", os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference.py"), tools], input="".join(json.dumps(c)+"\n" for c in cases),
                     capture_output=True, text=True, check=True).stdout.splitlines()
def strict(a, b):
    if type(a) != type(b): return False
    if isinstance(a, dict): return list(a.keys()) == list(b.keys()) and all(strict(a[k], b[k]) for k in a)
    if isinstance(a, list): return len(a) == len(b) and all(strict(x, y) for x, y in zip(a, b))
    return a == b
counts = {}
shown = 0
for c, r in zip(cases, ref):
    r = json.loads(r)
    out = json.loads(subprocess.run([bin_, "parse", "--tools", tools], input=c["text"], capture_output=True, text=True, check=True).stdout)
    ours = [{"name": t["name"], "arguments": t["arguments"]} for t in out["tool_calls"]]
    kind = "same"
    if out["reasoning"] != r["reasoning"]: kind = "reasoning"
    elif out["content"] != r["content"]: kind = "content"
    elif not strict(ours, r["calls"]):
        kind = "calls" + ("+errors" if out["errors"] else "")
    counts[kind] = counts.get(kind, 0) + 1
    if kind == (sys.argv[5] if len(sys.argv) > 5 else "calls") and shown < int(sys.argv[4] if len(sys.argv) > 4 else 5):
        shown += 1
        print("----", kind); print(repr(c["text"])); print("ours:", json.dumps({"r": out["reasoning"], "c": out["content"], "calls": ours, "errors": [e["message"][:80] for e in out["errors"]]}, ensure_ascii=False)); print("sgl: ", json.dumps(r, ensure_ascii=False))
print(counts)
