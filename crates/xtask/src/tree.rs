//! The state of the tracked files, so that `cargo xtask test` fails when the
//! run changes one (a rewritten lock file, a regenerated header, a report
//! written over a committed one).
//!
//! A developer may start with local changes: the check compares the state at
//! the end with the state at the start, never with `HEAD`. A [`Snapshot`]
//! holds the commit checked out at the start and, for every tracked file
//! that differs from it (`git status --porcelain --untracked-files=no`), the
//! Git object id of its content (or "deleted"). At the end, every file that
//! differs from either commit is compared by content, so a commit made
//! during the run (same content, new `HEAD`) is not a change.

use crate::util::{output, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a tracked file holds: the object id of its content, or `None` when
/// it is missing from the work tree.
type Content = Option<String>;

/// The tracked files' state in one work tree at one moment.
pub struct Snapshot {
    dir: PathBuf,
    head: String,
    /// Tracked files that differ from `head`, with their content.
    changed: BTreeMap<String, Content>,
}

fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir);
    c
}

/// Paths of tracked files whose work-tree or index state differs from `HEAD`.
fn differing(dir: &Path) -> Result<BTreeSet<String>> {
    let text = output(git(dir).args([
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=no",
        "--ignore-submodules=none",
    ]))?;
    let mut paths = BTreeSet::new();
    let mut entries = text.split('\0').filter(|e| !e.is_empty());
    while let Some(entry) = entries.next() {
        let (code, path) = entry
            .split_at_checked(3)
            .ok_or_else(|| format!("git status: unexpected entry {entry:?}"))?;
        paths.insert(path.to_string());
        // A rename or copy is followed by its source path.
        if code.starts_with('R') || code.starts_with('C') {
            if let Some(source) = entries.next() {
                paths.insert(source.to_string());
            }
        }
    }
    Ok(paths)
}

/// The object id of `path`'s content in the work tree, `None` if missing.
fn worktree_content(dir: &Path, path: &str) -> Result<Content> {
    let full = dir.join(path);
    if std::fs::symlink_metadata(&full).is_err() {
        return Ok(None);
    }
    let id = output(git(dir).args(["hash-object", "--", path]))?;
    Ok(Some(id.trim().to_string()))
}

/// The object id of `path` in `commit`, `None` if the commit has no such file.
fn committed_content(dir: &Path, commit: &str, path: &str) -> Result<Content> {
    let text = output(git(dir).args(["ls-tree", "-z", commit, "--", path]))?;
    Ok(text.split('\0').find_map(|entry| {
        let (meta, name) = entry.split_once('\t')?;
        (name == path).then(|| meta.split_whitespace().nth(2).map(str::to_string))?
    }))
}

impl Snapshot {
    /// The state of the tracked files of the work tree at `dir` now.
    pub fn take(dir: &Path) -> Result<Snapshot> {
        let head = output(git(dir).args(["rev-parse", "--verify", "HEAD"]))?
            .trim()
            .to_string();
        let changed = differing(dir)?
            .into_iter()
            .map(|p| worktree_content(dir, &p).map(|c| (p, c)))
            .collect::<Result<_>>()?;
        Ok(Snapshot {
            dir: dir.to_path_buf(),
            head,
            changed,
        })
    }

    /// The content a tracked file had when the snapshot was taken.
    fn content(&self, path: &str) -> Result<Content> {
        match self.changed.get(path) {
            Some(c) => Ok(c.clone()),
            None => committed_content(&self.dir, &self.head, path),
        }
    }

    /// The tracked files whose content differs now from this snapshot, sorted.
    pub fn changed_since(&self) -> Result<Vec<String>> {
        let now = Snapshot::take(&self.dir)?;
        let mut candidates: BTreeSet<String> = self.changed.keys().cloned().collect();
        candidates.extend(now.changed.keys().cloned());
        if now.head != self.head {
            // Files the new commit changed look clean now but may differ from
            // the start.
            let text = output(git(&self.dir).args([
                "diff",
                "--name-only",
                "-z",
                "--no-renames",
                &self.head,
                &now.head,
            ]))?;
            candidates.extend(
                text.split('\0')
                    .filter(|p| !p.is_empty())
                    .map(str::to_string),
            );
        }
        let mut out = Vec::new();
        for path in candidates {
            if self.content(&path)? != now.content(&path)? {
                out.push(path);
            }
        }
        Ok(out)
    }

    /// Fail, naming the files, when a tracked file changed since the snapshot.
    pub fn check_unchanged(&self) -> Result {
        let changed = self.changed_since()?;
        if changed.is_empty() {
            println!("tracked files: none changed by the run");
            return Ok(());
        }
        Err(format!(
            "the run changed tracked files (it must only write ignored or temporary files): {}",
            changed.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::run;
    use std::fs;

    /// A fresh repository with two committed files.
    fn repo(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("tenure-xtask-tree-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("sub")).unwrap();
        fs::write(dir.join("a.txt"), "a\n").unwrap();
        fs::write(dir.join("sub/b.txt"), "b\n").unwrap();
        run(git(&dir).args(["init", "-q"])).unwrap();
        commit(&dir, "init");
        dir
    }

    fn commit(dir: &Path, msg: &str) {
        run(git(dir).args(["add", "-A"])).unwrap();
        run(git(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(["commit", "-q", "--allow-empty", "-m", msg]))
        .unwrap();
    }

    #[test]
    fn an_untouched_tree_has_no_changes() {
        let dir = repo("untouched");
        let s = Snapshot::take(&dir).unwrap();
        fs::write(dir.join("untracked.log"), "x").unwrap();
        assert_eq!(s.changed_since().unwrap(), Vec::<String>::new());
        s.check_unchanged().unwrap();
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_rewritten_or_deleted_tracked_file_is_named() {
        let dir = repo("rewritten");
        let s = Snapshot::take(&dir).unwrap();
        fs::write(dir.join("sub/b.txt"), "rewritten\n").unwrap();
        fs::remove_file(dir.join("a.txt")).unwrap();
        assert_eq!(s.changed_since().unwrap(), ["a.txt", "sub/b.txt"]);
        let err = s.check_unchanged().unwrap_err();
        assert!(err.contains("a.txt, sub/b.txt"), "{err}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn local_changes_made_before_the_run_are_not_blamed_on_it() {
        let dir = repo("local");
        fs::write(dir.join("a.txt"), "edited before the run\n").unwrap();
        let s = Snapshot::take(&dir).unwrap();
        assert_eq!(s.changed_since().unwrap(), Vec::<String>::new());
        // Changed again during the run: named.
        fs::write(dir.join("a.txt"), "edited during the run\n").unwrap();
        assert_eq!(s.changed_since().unwrap(), ["a.txt"]);
        // Restored to the content at the start (differing from HEAD): fine.
        fs::write(dir.join("a.txt"), "edited before the run\n").unwrap();
        assert_eq!(s.changed_since().unwrap(), Vec::<String>::new());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_commit_of_the_same_content_is_not_a_change_but_new_content_is() {
        let dir = repo("commit");
        fs::write(dir.join("a.txt"), "local\n").unwrap();
        let s = Snapshot::take(&dir).unwrap();
        commit(&dir, "commit the local change");
        assert_eq!(s.changed_since().unwrap(), Vec::<String>::new());
        fs::write(dir.join("sub/b.txt"), "new\n").unwrap();
        commit(&dir, "commit new content");
        assert_eq!(s.changed_since().unwrap(), ["sub/b.txt"]);
        let _ = fs::remove_dir_all(&dir);
    }
}
