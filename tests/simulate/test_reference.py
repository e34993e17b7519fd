"""The engine against a reference simulator written from the documented rules alone.

The reference below knows nothing of the engine: it steps from instant to instant (every
arrival and completion), frees the GPUs of the jobs that end, then offers GPUs to the
waiting jobs in the scheduler's order (fifo: arrival; sjf: run time on the fastest type,
then arrival), each on the first type, fastest first, where a node has its whole gang
free, on the node with the fewest such GPUs (best-fit; lowest index on a tie). On seeded
multi-node workloads with mixed gangs and types, every job's start and end must agree
exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import instance_from

from gpuplan.core.instance import Instance
from gpuplan.readers.generate import generate_document
from gpuplan.simulate import RunSpec, simulate


def reference(instance: Instance, scheduler: str) -> dict[str, tuple[float, float]]:
    """Each job's (start, end) under non-preemptive ``fifo`` or ``sjf``, best-fit."""
    n = instance.n_jobs
    duration = np.where(instance.eligible, instance.duration, np.inf)
    # The order's key of each job: arrival (fifo), or run time then arrival (sjf).
    first = duration.min(axis=1) if scheduler == "sjf" else np.zeros(n)
    rank = [(float(first[j]), float(instance.release[j]), j) for j in range(n)]
    free = instance.node_gpus.astype(int).copy()
    started: dict[int, tuple[float, float, int, int]] = {}
    ended: set[int] = set()
    instants = sorted(set(instance.release.tolist()))
    while len(ended) < n:
        now = instants.pop(0)
        for j, (_, end, node, kind) in started.items():
            if j not in ended and end <= now:
                ended.add(j)
                free[node, kind] += int(instance.gang[j])
        waiting = sorted((rank[j], j) for j in range(n)
                         if j not in started and instance.release[j] <= now)
        for _, j in waiting:
            gang = int(instance.gang[j])
            for kind in np.argsort(duration[j], kind="stable").tolist():
                if not instance.eligible[j, kind]:
                    continue
                fits = np.flatnonzero(free[:, kind] >= gang)
                if fits.size:
                    node = int(fits[np.argmin(free[fits, kind])])
                    end = now + float(duration[j, kind])
                    started[j] = (now, end, node, kind)
                    free[node, kind] -= gang
                    instants = sorted({*instants, end})
                    break
    return {instance.job_ids[j]: (start, end) for j, (start, end, _, _) in started.items()}


def workload(seed: int) -> Instance:
    """24 jobs, gangs of 1-4 GPUs, four nodes of four GPUs of three types, over an hour."""
    return instance_from(generate_document(jobs=24, nodes=4, seed=seed, gpus_per_node=4,
                                           arrival_window_s=3600.0,
                                           objective="weighted-completion")).online()


@pytest.mark.parametrize("scheduler", ["fifo", "sjf"])
@pytest.mark.parametrize("seed", range(8))
def test_every_start_and_end_agrees_with_the_reference(scheduler: str, seed: int) -> None:
    """Each job starts and ends when the reference says, to the last bit."""
    instance = workload(seed)
    schedule = simulate(instance, RunSpec(scheduler=scheduler))
    ran = {s.job: (s.start_s, s.end_s) for s in schedule.segments}
    assert ran == reference(instance, scheduler)
