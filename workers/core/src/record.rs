//! Step records: one row per step, the tidy unit every later stage uses.

/// How a metric is stored: floats are aggregated over seeds, integers (indices,
/// counts of a single run) are kept in trajectories but not averaged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    Float,
    Int,
}

/// A named per-step metric of a family, in the order of [`StepRecord::values`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetricDef {
    pub name: &'static str,
    pub kind: MetricKind,
    pub doc: &'static str,
}

/// One step of a trajectory. `values[i]` is the metric `metrics()[i]` of the family;
/// integer metrics are carried as exactly representable floats. `elapsed_ms` is the
/// wall-clock time of the step, the only field allowed to differ between two runs.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRecord {
    pub step: u32,
    pub elapsed_ms: f64,
    pub values: Vec<f64>,
}
