//! Turn-pair chunking: a human turn with the reply it got, about 500 tokens by a cheap estimate;
//! consecutive short turn groups are packed into one chunk up to [`PACK_TOKENS`].
//!
//! A pair is never split unless one turn alone exceeds the budget; that turn is then cut at
//! paragraph boundaries (then lines, then words) into consecutive parts.

use super::text::{content_key, estimate_tokens, split_text, tokens_of_bytes, Chunk};
use crate::model::{Role, Session, Turn};
use std::collections::HashSet;

/// Label a turn the way it is rendered in a chunk.
fn speaker_label(turn: &Turn) -> &str {
    if let Some(s) = turn.speaker.as_deref() {
        return s;
    }
    match turn.role {
        Role::User => "User",
        Role::Assistant => "Assistant",
        Role::Summary => "Summary",
    }
}

/// Group a session's turns: each human turn with the replies that follow it; summaries and
/// replies with no human turn before them stand alone. Returns inclusive index ranges.
#[must_use]
pub fn turn_groups(turns: &[Turn]) -> Vec<(usize, usize)> {
    let mut groups = Vec::new();
    let mut start: Option<usize> = None;
    for (i, turn) in turns.iter().enumerate() {
        let opens = match turn.role {
            Role::User | Role::Summary => true,
            Role::Assistant => start.is_none_or(|s| turns[s].role == Role::Summary),
        };
        if opens {
            if let Some(s) = start {
                groups.push((s, i - 1));
            }
            start = Some(i);
        }
    }
    if let Some(s) = start {
        groups.push((s, turns.len() - 1));
    }
    groups
}

/// Consecutive turn groups are packed into one chunk while their text together stays within
/// this many estimated tokens (inside one 256-token window of the local embedder). A chat of
/// short messages otherwise gives chunks of a line or two: too little text for BM25 and the
/// embedder to match on, and an answer often sits in the turn right after the pair that
/// holds its question.
pub const PACK_TOKENS: usize = 200;

/// The pack size for a chunk budget: never more than the budget itself.
fn pack_limit(budget: usize) -> usize {
    PACK_TOKENS.min(budget)
}

/// How a turn reads in a chunk.
fn render(turn: &Turn) -> String {
    format!("{}: {}", speaker_label(turn), turn.text.trim())
}

/// Words too common to say that two turns share a topic. Sorted: searched by bisection.
const COMMON_WORDS: &[&str] = &[
    "about",
    "after",
    "again",
    "also",
    "always",
    "amazing",
    "awesome",
    "back",
    "because",
    "been",
    "before",
    "being",
    "cool",
    "could",
    "definitely",
    "does",
    "doing",
    "done",
    "even",
    "every",
    "feel",
    "from",
    "glad",
    "going",
    "good",
    "great",
    "have",
    "hear",
    "help",
    "here",
    "hope",
    "into",
    "just",
    "keep",
    "know",
    "like",
    "look",
    "love",
    "made",
    "make",
    "many",
    "more",
    "much",
    "need",
    "nice",
    "only",
    "other",
    "over",
    "really",
    "right",
    "should",
    "some",
    "something",
    "still",
    "sure",
    "take",
    "than",
    "thank",
    "thanks",
    "that",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "things",
    "think",
    "this",
    "those",
    "time",
    "totally",
    "very",
    "want",
    "well",
    "were",
    "what",
    "when",
    "where",
    "which",
    "will",
    "with",
    "would",
    "yeah",
    "your",
];

/// The topic words of turns: words of four or more letters or digits, lowercased, common words
/// aside (speaker labels aside: every turn of a chat has them).
fn topic_words(rendered: &[String]) -> HashSet<String> {
    rendered
        .iter()
        .flat_map(|r| {
            r.split_once(": ")
                .map_or(r.as_str(), |(_, body)| body)
                .split(|c: char| !c.is_alphanumeric())
        })
        .filter(|w| w.chars().count() >= 4)
        .map(str::to_lowercase)
        .filter(|w| COMMON_WORDS.binary_search(&w.as_str()).is_err())
        .collect()
}

