"""Start every job as early as the plan's own order allows: GPUs and order kept, times pulled in.

A plan from a time-limited solve (or one whose jobs turned out shorter than planned)
leaves jobs later than they need be: an objective such as makespan is indifferent to a job
off the critical path, and a solver stops at the first plan it cannot improve. The
left shift takes the segments in order of start and gives each the earliest start its
release, its predecessors' (shifted) ends, its GPUs' previous (shifted) segments and the
outages on its GPUs allow, never later than it was. Each GPU keeps its order of jobs and
each job its GPUs, type and length, so no regular objective gets worse; node resources and
account limits are not looked at here, which is why callers verify the result and keep the
plan as it was when it breaks one.
"""

from __future__ import annotations

from collections import defaultdict

from gpuplan.core.instance import Instance
from gpuplan.core.schedule import Schedule, Segment


def left_shift(instance: Instance, schedule: Schedule) -> Schedule:
    """The schedule with every segment started as early as the plan's order allows.

    A schedule with a job in several segments, a shared GPU, or an overhead (restore,
    migration) is returned as it is: shifting those needs the method's own rules.
    """
    segments = schedule.segments
    jobs = [s.job for s in segments]
    if (len(set(jobs)) < len(jobs) or instance.shared.any()
            or any(s.restore_s or s.migrate_s or s.partner for s in segments)):
        return schedule
    held: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for outage in instance.outages:
        for g in outage.gpus.tolist():
            held[instance.gpu_ids[g]].append((outage.start_s, outage.end_s))
    free_at: dict[str, float] = {}
    ends: dict[str, float] = {}
    shifted: list[Segment] = []
    for s in sorted(segments, key=lambda s: (s.start_s, s.job)):
        j = instance.job_index[s.job]
        length = s.end_s - s.start_s
        start = max([float(instance.release[j]),
                     *(ends.get(instance.job_ids[p], 0.0) for p in instance.predecessors[j]),
                     *(free_at.get(g, 0.0) for g in s.gpu_ids)])
        moved = True
        while moved:  # past every outage its interval would overlap
            moved = False
            for g in s.gpu_ids:
                for begin, end in held.get(g, ()):
                    if start < end and start + length > begin:
                        start, moved = end, True
        start = min(start, s.start_s)
        ends[s.job] = start + length
        for g in s.gpu_ids:
            free_at[g] = start + length
        shifted.append(s.model_copy(update={"start_s": start, "end_s": start + length}))
    return schedule.model_copy(update={"segments": shifted, "verification": None})
