"""Gavel's measured throughputs and job traces, turned into gpuplan instance documents.

Gavel (Narayanan et al., OSDI 2020) ships per-GPU-type throughputs in steps per second,
``tput[worker_type][str((job_type, scale_factor))]["null"]`` for a job running alone, and job
traces in two tab-separated layouts: the current 10-column one (physical cluster traces)
and an older 7-column one (the Philly-derived ``msr`` traces). A job's duration on a type
is its total steps over its throughput there; a type with zero throughput is not allowed.

Gavel has no memory figures; :data:`MEMORY_GIB` gives per-GPU estimates by model family
and batch size so that memory fit matters (a K80 die has 12 GiB). They are estimates, and
are labelled so in the instances built from them. A measured throughput outranks an
estimate: a job's estimate is capped at the memory of the smallest GPU it was measured on,
so every (job, type) pair Gavel measured stays allowed (ResNet-50 at batch 128 and the
Transformer at batch 256 are estimated above a K80's 12 GiB, yet run there in Gavel).

Gavel's job mix (its generator's gang sizes and run times) lives here once,
:func:`scale_factors` and :func:`run_times_s`, for :func:`synthetic_trace` and
:func:`gpuplan.readers.generate.generate_document` alike.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from gpuplan.core.errors import InputError, setting
from gpuplan.core.files import parse_json, read_text
from gpuplan.core.instance import FloatArray, IntArray

_T = TypeVar("_T")

#: Per-GPU memory estimate (GiB) as base + per-sample * batch size, by model family.
MEMORY_GIB: dict[str, tuple[float, float]] = {
    "ResNet-18": (1.0, 0.018),
    "ResNet-50": (2.0, 0.1),
    "Transformer": (2.0, 0.045),
    "LM": (1.5, 0.1),
    "Recommendation": (0.5, 0.0005),
    "A3C": (1.5, 0.0),
    "CycleGAN": (6.0, 0.0),
}

#: Memory of one GPU of each Gavel worker type (a K80 board holds two 12 GiB dies).
GPU_MEMORY_GIB = {"k80": 12.0, "p100": 16.0, "v100": 16.0}

#: Approximate on-demand cloud prices per GPU-hour (USD) of Gavel's worker types.
PRICES = {"v100": 3.06, "p100": 1.46, "k80": 0.90}

#: Gavel's physical cluster: 8 V100, 16 P100 and 24 K80 in 4-GPU servers.
PHYSICAL_CLUSTER = {"v100": 8, "p100": 16, "k80": 24}

#: Scale factors (GPUs per job) of Gavel's generator and their probabilities (Philly's).
SCALE_FACTORS = np.array([1, 2, 4, 8], dtype=np.int64)
SCALE_PROBABILITIES = np.array([0.7, 0.1, 0.15, 0.05])
#: Run time on the slowest (reference) type is ``60 * 10**U(low, high)`` seconds: the
#: short mode's exponent range, and the long mode's.
SHORT_RUN = (1.5, 3.0)
LONG_RUN = (3.0, 4.0)
#: Share of Gavel's jobs in the long run-time mode.
LONG_SHARE = 0.2

_BATCH = re.compile(r"^(?P<family>.+?) \(batch size (?P<batch>\d+)\)$")


@dataclass(frozen=True)
class TraceJob:
    """One job of a Gavel trace."""

    job_type: str
    total_steps: int
    scale_factor: int
    priority_weight: float
    arrival_time: float


def scale_factors(draws: npt.ArrayLike) -> IntArray:
    """Gavel's scale factors (:data:`SCALE_FACTORS`) for uniform draws in ``[0, 1)``.

    The inverse of the cumulative probabilities, exactly as ``Generator.choice`` maps its
    own draw, so a seed keeps giving the instances it gave.
    """
    cumulative = SCALE_PROBABILITIES.cumsum()
    cumulative /= cumulative[-1]
    return SCALE_FACTORS[np.searchsorted(cumulative, draws, side="right")]


def run_times_s(long: npt.ArrayLike, draws: npt.ArrayLike) -> FloatArray:
    """Gavel's run times in seconds for the mode (long or not) and uniform draws in ``[0, 1)``.

    ``60 * 10**U(low, high)`` over :data:`SHORT_RUN` or :data:`LONG_RUN`, with the uniform
    computed as ``Generator.uniform`` computes it from the same draw.
    """
    low = np.where(long, LONG_RUN[0], SHORT_RUN[0])
    high = np.where(long, LONG_RUN[1], SHORT_RUN[1])
    times: FloatArray = 60.0 * 10 ** (low + (high - low) * np.asarray(draws, dtype=float))
    return times


def memory_estimate(job_type: str) -> float:
    """Estimated per-GPU memory in GiB of a Gavel job type such as ``LM (batch size 20)``.

    Raises
    ------
    KeyError
        If the model family is not in :data:`MEMORY_GIB`.
    """
    match = _BATCH.match(job_type)
    family, batch = (match["family"], int(match["batch"])) if match else (job_type, 0)
    base, per_sample = MEMORY_GIB[family]
    return round(base + per_sample * batch, 2)


def read_throughputs(path: Path) -> dict[str, dict[tuple[str, int], float]]:
    """Read isolated throughputs: worker type -> (job type, scale factor) -> steps/s.

    Raises
    ------
    InputError
        If the file is not Gavel's throughput JSON.
    """
    def parse(raw: dict[str, Any]) -> dict[str, dict[tuple[str, int], float]]:
        out: dict[str, dict[tuple[str, int], float]] = {}
        for worker, table in raw.items():
            out[worker] = {}
            for key, entry in table.items():
                where = f"{worker}[{key!r}].null"
                value = entry.get("null") if isinstance(entry, dict) else None
                if isinstance(value, bool) or not isinstance(value, int | float) or not (
                        math.isfinite(value) and value >= 0):
                    raise _LocatedError(where, f"needs a throughput (steps/s, a number from 0), "
                                   f"got {str(value)[:40]!r}")
                out[worker][_job_key(key)] = float(value)
        return out

    return _parse_throughput_file(path, parse)


class _LocatedError(ValueError):
    """A defect of a throughput file at a JSON path."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(message)
        self.where = where


