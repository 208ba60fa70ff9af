# Lilypad's bridge to the official Weights & Biases client: `lilypad run --wandb` writes what to
# log (a JSON file named by the only argument) and runs this with the configured Python. It logs
# the run's metrics and charts, saves its result files, and prints the run's id and folder as
# one JSON line. The client's own environment applies (WANDB_API_KEY, WANDB_MODE=offline, ...).
import json
import sys

import wandb


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
    run.log(spec["metrics"])
    run.summary.update(spec["metrics"])
    for chart in spec["charts"]:
        table = wandb.Table(columns=[chart["column"], "count"], data=chart["rows"])
        run.log({chart["key"]: wandb.plot.bar(table, chart["column"], "count", title=chart["title"])})
    for path in spec["files"]:
        run.save(path, base_path=spec["base_path"], policy="now")
    print(json.dumps({"run_id": run.id, "dir": run.dir}))
    run.finish()


if __name__ == "__main__":
    main()
