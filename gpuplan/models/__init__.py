"""Formulations and relaxations built from an :class:`~gpuplan.core.instance.Instance`.

Each module turns the index-based instance into something a solver backend consumes (or, for
:mod:`gpuplan.models.bounds`, into bounds and infeasibility proofs any method can cite).
Models never import solvers: the data flows from instance to model to backend.
"""
