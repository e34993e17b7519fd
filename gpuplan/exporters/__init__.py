"""What verified schedules are turned into for people and other systems.

Pictures (:mod:`~gpuplan.exporters.plot`) and the files of the cluster managers that run
the jobs: :data:`EXPORTERS`, by the name ``gpuplan export`` takes. Adding one is a module
with an :class:`~gpuplan.exporters.base.Exporter` and a line here.
"""

from gpuplan.exporters.base import Exporter
from gpuplan.exporters.kubernetes import KueueExporter, VolcanoExporter
from gpuplan.exporters.slurm import SlurmConfExporter, SlurmExporter

#: The registered exporters to cluster managers, by name.
EXPORTERS: dict[str, type[Exporter]] = {
    cls.name: cls for cls in (SlurmExporter, SlurmConfExporter, KueueExporter, VolcanoExporter)}

__all__ = ["EXPORTERS", "Exporter"]
