//! Parameter values of benchmarks and algorithms, and their canonical text form.

use std::collections::BTreeMap;
use std::fmt;

/// One parameter value. Integers given where a float is expected are widened by validation.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl ParamValue {
    /// The value's type with its article, as error messages show it.
    pub fn type_name(&self) -> &'static str {
        match self {
            ParamValue::Bool(_) => "a boolean",
            ParamValue::Int(_) => "an integer",
            ParamValue::Float(_) => "a float",
            ParamValue::Str(_) => "a string",
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            ParamValue::Float(v) => Some(v),
            ParamValue::Int(v) => Some(v as f64),
            _ => None,
        }
    }
}

/// Canonical text: floats in Rust's shortest round-trip form (always with a `.` or an
/// exponent, so `3` and `3.0` never collide), strings quoted.
impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Bool(b) => write!(f, "{b}"),
            ParamValue::Int(i) => write!(f, "{i}"),
            ParamValue::Float(x) => write!(f, "{x:?}"),
            ParamValue::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// Named parameters, kept sorted so that their text form is canonical.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Params(pub BTreeMap<String, ParamValue>);

impl Params {
    pub fn new() -> Self {
        Params(BTreeMap::new())
    }

    pub fn insert(&mut self, name: String, value: ParamValue) {
        self.0.insert(name, value);
    }

    pub fn get(&self, name: &str) -> Option<&ParamValue> {
        self.0.get(name)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &ParamValue)> {
        self.0.iter()
    }

    /// Typed access for validated parameters; a missing or mistyped one is a schema bug.
    pub fn float(&self, name: &str) -> Result<f64, crate::JobError> {
        self.get(name)
            .and_then(ParamValue::as_f64)
            .ok_or_else(|| crate::JobError::Invalid(format!("float parameter `{name}` missing")))
    }

    pub fn int(&self, name: &str) -> Result<i64, crate::JobError> {
        match self.get(name) {
            Some(ParamValue::Int(v)) => Ok(*v),
            _ => Err(crate::JobError::Invalid(format!("integer parameter `{name}` missing"))),
        }
    }

    pub fn bool(&self, name: &str) -> Result<bool, crate::JobError> {
        match self.get(name) {
            Some(ParamValue::Bool(v)) => Ok(*v),
            _ => Err(crate::JobError::Invalid(format!("boolean parameter `{name}` missing"))),
        }
    }

    pub fn str(&self, name: &str) -> Result<&str, crate::JobError> {
        match self.get(name) {
            Some(ParamValue::Str(v)) => Ok(v),
            _ => Err(crate::JobError::Invalid(format!("string parameter `{name}` missing"))),
        }
    }

    /// A choice parameter as the value `options` pairs with it. A value the options do not
    /// name is an error, never a silent default: an option added to a schema and forgotten
    /// here fails the job (and the families' tests that start every option).
    pub fn choice<T: Copy>(&self, name: &str, options: &[(&str, T)]) -> Result<T, crate::JobError> {
        let value = self.str(name)?;
        options.iter().find(|(option, _)| *option == value).map(|(_, v)| *v).ok_or_else(|| {
            let known: Vec<&str> = options.iter().map(|(o, _)| *o).collect();
            crate::JobError::Invalid(format!(
                "choice `{name}` = `{value}` is not handled (handled: {})",
                known.join(", ")
            ))
        })
    }
}

/// Canonical text `{a=1,b="x"}`: what job keys hash and what result tables show.
impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{")?;
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                write!(f, ",")?;
            }
            write!(f, "{k}={v}")?;
        }
        write!(f, "}}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_text_is_sorted_and_typed() {
        let mut p = Params::new();
        p.insert("z".into(), ParamValue::Int(3));
        p.insert("a".into(), ParamValue::Float(3.0));
        p.insert("m".into(), ParamValue::Str("first".into()));
        p.insert("b".into(), ParamValue::Bool(true));
        assert_eq!(p.to_string(), r#"{a=3.0,b=true,m="first",z=3}"#);
        assert_eq!(ParamValue::Float(1e-6).to_string(), "1e-6");
        assert_eq!(ParamValue::Float(0.1).to_string(), "0.1");
    }
}
