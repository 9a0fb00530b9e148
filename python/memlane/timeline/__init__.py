"""Memory over time: compaction, the wiki and dreaming, over the brain folder and the index.

The brain folder's ``DailyActivity/YYYY-MM-DD.md`` notes are the evidence; this package adds
routes to them and never rewrites them:

* :mod:`~memlane.timeline.compact` — complete ISO weeks → ``Weekly/YYYY-Www.md`` → ``Monthly/YYYY-MM.md``
  → ``WISDOM.md``; every statement ends with its provenance;
* :mod:`~memlane.timeline.engines` — who writes the statements: ``offline`` (extractive, the
  default, byte-identical output for the same input), ``bedrock``, ``claude``, ``codex``;
* :mod:`~memlane.timeline.wiki` — topical pages with sources, supersession and "as of" answers;
* :mod:`~memlane.timeline.dream` — the asynchronous pass that keeps the wiki current;
* :mod:`~memlane.timeline.lease` — one run at a time across processes and crashes, with a
  cooldown, a watermark, retries and a token/cost ledger;
* :mod:`~memlane.timeline.gate` — recall on a fixed question set before and after a change;
* :mod:`~memlane.timeline.publish` — writing summaries and pages into the brain, indexing them;
* :mod:`~memlane.timeline.decisions` — a subject's value stated in a sentence (read by compaction
  and dreaming).

It sits above :mod:`memlane.memory` (summaries are indexed by :meth:`memlane.Memory.index` as
``source="summary"``; :mod:`memlane.ranking.hierarchy` keeps them below their evidence);
nothing below imports it.
"""