def _parse_throughput_file(path: Path, parse: Callable[[dict[str, Any]], _T]) -> _T:
    """Read Gavel's throughput JSON and ``parse`` it; any defect is an InputError."""
    try:
        return parse(parse_json(read_text(path), str(path)))
    except _LocatedError as exc:
        raise InputError(str(path), exc.where, str(exc)) from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(str(path), "", f"not a Gavel throughput file: {exc}") from None


#: Pair speeds: worker type -> (job key, partner's job key) -> that job's speed next to
#: the partner, as a share of its throughput alone.
PairSpeeds = dict[str, dict[tuple[tuple[str, int], tuple[str, int]], float]]


def read_pair_speeds(path: Path) -> PairSpeeds:
    """Read Gavel's co-located throughputs as speeds relative to running alone.

    ``tput[worker][str(job)][str(partner)] = [job's steps/s, partner's steps/s]`` when the
    two share a GPU; pairs where either has zero throughput cannot share and are left out.
    Speeds are capped at 1 (a few measurements are noisy above the job alone).

    Raises
    ------
    InputError
        If the file is not Gavel's throughput JSON.
    """
    def parse(raw: dict[str, Any]) -> PairSpeeds:
        speeds: PairSpeeds = {}
        for worker, table in raw.items():
            pairs = speeds.setdefault(worker, {})
            for key, entry in table.items():
                alone = float(entry["null"])
                for partner, both in entry.items():
                    if partner == "null" or alone <= 0 or min(both) <= 0:
                        continue
                    pairs[(_job_key(key), _job_key(partner))] = min(1.0, float(both[0]) / alone)
        return speeds

    return _parse_throughput_file(path, parse)


#: A key of Gavel's throughput tables: a Python tuple literal ``('ResNet-50 (batch size 64)', 4)``,
#: read by pattern rather than evaluated.
_KEY = re.compile(r"""^\(\s*(['"])(.*)\1\s*,\s*(\d{1,6})\s*\)$""")


def _job_key(key: str) -> tuple[str, int]:
    match = _KEY.match(key)
    if match is None:
        raise ValueError(f"unreadable job key {key[:60]!r}; expected ('model', scale)")
    return match.group(2), int(match.group(3))


#: The numeric columns of each trace layout, by column count: (column, field, type).
_LAYOUTS: dict[int, tuple[tuple[int, str, Callable[[str], float]], ...]] = {
    10: ((5, "total_steps", int), (6, "scale_factor", int), (7, "priority_weight", float),
         (9, "arrival_time", float)),
    7: ((4, "total_steps", int), (5, "arrival_time", float), (6, "scale_factor", int)),
}


