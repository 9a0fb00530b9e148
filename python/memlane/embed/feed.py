"""Keep a model busy: one thread prepares the next batches while workers run the current ones.

:meth:`memlane.embed.local.LocalEmbedder.embed_stream` feeds its model through
:func:`run_ahead`. Each item is prepared on one thread (the local embedder tokenises, windows
and pads there; the tokenizers library releases the GIL and tokenises a list in parallel),
which turns it into independent tasks (one per batch of windows: run the model, pool,
normalise) that ``workers`` threads run (onnxruntime releases the GIL while it runs a batch),
and results come back in the items' order. The queue between the two is bounded, so the
preparing thread runs only a little ahead and memory stays flat whatever the number of items.

An exception on either side is raised in the consumer, and closing the iterator (breaking out
of the loop, Ctrl-C, an exception in the consumer's own work) stops and joins every thread
before it returns: nothing is left running.

Example:
    >>> def prepare(n):
    ...     squares = [0] * n
    ...     def task(i):
    ...         squares[i] = i * i
    ...     return Prepared([lambda i=i: task(i) for i in range(n)], lambda: squares)
    >>> with closing(run_ahead([("a", 3), ("b", 2)], prepare, workers=2)) as results:
    ...     list(results)
    [('a', [0, 1, 4]), ('b', [0, 1])]
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Generic, TypeVar

from memlane.errors import MemlaneError

__all__ = ["Prepared", "batched", "closing", "feed_closed", "run_ahead"]

T = TypeVar("T")
P = TypeVar("P")
R = TypeVar("R")

# How often a thread blocked on a full or empty queue looks whether the pipeline was closed.
_POLL_S = 0.05
# The stop event of the pipeline a feed thread reads ``items`` for (see :func:`feed_closed`).
_feeding = threading.local()


def feed_closed() -> bool:
    """Whether the calling thread reads ``items`` for a pipeline that has been closed.

    An ``items`` iterator that waits for its next item (another thread's work) polls this: the
    consumer's close (Ctrl-C, an error) stops the pipeline and joins the feed thread, so a wait
    that does not look would hang it. False on any other thread.
    """
    stop: threading.Event | None = getattr(_feeding, "stop", None)
    return stop is not None and stop.is_set()


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in consecutive lists of ``size`` (the last one shorter): Python 3.12's
    ``itertools.batched``, which memlane cannot assume.

    Example:
        >>> list(batched(range(5), 2))
        [[0, 1], [2, 3], [4]]
    """
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


@dataclass
class Prepared(Generic[R]):
    """An item made ready: tasks that may run in any order on any thread, then its result."""

    tasks: Sequence[Callable[[], None]]
    result: Callable[[], R]
    _left: int = field(default=0, init=False)
    _done: threading.Event = field(default_factory=threading.Event, init=False)
    _error: BaseException | None = field(default=None, init=False)


class _Closed(MemlaneError):
    """The consumer closed the pipeline: a thread stops where it is."""


class _Pipeline(Generic[T, R]):
    def __init__(self, ahead: int) -> None:
        self.stop = threading.Event()
        # Items in order, prepared or failed: the consumer's side. Bounded, so that preparing
        # runs at most `ahead` items before the one the consumer waits for.
        self.ready: queue.Queue[tuple[T, Prepared[R]] | BaseException | None] = queue.Queue(ahead)
        # Tasks for the workers: all of an item's at once, so that the next item is prepared
        # while they run (memory is bounded by `ready`, which holds the items they belong to).
        self.tasks: queue.SimpleQueue[tuple[Prepared[R], Callable[[], None]] | None] = queue.SimpleQueue()
        self.lock = threading.Lock()

    def put(self, q: queue.Queue[Any], item: Any) -> None:
        while True:
            if self.stop.is_set():
                raise _Closed
            try:
                q.put(item, timeout=_POLL_S)
                return
            except queue.Full:
                continue

    def get(self, q: queue.Queue[Any] | queue.SimpleQueue[Any]) -> Any:
        while True:
            if self.stop.is_set():
                raise _Closed
            try:
                return q.get(timeout=_POLL_S)
            except queue.Empty:
                continue

    def prepare_all(self, items: Iterable[tuple[T, P]], prepare: Callable[[P], Prepared[R]], workers: int) -> None:
        _feeding.stop = self.stop
        try:
            for tag, payload in items:
                prepared = prepare(payload)
                prepared._left = len(prepared.tasks)
                if not prepared.tasks:
                    prepared._done.set()
                self.put(self.ready, (tag, prepared))
                for task in prepared.tasks:
                    self.tasks.put((prepared, task))
            self.put(self.ready, None)
        except _Closed:
            return
        except BaseException as exc:  # handed to the consumer, who raises it
            try:
                self.put(self.ready, exc)
            except _Closed:
                return
        finally:
            for _ in range(workers):
                self.tasks.put(None)

    def work(self) -> None:
        try:
            while (got := self.get(self.tasks)) is not None:
                prepared, task = got
                try:
                    if prepared._error is None:
                        task()
                except BaseException as exc:  # the consumer raises it when it reaches this item
                    prepared._error = exc
                with self.lock:
                    prepared._left -= 1
                    if prepared._left == 0 or prepared._error is not None:
                        prepared._done.set()
        except _Closed:
            return


def run_ahead(
    items: Iterable[tuple[T, P]], prepare: Callable[[P], Prepared[R]], workers: int, ahead: int = 4
) -> Generator[tuple[T, R], None, None]:
    """``(tag, prepare(payload)'s result)`` for every ``(tag, payload)`` of ``items``, in order.

    ``items`` is read and ``prepare`` called on one thread, at most ``ahead`` items before the
    one being consumed; the prepared tasks run on ``workers`` threads. Close the iterator
    (``contextlib.closing``, re-exported here) when not reading it to the end: that stops the
    threads and waits for them (a task already running is finished first).

    Raises:
        BaseException: Whatever ``items``, ``prepare`` or a task raised, when its item is reached.
    """
    pipeline: _Pipeline[T, R] = _Pipeline(ahead)
    threads = [threading.Thread(target=pipeline.prepare_all, args=(items, prepare, workers), name="memlane-feed")]
    threads += [threading.Thread(target=pipeline.work, name=f"memlane-embed-{i}") for i in range(workers)]
    for thread in threads:
        thread.start()
    try:
        while True:
            got = pipeline.get(pipeline.ready)
            if got is None:
                return
            if isinstance(got, BaseException):
                raise got
            tag, prepared = got
            prepared._done.wait()  # set by the workers, who catch everything a task raises
            if prepared._error is not None:
                raise prepared._error
            yield tag, prepared.result()
    finally:
        pipeline.stop.set()
        for thread in threads:
            thread.join()
