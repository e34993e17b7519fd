"""gpuplan: plan deep-learning jobs onto GPU fleets with optimization, and verify every plan.

The data flows one way: an instance file is read into an immutable, index-based
:class:`~gpuplan.core.instance.Instance`; a method from :data:`gpuplan.methods.METHODS` builds its
formulation and hands it to a backend from :data:`gpuplan.backends.BACKENDS`, returning an
index-based :class:`~gpuplan.core.result.Result`; :func:`~gpuplan.planning.plan` turns that
into a :class:`~gpuplan.core.schedule.Schedule` and passes it through the independent
:func:`~gpuplan.verify.verify_schedule` before anyone sees it.
"""

from gpuplan._version import __version__
from gpuplan.core.errors import InputError, VerificationError
from gpuplan.core.instance import Instance
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.core.schedule import Schedule, Segment, Unplaced
from gpuplan.core.settings import RunSettings
from gpuplan.core.status import Status
from gpuplan.planning import plan
from gpuplan.readers import read_instance
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