/// Bytes of the `rendered` turns `start..=end`, each followed by a blank line: what they add
/// to a pack (a pack's own text is that less its last blank line).
fn spaced_bytes(rendered: &[String], (start, end): (usize, usize)) -> usize {
    rendered[start..=end].iter().map(|r| r.len() + 2).sum()
}

/// Merge consecutive `groups` greedily, left to right, while the joined text of a pack
/// (`rendered` turns separated by blank lines) stays within `pack` estimated tokens and the
/// conversation stays on its topic: a group joins when the pack ends on a question (the group
/// answers it) or shares a topic word with the pack. Packing across a change of topic blurs
/// both: the chunk's vector and words then speak for neither, and a statement packed with
/// unrelated chatter loses to its own older restatement. Whether a group joins the pack
/// before it depends only on the groups up to it, so packing restarted at a pack boundary
/// yields the packs a packing from the start yields.
fn pack_groups(rendered: &[String], groups: &[(usize, usize)], pack: usize) -> Vec<(usize, usize)> {
    let on_topic = |(ps, pe): (usize, usize), (gs, ge): (usize, usize)| {
        rendered[pe].trim_end().ends_with('?')
            || !topic_words(&rendered[ps..=pe]).is_disjoint(&topic_words(&rendered[gs..=ge]))
    };
    let mut out: Vec<((usize, usize), usize)> = Vec::new();
    for &g in groups {
        let added = spaced_bytes(rendered, g);
        match out.last_mut() {
            // Size first: the topic test only ever reads packs of a few hundred bytes.
            Some((last, held))
                if tokens_of_bytes(*held + added - 2) <= pack && on_topic(*last, g) =>
            {
                last.1 = g.1;
                *held += added;
            }
            _ => out.push((g, added)),
        }
    }
    out.into_iter().map(|(g, _)| g).collect()
}

/// Where chunking `turns` again must start so that every chunk before it stays what chunking
/// them whole gives, when the turns from `turn_base` on may still change (an appended
/// transcript is re-parsed from there): the start of the pack before `turn_base` if that pack
/// has room for another group (whether one joins depends on its topic too, unknown until it is
/// written: re-chunking a pack that stays as it was costs little), else `turn_base`. `turns`
/// must start at a pack boundary (a session's first turn, or an earlier result of this
/// function) and `turn_base` must open a turn group.
#[must_use]
pub fn rechunk_start(turns: &[Turn], turn_base: usize, budget: usize) -> usize {
    let head = &turns[..turn_base.min(turns.len())];
    let rendered: Vec<String> = head.iter().map(render).collect();
    let pack = pack_limit(budget);
    let Some(&(start, end)) = pack_groups(&rendered, &turn_groups(head), pack).last() else {
        return turn_base;
    };
    let text_bytes = spaced_bytes(&rendered, (start, end)) - 2;
    // The smallest group (`: ` and its blank line) adds one estimated token.
    if tokens_of_bytes(text_bytes) < pack {
        start
    } else {
        turn_base
    }
}

