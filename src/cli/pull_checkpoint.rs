//! `lilypad pull` of a safetensors checkpoint repository (FrogNano's own): config.json first,
//! its architecture checked before the weights come, then the files `lilypad convert` reads,
//! then the conversion with its vocabulary check, kept in Lilypad's store by repository,
//! commit and type (`crate::hub::Store`). A conversion already there makes the pull a no-op;
//! one that fails the vocabulary check is not kept.

use super::convert::{convert_checked, Vocabulary};
use super::pull::{reporter, PullArgs};
use crate::config::Settings;
use crate::convert::{Mtp, Target};
use crate::hub::{self, ModelName, Plan, Store};
use anyhow::Context;
use std::process::ExitCode;

/// The type to convert to: `--type`, else the name's tag, else the one that fits here (said
/// in one line).
fn choose_type(args: &PullArgs, name: &ModelName) -> anyhow::Result<Target> {
    let given = match (&args.ty, &name.tag) {
        (Some(t), Some(tag)) if !t.eq_ignore_ascii_case(tag) => {
            anyhow::bail!("--type {t} and the tag :{tag} disagree: give one")
        }
        (Some(t), _) | (None, Some(t)) => t.clone(),
        (None, None) => {
            let fit = crate::doctor::fit::recommend(&crate::doctor::fit::Machine::detect());
            eprintln!(
                "type {} (chosen for this machine: {}; --type chooses another)",
                fit.ty, fit.why
            );
            fit.ty.to_string()
        }
    };
    Target::from_name(&given).with_context(|| {
        format!(
            "unknown type {given:?}: one of bf16, f16, f32, q8_0, q6_k, q5_k_m, q4_k_m, q4_0, ..."
        )
    })
}

pub(super) fn run(
    rt: &tokio::runtime::Runtime,
    args: &PullArgs,
    settings: &Settings,
    name: &ModelName,
    plan: &Plan,
) -> anyhow::Result<ExitCode> {
    let target = choose_type(args, name)?;
    let ty = target.name();
    let store = Store {
        root: settings
            .hub
            .converted_dir
            .clone()
            .context("no data directory to keep the converted model in")?,
    };
    let kept = store.path(&plan.repo, &plan.commit, ty);
    let use_it = format!("use it with: lilypad --model {}:{ty}", plan.repo);
    if kept.exists() {
        eprintln!(
            "{} at {} ({}) is already converted to {ty}",
            plan.repo, plan.revision, plan.commit
        );
        println!("{}", kept.display());
        eprintln!("{use_it}");
        return Ok(ExitCode::SUCCESS);
    }
    let mut report = reporter(name, &args.revision);
    // config.json first: a repository of another architecture fails before its weights come.
    let first = rt.block_on(hub::fetch(
        &settings.hub,
        plan,
        &plan.files[..1],
        &mut report,
    ))?;
    let dir = first[0]
        .parent()
        .context("the snapshot of config.json has no folder")?
        .to_path_buf();
    crate::convert::config::ModelConfig::load(&dir)?;
    rt.block_on(hub::fetch(
        &settings.hub,
        plan,
        &plan.files[1..],
        &mut report,
    ))?;
    let folder = kept.parent().context("the store path has no folder")?;
    std::fs::create_dir_all(folder).with_context(|| format!("creating {}", folder.display()))?;
    // Converted under another name, renamed in only once the vocabulary check passes.
    let unchecked = folder.join(format!("{ty}.gguf.unchecked-{}", std::process::id()));
    eprintln!("converting to {ty} into {}", folder.display());
    let checked = convert_checked(&dir, &unchecked, target, Mtp::Keep, None);
    let keep = matches!(checked, Ok(Vocabulary::Same));
    if !keep {
        // What the failure says matters more than a leftover file that cannot be removed.
        let _ = std::fs::remove_file(&unchecked);
    }
    match checked? {
        Vocabulary::Same => {}
        Vocabulary::Differs => anyhow::bail!(
            "the converted vocabulary does not match {}/tokenizer.json: the conversion was not kept",
            dir.display()
        ),
    }
    std::fs::rename(&unchecked, &kept)
        .with_context(|| format!("moving the conversion to {}", kept.display()))?;
    println!("{}", kept.display());
    eprintln!("{use_it}");
    Ok(ExitCode::SUCCESS)
}
