"""Capture: what the user corrected, prefers, confirmed and reported broken, from a session's turns.

Offline detectors over the user's own words, precision first:

- **correction** ("no, don't…", "stop doing…", "that's wrong, use…", "I said X not Y", "you
  broke…, revert") → a ``CR`` entry in EVOLUTION.md;
- **preference**, a standing one ("always…", "never…", "I prefer…", "from now on…", "please
  don't ever…") → a ``user``-type entry in MEMORY.md (Lessons Learned, ``type: user``:
  Claude Code's memory type for what the user wants, always private);
- **competence**, a fix the user then confirmed ("that worked", "tests pass now") → a ``CP``
  entry naming what the assistant did;
- **failure**, the user reporting that the assistant's change broke something or did not help
  → an ``FA`` entry.

Only the user's prose is read: quoted lines (``> …``), pasted logs and stack traces, indented
and fenced code, inline code and quoted strings, tool calls and tool output never count, nor do
questions, hypotheticals ("if you always…") and politeness ("no worries", "no, that's fine").
The assistant's words are only used to say *what* worked or failed, never as evidence.

Where the line is drawn: an instruction for the task at hand ("don't touch the tests in this
PR", "for now, skip…", "don't commit yet") is not a preference — it would be wrong in the next
session. A preference must say it stands ("always", "never", "from now on", "going forward",
"I prefer", "whenever you…"), and a scope word ("in this PR", "for now", "this time",
"today", "yet") cancels it. A bare "don't do X" with no correction marker is left alone too:
without one it is as likely a task instruction as a correction. A breakage report with an
order to revert ("you broke the login, revert it") is a correction; without one it is a failure.

Example:
    >>> classify("No, don't use print statements here — use the logger in utils/log.py.")
    'correction'
    >>> classify("From now on, write commit messages in the imperative mood.")
    'preference'
    >>> classify("Don't touch the tests in this PR."), classify("No worries, take your time.")
    ('none', 'none')
    >>> turns = [{"role": "assistant", "text": "I fixed the timezone bug in `parse_date` by using UTC."},
    ...          {"role": "user", "text": "That worked, thanks!"}]
    >>> [(c.kind, c.turns, c.text) for c in capture(turns)]
    [('competence', (0, 1), 'I fixed the timezone bug in `parse_date` by using UTC. (confirmed by the user: That worked, thanks!)')]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memlane.brain.engines import near_duplicate, sentences, shorten

KINDS = ("correction", "failure", "preference", "competence")
"""What capture finds, in the order one user turn's primary kind is chosen."""

LABELS = (*KINDS, "none")
"""The labels of the labelled set (``tests/fixtures/capture_labelled.jsonl``)."""

SECTIONS: dict[str, tuple[str, str | None]] = {
    "correction": ("CR", None),
    "preference": ("LL", "user"),
    "competence": ("CP", None),
    "failure": ("FA", None),
}
"""Where each kind is written: section prefix and memory type (``None``: the section's)."""

MAX_PER_KIND = 3
"""At most this many captures of each kind per session: the brain stays curated."""

# ---------------------------------------------------------------------------- the user's prose

# Lines that are not the user talking: quotes, indented code, pasted logs and stack traces.
_QUOTED_LINE = re.compile(r"^\s*>")
_INDENTED_LINE = re.compile(r"^(?: {4}|\t)")
_LOG_LINE = re.compile(
    r"^\s*(?:Traceback \(most recent call last\)|File \"|at [\w$.<>]+\(|[\w.]*(?:Error|Exception|Warning)\b\s*[:(]"
    r"|(?:ERROR|WARN(?:ING)?|INFO|DEBUG|FATAL|CRITICAL|PANIC|E\d{4})\b|warning:|error(?:\[\w+\])?:|\$ |> |\d{4}-\d\d-\d\d[ T]\d\d:"
    r"|thread '.*' panicked)",
)
# Inline code and quoted strings: someone else's words, not the user's.
_QUOTED_SPAN = re.compile(r"`[^`]*`|\"[^\"\n]*\"|“[^”\n]*”|‘[^’\n]*’")


