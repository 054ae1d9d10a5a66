//! The module graph of a crate, read from its sources, and the cycles in it.
//!
//! Every file is a module (`a/mod.rs` and `a.rs` are `a`, `a/b.rs` is `a::b`). Its code is
//! read without comments, string literals and `#[cfg(test)]` items (code after a test block
//! counts; a `#[cfg(test)] mod x;` makes `x` a test-only module, left out). An edge is every
//! path that starts with `crate::`, `super::` or `self::` (in `use` trees too, groups
//! expanded), and every `use` of a child module, resolved module by module: a name that a
//! module re-exports (`pub use child::Name`) leads to the module that defines it, and a glob
//! (`use super::*`) leads to the globbed module and to the module of each re-exported name
//! the file uses. An edge between two modules counts between the two siblings under their
//! nearest common ancestor (`coordinator::summarizer` -> `coordinator::scheduler::X` is
//! `summarizer -> scheduler` among `coordinator`'s children); a module and its own ancestors may
//! name each other. The siblings of every module must not import each other in a cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module's path from the crate root (`[]` is the root).
pub type ModulePath = Vec<String>;

/// Every `.rs` file under `src`, by its path relative to `src`.
pub fn read_sources(src: &Path) -> BTreeMap<String, String> {
    fn walk(dir: &Path, src: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, src, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(src).unwrap().to_string_lossy().replace('\\', "/");
                out.insert(relative, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out
}

/// `a/b.rs` and `a/b/mod.rs` are `[a, b]`; `lib.rs` and `main.rs` are the root.
fn module_path(relative: &str) -> ModulePath {
    let mut parts: Vec<String> = relative.trim_end_matches(".rs").split('/').map(str::to_string).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The code without comments, the contents of string and character literals, and
/// `#[cfg(test)]` items; and the modules declared by `#[cfg(test)] mod name;`.
pub fn code_of(text: &str) -> (String, Vec<String>) {
    let chars: Vec<char> = text.chars().collect();
    let mut code = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            code.push(' ');
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_char(code.chars().last()) {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                code.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|h| chars.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            code.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            code.push_str("\"\"");
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A character literal ('x', '\n', '\''); a lifetime ('a) stays.
            i += if next == Some('\\') { 2 } else { 1 };
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            code.push_str("' '");
        } else {
            code.push(c);
            i += 1;
        }
    }
    without_test_items(&code)
}

fn ident_char(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || c == '_')
}

/// Drops each `#[cfg(test)]` item, statement or field (to its `;`, `,` or closing brace)
/// and keeps the code after it.
fn without_test_items(code: &str) -> (String, Vec<String>) {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(code.len());
    let mut test_modules = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let item = &rest[at + MARK.len()..];
        let bytes = item.as_bytes();
        let (mut i, mut depth) = (0, 0usize);
        let end = loop {
            if i >= bytes.len() {
                break bytes.len();
            }
            match bytes[i] {
                b'{' | b'(' | b'[' => depth += 1,
                // The end of the block around a test field or statement: not the item's.
                b'}' | b')' | b']' if depth == 0 => break i,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        break i + 1;
                    }
                }
                b')' | b']' => depth -= 1,
                // An item, a statement, or a field (`#[cfg(test)] name: Type,`).
                b';' | b',' if depth == 0 => break i + 1,
                _ => {}
            }
            i += 1;
        };
        let declared = item[..end].trim();
        if declared.ends_with(';') && !declared.contains('{') {
            let words: Vec<&str> = declared.trim_end_matches(';').split_whitespace().collect();
            if let [.., "mod", name] = words.as_slice() {
                test_modules.push(name.to_string());
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    (out, test_modules)
}

/// The paths of a `use` tree or an inline path starting at `text`: `a::{b::C, d}` is
/// `[a, b, C]` and `[a, d]`; a group's `self` ends the path at its module.
fn paths_at(text: &str) -> Vec<Vec<String>> {
    fn tree(text: &str, mut i: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
        let bytes = text.as_bytes();
        let mut path = prefix;
        loop {
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < bytes.len() && bytes[i] == b'{' {
                i += 1;
                loop {
                    i = tree(text, i, path.clone(), out);
                    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                        i += 1;
                    }
                    match bytes.get(i) {
                        Some(b',') => {
                            i += 1;
                            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                                i += 1;
                            }
                            if bytes.get(i) == Some(&b'}') {
                                return i + 1;
                            }
                        }
                        Some(b'}') => return i + 1,
                        _ => return i,
                    }
                }
            }
            if i < bytes.len() && bytes[i] == b'*' {
                path.push("*".into());
                out.push(path);
                return i + 1;
            }
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let segment = &text[start..i];
            if segment.is_empty() {
                out.push(path);
                return i;
            }
            if segment != "self" || path.is_empty() {
                path.push(segment.to_string());
            }
            if text[i..].starts_with("::") {
                i += 2;
            } else {
                // `as alias` and whatever follows are not part of the path.
                out.push(path);
                return i;
            }
        }
    }
    let mut out = Vec::new();
    tree(text, 0, Vec::new(), &mut out);
    out
}

/// One file's module, its code, and what it re-exports.
struct Module {
    code: String,
    /// The paths of its `use` items and of every `crate::`/`super::`/`self::` path.
    paths: Vec<(bool, Vec<String>)>,
}

/// The module graph of one crate.
pub struct Graph {
    modules: BTreeMap<ModulePath, Module>,
}

