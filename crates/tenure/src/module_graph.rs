//! The crate's modules depend on each other without a cycle.
//!
//! Each module that the crate root declares is one node (a folder module
//! such as `store` with everything below it is one node). A module depends
//! on another when its code names it: `crate::m`, `$crate::m`, a group
//! `use crate::{m, ...}`, `super::` paths that climb to the crate root, or a
//! name the crate root re-exports from `m` (`crate::Lease` is a use of
//! `lease`). Comments, string and character literals are not code; neither
//! are `#[cfg(test)]` modules, whose tests may drive a low module through the
//! public API above it, nor modules the root declares only for tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// `text` with comments, string literals and character literals blanked.
fn code_of(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !b[..i]
                .last()
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
                out.push_str("' '");
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// `code` without its `#[cfg(test)] mod name { ... }` blocks.
fn without_test_modules(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let mut t = after.trim_start();
        if let Some(r) = t.strip_prefix("pub") {
            let r = r.trim_start();
            t = match r.strip_prefix('(') {
                Some(r) => r.split_once(')').map_or(r, |x| x.1).trim_start(),
                None => r,
            };
        }
        let is_block = t.starts_with("mod ") && {
            let head: String = t.chars().take_while(|&c| c != ';' && c != '{').collect();
            t[head.len()..].starts_with('{')
        };
        if !is_block {
            out.push_str("#[cfg(test)]");
            rest = after;
            continue;
        }
        let open = after.find('{').expect("a module block opens");
        let mut depth = 0usize;
        let mut end = after.len();
        for (k, ch) in after[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

fn ident_at(s: &str) -> &str {
    let n = s
        .char_indices()
        .find(|&(_, c)| !(c.is_alphanumeric() || c == '_'))
        .map_or(s.len(), |(k, _)| k);
    &s[..n]
}

/// The top-level names `code` reaches through the crate root, given the
/// depth of its file's module below the root (1 for `lease.rs` or
/// `store/mod.rs`, 2 for `store/sqlite/mod.rs`, ...).
fn root_names(code: &str, depth: usize) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let bytes = code.as_bytes();
    for (at, _) in code.match_indices("crate::") {
        if at > 0 {
            let p = bytes[at - 1] as char;
            if p.is_alphanumeric() || p == '_' {
                continue;
            }
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth_in = 0usize;
            let mut item = String::new();
            let mut items = Vec::new();
            for ch in group.chars() {
                match ch {
                    '{' => depth_in += 1,
                    '}' if depth_in == 0 => break,
                    '}' => depth_in -= 1,
                    ',' if depth_in == 0 => items.push(std::mem::take(&mut item)),
                    _ if depth_in == 0 => item.push(ch),
                    _ => {}
                }
            }
            items.push(item);
            for it in items {
                let n = ident_at(it.trim_start());
                if !n.is_empty() {
                    names.insert(n.to_string());
                }
            }
        } else {
            let n = ident_at(rest);
            if !n.is_empty() {
                names.insert(n.to_string());
            }
        }
    }
    for (at, _) in code.match_indices("super::") {
        if at > 0 {
            let p = bytes[at - 1] as char;
            if p.is_alphanumeric() || p == '_' || p == ':' {
                continue;
            }
        }
        let mut rest = &code[at..];
        let mut ups = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            ups += 1;
            rest = r;
        }
        if ups >= depth {
            let n = ident_at(rest);
            if !n.is_empty() {
                names.insert(n.to_string());
            }
        }
    }
    names
}

/// The modules the crate root declares (those it declares only for tests
/// left out), and what each name it re-exports resolves to.
fn root() -> (BTreeSet<String>, BTreeMap<String, String>) {
    let lib = code_of(&std::fs::read_to_string(src().join("lib.rs")).unwrap());
    let mut modules = BTreeSet::new();
    let mut exports = BTreeMap::new();
    for stmt in lib.split(';') {
        let stmt = stmt.trim();
        let mut s = stmt;
        let mut attrs = String::new();
        while s.starts_with("#") {
            let end = s.find(']').map_or(s.len(), |k| k + 1);
            attrs.push_str(&s[..end]);
            s = s[end..].trim_start();
        }
        let test_only = attrs.contains("cfg(test)");
        let s = s
            .strip_prefix("pub(crate) ")
            .or_else(|| s.strip_prefix("pub "))
            .unwrap_or(s);
        if let Some(m) = s.strip_prefix("mod ") {
            if !test_only {
                modules.insert(m.trim().to_string());
            }
        } else if let Some(u) = s.strip_prefix("use ") {
            let from = ident_at(u).to_string();
            let rest = &u[from.len()..];
            let list = match (rest.find('{'), rest.rfind('}')) {
                (Some(a), Some(b)) => rest[a + 1..b].to_string(),
                _ => rest.rsplit("::").next().unwrap_or("").to_string(),
            };
            for item in list.split(',') {
                let item = item.trim();
                let name = item.rsplit(" as ").next().unwrap_or(item).trim();
                let name = ident_at(name.rsplit("::").next().unwrap_or(name));
                if !name.is_empty() {
                    exports.insert(name.to_string(), from.clone());
                }
            }
        }
    }
    (modules, exports)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Module → the other modules it uses.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let (modules, exports) = root();
    let mut g = BTreeMap::new();
    for m in &modules {
        let file = src().join(format!("{m}.rs"));
        let folder = src().join(m);
        let mut files = Vec::new();
        if file.is_file() {
            files.push(file);
        }
        if folder.is_dir() {
            rust_files(&folder, &mut files);
        }
        assert!(!files.is_empty(), "module {m} has no file");
        let mut uses = BTreeSet::new();
        for f in files {
            let rel = f.strip_prefix(src()).unwrap();
            let mut depth = rel.components().count();
            if rel.file_name().is_some_and(|n| n == "mod.rs") {
                depth -= 1;
            }
            let text = std::fs::read_to_string(&f).unwrap();
            let code = without_test_modules(&code_of(&text));
            for n in root_names(&code, depth) {
                let target = if modules.contains(&n) {
                    Some(n)
                } else {
                    exports.get(&n).cloned()
                };
                if let Some(t) = target.filter(|t| t != m && modules.contains(t)) {
                    uses.insert(t);
                }
            }
        }
        g.insert(m.clone(), uses);
    }
    g
}

/// A cycle of `g`, if it has one.
fn cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        g: &BTreeMap<String, BTreeSet<String>>,
        n: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(k) = path.iter().position(|p| p == n) {
            let mut c = path[k..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(g, m, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|n| visit(g, n, &mut Vec::new(), &mut done))
}

#[test]
fn the_module_graph_has_no_cycle() {
    if let Some(c) = cycle(&graph()) {
        panic!("a module cycle: {}", c.join(" -> "));
    }
}

#[test]
fn the_sys_module_depends_on_leaf_modules_only() {
    let g = graph();
    let allowed = BTreeSet::from(["error".to_string()]);
    assert!(g["sys"].is_subset(&allowed), "sys uses {:?}", g["sys"]);
}

#[test]
fn the_module_graph_sees_what_code_names() {
    let g = graph();
    for m in [
        "authority",
        "edit",
        "inner",
        "keeper",
        "lease",
        "store",
        "wait",
    ] {
        assert!(g.contains_key(m), "{m} is a node: {:?}", g.keys());
    }
    // Each form of naming another module is an edge.
    assert!(g["authority"].contains("wait"), "use crate::wait::...");
    assert!(g["keeper"].contains("lease"), "use crate::lease::Lease");
    assert!(g["edit"].contains("ops"), "crate::ops::shared_operations!");
    assert!(g["ops"].contains("lease"), "$crate::lease / $crate::Lease");
    assert!(g["worker"].contains("authority"), "a root re-export");
    assert!(
        g["store"].contains("sys"),
        "the store reaches the system through sys"
    );
    assert_eq!(
        root_names("super::super::x", 2),
        BTreeSet::from(["x".to_string()])
    );
    assert_eq!(root_names("super::y", 2), BTreeSet::new());
    // Comments and strings are not code.
    let code = code_of("// crate::a\n/* crate::b */ \"crate::c\" r#\"crate::d\"# crate::e");
    assert_eq!(root_names(&code, 1), BTreeSet::from(["e".to_string()]));
    for m in ["mod tests", "pub(super) mod tests"] {
        let code =
            without_test_modules(&format!("#[cfg(test)]\n{m} {{ use crate::a; }}\ncrate::b"));
        assert_eq!(root_names(&code, 1), BTreeSet::from(["b".to_string()]));
    }
    let mut cyclic = BTreeMap::new();
    cyclic.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    cyclic.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert!(cycle(&cyclic).is_some());
}
