"""The official `openai` Python client against `lilypad serve` (driven by tests/serve_openai.rs).

Usage: python openai_peer.py MODE BASE_URL [API_KEY]

Modes:
  scripted  the server replays tests/serve_openai.rs's script: tool calls streamed and whole,
            reasoning, a turn with the tool results, a turn cut by the token cap
  model     the server runs the tiny random model: models list, whole and streamed replies with
            usage, two conversations interleaved (each keeps its cached prefix), the API key
  concurrent  the tiny model again: four clients at once (greedy, streamed and whole), then
            the same four requests one at a time; every reply must be the same
  tokens    the tiny model: `logprobs`/`top_logprobs` whole and streamed, `return_token_ids`,
            /tokenize and /detokenize, token-in /v1/completions equal to the chat reply and to
            the text completion, and the refusals of bad token options
  replicas  the tiny model on two replicas: six conversations of two turns, interleaved; every
            follow-up finds its earlier prompt cached (it stayed on its replica)
  replicas-session  the same, each conversation sending its own X-Session-ID header
  replicas-failover  the same, then replica 0's engine is halted (the test-only fault route):
            every follow-up asked again gets the same reply, those of replica 0 read in full
            on replica 1 (and cached there afterwards), and the server stays ready
  weights   BASE_URL runs the tiny model with --weight-updates; argv[3] is a second tiny model
            file and argv[4] the URL of a server that runs it: a stream runs while
            /update_weights puts the second model in place (the stream finishes on the old
            weights, the server waits for it), then replies are the second server's, the
            conversation's memory is not reused, /v1/models names the file's SHA-256, and a
            file that does not load is refused with the old weights kept
  choices   the tiny model: `n` = 4 chat choices, whole and streamed (each chunk's choice by
            its index, each choice's own finish_reason and logprobs), usage counting the prompt
            once; `n` = 4 on /v1/completions; `best_of` and an `n` over 16 refused
  keys      the server has a keys file whose key API_KEY allows few tokens per minute: a wrong
            key is refused (AuthenticationError), the request id comes back, and the second
            request is over the limit (RateLimitError with Retry-After)

Exits non-zero with a traceback when a check fails; prints `OK MODE` at the end.
"""

import json
import sys
import threading

import openai
from openai import OpenAI

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "Read",
            "description": "Read a file.",
            "parameters": {
                "type": "object",
                "properties": {
                    "file_path": {"type": "string", "description": "path"},
                    "offset": {"type": "integer", "description": "first line"},
                    "limit": {"type": "integer", "description": "max lines"},
                },
                "required": ["file_path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "Bash",
            "description": "Run a command.",
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "command"},
                    "timeout": {"type": "number", "description": "seconds"},
                },
                "required": ["command"],
            },
        },
    },
]


def extra(obj, name):
    """A field the OpenAI schema does not have (`reasoning_content`), as the client keeps it."""
    value = getattr(obj, name, None)
    if value is None and getattr(obj, "model_extra", None):
        value = obj.model_extra.get(name)
    return value


def stream_turn(client, model, messages, **kw):
    """Stream one reply; fold it the way OpenAI's docs show, by tool-call index."""
    reasoning, content, calls, finish, usage, chunks = "", "", {}, None, None, 0
    stream = client.chat.completions.create(
        model=model,
        messages=messages,
        tools=TOOLS,
        stream=True,
        stream_options={"include_usage": True},
        **kw,
    )
    for chunk in stream:
        chunks += 1
        if chunk.usage is not None:
            usage = chunk.usage
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        reasoning += extra(delta, "reasoning_content") or ""
        content += delta.content or ""
        for tc in delta.tool_calls or []:
            slot = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
            if tc.id:
                slot["id"] = tc.id
            if tc.function and tc.function.name:
                slot["name"] += tc.function.name
            if tc.function and tc.function.arguments:
                slot["arguments"] += tc.function.arguments
        if choice.finish_reason:
            finish = choice.finish_reason
    ordered = [calls[i] for i in sorted(calls)]
    return reasoning, content, ordered, finish, usage, chunks


