//! Active-branch selection for tree-shaped logs (Claude Code `uuid`/`parentUuid`, pi/OpenClaw
//! `id`/`parentId`).
//!
//! Rewinds, edits and retries leave abandoned sibling branches in the file. We index only the
//! branch the user ended up on: the path from the newest leaf back to the root. Links that
//! point nowhere (records the writer never flushed, a toolResult whose parent is a tool-call
//! id, a compaction boundary without `logicalParentUuid`) fall back to the previous record in
//! file order instead of cutting the conversation short.

use std::collections::HashMap;

/// How a record points at its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Link {
    /// A root: no parent.
    Root,
    /// Parent id.
    To(String),
    /// A parent is implied but unknown: continue with the previous record in file order.
    Previous,
}

/// A record's id and the parent id it links to, where it has them: the ids a resume
/// fingerprints so that an appended record cannot silently re-route an older link.
pub(crate) fn id_and_parent<'a>(
    id: Option<&'a str>,
    link: &'a Link,
) -> impl Iterator<Item = &'a str> {
    let parent = match link {
        Link::To(p) => Some(p.as_str()),
        _ => None,
    };
    id.into_iter().chain(parent)
}

/// Indices (into `ids`/`links`, which are parallel and in file order) of the active path,
/// root first.
///
/// * `ids[i]` — record id (records without one can still start a walk, never be a parent);
/// * `leaf` — where to start: an explicit leaf, else the caller's newest candidate;
/// * when no record links anywhere the log is linear and every record is kept.
pub(crate) fn active_path(ids: &[Option<&str>], links: &[Link], leaf: Option<usize>) -> Vec<usize> {
    let n = ids.len().min(links.len());
    if links[..n].iter().all(|l| *l == Link::Root) {
        return (0..n).collect();
    }
    let Some(start) = leaf.filter(|&l| l < n) else {
        return Vec::new();
    };
    let mut by_id: HashMap<&str, usize> = HashMap::with_capacity(n);
    for (i, id) in ids[..n].iter().enumerate() {
        if let Some(id) = id {
            by_id.entry(id).or_insert(i);
        }
    }
    let mut visited = vec![false; n];
    let mut path = Vec::new();
    let mut cur = start;
    loop {
        if visited[cur] {
            break;
        }
        visited[cur] = true;
        path.push(cur);
        let next = match &links[cur] {
            Link::Root => None,
            // A record named as its own parent links nowhere: followed, it would end the walk
            // at the record and leave off everything before it.
            Link::To(p) => match by_id.get(p.as_str()) {
                Some(&i) if i != cur => Some(i),
                _ => cur.checked_sub(1),
            },
            Link::Previous => cur.checked_sub(1),
        };
        match next {
            Some(i) => cur = i,
            None => break,
        }
    }
    path.reverse();
    path
}

/// Skip reason of records with content left off the active branch: they are in the file, and
/// the report says so, but the conversation the user ended up with does not contain them.
pub(crate) const ABANDONED: &str = "abandoned_branch";

/// The branch of a tree-shaped log that the user ended up on.
pub(crate) struct Branch {
    /// Indices of its records, root first.
    pub(crate) path: Vec<usize>,
    /// Records with content that it leaves off (rewinds, edits, retries): reported, so that
    /// every record is accounted for.
    pub(crate) abandoned: u64,
}

/// The active branch of a log whose records are `ids`/`links` (parallel, file order);
/// `content[i]` says whether record `i` adds something to the conversation. `None` when no
/// record does.
///
/// The leaf is the newest record with content — a stray record without any (an API error, a
/// malformed message) never becomes the leaf and cuts the conversation off — unless
/// `pinned` (a leaf the log names itself) lies on another branch. In a linked log only the
/// first record starts the conversation: a later record without a parent continues from the
/// one before it rather than discarding everything written so far.
pub(crate) fn active_branch(
    ids: &[Option<&str>],
    links: &[Link],
    content: &[bool],
    pinned: Option<usize>,
) -> Option<Branch> {
    let newest = content.iter().rposition(|&c| c)?;
    let mut links = links.to_vec();
    if links.iter().any(|l| *l != Link::Root) {
        for link in links.iter_mut().skip(1) {
            if *link == Link::Root {
                *link = Link::Previous;
            }
        }
    }
    let mut path = active_path(ids, &links, Some(newest));
    if let Some(pinned) = pinned.filter(|p| !path.contains(p)) {
        path = active_path(ids, &links, Some(pinned));
    }
    let abandoned = off_path(content, &path, 0);
    Some(Branch { path, abandoned })
}

