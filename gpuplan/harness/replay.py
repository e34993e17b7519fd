"""Replays as runs: a replay's end state as a verified schedule, and policies x seeds at once.

A replay (:func:`gpuplan.sharing.replay.replay`) ends with every arrived pod placed or
failed, and pods never leave, so its end state holds every placement it ever made: as a
static ``max-weight`` schedule of the inflated instance (weight = GPU milli requested), the
independent verifier checks GPU milli per GPU, node CPU and memory, GPU models and gangs,
and its objective is the allocated GPU milli. :func:`replay_schedule` builds and verifies it;
a violation is a bug of the replay or a policy, raised, never repaired.

:data:`REPLAYS` runs :class:`ReplayPoint` tasks through the machinery of ``gpuplan batch``
(:func:`gpuplan.harness.batch.run_tasks`: local processes or a Dask cluster), each writing its
verified schedule atomically and returning one row with its curves.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpuplan.core.errors import BackendUnavailableError, InputError, VerificationError
from gpuplan.core.files import csv_text, write_text_atomic
from gpuplan.core.instance import Instance
from gpuplan.core.result import Result
from gpuplan.core.schedule import Schedule
from gpuplan.core.status import Status
from gpuplan.harness.batch import MAX_ERROR, Row, TaskKind, write_tables
from gpuplan.readers.openb import gpu_specs, read_openb
from gpuplan.sharing import SharePolicy
from gpuplan.sharing.bound import allocation_bound, arrived_ends
from gpuplan.sharing.migrate import Defragmenter
from gpuplan.sharing.replay import ARRIVED_PERCENT, PAPER_RATIO, ReplayResult, replay
from gpuplan.sharing.timeline import TimelineResult, time_replay
from gpuplan.verify import verify_schedule

logger = logging.getLogger(__name__)

#: The paper's published allocation (% of GPUs) at 100% and 130% arrived, mean of seeds
#: 42..51, by pod list and policy: FGD's artifact, experiments/analysis/expected_results/
#: analysis_allo_discrete.csv (the default list's values are the paper's Fig. 7 table).
PUBLISHED: dict[str, dict[str, tuple[float, float]]] = {
    "openb_pod_list_default": {
        "random": (86.30, 87.47), "dot-product": (90.62, 90.85),
        "gpu-clustering": (91.65, 91.88), "gpu-packing": (91.78, 92.00),
        "best-fit": (92.86, 93.08), "fgd": (95.23, 95.39)},
    "openb_pod_list_gpushare100": {
        "random": (78.90, 79.44), "dot-product": (81.98, 82.42),
        "gpu-clustering": (82.22, 82.65), "gpu-packing": (82.13, 82.57),
        "best-fit": (84.62, 85.01), "fgd": (86.64, 86.90)},
    "openb_pod_list_gpuspec33": {
        "random": (83.87, 86.46), "dot-product": (79.82, 89.14),
        "gpu-clustering": (81.09, 92.12), "gpu-packing": (82.22, 93.22),
        "best-fit": (80.40, 93.09), "fgd": (87.84, 94.55)},
    "openb_pod_list_multigpu50": {
        "random": (81.28, 90.28), "dot-product": (94.73, 94.85),
        "gpu-clustering": (95.69, 95.81), "gpu-packing": (96.06, 96.18),
        "best-fit": (95.62, 95.74), "fgd": (97.09, 97.18)},
}

#: Columns of the results table (CSV), in order.
FIELDS = ("pods", "policy", "seed", "arrived", "failed", "allocated_100", "allocated_130",
          "bound_100", "bound_130", "fragmented_100", "fragmented_130", "moves", "moved_pods",
          "replay_s", "seconds",
          "status", "file", "error")

#: Columns of the Markdown table: field and heading.
MARKDOWN = (("policy", "policy"), ("seed", "seed"), ("arrived", "pods arrived"),
            ("failed", "failed"), ("allocated_100", "allocated % at 100% arrived"),
            ("allocated_130", "at 130%"), ("fragmented_100", "fragmented % at 100%"),
            ("seconds", "seconds"), ("status", "status"))

#: Columns of the means table (CSV), in order.
MEAN_FIELDS = ("pods", "policy", "seeds", "allocated_100", "published_100", "bound_100",
               "allocated_130", "published_130", "bound_130", "fragmented_100", "replay_s",
               "seconds")

#: Columns of the Markdown means table: field and heading.
MEAN_MARKDOWN = (("pods", "pods"), ("policy", "policy"), ("seeds", "seeds"),
                 ("allocated_100", "allocated % at 100%"), ("published_100", "published"),
                 ("bound_100", "bound"), ("allocated_130", "at 130%"),
                 ("published_130", "published"), ("bound_130", "bound"),
                 ("fragmented_100", "fragmented % at 100%"), ("replay_s", "replay s"),
                 ("seconds", "s per seed"))


def replay_result(result: ReplayResult) -> Result:
    """A replay's end state by index: one segment per placed pod, the failed ones unplaced."""
    instance = result.instance
    placed = np.flatnonzero(result.node >= 0)
    nodes = result.node[placed]
    # One GPU model per node (the replay's cluster refuses others): a CPU-only pod is
    # placed "by" its node's model, which its eligibility was checked against.
    node_type = np.argmax(instance.node_gpus > 0, axis=1)
    types = node_type[nodes]
    return Result(
        status=Status.FEASIBLE,
        objective=float(result.used_milli[-1]) if len(result.used_milli) else 0.0,
        bound=None,
        solver=result.policy,
        job=placed.astype(np.int64),
        gpu_type=types.astype(np.int64),
        start=np.zeros(placed.size),
        end=instance.duration[placed, types],
        gpus=tuple(result.global_gpus(int(pod)) for pod in placed),
        node=nodes.astype(np.int64),
        unplaced={int(pod): f"no node passed the filters when it arrived (pod {pod + 1} of "
                  f"{instance.n_jobs})" for pod in np.flatnonzero(result.node < 0)},
    )