def scripted(client):
    model = client.models.list().data[0].id
    assert model == "script", model
    messages = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Look at app.py and list the files."},
    ]
    # Turn 1, streamed: reasoning, content, two calls typed by the schemas above.
    reasoning, content, calls, finish, usage, chunks = stream_turn(client, model, messages)
    assert reasoning == "I should read the file first.", repr(reasoning)
    assert content == "Reading it.", repr(content)
    assert finish == "tool_calls", finish
    assert usage is not None and usage.completion_tokens > 0, usage
    assert chunks > 5, chunks
    assert [c["name"] for c in calls] == ["Read", "Bash"], calls
    args0 = json.loads(calls[0]["arguments"])
    assert args0 == {"file_path": "src/app.py", "offset": 3, "limit": 10}, args0
    args1 = json.loads(calls[1]["arguments"])
    assert args1 == {"command": "ls -la\nwc -l src/*.py", "timeout": 30}, args1
    assert calls[0]["id"] and calls[0]["id"] != calls[1]["id"], calls

    # Turn 2: the results go back; a whole (non-streamed) reply with one call.
    messages.append(
        {
            "role": "assistant",
            "content": content,
            "reasoning_content": reasoning,
            "tool_calls": [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in calls
            ],
        }
    )
    messages.append({"role": "tool", "tool_call_id": calls[0]["id"], "content": "src/app.py\n3. x = 1"})
    messages.append({"role": "tool", "tool_call_id": calls[1]["id"], "content": "Exit code: 0\nSTDOUT:\napp.py\nSTDERR:\n"})
    r = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
    msg = r.choices[0].message
    assert r.choices[0].finish_reason == "tool_calls", r
    assert extra(msg, "reasoning_content") == "Now the edit.", msg
    assert msg.content is None, msg
    assert len(msg.tool_calls) == 1, msg
    call = msg.tool_calls[0]
    assert call.function.name == "Read", call
    assert json.loads(call.function.arguments) == {"file_path": "src/app.py"}, call
    ids = {c["id"] for c in calls}
    assert call.id not in ids, "ids stay unique within a conversation"
    assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0, r.usage

    # Turn 3: the final answer, no calls.
    r = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
    assert r.choices[0].finish_reason == "stop", r
    assert r.choices[0].message.content == "Done: x is 1.", r.choices[0].message
    assert not r.choices[0].message.tool_calls

    # Turn 4: cut by the token cap (the scripted engine counts pieces as tokens).
    reasoning, content, calls, finish, usage, _ = stream_turn(client, model, messages, max_tokens=3)
    assert finish == "length", finish
    assert usage.completion_tokens == 3, usage
    assert not calls and content == "", (calls, content)


def model_checks(client, key):
    models = client.models.list().data
    assert [m.id for m in models] == ["tiny-chat"], models
    model = models[0].id

    # Whole reply: token cap reached, usage counted.
    r = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "say something"}],
        max_tokens=8,
        temperature=0.7,
        seed=3,
    )
    assert r.object == "chat.completion", r
    assert r.choices[0].finish_reason == "length", r
    assert r.usage.completion_tokens == 8, r.usage
    assert r.usage.total_tokens == r.usage.prompt_tokens + 8, r.usage

    # Two conversations interleaved, with tools: each keeps its own cached prefix.
    def conv(system, task):
        return [{"role": "system", "content": system}, {"role": "user", "content": task}]

    a = conv("You are careful.", "task A: fix the bug in io.py")
    b = conv("You are quick.", "task B: add a test for parse()")
    seen = {}
    for name, msgs in (("A", a), ("B", b)):
        reasoning, content, calls, finish, usage, chunks = stream_turn(
            client, model, msgs, max_tokens=6, temperature=0.7, seed=1
        )
        assert finish == "length", finish
        assert usage.completion_tokens == 6, usage
        assert usage.prompt_tokens_details.cached_tokens == 0, usage
        seen[name] = usage.prompt_tokens
        msgs.append({"role": "assistant", "content": content, "reasoning_content": reasoning})
        msgs.append({"role": "user", "content": "continue"})
    for name, msgs in (("A", a), ("B", b)):
        *_, usage, _ = stream_turn(client, model, msgs, max_tokens=4, temperature=0.7, seed=2)
        cached = usage.prompt_tokens_details.cached_tokens
        assert cached + 20 > seen[name], f"{name}: cached {cached} of {seen[name]}: {usage}"

    # The API key.
    if key:
        bad = OpenAI(base_url=client.base_url, api_key="wrong", max_retries=0)
        try:
            bad.models.list()
        except openai.AuthenticationError:
            pass
        else:
            raise AssertionError("a wrong key was accepted")


