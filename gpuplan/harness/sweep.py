"""Sweeps: policies x arrival rates x seeds, each point one independent simulated run.

A point (:class:`SweepPoint`) draws its workload with Gavel's job generator
(:func:`~gpuplan.simulate.workload.gavel_workload_instance`: the rate, the seed, the
number of jobs, the cluster, single- or multi-GPU), simulates it under its policy
(:func:`~gpuplan.simulate.run.simulate`, verified), and writes its run log atomically. The
points run through the machinery of ``gpuplan batch`` (:func:`gpuplan.harness.batch.run_tasks`):
local worker processes or a Dask cluster, workers that die with the sweep, Ctrl-C that
leaves only whole files, and one result row per point.

Resume
    Each run log has a key beside it (:func:`gpuplan.harness.batch.write_keyed`): everything that
    defines the point (policy, rate, seed, the workload's settings and the throughput
    file's path and SHA-256, the run's spec and settings) and the SHA-256 of the log. A
    rerun takes a point whose key matches and whose log is the one the key was written
    for, reading its row from the log's run record and the key (seconds and peak memory
    as measured then); the log was verified before it was written.

Peak memory
    Each point reports the peak resident memory of the process that ran it, in MiB. On
    Linux the peak is reset before the point (``/proc/self/clear_refs``), so a worker that
    runs many points reports each one's own; elsewhere it is the worker's peak so far.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import resource
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuplan.core.errors import BackendUnavailableError, InputError
from gpuplan.core.files import read_bytes
from gpuplan.core.instance import Instance
from gpuplan.core.schedule import RunRecord, RunSummary, Schedule
from gpuplan.harness.batch import (
    MAX_ERROR,
    Row,
    TaskKind,
    key_writer,
    keyed_output,
    write_keyed,
    write_tables,
)
from gpuplan.readers.generate import GPUS_PER_NODE
from gpuplan.simulate.engine import SimulationError
from gpuplan.simulate.run import RunSpec, check_window, simulate, simulate_run
from gpuplan.simulate.workload import gavel_workload_instance

logger = logging.getLogger(__name__)

#: Columns of the results table (CSV), in order.
FIELDS = ("policy", "rate", "seed", "jobs", "mean_jct_h", "p95_jct_h", "makespan_h",
          "utilisation", "preemptions_per_job", "migrations_per_job", "seconds", "peak_mib",
          "status", "resumed", "file", "error")

#: Columns of the Markdown table: field and heading.
MARKDOWN = (("policy", "policy"), ("rate", "λ jobs/h"), ("seed", "seed"),
            ("mean_jct_h", "mean JCT h"), ("p95_jct_h", "p95 JCT h"),
            ("makespan_h", "makespan h"), ("utilisation", "utilisation"),
            ("preemptions_per_job", "preemptions/job"),
            ("migrations_per_job", "migrations/job"), ("seconds", "seconds"),
            ("peak_mib", "peak MiB"), ("status", "status"))

#: Run metrics copied into a row: row field and metric name.
_METRICS = (("jobs", "jobs"), ("mean_jct_h", "mean_jct_h"), ("p95_jct_h", "p95_jct_h"),
            ("makespan_h", "makespan_h"), ("utilisation", "utilisation_share"),
            ("preemptions_per_job", "preemptions_per_job"),
            ("migrations_per_job", "migrations_per_job"))


@dataclass(frozen=True)
class Workload:
    """The generated workload of every point but its rate and seed.

    Attributes
    ----------
    throughputs
        Gavel's ``simulation_throughputs.json``.
    cluster
        GPUs per worker type (:func:`~gpuplan.simulate.workload.parse_cluster`).
    jobs
        Jobs per point.
    gpus_per_node
        GPUs per server; a gang stays on one.
    multi_gpu
        Gavel's multi-GPU scale factors (1, 2, 4, 8); else every job takes one GPU.
    priorities
        Gavel's priority weights.
    """

    throughputs: str
    cluster: Mapping[str, int]
    jobs: int
    gpus_per_node: int = GPUS_PER_NODE
    multi_gpu: bool = False
    priorities: bool = False

    def instance(self, rate: float, seed: int, jobs: int | None = None) -> Instance:
        """The workload at ``rate`` jobs/hour drawn with ``seed`` (``jobs`` to override)."""
        return gavel_workload_instance(
            Path(self.throughputs), self.cluster, self.jobs if jobs is None else jobs, rate,
            gpus_per_node=self.gpus_per_node, seed=seed, multi_gpu=self.multi_gpu,
            priorities=self.priorities)


@dataclass(frozen=True)
class SweepPoint:
    """One point of a sweep: a policy at an arrival rate with a seed.

    Plain data, so that it pickles to a worker process or a Dask worker.

    Attributes
    ----------
    rate
        Arrivals per hour.
    workload
        What the workload is drawn from; the point's seed draws it.
    spec
        The run: its scheduler is the point's policy and its seed the point's seed.
    target
        Where its run log goes (its summary, with ``metrics_only``).
    metrics_only
        Write the run's summary (:class:`~gpuplan.core.schedule.RunSummary`) instead of
        its log.
    """

    rate: float
    workload: Workload
    spec: RunSpec
    target: str
    metrics_only: bool = False

    @property
    def policy(self) -> str:
        """The scheduler."""
        return self.spec.scheduler

    @property
    def seed(self) -> int:
        """The seed of the workload and of the run."""
        return self.spec.seed


def points(policies: Sequence[str], rates: Sequence[float], seeds: Sequence[int],
           workload: Workload, spec: RunSpec, out: Path,
           metrics_only: bool = False) -> list[SweepPoint]:
    """Every (policy, rate, seed) once, in that nesting, each with its run log in ``out``.

    ``spec`` gives everything but the scheduler and the seed, which each point sets. With
    ``metrics_only`` each point writes its run's summary, ``*.metrics.json``, instead.
    """
    suffix = ".metrics.json" if metrics_only else ".json"
    found = []
    for policy in dict.fromkeys(policies):
        for rate in dict.fromkeys(rates):
            for seed in dict.fromkeys(seeds):
                settings = dataclasses.replace(spec.settings, seed=seed)
                found.append(SweepPoint(
                    rate, workload,
                    dataclasses.replace(spec, scheduler=policy, seed=seed, settings=settings),
                    str(out / f"{policy}_rate{rate:g}_seed{seed}{suffix}"), metrics_only))
    return found


def check_points(sweep: Sequence[SweepPoint]) -> None:
    """Refuse, before any point runs, what would fail every point of a policy.

    Each policy runs once on the first few jobs of its first point's workload: a part
    name, an option a part does not take or refuses, a mode the scheduler does not work
    in, a window out of range and a throughput file that cannot be read are found here.

    Raises
    ------
    InputError
        As :func:`~gpuplan.simulate.run.simulate` and the workload raise it.
    """
    if not sweep:
        return
    first = sweep[0]
    check_window(first.workload.instance(first.rate, first.seed), first.spec.window)
    tried: set[str] = set()
    for point in sweep:
        if point.policy in tried:
            continue
        tried.add(point.policy)
        few = point.workload.instance(point.rate, point.seed, min(point.workload.jobs, 3))
        try:
            simulate(few, dataclasses.replace(point.spec, window=None))
        except SimulationError as exc:
            raise SimulationError(f"policy {point.policy!r} on 3 jobs: {exc}") from None


def _sha256_file(path: str) -> str | None:
    """The file's SHA-256; None when it cannot be read (the point's run then says why)."""
    try:
        return hashlib.sha256(read_bytes(Path(path))).hexdigest()
    except InputError:
        return None


def point_key(point: SweepPoint) -> dict[str, Any] | None:
    """Everything that defines the point, as plain data; None if it has no key.

    A point has none when its throughput file cannot be read (its run reports why) or a
    setting is not plain data.
    """
    digest = _sha256_file(point.workload.throughputs)
    if digest is None:
        return None
    workload = dataclasses.asdict(point.workload)
    workload["throughputs"] = str(Path(point.workload.throughputs).resolve())
    key = {"rate": point.rate, "workload": workload, "throughputs_sha256": digest,
           "spec": dataclasses.asdict(point.spec)}
    try:
        text = json.dumps(key, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return None
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _row(point: SweepPoint, run: RunRecord | None, seconds: float, peak_mib: float | None,
         resumed: bool) -> Row:
    if run is None:
        raise ValueError(f"{point.target} holds no run record")
    row: Row = {"policy": point.policy, "rate": point.rate, "seed": point.seed}
    row.update({name: run.metrics[metric] for name, metric in _METRICS})
    row["jobs"] = int(row["jobs"])
    row.update({"seconds": round(seconds, 3), "peak_mib": peak_mib, "status": "ok",
                "resumed": resumed, "file": point.target, "error": ""})
    return row


def failed_row(point: SweepPoint, seconds: float | None, exc: BaseException | str) -> Row:
    """The row of a point whose run failed: its input's fault, a bug, or a dead worker."""
    if isinstance(exc, str):
        error = exc
    elif isinstance(exc, InputError | BackendUnavailableError):
        error = str(exc)
    elif isinstance(exc, SimulationError):
        error = f"simulation bug: {exc}"
    else:
        error = f"internal error: {type(exc).__name__}: {exc}"
    if len(error) > MAX_ERROR:
        error = error[:MAX_ERROR - 3] + "..."
    if not isinstance(exc, InputError | BackendUnavailableError):
        logger.error("%s: %s", point.target, error)
    return {"policy": point.policy, "rate": point.rate, "seed": point.seed,
            **dict.fromkeys(name for name, _ in _METRICS),
            "seconds": None if seconds is None else round(seconds, 3), "peak_mib": None,
            "status": "error", "resumed": False, "file": point.target, "error": error}