/// Chunk one session from `path` into turn-pair chunks, short pairs packed together.
#[must_use]
pub fn chunk_session(session: &Session, path: &str, budget: usize) -> Vec<Chunk> {
    let format = session.format.map_or("unknown", |f| f.as_str());
    let rendered: Vec<String> = session.turns.iter().map(render).collect();
    let pack = pack_limit(budget);
    let mut chunks = Vec::new();
    for (start, end) in pack_groups(&rendered, &turn_groups(&session.turns), pack) {
        let group = &rendered[start..=end];
        let joined = group.join("\n\n");
        let total: usize = group.iter().map(|r| estimate_tokens(r)).sum();
        let simple_pair_fits =
            group.len() <= 2 && group.iter().all(|r| estimate_tokens(r) <= budget);
        let texts: Vec<(String, usize, usize)> =
            if estimate_tokens(&joined) <= pack || total <= budget || simple_pair_fits {
                // A pack, or a prompt and its reply unless one of them alone is too long.
                vec![(joined, start, end)]
            } else {
                // Too long: pack turns greedily, splitting only turns that exceed the budget,
                // so a tool-heavy reply of many turns does not become one giant chunk.
                let mut out: Vec<(String, usize, usize)> = Vec::new();
                for (offset, text) in group.iter().enumerate() {
                    let idx = start + offset;
                    for piece in split_text(text, budget) {
                        match out.last_mut() {
                            Some((prev, _, prev_end))
                                if estimate_tokens(prev) + estimate_tokens(&piece) < budget =>
                            {
                                prev.push_str("\n\n");
                                prev.push_str(&piece);
                                *prev_end = idx;
                            }
                            _ => out.push((piece, idx, idx)),
                        }
                    }
                }
                out
            };
        let n_parts = texts.len();
        for (part, (text, first, last)) in texts.into_iter().enumerate() {
            let covered = &session.turns[first..=last];
            chunks.push(build_chunk(
                session,
                path,
                format,
                covered,
                (first, last),
                if n_parts > 1 { part } else { 0 },
                text,
            ));
        }
    }
    chunks
}

