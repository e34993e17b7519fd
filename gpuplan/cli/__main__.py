"""``python -m gpuplan.cli``: the ``gpuplan`` command."""

from gpuplan.cli import run

run()
