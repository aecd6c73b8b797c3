//! The design document's checks, run by `cargo test` in `cargo xtask test`
//! (the test `the_design_docs_name_real_tests_and_resolve_their_links`):
//!
//! - **The test table.** `docs/design.md` has exactly one table whose header
//!   is [`TABLE_HEADER`]. Each row names a file or folder (one backticked
//!   path from the repository root) and the tests in it: backticked Rust,
//!   Python or C function names (a trailing `*` means "at least one test
//!   whose name starts so") and double-quoted C++ `TEST_CASE` names (a
//!   quoted text names the test case whose name starts with it). Every one
//!   must exist there: a Rust `fn` under `#[test]`, a Python `def test_*`, a
//!   C function defined in a test file, a C++ `TEST_CASE`.
//! - **No test names in prose.** Outside that table, neither `docs/design.md`
//!   nor a page of `docs/design/` names a test: no backticked word (or the
//!   last `::` part of one) of three words or more (`a_b_c`) is the name of
//!   a test anywhere in the tree, and no quoted text starts a C++ test
//!   case's name. (Shorter names, such as a C suite's `complete`, are API
//!   words too.)
//! - **Links resolve.** Every relative Markdown link of a page in `docs/` to
//!   a page in `docs/` (or to a heading of its own page) names an existing
//!   page and, with a `#fragment`, one of that page's headings; and every
//!   `design.md#fragment` or `design/<page>.md#fragment` written anywhere
//!   in the sources (doc comments, headers, tests, other docs; this file's
//!   own examples aside) names a heading of that page.

