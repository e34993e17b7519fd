"""The HiGHS library as a process-wide resource, shared by the backends that run it.

HiGHS prints a banner when a process makes its first Highs object (:func:`quiet_banner`),
keeps one thread pool per thread that runs it (:func:`size_pool`), may run past its time
limit between readings of its clock (:func:`reserve_s`), and must not be torn down while a
solve left running still runs (:func:`run_guarded`, :func:`abandoned`). The ``highs``
backend and Pyomo's HiGHS (the ``pyomo`` backend) both run it, so both go through here.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from typing import TypeVar

import highspy

from gpuplan.core.budget import Budget
from gpuplan.models.linear import LinearProgram

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Seconds per nonzero (and column) that HiGHS may run past its time limit: it reads its
#: clock between presolve passes and search steps, and on large assignment models those
#: readings lie far apart on a loaded machine, the further the more nonzeros the model has
#: (measured on a 2,000-job model and on Yagiura's e801600). HiGHS is given its time
#: limit less this reserve (:func:`reserve_s`), and not started with less time left.
SECONDS_PER_NONZERO = 8e-7

#: How long past its time limit a HiGHS solve is waited for (a share of the time it was
#: given plus seconds) before it is left to finish on its own: on the 521,002 columns of a
#: 2,000-job max-weight model, the set-up of branch-and-cut after presolve (a clique
#: partition of the objective) ran far past any time limit without reading the clock.
GRACE_SHARE, GRACE_S = 0.05, 0.25

#: Solves left running past their time limit, on daemon threads (they end at HiGHS's next
#: reading of its clock).
_left_running: list[threading.Thread] = []

def reserve_s(program: LinearProgram) -> float:
    """Seconds HiGHS may run past its time limit on the program (kept out of the limit)."""
    return reserve_of(int(program.value.size) + program.n_cols)


def reserve_of(size: int) -> float:
    """:func:`reserve_s` of a program with ``size`` nonzeros and columns in all."""
    return SECONDS_PER_NONZERO * float(size)

#: Whether this process has made its first Highs object (and so printed the banner).
_banner_shown: list[bool] = []
_banner_lock = threading.Lock()


def _flush_c_streams() -> None:
    """Flush the C library's output buffers (HiGHS writes through them)."""
    with contextlib.suppress(OSError, AttributeError, TypeError):
        ctypes.CDLL(None).fflush(None)


def quiet_banner() -> None:
    """Make the process's first Highs object with its banner sent to the debug log.

    HiGHS prints a banner (version and copyright) to standard output when the first Highs
    object of a process is made, whoever makes it (Pyomo too), before any option can
    switch it off; on a terminal it is noise, and it would corrupt ``gpuplan solve -o -``.
    Standard output is pointed at a temporary file while that object is made, the C
    library's buffers are flushed into it, and what HiGHS printed is logged at debug level.
    """
    with _banner_lock:
        if _banner_shown:
            return
        sys.stdout.flush()
        with tempfile.TemporaryFile() as sink:
            saved = os.dup(1)
            try:
                os.dup2(sink.fileno(), 1)
                highspy.Highs()
                _flush_c_streams()
            finally:
                os.dup2(saved, 1)
                os.close(saved)
            sink.seek(0)
            printed = sink.read().decode(errors="replace").strip()
        if printed:
            logger.debug("HiGHS: %s", printed)
        _banner_shown.append(True)


class _Pool(threading.local):
    """The thread count this thread's HiGHS thread pool was sized for here (0: not yet)."""

    threads = 0


_pool = _Pool()


def size_pool(threads: int) -> int:
    """Size the calling thread's HiGHS thread pool for a run with ``threads``; that count.

    HiGHS keeps one thread pool (its "global scheduler") per thread that runs it (HiGHS
    pull request 818), made by that thread's first run with the run's thread count: a later
    run on that thread asking for another count fails with no solution, and a reset
    (``resetGlobalScheduler``) reaches only the calling thread's pool. So this is called
    on the thread about to run, right before the run; it resets that thread's pool when
    the count differs from the one it last sized here, or when it sized none here yet (the
    pool may come from a run outside this module; resetting no pool costs nothing). A
    solve left running on a thread of its own keeps its pool, which nothing here touches.
    Pyomo's HiGHS runs on the thread that calls it, so it asks here too.
    """
    threads = max(1, int(threads))
    if _pool.threads != threads:
        highspy.Highs.resetGlobalScheduler(True)
        _pool.threads = threads
    return threads

def wait_for(thread: threading.Thread, budget: Budget) -> bool:
    """Wait for a thread running HiGHS until the budget's end plus the grace; True if it ended.

    The grace is :data:`GRACE_SHARE` of the budget's time limit plus :data:`GRACE_S`. A
    thread that has not ended by then is left to finish on its own (a daemon thread: HiGHS
    stops at its next reading of the clock, its time limit being past), and
    :func:`abandoned` is true while it runs.
    """
    if budget.time_limit_s is None:
        thread.join()
        return True
    try:
        thread.join(max(0.0, budget.left() + GRACE_SHARE * budget.time_limit_s + GRACE_S))
    except BaseException:  # Ctrl-C while waiting: the thread runs on, as past its limit
        _left_running.append(thread)
        raise
    if thread.is_alive():
        logger.debug("HiGHS still busy %.2f s past its time limit; not waited for",
                     -budget.left())
        _left_running.append(thread)
        return False
    return True


def run_guarded(work: Callable[[], T], budget: Budget,
                cancel: Callable[[], None]) -> T | None:
    """Run ``work`` (a solve through HiGHS) so that the budget's time limit holds.

    Without a time limit it runs on the caller's thread. With one, it runs on a thread of
    its own, waited for (:func:`wait_for`) until the limit of what is left now plus the
    grace; a solve still busy then is cancelled and left to finish on its own.

    Returns
    -------
    object or None
        What ``work`` returned, or None when it was not waited for.

    Raises
    ------
    BaseException
        Whatever ``work`` raised, on the caller's thread.
    """
    if not budget.limited:
        return work()
    answer: list[T | BaseException] = []

    def run() -> None:
        try:
            answer.append(work())
        except BaseException as exc:  # re-raised on the caller's thread
            answer.append(exc)

    thread = threading.Thread(target=run, name="gpuplan-highs", daemon=True)
    thread.start()
    try:
        waited = wait_for(thread, budget.part())
    except BaseException:  # Ctrl-C while waiting: the solve is stopped, not waited for
        cancel()
        raise
    if not waited:
        cancel()
        return None
    if isinstance(answer[0], BaseException):
        raise answer[0]
    return answer[0]


def abandoned() -> bool:
    """Whether a HiGHS solve left to finish on its own (:func:`wait_for`) still runs.

    A process must not exit normally then: C++ teardown under a running solve aborts it
    (``terminate called without an active exception``); see :func:`gpuplan.cli.main`.
    """
    return any(thread.is_alive() for thread in _left_running)
