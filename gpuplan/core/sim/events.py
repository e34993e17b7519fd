"""The clock of every simulator: timed events in one priority queue.

An event is ``(time, kind, sequence, job, version)``. At one instant events come out by
their kind (a simulator numbers its kinds so that, say, completions come before arrivals,
freeing GPUs first), then in the order they were pushed. ``version`` lets a simulator
cancel an event without searching the heap: it keeps a version per job, bumps it when the
job's plans change, and ignores a popped event whose version is stale.
"""

from __future__ import annotations

import heapq

#: A queued event: time, kind, sequence number, job (-1: none) and version.
Event = tuple[float, int, int, int, int]


class EventQueue:
    """Timed events, earliest first; ties by kind, then by the order pushed."""

    __slots__ = ("_heap", "_sequence")

    def __init__(self) -> None:
        self._heap: list[Event] = []
        self._sequence = 0

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)

    def push(self, at: float, kind: int, job: int = -1, version: int = 0) -> int:
        """Queue an event; its sequence number (unique, increasing), for what it carries."""
        self._sequence += 1
        heapq.heappush(self._heap, (at, kind, self._sequence, job, version))
        return self._sequence

    def next_time(self) -> float:
        """When the earliest event happens; the queue must not be empty."""
        return self._heap[0][0]

    def peek_kind(self) -> int:
        """The kind of the earliest event; the queue must not be empty."""
        return self._heap[0][1]

    def due(self, until: float, inclusive: bool) -> bool:
        """Whether an event is queued before ``until`` (or at it, when ``inclusive``)."""
        heap = self._heap
        return bool(heap) and (heap[0][0] < until or (inclusive and heap[0][0] == until))

    def pop(self) -> Event:
        """The earliest event, removed from the queue."""
        return heapq.heappop(self._heap)
