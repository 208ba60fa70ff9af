//! The flags of `lilypad run` (clap), apart from what `super::run` does with them.

use super::options::SessionArgs;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The task text; `-` reads it from standard input
    #[arg(value_name = "TASK", conflicts_with_all = ["task", "task_file", "tasks"])]
    pub task_arg: Option<String>,
    /// The task text
    #[arg(long, conflicts_with_all = ["task_file", "tasks"])]
    pub task: Option<String>,
    /// Read the task from a file
    #[arg(long, conflicts_with = "tasks")]
    pub task_file: Option<PathBuf>,
    /// Run many tasks: a JSONL file with `instance_id`, `task` (or `problem_statement`) and
    /// optionally `repo` per line, or a SWE-bench file (`repo` "owner/name", `base_commit`)
    /// with --repos-dir, a folder of Harbor tasks, or PatchEval's dataset file
    /// (`patcheval_verified.json`)
    #[arg(long)]
    pub tasks: Option<PathBuf>,
    /// Log the batch to Weights & Biases as Leaf does (Leaf's metrics, results.jsonl and
    /// summary.json), through the official client (`[wandb]` in the config file for the rest)
    #[arg(long, value_name = "ENTITY/PROJECT")]
    pub wandb: Option<String>,
    /// Your copy of Leaf (a checkout or installed package): PatchEval's task text is then
    /// Leaf's instruction, read from it [default: a wording of Lilypad's own]
    #[arg(long, value_name = "PATH")]
    pub leaf: Option<PathBuf>,
    /// Attempts per task, each with its own seed (--seed plus the attempt number minus 1),
    /// sandbox and engine sequence [default: 1, or the preset's seeds]
    #[arg(long)]
    pub attempts: Option<u32>,
    /// Tries of an attempt that ends in an error (a sandbox or model failure, a verifier
    /// that wrote no reward), each from scratch in a fresh sandbox, inside this batch
    /// [default: 1, or the preset's max_attempts]
    #[arg(long, value_name = "N")]
    pub max_attempts: Option<u32>,
    /// Attempts run at the same time
    #[arg(long, default_value_t = 1)]
    pub parallel: usize,
    /// In-process engines the attempts are spread over, each with its own context: on its own
    /// GPU, or with its share of the CPU threads; an attempt runs on the one with the fewest
    /// attempts running [default: one per GPU device, at most --parallel; one without a GPU]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub replicas: Option<u16>,
    /// Print events (one task) or progress events (a batch) as JSON lines
    #[arg(long)]
    pub json: bool,
    /// Where to write the patch and trajectory (a batch: results/, predictions.jsonl and
    /// report.json) [default for a batch: lilypad-batch]
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A command run in each attempt's sandbox after the agent finishes; exit status 0 passes
    /// [default: the config file's `[sandbox] check`]
    #[arg(long)]
    pub check: Option<String>,
    /// Local clones of the tasks' "owner/name" repositories (DIR/owner/name or
    /// DIR/owner__name), each checked out at the task's base_commit
    #[arg(long, value_name = "DIR")]
    pub repos_dir: Option<PathBuf>,
    /// The sandbox image of each task that names none, e.g.
    /// `swebench/sweb.eval.x86_64.{instance}:latest` (`{instance}`: the id as SWE-bench's
    /// image names write it; `{instance_id}`: as it is)
    #[arg(long, value_name = "TEMPLATE")]
    pub image_template: Option<String>,
    /// Where the images of --image-template hold each task's repository; without --repos-dir
    /// the sandbox works there, on the image's own checkout
    #[arg(long, value_name = "DIR", default_value = "/testbed")]
    pub image_workdir: String,
    /// Put this registry (and path) in front of every image that names no registry of its
    /// own, e.g. `mirror.example.com/hub`: `swebench/x:latest` becomes
    /// `mirror.example.com/hub/swebench/x:latest` [default: the config file's `[sandbox]
    /// image_registry`]
    #[arg(long, value_name = "PREFIX")]
    pub image_registry: Option<crate::sandbox::image::reference::RegistryPrefix>,
    /// A Kubernetes Secret the sandbox pods pull their images with (`imagePullSecrets`);
    /// repeat it for several [default: the config file's `[sandbox.kube] pull_secrets`]
    #[arg(long, value_name = "NAME")]
    pub pull_secret: Vec<String>,
    /// Pin every task's image by this digest lock (Leaf's format: image reference to
    /// `name@sha256:<digest>`) before the batch starts; a task the lock does not pin stops the
    /// run. Without FILE: the file the preset names (`image_locks/sweb-v-20260904.json` for
    /// swebench-verified), from the current directory
    #[arg(long, value_name = "FILE", num_args = 0..=1, requires = "tasks")]
    pub image_lock: Option<Option<PathBuf>>,
    /// An evaluation preset (Leaf's): steps, context, per-turn cap, wall time, attempts and
    /// sampling; explicit flags win. `--preset list` prints them
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
    /// Record every sampled token with its log-probability and write a rollout per attempt
    /// (`rollout.json` and Harbor's ATIF `trajectory.atif.json` in a batch's attempt folder;
    /// `ID.rollout.json` and `ID.atif.json` beside a single task's trajectory): the in-process
    /// engine, or an endpoint that returns token ids and log-probabilities (`lilypad serve`,
    /// vLLM's `return_token_ids`)
    #[arg(long)]
    pub rollout: bool,
    /// Before each attempt of a batch, load the model file anew when another file has been
    /// renamed over it (a trainer's next round of weights); each attempt records the weights
    /// it ran with
    #[arg(long, requires = "tasks")]
    pub reload_weights: bool,
    /// Write the agent's final answer (its last message) to FILE when a single task ends
    #[arg(long, value_name = "FILE", conflicts_with = "tasks")]
    pub output_last_message: Option<PathBuf>,
    /// Put the project instructions (AGENTS.md files) in every batch task's first message
    /// too [default: the config file's `[prompt] project_doc_in_batches`, else off]
    #[arg(long, conflicts_with = "no_project_doc")]
    pub project_doc: bool,
    #[command(flatten)]
    pub session: SessionArgs,
}