def prose(text: str) -> list[str]:
    """The sentences the user wrote in a turn: quotes, logs, code and tool output left out.

    Example:
        >>> prose("> always returns None\\nIs that documented?\\n    ERROR: never\\nThanks.")
        ['Is that documented?', 'Thanks.']
    """
    kept = [
        line
        for line in text.splitlines()
        if not (_QUOTED_LINE.match(line) or _INDENTED_LINE.match(line) or _LOG_LINE.match(line))
    ]
    return sentences("\n".join(kept))


def _masked(sentence: str) -> str:
    """The sentence with quoted spans blanked and typographic apostrophes made plain."""
    return _QUOTED_SPAN.sub(" Q ", sentence.replace("’", "'"))


# ---------------------------------------------------------------------------- detectors

_I = re.IGNORECASE
# Words that open a sentence without changing what it says.
_LEAD = r"^(?:(?:ok(?:ay)?|so|and|also|oh|btw|hmm+|ugh|please|one more thing|actually|again)\b[\s,.:;!—–-]*)*"
_QUESTION = re.compile(r"\?\s*[)\"'”]*\s*$")
_HYPOTHETICAL = re.compile(
    _LEAD + r"(?:if|what if|suppose|supposing|assuming|imagine|in case|unless|once|when|say)\b", _I
)
_ONE_OFF = re.compile(
    r"\b(?:(?:in|for) this (?:pr|task|file|branch|commit|session|change|function|module|ticket|one)|for now|for the moment"
    r"|this time|today|tonight|right now|just now|yet|for this)\b",
    _I,
)
# A correction is about the task at hand anyway; only one that is about this moment is no lesson.
_TRANSIENT = re.compile(r"\b(?:yet|for now|for the moment|right now|just now)\b", _I)
_CONDITIONAL = re.compile(
    r"\b(?:if|whether|once|unless|until|let me know|make sure|ensure|should|would|could|might|hopefully|used to)\b", _I
)

