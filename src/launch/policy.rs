//! The approval policy a session starts with, chosen in one place for every way a session
//! begins: who can answer (a person at the interface, or nobody in a headless run), how it
//! begins (new, resumed, attempts), where its commands run, and `--approve`.
//!
//! Owns that choice and the notice that goes with it (a looser policy a resume did not keep).
//! Does not own reading `--approve` (`crate::protocol::PolicyOverride`, parsed at the command
//! line), what a resumed log recorded (`super::resume::Recorded::policy`), or applying the
//! policy to calls (`crate::agent`).

use super::resume::Recorded;
use super::{Beginning, LaunchError};
use crate::agent::{ApprovalPolicy, Policy, PolicyOverride};
use crate::sandbox::SandboxKind;

/// Who answers the session's approval requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answerer {
    /// A person at the interface.
    Person,
    /// Nobody (a headless run); `allow_host` lets commands run on the host sandbox.
    Nobody { allow_host: bool },
}

/// The policy a session starts with, and what to tell about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartingPolicy {
    pub policy: ApprovalPolicy,
    /// Said once the session is shown: a looser recorded policy that a resume did not keep.
    pub notice: Option<String>,
}

/// The policy of a session that `beginning` starts in a `kind` sandbox, answered by
/// `answerer`, with `approve` (`--approve`) over it:
///
/// - a new session asks a person for edits and commands; attempts run edits without asking
///   (each works on its own copy, and nothing reaches the working tree until the reviewer
///   applies a patch), and commands too in a container, whose network is off;
/// - a headless run asks nobody: everything runs in a container, and on the host commands are
///   refused unless the host was allowed;
/// - a resumed session continues with the policy last recorded, never looser than the one it
///   started with; headless, every `ask` becomes `deny` and `--approve` cannot loosen it.
///
/// Fails when a resumed log records a policy that cannot be read.
pub fn starting_policy(
    answerer: Answerer,
    beginning: &Beginning,
    kind: SandboxKind,
    approve: Option<&PolicyOverride>,
) -> Result<StartingPolicy, LaunchError> {
    let over = |base: ApprovalPolicy| approve.map_or(base, |a| a.over(base));
    let chosen = match (answerer, beginning) {
        (Answerer::Person, Beginning::New { .. }) => plain(over(ApprovalPolicy::default())),
        (Answerer::Person, Beginning::Attempts { .. } | Beginning::Attempt { .. }) => {
            plain(over(attempts_policy(kind)))
        }
        (
            Answerer::Nobody { allow_host },
            Beginning::New { .. } | Beginning::Attempts { .. } | Beginning::Attempt { .. },
        ) => plain(over(headless_policy(kind, allow_host))),
        (Answerer::Person, Beginning::Resumed(rec)) => resumed_by_person(rec, approve)?,
        (Answerer::Nobody { .. }, Beginning::Resumed(rec)) => resumed_headless(rec)?,
    };
    Ok(chosen)
}

fn plain(policy: ApprovalPolicy) -> StartingPolicy {
    StartingPolicy {
        policy,
        notice: None,
    }
}

/// The interface's resume: `--approve` goes over the resumed policy (that is how a looser one
/// is asked for again), and without it a declined policy is told.
fn resumed_by_person(
    rec: &Recorded,
    approve: Option<&PolicyOverride>,
) -> Result<StartingPolicy, LaunchError> {
    let resumed = rec.policy()?;
    Ok(match approve {
        Some(a) => plain(a.over(resumed.policy)),
        None => StartingPolicy {
            policy: resumed.policy,
            notice: resumed.notice(),
        },
    })
}

/// A headless resume: the resumed policy with nobody to ask.
fn resumed_headless(rec: &Recorded) -> Result<StartingPolicy, LaunchError> {
    let resumed = rec.policy()?;
    Ok(StartingPolicy {
        policy: resumed.policy.without_asking(),
        notice: resumed.declined.map(|d| {
            format!(
                "the approval policy was loosened to `{}` during the session; a headless resume keeps `{}` (and asks nobody)",
                d.short_spec(),
                resumed.policy.short_spec()
            )
        }),
    })
}

/// Attempts' policy before `--approve` (see [`starting_policy`]).
fn attempts_policy(kind: SandboxKind) -> ApprovalPolicy {
    let mut p = ApprovalPolicy {
        edits: Policy::Auto,
        ..ApprovalPolicy::default()
    };
    if kind != SandboxKind::Host {
        p.commands = Policy::Auto;
    }
    p
}

/// A headless run's policy before `--approve` (see [`starting_policy`]).
fn headless_policy(kind: SandboxKind, allow_host: bool) -> ApprovalPolicy {
    let mut p = ApprovalPolicy::all(Policy::Auto);
    if kind == SandboxKind::Host && !allow_host {
        p.commands = Policy::Deny;
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new() -> Beginning {
        Beginning::New {
            task: String::new(),
        }
    }

    fn choose(a: Answerer, b: &Beginning, k: SandboxKind, o: Option<&str>) -> ApprovalPolicy {
        let o = o.map(|t| t.parse::<PolicyOverride>().unwrap());
        starting_policy(a, b, k, o.as_ref()).unwrap().policy
    }

    #[test]
    fn each_way_of_beginning_has_its_policy_and_approve_goes_over_it() {
        let attempts = Beginning::Attempts {
            task: String::new(),
            count: 2,
            base_seed: 0,
        };
        let nobody = Answerer::Nobody { allow_host: false };
        let (host, docker) = (SandboxKind::Host, SandboxKind::Docker);
        assert_eq!(
            choose(Answerer::Person, &new(), docker, None),
            ApprovalPolicy::default()
        );
        assert_eq!(
            choose(Answerer::Person, &attempts, docker, None),
            ApprovalPolicy::all(Policy::Auto)
        );
        assert_eq!(
            choose(Answerer::Person, &attempts, host, None).commands,
            Policy::Ask
        );
        assert_eq!(
            choose(nobody, &new(), docker, None),
            ApprovalPolicy::all(Policy::Auto)
        );
        assert_eq!(choose(nobody, &new(), host, None).commands, Policy::Deny);
        let allowed = Answerer::Nobody { allow_host: true };
        assert_eq!(choose(allowed, &new(), host, None).commands, Policy::Auto);
        assert_eq!(
            choose(nobody, &new(), docker, Some("edits=deny")).edits,
            Policy::Deny
        );
    }
}
