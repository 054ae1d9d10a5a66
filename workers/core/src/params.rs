//! Parameters of benchmarks and algorithms: their values and canonical text form, and the
//! typed structs they are declared as.
//!
//! A component (a benchmark or an algorithm) declares its parameters once, as a struct made
//! by [`params!`]: each field is a parameter, named by the field, typed by its type (`f64`
//! a float, an integer type an integer, `bool` a boolean, a [`choice!`] enum a choice),
//! with its range, default and doc beside it. The struct's `DEFS` is the component's schema
//! ([`ParamDef`]s, from which validation and `armada list` work), and
//! [`Params::parse`] turns a validated job's parameters into the struct, so a family's code
//! reads fields and matches choices exhaustively, never a parameter by its name.

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

    /// The typed parameters of a validated job: `P` is the struct its component declared
    /// ([`params!`]). Validation filled in every parameter and checked every value, so an
    /// error here is a schema bug (a struct that is not its component's), never bad input.
    pub fn parse<P: Parameters>(&self) -> Result<P, crate::JobError> {
        P::from_params(self)
    }

    /// The value of `name`, read as the type of the field that declared it.
    pub fn read<T: ParamType>(&self, name: &str) -> Result<T, crate::JobError> {
        let value = self.get(name).ok_or_else(|| {
            crate::JobError::Invalid(format!("parameter `{name}` missing (its component declares another struct)"))
        })?;
        T::from_value(value)
            .ok_or_else(|| crate::JobError::Invalid(format!("parameter `{name}` = {value} is not {}", T::DESCRIPTION)))
    }
}

/// The type, range and default of one parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamKind {
    Float { min: f64, max: f64, default: f64 },
    Int { min: i64, max: i64, default: i64 },
    Bool { default: bool },
    Choice { options: &'static [&'static str], default: &'static str },
}

/// A bound this large stands for "none" (families write 1e300 or f64::MAX for it).
const UNBOUNDED: f64 = 1e300;

impl ParamKind {
    /// What a value must be, as a person writes it: "a float in [0, 1]", "a float >= 0"
    /// (no upper bound), "an integer in [1, 200000]", "a boolean", "one of: a, b".
    pub fn describe(&self) -> String {
        match *self {
            ParamKind::Float { min, max, .. } => {
                let range = match (min <= -UNBOUNDED, max >= UNBOUNDED) {
                    (true, true) => String::new(),
                    (false, true) => format!(" >= {}", human_number(min)),
                    (true, false) => format!(" <= {}", human_number(max)),
                    (false, false) => format!(" in [{}, {}]", human_number(min), human_number(max)),
                };
                format!("a float{range}")
            }
            ParamKind::Int { min, max, .. } => match (min == i64::MIN, max == i64::MAX) {
                (true, true) => "an integer".into(),
                (false, true) => format!("an integer >= {min}"),
                (true, false) => format!("an integer <= {max}"),
                (false, false) => format!("an integer in [{min}, {max}]"),
            },
            ParamKind::Bool { .. } => "a boolean".into(),
            ParamKind::Choice { options, .. } => format!("one of: {}", options.join(", ")),
        }
    }
}

/// A float as a person writes it: `0.05`, `1000`, but `1e12` and `2.5e-7` rather than a
/// dozen zeros (Rust's `{}` never uses an exponent).
pub fn human_number(x: f64) -> String {
    if x != 0.0 && x.is_finite() && !(1e-4..1e6).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// One parameter of a benchmark or an algorithm.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParamDef {
    pub name: &'static str,
    pub kind: ParamKind,
    pub doc: &'static str,
}

/// A component's parameters as a struct made by [`params!`]: its schema, and the struct
/// built from validated values.
pub trait Parameters: Sized {
    /// The schema, in declaration order (flattened groups in place).
    const DEFS: &'static [ParamDef];
    fn from_params(params: &Params) -> Result<Self, crate::JobError>;
}

/// A Rust type a parameter can have, and how it is read from a validated value.
pub trait ParamType: Sized {
    /// What a value of this type is, for messages ("a float").
    const DESCRIPTION: &'static str;
    fn from_value(value: &ParamValue) -> Option<Self>;
}