use crate::util::{root, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The header line of the invariant → tests table.
pub const TABLE_HEADER: &str = "| rule | what it says | where | tests |";

/// The folders whose files hold tests, from the repository root.
const TEST_ROOTS: &[&str] = &[
    "crates",
    "bindings/python/src",
    "tests",
    "cpp/tests",
    "torture/src",
];

/// The folders (and files) whose text may link into the design pages.
const LINK_ROOTS: &[&str] = &[
    "README.md",
    "docs",
    "crates",
    "bindings",
    "python",
    "cpp",
    "include",
    "tests",
    "torture/src",
];

/// This file, whose examples name pages and headings that do not exist.
const SELF: &str = "crates/xtask/src/docs.rs";

/// Source and document file endings the checks read.
const EXTENSIONS: &[&str] = &["rs", "py", "pyi", "c", "h", "cpp", "hpp", "md"];

/// One test reference of the table.
#[derive(Debug, Clone, PartialEq)]
enum Ref {
    /// A function name; `prefix` when written with a trailing `*`.
    Function { name: String, prefix: bool },
    /// The start of a C++ `TEST_CASE` name.
    Case(String),
}

/// One row of the test table.
#[derive(Debug)]
struct Row {
    /// 1-based line in the document.
    line: usize,
    /// The file or folder the tests are in.
    place: String,
    refs: Vec<Ref>,
}

/// The tests a file or folder defines.
#[derive(Debug, Default)]
struct Tests {
    functions: BTreeSet<String>,
    cases: Vec<String>,
}

impl Tests {
    fn has(&self, r: &Ref) -> bool {
        match r {
            Ref::Function {
                name,
                prefix: false,
            } => self.functions.contains(name),
            Ref::Function { name, prefix: true } => {
                self.functions.iter().any(|f| f.starts_with(name.as_str()))
            }
            Ref::Case(start) => self.cases.iter().any(|c| c.starts_with(start.as_str())),
        }
    }

    fn add(&mut self, other: Tests) {
        self.functions.extend(other.functions);
        self.cases.extend(other.cases);
    }
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The identifier that starts `s` (letters, digits, `_`).
fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The tests defined in one source text, by the file's ending.
fn tests_in_text(ext: &str, text: &str) -> Tests {
    let mut t = Tests::default();
    match ext {
        "rs" => {
            // A `fn` whose attribute block (attributes, doc comments and
            // comments right above it) holds a test attribute.
            let mut under_test = false;
            for line in text.lines() {
                let l = line.trim_start();
                if l.starts_with("#[") {
                    let attr = l.trim_end();
                    if attr == "#[test]" || attr.ends_with("::test]") {
                        under_test = true;
                    }
                    continue;
                }
                if l.starts_with("//") || l.starts_with("#![") {
                    continue;
                }
                if under_test {
                    let mut after = l;
                    for word in ["pub ", "async ", "unsafe "] {
                        after = after.strip_prefix(word).unwrap_or(after);
                    }
                    if let Some(rest) = after.strip_prefix("fn ") {
                        let name = ident_at(rest);
                        if !name.is_empty() {
                            t.functions.insert(name.to_owned());
                        }
                    }
                }
                under_test = false;
            }
        }
        "py" => {
            for line in text.lines() {
                let l = line.trim_start();
                let l = l.strip_prefix("async ").unwrap_or(l);
                if let Some(rest) = l.strip_prefix("def ") {
                    let name = ident_at(rest);
                    if name.starts_with("test") {
                        t.functions.insert(name.to_owned());
                    }
                }
            }
        }
        "c" => {
            // A function definition at the start of a line:
            // `static void name(...) {` or `void name(...) {`.
            for line in text.lines() {
                let l = line.strip_prefix("static ").unwrap_or(line);
                if let Some(rest) = l.strip_prefix("void ") {
                    let name = ident_at(rest);
                    if !name.is_empty() && rest[name.len()..].starts_with('(') {
                        t.functions.insert(name.to_owned());
                    }
                }
            }
        }
        "cpp" => {
            let mut rest = text;
            while let Some(i) = rest.find("TEST_CASE(\"") {
                rest = &rest[i + "TEST_CASE(\"".len()..];
                if let Some(end) = rest.find("\")") {
                    t.cases.push(rest[..end].to_owned());
                }
            }
        }
        _ => {}
    }
    t
}

/// Every file under `path` (or `path` itself) with one of `exts`, skipping
/// build output and hidden folders.
fn files_under(path: &Path, exts: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![path.to_path_buf()];
    while let Some(p) = todo.pop() {
        if p.is_dir() {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if p != path && (name == "target" || name.starts_with('.')) {
                continue;
            }
            if let Ok(entries) = fs::read_dir(&p) {
                todo.extend(entries.flatten().map(|e| e.path()));
            }
        } else if p
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| exts.contains(&e))
        {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The tests defined in a file, or in every file under a folder.
fn tests_at(path: &Path) -> Tests {
    let mut t = Tests::default();
    for f in files_under(path, &["rs", "py", "c", "cpp"]) {
        let ext = f.extension().and_then(|e| e.to_str()).unwrap_or("");
        if let Ok(text) = fs::read_to_string(&f) {
            t.add(tests_in_text(ext, &text));
        }
    }
    t
}

/// The cells of a table line (`| a | b |` → `["a", "b"]`).
fn cells(line: &str) -> Vec<&str> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(str::trim).collect()
}

/// The backticked spans of a text.
fn backticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The test references of a tests cell.
fn refs_in(cell: &str) -> std::result::Result<Vec<Ref>, String> {
    let mut refs = Vec::new();
    for (i, part) in cell.split('`').enumerate() {
        if i % 2 == 1 {
            let (name, prefix) = match part.strip_suffix('*') {
                Some(n) => (n, true),
                None => (part, false),
            };
            if !is_ident(name) {
                return Err(format!("`{part}` is not a test name"));
            }
            refs.push(Ref::Function {
                name: name.to_owned(),
                prefix,
            });
        } else {
            for (j, q) in part.split('"').enumerate() {
                if j % 2 == 1 {
                    refs.push(Ref::Case(q.trim_end_matches('…').trim_end().to_owned()));
                }
            }
        }
    }
    Ok(refs)
}

/// The lines of a Markdown text outside fenced blocks, with their 1-based
/// numbers.
fn prose_lines(markdown: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((i + 1, line));
        }
    }
    out
}

/// The test table's rows, and the line range it spans.
fn table(markdown: &str) -> std::result::Result<(Vec<Row>, std::ops::Range<usize>), String> {
    let lines = prose_lines(markdown);
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, (_, l))| l.trim() == TABLE_HEADER)
        .map(|(i, _)| i)
        .collect();
    let start = match starts.as_slice() {
        [one] => *one,
        [] => return Err(format!("no table headed {TABLE_HEADER:?}")),
        many => {
            return Err(format!(
                "{} tables headed {TABLE_HEADER:?} (lines {:?}); keep one",
                many.len(),
                many.iter().map(|i| lines[*i].0).collect::<Vec<_>>()
            ))
        }
    };
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    let mut end = lines[start].0;
    // The header, then the delimiter row, then the rows.
    for (n, line) in lines[start + 2..]
        .iter()
        .take_while(|(_, l)| l.trim_start().starts_with('|'))
    {
        end = *n;
        let c = cells(line);
        if c.len() != 4 {
            errors.push(format!("line {n}: {} cells, the table has 4", c.len()));
            continue;
        }
        let place = match backticked(c[2]).as_slice() {
            [p] => p.to_string(),
            _ => {
                errors.push(format!(
                    "line {n}: the place cell must be one backticked path"
                ));
                continue;
            }
        };
        match refs_in(c[3]) {
            Ok(refs) if refs.is_empty() => errors.push(format!("line {n}: names no test")),
            Ok(refs) => rows.push(Row {
                line: *n,
                place,
                refs,
            }),
            Err(e) => errors.push(format!("line {n}: {e}")),
        }
    }
    if errors.is_empty() {
        Ok((rows, lines[start].0..end + 1))
    } else {
        Err(errors.join("\n"))
    }
}