# -- corrections
_NO = re.compile(r"^(?:hmm+\s*,?\s*)?(?:no+|nope|nah)\b(?:[\s,.!:;—–-]+(?:no+|nope)\b)*[\s,.!:;—–-]*(?P<rest>.*)$", _I)
_NO_POLITE = re.compile(
    r"^(?:worries|problem|prob|rush|need|thanks|thank you|biggie|sweat|stress|pressure|nothing|wait|not yet|it'?s (?:fine|ok|okay|good|all right)"
    r"|that'?s (?:fine|ok|okay|good|great|all|it|right|correct|perfect)|all good|go ahead|i haven'?t|i have ?n'?t|i don'?t|i didn'?t|i'?m|i am"
    r"|idea|clue|luck|more|other|longer)\b",
    _I,
)
_NO_CORRECTIVE = re.compile(
    r"^(?:don'?t|do not|never|stop|use|keep|put|leave|change|move|make|add|remove|delete|drop|revert|undo|rename|call|write|read|run|switch"
    r"|go back|roll back|edit|fix|not\b|wrong|instead|i (?:said|meant|asked|told|wanted)|you\b|we\b|the\b|that'?s (?:wrong|not|incorrect|the wrong|a bad)"
    r"|this is (?:wrong|not)|it'?s (?:not|wrong|the wrong|in|on|at|called)|it (?:should|must|needs|is not|isn't))",
    _I,
)
# "No, ruff replaces black here, don't add them back."
_NO_CORRECTIVE_LATER = re.compile(r"\b(?:don'?t|do not|never|instead|should|must|wrong)\b", _I)
_CORRECTION_PATTERNS = [
    re.compile(_LEAD + r"stop\s+\w+ing\b", _I),
    re.compile(
        _LEAD
        + r"(?:that'?s|that is|this is|it'?s|it is)\s+(?:(?:just\s+)?(?:wrong|incorrect)|not (?:right|correct|what i (?:asked|wanted|meant|said))|the wrong\b)",
        _I,
    ),
    re.compile(_LEAD + r"(?:wrong|incorrect)\b\s*(?:\w+\s*)?[,.:;!—–-]", _I),
    re.compile(r"\bi (?:said|meant|asked(?: you)?(?: for| to)?|wanted)\b.*\bnot\b", _I),
    re.compile(r"\bi (?:told|asked) you (?:not )?to\b|\bi already told you\b", _I),
    re.compile(
        _LEAD
        + r"you(?:'re| are)\s+(?:using|editing|doing|changing|overcomplicating|misreading|ignoring|still|again|looking at)\b",
        _I,
    ),
    re.compile(
        _LEAD + r"you (?:(?:shouldn'?t|should not|didn'?t need to) have|misread|misunderstood|ignored|forgot to)\b", _I
    ),
    re.compile(_LEAD + r"you (?:can'?t|cannot) just\b", _I),
    re.compile(_LEAD + r"(?:revert|undo|roll back|put back)\s+(?:that|this|the|it|your|my|those|these|all)\b", _I),
    re.compile(_LEAD + r"not like (?:that|this)\b", _I),
    re.compile(r"^actually\b[\s,]+(?:use|do|make|put|keep|let'?s use|we use|it'?s|it should|the)\b.*\binstead\b", _I),
    # "don't use os.system, use subprocess.run": what not to do and what to do instead.
    re.compile(
        _LEAD + r"(?:don'?t|dont|do not)\s+\w+(?:[^.;?!]|\.(?=\S))*?[,;—–-]\s*(?:just\s+|instead\s+)?"
        r"(?:use|read|call|put|keep|write|add|make|run|pass|import|edit|install|batch|leave|take|get|load|set)\b",
        _I,
    ),
    re.compile(_LEAD + r"(?:don'?t|dont|do not)\s+(?P<verb>\w+)\s+\S.{0,60}?\s(?P=verb)\b", _I),  # "don't use X use Y"
    re.compile(
        r"\byou (?:(?:did|made|broke|used|added|changed) (?:it|that|this|the same \w+) again|keep (?:doing|making|adding|using|changing))\b",
        _I,
    ),
]
_WHY_DID_YOU = re.compile(
    _LEAD
    + r"why (?:did|would) you\s+(?:delete|remove|change|add|rename|revert|touch|rewrite|edit|drop|move|commit|push|reformat|disable|skip|mock)\b",
    _I,
)
_REVERT = re.compile(
    r"\b(?:revert|undo|roll (?:it |that |this )?back|put (?:it|that|them|\w+) back|change it back)\b", _I
)

