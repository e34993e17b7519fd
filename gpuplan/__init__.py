"""gpuplan: plan deep-learning jobs onto GPU fleets with optimization, and verify every plan.

The data flows one way: an instance file is read into an immutable, index-based
:class:`~gpuplan.instance.Instance`; a method from :data:`gpuplan.methods.METHODS` builds its
formulation and hands it to a backend from :data:`gpuplan.backends.BACKENDS`, returning an
index-based :class:`~gpuplan.solution.Result`; :func:`~gpuplan.planning.plan` turns that
into a :class:`~gpuplan.schedule.Schedule` and passes it through the independent
:func:`~gpuplan.verify.verify_schedule` before anyone sees it.
"""

from gpuplan._version import __version__
from gpuplan.errors import InputError, VerificationError
from gpuplan.instance import Instance, ObjectiveKind
from gpuplan.methods.base import RunSettings
from gpuplan.planning import plan
from gpuplan.readers import read_instance
from gpuplan.schedule import Schedule, Segment, Unplaced
from gpuplan.status import Status
from gpuplan.verify import verify_schedule

__all__ = [
    "InputError",
    "Instance",
    "ObjectiveKind",
    "RunSettings",
    "Schedule",
    "Segment",
    "Status",
    "Unplaced",
    "VerificationError",
    "__version__",
    "plan",
    "read_instance",
    "verify_schedule",
]
