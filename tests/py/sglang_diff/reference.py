# The reference reading of a model output for scripts/sglang-diff.sh: SGLang 0.5.21's qwen3_coder
# detector, loaded unmodified from its wheel (SGLANG_DIR), behind the qwen3 reasoning parser's
# non-streamed split (restated below), with stub modules for its heavy imports. Reads JSON lines
# {"text", "start"} on stdin; writes one parsed turn per line.
import os, sys, types, json, importlib.util
WHEEL = os.environ["SGLANG_DIR"]  # the unpacked sglang wheel
sys.path.insert(0, WHEEL)
def stub(name, **attrs):
    m = types.ModuleType(name)
    for k, v in attrs.items(): setattr(m, k, v)
    sys.modules[name] = m
    return m
class Tool:
    def __init__(self, d):
        self.type = "function"
        f = d.get("function", d)
        self.function = types.SimpleNamespace(name=f["name"], parameters=f.get("parameters"))
class ToolChoice: pass
stub("orjson")
pj = stub("partial_json_parser"); stub("partial_json_parser.core"); stub("partial_json_parser.core.options", Allow=object)
for pkg in ["sglang", "sglang.srt", "sglang.srt.entrypoints", "sglang.srt.entrypoints.openai", "sglang.srt.function_call"]:
    m = stub(pkg); m.__path__ = []
stub("sglang.srt.entrypoints.openai.protocol", Tool=Tool, ToolChoice=ToolChoice)
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec); sys.modules[name] = mod; spec.loader.exec_module(mod); return mod
load("sglang.srt.function_call.core_types", WHEEL + "/sglang/srt/function_call/core_types.py")
load("sglang.srt.function_call.utils", WHEEL + "/sglang/srt/function_call/utils.py")
class BaseFormatDetector:
    def __init__(self):
        self._buffer = ""; self.current_tool_id = -1; self.current_tool_name_sent = False
stub("sglang.srt.function_call.base_format_detector", BaseFormatDetector=BaseFormatDetector)
det_mod = load("sglang.srt.function_call.qwen3_coder_detector", WHEEL + "/sglang/srt/function_call/qwen3_coder_detector.py")
import logging; logging.disable(logging.CRITICAL)

def reasoning_split(text, force):
    # Qwen3Detector non-stream: BaseReasoningFormatDetector._detect_and_parse_impl
    in_reasoning = force or "<think>" in text
    if not in_reasoning: return "", text
    t = text
    while t.startswith("<think>"): t = t[len("<think>"):]
    if "</think>" not in t:
        idx = t.find("<tool_call>")
        if idx != -1: return t[:idx], t[idx:]
        return t, ""
    r, n = t.split("</think>", 1)
    return r, n

tools = [Tool(t) for t in json.load(open(sys.argv[1]))]
for line in sys.stdin:
    case = json.loads(line)
    reasoning, rest = reasoning_split(case["text"], case["start"] == "reasoning")
    det = det_mod.Qwen3CoderDetector()
    ok = True
    if "<tool_call>" in rest:
        res = det.detect_and_parse(rest, tools)
        content = res.normal_text
        calls = []
        for c in res.calls:
            calls.append({"name": c.name, "arguments": json.loads(c.parameters)})
    else:
        content, calls = rest, []
    print(json.dumps({"reasoning": reasoning.strip(), "content": content.strip(), "calls": calls}, ensure_ascii=False))