# -- failures
# Who broke it: the assistant ("you", "your edit to X", "the change you made to X", "that fix").
_AGENT_DID = (
    r"(?:you|your\b[^.?!]{0,40}?"
    r"|(?:this|that|the)\s+(?:new\s+)?(?:change|fix|patch|edit|commit|refactor|bump|update|migration)(?:\s+you\s+(?:made|did))?(?:\s+(?:to|in)\s+[^.?!]{1,40}?)?"
    r"|(?:the\s+)?\w+\s+fix\s+you\s+did|this|that|it)"
)
_FAILURE_PATTERNS = [
    re.compile(
        r"\b" + _AGENT_DID + r"\s+(?:just\s+|also\s+)?"
        r"(?:broke|has broken|have broken|introduced a regression|made (?:it|things|everything) worse|made the \w+ (?:hang|fail|crash|slower))\b",
        _I,
    ),
    re.compile(r"\byour\b[^.?!]{0,40}\b(?:dropped|deleted|wiped|overwrote|corrupted) the\b", _I),
    re.compile(
        _LEAD
        + r"(?:that|this|it|the fix|your fix|the change|your change|the patch)?\s*(?:didn'?t|did not)\s+(?:work|help|fix|change anything|do anything)\b",
        _I,
    ),
    re.compile(
        _LEAD
        + r"(?:nope|no)?[\s,]*(?:still|same)\b[^.?!]*\b(?:fail\w*|broken|error|errors|crash\w*|exception|stack trace|403|404|500|problem|issue|hangs?)\b",
        _I,
    ),
    re.compile(
        r"\b(?:it|this|that|everything|the \w+)\s+still\s+(?:crash\w*|fail\w*|breaks?|throws|hangs?|does nothing|doesn'?t work|errors?)\b",
        _I,
    ),
]
_AFTER_YOUR = re.compile(
    r"\b(?:after|since)\s+(?:your|you|the)\b[^.?!]{0,40}?\b(?:change|changed|edit|edited|refactor|refactored|fix|fixed|update|updated|commit|patch|bump|bumped|migration)\b",
    _I,
)
_BROKEN = re.compile(
    r"\b(?:fail\w*|crash\w*|broken|breaks|error|errors|down|times? out|timeout|slower|hangs?|403|404|500|exception|regress\w*)\b",
    _I,
)
_DOESNT_WORK = re.compile(_LEAD + r"(?:it|this|that)\s+(?:doesn'?t|does not|isn'?t|is not)\s+work(?:ing)?\b", _I)
_AGAIN = re.compile(r"\b(?:still|again|anymore|any more)\b", _I)

# -- preferences
_PREFERENCE_PATTERNS = [
    re.compile(_LEAD + r"(?:always|never(?! mind\b)|(?:don'?t|do not) ever|never ever)\s+\w+", _I),
    re.compile(
        r"\b(?:from now on|going forward|moving forward|in (?:the )?future(?: sessions)?|for future reference|from here on(?: out)?|in every session)\b",
        _I,
    ),
    re.compile(
        _LEAD
        + r"(?:as a (?:general )?rule|in general|by default)\b[\s,:]*(?:i\b|we\b|use\b|always\b|never\b|please\b|no\b|don'?t\b|prefer\b)",
        _I,
    ),
    re.compile(_LEAD + r"i(?:'d| would)? (?:really |strongly |generally |usually |much )?(?:prefer|rather)\b", _I),
    re.compile(
        _LEAD + r"i (?:really |generally |usually )?(?:like|love|hate|dislike|don'?t like|do not like|can'?t stand)\s+"
        r"(?:it when|when|to\b|having|seeing|short|long|concise|terse|verbose|small|big|minimal|my)\b",
        _I,
    ),
    re.compile(_LEAD + r"i (?:(?:want|need) you to (?:always|never)|(?:always|never) want)\b", _I),
    re.compile(r"\bmy (?:favou?rite|preferred|go-to)\b|\bunless i (?:ask|say|tell you)\b", _I),
    re.compile(_LEAD + r"my (?:preference|rule|convention|style|default)\b", _I),
    re.compile(_LEAD + r"(?:whenever|every time|each time)\s+you\b", _I),
    re.compile(
        _LEAD + r"(?:keep in mind|remember|note|fyi|for the record)\b(?:\s+that)?[\s,:]*(?:i|i'm|i am|we|our|my)\b", _I
    ),
    re.compile(
        _LEAD
        + r"(?:we|i) (?:always|never)\s+(?:use|squash|merge|rebase|deploy|write|run|prefer|work|put|keep|commit|push|review|test|pin|name|format|ship|release)\b",
        _I,
    ),
]