def read_trace(path: Path) -> list[TraceJob]:
    """Read a Gavel job trace in either column layout (10 columns, or the older 7).

    Raises
    ------
    InputError
        Naming the line, and the field and column that cannot be read.
    """
    jobs = []
    lines = read_text(path).splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        cols = line.split("\t")
        layout = _LAYOUTS.get(len(cols))
        if layout is None:
            raise InputError(str(path), f"line {number}", f"expected 10 or 7 tab-separated "
                             f"columns, found {len(cols)}")
        values: dict[str, float] = {"priority_weight": 1.0}
        for column, field, convert in layout:
            try:
                values[field] = convert(cols[column])
            except ValueError:
                kind = "an integer" if convert is int else "a number"
                raise InputError(str(path), f"line {number}", f"{field} (column {column + 1}):"
                                 f" {cols[column]!r} is not {kind}") from None
        jobs.append(TraceJob(cols[0], int(values["total_steps"]), int(values["scale_factor"]),
                             values["priority_weight"], values["arrival_time"]))
    return jobs


def synthetic_trace(
    throughputs: dict[str, dict[tuple[str, int], float]],
    n_jobs: int,
    seed: int,
    reference: str = "v100",
    long_share: float = LONG_SHARE,
) -> list[TraceJob]:
    """Sample jobs the way Gavel's generator does (``scheduler/utils.py``, ``generate_job``).

    Gavel's job mix (:func:`scale_factors`, :func:`run_times_s`): scale factor 1, 2, 4, 8
    with probability 0.7, 0.1, 0.15, 0.05; run time on the reference type in the long
    mode with probability ``long_share`` (0.2 in Gavel); job type uniform among those
    measured at the scale factor; total steps = run time x reference throughput. All
    arrive at time 0.

    Parameters
    ----------
    throughputs
        From :func:`read_throughputs`.
    n_jobs
        How many jobs.
    seed
        Seed of the numpy random generator.
    reference
        The worker type whose throughput converts run time to steps.
    long_share
        Probability of the long run-time mode.
    """
    rng = np.random.default_rng(seed)
    measured = throughputs[reference]
    jobs = []
    for _ in range(n_jobs):
        # Draws in Gavel's order, job by job, so that a seed keeps giving the same trace.
        scale = int(scale_factors(rng.random()))
        types = sorted(t for (t, s), tput in measured.items() if s == scale and tput > 0)
        job_type = types[int(rng.integers(len(types)))]
        # Gavel's rule: the short mode below 1 - long_share.
        long = not rng.random() < 1.0 - long_share
        run_time = float(run_times_s(long, rng.random()))
        steps = max(1, round(run_time * measured[(job_type, scale)]))
        jobs.append(TraceJob(job_type, steps, scale, 1.0, 0.0))
    return jobs


