"""The simulators' clock: events by time, then kind, then the order pushed."""

from __future__ import annotations

from gpuplan.core.sim import EventQueue


def test_events_come_by_time_then_kind_then_push_order() -> None:
    """Broken, a simulator would start a job before the completion that frees its GPUs."""
    queue = EventQueue()
    queue.push(5.0, 1, job=10)
    queue.push(5.0, 0, job=11)
    queue.push(2.0, 1, job=12)
    queue.push(5.0, 0, job=13)
    assert queue.next_time() == 2.0
    assert queue.peek_kind() == 1
    popped = [queue.pop() for _ in range(len(queue))]
    assert [(at, kind, job) for at, kind, _, job, _ in popped] == [
        (2.0, 1, 12), (5.0, 0, 11), (5.0, 0, 13), (5.0, 1, 10)]
    assert not queue


def test_due_tells_what_comes_before_an_instant_or_at_it() -> None:
    """A round's events before its end are handled, those at its end are the next round's."""
    queue = EventQueue()
    assert not queue.due(10.0, inclusive=True)
    first = queue.push(10.0, 0)
    assert queue.push(10.0, 0) > first
    assert not queue.due(10.0, inclusive=False)
    assert queue.due(10.0, inclusive=True)
    assert queue.due(10.5, inclusive=False)