def concurrent_checks(client):
    model = client.models.list().data[0].id
    requests = [
        (
            [
                {"role": "system", "content": f"You are agent {i}."},
                {"role": "user", "content": f"task {i}: " + "fix the bug " * (i * 3 + 1)},
            ],
            10 + 4 * i,
            i % 2 == 0,
        )
        for i in range(4)
    ]

    def ask(messages, max_tokens, streamed):
        kw = dict(max_tokens=max_tokens, temperature=0)
        if streamed:
            reasoning, content, calls, finish, usage, _ = stream_turn(client, model, messages, **kw)
            return (reasoning, content, finish, usage.completion_tokens)
        r = client.chat.completions.create(model=model, messages=messages, tools=TOOLS, **kw)
        m = r.choices[0].message
        return (
            extra(m, "reasoning_content") or "",
            m.content or "",
            r.choices[0].finish_reason,
            r.usage.completion_tokens,
        )

    together = [None] * len(requests)
    errors = []
    start = threading.Barrier(len(requests))

    def worker(i):
        try:
            start.wait()
            together[i] = ask(*requests[i])
        except Exception as e:  # reported below, with the others
            errors.append((i, repr(e)))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(requests))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    alone = [ask(*r) for r in requests]
    for i, (a, b) in enumerate(zip(together, alone)):
        assert a == b, f"request {i}: together {a!r} alone {b!r}"
        assert a[3] == requests[i][1], (i, a)
    print("together and alone:", [r[3] for r in together])


class Answer:
    def __init__(self, status, body):
        self.status_code, self.body = status, body

    def json(self):
        return json.loads(self.body)