def trace_document(
    trace: list[TraceJob],
    throughputs: dict[str, dict[tuple[str, int], float]],
    gpus_per_type: dict[str, int],
    gpus_per_node: int,
    price_per_hour: dict[str, float],
    name: str,
    objective: str = "makespan",
    pair_speeds: PairSpeeds | None = None,
) -> dict[str, Any]:
    """Build an instance document for a trace on a fleet of Gavel worker types.

    Parameters
    ----------
    trace
        The jobs, from :func:`read_trace`.
    throughputs
        From :func:`read_throughputs`.
    gpus_per_type
        Fleet size per worker type, e.g. ``{"v100": 8, "p100": 16, "k80": 24}``.
    gpus_per_node
        GPUs per server; a gang runs within one server.
    price_per_hour
        Price of a GPU-hour per worker type.
    name
        The instance name.
    objective
        The objective kind.
    pair_speeds
        From :func:`read_pair_speeds`, for space sharing: each job gets its (job type,
        scale factor) as ``colocation_class`` and the document lists the measured pairs
        among the trace's classes.

    Jobs whose (job type, scale factor) has no measured throughput on any of the types are
    left out, and the description says how many.
    """
    types = list(gpus_per_type)
    nodes = []
    for gpu_type, count in gpus_per_type.items():
        for k in range(0, count, gpus_per_node):
            nodes.append(
                {"id": f"{gpu_type}-{k // gpus_per_node}",
                 "gpus": {gpu_type: min(gpus_per_node, count - k)}}
            )
    jobs = []
    skipped = 0
    for j, job in enumerate(trace):
        duration = {
            t: round(job.total_steps / throughputs[t][(job.job_type, job.scale_factor)], 3)
            for t in types
            if throughputs[t].get((job.job_type, job.scale_factor), 0.0) > 0
        }
        if not duration:
            # Gavel measured no throughput for this scale factor: the job cannot be timed.
            skipped += 1
            continue
        jobs.append(
            {
                "id": f"job{j:04d}",
                "gpus": job.scale_factor,
                "demand": {"memory_gib": min(memory_estimate(job.job_type),
                                             *(GPU_MEMORY_GIB[t] for t in duration)),
                           "compute": 1.0},
                "duration_s": duration,
                "weight": job.priority_weight,
                "release_s": job.arrival_time,
                # Gavel preempts and migrates jobs at round boundaries.
                "preemptible": True,
            }
        )
        if pair_speeds is not None:
            jobs[-1]["colocation_class"] = _class_id((job.job_type, job.scale_factor))
    document: dict[str, Any] = {
        "name": name,
        "description": (
            "Derived from Gavel's measured throughputs (stanford-futuredata/gavel, "
            "simulation_throughputs.json): duration = total steps / isolated throughput per "
            "worker type. Memory demands are per-family estimates, not measurements. Each "
            "job takes whole GPUs (compute 1.0), as in Gavel without space sharing. "
            f"{skipped} trace job(s) without a measured throughput at their scale factor "
            "were left out."
        ),
        "gpu_types": [
            {"id": t, "capacity": {"memory_gib": GPU_MEMORY_GIB[t], "compute": 1.0},
             "cost_per_hour": price_per_hour[t]}
            for t in types
        ],
        "nodes": nodes,
        "jobs": jobs,
        "objective": objective,
    }
    if pair_speeds is not None:
        present = {(job.job_type, job.scale_factor) for job in trace}
        document["colocation"] = [
            {"gpu_type": t, "classes": [_class_id(a), _class_id(b)],
             "speeds": [speed, pair_speeds[t][(b, a)]]}
            for t in types
            for (a, b), speed in sorted(pair_speeds.get(t, {}).items())
            if a <= b and a in present and b in present and (b, a) in pair_speeds[t]
        ]
    return document


def _class_id(key: tuple[str, int]) -> str:
    """A colocation class id for a Gavel (job type, scale factor)."""
    return f"{key[0]} x{key[1]}"


def gavel_documents(trace: Path, throughputs: Path | None, fleet: Mapping[str, int],
                    gpus_per_node: int, space_sharing: bool) -> list[dict[str, Any]]:
    """The instance document of a Gavel trace on a fleet (``gpuplan convert gavel``).

    Parameters
    ----------
    trace
        A Gavel job trace, in either layout; its name (dots as underscores) names the
        instance.
    throughputs
        Gavel's ``simulation_throughputs.json``; required, None only to be refused.
    fleet
        GPUs per worker type, e.g. :data:`PHYSICAL_CLUSTER`.
    gpus_per_node
        GPUs per server; a gang stays in one.
    space_sharing
        Add job classes and the measured pair speeds (:func:`read_pair_speeds`).

    Returns
    -------
    list
        One document, in a list like every converter's.

    Raises
    ------
    InputError
        Naming ``--throughputs`` when there is no throughput file, ``--fleet`` for a
        worker type the file does not measure or without a known price, or the file and
        line that cannot be read.
    """
    if throughputs is None:
        raise InputError(setting("throughputs"), "", "convert gavel needs Gavel's throughput file "
                         "(simulation_throughputs.json)")
    measured = read_throughputs(throughputs)
    unknown = sorted(set(fleet) - set(measured))
    if unknown:
        raise InputError(setting("fleet"), "", f"unknown worker type(s) {', '.join(unknown)}; the "
                         f"throughput file has {', '.join(sorted(measured))}")
    missing = sorted(set(fleet) - set(PRICES))
    if missing:
        raise InputError(setting("fleet"), "", f"no price known for {', '.join(missing)}")
    pairs = read_pair_speeds(throughputs) if space_sharing else None
    return [trace_document(read_trace(trace), measured, dict(fleet), gpus_per_node, PRICES,
                           name=trace.stem.replace(".", "_"), pair_speeds=pairs)]
