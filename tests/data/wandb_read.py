# Reads an offline W&B run back for tests/cli/wandb_cli.rs: the run file (`run-ID.wandb`, a
# log of 32 KiB blocks, each record a 7-byte header of checksum, length and kind, then a
# protobuf `Record` of the client's own schema) printed as one JSON object: the run's names,
# config, summary, history and saved files.
import json, struct, sys
from wandb.proto import wandb_internal_pb2

BLOCK = 32768
HEADER = 7

def records(path):
    data = open(path, "rb").read()
    assert data[:4] == b":W&B", "not a W&B transaction log"
    pos, pending = HEADER, b""
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + HEADER])
        chunk = data[pos + HEADER:pos + HEADER + length]
        pos += HEADER + length
        if kind == 0 and length == 0:
            continue
        pending += chunk
        if kind in (1, 4):
            yield pending
            pending = b""

def value(items):
    return {(i.key or "/".join(i.nested_key)): json.loads(i.value_json) for i in items}

out = {"summary": {}, "config": {}, "history": [], "files": []}
for raw in records(sys.argv[1]):
    rec = wandb_internal_pb2.Record()
    rec.ParseFromString(raw)
    kind = rec.WhichOneof("record_type")
    if kind == "run":
        out.update(run_id=rec.run.run_id, project=rec.run.project, entity=rec.run.entity,
                   group=rec.run.run_group, tags=list(rec.run.tags))
        out["config"].update(value(rec.run.config.update))
    elif kind == "config":
        out["config"].update(value(rec.config.update))
    elif kind == "summary":
        out["summary"].update(value(rec.summary.update))
    elif kind == "history":
        out["history"].append(value(rec.history.item))
    elif kind == "files":
        out["files"].extend(f.path for f in rec.files.files)
print(json.dumps(out))