fn build_chunk(
    session: &Session,
    path: &str,
    format: &str,
    covered: &[Turn],
    (first, last): (usize, usize),
    part: usize,
    text: String,
) -> Chunk {
    let (key, content_hash) = content_key(&text);
    let mut roles: Vec<&str> = Vec::new();
    let mut tools: Vec<String> = Vec::new();
    let mut files: Vec<String> = Vec::new();
    let mut turn_ids = Vec::new();
    for t in covered {
        if !roles.contains(&t.role.as_str()) {
            roles.push(t.role.as_str());
        }
        for tool in &t.tools {
            if !tools.contains(tool) {
                tools.push(tool.clone());
            }
        }
        for f in &t.files {
            if !files.contains(f) {
                files.push(f.clone());
            }
        }
        turn_ids.extend(t.ids.iter().cloned());
    }
    let stamps = covered.iter().filter_map(|t| t.timestamp);
    // Where the first turn that says was written (a session can change directory or branch);
    // else where the session was.
    let (cwd, branch) = covered
        .iter()
        .find(|t| t.cwd.is_some())
        .map_or((&session.cwd, &session.branch), |t| (&t.cwd, &t.branch));
    Chunk {
        key,
        content_hash,
        session_id: session.id.clone(),
        parent_session_id: session.parent_id.clone(),
        path: path.to_owned(),
        format: format.to_owned(),
        turn_start: u32::try_from(first).unwrap_or(u32::MAX),
        turn_end: u32::try_from(last).unwrap_or(u32::MAX),
        part: u32::try_from(part).unwrap_or(u32::MAX),
        role: roles.join("+"),
        ts_start: stamps.clone().min(),
        ts_end: stamps.max(),
        tools,
        files,
        turn_ids,
        text,
        source: "transcript".to_owned(),
        heading: String::new(),
        meta: serde_json::Value::Null,
        cwd: cwd.clone(),
        branch: branch.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::DEFAULT_BUDGET_TOKENS;

    fn turn(role: Role, text: &str) -> Turn {
        Turn {
            role,
            text: text.to_owned(),
            ..Turn::default()
        }
    }

    fn session(turns: Vec<Turn>) -> Session {
        Session {
            id: "s".into(),
            turns,
            ..Session::default()
        }
    }

    #[test]
    fn pairs_user_with_following_replies() {
        let s = session(vec![
            turn(Role::Assistant, "greeting, deploy"),
            turn(Role::User, "q1 deploy"),
            turn(Role::Assistant, "a1"),
            turn(Role::Assistant, "a1 more"),
            turn(Role::Summary, "summary of the deploy"),
            turn(Role::Assistant, "after summary: deploy"),
            turn(Role::User, "q2 deploy"),
        ]);
        let groups = turn_groups(&s.turns);
        assert_eq!(groups, vec![(0, 0), (1, 3), (4, 4), (5, 5), (6, 6)]);
        // Short groups on one topic are packed: the whole session is one chunk.
        let chunks = chunk_session(&s, "p", DEFAULT_BUDGET_TOKENS);
        assert_eq!(chunks.len(), 1);
        assert_eq!((chunks[0].turn_start, chunks[0].turn_end), (0, 6));
        assert!(chunks[0]
            .text
            .contains("\n\nUser: q1 deploy\n\nAssistant: a1\n\nAssistant: a1 more\n\n"));
        assert_eq!(chunks[0].role, "assistant+user+summary");
    }

    /// Eight pairs of 105- and 110-byte turns, then a 250-token prompt with a short reply.
    fn short_pairs_then_a_long_one() -> Vec<Turn> {
        let line = "word ".repeat(20);
        let mut turns = Vec::new();
        for _ in 0..8 {
            turns.push(turn(Role::User, &line));
            turns.push(turn(Role::Assistant, &line));
        }
        turns.push(turn(Role::User, &"word ".repeat(200)));
        turns.push(turn(Role::Assistant, "ok"));
        turns
    }

    fn spans(chunks: &[Chunk]) -> Vec<(u32, u32)> {
        chunks.iter().map(|c| (c.turn_start, c.turn_end)).collect()
    }

    #[test]
    fn short_pairs_are_packed_up_to_the_pack_size() {
        let chunks = chunk_session(&session(short_pairs_then_a_long_one()), "p", 500);
        // Three pairs are 164 estimated tokens, four would be 219; the long pair stays alone.
        assert_eq!(spans(&chunks), vec![(0, 5), (6, 11), (12, 15), (16, 17)]);
        assert!(chunks[0].text.starts_with("User: word"));
        assert!(chunks[..3]
            .iter()
            .all(|c| estimate_tokens(&c.text) <= PACK_TOKENS));
        // A budget below the pack size caps the packs too.
        let small = chunk_session(&session(short_pairs_then_a_long_one()), "p", 120);
        assert_eq!(&spans(&small)[..2], &[(0, 3), (4, 7)]);
    }

    #[test]
    fn a_change_of_topic_starts_a_new_pack() {
        let said = |speaker: &str, text: &str| Turn {
            speaker: Some(speaker.to_owned()),
            ..turn(Role::User, text)
        };
        let s = session(vec![
            said("Melanie", "I painted a sunset over the lake last weekend."),
            said("Caroline", "The lake sounds lovely at that hour."),
            said("Melanie", "My daughter starts school on Monday."),
            said("Caroline", "Which school did you pick?"),
            said("Melanie", "The one near the library, five minutes away."),
        ]);
        let chunks = chunk_session(&s, "p", DEFAULT_BUDGET_TOKENS);
        // "lake" is shared; school shares no word with the painting, but the last turn answers
        // the question before it.
        assert_eq!(spans(&chunks), vec![(0, 1), (2, 4)]);
        // Topic words skip the speaker label, short words and common words.
        let words = topic_words(&["Melanie: Thanks, that is a great idea for my garden".into()]);
        let mut words: Vec<_> = words.into_iter().collect();
        words.sort();
        assert_eq!(words, ["garden", "idea"]);
        // The common words are searched by bisection: sorted, lowercase, no repeats.
        assert!(COMMON_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(COMMON_WORDS.iter().all(|w| *w == w.to_lowercase()));
    }

    #[test]
    fn rechunk_starts_at_the_last_pack_that_could_still_grow() {
        let turns = short_pairs_then_a_long_one();
        // Inside a pack: from its start.
        assert_eq!(rechunk_start(&turns, 8, 500), 6);
        assert_eq!(rechunk_start(&turns, 10, 500), 6);
        // At a pack boundary: the pack before holds 164 tokens, so a short group could join it.
        assert_eq!(rechunk_start(&turns, 6, 500), 0);
        assert_eq!(rechunk_start(&turns, 16, 500), 12);
        assert_eq!(rechunk_start(&turns, 0, 500), 0);
        // After a group that fills a pack alone, nothing before the anchor changes.
        assert_eq!(rechunk_start(&turns[16..], 2, 500), 2);
    }

    #[test]
    fn rechunking_from_the_rechunk_start_matches_chunking_whole() {
        let turns = short_pairs_then_a_long_one();
        let fresh = |t: &[Turn]| chunk_session(&session(t.to_vec()), "p", 500);
        for base in [2, 4, 6, 8, 12, 14, 16] {
            let earlier = fresh(&turns[..base + 1]);
            // The turns from `base` on change: the group there grows and more follow.
            let mut grown = turns[..base].to_vec();
            grown.push(turn(Role::User, "and one more thing"));
            grown.push(turn(Role::Assistant, &"reply ".repeat(30)));
            grown.extend(turns[base..].iter().cloned());
            let whole = fresh(&grown);
            let from = rechunk_start(&turns[..base + 1], base, 500);
            let kept: Vec<&Chunk> = earlier
                .iter()
                .filter(|c| (c.turn_start as usize) < from)
                .collect();
            let mut tail = fresh(&grown[from..]);
            for c in &mut tail {
                c.turn_start += from as u32;
                c.turn_end += from as u32;
            }
            let resumed: Vec<&Chunk> = kept.into_iter().chain(&tail).collect();
            assert_eq!(
                resumed,
                whole.iter().collect::<Vec<_>>(),
                "anchor at turn {base}"
            );
        }
    }

    #[test]
    fn long_pair_of_short_turns_is_not_split() {
        let a = "word ".repeat(300);
        let s = session(vec![turn(Role::User, &a), turn(Role::Assistant, &a)]);
        let chunks = chunk_session(&s, "p", 500);
        assert_eq!(chunks.len(), 1);
        assert_eq!((chunks[0].turn_start, chunks[0].turn_end), (0, 1));
    }

    #[test]
    fn overlong_turn_splits_at_paragraphs() {
        let para = "sentence ".repeat(100); // ~900 bytes, ~225 tokens
        let long = [para.trim(); 6].join("\n\n");
        let s = session(vec![
            turn(Role::User, "short question"),
            turn(Role::Assistant, &long),
        ]);
        let chunks = chunk_session(&s, "p", 500);
        assert!(chunks.len() >= 3, "{}", chunks.len());
        for c in &chunks {
            assert!(
                estimate_tokens(&c.text) <= 500,
                "{}",
                estimate_tokens(&c.text)
            );
        }
        assert!(chunks[0].text.starts_with("User: short question"));
        assert_eq!(
            chunks.iter().map(|c| c.part).collect::<Vec<_>>(),
            (0..chunks.len() as u32).collect::<Vec<_>>()
        );
        let rejoined: String = chunks
            .iter()
            .map(|c| c.text.replace(char::is_whitespace, ""))
            .collect();
        let original =
            format!("User: short question\n\nAssistant: {long}").replace(char::is_whitespace, "");
        assert_eq!(rejoined, original);
    }

    #[test]
    fn split_text_handles_unbroken_multibyte_text() {
        let text = "é".repeat(3000);
        let pieces = split_text(&text, 100);
        assert!(pieces.iter().all(|p| p.len() <= 400));
        assert_eq!(pieces.concat(), text);
    }

    #[test]
    fn key_is_stable_and_fits_56_bits() {
        let (k1, h1) = content_key("hello");
        let (k2, h2) = content_key("hello");
        assert_eq!((k1, &h1), (k2, &h2));
        assert!(k1 < (1 << 56));
        assert_eq!(h1.len(), 32);
        assert_ne!(content_key("hello!").0, k1);
    }
}
