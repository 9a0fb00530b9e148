//! Properties: chunking covers every turn of a session exactly once, in order, and every chunk
//! stays within the budget unless a single indivisible pair is larger than it; re-chunking
//! from `rechunk_start` after the turns from an anchor on changed gives what chunking the
//! changed session whole gives.

use memlane_core::chunk::{chunk_session, estimate_tokens, rechunk_start, Chunk};
use memlane_core::model::{Role, Session, Turn};
use proptest::prelude::*;

fn turn_strategy() -> impl Strategy<Value = Turn> {
    let role = prop_oneof![
        4 => Just(Role::User),
        5 => Just(Role::Assistant),
        1 => Just(Role::Summary),
    ];
    // Texts from empty to several budgets long, with paragraph breaks and multi-byte chars.
    let text = prop::collection::vec(
        prop_oneof![
            "[a-z]{1,12}".prop_map(|s| s + " "),
            Just("\n\n".to_owned()),
            Just("é😀 ".to_owned()),
            "[a-z]{200,400}",
        ],
        0..120,
    )
    .prop_map(|parts| parts.concat());
    (role, text).prop_map(|(role, text)| Turn {
        role,
        text,
        ..Turn::default()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn every_turn_lands_in_order(turns in prop::collection::vec(turn_strategy(), 0..25), budget in 20usize..600) {
        let session = Session { id: "s".into(), turns, ..Session::default() };
        let chunks = chunk_session(&session, "p", budget);
        // Consecutive chunks either continue the same turn (a split part) or start right after.
        let mut next = 0u32;
        for c in &chunks {
            prop_assert!(c.turn_start <= c.turn_end);
            prop_assert!(c.turn_start == next || c.turn_start + 1 == next, "gap or overlap: {} after {}", c.turn_start, next);
            next = c.turn_end + 1;
        }
        prop_assert_eq!(next as usize, session.turns.len());
        // Only an indivisible prompt/reply pair may exceed the budget.
        for c in &chunks {
            if estimate_tokens(&c.text) > budget + 1 {
                prop_assert!(c.turn_end - c.turn_start <= 1 && c.part == 0, "oversized chunk {}..{}", c.turn_start, c.turn_end);
            }
        }
        // A turn is in several chunks only when it was split for size.
        for w in chunks.windows(2) {
            if w[1].turn_start < w[0].turn_end + 1 {
                let t = &session.turns[w[1].turn_start as usize];
                prop_assert!(estimate_tokens(&t.text) + 4 > budget, "turn split without being over budget");
            }
        }
        // Nothing is lost or duplicated: the chunks spell out the rendered turns exactly.
        let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
        let label = |r: Role| match r { Role::User => "User:", Role::Assistant => "Assistant:", Role::Summary => "Summary:" };
        let expected: String = session.turns.iter().map(|t| format!("{}{}", label(t.role), squash(&t.text))).collect();
        let actual: String = chunks.iter().map(|c| squash(&c.text)).collect();
        prop_assert_eq!(actual, expected);
    }

    #[test]
    fn rechunking_after_an_append_matches_chunking_whole(
        mut turns in prop::collection::vec(turn_strategy(), 1..25),
        anchor_turn in turn_strategy(),
        appended in prop::collection::vec(turn_strategy(), 0..8),
        pick in any::<prop::sample::Index>(),
        budget in 20usize..600,
    ) {
        // An append resumes at a human turn (it opens a group); from there on anything may
        // change.
        let base = pick.index(turns.len());
        turns[base].role = Role::User;
        let chunks = |t: &[Turn]| chunk_session(&Session { id: "s".into(), turns: t.to_vec(), ..Session::default() }, "p", budget);
        let from = rechunk_start(&turns, base, budget);
        prop_assert!(from <= base);
        let earlier = chunks(&turns);
        let mut later = turns[..base].to_vec();
        later.push(Turn { role: Role::User, ..anchor_turn });
        later.extend(appended);
        let whole = chunks(&later);
        let kept: Vec<&Chunk> = earlier.iter().filter(|c| (c.turn_start as usize) < from).collect();
        let mut tail = chunks(&later[from..]);
        for c in &mut tail {
            c.turn_start += from as u32;
            c.turn_end += from as u32;
        }
        let resumed: Vec<&Chunk> = kept.into_iter().chain(&tail).collect();
        prop_assert_eq!(resumed, whole.iter().collect::<Vec<_>>());
    }
}
