"""Schedule JSON v1: the one result document every method produces.

The pydantic models are the format's definition (``gpuplan schema schedule`` publishes them)
and give a lossless JSON round trip. A schedule is only written once the verifier has
filled in :attr:`Schedule.verification`.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuplan.errors import InputError, json_path, validation_message
from gpuplan.io import parse_json, read_text, write_text_atomic
from gpuplan.status import Status

FORMAT_VERSION = 1

class ViolationKind(StrEnum):
    """The constraint a violation breaks."""

    REFERENCE = "reference"
    DUPLICATE = "duplicate"
    UNPLACED = "unplaced"
    GANG = "gang"
    TYPE = "type"
    DURATION = "duration"
    #: A preemptible job's segments overlap, or do not add up to its work.
    SEGMENT = "segment"
    START = "start"
    RELEASE = "release"
    DEADLINE = "deadline"
    DEPENDENCY = "dependency"
    CAPACITY = "capacity"
    OBJECTIVE = "objective"
    BOUND = "bound"
    #: The status claims what the schedule does not show (optimal without a proof, a plan
    #: in an infeasible file).
    STATUS = "status"


class _Model(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)


class Placement(_Model):
    """Where and when one job runs."""

    job: str
    node: str
    gpu_type: str
    gpu_ids: list[str] = Field(description='GPU ids "<node>/<k>", one per GPU of the gang.')
    start_s: float
    end_s: float


class Unplaced(_Model):
    """A job the schedule leaves out, and why."""

    job: str
    reason: str


class Violation(_Model):
    """One broken constraint, as one readable line."""

    kind: ViolationKind
    message: str

    def __str__(self) -> str:
        return f"[{self.kind.value}] {self.message}"


class Verification(_Model):
    """The verifier's verdict, recomputed from the instance alone."""

    ok: bool
    violations: list[Violation] = Field(default_factory=list)
    objective: float | None = Field(
        default=None, description="The objective value the verifier recomputed."
    )


class Schedule(_Model):
    """A plan for one instance, with its status, quality certificate and verification."""

    format_version: int = Field(default=FORMAT_VERSION, ge=FORMAT_VERSION, le=FORMAT_VERSION)
    instance: str = Field(description="Name of the instance planned.")
    objective_kind: str = Field(description="The objective planned for.")
    status: Status
    objective: float | None = Field(description="Objective value of the plan; null if none.")
    bound: float | None = Field(
        description="Proven bound on the optimum (lower for minimisation); null if none."
    )
    gap: float | None = Field(description="|objective - bound| / |objective|; null if unknown.")
    method: str
    solver: str
    wall_time_s: float
    seed: int
    gpuplan_version: str
    placements: list[Placement]
    unplaced: list[Unplaced]
    verification: Verification | None = Field(
        default=None, description="Always present in written schedules."
    )

    def to_json(self) -> str:
        """Serialise as indented JSON."""
        return self.model_dump_json(indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str) -> Schedule:
        """Parse a schedule document.

        Raises
        ------
        InputError
            Naming the file, the JSON path and the problem.
        """
        # Parsed once strictly for what pydantic's parser lets pass (keys given twice, deep
        # nesting, over-long integers), then validated from the text.
        parse_json(text, source)
        try:
            return cls.model_validate_json(text)
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            raise InputError(source, json_path(error["loc"]), validation_message(error)) from None

    @classmethod
    def read(cls, path: str | Path) -> Schedule:
        """Read a schedule file.

        Raises
        ------
        InputError
            If the file is missing, unreadable or not a valid schedule.
        """
        path = Path(path)
        return cls.from_json(read_text(path), str(path))

    def write(self, path: str | Path) -> None:
        """Write the schedule atomically: a failure never leaves a partial file.

        Raises
        ------
        ValueError
            If the schedule has not been verified: no unverified schedule is ever written.
        """
        if self.verification is None:
            raise ValueError("refusing to write a schedule that has not been verified")
        write_text_atomic(Path(path), self.to_json())
