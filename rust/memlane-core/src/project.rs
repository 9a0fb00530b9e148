//! Which project a working directory belongs to: the root of the git repository around it.
//!
//! A project key is a path: the repository root of the directory (the nearest folder, itself
//! or above, holding `.git`); for a linked worktree (`git worktree add`, whose `.git` is a file
//! naming `<main>/.git/worktrees/<name>`) the main checkout's root, so every checkout of one
//! repository is one project and the branch tells them apart; the directory itself when it is
//! in no repository or no longer exists (the transcript outlives the checkout).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The repository root holding `dir`, if `dir` is inside a git checkout.
#[must_use]
pub fn repository_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find_map(|d| {
        let dot_git = d.join(".git");
        let meta = std::fs::metadata(&dot_git).ok()?;
        if meta.is_dir() {
            return Some(d.to_owned());
        }
        // A `.git` file: a linked worktree or a submodule, pointing at its git directory.
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let gitdir = d.join(text.strip_prefix("gitdir:")?.trim());
        Some(main_checkout(&gitdir).unwrap_or_else(|| d.to_owned()))
    })
}

/// The main checkout of a linked worktree whose git directory is `<main>/.git/worktrees/<name>`
/// (a submodule's, `<super>/.git/modules/<name>`, is its own repository: `None`).
fn main_checkout(gitdir: &Path) -> Option<PathBuf> {
    let worktrees = gitdir.parent()?;
    if worktrees.file_name()? != "worktrees" {
        return None;
    }
    let common = worktrees.parent()?;
    (common.file_name()? == ".git")
        .then(|| common.parent().map(Path::to_owned))
        .flatten()
}

/// The project key of working directory `cwd` (see the module documentation); `""` for none.
///
/// ```
/// // A directory that no longer exists is its own project.
/// assert_eq!(memlane_core::project::project_of("/no/such/dir/"), "/no/such/dir");
/// ```
#[must_use]
pub fn project_of(cwd: &str) -> String {
    let trimmed = cwd.trim();
    let cwd = match trimmed.trim_end_matches(['/', '\\']) {
        "" if !trimmed.is_empty() => &trimmed[..1],
        rest => rest,
    };
    if cwd.is_empty() {
        return String::new();
    }
    let dir = Path::new(cwd);
    if !dir.is_dir() {
        return cwd.to_owned();
    }
    repository_root(dir).map_or_else(|| cwd.to_owned(), |r| r.to_string_lossy().into_owned())
}

/// Whether the notes filed under project key `key` are the user's own, read in every project:
/// the key is a folder that exists and lies in no git repository (a personal notes folder,
/// the brain's `DailyActivity` journal), as user-level memory is in Claude Code. A library
/// inside a repository is filed under the repository's key (see [`project_of`]), and belongs
/// to that project; so does a notes folder that is a repository itself.
///
/// Asked of the key when reading, not recorded when indexing: a home indexed before the
/// distinction existed has it at once, and a folder that becomes a repository (`git init`)
/// stops being global without a re-index.
///
/// ```
/// let notes = tempfile::tempdir().unwrap();
/// assert!(memlane_core::project::is_user_library(notes.path()));
/// std::fs::create_dir(notes.path().join(".git")).unwrap();
/// assert!(!memlane_core::project::is_user_library(notes.path()));
/// assert!(!memlane_core::project::is_user_library(std::path::Path::new("/no/such/notes")));
/// ```
#[must_use]
pub fn is_user_library(key: &Path) -> bool {
    key.is_absolute() && key.is_dir() && repository_root(key).is_none()
}

/// [`project_of`], remembered per directory: an index run asks once per distinct `cwd`, from
/// whichever thread reads the file.
#[derive(Debug, Default)]
pub struct Projects {
    known: Mutex<HashMap<String, String>>,
}

impl Projects {
    /// The project key of `cwd`.
    pub fn of(&self, cwd: &str) -> String {
        if let Some(key) = self.known().get(cwd) {
            return key.clone();
        }
        // Looked up without the lock: it walks the directory's parents on disk.
        let key = project_of(cwd);
        self.known().insert(cwd.to_owned(), key.clone());
        key
    }

    fn known(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        // A panic elsewhere cannot leave the map half-written: it holds whole entries.
        self.known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_root_worktree_and_plain_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("alpha");
        std::fs::create_dir_all(repo.join(".git/worktrees/feature")).unwrap();
        std::fs::create_dir_all(repo.join("services/billing")).unwrap();
        let key = |p: &Path| project_of(&p.to_string_lossy());
        assert_eq!(key(&repo.join("services/billing")), key(&repo));
        assert_eq!(key(&repo), repo.to_string_lossy());
        // A linked worktree is its main checkout's project.
        let wt = tmp.path().join("alpha-feature");
        std::fs::create_dir_all(wt.join("src")).unwrap();
        let gitdir = repo.join(".git/worktrees/feature");
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", gitdir.display())).unwrap();
        assert_eq!(key(&wt.join("src")), repo.to_string_lossy());
        // A submodule is its own repository.
        let sub = repo.join("vendor/lib");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(".git"), "gitdir: ../../.git/modules/lib\n").unwrap();
        assert_eq!(key(&sub), sub.to_string_lossy());
        // Outside any repository, and gone: the directory itself.
        let plain = tmp.path().join("notes");
        std::fs::create_dir_all(&plain).unwrap();
        assert_eq!(key(&plain), plain.to_string_lossy());
        let gone = format!("{}/", tmp.path().join("gone/sub").display());
        assert_eq!(project_of(&gone), gone.trim_end_matches('/'));
        assert_eq!(project_of(""), "");
        assert_eq!(project_of("/"), "/");
    }
}