# -- competences
_AFFIRM = r"(?:yes|yep|yeah|yup|great|perfect|nice|ok(?:ay)?|confirmed|thanks|thank you|awesome|excellent|brilliant|cool|sweet|looks good|lgtm|good job|well done)"
_THAT = r"\b(?:that|this|it|which|the fix|your fix|the change|your change|the patch)"
_COMPETENCE_PATTERNS = [
    re.compile(
        _THAT
        + r"\s+(?:worked|works)(?:\s+(?:now|again|perfectly|great|fine now|for me|like a charm))?\s*(?:[,.!;:—–-]|$)",
        _I,
    ),
    re.compile(_THAT + r"\s+(?:did the trick|did it|(?:fixed|solved|sorted|resolved|fixes|solves)\b)", _I),
    re.compile(_LEAD + r"(?:it |that |everything |all )?works?\s+(?:now|again|like a charm|perfectly)\b", _I),
    re.compile(
        r"\b(?:tests?|ci|build|checks?|pipeline|suite|cargo test|pytest)\b[^.?!]{0,30}\b(?:pass(?:es|ed|ing)?|green|succeed(?:s|ed)?)\b"
        r"[^.?!]*\b(?:now|again|locally|too|as well|on my machine|this time)\b",
        _I,
    ),
    re.compile(_LEAD + r"(?:\w+\s+)?(?:all\s+)?green\b[^.?!]*\b(?:now|again)\b", _I),
    re.compile(_LEAD + r"(?:confirmed|verified)\b", _I),
    re.compile(
        r"^"
        + _AFFIRM
        + r"\b[\s,!.—–-]+[^.?!]*\b(?:compiles|loads|renders|runs|ran|deploys|deployed|went through|is gone|are gone|builds)\b"
        r"[^.?!]*\b(?:now|again|correctly|cleanly|this time|on \w+)\b",
        _I,
    ),
    re.compile(r"^" + _AFFIRM + r"\b[\s,!.—–-]+[^.?!]*\b(?:is|are) gone\b", _I),
    re.compile(
        r"\b(?:went through|is gone|are gone)\b[^.?!]*\b(?:after your|this time)\b|\bthis time\b[^.?!]*\bgood job\b", _I
    ),
    re.compile(r"^" + _AFFIRM + r"\b[\s,!.—–-]+that was (?:exactly |indeed )?(?:the|it)\b", _I),
    re.compile(r"\bcan'?t reproduce it any ?more\b", _I),
    re.compile(_LEAD + r"(?:problem|issue|bug|error) (?:solved|fixed|gone)\b", _I),
]
# Longer sentences are pasted text more often than a crisp correction (and cost the patterns more).
_MAX_SENTENCE = 400
_NEGATED = re.compile(r"\b(?:not|n't|never|no longer|still)\b|\bno\b(?!\s+(?:failures|errors|more|longer))", _I)


@dataclass(frozen=True)
class Finding:
    """One kind found in one user turn.

    Attributes:
        kind: ``correction``, ``failure``, ``preference`` or ``competence``.
        said: What the user said that shows it (one or two sentences, their words).
    """

    kind: str
    said: str


def _merged(said: list[str]) -> list[str]:
    """Sentences with a lone "No." or "Wrong." joined to the sentence after it."""
    out: list[str] = []
    for s in said:
        if out and re.fullmatch(r"(?:no+|nope|nah|wrong|hmm+,? no)[.!]*", out[-1].strip(), _I):
            out[-1] = f"{out[-1]} {s}"
        else:
            out.append(s)
    return out


def _is_correction(masked: str) -> bool:
    if _TRANSIENT.search(masked):
        return False
    m = _NO.match(masked)
    if m and m.group("rest").strip():
        rest = m.group("rest").strip()
        if not _NO_POLITE.match(rest) and (_NO_CORRECTIVE.match(rest) or _NO_CORRECTIVE_LATER.search(rest)):
            return True
    return any(p.search(masked) for p in _CORRECTION_PATTERNS)


def _is_failure(masked: str) -> bool:
    if _CONDITIONAL.search(masked) or re.search(r"\b(?:don'?t|do not|never)\s+break\b", masked, _I):
        return False
    if any(p.search(masked) for p in _FAILURE_PATTERNS):
        return True
    if _AFTER_YOUR.search(masked) and _BROKEN.search(masked):
        return True
    return bool(_DOESNT_WORK.search(masked) and _AGAIN.search(masked))


