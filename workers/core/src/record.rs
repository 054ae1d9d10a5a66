//! Step records: one row per step, the tidy unit every later stage uses.
//!
//! A family declares its metrics once, as a struct made by [`metrics!`]: each field is a
//! metric, with its name, its type ([`f64`] is a float metric, an integer or
//! `Option<integer>` an integer metric) and its meaning. An episode builds that struct by
//! name; the runner turns it into a [`StepRecord`], whose values follow the declaration's
//! order, so two metrics can never be swapped by position.

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

/// Records as columns: record `i` is `steps[i]`, `elapsed_ms[i]` and `metrics[m][i]` for
/// each metric `m`. The form records travel in on the wire (one packed field per column,
/// nothing per record); [`RecordColumns::shape_error`] says whether the columns agree.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordColumns {
    pub steps: Vec<u32>,
    pub elapsed_ms: Vec<f64>,
    pub metrics: Vec<Vec<f64>>,
}

impl RecordColumns {
    /// Rows as columns, or `None` when they differ in width (no table holds them; the
    /// rows themselves go to whoever names the record at fault).
    pub fn from_rows(records: &[StepRecord]) -> Option<RecordColumns> {
        let width = records.first().map_or(0, |r| r.values.len());
        let mut metrics = vec![Vec::with_capacity(records.len()); width];
        for r in records {
            if r.values.len() != width {
                return None;
            }
            for (column, &v) in metrics.iter_mut().zip(&r.values) {
                column.push(v);
            }
        }
        Some(RecordColumns {
            steps: records.iter().map(|r| r.step).collect(),
            elapsed_ms: records.iter().map(|r| r.elapsed_ms).collect(),
            metrics,
        })
    }

    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Why the columns are not one table: a column whose length is not the steps'.
    pub fn shape_error(&self) -> Option<String> {
        let n = self.steps.len();
        if self.elapsed_ms.len() != n {
            return Some(format!("columns.elapsed_ms: {} values for {n} steps", self.elapsed_ms.len()));
        }
        let (m, column) = self.metrics.iter().enumerate().find(|(_, c)| c.len() != n)?;
        Some(format!("columns.metrics[{m}]: {} values for {n} steps", column.len()))
    }

    /// Record `i`'s metric values, in schema order.
    pub fn values(&self, i: usize) -> impl ExactSizeIterator<Item = f64> + Clone + '_ {
        self.metrics.iter().map(move |column| column[i])
    }
}

/// The metrics of one step, built by name: a struct made by [`metrics!`], or a hand-written
/// type whose metric names are only known at run time.
pub trait Metrics {
    /// The metrics, in the order of [`Metrics::into_values`].
    fn defs() -> &'static [MetricDef];
    /// The values in the order of [`Metrics::defs`].
    fn into_values(self) -> Vec<f64>;
}

/// A Rust type a metric can have: it decides the metric's [`MetricKind`].
pub trait MetricValue: Copy {
    const KIND: MetricKind;
    /// The value as a record carries it (an integer exactly; a missing one as NaN).
    fn to_value(self) -> f64;
}

impl MetricValue for f64 {
    const KIND: MetricKind = MetricKind::Float;
    fn to_value(self) -> f64 {
        self
    }
}

macro_rules! int_metric_values {
    ($($t:ty),*) => {$(
        impl MetricValue for $t {
            const KIND: MetricKind = MetricKind::Int;
            // Every integer a metric holds (counts, indices) is far below 2^53: exact.
            fn to_value(self) -> f64 {
                self as f64
            }
        }
        /// A missing integer (say, no arm pulled at step 0) is NaN in the record, null in
        /// the trajectory file.
        impl MetricValue for Option<$t> {
            const KIND: MetricKind = MetricKind::Int;
            fn to_value(self) -> f64 {
                self.map_or(f64::NAN, |v| v as f64)
            }
        }
    )*};
}
int_metric_values!(i64, u32, u64, usize);

