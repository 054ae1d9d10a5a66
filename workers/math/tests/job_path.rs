//! The families stay off the system's libm and off kernels that choose their code path by
//! processor: no `f64::exp` and friends, no `mul_add` (a fused multiply-add goes through
//! `armada_math::fma`, which says why it is the same everywhere), no `rand_distr` (whose
//! samplers call the system's libm), no `libm` crate outside armada-math, and none of faer's
//! kernels (products, factorisations, reductions: armada-linalg's instead; faer's matrix types
//! are fine), in the production code of every crate under `workers/` that jobs run. Test code
//! may use them as references.

use std::path::{Path, PathBuf};

/// The crates whose code is not on the job path: this one (the implementation), the
/// benchmark harness (it times armada against references) and the Python SDK.
const NOT_ON_THE_JOB_PATH: [&str; 3] = ["math", "numbench", "python"];

/// `f64` methods that call the system's libm (or fuse a multiply and an add).
const LIBM_METHODS: [&str; 24] = [
    "exp", "exp2", "exp_m1", "ln", "log", "log2", "log10", "ln_1p", "powf", "sin", "cos", "tan", "sin_cos", "asin",
    "acos", "atan", "atan2", "sinh", "cosh", "tanh", "hypot", "cbrt", "mul_add", "ln_gamma",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source with comments, string literals and `#[cfg(test)]` items blanked out (kept as
/// spaces, so that byte offsets still give line numbers).
fn production_code(src: &str) -> String {
    let bytes = src.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(b"//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                out[i] = b' ';
                i += 1;
            }
        } else if bytes[i..].starts_with(b"/*") {
            while i < bytes.len() && !bytes[i..].starts_with(b"*/") {
                out[i] = if bytes[i] == b'\n' { b'\n' } else { b' ' };
                i += 1;
            }
            out[i..(i + 2).min(bytes.len())].fill(b' ');
            i += 2;
        } else if bytes[i..].starts_with(b"r#\"") {
            let end = src[i + 3..].find("\"#").map_or(bytes.len(), |k| i + 3 + k + 2);
            for k in i..end {
                out[k] = if bytes[k] == b'\n' { b'\n' } else { b' ' };
            }
            i = end;
        } else if bytes[i] == b'\'' && (bytes.get(i + 2) == Some(&b'\'') || bytes.get(i + 1) == Some(&b'\\')) {
            // A character literal ('"', '\'', '\n'); a lifetime has no closing quote.
            let end = bytes[i + 2..].iter().position(|&b| b == b'\'').map_or(bytes.len(), |k| i + 2 + k + 1);
            out[i..end].fill(b' ');
            i = end;
        } else if bytes[i] == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                let skip = if bytes[i] == b'\\' { 2 } else { 1 };
                for k in i..(i + skip).min(bytes.len()) {
                    out[k] = if bytes[k] == b'\n' { b'\n' } else { b' ' };
                }
                i += skip;
            }
            i += 1;
        } else {
            i += 1;
        }
    }
    // `#[cfg(test)]` items: blank from the attribute to the item's closing brace (or `;`).
    let text = String::from_utf8(out).expect("ASCII blanks keep UTF-8");
    let mut out = text.clone().into_bytes();
    let mut from = 0;
    while let Some(at) = text[from..].find("#[cfg(test)]").map(|k| k + from) {
        let rest = &text[at..];
        let (brace, semi) = (rest.find('{'), rest.find(';'));
        let end = match (brace, semi) {
            (Some(b), Some(s)) if s < b => at + s + 1,
            (Some(b), _) => {
                let mut depth = 0;
                let mut end = text.len();
                for (k, c) in text[at + b..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = at + b + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            _ => text.len(),
        };
        for b in &mut out[at..end] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
        from = end;
    }
    String::from_utf8(out).expect("ASCII blanks keep UTF-8")
}

/// Every use of the system's libm in `code`, as (line, what).
fn libm_uses(code: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    for method in LIBM_METHODS {
        for pattern in [format!(".{method}("), format!("f64::{method}")] {
            for (at, _) in code.match_indices(&pattern) {
                let after = code[at + pattern.len()..].chars().next();
                // `f64::exp` as a value, not `f64::exp_m1` read as `f64::exp`.
                if pattern.starts_with("f64") && after.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue;
                }
                found.push((line_of(at), pattern.clone()));
            }
        }
    }
    for krate in [
        "rand_distr",
        "libm::",
        "faer::linalg",
        ".llt(",
        ".ldlt(",
        ".lblt(",
        ".partial_piv_lu(",
        ".qr(",
        ".svd(",
        ".self_adjoint_eigen(",
        ".eigen(",
        "norm_l2(",
        "norm_l1(",
        "norm_max(",
    ] {
        for (at, _) in code.match_indices(krate) {
            found.push((line_of(at), krate.to_string()));
        }
    }
    found.sort();
    found
}

#[test]
fn families_call_armada_math_not_the_system_libm() {
    let workers = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workers/").to_path_buf();
    let mut files = Vec::new();
    for krate in std::fs::read_dir(&workers).unwrap() {
        let krate = krate.unwrap().path();
        let name = krate.file_name().unwrap().to_string_lossy().to_string();
        if krate.join("src").is_dir() && !NOT_ON_THE_JOB_PATH.contains(&name.as_str()) {
            rust_files(&krate.join("src"), &mut files);
        }
    }
    assert!(files.len() > 50, "found only {} files under {}", files.len(), workers.display());
    let mut offences = Vec::new();
    for file in &files {
        let src = std::fs::read_to_string(file).unwrap();
        for (line, what) in libm_uses(&production_code(&src)) {
            offences.push(format!("{}:{line}: {what}", file.strip_prefix(&workers).unwrap().display()));
        }
    }
    assert!(offences.is_empty(), "use armada_math instead:\n{}", offences.join("\n"));
}

/// The scanner finds what it must and skips comments, strings and test code.
#[test]
fn the_scanner_sees_calls_and_skips_tests_and_comments() {
    let src = r##"
use rand_distr::Normal;
fn f(x: f64) -> f64 { x.exp() + f64::ln(x) + x.mul_add(2.0, 1.0) + [1.0].iter().map(f64::sin).sum::<f64>() }
// x.cos() in a comment
fn g() -> &'static str { if '"' == '\'' { "y.tan()" } else { r#"z.sin() "quoted""# } }
fn h(x: f64) -> f64 { f64::exp_m1_is_not_a_function(x) }
#[cfg(test)]
mod tests {
    fn reference(x: f64) -> f64 { x.exp() }
}
fn k(x: f64) -> f64 { (x).powf(2.0) }
"##;
    let found: Vec<String> = libm_uses(&production_code(src)).into_iter().map(|(l, w)| format!("{l}:{w}")).collect();
    assert_eq!(found, ["2:rand_distr", "3:.exp(", "3:.mul_add(", "3:f64::ln", "3:f64::sin", "11:.powf("]);
}