def _is_preference(masked: str) -> bool:
    if _ONE_OFF.search(masked):
        return False
    return any(p.search(masked) for p in _PREFERENCE_PATTERNS)


def _is_competence(masked: str) -> bool:
    if _CONDITIONAL.search(masked):
        return False
    for p in _COMPETENCE_PATTERNS:
        m = p.search(masked)
        # "That didn't work", "still not working": nothing was confirmed.
        if m and not _NEGATED.search(masked[: m.end()]):
            return True
    return False


def detect(text: str) -> list[Finding]:
    """What one user turn holds: at most one finding per kind, in :data:`KINDS` order.

    Example:
        >>> [(f.kind, f.said) for f in detect("Thanks, that worked. From now on, always run the linter first.")]
        [('preference', 'From now on, always run the linter first.'), ('competence', 'Thanks, that worked.')]
    """
    said = _merged(prose(text))
    found: dict[str, str] = {}
    reverted = False
    for i, s in enumerate(said):
        masked = _masked(s).strip()
        if len(masked) > _MAX_SENTENCE:
            continue
        if _QUESTION.search(masked):
            # "Why did you delete the migration? Put it back." is a correction all the same.
            nxt = said[i + 1] if i + 1 < len(said) else ""
            if _WHY_DID_YOU.match(masked) and nxt and not _QUESTION.search(nxt):
                found.setdefault("correction", f"{s} {nxt}")
            continue
        if _HYPOTHETICAL.match(masked):
            continue
        reverted = reverted or bool(_REVERT.search(masked))
        checks = (
            ("correction", _is_correction),
            ("failure", _is_failure),
            ("preference", _is_preference),
            ("competence", _is_competence),
        )
        for kind, test in checks:
            if kind not in found and test(masked):
                found[kind] = s
                break
    if "failure" in found and (reverted or "correction" in found):
        # "You broke the login, revert it": the user said what to do about it, a correction.
        report, fix = found.pop("failure"), found.get("correction")
        if fix is None:
            found["correction"] = report
        elif _index(said, report) < _index(said, fix):
            found["correction"] = f"{report} {fix}"
    if "failure" in found:
        found.pop("competence", None)  # "that fixed X but broke Y" is a failure
    for kind in ("correction", "preference"):
        if kind in found:
            found[kind] = _with_follow_up(said, found[kind])
    return [Finding(k, _clean_said(found[k])) for k in KINDS if k in found]


def _index(said: list[str], text: str) -> int:
    return next((i for i, s in enumerate(said) if text.startswith(s)), len(said))


def _with_follow_up(said: list[str], text: str) -> str:
    """A short correction ("That's not what I asked for.") with the sentence saying what instead."""
    i = _index(said, text)
    if len(text) < 50 and i + 1 < len(said) and not _QUESTION.search(said[i + 1]) and said[i + 1] not in text:
        return f"{text} {said[i + 1]}"
    return text


def _clean_said(text: str) -> str:
    # "no no no, don't rename…" reads as "Don't rename…" in the brain.
    out = re.sub(r"^(?:(?:hmm+|ugh|no+|nope|nah|oh)\b[\s,.!:;—–-]*)+(?=\S)", "", text, flags=_I)
    out = out or text
    return shorten(out[0].upper() + out[1:], 300)


def classify(text: str) -> str:
    """The primary label of one user turn: a kind of :data:`KINDS`, or ``none``."""
    found = detect(text)
    return found[0].kind if found else "none"


# ---------------------------------------------------------------------------- sessions