impl Graph {
    /// The graph of the files (relative path -> text) of one crate.
    pub fn new(sources: &BTreeMap<String, String>) -> Graph {
        let mut modules = BTreeMap::new();
        let mut test_only = BTreeSet::new();
        for (relative, text) in sources {
            let path = module_path(relative);
            let (code, tests) = code_of(text);
            for name in tests {
                let mut child = path.clone();
                child.push(name);
                test_only.insert(child);
            }
            let mut paths = Vec::new();
            for (at, _) in code.match_indices("use ") {
                if ident_char(code[..at].chars().last()) {
                    continue;
                }
                let public = code[..at].trim_end().ends_with("pub") || code[..at].trim_end().ends_with(')');
                for p in paths_at(&code[at + 4..]) {
                    paths.push((public, p));
                }
            }
            for prefix in ["crate::", "super::", "self::"] {
                for (at, _) in code.match_indices(prefix) {
                    let before = code[..at].chars().last();
                    if ident_char(before) || before == Some(':') || before == Some('$') {
                        continue;
                    }
                    paths.extend(paths_at(&code[at..]).into_iter().map(|p| (false, p)));
                }
            }
            modules.insert(path, Module { code, paths });
        }
        modules.retain(|path, _| !test_only.iter().any(|t| path.starts_with(t)));
        Graph { modules }
    }

    /// Where `path`, written in `module`, leads: the module that defines what it names, and
    /// for a glob the modules of the re-exported names that `module` uses.
    fn resolve(&self, module: &ModulePath, path: &[String], seen: &mut BTreeSet<ModulePath>) -> Vec<ModulePath> {
        let (mut current, mut rest) = match path.first().map(String::as_str) {
            Some("crate") => (Vec::new(), &path[1..]),
            Some("self") => (module.clone(), &path[1..]),
            Some("super") => {
                let mut base = module.clone();
                let mut rest = path;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
                (base, rest)
            }
            Some(first) => {
                let mut child = module.clone();
                child.push(first.to_string());
                if !self.modules.contains_key(&child) {
                    return Vec::new(); // another crate, or a local item
                }
                (child, &path[1..])
            }
            None => return Vec::new(),
        };
        while let Some(segment) = rest.first() {
            let mut child = current.clone();
            child.push(segment.clone());
            if self.modules.contains_key(&child) {
                current = child;
                rest = &rest[1..];
            } else {
                break;
            }
        }
        let mut targets = vec![current.clone()];
        if !seen.insert(current.clone()) {
            return targets;
        }
        match rest.first().map(String::as_str) {
            Some("*") => {
                let code = &self.modules[module].code;
                for (name, from) in self.reexports(&current, seen) {
                    if uses_name(code, &name) {
                        targets.extend(from);
                    }
                }
            }
            Some(name) => {
                for (exported, from) in self.reexports(&current, seen) {
                    if exported == name {
                        targets.extend(from);
                    }
                }
            }
            None => {}
        }
        seen.remove(&current);
        targets
    }

    /// The names `module` re-exports (`pub use`), with the modules they come from.
    fn reexports(&self, module: &ModulePath, seen: &mut BTreeSet<ModulePath>) -> Vec<(String, Vec<ModulePath>)> {
        let Some(m) = self.modules.get(module) else { return Vec::new() };
        let mut out = Vec::new();
        for (public, path) in &m.paths {
            if *public {
                if let Some(name) = path.last().filter(|n| n.as_str() != "*") {
                    let from = self.resolve(module, path, seen);
                    out.push((name.clone(), from));
                }
            }
        }
        out
    }

    /// Every edge between two sibling modules, keyed by their parent.
    pub fn sibling_edges(&self) -> BTreeMap<ModulePath, BTreeMap<String, BTreeSet<String>>> {
        let mut out: BTreeMap<ModulePath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
        for (from, module) in &self.modules {
            for (_, path) in &module.paths {
                for to in self.resolve(from, path, &mut BTreeSet::new()) {
                    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
                    if common == from.len() || common == to.len() {
                        continue; // a module and its ancestor
                    }
                    out.entry(from[..common].to_vec())
                        .or_default()
                        .entry(from[common].clone())
                        .or_default()
                        .insert(to[common].clone());
                }
            }
        }
        out
    }

    /// The first cycle among the siblings of any module, as `parent: a -> b -> a`.
    pub fn cycle(&self) -> Option<String> {
        self.sibling_edges().into_iter().find_map(|(parent, edges)| {
            find_cycle(&edges).map(|cycle| format!("{}: {}", display(&parent), cycle.join(" -> ")))
        })
    }

    /// Whether `from` (or a module inside it) names `to` (or a module inside it).
    pub fn depends(&self, from: &[&str], to: &[&str]) -> bool {
        self.modules.iter().filter(|(path, _)| path.starts_with(&owned(from))).any(|(path, module)| {
            module
                .paths
                .iter()
                .any(|(_, p)| self.resolve(path, p, &mut BTreeSet::new()).iter().any(|t| t.starts_with(&owned(to))))
        })
    }

    pub fn edge_count(&self) -> usize {
        self.sibling_edges().values().flat_map(|e| e.values()).map(BTreeSet::len).sum()
    }
}

fn owned(path: &[&str]) -> ModulePath {
    path.iter().map(|s| s.to_string()).collect()
}

fn display(path: &ModulePath) -> String {
    if path.is_empty() {
        "crate".into()
    } else {
        path.join("::")
    }
}

/// Whether `name` appears in `code` as a whole identifier.
fn uses_name(code: &str, name: &str) -> bool {
    code.match_indices(name)
        .any(|(at, _)| !ident_char(code[..at].chars().last()) && !ident_char(code[at + name.len()..].chars().next()))
}

/// A cycle in `edges`, as a path that ends where it starts.
pub fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == node) {
            let mut cycle = path[i..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges.keys().find_map(|node| visit(node, edges, &mut Vec::new(), &mut done))
}