/// Every table reference that names no test in its place.
fn missing_tests(repo: &Path, rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    let mut cache: BTreeMap<String, Tests> = BTreeMap::new();
    for row in rows {
        let path = repo.join(&row.place);
        if !path.exists() {
            out.push(format!(
                "docs/design.md line {}: `{}` does not exist",
                row.line, row.place
            ));
            continue;
        }
        let tests = cache
            .entry(row.place.clone())
            .or_insert_with(|| tests_at(&path));
        for r in &row.refs {
            if !tests.has(r) {
                let shown = match r {
                    Ref::Function { name, prefix } => {
                        format!("`{name}{}`", if *prefix { "*" } else { "" })
                    }
                    Ref::Case(c) => format!("{c:?}"),
                };
                out.push(format!(
                    "docs/design.md line {}: {shown} is not a test in {}",
                    row.line, row.place
                ));
            }
        }
    }
    out
}

/// Every test name of the tree.
fn all_tests(repo: &Path) -> Tests {
    let mut t = Tests::default();
    for r in TEST_ROOTS {
        t.add(tests_at(&repo.join(r)));
    }
    t
}

/// Test names in the prose of a page: backticked words that name a test,
/// and quoted texts that start a C++ test case's name (at least 16
/// characters). `skip` is a line range left out (the table).
fn named_tests(
    page: &str,
    markdown: &str,
    skip: &std::ops::Range<usize>,
    tests: &Tests,
) -> Vec<String> {
    let mut out = Vec::new();
    for (n, line) in prose_lines(markdown) {
        if skip.contains(&n) {
            continue;
        }
        for span in backticked(line) {
            let last = span.rsplit("::").next().unwrap_or(span);
            if last.matches('_').count() >= 2 && tests.functions.contains(last) {
                out.push(format!(
                    "{page} line {n}: `{span}` names a test; tests belong in the table of docs/design.md"
                ));
            }
        }
        for (j, q) in line.split('"').enumerate() {
            if j % 2 == 1 && q.len() >= 16 && tests.cases.iter().any(|c| c.starts_with(q)) {
                out.push(format!(
                    "{page} line {n}: \"{q}\" names a C++ test; tests belong in the table of docs/design.md"
                ));
            }
        }
    }
    out
}

