# Lilypad's bridge to the official Weights & Biases client, run with the configured Python by
# `lilypad run --wandb` for the whole batch. The only argument names a JSON file with the run's
# names and starting config. Once the run is open it prints the run's id and folder as one JSON
# line. Then it reads JSON lines on standard input: {"log": {...}} logs Leaf's metrics after a
# result; {"finish": {...}} updates the config, logs the final metrics (also put in the
# summary) and the charts, saves the result files and finishes the run. Standard input closed
# without a finish marks the run failed. The client's own environment applies (WANDB_API_KEY,
# WANDB_MODE=offline, ...).
import json
import sys

import wandb


def finish(run, end) -> None:
    run.config.update(end["config"], allow_val_change=True)
    run.log(end["metrics"])
    run.summary.update(end["metrics"])
    for chart in end["charts"]:
        table = wandb.Table(columns=[chart["column"], "count"], data=chart["rows"])
        run.log({chart["key"]: wandb.plot.bar(table, chart["column"], "count", title=chart["title"])})
    for path in end["files"]:
        run.save(path, base_path=end["base_path"], policy="now")
    run.finish()


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        spec = json.load(handle)
    settings = wandb.Settings(base_url=spec["base_url"]) if spec.get("base_url") else None
    run = wandb.init(
        entity=spec.get("entity"),
        project=spec["project"],
        name=spec.get("name"),
        group=spec.get("group"),
        tags=spec.get("tags") or None,
        id=spec["run_id"],
        resume="allow",
        job_type="evaluation",
        config=spec["config"],
        dir=spec["dir"],
        settings=settings,
    )
    print(json.dumps({"run_id": run.id, "dir": run.dir}), flush=True)
    for line in sys.stdin:
        message = json.loads(line)
        if "log" in message:
            run.log(message["log"])
        elif "finish" in message:
            finish(run, message["finish"])
            return
    run.finish(exit_code=1)


if __name__ == "__main__":
    main()
