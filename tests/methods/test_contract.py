"""The contract every registered method keeps, run over the whole registry.

A method added to :data:`gpuplan.methods.METHODS` is covered here without a new test: for
every objective it declares, its plans verify on random instances and the same seed gives
the same plan; it honours a time limit; an objective it does not declare is refused with
exit 2 before anything is solved.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from conftest import INSTANCES, run_cli
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import instance_documents

from gpuplan import InputError, ObjectiveKind, read_instance
from gpuplan.core.instance import Instance
from gpuplan.core.settings import RunSettings
from gpuplan.methods import METHODS
from gpuplan.planning import plan
from gpuplan.readers.generate import generate_document
from gpuplan.readers.instance_file import build_instance, parse_document

#: Every registered method with every objective it declares.
DECLARED = [(name, objective) for name, method in METHODS.items()
            for objective in sorted(method.objectives)]
#: Every registered method with one objective it does not declare.
#: (quickstart.json has no job profits, so assign-profit is never the one tried).
UNDECLARED = [(name, sorted(set(ObjectiveKind) - method.objectives
                            - {ObjectiveKind.ASSIGN_PROFIT})[0])
              for name, method in METHODS.items()
              if set(ObjectiveKind) - method.objectives - {ObjectiveKind.ASSIGN_PROFIT}]
#: A time limit is honoured within this share of it plus a fixed slack.
LIMIT_SHARE, LIMIT_SLACK_S = 0.10, 0.5


def _instance(document: dict[str, Any], objective: ObjectiveKind) -> Instance | None:
    """The random document as an instance with ``objective``; None if it lacks the data."""
    try:
        return build_instance(parse_document({**document, "objective": objective.value},
                                             "random"), "random")
    except InputError:
        return None


#: Steps of the iterative methods in these runs: enough moves (sa) or generations (ga) to
#: search, few enough that a generation over a 96-GPU fleet does not take the suite's time.
STEPS = {"sa": 200, "ga": 20}


def _runs(name: str) -> RunSettings:
    """Settings under which a run is reproducible: one thread, steps rather than seconds."""
    steps = STEPS.get(name, 200) if METHODS[name].iterative else None
    return RunSettings(threads=1, iterations=steps)


@pytest.mark.parametrize(("name", "objective"), DECLARED)
@settings(max_examples=3, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(document=instance_documents(max_jobs=8), seed=st.integers(0, 2**31 - 1))
def test_plans_verify_and_the_same_seed_gives_the_same_plan(
    name: str, objective: ObjectiveKind, document: dict[str, Any], seed: int
) -> None:
    """A declared objective is planned, the plan verifies, and a rerun repeats it exactly.

    A user would notice a plan that breaks a constraint (plan() raises on one) or two runs
    with the same seed that disagree.
    """
    instance = _instance(document, objective)
    assume(instance is not None)
    assert instance is not None
    try:
        METHODS[name].check(instance, METHODS[name].options_type())
    except InputError:
        assume(False)
    run = RunSettings(seed=seed, threads=1, iterations=_runs(name).iterations)
    first = plan(instance, name, settings=run)
    second = plan(instance, name, settings=run)
    assert first.verification is not None and first.verification.ok == first.status.has_plan
    assert first.status == second.status and first.objective == second.objective
    assert first.segments == second.segments


def _large(name: str, objective: ObjectiveKind) -> Instance:
    """An instance big enough that no method finishes it in a second.

    Gavel's job mix has gangs; a method that plans single-GPU jobs only gets the same
    jobs on one GPU each.
    """
    document = generate_document(jobs=400, nodes=12, types=("v100", "p100", "k80"),
                                 gpus_per_node=8, seed=7, objective=objective.value)
    instance = build_instance(parse_document(document, "generated"), "generated")
    try:
        METHODS[name].check(instance, METHODS[name].options_type())
    except InputError:
        single = {**document, "jobs": [{**job, "gpus": 1} for job in document["jobs"]]}
        instance = build_instance(parse_document(single, "generated"), "generated")
    return instance


@pytest.mark.parametrize("name", list(METHODS))
def test_the_time_limit_is_honoured(name: str) -> None:
    """With ``--time-limit 1`` every method returns within 10% + 0.5 s, with its status.

    A user would notice a solve that overruns the limit they set.
    """
    method = METHODS[name]
    objective = next(k for k in (ObjectiveKind.MAKESPAN, ObjectiveKind.ASSIGN_COST,
                                 ObjectiveKind.MAX_WEIGHT, *sorted(method.objectives))
                     if k in method.objectives)
    instance = _large(name, objective)
    began = time.perf_counter()
    schedule = plan(instance, name, settings=RunSettings(time_limit_s=1.0))
    wall = time.perf_counter() - began
    assert wall <= 1.0 * (1 + LIMIT_SHARE) + LIMIT_SLACK_S, f"{name} took {wall:.2f} s"
    assert schedule.verification is not None


@pytest.mark.parametrize(("name", "objective"), UNDECLARED)
def test_an_undeclared_objective_is_refused_with_exit_2(name: str,
                                                        objective: ObjectiveKind) -> None:
    """An objective the method does not declare is exit 2 naming the method, not a crash.

    A user would notice an internal error, or a plan for another objective than asked.
    """
    with pytest.raises(InputError, match=name):
        plan(read_instance(INSTANCES / "quickstart.json", objective=objective), name)
    result = run_cli("solve", INSTANCES / "quickstart.json", "--method", name,
                     "--objective", objective.value)
    assert result.returncode == 2, result.stderr
    assert name in result.stderr and "Traceback" not in result.stderr