/// GitHub's anchor of a heading text: lower case, punctuation dropped,
/// spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings (a repeated heading gets `-1`, `-2`, …).
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose_lines(markdown) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let s = slug(&line[hashes..]);
            let n = seen.entry(s.clone()).or_insert(0);
            out.insert(if *n == 0 {
                s.clone()
            } else {
                format!("{s}-{n}")
            });
            *n += 1;
        }
    }
    out
}

/// The relative Markdown link targets of a page (`](target)`), with their
/// lines; links with a scheme (`https:`) are left out.
fn links(markdown: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose_lines(markdown) {
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = &rest[..end];
            if !target.contains(':') && !target.contains(' ') {
                out.push((n, target.to_owned()));
            }
            rest = &rest[end..];
        }
    }
    out
}

/// Anchors of the pages in `docs/`, by their path from the repository root.
type Pages = BTreeMap<String, BTreeSet<String>>;

fn pages(repo: &Path) -> Pages {
    let docs = repo.join("docs");
    files_under(&docs, &["md"])
        .into_iter()
        .filter_map(|f| {
            let rel = f.strip_prefix(repo).ok()?.to_str()?.replace('\\', "/");
            Some((rel, anchors(&fs::read_to_string(&f).ok()?)))
        })
        .collect()
}

/// `a/b/../c` → `a/c`.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// Links of the pages in `docs/` to pages in `docs/` that do not resolve.
fn broken_doc_links(repo: &Path, pages: &Pages) -> Vec<String> {
    let mut out = Vec::new();
    for page in pages.keys() {
        let Ok(text) = fs::read_to_string(repo.join(page)) else {
            continue;
        };
        let dir = page.rsplit_once('/').map_or("", |(d, _)| d);
        for (n, target) in links(&text) {
            let (file, fragment) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let resolved = if file.is_empty() {
                page.clone()
            } else {
                normalize(&format!("{dir}/{file}"))
            };
            if !resolved.starts_with("docs/") || !resolved.ends_with(".md") {
                continue;
            }
            match (pages.get(&resolved), fragment) {
                (None, _) => out.push(format!("{page} line {n}: ({target}): no page {resolved}")),
                (Some(a), Some(f)) if !a.contains(f) => out.push(format!(
                    "{page} line {n}: ({target}): {resolved} has no heading #{f}"
                )),
                _ => {}
            }
        }
    }
    out
}

/// `design.md#fragment` and `design/<page>.md#fragment` references in any
/// text, with their lines.
fn design_refs(text: &str) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find(".md#") {
            let before = &rest[..at];
            let name_start = before
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '/'))
                .map_or(0, |j| j + 1);
            let name = &before[name_start..];
            let after = &rest[at + 4..];
            let fragment: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            let page = name.rsplit("docs/").next().unwrap_or(name);
            let page = page
                .trim_start_matches("../")
                .trim_start_matches("./")
                .trim_start_matches('/');
            if page == "design" || page.starts_with("design/") {
                out.push((i + 1, format!("docs/{page}.md"), fragment));
            }
            rest = after;
        }
    }
    out
}

/// References to design pages anywhere in the sources that do not resolve.
fn broken_design_refs(repo: &Path, pages: &Pages) -> Vec<String> {
    let mut out = Vec::new();
    for r in LINK_ROOTS {
        for f in files_under(&repo.join(r), EXTENSIONS) {
            let Ok(text) = fs::read_to_string(&f) else {
                continue;
            };
            let rel = f.strip_prefix(repo).unwrap_or(&f).display().to_string();
            if rel == SELF {
                continue;
            }
            for (n, page, fragment) in design_refs(&text) {
                match pages.get(&page) {
                    None => out.push(format!("{rel} line {n}: no page {page}")),
                    Some(a) if !a.contains(&fragment) => {
                        out.push(format!("{rel} line {n}: {page} has no heading #{fragment}"))
                    }
                    _ => {}
                }
            }
        }
    }
    out
}

