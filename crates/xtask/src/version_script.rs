//! The linker version script `crates/tenure-capi/tenure.map`: its parser
//! and the rules `cargo xtask abi-check` holds it to.
//!
//! - the nodes are `TENURE_<major>.0` .. `TENURE_<major>.<minor>` in order,
//!   each after the first inheriting the one before;
//! - every `global:` entry is a plain `tenure_*` name (no wildcard), and
//!   every name is in exactly one node;
//! - the names are exactly the `tenure_*` functions the Rust library
//!   defines (a function in no node would silently not be exported);
//! - the nodes `.0 ..= .m` give exactly the symbols of the baseline
//!   `abi-versions/<major>.<m>/symbols.txt`, for every baseline of the
//!   major (so the released `TENURE_1.0` node stays what 1.0 shipped).

use crate::util::Result;
use std::collections::{BTreeMap, BTreeSet};

/// One version node: `NAME { global: a; b; local: *; } PARENT;`.
#[derive(Debug, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    pub parent: Option<String>,
    pub globals: Vec<String>,
}

fn strip_comments(text: &str) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        out.push(' ');
        let end = rest[start + 2..]
            .find("*/")
            .ok_or("tenure.map: unterminated /* comment")?;
        rest = &rest[start + 2 + end + 2..];
    }
    out.push_str(rest);
    Ok(out
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n"))
}

fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_whitespace() || "{};:".contains(c) {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
        } else {
            word.push(c);
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// Parse a version script made of named nodes (the subset of the GNU ld
/// syntax tenure.map uses: `global:`/`local:` lists, comments).
pub fn parse(text: &str) -> Result<Vec<Node>> {
    let toks = tokens(&strip_comments(text)?);
    let mut i = 0;
    let mut nodes = Vec::new();
    let next = |i: &mut usize| -> Result<&str> {
        let t = toks
            .get(*i)
            .map(String::as_str)
            .ok_or("tenure.map: unexpected end of file")?;
        *i += 1;
        Ok(t)
    };
    let expect = |i: &mut usize, want: &str| -> Result {
        let got = next(i)?;
        if got == want {
            Ok(())
        } else {
            Err(format!("tenure.map: expected `{want}`, found `{got}`"))
        }
    };
    while i < toks.len() {
        let name = next(&mut i)?.to_string();
        expect(&mut i, "{")?;
        let mut globals = Vec::new();
        let mut section = "";
        loop {
            let t = next(&mut i)?;
            match t {
                "}" => break,
                "global" | "local" => {
                    section = if t == "global" { "global" } else { "local" };
                    expect(&mut i, ":")?;
                }
                ";" | "{" | ":" => return Err(format!("tenure.map: stray `{t}` in {name}")),
                sym => {
                    match section {
                        "global" => globals.push(sym.to_string()),
                        "local" => {}
                        _ => return Err(format!("tenure.map: `{sym}` outside global:/local:")),
                    }
                    expect(&mut i, ";")?;
                }
            }
        }
        let parent = match next(&mut i)? {
            ";" => None,
            p => {
                let p = p.to_string();
                expect(&mut i, ";")?;
                Some(p)
            }
        };
        nodes.push(Node {
            name,
            parent,
            globals,
        });
    }
    Ok(nodes)
}

/// Hold the parsed script to the rules in the module comment. `defined` are
/// the `tenure_*` functions of the Rust library; `baselines` maps each
/// baseline minor of `major` to its `symbols.txt` lines (`name@@VERSION`).
pub fn check(
    nodes: &[Node],
    major: u32,
    minor: u32,
    defined: &BTreeSet<String>,
    baselines: &BTreeMap<u32, BTreeSet<String>>,
) -> Result {
    let want: Vec<String> = (0..=minor).map(|m| format!("TENURE_{major}.{m}")).collect();
    let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    if names != want {
        return Err(format!(
            "tenure.map: version nodes are {names:?}; ABI {major}.{minor} needs {want:?} in that order"
        ));
    }
    let mut node_of: BTreeMap<&str, &str> = BTreeMap::new();
    for (m, n) in nodes.iter().enumerate() {
        let parent = m.checked_sub(1).map(|p| want[p].as_str());
        if n.parent.as_deref() != parent {
            return Err(format!(
                "tenure.map: {} must inherit {}",
                n.name,
                parent.unwrap_or("nothing")
            ));
        }
        for g in &n.globals {
            if !g.starts_with("tenure_")
                || !g.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                return Err(format!(
                    "tenure.map: {} lists `{g}`; only plain tenure_* names are allowed",
                    n.name
                ));
            }
            if let Some(first) = node_of.insert(g, &n.name) {
                return Err(format!("tenure.map: {g} is in both {first} and {}", n.name));
            }
        }
    }
    let listed: BTreeSet<String> = node_of.keys().map(|s| s.to_string()).collect();
    let unlisted: Vec<_> = defined.difference(&listed).collect();
    if !unlisted.is_empty() {
        return Err(format!(
            "tenure.map: {unlisted:?} are defined by the library but in no version node, so \
             they would not be exported; append them to the TENURE_{major}.{minor} node"
        ));
    }
    let gone: Vec<_> = listed.difference(defined).collect();
    if !gone.is_empty() {
        return Err(format!(
            "tenure.map: {gone:?} are listed but the library does not define them"
        ));
    }
    for (&m, base) in baselines {
        let from_map: BTreeSet<String> = node_of
            .iter()
            .filter(|(_, node)| {
                want.iter()
                    .position(|w| w == *node)
                    .is_some_and(|k| k as u32 <= m)
            })
            .map(|(sym, node)| format!("{sym}@@{node}"))
            .collect();
        if &from_map != base {
            let extra: Vec<_> = from_map.difference(base).collect();
            let missing: Vec<_> = base.difference(&from_map).collect();
            return Err(format!(
                "tenure.map: nodes TENURE_{major}.0..={m} disagree with \
                 abi-versions/{major}.{m}/symbols.txt (not in the baseline: {extra:?}; \
                 only in the baseline: {missing:?}); a released node never changes, an \
                 unreleased baseline is rewritten by `cargo xtask abi-check --bless`"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::root;
    use std::fs;

    const MAP: &str =
        "/* c */ TENURE_1.0 {\n global:\n  tenure_a; # note\n  tenure_b;\n local:\n  *;\n};\n\
                       TENURE_1.1 { global: tenure_c; } TENURE_1.0;\n";

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn bases() -> BTreeMap<u32, BTreeSet<String>> {
        BTreeMap::from([
            (0, set(&["tenure_a@@TENURE_1.0", "tenure_b@@TENURE_1.0"])),
            (
                1,
                set(&[
                    "tenure_a@@TENURE_1.0",
                    "tenure_b@@TENURE_1.0",
                    "tenure_c@@TENURE_1.1",
                ]),
            ),
        ])
    }

    fn check_text(text: &str, defined: &[&str]) -> Result {
        check(&parse(text)?, 1, 1, &set(defined), &bases())
    }

    #[test]
    fn parses_nodes_parents_and_globals() {
        let nodes = parse(MAP).unwrap();
        assert_eq!(
            nodes,
            vec![
                Node {
                    name: "TENURE_1.0".into(),
                    parent: None,
                    globals: vec!["tenure_a".into(), "tenure_b".into()],
                },
                Node {
                    name: "TENURE_1.1".into(),
                    parent: Some("TENURE_1.0".into()),
                    globals: vec!["tenure_c".into()],
                },
            ]
        );
        check_text(MAP, &["tenure_a", "tenure_b", "tenure_c"]).unwrap();
    }

    #[test]
    fn refuses_every_way_a_script_goes_wrong() {
        let all = ["tenure_a", "tenure_b", "tenure_c"];
        let cases = [
            // a defined function in no node (it would not be exported)
            (MAP.to_string(), &all[..], "in no version node"),
            // in two nodes
            (
                MAP.replace("tenure_c;", "tenure_c; tenure_a;"),
                &all[..3],
                "in both",
            ),
            // a wildcard instead of names
            (MAP.replace("tenure_c;", "tenure_*;"), &all[..3], "plain"),
            // a released symbol moved to the new node
            (
                MAP.replace("  tenure_b;\n", "")
                    .replace("tenure_c;", "tenure_c; tenure_b;"),
                &all[..3],
                "disagree with abi-versions/1.0",
            ),
            // a new name not blessed into the 1.1 baseline
            (
                MAP.replace("tenure_c;", "tenure_c; tenure_d;"),
                &["tenure_a", "tenure_b", "tenure_c", "tenure_d"][..],
                "disagree with abi-versions/1.1",
            ),
            // the 1.1 node does not inherit 1.0
            (
                MAP.replace("} TENURE_1.0;", "};"),
                &all[..3],
                "must inherit",
            ),
            // a missing node
            (
                MAP.replace("TENURE_1.1", "TENURE_1.2"),
                &all[..3],
                "version nodes",
            ),
            // listed but not defined
            (MAP.to_string(), &all[..2], "does not define"),
        ];
        for (i, (text, defined, want)) in cases.iter().enumerate() {
            let mut defined = defined.to_vec();
            if i == 0 {
                defined.push("tenure_z");
            }
            let err = check_text(text, &defined).unwrap_err();
            assert!(err.contains(want), "case {i}: {err}");
        }
        assert!(parse("TENURE_1.0 { global: tenure_a }").is_err());
        assert!(parse("/* open").is_err());
    }

    /// The released node of the checked-in script is exactly what ABI 1.0
    /// shipped, forever.
    #[test]
    fn the_checked_in_1_0_node_is_the_released_1_0_symbol_list() {
        let text = fs::read_to_string(root().join("crates/tenure-capi/tenure.map")).unwrap();
        let nodes = parse(&text).unwrap();
        let released = fs::read_to_string(root().join("abi-versions/1.0/symbols.txt")).unwrap();
        let released: BTreeSet<String> = released
            .lines()
            .map(|l| {
                l.strip_suffix("@@TENURE_1.0")
                    .expect("a 1.0 symbol")
                    .to_string()
            })
            .collect();
        assert_eq!(nodes[0].name, "TENURE_1.0");
        let node: BTreeSet<String> = nodes[0].globals.iter().cloned().collect();
        assert_eq!(node, released);
        assert_eq!(node.len(), nodes[0].globals.len(), "no name twice");
    }
}