def _reset_peak() -> bool:
    """Reset this process's peak resident memory (Linux); whether it was reset."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _peak_mib(reset: bool) -> float:
    """Peak resident memory in MiB: since the reset, else of the whole process."""
    if reset:
        with contextlib.suppress(OSError, ValueError):
            for line in Path("/proc/self/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return round(peak / (2**20 if sys.platform == "darwin" else 1024), 1)


def resumed_row(point: SweepPoint) -> Row | None:
    """The row of the point's run log on disk, if it was written for this very point."""
    key = point_key(point)
    if key is None:
        return None
    found = keyed_output(Path(point.target), key)
    if found is None:
        return None
    data, measured = found
    try:
        text = data.decode("utf-8")
        run = (RunSummary.model_validate_json(text).run if point.metrics_only
               else Schedule.from_json(text, point.target).run)
        return _row(point, run, float(measured["seconds"]), measured.get("peak_mib"),
                    resumed=True)
    except Exception as exc:  # a damaged log or key: run the point again
        logger.info("%s: not resumed (%s: %s)", point.target, type(exc).__name__, exc)
        return None


def run_point(point: SweepPoint) -> Row:
    """Draw, simulate and write one point (or take it from disk); a row, never an exception.

    Any exception but ``KeyboardInterrupt`` and ``SystemExit`` becomes the row's error.
    """
    began = time.perf_counter()
    try:
        done = resumed_row(point)
        if done is not None:
            return done
        reset = _reset_peak()
        instance = point.workload.instance(point.rate, point.seed)
        log = simulate_run(instance, point.spec)
        seconds = time.perf_counter() - began
        peak = _peak_mib(reset)
        key, measured = point_key(point), {"seconds": seconds, "peak_mib": peak}
        try:
            if point.metrics_only:
                write_keyed(Path(point.target), key,
                            log.summary().model_dump_json(indent=2) + "\n", measured)
            else:
                log.write(point.target, key_writer(Path(point.target), key, measured))
        except OSError as exc:
            raise InputError(point.target, "", "cannot write the run log: "
                             f"{exc.strerror or exc}") from None
    except Exception as exc:  # any error is this point's row, never the sweep's end
        return failed_row(point, time.perf_counter() - began, exc)
    return _row(point, log.run, seconds, peak, resumed=False)


def _written(point: SweepPoint) -> Row | None:
    row = resumed_row(point)
    return None if row is None else {**row, "resumed": False}


#: Sweep points as tasks of :func:`gpuplan.harness.batch.run_tasks`.
SWEEP: TaskKind[SweepPoint] = TaskKind(
    work=run_point, failed=failed_row, target=lambda point: Path(point.target),
    written=_written)


def write_results(rows: Sequence[Row], out: Path) -> tuple[Path, Path]:
    """Write ``results.csv`` and ``results.md`` in ``out`` atomically; return both.

    An error row shows its error in the Markdown status column.
    """
    return write_tables(rows, out, FIELDS, MARKDOWN)
