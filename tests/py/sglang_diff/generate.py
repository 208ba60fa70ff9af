# Random model outputs for scripts/sglang-diff.sh: valid calls with random damage, values that
# test typing, calls inside reasoning. Usage: generate.py SEED COUNT > cases.jsonl
import json, random, sys
random.seed(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
names = ["Read", "Write", "Edit", "Glob", "Bash", " Glob", "Nope"]
params = {"Read": ["file_path", "offset", "limit"], "Write": ["file_path", "content"],
          "Edit": ["file_path", "old_string", "new_string", "replace_all"], "Glob": ["pattern", "path"],
          "Bash": ["command", "description", "timeout"]}
values = ["a.py", "3", " 3", "3 ", "30.0", "1e3", "5.", "-2", "1_000", "true", "True", "true ", " null", "null",
          "NULL", "x\ny", "", "\n", "  indented", "[1, 2]", "{'k': 'v'}", "123456789012345678901234567890",
          "é 你好", "ten", "0x10", "inf", "1.5", "12345678901234567890"]
def value():
    v = random.choice(values)
    lead = random.choice(["\n", "\n", "", "\n\n"])
    trail = random.choice(["\n", "\n", "", "\n\n"])
    return lead + v + trail
def call(closed=True):
    n = random.choice(names)
    s = "<tool_call>\n<function=" + n + ">\n"
    ps = params.get(n.strip(), ["x"])
    for _ in range(random.randint(0, 3)):
        p = random.choice(ps + ["extra"])
        s += "<parameter=" + p + ">" + value()
        s += random.choice(["</parameter>\n", "</parameter>\n", "</parameter>\n", ""])
    s += random.choice(["</function>\n", "</function>\n", ""])
    if closed:
        s += random.choice(["</tool_call>", "</tool_call>", "</tool_call>\n"])
    return s
def output():
    parts = []
    if random.random() < 0.3: parts.append("<think>")
    parts.append(random.choice(["Plan.", "I could run ", "", "hmm\n"]))
    if random.random() < 0.3: parts.append(call())
    if random.random() < 0.85: parts.append(random.choice(["</think>", "\n</think>\n\n"]))
    parts.append(random.choice(["", "Sure.", "Text before. "]))
    for _ in range(random.randint(0, 3)):
        parts.append(call(closed=random.random() < 0.8))
        parts.append(random.choice(["\n", "", " after ", "\n\n"]))
    return "".join(parts).rstrip()
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 500):
    print(json.dumps({"text": output(), "start": "reasoning"}, ensure_ascii=False))