def replay_schedule(result: ReplayResult) -> Schedule:
    """The replay's end state as a static max-weight schedule, verified.

    Raises
    ------
    VerificationError
        If the verifier rejects it: a bug of the replay or the policy, never of the input.
    """
    instance = result.instance
    schedule = Schedule.from_result(instance, replay_result(result), f"replay:{result.policy}",
                                    result.seconds, result.seed)
    return _verified(instance, schedule, f"replay {result.policy} (seed {result.seed})")


def time_run(instance: Instance, policy: str | type[SharePolicy], seed: int = 0,
             speedup: float = 1.0, specs: Sequence[str] | None = None,
             options: Mapping[str, Any] | None = None) -> TimelineResult:
    """A time replay (:func:`~gpuplan.sharing.timeline.time_replay`), its schedule verified.

    Raises
    ------
    VerificationError
        If the verifier rejects the run: a bug of the replay or the policy.
    """
    timeline = time_replay(instance, policy, seed, speedup, specs, options)
    return dataclasses.replace(timeline, schedule=_verified(
        timeline.instance, timeline.schedule, f"time replay {timeline.policy} (seed {seed})"))


def _verified(instance: Instance, schedule: Schedule, what: str) -> Schedule:
    """The schedule with its verification; a violation is a bug, raised, never repaired."""
    verification = verify_schedule(instance, schedule)
    if not verification.ok:
        raise VerificationError(what, [str(v) for v in verification.violations])
    return schedule.model_copy(update={"verification": verification})


@functools.lru_cache(maxsize=4)
def _trace(nodes: str, pods: str) -> tuple[Instance, tuple[str, ...]]:
    """The openb trace and its pods' raw ``gpu_spec`` texts, read once per worker process."""
    return read_openb(nodes, pods), gpu_specs(pods)