impl ParamType for f64 {
    const DESCRIPTION: &'static str = "a float";
    fn from_value(value: &ParamValue) -> Option<Self> {
        value.as_f64()
    }
}

impl ParamType for bool {
    const DESCRIPTION: &'static str = "a boolean";
    fn from_value(value: &ParamValue) -> Option<Self> {
        match *value {
            ParamValue::Bool(b) => Some(b),
            _ => None,
        }
    }
}

macro_rules! int_param_types {
    ($($t:ty),*) => {$(
        impl ParamType for $t {
            const DESCRIPTION: &'static str = concat!("an integer that fits ", stringify!($t));
            fn from_value(value: &ParamValue) -> Option<Self> {
                match *value {
                    ParamValue::Int(i) => <$t>::try_from(i).ok(),
                    _ => None,
                }
            }
        }
    )*};
}
int_param_types!(i64, u32, u64, usize);

/// A [`choice!`] enum: a parameter whose value is one of a fixed set of names.
pub trait Choice: Copy + 'static {
    /// Every variant, in declaration order.
    const ALL: &'static [Self];
    /// Their names, in the same order: the schema's options.
    const NAMES: &'static [&'static str];
    fn name(self) -> &'static str;
}

/// The text of a field's doc comment: its lines joined (each begins with the space after
/// `///`, which separates them), without the first line's leading space.
#[doc(hidden)]
pub const fn doc_text(doc: &'static str) -> &'static str {
    match doc.as_bytes() {
        [b' ', rest @ ..] => match std::str::from_utf8(rest) {
            Ok(text) => text,
            Err(_) => doc,
        },
        _ => doc,
    }
}

/// The number of definitions in `parts`, for [`concat_defs`].
#[doc(hidden)]
pub const fn count_defs(parts: &[&[ParamDef]]) -> usize {
    let (mut n, mut i) = (0, 0);
    while i < parts.len() {
        n += parts[i].len();
        i += 1;
    }
    n
}

/// `parts` joined into one array, at compile time: a struct's own parameters and its
/// flattened groups, in declaration order.
#[doc(hidden)]
pub const fn concat_defs<const N: usize>(parts: &[&[ParamDef]]) -> [ParamDef; N] {
    const EMPTY: ParamDef = ParamDef { name: "", kind: ParamKind::Bool { default: false }, doc: "" };
    let mut out = [EMPTY; N];
    let (mut n, mut i) = (0, 0);
    while i < parts.len() {
        let mut j = 0;
        while j < parts[i].len() {
            out[n] = parts[i][j];
            n += 1;
            j += 1;
        }
        i += 1;
    }
    assert!(n == N, "concat_defs: N is not the number of definitions");
    out
}

/// Declare a component's parameters once, as a struct. Each field is a parameter, named by
/// the field and documented by its doc comment; its type decides the kind: `f64` a float
/// and an integer type (`i64`, `u32`, `u64`, `usize`) an integer, each with its range
/// `in [min, max]`; `bool` a boolean; a [`choice!`] enum a choice among its names. The
/// default follows `=`. A field marked `#[flatten]` holds another `params!` struct, whose
/// parameters are this one's too (a group several components share).
///
/// The struct implements [`Parameters`] (its `DEFS` is the component's schema, in field
/// order) and `Default` (every default).
///
/// ```
/// armada_core::choice! {
///     /// How ties are broken.
///     pub enum Tie {
///         /// the lowest index
///         First = "first",
///         /// uniformly among the maximisers
///         Random = "random",
///     }
/// }
/// armada_core::params! {
///     /// Ties, shared by several rules.
///     pub struct Ties {
///         /// how exact ties in the argmax are broken
///         tie_break: Tie = Tie::First,
///     }
/// }
/// armada_core::params! {
///     /// The straddle's parameters.
///     pub struct Straddle {
///         /// the confidence multiplier
///         beta_sqrt: f64 in [0.0, 100.0] = 3.0,
///         /// candidates drawn per step
///         pool: usize in [1, 1000] = 10,
///         #[flatten]
///         ties: Ties,
///     }
/// }
/// use armada_core::{ParamKind, Parameters, Params, ParamValue};
/// let names: Vec<_> = Straddle::DEFS.iter().map(|d| d.name).collect();
/// assert_eq!(names, ["beta_sqrt", "pool", "tie_break"]);
/// assert_eq!(Straddle::DEFS[0].kind, ParamKind::Float { min: 0.0, max: 100.0, default: 3.0 });
/// assert_eq!(Straddle::DEFS[0].doc, "the confidence multiplier");
/// let mut p = Params::new();
/// p.insert("beta_sqrt".into(), ParamValue::Float(2.0));
/// p.insert("pool".into(), ParamValue::Int(5));
/// p.insert("tie_break".into(), ParamValue::Str("random".into()));
/// let s: Straddle = p.parse().unwrap();
/// assert_eq!((s.beta_sqrt, s.pool, s.ties.tie_break), (2.0, 5, Tie::Random));
/// assert_eq!(Straddle::default().ties.tie_break, Tie::First);
/// ```
#[macro_export]
macro_rules! params {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident { $($body:tt)* }
    ) => {
        $crate::params!(@field [$(#[$meta])* $vis struct $name] [] [] [] [] $($body)*);
    };

    // A flattened group: its parameters are this struct's too.
    (@field $head:tt [$($fields:tt)*] [$($parts:tt)*] [$($reads:tt)*] [$($defaults:tt)*]
        #[flatten] $field:ident : $ty:ident, $($rest:tt)*
    ) => {
        $crate::params!(@field $head
            [$($fields)* pub $field: $ty,]
            [$($parts)* <$ty as $crate::Parameters>::DEFS,]
            [$($reads)* $field (flat $ty)]
            [$($defaults)* $field: <$ty as ::std::default::Default>::default(),]
            $($rest)*);
    };

    // One parameter: `name: type in [min, max] = default,` (no range for bools and choices).
    (@field $head:tt [$($fields:tt)*] [$($parts:tt)*] [$($reads:tt)*] [$($defaults:tt)*]
        $(#[doc = $doc:literal])+
        $field:ident : $ty:tt $(in [$min:expr, $max:expr])? = $default:expr, $($rest:tt)*
    ) => {
        $crate::params!(@field $head
            [$($fields)* $(#[doc = $doc])+ pub $field: $ty,]
            [$($parts)* &[$crate::ParamDef {
                name: stringify!($field),
                kind: $crate::params!(@kind $ty [$($min, $max)?] $default),
                doc: $crate::doc_text(concat!($($doc),+)),
            }],]
            [$($reads)* $field (own)]
            [$($defaults)* $field: $default,]
            $($rest)*);
    };

    (@field [$(#[$meta:meta])* $vis:vis struct $name:ident]
        [$($fields:tt)*] [$($parts:tt)*] [$($read:ident $how:tt)*] [$($defaults:tt)*]
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        $vis struct $name { $($fields)* }

        impl $name {
            const PARTS: &'static [&'static [$crate::ParamDef]] = &[$($parts)*];
        }

        impl $crate::Parameters for $name {
            const DEFS: &'static [$crate::ParamDef] =
                &$crate::concat_defs::<{ $crate::count_defs($name::PARTS) }>($name::PARTS);
            fn from_params(params: &$crate::Params) -> Result<Self, $crate::JobError> {
                Ok($name { $($read: $crate::params!(@read params $read $how),)* })
            }
        }

        impl ::std::default::Default for $name {
            fn default() -> Self {
                $name { $($defaults)* }
            }
        }
    };

    (@read $params:ident $field:ident (own)) => { $params.read(stringify!($field))? };
    (@read $params:ident $field:ident (flat $ty:ident)) => {
        <$ty as $crate::Parameters>::from_params($params)?
    };

    (@kind f64 [$min:expr, $max:expr] $default:expr) => {
        $crate::ParamKind::Float { min: $min, max: $max, default: $default }
    };
    (@kind i64 [$min:expr, $max:expr] $default:expr) => { $crate::params!(@int $min, $max, $default) };
    (@kind u32 [$min:expr, $max:expr] $default:expr) => { $crate::params!(@int $min, $max, $default) };
    (@kind u64 [$min:expr, $max:expr] $default:expr) => { $crate::params!(@int $min, $max, $default) };
    (@kind usize [$min:expr, $max:expr] $default:expr) => { $crate::params!(@int $min, $max, $default) };
    (@kind bool [] $default:expr) => { $crate::ParamKind::Bool { default: $default } };
    (@kind $choice:ident [] $default:expr) => {
        $crate::ParamKind::Choice {
            options: <$choice as $crate::Choice>::NAMES,
            default: $choice::name($default),
        }
    };
    (@int $min:expr, $max:expr, $default:expr) => {
        $crate::ParamKind::Int { min: $min, max: $max, default: $default }
    };
}

/// Declare a choice parameter's type: an enum whose variants are its options, each named
/// by the string beside it. It implements [`Choice`] and [`ParamType`], so a [`params!`]
/// field of this type is a choice among the names, and a family matches it exhaustively:
/// an option added here and forgotten in a `match` does not compile.
///
/// ```
/// armada_core::choice! {
///     /// The reward model.
///     pub enum Rewards {
///         /// linear rewards
///         Linear = "linear",
///         /// logistic rewards
///         Logistic = "logistic",
///     }
/// }
/// use armada_core::Choice;
/// assert_eq!(Rewards::NAMES, ["linear", "logistic"]);
/// assert_eq!(Rewards::Logistic.name(), "logistic");
/// assert_eq!(Rewards::from_name("linear"), Some(Rewards::Linear));
/// ```
#[macro_export]
macro_rules! choice {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[doc = $doc:literal])* $variant:ident = $text:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name {
            $($(#[doc = $doc])* $variant,)+
        }

        impl $name {
            /// The option's name.
            pub const fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// The variant named `name`, if any.
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl $crate::Choice for $name {
            const ALL: &'static [Self] = &[$($name::$variant),+];
            const NAMES: &'static [&'static str] = &[$($text),+];
            fn name(self) -> &'static str {
                $name::name(self)
            }
        }

        impl $crate::ParamType for $name {
            const DESCRIPTION: &'static str = concat!("an option of ", stringify!($name));
            fn from_value(value: &$crate::ParamValue) -> Option<Self> {
                match value {
                    $crate::ParamValue::Str(s) => $name::from_name(s),
                    _ => None,
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str($name::name(*self))
            }
        }
    };
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

impl Params {
    /// The parameters as a JSON object, `{"a":1,"b":"x"}`: how result files store them, so
    /// that any tool filters on a parameter (`json.loads`, DuckDB's `->>`, polars'
    /// `str.json_path_match`). Keys sorted; a float keeps its `.` or exponent (`3.0`, `1e-7`),
    /// so it reads back as a float, bit for bit. JSON has no infinity or NaN: such a value
    /// (validation refuses them in jobs) is written as a string.
    pub fn to_json(&self) -> String {
        let mut out = String::from("{");
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            json_string(&mut out, k);
            out.push(':');
            match v {
                ParamValue::Bool(b) => out.push_str(&b.to_string()),
                ParamValue::Int(i) => out.push_str(&i.to_string()),
                ParamValue::Float(x) if x.is_finite() => out.push_str(&format!("{x:?}")),
                ParamValue::Float(x) => json_string(&mut out, &format!("{x:?}")),
                ParamValue::Str(s) => json_string(&mut out, s),
            }
        }
        out.push('}');
        out
    }

    /// Parameters from a JSON object as [`Params::to_json`] writes it.
    fn from_json(text: &str) -> Result<Params, String> {
        let bad = |what: &str| format!("{text:?}: {what}");
        let mut rest = text.strip_prefix('{').ok_or_else(|| bad("not a JSON object"))?.trim_start();
        let mut params = Params::new();
        if let Some(after) = rest.strip_prefix('}') {
            return if after.trim().is_empty() { Ok(params) } else { Err(bad("text after the object")) };
        }
        loop {
            let (name, after) = json_string_prefix(rest).map_err(|e| bad(&e))?;
            let after = after.trim_start().strip_prefix(':').ok_or_else(|| bad("a name without its `:`"))?.trim_start();
            let (value, after) = json_value_prefix(after).map_err(|e| bad(&format!("parameter `{name}`: {e}")))?;
            params.insert(name, value);
            let after = after.trim_start();
            if let Some(more) = after.strip_prefix(',') {
                rest = more.trim_start();
            } else if let Some(end) = after.strip_prefix('}') {
                return if end.trim().is_empty() { Ok(params) } else { Err(bad("text after the object")) };
            } else {
                return Err(bad(&format!("`{after}` after a value")));
            }
        }
    }
}

/// `s` as a JSON string, quoted and escaped.
fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The JSON string at the start of `text`, unescaped, and what follows it.
fn json_string_prefix(text: &str) -> Result<(String, &str), String> {
    let quoted = text.strip_prefix('"').ok_or("expected a string")?;
    let mut value = String::new();
    let mut chars = quoted.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((value, &quoted[i + 1..])),
            '\\' => {
                let escaped = match chars.next().map(|(_, c)| c) {
                    Some(c @ ('"' | '\\' | '/')) => c,
                    Some('b') => '\u{8}',
                    Some('f') => '\u{c}',
                    Some('n') => '\n',
                    Some('r') => '\r',
                    Some('t') => '\t',
                    Some('u') => {
                        let high = hex4(&mut chars)?;
                        let code = if (0xD800..0xDC00).contains(&high) {
                            // A surrogate pair: \uD83D\uDE00.
                            let low = match (chars.next(), chars.next()) {
                                (Some((_, '\\')), Some((_, 'u'))) => hex4(&mut chars)?,
                                _ => return Err("a lone surrogate".into()),
                            };
                            0x10000 + ((high - 0xD800) << 10) + (low.wrapping_sub(0xDC00) & 0x3FF)
                        } else {
                            high
                        };
                        char::from_u32(code).ok_or("a bad \\u escape")?
                    }
                    other => return Err(format!("bad escape {other:?} in a string")),
                };
                value.push(escaped);
            }
            c => value.push(c),
        }
    }
    Err("a string without its closing quote".into())
}

/// Four hex digits of a `\\u` escape.
fn hex4(chars: &mut std::str::CharIndices) -> Result<u32, String> {
    let hex: String = chars.take(4).map(|(_, c)| c).collect();
    u32::from_str_radix(&hex, 16).map_err(|_| format!("bad escape \\u{hex}"))
}

/// The JSON value (boolean, number or string) at the start of `text`, and what follows it.
fn json_value_prefix(text: &str) -> Result<(ParamValue, &str), String> {
    if text.starts_with('"') {
        let (s, after) = json_string_prefix(text)?;
        return Ok((ParamValue::Str(s), after));
    }
    let end = text.find([',', '}', ' ']).unwrap_or(text.len());
    let (token, after) = text.split_at(end);
    let value = match token {
        "true" => ParamValue::Bool(true),
        "false" => ParamValue::Bool(false),
        // A float always has a `.` or an exponent (see to_json).
        t if t.contains(['.', 'e', 'E']) => ParamValue::Float(t.parse().map_err(|_| format!("`{t}` is not a number"))?),
        t => ParamValue::Int(t.parse().map_err(|_| format!("`{t}` is not a value"))?),
    };
    Ok((value, after))
}

/// Parameters back from either written form: the canonical text `{a=1,b="x"}` (job keys,
/// result files before JSON) or JSON `{"a":1,"b":"x"}` (result files now), so that a job's
/// spec can be read back from its result rows (`armada check --repair` rebuilds a lost
/// store from them, and checks each rebuilt job's key against the one its rows carry).
impl std::str::FromStr for Params {
    type Err = String;

    fn from_str(text: &str) -> Result<Params, String> {
        if text.strip_prefix('{').is_some_and(|t| t.trim_start().starts_with('"')) {
            return Params::from_json(text);
        }
        let inner = text
            .strip_prefix('{')
            .and_then(|t| t.strip_suffix('}'))
            .ok_or_else(|| format!("{text:?}: parameters are written {{name=value,...}}"))?;
        let mut params = Params::new();
        let mut rest = inner;
        while !rest.is_empty() {
            let (name, after) = rest.split_once('=').ok_or_else(|| format!("{text:?}: `{rest}` is not name=value"))?;
            let (value, after) = value_prefix(after).map_err(|e| format!("{text:?}: parameter `{name}`: {e}"))?;
            params.insert(name.to_string(), value);
            rest = match after.strip_prefix(',') {
                Some(more) if !more.is_empty() => more,
                None if after.is_empty() => after,
                _ => return Err(format!("{text:?}: `{after}` after parameter `{name}`")),
            };
        }
        Ok(params)
    }
}

/// One value at the start of `text` in its canonical form, and what follows it.
fn value_prefix(text: &str) -> Result<(ParamValue, &str), String> {
    if let Some(quoted) = text.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => return Ok((ParamValue::Str(value), &quoted[i + 1..])),
                '\\' => {
                    let escaped = match chars.next().map(|(_, c)| c) {
                        Some('n') => '\n',
                        Some('r') => '\r',
                        Some('t') => '\t',
                        Some('0') => '\0',
                        Some(c @ ('\\' | '"' | '\'')) => c,
                        Some('u') => {
                            let hex: String = chars.by_ref().map(|(_, c)| c).take_while(|&c| c != '}').collect();
                            let code = hex.strip_prefix('{').and_then(|h| u32::from_str_radix(h, 16).ok());
                            code.and_then(char::from_u32).ok_or_else(|| format!("bad escape \\u{hex}"))?
                        }
                        other => return Err(format!("bad escape {other:?} in a string")),
                    };
                    value.push(escaped);
                }
                c => value.push(c),
            }
        }
        return Err("a string without its closing quote".into());
    }
    let end = text.find(',').unwrap_or(text.len());
    let (token, after) = text.split_at(end);
    let value = match token {
        "true" => ParamValue::Bool(true),
        "false" => ParamValue::Bool(false),
        // Floats always have a `.`, an exponent, or are inf or NaN (see the Display above).
        t if t.contains(['.', 'e', 'E']) || t.contains("inf") || t.contains("NaN") => {
            ParamValue::Float(t.parse().map_err(|_| format!("`{t}` is not a float"))?)
        }
        t => ParamValue::Int(t.parse().map_err(|_| format!("`{t}` is not a value"))?),
    };
    Ok((value, after))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ranges read as a person writes them: no 300-digit bound, an open side said as such.
    #[test]
    fn ranges_print_as_people_write_them() {
        let float = |min, max| ParamKind::Float { min, max, default: 0.0 }.describe();
        assert_eq!(float(0.0, 1.0), "a float in [0, 1]");
        assert_eq!(float(0.0, 1e300), "a float >= 0");
        assert_eq!(float(1e-9, f64::MAX), "a float >= 1e-9");
        assert_eq!(float(-f64::MAX, 2.5), "a float <= 2.5");
        assert_eq!(float(-1e300, 1e300), "a float");
        assert_eq!(float(0.5, 2e7), "a float in [0.5, 2e7]");
        let int = |min, max| ParamKind::Int { min, max, default: 0 }.describe();
        assert_eq!(int(1, 200_000), "an integer in [1, 200000]");
        assert_eq!(int(0, i64::MAX), "an integer >= 0");
        assert_eq!(int(i64::MIN, i64::MAX), "an integer");
        let texts: Vec<String> = [0.0, 0.05, 1000.0, 999_999.0, 1e6, 1.5e-7, -3e12].map(human_number).into();
        assert_eq!(texts, ["0", "0.05", "1000", "999999", "1e6", "1.5e-7", "-3e12"]);
    }

    /// `n` sets of up to 4 parameters of every kind (floats of any bits, extreme integers,
    /// strings with quotes, escapes, commas, braces and non-ASCII), from an xorshift seeded
    /// with `seed`; `finite` keeps floats finite (JSON has no infinity or NaN).
    fn random_params(seed: u64, n: usize, finite: bool) -> Vec<Params> {
        let mut state = seed;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let tricky = [
            "",
            "a,b",
            "say \"hi\"",
            "back\\slash",
            "{x=1}",
            "{\"x\":1}",
            "tab\tnew\nline\r\0",
            "é ü 𝔼",
            "\u{7f}\u{1b}",
            "=",
            "/",
        ];
        let floats = [0.1, -0.0, 1e300, 5e-324, f64::INFINITY, f64::NEG_INFINITY, 3.0, 1e-7, -2.5e-300];
        (0..n)
            .map(|_| {
                let mut p = Params::new();
                for k in 0..(next() % 5) {
                    let name = format!("p{k}_{}", next() % 3);
                    let value = match next() % 6 {
                        0 => ParamValue::Bool(next() % 2 == 0),
                        1 => ParamValue::Int(next() as i64),
                        // Shifted right, the exponent is never all ones: finite.
                        2 => ParamValue::Float(f64::from_bits(if finite { next() >> 2 } else { next() })),
                        3 => ParamValue::Float(floats[k as usize % 9]),
                        4 => ParamValue::Int([0, -1, i64::MIN, i64::MAX][k as usize % 4]),
                        _ => ParamValue::Str(tricky[(next() % tricky.len() as u64) as usize].to_string()),
                    };
                    match value {
                        ParamValue::Float(x) if finite && !x.is_finite() => p.insert(name, ParamValue::Float(3.5)),
                        value => p.insert(name, value),
                    }
                }
                p
            })
            .collect()
    }

    /// Canonical text reads back to the same parameters, for every kind of value: floats of
    /// any bits (shortest form, exponents, infinities, -0.0; NaN compares by text), strings
    /// with quotes, escapes, commas, braces and non-ASCII; and malformed text is refused.
    #[test]
    fn canonical_text_reads_back_to_the_same_parameters() {
        for (round, p) in random_params(0x9e37_79b9_7f4a_7c15, 2000, false).into_iter().enumerate() {
            let text = p.to_string();
            let back: Params = text.parse().unwrap_or_else(|e| panic!("round {round}: {text}: {e}"));
            assert_eq!(back.to_string(), text, "round {round}");
            let nan = p.iter().any(|(_, v)| matches!(v, ParamValue::Float(x) if x.is_nan()));
            if !nan {
                assert_eq!(back, p, "round {round}: {text}");
            }
        }
        for bad in ["a=1", "{a}", "{a=1,}", "{a=1b}", "{a=\"open}", "{a=1.2.3}", "{a=\"x\"y}", "{a=\"\\q\"}"] {
            assert!(bad.parse::<Params>().is_err(), "{bad} was accepted");
        }
        assert_eq!("{}".parse::<Params>().unwrap(), Params::new());
    }

    /// The JSON form reads back to the same parameters, bit for bit, and an independent JSON
    /// reader (serde_json) reads the same names and values from it; malformed JSON is refused.
    #[test]
    fn json_reads_back_to_the_same_parameters_and_is_json() {
        for (round, p) in random_params(0x2545_f491_4f6c_dd1d, 2000, true).into_iter().enumerate() {
            let json = p.to_json();
            let back: Params = json.parse().unwrap_or_else(|e| panic!("round {round}: {json}: {e}"));
            let bits = |p: &Params| -> Vec<(String, String)> {
                p.iter()
                    .map(|(k, v)| match v {
                        ParamValue::Float(x) => (k.clone(), format!("f{:x}", x.to_bits())),
                        v => (k.clone(), v.to_string()),
                    })
                    .collect()
            };
            assert_eq!(bits(&back), bits(&p), "round {round}: {json}");
            let theirs: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
            let object = theirs.as_object().unwrap();
            assert_eq!(object.len(), p.iter().count(), "{json}");
            for (k, v) in p.iter() {
                let t = &object[k.as_str()];
                match v {
                    ParamValue::Bool(b) => assert_eq!(t.as_bool(), Some(*b)),
                    ParamValue::Int(i) => assert_eq!(t.as_i64(), Some(*i), "{json}"),
                    ParamValue::Float(x) => {
                        let y = t.as_f64().unwrap();
                        assert!(t.is_f64() && (y == *x || (y - x).abs() <= x.abs() * 4e-16), "{json}: {k}")
                    }
                    ParamValue::Str(s) => assert_eq!(t.as_str(), Some(s.as_str()), "{json}"),
                }
            }
        }
        assert_eq!(Params::new().to_json(), "{}");
        let mut p = Params::new();
        p.insert("beta_sqrt".into(), ParamValue::Float(3.0));
        p.insert("tie_break".into(), ParamValue::Str("random".into()));
        p.insert("n".into(), ParamValue::Int(7));
        assert_eq!(p.to_json(), r#"{"beta_sqrt":3.0,"n":7,"tie_break":"random"}"#);
        assert_eq!(r#"{ "n" : 7 , "beta_sqrt":3.0,"tie_break":"random" }"#.parse::<Params>().unwrap(), p);
        for bad in [r#"{"a"}"#, r#"{"a":1,}"#, r#"{"a":1b}"#, r#"{"a":"open}"#, r#"{"a":1}x"#, r#"{"a":"\q"}"#] {
            assert!(bad.parse::<Params>().is_err(), "{bad} was accepted");
        }
    }

    crate::choice! {
        /// A choice of three.
        enum Shape {
            /// round
            Round = "round",
            /// square
            Square = "square",
            /// the third
            Other = "other-shape",
        }
    }

    crate::params! {
        /// A shared group.
        struct Group {
            /// a boolean
            flag: bool = true,
        }
    }

    crate::params! {
        /// Every kind, a flattened group in the middle, a doc of two lines.
        struct All {
            /// a float
            x: f64 in [-1.0, 1.0] = 0.5,
            /// a count of
            /// two lines
            n: u32 in [0, 10] = 3,
            #[flatten]
            group: Group,
            /// a choice
            shape: Shape = Shape::Square,
            /// a big integer
            big: i64 in [i64::MIN, 1 << 40] = -7,
        }
    }

    #[test]
    fn a_struct_declares_its_schema_in_field_order_with_its_defaults() {
        let defs: Vec<_> = All::DEFS.iter().map(|d| (d.name, d.kind, d.doc)).collect();
        assert_eq!(
            defs,
            [
                ("x", ParamKind::Float { min: -1.0, max: 1.0, default: 0.5 }, "a float"),
                ("n", ParamKind::Int { min: 0, max: 10, default: 3 }, "a count of two lines"),
                ("flag", ParamKind::Bool { default: true }, "a boolean"),
                (
                    "shape",
                    ParamKind::Choice { options: &["round", "square", "other-shape"], default: "square" },
                    "a choice"
                ),
                ("big", ParamKind::Int { min: i64::MIN, max: 1 << 40, default: -7 }, "a big integer"),
            ]
        );
        // The schema's defaults, filled in by validation, parse to the struct's Default.
        let component = crate::ComponentDef::new::<All>("all", "");
        let completed = crate::check_params(&component, &Params::new()).unwrap();
        assert_eq!(completed.parse::<All>().unwrap(), All::default());
        assert_eq!(All::default(), All { x: 0.5, n: 3, group: Group { flag: true }, shape: Shape::Square, big: -7 });
    }

    #[test]
    fn values_are_read_as_their_fields_types() {
        let mut p = Params::new();
        p.insert("x".into(), ParamValue::Int(1)); // an integer given for a float widens
        p.insert("n".into(), ParamValue::Int(10));
        p.insert("flag".into(), ParamValue::Bool(false));
        p.insert("shape".into(), ParamValue::Str("other-shape".into()));
        p.insert("big".into(), ParamValue::Int(i64::MIN));
        let all: All = p.parse().unwrap();
        assert_eq!(all, All { x: 1.0, n: 10, group: Group { flag: false }, shape: Shape::Other, big: i64::MIN });

        // Parameters of another struct are a schema bug, reported with the parameter's name.
        let mut bad = p.clone();
        bad.insert("n".into(), ParamValue::Int(-1));
        assert_eq!(
            bad.parse::<All>().unwrap_err().to_string(),
            "invalid job: parameter `n` = -1 is not an integer that fits u32"
        );
        bad = p.clone();
        bad.0.remove("flag");
        assert!(bad.parse::<All>().unwrap_err().to_string().contains("parameter `flag` missing"));
        bad = p;
        bad.insert("shape".into(), ParamValue::Str("triangle".into()));
        assert!(bad.parse::<All>().unwrap_err().to_string().contains("is not an option of Shape"));
    }

    #[test]
    fn a_choice_names_each_variant_once() {
        assert_eq!(Shape::NAMES, ["round", "square", "other-shape"]);
        for (&shape, &name) in Shape::ALL.iter().zip(Shape::NAMES) {
            assert_eq!(shape.name(), name);
            assert_eq!(Shape::from_name(name), Some(shape));
            assert_eq!(shape.to_string(), name);
        }
        assert_eq!(Shape::from_name("Round"), None);
    }

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