_FIX_SENTENCE = re.compile(
    r"\b(?:fix(?:ed|es)?|chang(?:ed|es)|updat(?:ed|es)|add(?:ed|s)|replac(?:ed|es)|mov(?:ed|es)|remov(?:ed|es)|renam(?:ed|es)|set|switch(?:ed|es)|"
    r"pinn?(?:ed|s)|wrapp(?:ed|s)|the (?:problem|issue|bug|cause|culprit) (?:was|is))\b",
    _I,
)


def _attempt(turn: dict[str, Any]) -> str | None:
    """What an assistant turn did, in its own words: its last sentence naming a fix, else its
    last sentence; ``None`` when it holds no prose."""
    said = [s for s in sentences(turn.get("text", "")) if not _QUESTION.search(s)]
    if not said:
        return None
    fixes = [s for s in said if _FIX_SENTENCE.search(s)]
    return shorten((fixes or said)[-1], 200)


@dataclass(frozen=True)
class Capture:
    """A memory taken from a session, ready for the brain.

    Attributes:
        kind: ``correction``, ``failure``, ``preference`` or ``competence``.
        text: The entry's one line.
        turns: First and last turn it came from (the assistant turn it answers, and the user's).
    """

    kind: str
    text: str
    turns: tuple[int, int]

    @property
    def section(self) -> str:
        """The section prefix it is written to."""
        return SECTIONS[self.kind][0]

    @property
    def type(self) -> str | None:
        """The memory type it is written with (``None``: its section's)."""
        return SECTIONS[self.kind][1]


def capture(turns: Sequence[dict[str, Any]], max_per_kind: int = MAX_PER_KIND) -> list[Capture]:
    """Corrections, preferences, confirmed fixes and failures of a session, in turn order.

    Only user turns are read for evidence. A competence or failure needs an assistant turn
    before the user's (what was tried) with some prose to name it; repeats within the session
    are kept once.
    """
    out: list[Capture] = []
    last_assistant: int | None = None
    for i, turn in enumerate(turns):
        role = turn.get("role")
        if role == "assistant":
            last_assistant = i
            continue
        if role != "user":
            last_assistant = None  # a compaction summary: what came before is out of sight
            continue
        for f in detect(turn.get("text", "")):
            first = last_assistant if last_assistant is not None and f.kind != "preference" else i
            if f.kind in ("competence", "failure"):
                attempt = _attempt(turns[last_assistant]) if last_assistant is not None else None
                if attempt is None:
                    continue
                text = (
                    f"{attempt} (confirmed by the user: {f.said})"
                    if f.kind == "competence"
                    else f"{attempt} — the user: {f.said}"
                )
            else:
                text = f.said
            if sum(c.kind == f.kind for c in out) >= max_per_kind or any(near_duplicate(text, c.text) for c in out):
                continue
            out.append(Capture(f.kind, shorten(text, 300), (first, i)))
    return out


# ---------------------------------------------------------------------------- evaluation


def evaluate(rows: Sequence[dict[str, str]]) -> dict[str, dict[str, float]]:
    """Precision and recall per kind of :func:`classify` over labelled turns (``text``, ``label``).

    A turn counts once, under its primary kind; ``all`` pools the four kinds.

    Example:
        >>> evaluate([{"text": "Never push to main.", "label": "preference"}, {"text": "Thanks!", "label": "none"}])["preference"]
        {'precision': 1.0, 'recall': 1.0, 'support': 1, 'predicted': 1}
    """
    hits: dict[str, list[int]] = {k: [0, 0, 0] for k in (*KINDS, "all")}  # true positives, predicted, support
    for row in rows:
        got, want = classify(row["text"]), row["label"]
        for kind in {got, want} - {"none"}:
            for key in (kind, "all"):
                hits[key][0] += got == want == kind
                hits[key][1] += got == kind
                hits[key][2] += want == kind
    return {
        k: {
            "precision": tp / predicted if predicted else 1.0,
            "recall": tp / support if support else 1.0,
            "support": support,
            "predicted": predicted,
        }
        for k, (tp, predicted, support) in hits.items()
    }