/// Every check of this module over the tree at `repo`.
pub fn check(repo: &Path) -> Result {
    let design = repo.join("docs/design.md");
    let text = fs::read_to_string(&design).map_err(|e| format!("{}: {e}", design.display()))?;
    let (rows, span) = table(&text).map_err(|e| format!("docs/design.md: {e}"))?;
    let mut problems = missing_tests(repo, &rows);
    let tests = all_tests(repo);
    problems.extend(named_tests("docs/design.md", &text, &span, &tests));
    for f in files_under(&repo.join("docs/design"), &["md"]) {
        let page = f.strip_prefix(repo).unwrap_or(&f).display().to_string();
        let body = fs::read_to_string(&f).map_err(|e| format!("{page}: {e}"))?;
        problems.extend(named_tests(&page, &body, &(0..0), &tests));
    }
    let pages = pages(repo);
    problems.extend(broken_doc_links(repo, &pages));
    problems.extend(broken_design_refs(repo, &pages));
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// The checks over this repository.
pub fn check_tree() -> Result {
    check(&root())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A throwaway tree with a test file of each language and a design page.
    /// A throwaway folder, removed when dropped.
    struct Tree(PathBuf);

    impl std::ops::Deref for Tree {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn tree(design: &str) -> Tree {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("xtask-docs-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let write = |p: &str, s: &str| {
            let f = dir.join(p);
            fs::create_dir_all(f.parent().unwrap()).unwrap();
            fs::write(f, s).unwrap();
        };
        write(
            "crates/a/tests/t.rs",
            "fn helper() {}\n#[test]\n/// Doc.\nfn a_real_test() {}\n#[tokio::test]\nasync fn an_async_test() {}\n",
        );
        write(
            "tests/python/test_x.py",
            "def helper():\n    pass\n\nasync def test_py_thing():\n    pass\n",
        );
        write(
            "tests/c/test_x.c",
            "static void c_case(const char *dir) {\n}\nint main(void) { c_case(0); }\n",
        );
        write(
            "cpp/tests/test_x.cpp",
            "TEST_CASE(\"worker: slots run every job once\") {}\n",
        );
        write(
            "docs/other.md",
            "# Other\n\n## A part\n\nSee [the rules](design.md#the-rules).\n",
        );
        write("docs/design.md", design);
        Tree(dir)
    }

    fn page(rows: &str, prose: &str) -> String {
        format!(
            "# Design\n\n## The rules\n\n{prose}\n\n## Tests\n\n{TABLE_HEADER}\n|---|---|---|---|\n{rows}\n\nEnd.\n"
        )
    }

    const GOOD: &str = "| 1 | one | `crates/a/tests/t.rs` | `a_real_test`, `an_async*` |\n\
        | 2 | two | `tests` | `test_py_thing`, `c_case` |\n\
        | 3 | three | `cpp/tests/test_x.cpp` | \"worker: slots run\" |";

    #[test]
    fn a_table_of_existing_tests_and_resolving_links_passes() {
        let dir = tree(&page(
            GOOD,
            "See [other](other.md#a-part) and [below](#tests).",
        ));
        check(&dir).unwrap();
    }

    #[test]
    fn a_missing_test_name_fails() {
        let rows = GOOD.replace("`a_real_test`", "`a_test_that_is_gone`");
        let dir = tree(&page(&rows, ""));
        let e = check(&dir).unwrap_err();
        assert!(
            e.contains("`a_test_that_is_gone` is not a test in crates/a/tests/t.rs"),
            "{e}"
        );
        // A helper is a function but not a test.
        let dir = tree(&page(&GOOD.replace("`a_real_test`", "`helper`"), ""));
        assert!(check(&dir).unwrap_err().contains("`helper` is not a test"));
        // A name in the wrong place, a prefix nothing starts with, an
        // unknown C++ case and a missing file fail too.
        let rows = GOOD
            .replace("`c_case`", "`a_real_test`")
            .replace("`an_async*`", "`nothing_like*`")
            .replace("\"worker: slots run\"", "\"worker: gone\"")
            .replace("`cpp/tests/test_x.cpp`", "`cpp/tests/test_y.cpp`");
        let e = check(&tree(&page(&rows, ""))).unwrap_err();
        assert!(e.contains("`a_real_test` is not a test in tests"), "{e}");
        assert!(e.contains("`nothing_like*` is not a test"), "{e}");
        assert!(e.contains("cpp/tests/test_y.cpp` does not exist"), "{e}");
    }

    #[test]
    fn test_names_outside_the_table_fail() {
        let e = check(&tree(&page(GOOD, "Pinned by `t.rs::a_real_test`."))).unwrap_err();
        assert!(e.contains("`t.rs::a_real_test` names a test"), "{e}");
        let e = check(&tree(&page(GOOD, "As \"worker: slots run every\" shows."))).unwrap_err();
        assert!(e.contains("names a C++ test"), "{e}");
    }

    #[test]
    fn one_table_with_well_formed_rows() {
        let e = check(&tree("# Design\n")).unwrap_err();
        assert!(e.contains("no table headed"), "{e}");
        let twice = format!(
            "{}\n{TABLE_HEADER}\n|---|---|---|---|\n{GOOD}\n",
            page(GOOD, "")
        );
        assert!(check(&tree(&twice)).unwrap_err().contains("2 tables"));
        let bad = page("| 1 | one | crates/a/tests/t.rs | `a_real_test` |", "");
        assert!(check(&tree(&bad))
            .unwrap_err()
            .contains("one backticked path"));
        let bad = page("| 1 | one | `tests` | `not a name` |", "");
        assert!(check(&tree(&bad))
            .unwrap_err()
            .contains("is not a test name"));
    }

    #[test]
    fn links_to_missing_pages_or_headings_fail() {
        let e = check(&tree(&page(
            GOOD,
            "[x](#no-such) [y](gone.md) [z](other.md#nope)",
        )))
        .unwrap_err();
        assert!(e.contains("docs/design.md has no heading #no-such"), "{e}");
        assert!(e.contains("no page docs/gone.md"), "{e}");
        assert!(e.contains("docs/other.md has no heading #nope"), "{e}");
        // A page linking to a heading of the design page that is gone.
        let e = check(&tree(&page(GOOD, "").replace("## The rules", "## Rules"))).unwrap_err();
        assert!(
            e.contains("docs/other.md line 5: (design.md#the-rules)"),
            "{e}"
        );
    }

    #[test]
    fn anchors_follow_github() {
        let a = anchors("# T\n\n## Scheduling: delays, hold limits, back-off\n## C ABI\n## C ABI\n```\n# not a heading\n```\n");
        let want: BTreeSet<String> = [
            "t",
            "scheduling-delays-hold-limits-back-off",
            "c-abi",
            "c-abi-1",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        assert_eq!(a, want);
        assert_eq!(slug("`tenure.aio` and threads"), "tenureaio-and-threads");
    }

    #[test]
    fn design_refs_are_found_in_any_text() {
        let r = design_refs(
            "/// see docs/design.md#group-commit and (design/sqlite-store.md#queue).\n[a](../docs/design.md#errors)",
        );
        assert_eq!(
            r,
            vec![
                (1, "docs/design.md".into(), "group-commit".into()),
                (1, "docs/design/sqlite-store.md".into(), "queue".into()),
                (2, "docs/design.md".into(), "errors".into()),
            ]
        );
    }

    #[test]
    fn the_design_docs_name_real_tests_and_resolve_their_links() {
        check_tree().unwrap();
    }
}