def post(client, path, body):
    """A request to one of the server's routes beside the OpenAI API (vLLM's)."""
    import urllib.error
    import urllib.request

    root = str(client.base_url).rstrip("/").removesuffix("/v1")
    req = urllib.request.Request(
        root + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return Answer(r.status, r.read())
    except urllib.error.HTTPError as e:
        return Answer(e.code, e.read())


def token_checks(client):
    model = client.models.list().data[0].id
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "list the files, then read main.rs"},
    ]
    asked = dict(model=model, messages=messages, max_tokens=12, temperature=0)

    # Whole: a rating per token, greedy picks rate highest, the ids beside them.
    r = client.chat.completions.create(
        **asked, logprobs=True, top_logprobs=2, extra_body={"return_token_ids": True}
    )
    choice = r.choices[0]
    content = choice.logprobs.content
    ids = choice.model_extra["token_ids"]
    prompt_ids = r.model_extra["prompt_token_ids"]
    assert len(content) == len(ids) > 0, (len(content), len(ids))
    for t in content:
        assert len(t.top_logprobs) == 2, t
        assert t.logprob <= 0 and abs(t.logprob - t.top_logprobs[0].logprob) < 1e-6, t
        assert bytes(t.bytes).decode("utf-8", "replace") == t.token, t
    assert r.usage.prompt_tokens == len(prompt_ids), (r.usage, len(prompt_ids))
    # The prompt's ids are what /tokenize gives for the same messages.
    tok = post(client, "/tokenize", {"model": model, "messages": messages}).json()
    assert tok["tokens"] == prompt_ids and tok["count"] == len(prompt_ids), tok
    # The generated ids read back as the tokens' bytes.
    text = post(client, "/detokenize", {"model": model, "tokens": ids}).json()["prompt"]
    assert text == b"".join(bytes(t.bytes) for t in content).decode("utf-8", "replace"), text

    # Streamed: the same tokens and ratings, spread over the chunks.
    stream = client.chat.completions.create(
        **asked,
        logprobs=True,
        top_logprobs=2,
        stream=True,
        extra_body={"return_token_ids": True},
    )
    streamed, streamed_ids, streamed_prompt = [], [], None
    for chunk in stream:
        if not chunk.choices:
            continue
        c = chunk.choices[0]
        if c.logprobs is not None and c.logprobs.content:
            streamed.extend(c.logprobs.content)
        streamed_ids.extend(c.model_extra.get("token_ids") or [])
        streamed_prompt = chunk.model_extra.get("prompt_token_ids") or streamed_prompt
    assert streamed_ids == ids, (streamed_ids, ids)
    assert streamed_prompt == prompt_ids
    assert [t.token for t in streamed] == [t.token for t in content]
    assert all(abs(a.logprob - b.logprob) < 1e-5 for a, b in zip(streamed, content))

    # Token in: the chat's prompt ids as a completions prompt give the chat's tokens.
    c = client.completions.create(
        model=model,
        prompt=prompt_ids,
        max_tokens=12,
        temperature=0,
        logprobs=1,
        extra_body={"return_token_ids": True},
    )
    assert c.choices[0].model_extra["token_ids"] == ids, (c.choices[0], ids)
    assert c.usage.prompt_tokens == len(prompt_ids)
    lp = c.choices[0].logprobs
    assert len(lp.token_logprobs) == len(ids)
    assert all(abs(a - b.logprob) < 1e-5 for a, b in zip(lp.token_logprobs, content))
    # ... and so does the same prompt as text.
    prompt_text = post(client, "/detokenize", {"tokens": prompt_ids}).json()["prompt"]
    again = post(client, "/tokenize", {"prompt": prompt_text}).json()["tokens"]
    assert again == prompt_ids, "detokenize then tokenize gives the ids back"
    t = client.completions.create(
        model=model,
        prompt=prompt_text,
        max_tokens=12,
        temperature=0,
        extra_body={"return_token_ids": True},
    )
    assert t.choices[0].model_extra["token_ids"] == ids
    assert t.choices[0].text == c.choices[0].text

    # Bad token options are refused with a message.
    for bad in (
        dict(logprobs=True, top_logprobs=21),
        dict(top_logprobs=3),
    ):
        try:
            client.chat.completions.create(**asked, **bad)
        except openai.BadRequestError as e:
            assert "top_logprobs" in str(e), e
        else:
            raise AssertionError(f"accepted {bad}")
    try:
        client.completions.create(model=model, prompt=[1, 2, 10**9], max_tokens=2)
    except openai.BadRequestError as e:
        assert "not a token id" in str(e), e
    else:
        raise AssertionError("an id outside the vocabulary was accepted")
    print("tokens:", len(ids), "generated,", len(prompt_ids), "in the prompt")
def keys_checks(base, key):
    wrong = OpenAI(base_url=base, api_key="not-a-key", max_retries=0, timeout=120)
    messages = [{"role": "user", "content": "hi"}]
    try:
        wrong.chat.completions.create(model="script", messages=messages)
        raise AssertionError("a wrong key was let in")
    except openai.AuthenticationError as e:
        assert e.status_code == 401, e
        assert e.body["type"] == "invalid_api_key", e.body
        assert e.code == "invalid_api_key", e.code
    client = OpenAI(base_url=base, api_key=key, max_retries=0, timeout=120)
    raw = client.chat.completions.with_raw_response.create(
        model="script", messages=messages, extra_headers={"X-Request-Id": "py-req-1"}
    )
    assert raw.headers["x-request-id"] == "py-req-1", dict(raw.headers)
    reply = raw.parse()
    assert reply.usage.total_tokens > 0, reply
    print("first:", reply.choices[0].message.content, reply.usage.total_tokens, "tokens")
    try:
        client.chat.completions.create(model="script", messages=messages)
        raise AssertionError("the key's tokens per minute were not enforced")
    except openai.RateLimitError as e:
        assert e.status_code == 429, e
        assert e.body["type"] == "rate_limit_exceeded", e.body
        assert e.code == "rate_limit_exceeded", e.code
        retry = int(e.response.headers["retry-after"])
        assert 1 <= retry <= 60, retry
        assert e.response.headers.get("x-request-id"), dict(e.response.headers)
        print("over the limit: retry after", retry, "s")


