r"""The operator's state file and run log: what was planned, asked of Slurm, and happened.

One document serves both: ``gpuplan run`` rewrites it (atomically) after every change, so
that a run stopped by Ctrl-C or a crash resumes from it (``--resume``), and the last one
it writes, once every job has ended, is the run log ``gpuplan check`` verifies. Times are
seconds after :attr:`RunState.epoch` (UTC); every job's Slurm jobs are its
:class:`Attempt`\ s, in order; every plan in force is a :class:`PlanRecord`.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gpuplan._version import __version__
from gpuplan.core.errors import InputError
from gpuplan.core.files import parse_json, read_text, write_text_atomic
from gpuplan.core.schedule import validated

#: The ``kind`` of the document.
KIND = "gpuplan-run"


def is_run_log(path: str | Path) -> bool:
    """Whether the file starts as a run log does (its ``kind`` first), without reading it all."""
    if not Path(path).is_file():
        return False  # a FIFO would block; the schedule reader says what it is
    try:
        with open(path, "rb") as handle:
            head = handle.read(256)
    except OSError:
        return False
    return re.match(rb'\s*\{\s*"kind"\s*:\s*"gpuplan-run"', head) is not None


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)


class Slot(_Strict):
    """Where and when a plan runs a job."""

    job: str
    start_s: float
    end_s: float
    gpu_type: str
    nodes: list[str]
    gpu_ids: list[str]


class PlanRecord(_Strict):
    """One plan the operator put in force, and what applying it changed in Slurm.

    ``moved`` are jobs with a pending Slurm job whose nodes, GPU type or begin time the
    plan changed (one definition, the same as ``gpuplan replan`` and ``diff``: other GPUs
    or a start more than ``same_start_s`` away); ``resubmitted`` the moved ones whose nodes
    or type changed (cancelled and submitted again); ``submitted`` the jobs given a first
    or a new Slurm job (new, failed, or lost on a failed node); ``held`` the jobs the plan
    could not place.
    """

    at_s: float
    reason: str
    method: str
    status: str
    objective: float | None
    bound: float | None
    plan_seconds: float = Field(description="Wall seconds the planning took.")
    applied_after_s: float = Field(
        description="Wall seconds from the snapshot that showed the change to the plan "
        "applied in Slurm.")
    slots: list[Slot]
    kept: int = 0
    moved: list[str] = Field(default_factory=list)
    resubmitted: list[str] = Field(default_factory=list)
    submitted: list[str] = Field(default_factory=list)
    held: dict[str, str] = Field(default_factory=dict)


class Attempt(_Strict):
    """One Slurm job of a gpuplan job: what was asked, and what happened to it."""

    slurm_id: str
    submitted_s: float
    nodes: list[str]
    gpu_type: str
    begin_s: float
    dependency: list[str] = Field(default_factory=list)
    state: str = "PENDING"
    start_s: float | None = None
    end_s: float | None = None
    ran_on: list[str] = Field(default_factory=list, description="The nodes it ran on.")
    gpu_ids: list[str] = Field(default_factory=list)
    planned_start_s: float | None = Field(
        default=None, description="The start the plan in force gave it when it started.")
    decided_by: Literal["plan", "slurm"] | None = Field(
        default=None, description="plan: it started where and (within the tolerance) when "
        "the plan in force said; slurm: Slurm started it elsewhere or later.")
    cancelled_because: str | None = None


class JobRecord(_Strict):
    """A gpuplan job's Slurm jobs, and whether the operator is done with it."""

    attempts: list[Attempt] = Field(default_factory=list)
    outcome: Literal["completed", "given_up"] | None = None
    why: str = ""


class NodeDown(_Strict):
    """A node that took no new job from ``from_s`` (to ``until_s``, if it came back)."""

    node: str
    from_s: float
    until_s: float | None = None


class RunState(_Strict):
    """The whole document (:data:`KIND`)."""

    kind: Literal["gpuplan-run"] = "gpuplan-run"
    gpuplan_version: str = __version__
    instance: str = Field(description="The instance file, as given.")
    instance_name: str
    epoch: datetime
    slurm_conf: str | None
    method: str
    time_limit_s: float
    speedup: float = 1.0
    rehearse: bool = False
    tolerance_s: float
    jobs: dict[str, JobRecord]
    plans: list[PlanRecord] = Field(default_factory=list)
    down: list[NodeDown] = Field(default_factory=list)
    finished: bool = False
    interrupted: bool = False

    @classmethod
    def read(cls, path: str | Path) -> RunState:
        """Read a state file or run log.

        Raises
        ------
        InputError
            Naming the file, the JSON path of the field and the problem.
        """
        text = read_text(Path(path))
        data = parse_json(text, str(path))
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise InputError(str(path), "kind", f"not a gpuplan run log (kind {KIND!r})")
        return validated(cls, text, str(path))

    def write(self, path: Path) -> None:
        """Write the document atomically."""
        write_text_atomic(path, self.model_dump_json(indent=1) + "\n")

    def current(self, job: str) -> Attempt | None:
        """The job's last Slurm job, if any."""
        attempts = self.jobs[job].attempts
        return attempts[-1] if attempts else None

    def last_plan(self) -> dict[str, Slot]:
        """The slots of the plan in force, by job."""
        return {s.job: s for s in self.plans[-1].slots} if self.plans else {}
