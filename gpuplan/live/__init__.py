"""Live operation on Slurm: carry a verified plan out and keep it true (``gpuplan run``).

:mod:`~gpuplan.live.cluster` is what the operator sees of Slurm and asks of it;
:mod:`~gpuplan.live.residual` turns the running state into the instance left to plan;
:mod:`~gpuplan.live.operator` is the loop; :mod:`~gpuplan.live.state` its state file
and run log; :mod:`~gpuplan.live.runlog` checks a run log and gives its figures.
"""