@dataclass(frozen=True)
class ReplayPoint:
    """One replay to run: the trace, the policy and seed, and where its schedule goes.

    Plain data, so that it pickles to a worker process or a Dask worker.

    Attributes
    ----------
    nodes, pods
        The openb node list and pod list.
    policy
        A registered sharing policy.
    seed
        FGD's tuning seed.
    ratio
        ``fgd`` replays: inflate the GPU request to this multiple of capacity.
    target
        The verified schedule's file; empty: not written.
    kind
        ``fgd`` (the paper's static replay) or ``time`` (arrivals and departures,
        :func:`gpuplan.sharing.timeline.time_replay`).
    speedup
        ``time`` replays: divide the arrival times by this.
    migrate
        ``fgd`` replays: at most this many running pods moved per pod no node takes
        (:class:`~gpuplan.sharing.migrate.Defragmenter`); 0: no migration.
    migrate_budget
        With ``migrate``: at most this share of the pods arrived so far moved in all; None:
        no global cap.
    options
        The policy's own settings by name.
    """

    nodes: str
    pods: str
    policy: str
    seed: int
    ratio: float = PAPER_RATIO
    target: str = ""
    kind: str = "fgd"
    speedup: float = 1.0
    migrate: int = 0
    migrate_budget: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


def _bounds(result: ReplayResult) -> dict[str, float]:
    """The fill LP's proven bound (% of GPUs) on the pods arrived by 100% and 130%.

    At each point the pods are those FGD's curve can have seen there
    (:func:`~gpuplan.sharing.bound.arrived_ends`), so the bound holds every row it averages.
    """
    pods = np.arange(result.instance.n_jobs)
    ends = arrived_ends(result.instance, pods)
    return {f"bound_{a}": allocation_bound(result.instance, pods[:ends[a]]).percent
            for a in (100, 130)}


def _row(point: ReplayPoint, result: ReplayResult) -> Row:
    curves = result.curves()
    return {
        "pods": Path(point.pods).stem, "policy": point.policy, "seed": point.seed,
        "arrived": result.instance.n_jobs, "failed": int((result.node < 0).sum()),
        "allocated_100": float(curves["allocated"][100]),
        "allocated_130": float(curves["allocated"][130]),
        "fragmented_100": float(curves["fragmented"][100]),
        "fragmented_130": float(curves["fragmented"][130]),
        "replay_s": result.seconds,
        "moves": len(result.moves),
        "moved_pods": len({move.pod for move in result.moves}),
        **_bounds(result),
        "status": "ok", "file": point.target, "error": "",
        "curves": {key: [None if math.isnan(v) else v for v in values.tolist()]
                   for key, values in curves.items()},
    }


def failed_row(point: ReplayPoint, seconds: float | None, exc: BaseException | str) -> Row:
    """The row of a replay that raised or whose process died."""
    if isinstance(exc, InputError | BackendUnavailableError):
        status = "error"
    elif isinstance(exc, VerificationError):
        status = "rejected"
    else:
        status = "failed"
    text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    return {"pods": Path(point.pods).stem, "policy": point.policy, "seed": point.seed,
            "speedup": point.speedup if point.kind == "time" else None,
            "seconds": seconds, "status": status, "file": point.target,
            "error": text[:MAX_ERROR]}


def share_policy(name: str) -> str | type[SharePolicy]:
    """A registered policy's name as it is, ``rl:DIR`` as the trained policy's class.

    Raises
    ------
    InputError
        For ``rl:DIR``: the extra ``rl`` is missing, or the folder is not a placement
        policy folder.
    """
    if not name.startswith("rl:"):
        return name
    from gpuplan.rl import require

    require("--policy rl:DIR")
    from gpuplan.rl.placement import learned_share_policy

    return learned_share_policy(name.removeprefix("rl:"))


def _replayed(point: ReplayPoint) -> tuple[Schedule, Row]:
    """Run one point: its verified schedule and its row."""
    trace, specs = _trace(point.nodes, point.pods)
    policy = share_policy(point.policy)
    if point.kind == "time":
        timeline = time_run(trace, policy, point.seed, point.speedup, specs,
                            point.options)
        times, share = timeline.series
        return timeline.schedule, {
            "pods": Path(point.pods).stem, "policy": point.policy, "seed": point.seed,
            "speedup": point.speedup, **timeline.metrics, "status": "ok",
            "file": point.target, "error": "",
            "series": [times.tolist(), share.tolist()]}
    rescue = (Defragmenter(point.migrate, point.migrate_budget) if point.migrate else None)
    result = replay(trace, policy, point.seed, point.ratio, specs, rescue=rescue,
                    options=point.options)
    return replay_schedule(result), _row(point, result)