def conversations(n):
    return [
        [
            {"role": "system", "content": f"You are agent {i}; be brief."},
            {"role": "user", "content": f"task {i}: rename the helper in module_{i}.py"},
        ]
        for i in range(n)
    ]


def turn(client, model, msgs, session):
    """One greedy streamed turn: (reasoning, content, usage)."""
    kw = dict(max_tokens=6, temperature=0)
    if session:
        kw["extra_headers"] = {"X-Session-ID": session}
    reasoning, content, calls, finish, usage, _ = stream_turn(client, model, msgs, **kw)
    assert finish == "length", finish
    return reasoning, content, usage


def two_turns(client, model, convs, sessions):
    """Turn 1 of every conversation, then turn 2 of every one (interleaved): each follow-up
    must find its first prompt cached. Returns the follow-ups' replies and prompt sizes."""
    first = []
    for msgs, session in zip(convs, sessions):
        reasoning, content, usage = turn(client, model, msgs, session)
        first.append(usage.prompt_tokens)
        msgs.append({"role": "assistant", "content": content, "reasoning_content": reasoning})
        msgs.append({"role": "user", "content": "continue"})
    replies = []
    for i, (msgs, session) in enumerate(zip(convs, sessions)):
        reasoning, content, usage = turn(client, model, msgs, session)
        cached = usage.prompt_tokens_details.cached_tokens
        assert cached + 20 > first[i], f"conversation {i}: cached {cached} of {first[i]}: {usage}"
        replies.append((reasoning, content, usage.prompt_tokens))
    return replies


def replica_checks(client, mode):
    model = client.models.list().data[0].id
    convs = conversations(6)
    sessions = [None] * 6
    if mode != "replicas":
        # Sessions are named apart from the conversations (an agent's own ids).
        sessions = [f"session-{i}-of-{mode}" for i in range(6)]
    replies = two_turns(client, model, convs, sessions)
    print("follow-ups cached on their replicas:", [r[2] for r in replies])
    if mode != "replicas-failover":
        return
    halted = post(client, "/test/replicas/0/halt", {})
    assert halted.status_code == 200, (halted.status_code, halted.body)
    moved = []
    for i, (msgs, session) in enumerate(zip(convs, sessions)):
        reasoning, content, usage = turn(client, model, msgs, session)
        assert (reasoning, content, usage.prompt_tokens) == replies[i], (
            f"conversation {i}: {(reasoning, content, usage.prompt_tokens)!r} after the failure, "
            f"{replies[i]!r} before"
        )
        # A conversation that moved lost its memory: at most its saved head (the system
        # prompt and tools, loaded from disk: docs/models.md, "The warm head") is cached, not
        # its turns; one that stayed reads only its last token or so.
        if usage.prompt_tokens_details.cached_tokens + 20 < usage.prompt_tokens:
            moved.append(i)
    # Conversations spread over both replicas: some lived on replica 0 and moved, read again
    # on replica 1; the others kept their memory.
    assert 0 < len(moved) < 6, f"moved {moved}"
    for i in moved:
        *_, usage = turn(client, model, convs[i], sessions[i])
        cached = usage.prompt_tokens_details.cached_tokens
        assert cached + 20 > usage.prompt_tokens, f"moved {i}: cached {cached}: {usage}"
    print("moved to replica 1:", moved)


