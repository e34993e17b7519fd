r"""What ``gpuplan run`` sees of a Slurm cluster and what it asks of it.

The operator talks to Slurm through its commands only (no plug-in): ``scontrol -o -d show
job`` (every job's state, times, nodes and GPU indices, one line each), ``sinfo -N``
(node states), ``sbatch`` (submit), ``scontrol update`` (a pending job's begin time or
dependency) and ``scancel``. :class:`SlurmCluster` runs them with ``SLURM_CONF`` and
``TZ=UTC`` (Slurm prints and reads local times; the operator's clock is UTC);
:class:`DryRun` prints what it would change and changes nothing. Both are
:class:`Cluster`\ s, the operator's one plug-in point for a cluster.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from gpuplan.core.errors import InputError
from gpuplan.readers.slurm import DONE, RUNNING, SLURM_HELD, SLURM_STATES, expand_hostlist
from gpuplan.readers.slurm import ENDED as FAILED

#: Slurm job states after which a job holds nothing and will not run again by itself.
ENDED = frozenset(state for state, kind in SLURM_STATES.items() if kind in (DONE, FAILED))
#: Slurm job states in which a job holds its nodes.
HOLDING = frozenset(state for state, kind in SLURM_STATES.items() if kind == RUNNING) \
    | frozenset(SLURM_HELD)
#: Node states (``sinfo %T``, without the flags ``*~#!%$@^-``) in which a node takes no
#: new job.
UNAVAILABLE = frozenset({"down", "drained", "draining", "drain", "fail", "failing",
                         "maint", "future", "unknown", "not_responding", "powered_down",
                         "powering_down", "reboot_issued", "reboot_requested"})
#: Seconds one Slurm command may take before the cluster counts as unreachable.
COMMAND_TIMEOUT_S = 60.0

_KEY = re.compile(r"(?:^|\s)([A-Za-z_:/]+)=")
_GRES_INDEX = re.compile(r"\(IDX:([0-9,\-]+)\)")


@dataclass(frozen=True)
class SlurmJob:
    """One Slurm job as ``scontrol show job`` gives it.

    Attributes
    ----------
    slurm_id
        Its Slurm job id.
    name
        Its name (``gpuplan run`` names each after its gpuplan job).
    state
        Its Slurm state (``PENDING``, ``RUNNING``, ``COMPLETED``, ``NODE_FAIL``, ...).
    start, end
        When it started and ended (UTC); None before.
    nodes
        The nodes it runs or ran on.
    gpus
        Per node, the indices of the GPUs it holds (Slurm's GRES indices), while it runs.
    reason
        Why it waits, for a pending job.
    """

    slurm_id: str
    name: str
    state: str
    start: datetime | None
    end: datetime | None
    nodes: tuple[str, ...] = ()
    gpus: dict[str, tuple[int, ...]] = field(default_factory=dict)
    reason: str = ""


@dataclass(frozen=True)
class Snapshot:
    """The cluster at one instant: its jobs by Slurm id and its unavailable nodes."""

    time: datetime
    jobs: dict[str, SlurmJob]
    unavailable: frozenset[str]


class Cluster(Protocol):
    """A Slurm cluster the operator watches and changes."""

    def snapshot(self) -> Snapshot:
        """Every job Slurm still knows and every node that takes no new job."""

    def refuses(self, script: Path) -> str | None:
        """Why Slurm would refuse the batch script (``sbatch --test-only``); None: it would not."""

    def submit(self, script: Path, dependency: Sequence[str]) -> str:
        """Submit a batch script that waits (``afterok``) for these job ids; its id."""

    def set_begin(self, slurm_id: str, begin: datetime) -> None:
        """Move a pending job's begin time."""

    def set_dependency(self, slurm_id: str, dependency: Sequence[str]) -> None:
        """Make a pending job wait (``afterok``) for these job ids instead."""

    def cancel(self, slurm_id: str) -> None:
        """Cancel a job, pending or running."""


def _pairs(line: str) -> list[tuple[str, str]]:
    """The ``key=value`` pairs of one ``scontrol -o`` line, in order (keys repeat)."""
    keys = list(_KEY.finditer(line))
    return [(m.group(1), line[m.end():keys[k + 1].start() if k + 1 < len(keys) else None]
             .strip()) for k, m in enumerate(keys)]


def _time(text: str) -> datetime | None:
    if text in ("", "Unknown", "None", "N/A", "(null)"):
        return None
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _indices(text: str) -> tuple[int, ...]:
    found: list[int] = []
    for piece in text.split(","):
        first, _, last = piece.partition("-")
        found += range(int(first), int(last or first) + 1)
    return tuple(found)


def parse_jobs(text: str, source: str) -> dict[str, SlurmJob]:
    """The jobs of ``scontrol -o -d show job`` output, by Slurm id.

    With ``-d`` each node a running job holds is a ``Nodes=... GRES=gpu:T:N(IDX:a-b)``
    group of the line; the indices are the node's GPUs in ``gres.conf`` order.
    """
    jobs: dict[str, SlurmJob] = {}
    for line in text.splitlines():
        if not line.startswith("JobId="):
            continue
        pairs = _pairs(line)
        first = dict(reversed(pairs))
        gpus: dict[str, tuple[int, ...]] = {}
        node_group: list[str] = []
        for key, value in pairs:
            if key == "Nodes":
                node_group = expand_hostlist(value, source, f"job {first['JobId']}")
            elif key == "GRES" and node_group:
                found = _GRES_INDEX.search(value)
                if found:
                    for node in node_group:
                        gpus[node] = _indices(found.group(1))
        listed = first.get("NodeList", "")
        nodes = tuple(expand_hostlist(listed, source, f"job {first['JobId']}")) \
            if listed not in ("", "(null)") else ()
        state = first.get("JobState", "UNKNOWN").split()[0]
        jobs[first["JobId"]] = SlurmJob(
            first["JobId"], first.get("JobName", ""), state,
            _time(first.get("StartTime", "")) if state not in ("PENDING",) else None,
            _time(first.get("EndTime", "")) if state in ENDED else None,
            nodes, gpus, first.get("Reason", ""))
    return jobs


def parse_nodes(text: str) -> frozenset[str]:
    """The nodes of ``sinfo -h -N -o '%N|%T'`` that take no new job."""
    down = set()
    for line in text.splitlines():
        node, _, state = line.strip().partition("|")
        base = state.rstrip("*~#!%$@^-").lower()
        if node and (base in UNAVAILABLE or state.endswith("*")):
            down.add(node)
    return frozenset(down)


class SlurmCluster:
    """A real Slurm cluster, through its commands.

    Parameters
    ----------
    conf
        Its ``slurm.conf`` (``SLURM_CONF``); None: the environment's.
    workdir
        Where batch jobs start (their output files land here).

    Raises
    ------
    InputError
        If Slurm's commands are not installed, ``conf`` is missing, or ``scontrol ping``
        finds no controller.
    """

    def __init__(self, conf: str | None, workdir: Path) -> None:
        self.env = {**os.environ, "TZ": "UTC"}
        where = "--slurm-conf" if conf else "SLURM_CONF"
        if conf is not None:
            if not Path(conf).is_file():
                raise InputError("--slurm-conf", "", f"{conf}: no such file")
            self.env["SLURM_CONF"] = str(Path(conf).resolve())
        self.workdir = workdir
        for command in ("sbatch", "scontrol", "sinfo", "scancel"):
            if shutil.which(command) is None:
                raise InputError(where, "", f"Slurm's {command} is not installed here")
        done = self._run("scontrol", "ping", check=False)
        if " is UP" not in done.stdout:
            raise InputError(where, "", "no Slurm controller answers (scontrol ping: "
                             f"{(done.stdout + done.stderr).strip() or 'no answer'})")

    def _run(self, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        try:
            # Batch jobs start in the run's folder; until it exists (checks), anywhere.
            cwd = self.workdir if self.workdir.is_dir() else None
            done = subprocess.run(command, env=self.env, cwd=cwd, text=True,
                                  capture_output=True, timeout=COMMAND_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise SlurmError(f"{' '.join(command)}: no answer in {COMMAND_TIMEOUT_S:g} s") \
                from None
        if check and done.returncode != 0:
            raise SlurmError(f"{' '.join(command)}: {done.stderr.strip() or done.stdout}")
        return done

    def snapshot(self) -> Snapshot:
        """See :meth:`Cluster.snapshot`."""
        now = datetime.now(UTC)
        jobs = self._run("scontrol", "-o", "-d", "show", "job", check=False)
        if jobs.returncode != 0 and "No jobs" not in jobs.stdout + jobs.stderr:
            raise SlurmError(f"scontrol show job: {jobs.stderr.strip()}")
        nodes = self._run("sinfo", "-h", "-N", "-o", "%N|%T")
        return Snapshot(now, parse_jobs(jobs.stdout, "scontrol show job"),
                        parse_nodes(nodes.stdout))

    def refuses(self, script: Path) -> str | None:
        """See :meth:`Cluster.refuses`."""
        done = self._run("sbatch", "--test-only", str(script), check=False)
        if done.returncode == 0:
            return None
        return (done.stderr or done.stdout).strip().removeprefix("sbatch: error: ")

    def submit(self, script: Path, dependency: Sequence[str]) -> str:
        """See :meth:`Cluster.submit`; the job is not requeued by Slurm if its node fails."""
        after = [f"--dependency=afterok:{':'.join(dependency)}"] if dependency else []
        done = self._run("sbatch", "--parsable", "--no-requeue", *after, str(script))
        return done.stdout.strip().split(";")[0]

    def set_begin(self, slurm_id: str, begin: datetime) -> None:
        """See :meth:`Cluster.set_begin`."""
        self._run("scontrol", "update", f"JobId={slurm_id}",
                  f"StartTime={begin.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S')}")

    def set_dependency(self, slurm_id: str, dependency: Sequence[str]) -> None:
        """See :meth:`Cluster.set_dependency`."""
        self._run("scontrol", "update", f"JobId={slurm_id}",
                  "Dependency=" + (f"afterok:{':'.join(dependency)}" if dependency else ""))

    def cancel(self, slurm_id: str) -> None:
        """See :meth:`Cluster.cancel`."""
        self._run("scancel", slurm_id)


class SlurmError(RuntimeError):
    """A Slurm command failed or did not answer while the operator ran."""


class DryRun:
    """A cluster that records what the operator would do and changes nothing.

    It sees the real cluster when given one (``inner``), else an empty one; a submitted
    job gets the id ``dry-N`` and stays pending.
    """

    def __init__(self, inner: Cluster | None) -> None:
        self.inner = inner
        self.actions: list[str] = []

    def snapshot(self) -> Snapshot:
        """See :meth:`Cluster.snapshot`."""
        if self.inner is not None:
            return self.inner.snapshot()
        return Snapshot(datetime.now(UTC), {}, frozenset())

    def refuses(self, script: Path) -> str | None:
        """See :meth:`Cluster.refuses`: the real cluster's answer, if there is one."""
        return None if self.inner is None else self.inner.refuses(script)

    def submit(self, script: Path, dependency: Sequence[str]) -> str:
        """See :meth:`Cluster.submit`."""
        self.actions.append("sbatch --parsable --no-requeue "
                            + (f"--dependency=afterok:{':'.join(dependency)} "
                               if dependency else "") + str(script))
        return f"dry-{len(self.actions)}"

    def set_begin(self, slurm_id: str, begin: datetime) -> None:
        """See :meth:`Cluster.set_begin`."""
        self.actions.append(f"scontrol update JobId={slurm_id} "
                            f"StartTime={begin.strftime('%Y-%m-%dT%H:%M:%S')}")

    def set_dependency(self, slurm_id: str, dependency: Sequence[str]) -> None:
        """See :meth:`Cluster.set_dependency`."""
        self.actions.append(f"scontrol update JobId={slurm_id} Dependency=afterok:"
                            f"{':'.join(dependency)}")

    def cancel(self, slurm_id: str) -> None:
        """See :meth:`Cluster.cancel`."""
        self.actions.append(f"scancel {slurm_id}")
