"""Hypothesis strategies for random, valid instance documents."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from gpuplan.core.objectives import ALL_OBJECTIVES

TYPE_IDS = ["A100", "V100", "T4"]


@st.composite
def instance_documents(draw: st.DrawFn, max_jobs: int = 12) -> dict[str, Any]:
    """A valid instance document: every job fits a GPU type and some node holds its gang."""
    n_types = draw(st.integers(1, 3))
    types = TYPE_IDS[:n_types]
    memory = {t: draw(st.sampled_from([16.0, 24.0, 40.0, 80.0])) for t in types}
    nodes = []
    for n in range(draw(st.integers(1, 4))):
        counts = {t: draw(st.integers(1, 8)) for t in types if draw(st.booleans())}
        nodes.append({"id": f"node{n}", "gpus": counts or {types[0]: 2}})
    largest = {t: max((node["gpus"].get(t, 0) for node in nodes), default=0) for t in types}
    hosting = [t for t in types if largest[t] > 0]
    jobs: list[dict[str, Any]] = []
    for j in range(draw(st.integers(1, max_jobs))):
        home = draw(st.sampled_from(hosting))
        others = [t for t in hosting if t != home and draw(st.booleans())]
        job: dict[str, Any] = {
            "id": f"j{j}",
            "gpus": draw(st.integers(1, largest[home])),
            "demand": {
                "memory_gib": draw(st.floats(0.0, memory[home])),
                "compute": draw(st.sampled_from([0.1, 0.25, 0.5, 1.0])),
            },
            "duration_s": {t: draw(st.floats(1.0, 1000.0)) for t in [home, *others]},
            "weight": draw(st.floats(0.0, 10.0)),
            "profit": draw(st.floats(0.0, 50.0)),
            "release_s": draw(st.sampled_from([0.0, 0.0, 50.0, 500.0])),
        }
        if j and draw(st.booleans()):
            job["depends_on"] = sorted(set(draw(st.lists(st.sampled_from(
                [f"j{k}" for k in range(j)]), max_size=2))))
        if draw(st.integers(0, 4)) == 0:
            job["deadline_s"] = job["release_s"] + draw(st.floats(1.0, 5000.0))
        if draw(st.booleans()):
            job["due_s"] = draw(st.floats(0.0, 3000.0))
        jobs.append(job)
    objective = draw(st.sampled_from(sorted(k.value for k in ALL_OBJECTIVES)))
    # Both ways of holding GPUs: whole, or shared by per-GPU demand (which min-max-load,
    # a balance of shared GPUs, needs).
    shared = objective == "min-max-load" or draw(st.booleans())
    return {
        "gpu_types": [
            {"id": t, "capacity": {"memory_gib": memory[t], "compute": 1.0},
             "cost_per_hour": draw(st.floats(0.1, 5.0)), "sharing": shared}
            for t in types
        ],
        "nodes": nodes,
        "jobs": jobs,
        "objective": objective,
    }