def greedy(client, asked):
    """The token ids of a greedy reply."""
    extra = dict(asked.get("extra_body") or {}, return_token_ids=True)
    r = client.chat.completions.create(**dict(asked, extra_body=extra))
    return r.choices[0].model_extra["token_ids"], r


def weight_version(client):
    import time

    deadline = time.time() + 60
    while True:
        v = client.models.list().data[0].model_extra.get("weight_version")
        if v is not None or time.time() > deadline:
            return v
        time.sleep(0.1)


def weights_checks(client, new_model, reference_base):
    import hashlib
    import time

    model = client.models.list().data[0].id
    reference = OpenAI(base_url=reference_base, api_key="unused", max_retries=0, timeout=120)
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "list the files, then read main.rs"},
    ]
    short = dict(model=model, messages=messages, max_tokens=12, temperature=0)
    # vLLM's `ignore_eos`: the tiny model would end after a few tokens.
    long = dict(
        model=model,
        messages=messages,
        max_tokens=3500,
        temperature=0,
        extra_body={"ignore_eos": True},
    )
    first = weight_version(client)
    assert first and first.startswith("sha256:"), first
    old_ids, _ = greedy(client, short)
    new_ids, _ = greedy(reference, short)
    assert old_ids != new_ids, "the two tiny models reply alike: the test cannot tell them apart"
    old_long, _ = greedy(client, long)
    assert len(old_long) == 3500, f"ignore_eos: the reply runs to the cap: {len(old_long)}"

    # A stream runs; the update is posted once its first token came.
    started, ended = threading.Event(), {}
    streamed = []

    def stream():
        extra = dict(long["extra_body"], return_token_ids=True)
        s = client.chat.completions.create(**dict(long, extra_body=extra), stream=True)
        for chunk in s:
            if chunk.choices:
                streamed.extend(chunk.choices[0].model_extra.get("token_ids") or [])
                started.set()
                if chunk.choices[0].finish_reason:
                    ended["at"] = time.monotonic()
        started.set()

    runner = threading.Thread(target=stream)
    runner.start()
    assert started.wait(60), "the stream did not start"
    posted = time.monotonic()
    r = post(client, "/update_weights", {"model_path": new_model})
    runner.join(120)
    body = r.json()
    assert r.status_code == 200 and body["success"] is True, (r.status_code, body)
    assert "at" in ended, "the stream did not finish"
    assert posted < ended["at"], "the update was posted while the stream ran"
    # The server waited for the stream's generation before it put the new weights in place.
    assert body["requests_finished_first"] >= 1, body
    assert streamed == old_long, "the stream finished on the old weights"
    with open(new_model, "rb") as f:
        sha = "sha256:" + hashlib.sha256(f.read()).hexdigest()
    assert body["weight_version"] == sha, body
    assert weight_version(client) == sha
    import urllib.request

    root = str(client.base_url).rstrip("/").removesuffix("/v1")
    with urllib.request.urlopen(root + "/get_weight_version", timeout=60) as g:
        assert json.loads(g.read())["weight_version"] == sha

    # The next replies are the new model's; the memory of the old weights is not reused.
    ids, r = greedy(client, short)
    assert ids == new_ids, (ids, new_ids)
    assert r.usage.prompt_tokens_details.cached_tokens == 0, r.usage
    ids, r = greedy(client, short)
    assert ids == new_ids
    assert r.usage.prompt_tokens_details.cached_tokens > 0, r.usage

    # A file that does not load is refused; the weights in force stay.
    bad = new_model + ".broken"
    with open(bad, "wb") as f:
        f.write(b"GGUF not really")
    r = post(client, "/update_weights_from_disk", {"model_path": bad, "weight_version": "x"})
    assert r.status_code == 400 and r.json()["success"] is False, (r.status_code, r.body)
    assert "stay" in r.json()["message"], r.json()
    assert weight_version(client) == sha
    assert greedy(client, short)[0] == new_ids
    r = post(client, "/update_weights", {"model_path": "/nonexistent.gguf"})
    assert r.status_code == 400 and "not a file" in r.json()["message"], r.body
    print("weights: stream of", len(streamed), "tokens finished on the old weights, body", body)


