//! What a session begins from ([`Beginning`]: new, resumed, a set of attempts, one attempt of a
//! batch), the facts its header records beside it, the steps of its start-up its caller is
//! told of, and what a started session hands back. Data only: the builder that acts on them is
//! `super::session`.

use super::resume::Recorded;
use super::Running;
use crate::protocol::Event;
use crate::sandbox::Sandbox;
use crate::session::Provenance;
use std::sync::Arc;

/// Facts about the run that the session header records beside what the session knows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFacts {
    /// The model with its hash (computed once per batch).
    pub model: Option<crate::session::ModelIdentity>,
    pub preset: Option<String>,
    pub attempt: Option<u32>,
    /// The limits the run was made under (recorded in the provenance).
    pub limits: Option<crate::session::RunLimits>,
}

/// How a session begins.
pub enum Beginning {
    /// A new session of `task` (recorded in its header; empty for none yet).
    New { task: String },
    /// A recorded session continued: its patch and turn records restored in the fresh
    /// sandbox, its conversation rebuilt, its log appended to; an unfinished task goes on
    /// (unless a follow-up is given, [`SessionBuilder::follow_up`](super::SessionBuilder::follow_up)).
    Resumed(Box<Recorded>),
    /// `count` new sessions of `task`, each in its own sandbox: attempt `n` (from 1) samples
    /// with [`attempt_seed`](super::attempts::attempt_seed)`(base_seed, n)` on engine sequence
    /// [`attempt_sequence`](super::attempts::attempt_sequence)`(n)`.
    Attempts {
        task: String,
        count: u32,
        base_seed: u32,
    },
    /// Attempt `number` (from 1) of `task` alone, its other attempts started elsewhere (a
    /// batch): seeded by the same rule as [`Beginning::Attempts`], on the engine sequence the
    /// caller gives ([`SessionBuilder::sequence`](super::SessionBuilder::sequence)).
    Attempt {
        task: String,
        number: u32,
        base_seed: u32,
    },
}

/// How new sessions are numbered as attempts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Numbering {
    /// Sessions that are no attempts: unseeded here, on the builder's sequence.
    Plain,
    /// Attempts 1, 2, ... each on its own sequence, their first prompt read once.
    Set { base_seed: u32 },
    /// Attempt `number` alone, on the builder's sequence.
    One { number: u32, base_seed: u32 },
}

/// What a step of the start-up tells its caller.
#[derive(Debug, Clone, PartialEq)]
pub enum StartStep {
    /// The sandbox is being opened (the image built or set up first when the settings ask).
    OpeningSandbox,
    /// A line from the image's build or setup.
    Image(String),
    /// The resumed session's files go back into the sandbox.
    RestoringFiles,
    /// The resumed session's model memory is being read back.
    RestoringMemory,
}

/// A started session and what its caller needs beside the running agent.
pub struct Started {
    pub running: Running,
    pub sandbox: Arc<dyn Sandbox>,
    /// What the sandbox image lacks for this repository (shown at start), if anything.
    pub notice: Option<String>,
    /// The recorded events of a resumed session (empty for a new one).
    pub earlier: Vec<Event>,
    /// The provenance the session header records.
    pub provenance: Option<Provenance>,
    /// The system prompt the conversation started with.
    pub system_prompt: String,
    /// What to tell about the approval policy once the session is shown (a resume that did
    /// not keep a looser one).
    pub policy_notice: Option<String>,
    /// The attempt this session is (its number from 1 and its seed), for attempts.
    pub attempt: Option<(u32, u32)>,
}