/// Declare a family's per-step metrics once, as a struct: each field is a metric, named by
/// the field, typed by the field's type ([`MetricValue`]), documented by the string after
/// it. The struct implements [`Metrics`], and `Name::DEFS` is the declaration's
/// `metrics` list.
///
/// ```
/// armada_core::metrics! {
///     /// What a toy run reports.
///     pub struct ToyMetrics {
///         regret: f64 = "simple regret after this step",
///         arm: Option<u32> = "arm pulled (missing at step 0)",
///     }
/// }
/// use armada_core::{Metrics, MetricKind};
/// assert_eq!(ToyMetrics::DEFS[1].name, "arm");
/// assert_eq!(ToyMetrics::DEFS[1].kind, MetricKind::Int);
/// let row = ToyMetrics { regret: 0.5, arm: None }.into_values();
/// assert_eq!(row[0], 0.5);
/// assert!(row[1].is_nan());
/// ```
#[macro_export]
macro_rules! metrics {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $($field:ident : $ty:ty = $doc:literal),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        $vis struct $name {
            $(#[doc = $doc] pub $field: $ty,)*
        }

        impl $name {
            /// The metrics, in record order.
            pub const DEFS: &'static [$crate::MetricDef] = &[$($crate::MetricDef {
                name: stringify!($field),
                kind: <$ty as $crate::MetricValue>::KIND,
                doc: $doc,
            }),*];
        }

        impl $crate::Metrics for $name {
            fn defs() -> &'static [$crate::MetricDef] {
                Self::DEFS
            }
            fn into_values(self) -> Vec<f64> {
                vec![$($crate::MetricValue::to_value(self.$field)),*]
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::metrics! {
        struct Mixed {
            loss: f64 = "a float",
            index: usize = "an index",
            steps: u32 = "a count",
            missing: Option<i64> = "absent at step 0",
        }
    }

    #[test]
    fn rows_become_columns_and_read_back_by_row() {
        let rows = [
            StepRecord { step: 0, elapsed_ms: 0.5, values: vec![1.0, f64::NAN] },
            StepRecord { step: 1, elapsed_ms: 2.0, values: vec![-3.0, 7.0] },
        ];
        let columns = RecordColumns::from_rows(&rows).unwrap();
        assert_eq!(columns.steps, [0, 1]);
        assert_eq!(columns.elapsed_ms, [0.5, 2.0]);
        assert_eq!(columns.metrics[0], [1.0, -3.0]);
        assert_eq!(columns.values(1).collect::<Vec<_>>(), [-3.0, 7.0]);
        assert!(columns.values(0).nth(1).unwrap().is_nan());
        assert_eq!(columns.shape_error(), None);
        assert_eq!(RecordColumns::from_rows(&[]), Some(RecordColumns::default()));
        let ragged = [rows[0].clone(), StepRecord { step: 1, elapsed_ms: 1.0, values: vec![1.0] }];
        assert_eq!(RecordColumns::from_rows(&ragged), None);
    }

    #[test]
    fn columns_of_unequal_length_name_the_column() {
        let mut columns =
            RecordColumns { steps: vec![0, 1], elapsed_ms: vec![0.0, 1.0], metrics: vec![vec![1.0, 2.0]; 3] };
        columns.metrics[2].pop();
        assert_eq!(columns.shape_error().unwrap(), "columns.metrics[2]: 1 values for 2 steps");
        columns.elapsed_ms.push(3.0);
        assert_eq!(columns.shape_error().unwrap(), "columns.elapsed_ms: 3 values for 2 steps");
    }

    #[test]
    fn fields_become_metrics_in_declaration_order_with_their_kinds() {
        let names: Vec<_> = Mixed::DEFS.iter().map(|m| (m.name, m.kind, m.doc)).collect();
        assert_eq!(
            names,
            [
                ("loss", MetricKind::Float, "a float"),
                ("index", MetricKind::Int, "an index"),
                ("steps", MetricKind::Int, "a count"),
                ("missing", MetricKind::Int, "absent at step 0"),
            ]
        );
        let values = Mixed { loss: -0.25, index: 7, steps: 3, missing: Some(-2) }.into_values();
        assert_eq!(values, [-0.25, 7.0, 3.0, -2.0]);
        let values = Mixed { loss: f64::NAN, index: 0, steps: 0, missing: None }.into_values();
        assert!(values[0].is_nan() && values[3].is_nan());
        assert_eq!(Mixed::defs(), Mixed::DEFS);
    }
}
