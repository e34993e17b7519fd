"""The portfolio runner: lanes on threads, the first proof settling the others."""

from __future__ import annotations

import threading

import pytest

from gpuplan.parts.portfolio import Portfolio


def test_a_proof_cancels_the_registered_solves_and_stops_the_other_lanes() -> None:
    """A lane whose answer settles ends a lane that waits on ``settled``, and cancels."""
    cancelled = threading.Event()
    with Portfolio() as portfolio:
        portfolio.on_settle(cancelled.set)

        def waiting() -> str:
            assert cancelled.wait(10.0)
            return "stopped" if portfolio.settled else "ran out"

        other = portfolio.start("waits", waiting, low_priority=True)
        proof = portfolio.start("proves", lambda: "optimal", settles=lambda a: a == "optimal")
        portfolio.join()
    assert proof.answer() == "optimal"
    assert other.answer() == "stopped"
    # Registered after the proof: cancelled at once.
    late = threading.Event()
    portfolio.on_settle(late.set)
    assert late.is_set()


def test_an_answer_that_is_no_proof_leaves_the_others_running() -> None:
    """A lane that ends without a proof does not settle the portfolio."""
    with Portfolio() as portfolio:
        lane = portfolio.start("ends", lambda: 1)
        portfolio.join()
    assert lane.answer() == 1
    assert not portfolio.settled


def test_an_error_on_a_lane_is_raised_on_the_caller_and_settles() -> None:
    """Whatever a lane raises reaches the caller; the other lanes are told to stop."""
    def fails() -> None:
        raise ValueError("lane failed")

    with Portfolio() as portfolio:
        portfolio.start("fails", fails)
        with pytest.raises(ValueError, match="lane failed"):
            portfolio.join()
    assert portfolio.settled


def test_an_interrupted_caller_settles_and_joins_the_lanes() -> None:
    """Ctrl-C in the caller while lanes run cancels their solves and waits for them."""
    release = threading.Event()
    with pytest.raises(KeyboardInterrupt), Portfolio() as portfolio:
        portfolio.on_settle(release.set)
        lane = portfolio.start("solves", lambda: release.wait(10.0))
        raise KeyboardInterrupt
    assert not lane.running()
    assert lane.answer() is True
