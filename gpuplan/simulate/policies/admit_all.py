"""``all``: every job enters the scheduler's view when it arrives."""

from __future__ import annotations

from typing import Any, ClassVar

from gpuplan.core.options import NoOptions
from gpuplan.simulate.policy import PolicyContext, View


class AdmitAll:
    """Admits every job at once; the scheduler alone decides when it runs."""

    name: ClassVar[str] = "all"
    description: ClassVar[str] = "admit every job when it arrives"
    options_type: ClassVar[type[Any]] = NoOptions
    holds_back: ClassVar[bool] = False

    def __init__(self, context: PolicyContext) -> None:
        del context

    def admit(self, view: View, job: int) -> bool:
        """Always."""
        return True