def run_point(point: ReplayPoint) -> Row:
    """Replay one point, verify its schedule and write it; a row, never an exception.

    Any exception but ``KeyboardInterrupt`` and ``SystemExit`` becomes the row's error.
    """
    began = time.perf_counter()
    try:
        schedule, row = _replayed(point)
        if point.target:
            try:
                write_text_atomic(Path(point.target), schedule.to_json())
            except OSError as exc:
                raise InputError(point.target, "", "cannot write the schedule: "
                                 f"{exc.strerror or exc}") from None
    except Exception as exc:  # any error is this point's row, never the whole run's end
        return failed_row(point, time.perf_counter() - began, exc)
    return {**row, "seconds": time.perf_counter() - began}


#: Replay points as tasks of :func:`gpuplan.harness.batch.run_tasks`.
REPLAYS: TaskKind[ReplayPoint] = TaskKind(
    work=run_point, failed=failed_row, target=lambda point: Path(point.target),
    written=lambda point: None)


def mean_rows(rows: Sequence[Row]) -> list[Row]:
    """One row per (pod list, policy): the mean over its seeds that ran, with the published.

    Rows that failed are left out of the means; ``seeds`` counts the ones that ran.
    """
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        if row.get("status") == "ok":
            groups.setdefault((row["pods"], row["policy"]), []).append(row)
    means = []
    for (pods, policy), mine in groups.items():
        published = PUBLISHED.get(pods, {}).get(policy)
        mean = {key: float(np.mean([row[key] for row in mine]))
                for key in ("allocated_100", "allocated_130", "bound_100", "bound_130",
                            "fragmented_100", "moves", "replay_s", "seconds")}
        means.append({"pods": pods, "policy": policy, "seeds": len(mine), **mean,
                      "published_100": None if published is None else published[0],
                      "published_130": None if published is None else published[1]})
    return means


def curve_table(rows: Sequence[Row]) -> str:
    """The curves of every run as CSV: pods, policy, seed, curve, then 0..130 arrived."""
    header = ["pods", "policy", "seed", "curve", *(str(a) for a in ARRIVED_PERCENT.tolist())]
    lines = []
    for row in rows:
        curves: Mapping[str, list[Any]] = row.get("curves", {})
        for name, values in curves.items():
            lines.append([row["pods"], row["policy"], row["seed"], name,
                          *("" if v is None else f"{v:g}" for v in values)])
    return csv_text(header, lines)


#: Columns of a time replay's results table (CSV), in order.
TIME_FIELDS = ("pods", "policy", "seed", "speedup", "placed", "failed", "waited_share",
               "pending_mean_s", "pending_p95_s", "pending_max_s", "allocated_mean",
               "allocated_peak", "span_days", "seconds", "status", "file", "error")

#: Columns of a time replay's Markdown table: field and heading.
TIME_MARKDOWN = (("policy", "policy"), ("seed", "seed"), ("placed", "pods placed"),
                 ("failed", "failed"), ("waited_share", "share that waited"),
                 ("pending_mean_s", "pending mean s"), ("pending_p95_s", "p95 s"),
                 ("pending_max_s", "max s"), ("allocated_mean", "GPU share held, mean"),
                 ("allocated_peak", "peak"), ("seconds", "seconds"), ("status", "status"))


def write_time_results(rows: Sequence[Row], out: Path) -> tuple[Path, ...]:
    """Write a time replay's results.csv and results.md in ``out``, atomically."""
    return write_tables(rows, out, TIME_FIELDS, TIME_MARKDOWN)


def write_results(rows: Sequence[Row], out: Path) -> tuple[Path, ...]:
    """Write results.csv/.md (per run), means.csv/.md and curves.csv in ``out``, atomically."""
    per_run = write_tables(rows, out, FIELDS, MARKDOWN)
    means = write_tables(mean_rows(rows), out, MEAN_FIELDS, MEAN_MARKDOWN, stem="means")
    curves = out / "curves.csv"
    write_text_atomic(curves, curve_table(rows))
    return (*per_run, *means, curves)