def choice_checks(client):
    model = client.models.list().data[0].id
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "give four answers"},
    ]
    asked = dict(
        model=model, messages=messages, max_tokens=6, temperature=1.0, seed=5,
        extra_body={"ignore_eos": True},
    )
    one = client.chat.completions.create(**asked)

    def text(m):
        return (extra(m, "reasoning_content") or "") + (m.content or "")

    # Whole: four indexed choices, each with its own finish reason and ratings.
    r = client.chat.completions.create(**asked, n=4, logprobs=True)
    assert [c.index for c in r.choices] == [0, 1, 2, 3], r
    for c in r.choices:
        assert c.finish_reason == "length", c
        assert len(c.logprobs.content) == 6, c.logprobs
    assert r.usage.prompt_tokens == one.usage.prompt_tokens, (r.usage, one.usage)
    assert r.usage.completion_tokens == 4 * 6, r.usage
    whole = [text(c.message) for c in r.choices]
    assert whole[0] == text(one.choices[0].message), "choice 0 has the request's seed"
    assert len(set(whole)) > 1, whole

    # Streamed: each chunk names its choice; folded by index they are the whole reply's.
    stream = client.chat.completions.create(
        **asked, n=4, stream=True, stream_options={"include_usage": True}
    )
    texts, finishes, usage = {}, {}, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for c in chunk.choices:
            assert c.index not in finishes, f"choice {c.index} sent a chunk after its end"
            texts[c.index] = texts.get(c.index, "") + text(c.delta)
            if c.finish_reason:
                finishes[c.index] = c.finish_reason
    assert finishes == {i: "length" for i in range(4)}, finishes
    assert [texts[i] for i in range(4)] == whole, (texts, whole)
    assert usage.prompt_tokens == one.usage.prompt_tokens, usage
    assert usage.completion_tokens == 4 * 6, usage

    # Completions: four choices of one prompt.
    c = client.completions.create(
        model=model, prompt="Once upon a time", max_tokens=5, n=4, temperature=1.0, seed=2,
        extra_body={"ignore_eos": True},
    )
    assert [ch.index for ch in c.choices] == [0, 1, 2, 3], c
    assert all(ch.finish_reason == "length" for ch in c.choices), c
    assert c.usage.completion_tokens == 4 * 5, c.usage

    # Refusals, as the client raises them.
    for call, says in [
        (lambda: client.completions.create(model=model, prompt="x", max_tokens=2, best_of=2),
         "best_of"),
        (lambda: client.chat.completions.create(**asked, n=17), "from 1 to 16"),
    ]:
        try:
            call()
            raise AssertionError(f"not refused: {says}")
        except openai.BadRequestError as e:
            assert says in str(e), e
    print("choices:", whole)


def main():
    mode, base = sys.argv[1], sys.argv[2]
    if mode == "weights":
        client = OpenAI(base_url=base, api_key="unused", max_retries=0, timeout=120)
        weights_checks(client, sys.argv[3], sys.argv[4])
        print(f"OK {mode} (openai {openai.__version__})")
        return
    key = sys.argv[3] if len(sys.argv) > 3 else None
    client = OpenAI(base_url=base, api_key=key or "unused", max_retries=0, timeout=120)
    if mode == "scripted":
        scripted(client)
    elif mode == "model":
        model_checks(client, key)
    elif mode == "concurrent":
        concurrent_checks(client)
    elif mode == "tokens":
        token_checks(client)
    elif mode == "choices":
        choice_checks(client)
    elif mode in ("replicas", "replicas-session", "replicas-failover"):
        replica_checks(client, mode)
    elif mode == "keys":
        keys_checks(base, key)
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(f"OK {mode} (openai {openai.__version__})")


if __name__ == "__main__":
    main()