/// How many records from `from` on carry content (`content[i]`) but are not on `path`.
pub(crate) fn off_path(content: &[bool], path: &[usize], from: usize) -> u64 {
    let mut on_path = vec![false; content.len()];
    for &i in path {
        if let Some(slot) = on_path.get_mut(i) {
            *slot = true;
        }
    }
    (from..content.len())
        .filter(|&i| content[i] && !on_path[i])
        .count() as u64
}

/// The active path from `leaf` back to record 0 of a region at the end of a log, root
/// first: what [`active_path`] walks in the whole log, given that record 0 of the region is
/// on that path and nothing before the region links into it. `None` when the walk would
/// leave the region: a root other than record 0, a cycle, or a link to an id outside the
/// region that `outside` says an earlier record has (a link nobody has dangles, and the walk
/// goes on with the previous record, as in [`active_path`]).
pub(crate) fn path_to_first(
    ids: &[Option<&str>],
    links: &[Link],
    leaf: usize,
    outside: impl Fn(&str) -> bool,
) -> Option<Vec<usize>> {
    let mut by_id: HashMap<&str, usize> = HashMap::with_capacity(ids.len());
    for (i, id) in ids.iter().enumerate() {
        if let Some(id) = id {
            by_id.entry(id).or_insert(i);
        }
    }
    let mut visited = vec![false; ids.len().min(links.len())];
    let mut path = Vec::new();
    let mut cur = leaf;
    loop {
        if std::mem::replace(visited.get_mut(cur)?, true) {
            return None;
        }
        path.push(cur);
        if cur == 0 {
            break;
        }
        cur = match &links[cur] {
            Link::To(p) => match by_id.get(p.as_str()) {
                Some(&i) if i != cur => i,
                // A record named as its own parent, as in `active_path`.
                Some(_) => cur - 1,
                None if outside(p) => return None,
                None => cur - 1,
            },
            Link::Previous => cur - 1,
            Link::Root => return None,
        };
    }
    path.reverse();
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_newest_branch() {
        // a <- b1, a <- b2 <- c2
        let ids = [Some("a"), Some("b1"), Some("b2"), Some("c2")];
        let links = [
            Link::Root,
            Link::To("a".into()),
            Link::To("a".into()),
            Link::To("b2".into()),
        ];
        assert_eq!(active_path(&ids, &links, Some(3)), vec![0, 2, 3]);
        assert_eq!(active_path(&ids, &links, Some(1)), vec![0, 1]);
    }

    #[test]
    fn linear_and_dangling_and_cycles() {
        let ids = [Some("a"), Some("b")];
        assert_eq!(
            active_path(&ids, &[Link::Root, Link::Root], Some(1)),
            vec![0, 1]
        );
        let links = [Link::Root, Link::To("missing".into())];
        assert_eq!(active_path(&ids, &links, Some(1)), vec![0, 1]);
        let links = [Link::To("b".into()), Link::To("a".into())];
        assert_eq!(active_path(&ids, &links, Some(1)), vec![0, 1]);
        // A record that names itself as its parent continues the conversation, not ends it
        // (found by `one_more_record_never_drops_turns`: it had left only that record).
        let ids = [Some("a"), Some("b"), Some("c")];
        let links = [Link::Root, Link::To("a".into()), Link::To("c".into())];
        assert_eq!(active_path(&ids, &links, Some(2)), vec![0, 1, 2]);
        assert_eq!(
            path_to_first(&ids, &links, 2, |_| false),
            Some(vec![0, 1, 2])
        );
    }
}
