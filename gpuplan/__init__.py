"""gpuplan: plan deep-learning jobs onto GPU fleets with optimization, and verify every plan.

The data flows one way: an instance file is read into an immutable, index-based
:class:`~gpuplan.instance.Instance`; a solver from :data:`gpuplan.solvers.SOLVERS` turns it
into a raw :class:`~gpuplan.solvers.base.Result`; :func:`~gpuplan.planning.plan` converts that
into a :class:`~gpuplan.schedule.Schedule` and passes it through the independent
:func:`~gpuplan.verify.verify_schedule` before anyone sees it.
"""

from gpuplan._version import __version__
from gpuplan.errors import InputError, VerificationError
from gpuplan.instance import Instance, ObjectiveKind
from gpuplan.planning import plan
from gpuplan.readers import read_instance
from gpuplan.schedule import Placement, Schedule, Unplaced
from gpuplan.status import Status
from gpuplan.verify import verify_schedule

__all__ = [
    "InputError",
    "Instance",
    "ObjectiveKind",
    "Placement",
    "Schedule",
    "Status",
    "Unplaced",
    "VerificationError",
    "__version__",
    "plan",
    "read_instance",
    "verify_schedule",
]
