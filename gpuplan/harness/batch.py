"""Plan many instance files at once: in local processes, or on a Dask cluster.

Each instance is one task (:func:`plan_file`): read, plan, verify, write its schedule
atomically, and return a summary row. A task never raises: a bad or infeasible file, and
any other error while planning it (an internal error such as a ``RecursionError``, labelled
``internal error`` and logged), is that instance's row, and the batch goes on. Only
``KeyboardInterrupt`` and ``SystemExit`` in the main process end a batch. A local worker
process that dies (killed, out of memory, a crash inside a solver) costs the batch its pool,
not its run: the tasks it may have been running are run again one at a time, and the one
whose process dies again is an error row.

Resume
    Beside each schedule ``OUT/NAME.json`` its task writes a key,
    ``OUT/.gpuplan-batch/NAME.json`` (both atomically, the key first): the instance file's
    resolved path and SHA-256, the method, every setting that changes a plan (the method's
    typed options, defaults included, and the :class:`~gpuplan.core.settings.RunSettings`,
    threads included (milp's lanes depend on them); a task whose options are not plain
    data has no key) and the SHA-256 of the schedule file it writes. One small key per
    schedule, written by the worker that planned it, needs no shared file that concurrent
    workers (or Dask workers on other machines) would have to update together. A rerun
    takes a schedule from disk instead of planning again only when its key equals the
    task's, the schedule file is the one the key was written for, and the schedule has a
    plan that passes
    :func:`~gpuplan.verify.verify_schedule` against the instance as read now. Anything else
    is planned again.

Interruption
    Local workers ignore SIGINT. When the batch is interrupted (Ctrl-C, or any exception in
    the main process), the main process kills its workers, removes the temporary files of
    writes they had not finished, and :func:`run_batch` reports, before it re-raises, the
    rows of the tasks that had finished and of every schedule this run wrote (its key was
    written since the batch began, matches, and verifies). A summary written from the rows
    reported therefore lists every schedule file of the run. A batch that is killed
    (SIGKILL) can clean nothing up: the next run into the same folder removes the
    temporary files it left, beside the schedules and among the keys, before it starts.

Workers die with the main process: on Linux through ``PR_SET_PDEATHSIG``, and everywhere
through a thread that ends the worker as soon as its parent is gone.

Locally, tasks go to a :class:`concurrent.futures.ProcessPoolExecutor`; with a scheduler
address, the same function goes to an existing Dask ``distributed`` cluster, which
operators start as Dask documents (``dask scheduler`` and ``dask worker`` processes).

Other kinds of task
    The pool, the Dask path, the interruption handling and the resume keys serve any kind
    of task that writes one file and returns one row: a :class:`TaskKind` says how to run
    a task, what its row is when it fails, which file it writes and which row a complete
    file on disk stands for; :func:`run_tasks` runs them (``gpuplan sweep`` is one such
    kind). :func:`write_keyed` and :func:`keyed_output` write and find an output with its
    key.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import glob
import hashlib
import json
import logging
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from gpuplan.core.errors import BackendUnavailableError, InputError, VerificationError, setting
from gpuplan.core.files import (
    csv_text,
    read_bytes,
    remove_stale_temporaries,
    write_text_atomic,
)
from gpuplan.core.instance import Instance
from gpuplan.core.options import part_options
from gpuplan.core.schedule import Schedule
from gpuplan.core.settings import CORES, RunSettings
from gpuplan.methods import get_method
from gpuplan.planning import check_settings, plan
from gpuplan.readers import read_instance
from gpuplan.verify import verify_schedule

logger = logging.getLogger(__name__)

#: Columns of the summary, in order.
FIELDS = ("instance", "file", "status", "objective", "bound", "gap", "seconds", "verified",
          "resumed", "error")

#: Instance file suffixes a folder contributes.
SUFFIXES = (".json", ".yaml", ".yml")

#: Folder of the output folder that holds each schedule's resume key.
KEYS = ".gpuplan-batch"

#: Bytes of a file name left free for ``-k`` suffixes.
NAME_ROOM = 40

#: Longest error text a row keeps.
MAX_ERROR = 2000

#: Seconds between a worker's checks that its parent still runs.
WATCH_S = 0.5

#: A summary row.
Row = dict[str, Any]

#: Called with each row as it is known: the task's index and its row.
Emit = Callable[[int, Row], None]

#: A task: plain data that pickles to a worker process or a Dask worker.
Task = TypeVar("Task")

#: Key of the output's SHA-256 in a key file.
_OUTPUT_SHA = "schedule_sha256"
#: Key of what the task measured (not part of its identity) in a key file.
_MEASURED = "measured"


@dataclass(frozen=True)
class TaskKind(Generic[Task]):
    """A kind of task the pool runs: each writes one file and returns one row.

    Attributes
    ----------
    work
        Runs one task, in a worker; its row, never an exception but ``KeyboardInterrupt``
        and ``SystemExit``. A module-level function, so that it pickles.
    failed
        The row of a task that raised or whose process died: the task, the seconds it ran
        (None: unknown), and the exception or a text saying what happened.
    target
        The file a task writes, its key beside it (:func:`write_keyed`).
    written
        The row of a task whose file is on disk, complete and valid for the task; None
        otherwise. Reported for the files an interrupted run wrote.
    """

    work: Callable[[Task], Row]
    failed: Callable[[Task, float | None, BaseException | str], Row]
    target: Callable[[Task], Path]
    written: Callable[[Task], Row | None]


@dataclass(frozen=True)
class BatchTask:
    """One instance to plan: where it is, where its schedule goes, and how.

    Plain data, so that it pickles to a worker process or a Dask worker.

    Attributes
    ----------
    source
        The instance file.
    target
        Its schedule file.
    method
        A registered method.
    options
        The method's settings by name or flag (:func:`~gpuplan.core.options.build_options`).
    settings
        Time limit, iterations, seed, threads and gap.
    """

    source: str
    target: str
    method: str
    options: Mapping[str, Any]
    settings: RunSettings


def batch_plan(workers: int | None, scheduler: str | None) -> tuple[int, int]:
    """The local workers and the threads per solve of a batch.

    Solver threads times local workers never exceed the cores (while the workers do
    not); on Dask every worker thread runs one task, so each solve gets one thread.

    Parameters
    ----------
    workers
        Local worker processes asked for; None: one per core.
    scheduler
        A Dask scheduler address, or None to run locally.

    Returns
    -------
    tuple
        The workers and the threads each solve may use.

    Raises
    ------
    InputError
        Naming ``--workers`` if fewer than one is asked for.
    """
    if workers is not None and workers < 1:
        raise InputError(setting("workers"), "", f"expected at least 1 worker, got {workers}")
    chosen = workers or default_workers()
    return chosen, 1 if scheduler is not None else max(1, CORES // chosen)


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


def make_tasks(sources: Sequence[Path], out: Path, method: str, options: Mapping[str, Any],
               settings: RunSettings) -> list[BatchTask]:
    """One task per source, its schedule at ``OUT/<stem>.json``.

    The method and its options are checked here, before any task runs.

    Output names never collide. A stem an earlier source already has (compared without
    case, as on macOS and Windows file systems) becomes the first of ``<stem>-2``,
    ``<stem>-3``, ... that is free and is not another source's own stem, so a file named
    ``x-2.json`` keeps its name beside two ``x.json``. ``summary`` is the summary's. A stem
    too long for the file system (with :data:`NAME_ROOM` bytes to spare) is cut and ends
    in a hash of the whole stem.

    Raises
    ------
    InputError
        For an unknown method, an option it does not take, a value out of range, or
        ``--iterations`` for a method that counts none.
    """
    chosen = get_method(method)
    part_options(chosen, "method", options)
    check_settings(chosen, settings)
    limit = _name_limit(out)
    stems = [_shorten(source.stem, limit) for source in sources]
    own = {stem.casefold() for stem in stems}
    taken = {"summary"}
    tasks = []
    for source, stem in zip(sources, stems, strict=True):
        name, k = stem, 1
        while name.casefold() in taken or (k > 1 and name.casefold() in own):
            k += 1
            name = f"{stem}-{k}"
        taken.add(name.casefold())
        tasks.append(BatchTask(str(source), str(out / f"{name}.json"), method, dict(options),
                               settings))
    return tasks


def _name_limit(folder: Path) -> int:
    """The longest file name (bytes) the folder's file system takes; 255 if unknown."""
    try:
        return min(255, os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return 255


def _shorten(stem: str, limit: int) -> str:
    """The stem, or if its ``.json`` name would leave less than NAME_ROOM bytes, a cut."""
    budget = limit - NAME_ROOM - len(".json")
    if len(os.fsencode(stem)) <= budget:
        return stem
    digest = hashlib.sha256(os.fsencode(stem)).hexdigest()[:8]
    cut = stem[:budget]
    while len(os.fsencode(cut)) > budget - len(digest) - 1:
        cut = cut[:-1]
    return f"{cut}-{digest}"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _key_path(target: Path) -> Path:
    return target.parent / KEYS / target.name


def keyed_output(target: Path, key: Mapping[str, Any]) -> tuple[bytes, dict[str, Any]] | None:
    """The file at ``target`` and what its task measured, if it was written for ``key``.

    That is: its key file (:func:`write_keyed`) holds ``key`` and the SHA-256 of the file
    as it is now. None otherwise (no file, another key, a damaged key or file).
    """
    try:
        stored = json.loads(_key_path(target).read_text(encoding="utf-8"))
        data = target.read_bytes()
    except FileNotFoundError:
        return None
    except Exception as exc:  # a damaged key or output: the task runs again
        logger.info("%s: not resumed (%s: %s)", target, type(exc).__name__, exc)
        return None
    if not isinstance(stored, dict) or stored.pop(_OUTPUT_SHA, None) != _sha256(data):
        return None
    measured = stored.pop(_MEASURED, {})
    if stored != key or not isinstance(measured, dict):
        return None
    return data, measured


def write_keyed(target: Path, key: Mapping[str, Any] | None, text: str,
                measured: Mapping[str, Any] | None = None) -> None:
    """Write the key of ``text`` (with what its task measured), then ``text``, atomically.

    The key goes first: a key naming a file that never got written matches nothing.
    With no key (a task that can have none), only the file is written.

    Raises
    ------
    OSError
        If the folder cannot be written.
    """
    data = text.encode("utf-8")
    commit = key_writer(target, key, measured)
    if commit is not None:
        commit(hashlib.sha256(data).digest())
    write_text_atomic(target, text)


def key_writer(target: Path, key: Mapping[str, Any] | None,
               measured: Mapping[str, Any] | None = None) -> Callable[[bytes], None] | None:
    """What writes the key of ``target`` once its content's SHA-256 digest is known.

    Call it after the content is written in full and before it replaces ``target``
    (:func:`~gpuplan.core.files.atomic_writer`): the key is in place first, and a key
    naming a file that never got written matches nothing. None when there is no key.
    """
    if key is None:
        return None

    def commit(digest: bytes) -> None:
        _key_path(target).parent.mkdir(parents=True, exist_ok=True)
        stored = {**key, _OUTPUT_SHA: digest.hex()}
        if measured:
            stored[_MEASURED] = dict(measured)
        write_text_atomic(_key_path(target), json.dumps(stored, indent=1) + "\n")

    return commit


def _task_key(task: BatchTask) -> dict[str, Any] | None:
    """What a schedule must have been planned from to be taken for this task.

    None when the task can have no key: its instance file cannot be read (its task reports
    why), or an option is not plain data.
    """
    try:
        data = read_bytes(Path(task.source))
        resolved = str(Path(task.source).resolve())
    except (InputError, OSError, RuntimeError):
        return None
    # The typed options, so that a setting given by flag or left at its default is the
    # same key; threads are kept: milp runs its second lane only with two.
    typed = part_options(get_method(task.method), "method", task.options)
    settings = dataclasses.asdict(task.settings)
    key = {"instance": resolved, "instance_sha256": _sha256(data), "method": task.method,
           "options": dataclasses.asdict(typed), "settings": settings}
    try:
        text = json.dumps(key, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return None
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _resumable(task: BatchTask, key: dict[str, Any], instance: Instance) -> Schedule | None:
    """The task's schedule on disk, freshly verified, if its key matches and it passes."""
    target = Path(task.target)
    found = keyed_output(target, key)
    if found is None:
        return None
    try:
        schedule = Schedule.from_json(found[0].decode("utf-8"), str(target))
        if schedule.method != task.method or not schedule.status.has_plan:
            return None
        verification = verify_schedule(instance, schedule)
    except Exception as exc:  # a damaged schedule: plan again
        logger.info("%s: not resumed (%s: %s)", task.target, type(exc).__name__, exc)
        return None
    if not verification.ok:
        logger.warning("%s: the schedule on disk fails verification against %s now; "
                       "planning again", task.target, task.source)
        return None
    return schedule.model_copy(update={"verification": verification})


def _row(task: BatchTask, schedule: Schedule, seconds: float, resumed: bool) -> Row:
    verified = schedule.verification is not None and schedule.verification.ok
    return {"instance": Path(task.source).stem, "file": task.source,
            "status": schedule.status.value, "objective": schedule.objective,
            "bound": schedule.bound, "gap": schedule.gap, "seconds": round(seconds, 4),
            "verified": verified and schedule.status.has_plan, "resumed": resumed,
            "error": ""}


def _text(exc: BaseException) -> str:
    """``str(exc)``, which can itself fail, cut to :data:`MAX_ERROR` characters."""
    try:
        text = str(exc)
    except Exception:
        text = f"<{type(exc).__name__} that cannot be shown>"
    return text if len(text) <= MAX_ERROR else text[:MAX_ERROR - 3] + "..."


def _failed(task: BatchTask, seconds: float | None, exc: BaseException | str) -> Row:
    """The row of a task that raised ``exc`` (or, given a string, failed as it says)."""
    if isinstance(exc, str):
        error = f"internal error: {exc}"
        logger.error("%s: %s", task.source, error)
    elif isinstance(exc, InputError | BackendUnavailableError):
        error = _text(exc)
    elif isinstance(exc, VerificationError):
        error = f"verification failed (a bug): {_text(exc)}"
        logger.error("%s: %s", task.source, error)
    else:
        error = f"internal error: {type(exc).__name__}: {_text(exc)}"
        logger.error("%s: %s", task.source, error, exc_info=logger.isEnabledFor(logging.DEBUG))
    return {"instance": Path(task.source).stem, "file": task.source, "status": "error",
            "objective": None, "bound": None, "gap": None,
            "seconds": None if seconds is None else round(seconds, 4), "verified": False,
            "resumed": False, "error": error}


def plan_file(task: BatchTask) -> Row:
    """Plan one instance file and write its schedule; a row, never an exception.

    Any exception but ``KeyboardInterrupt`` and ``SystemExit`` becomes the row's error: the
    file's own fault (``InputError``) as it says, anything else labelled ``internal error``
    (or ``verification failed (a bug)``) and logged.
    """
    began = time.perf_counter()
    try:
        key = _task_key(task)
        instance = read_instance(task.source)
        if key is not None:
            done = _resumable(task, key, instance)
            if done is not None:
                return _row(task, done, done.wall_time_s, resumed=True)
        schedule = plan(instance, task.method, task.options, settings=task.settings)
        if schedule.verification is None:
            raise ValueError("refusing to write a schedule that has not been verified")
        _write(task, key, schedule.to_json())
    except Exception as exc:  # any error is this instance's row, never the batch's end
        return _failed(task, time.perf_counter() - began, exc)
    return _row(task, schedule, time.perf_counter() - began, resumed=False)


def _write(task: BatchTask, key: dict[str, Any] | None, text: str) -> None:
    """Write the task's key, then its schedule, each atomically (:func:`write_keyed`).

    Raises
    ------
    InputError
        If the output folder cannot be written (full, read-only, a name it refuses).
    """
    try:
        write_keyed(Path(task.target), key, text)
    except OSError as exc:
        raise InputError(task.target, "", f"cannot write the schedule: "
                         f"{exc.strerror or exc}") from None


def _planned(task: BatchTask) -> Row | None:
    """The row of the task's schedule on disk, if its key matches and it verifies."""
    key = _task_key(task)
    if key is None:
        return None
    schedule = _resumable(task, key, read_instance(task.source))
    return None if schedule is None else _row(task, schedule, schedule.wall_time_s,
                                              resumed=False)


#: Planning instance files: the tasks of ``gpuplan batch``.
PLANNING: TaskKind[BatchTask] = TaskKind(
    work=plan_file, failed=_failed, target=lambda task: Path(task.target), written=_planned)


def _written_rows(tasks: Sequence[Task], kind: TaskKind[Task], since: float,
                  skip: Sequence[int] = ()) -> list[tuple[int, Row]]:
    """Rows of the files written since ``since`` (a ``time.time()``) and still valid.

    A task counts when its key was written since then and ``kind.written`` finds its
    file valid; ``skip`` lists the indices to leave out (those whose rows are known).
    :func:`run_tasks` reports these when interrupted.
    """
    found, known = [], set(skip)
    for index, task in enumerate(tasks):
        if index in known:
            continue
        try:
            # A second of slack: file times may lag the clock by a tick.
            if _key_path(kind.target(task)).stat().st_mtime < since - 1.0:
                continue
            row = kind.written(task)
        except Exception:  # not a file of this run after all
            continue
        if row is not None:
            found.append((index, row))
    return found


def run_batch(tasks: Sequence[BatchTask], workers: int, scheduler: str | None = None,
              on_row: Callable[[Row], None] | None = None) -> list[Row]:
    """Plan every task and return the rows in task order (:func:`run_tasks`).

    Parameters
    ----------
    tasks
        From :func:`make_tasks`.
    workers, scheduler, on_row
        As :func:`run_tasks` takes them.
    """
    return run_tasks(tasks, PLANNING, workers, scheduler, on_row)


def run_tasks(tasks: Sequence[Task], kind: TaskKind[Task], workers: int,
              scheduler: str | None = None,
              on_row: Callable[[Row], None] | None = None) -> list[Row]:
    """Run every task and return the rows in task order.

    Parameters
    ----------
    tasks
        Tasks of one kind.
    kind
        How to run them (:class:`TaskKind`).
    workers
        Local processes (1: in this process). Ignored with a scheduler, whose cluster has
        its own workers.
    scheduler
        A Dask scheduler address (``tcp://host:port``), or None to run locally.
    on_row
        Called with each row as it completes (progress reporting), once per task.

    Raises
    ------
    InputError
        If ``scheduler`` is not a Dask address, or no scheduler answers there.

    If interrupted (``KeyboardInterrupt``, or any exception in this process), local
    workers are killed and pending tasks cancelled; before the exception propagates,
    ``on_row`` is also called with the row of every task that finished and of every
    file this run wrote (see the module docstring). Every file left is whole.
    """
    rows: dict[int, Row] = {}
    since = time.time()
    # A killed run's leftovers go before this run writes beside them.
    _remove_leftovers(kind.target(task) for task in tasks)

    def emit(index: int, row: Row) -> None:
        if index not in rows:
            rows[index] = row
            if on_row is not None:
                on_row(row)

    try:
        if scheduler is not None:
            _dask(tasks, kind, scheduler, emit)
        else:
            _local(tasks, workers, emit, kind.work, kind)
    except BaseException:
        for index, row in _written_rows(tasks, kind, since, list(rows)):
            emit(index, row)
        raise
    return [rows[i] for i in sorted(rows)]


def _local(tasks: Sequence[Task], workers: int, emit: Emit,
           work: Callable[[Task], Row] | None = None,
           kind: TaskKind[Any] = PLANNING) -> None:
    """Run the tasks in this process (one worker) or in a pool of worker processes.

    ``work`` runs one task (default: ``kind.work``). When a worker process dies, the pool
    breaks and every unfinished task fails with it. The pool starts tasks in order, so the
    ones the dead worker may have been running are the first ``workers + 1`` of those:
    each runs again alone, and if its process dies again its row says so. The others go
    to a new pool.
    """
    run = kind.work if work is None else work
    if workers <= 1:
        for index, task in enumerate(tasks):
            emit(index, run(task))
        return
    left = list(range(len(tasks)))
    while left:
        broken = _pool_run(tasks, left, workers, emit, run, kind)
        suspects, left = broken[:workers + 1], broken[workers + 1:]
        for index in suspects:
            if _pool_run(tasks, [index], 1, emit, run, kind):
                emit(index, kind.failed(tasks[index], None, "the worker process running "
                                        "this task died (killed, out of memory, or a crash "
                                        "in a solver)"))


def _pool_run(tasks: Sequence[Task], indices: Sequence[int], workers: int, emit: Emit,
              work: Callable[[Task], Row], kind: TaskKind[Task]) -> list[int]:
    """Run ``indices`` in a new pool; return those (in order) left undone by a broken pool."""
    pool = ProcessPoolExecutor(max_workers=min(workers, len(indices)),
                               initializer=_worker_init, initargs=(_expected_parent(),))
    futures: dict[Future[Row], int] = {}
    reported: set[int] = set()

    def report(future: Future[Row]) -> None:
        index = futures[future]
        if index not in reported:
            reported.add(index)
            emit(index, _outcome(future, tasks[index], kind))

    def done(future: Future[Row]) -> bool:
        return (future.done() and not future.cancelled()
                and not isinstance(future.exception(), BrokenProcessPool))

    try:
        for index in indices:
            futures[pool.submit(work, tasks[index])] = index
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            if not all(done(f) for f in finished):
                break
            for future in sorted(finished, key=futures.__getitem__):
                report(future)
    except BaseException:
        _stop(pool, [kind.target(tasks[i]) for i in indices])
        # Rows that arrived but were not reported yet: some (errors) are nowhere else.
        for future in sorted(futures, key=futures.__getitem__):
            if done(future):
                report(future)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    undone = []
    for future in sorted(futures, key=futures.__getitem__):
        if done(future):
            report(future)
        else:
            undone.append(futures[future])
    return undone


def _outcome(future: Future[Row], task: Task, kind: TaskKind[Task]) -> Row:
    """A finished future's row, or its task's error row (say, a solver's SystemExit)."""
    exc = future.exception()
    return future.result() if exc is None else kind.failed(task, None, exc)


def _stop(pool: ProcessPoolExecutor, targets: Sequence[Path]) -> None:
    """Interrupted: kill the workers, end the pool, and remove the workers' leftovers.

    The pool marks what was running or queued as failed (broken pool); what finished keeps
    its row.
    """
    # The pool's workers are this process's multiprocessing children (the pool has no
    # public way to kill them before 3.14).
    processes = multiprocessing.active_children()
    for process in processes:
        with contextlib.suppress(Exception):
            process.kill()
    for process in processes:
        with contextlib.suppress(Exception):
            process.join(timeout=10)
    pool.shutdown(wait=True, cancel_futures=True)
    _remove_leftovers(targets)


def _remove_leftovers(targets: Iterable[Path]) -> None:
    """Remove unfinished writes' temporary files beside the targets and their keys.

    Those of a run that was killed (SIGKILL leaves it no chance to clean up) are removed
    by the next run into the same folder (:func:`~gpuplan.core.files.remove_stale_temporaries`).
    """
    for folder in {target.parent for target in targets}:
        remove_stale_temporaries(folder)
        remove_stale_temporaries(folder / KEYS)


def _expected_parent() -> int | None:
    """The parent local workers will have: this process, unless a fork server starts them."""
    return None if multiprocessing.get_start_method() == "forkserver" else os.getpid()


def _worker_init(parent: int | None) -> None:
    """Start a local worker: leave Ctrl-C to the main process, and die with it.

    ``parent`` is the process that started this one (None: a fork server, which ends with
    the main process); if it is gone already, so is the worker.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    threading.Thread(target=_watch_parent, args=(parent or os.getppid(),), daemon=True,
                     name="gpuplan-watch-parent").start()


def _die_with_parent() -> None:
    """On Linux, have the kernel kill this process when its parent ends."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)


def _watch_parent(parent: int) -> None:
    """End this process as soon as its parent is gone (it then has another parent)."""
    while os.getppid() == parent:
        time.sleep(WATCH_S)
    os._exit(1)


def check_scheduler(address: str) -> None:
    """Check that ``address`` is a Dask scheduler address, before any work or output.

    Checked before a Client exists: a Client that fails to start can stall its process
    for a long time when it is collected (it closes on its stopped event loop).

    Raises
    ------
    BackendUnavailableError
        If ``distributed`` is not installed.
    InputError
        Naming ``--scheduler``, for an address Dask cannot parse or a port out of range.
    """
    try:
        from distributed.comm.addressing import get_address_host_port, parse_address
    except ImportError as exc:
        raise BackendUnavailableError("dask", "distributed", exc) from None
    try:
        if parse_address(address)[0] not in ("inproc", "ucx"):
            port = get_address_host_port(address)[1]
            if not 0 < port < 65536:
                raise ValueError(f"port {port} is out of range")
    except Exception as exc:  # distributed says ValueError, TypeError, ...
        raise InputError(setting("scheduler"), "", f"{address!r} is not a Dask scheduler address "
                         f"such as tcp://HOST:8786 ({exc})") from None


def _dask(tasks: Sequence[Task], kind: TaskKind[Task], address: str, emit: Emit) -> None:
    try:
        from distributed import Client, as_completed
    except ImportError as exc:
        raise BackendUnavailableError("dask", "distributed", exc) from None
    check_scheduler(address)
    try:
        client = Client(address, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise InputError(setting("scheduler"), "", f"cannot reach the Dask scheduler {address!r}: "
                         f"{exc}") from None
    except Exception as exc:  # distributed says ValueError, TypeError, ... for bad addresses
        raise InputError(setting("scheduler"), "", f"{address!r} is not a Dask scheduler address "
                         f"such as tcp://HOST:8786 ({type(exc).__name__}: {exc})") from None
    with client:
        futures = client.map(kind.work, tasks, pure=False)
        index = {future.key: i for i, future in enumerate(futures)}

        def outcome(future: Any) -> Row:
            try:
                row: Row = future.result()
            except Exception as exc:  # a worker that died (KilledWorker), a lost future
                return kind.failed(tasks[index[future.key]], None, exc)
            return row

        try:
            for future in as_completed(futures):
                emit(index[future.key], outcome(future))
        except BaseException:
            for future in futures:
                if future.status in ("finished", "error"):
                    emit(index[future.key], outcome(future))
            raise
        finally:
            client.cancel(futures)


def write_summary(rows: Sequence[Row], out: Path) -> tuple[Path, Path]:
    """Write ``summary.json`` and ``summary.csv`` in ``out`` atomically; return both."""
    as_json, as_csv = out / "summary.json", out / "summary.csv"
    write_text_atomic(as_json, json.dumps(list(rows), indent=1) + "\n")
    write_text_atomic(as_csv, csv_text(FIELDS, rows))
    return as_json, as_csv


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4g}"
    return str(value)


def write_tables(rows: Sequence[Row], out: Path, fields: Sequence[str],
                 markdown: Sequence[tuple[str, str]], stem: str = "results") -> tuple[Path, Path]:
    """Write ``<stem>.csv`` (``fields``) and ``<stem>.md`` in ``out`` atomically.

    ``markdown`` gives the Markdown table's columns as (field, heading); text columns
    (``policy``, ``status``) are left-aligned. A row whose ``status`` is not ``ok`` shows its
    ``error`` in the status column.
    """
    as_csv, as_md = out / f"{stem}.csv", out / f"{stem}.md"
    write_text_atomic(as_csv, csv_text(fields, rows))
    lines = ["| " + " | ".join(heading for _, heading in markdown) + " |",
             "|" + "|".join("---" if name in ("policy", "status") else "---:"
                            for name, _ in markdown) + "|"]
    for row in rows:
        status = row.get("status", "ok")
        shown = {**row, "status": status if status == "ok"
                 else f"{status}: {row['error']}".replace("|", "/").replace("\n", " ")}
        lines.append("| " + " | ".join(_cell(shown.get(name)) for name, _ in markdown) + " |")
    write_text_atomic(as_md, "\n".join(lines) + "\n")
    return as_csv, as_md


def default_workers() -> int:
    """One worker per core."""
    return CORES
