"""Plan many instance files at once: in local processes, or on a Dask cluster.

Each instance is one task (:func:`plan_file`): read, plan, verify, write its schedule
atomically, and return a summary row. A task never raises: a bad or infeasible file is a
row that says so, and the batch goes on. Rows whose schedule is already on disk, newer
than the instance and planned by the same method, are taken from it instead of being
planned again, so an interrupted batch resumes where it stopped.

Locally, tasks go to a :class:`concurrent.futures.ProcessPoolExecutor`; with a scheduler
address, the same function goes to an existing Dask ``distributed`` cluster, which
operators start as Dask documents (``dask scheduler`` and ``dask worker`` processes).
"""

from __future__ import annotations

import csv
import glob
import io
import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuplan.errors import BackendUnavailableError, InputError, VerificationError
from gpuplan.io import write_text_atomic
from gpuplan.planning import plan
from gpuplan.readers import read_instance
from gpuplan.schedule import Schedule
from gpuplan.solvers import SolveOptions

logger = logging.getLogger(__name__)

#: Columns of the summary, in order.
FIELDS = ("instance", "file", "status", "objective", "bound", "gap", "seconds", "verified",
          "resumed", "error")

#: Instance file suffixes a folder contributes.
SUFFIXES = (".json", ".yaml", ".yml")

#: A summary row.
Row = dict[str, Any]


@dataclass(frozen=True)
class BatchTask:
    """One instance to plan: where it is, where its schedule goes, and how."""

    source: str
    target: str
    method: str
    options: SolveOptions


def expand_inputs(inputs: Sequence[str]) -> list[Path]:
    """Files, folders (their instance files, sorted) and glob patterns, in order, once each.

    A path that matches nothing stays in the list, so that its task reports it missing.
    """
    found: list[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            found += sorted(p for p in path.iterdir() if p.suffix in SUFFIXES and p.is_file())
        elif glob.has_magic(item):
            found += sorted(Path(p) for p in glob.glob(item) if Path(p).suffix in SUFFIXES)
        else:
            found.append(path)
    return list(dict.fromkeys(found))


def make_tasks(sources: Sequence[Path], out: Path, method: str,
               options: SolveOptions) -> list[BatchTask]:
    """One task per source, its schedule at ``OUT/<stem>.json``.

    When two sources share a stem, the later ones get ``<stem>-2.json`` and so on.
    """
    tasks, taken = [], set()
    for source in sources:
        name, k = source.stem, 1
        while name in taken:
            k += 1
            name = f"{source.stem}-{k}"
        taken.add(name)
        tasks.append(BatchTask(str(source), str(out / f"{name}.json"), method, options))
    return tasks


def _row(task: BatchTask, schedule: Schedule, seconds: float, resumed: bool) -> Row:
    verified = schedule.verification is not None and schedule.verification.ok
    return {"instance": Path(task.source).stem, "file": task.source,
            "status": schedule.status.value, "objective": schedule.objective,
            "bound": schedule.bound, "gap": schedule.gap, "seconds": round(seconds, 4),
            "verified": verified and schedule.status.has_plan, "resumed": resumed,
            "error": ""}


def _current(task: BatchTask) -> Schedule | None:
    """The task's schedule on disk, if newer than its instance and by the same method."""
    target, source = Path(task.target), Path(task.source)
    try:
        if target.stat().st_mtime < source.stat().st_mtime:
            return None
        schedule = Schedule.read(target)
    except (OSError, ValueError, InputError):
        return None
    return schedule if schedule.method == task.method else None


def plan_file(task: BatchTask) -> Row:
    """Plan one instance file and write its schedule; a row, never an exception.

    A verifier failure is a bug: it is logged as an error and recorded in the row.
    """
    began = time.perf_counter()
    done = _current(task)
    if done is not None:
        return _row(task, done, done.wall_time_s, resumed=True)
    failed = {"instance": Path(task.source).stem, "file": task.source, "status": "error",
              "objective": None, "bound": None, "gap": None, "verified": False,
              "resumed": False}
    try:
        instance = read_instance(task.source)
        schedule = plan(instance, task.method, task.options)
        schedule.write(task.target)
    except (InputError, BackendUnavailableError) as exc:
        return {**failed, "seconds": round(time.perf_counter() - began, 4), "error": str(exc)}
    except VerificationError as exc:
        logger.error("%s: %s", task.source, exc)
        return {**failed, "seconds": round(time.perf_counter() - began, 4),
                "error": f"verification failed (a bug): {exc}"}
    return _row(task, schedule, time.perf_counter() - began, resumed=False)


def run_batch(tasks: Sequence[BatchTask], workers: int, scheduler: str | None = None,
              on_row: Callable[[Row], None] | None = None) -> list[Row]:
    """Run every task and return the rows in task order.

    Parameters
    ----------
    tasks
        From :func:`make_tasks`.
    workers
        Local processes (1: in this process). Ignored with a scheduler, whose cluster has
        its own workers.
    scheduler
        A Dask scheduler address (``tcp://host:port``), or None to run locally.
    on_row
        Called with each row as it completes (progress reporting).

    If interrupted (``KeyboardInterrupt``), pending tasks are cancelled and the exception
    propagates; every schedule already written is whole.
    """
    rows: dict[int, Row] = {}
    stream = (_dask(tasks, scheduler) if scheduler is not None
              else _local(tasks, workers))
    for index, row in stream:
        rows[index] = row
        if on_row is not None:
            on_row(row)
    return [rows[i] for i in sorted(rows)]


def _local(tasks: Sequence[BatchTask], workers: int) -> Iterator[tuple[int, Row]]:
    if workers <= 1:
        for index, task in enumerate(tasks):
            yield index, plan_file(task)
        return
    pool = ProcessPoolExecutor(max_workers=workers)
    try:
        pending: dict[Future[Row], int] = {pool.submit(plan_file, t): i
                                           for i, t in enumerate(tasks)}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                yield pending.pop(future), future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _dask(tasks: Sequence[BatchTask], address: str) -> Iterator[tuple[int, Row]]:
    try:
        from distributed import Client, as_completed
    except ImportError as exc:
        raise BackendUnavailableError("dask", "distributed", exc) from None
    try:
        client = Client(address, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise InputError("--scheduler", "", f"cannot reach the Dask scheduler {address!r}: "
                         f"{exc}") from None
    with client:
        futures = client.map(plan_file, tasks, pure=False)
        index = {future.key: i for i, future in enumerate(futures)}
        try:
            for future in as_completed(futures):
                yield index[future.key], future.result()
        finally:
            client.cancel(futures)


def write_summary(rows: Sequence[Row], out: Path) -> tuple[Path, Path]:
    """Write ``summary.json`` and ``summary.csv`` in ``out`` atomically; return both."""
    as_json, as_csv = out / "summary.json", out / "summary.csv"
    write_text_atomic(as_json, json.dumps(list(rows), indent=1) + "\n")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=FIELDS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomic(as_csv, buffer.getvalue())
    return as_json, as_csv


def default_workers() -> int:
    """One worker per core."""
    return max(1, os.cpu_count() or 1)
