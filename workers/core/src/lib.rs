//! armada-core: the job model that every family crate and every runner shares.
//!
//! A **job** is one cell of a sweep: (family, benchmark + params, algorithm + params,
//! seed index, horizon, sweep seed). Its [`JobKey`] is a content hash of the canonical
//! spec, so the same cell always has the same key and resuming a sweep means skipping
//! keys whose result exists. A job is a pure function of its spec: randomness comes
//! only from the named RNG streams of [`JobStreams`], and environment streams do not
//! depend on the algorithm, so every algorithm of a seed sees the same draws.
//!
//! A running job is an [`Episode`] that yields one [`StepRecord`] per step, its metrics
//! declared once by [`metrics!`]; [`run_job`] drives it to its horizon (or its early
//! end). The [`Registry`] maps names to families, checks parameters against their
//! schemas and fills in defaults before any work.
//!
//! ```
//! use armada_core::{JobSpec, Params, ParamValue};
//! let mut spec = JobSpec::new("lse", "sinusoidal", "straddle");
//! spec.algorithm_params.insert("beta_sqrt".into(), ParamValue::Float(3.0));
//! spec.seed = 7;
//! spec.horizon = 300;
//! // Keys are stable: the same spec gives the same key.
//! assert_eq!(spec.key(2), spec.clone().key(2));
//! # let _ = Params::new();
//! ```
//!
//! Architecture invariant: this crate knows nothing of gRPC, tokio or Parquet.

mod error;
mod params;
mod record;
mod registry;
mod rng;
mod runner;
mod spec;

/// Kept here for the crates that used it from armada-core before armada-math held it.
pub use armada_math::avx2_dispatch;
pub use error::{JobError, SpecError};
pub use params::{
    concat_defs, count_defs, doc_text, human_number, Choice, ParamDef, ParamKind, ParamType, ParamValue, Parameters,
    Params,
};
pub use record::{MetricDef, MetricKind, MetricValue, Metrics, RecordColumns, StepRecord};
pub use registry::{
    check_param, check_params, find_component, validate_as, AnyEpisode, ComponentDef, Declaration, Episode, Family,
    Registry, ValidJob, MAX_HORIZON, MAX_SEED,
};
pub use rng::{JobStreams, StreamRng};
pub use runner::{run_job, RunOutcome};
pub use spec::{key_salt, JobKey, JobSpec, SeedKeys, STREAM_SALT};
