"""Many runs at once: batch planning, benchmarks, simulator sweeps and sharing replays.

Runs go to local worker processes or a Dask cluster (:mod:`gpuplan.harness.batch`); every
schedule and run log is verified before it is written.
"""
