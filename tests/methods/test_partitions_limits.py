"""Partitions and account/QOS GPU limits: planned by greedy and cp, refused by the others.

``tests/data/quotas.json``: two 4-GPU A100 nodes and two 2-GPU L4 nodes in three
partitions; accounts nlp (at most 4 GPUs at once), vision (2) and ops (no limit), and a
QOS urgent (2). The fastest plan that ignores them runs three nlp pairs at once (6 GPUs),
all of vision's jobs at once (4) and vision-1 on an A100 outside its L4 partition.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
import pytest
from conftest import DATA, Gpuplan, instance_from

from gpuplan import InputError, ObjectiveKind, RunSettings, Status, plan
from gpuplan.core.instance import Instance, Outage
from gpuplan.core.schedule import Schedule
from gpuplan.methods import METHODS
from gpuplan.verify import verify_schedule

QUOTAS = DATA / "quotas.json"
#: The jobs of quotas.json that fit at once within their partitions and limits (static
#: objectives that place every job).
AT_ONCE = ("nlp-1", "nlp-2", "vision-1", "vision-2", "ops-1", "batch-1")


def quotas(objective: ObjectiveKind = ObjectiveKind.MAKESPAN,
           limited: bool = True) -> Instance:
    """quotas.json under ``objective``, or without its partitions, accounts and QOS.

    Each job's profit is its GPUs. Under a static objective that places every job, only
    the jobs that fit at once.
    """
    document: dict[str, Any] = json.loads(QUOTAS.read_text())
    document["objective"] = objective.value
    if objective.is_static and not objective.allows_unplaced:
        document["jobs"] = [job for job in document["jobs"] if job["id"] in AT_ONCE]
    for job in document["jobs"]:
        job["profit"] = float(job["gpus"])
    if not limited:
        for section in ("partitions", "accounts", "qos"):
            del document[section]
        document["jobs"] = [{k: v for k, v in job.items()
                             if k not in ("partition", "account", "qos")}
                            for job in document["jobs"]]
    return instance_from(document)


def most_held(schedule: Schedule, jobs: set[str]) -> int:
    """The most GPUs these jobs hold at one instant of the schedule."""
    segments = [s for s in schedule.segments if s.job in jobs]
    return max(sum(len(s.gpu_ids) for s in segments if s.start_s <= t < s.end_s)
               for t in {s.start_s for s in segments})


CASES = [(name, objective) for name, method in METHODS.items()
         for objective in sorted(method.objectives, key=lambda k: k.value)
         if objective is not ObjectiveKind.MIN_MAX_LOAD]


@pytest.mark.parametrize(("name", "objective"), CASES,
                         ids=[f"{n}-{k.value}" for n, k in CASES])
def test_each_method_keeps_partitions_and_limits_or_refuses_them(
        name: str, objective: ObjectiveKind) -> None:
    """A verified plan where the method declares both features; elsewhere exit 2 naming one.

    The refusal names the feature, the method and the methods that plan the instance:
    never a plan that runs a job outside its partition or an account over its limit.
    """
    instance = quotas(objective)
    method = METHODS[name]
    missing = sorted(instance.features - method.features(objective))
    settings = RunSettings(time_limit_s=1, iterations=200 if method.iterative else None,
                           seed=0)
    if missing:
        with pytest.raises(InputError) as refused:
            plan(instance, name, settings=settings)
        assert refused.value.message.startswith(f"this instance has {missing[0].value}, "
                                                f"which method {name!r} does not plan")
        assert "greedy" in refused.value.message
        return
    schedule = plan(instance, name, settings=settings)
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.status.has_plan


@pytest.mark.parametrize("name", ["greedy", "cp"])
def test_greedy_and_cp_keep_the_limits_the_fastest_plan_breaks(name: str) -> None:
    """No account or QOS over its limit at any instant, every job in its partition.

    The same method without them finishes at 5400 s and, checked against the real
    instance, breaks both: the verifier is the oracle that the data binds.
    """
    settings = RunSettings(time_limit_s=2, seed=0)
    schedule = plan(quotas(), name, settings=settings)
    assert schedule.verification is not None and schedule.verification.ok
    assert most_held(schedule, {"nlp-1", "nlp-2", "nlp-3", "nlp-4"}) <= 4
    assert most_held(schedule, {"vision-1", "vision-2", "vision-3"}) <= 2
    assert most_held(schedule, {"ops-1", "ops-2"}) <= 2
    nodes = {s.job: s.node for s in schedule.segments}
    assert {nodes["ops-1"], nodes["ops-2"]} <= {"a2", "l1"}
    assert {nodes["vision-1"], nodes["vision-2"]} <= {"l1", "l2"}
    fastest = plan(quotas(limited=False), name, settings=settings)
    assert fastest.objective == pytest.approx(5400.0)
    broken = {v.kind.value for v in verify_schedule(quotas(), fastest).violations}
    assert {"partition", "gpu-limit"} <= broken


def test_cp_proves_the_makespan_the_nlp_limit_forces() -> None:
    """9000 s, proven: the nlp account's 4 GPUs are what holds the batch back.

    They run its three 2-GPU hours two lanes wide, and its 4-GPU half hour takes both
    lanes. If this broke, cp's cumulative per account (or its bound) would be wrong.
    """
    schedule = plan(quotas(), "cp", settings=RunSettings(time_limit_s=20, seed=0))
    assert schedule.status is Status.OPTIMAL
    assert schedule.objective == pytest.approx(9000.0)


def test_static_greedy_leaves_out_what_a_limit_cannot_hold() -> None:
    """max-weight places the batch at once: per account, jobs up to its limit.

    The rest are left out, naming the account and what it has left.
    """
    schedule = plan(quotas(ObjectiveKind.MAX_WEIGHT), "greedy")
    assert schedule.verification is not None and schedule.verification.ok
    placed = {s.job for s in schedule.segments}
    assert sum(len(s.gpu_ids) for s in schedule.segments if s.job.startswith("nlp")) <= 4
    reasons = {u.job: u.reason for u in schedule.unplaced}
    assert reasons["nlp-4"] == "account 'nlp' has 0 of its 4 GPUs left, and the job needs 4"
    assert {"vision-1", "vision-2", "ops-1"} <= placed


def held_a1(account: str | None) -> Instance:
    """quotas.json with a1's four A100s held until 3000 s by work of ``account``.

    None: a1 is down until then (a failed node counts against no limit).
    """
    instance = quotas()
    gpus = np.flatnonzero(instance.gpu_node == instance.node_index["a1"])
    return dataclasses.replace(instance, outages=(Outage(
        gpus, 0.0, 3000.0, f"job of {account} runs on" if account else "a1 fails",
        account=-1 if account is None else instance.account_ids.index(account)),))


@pytest.mark.parametrize("name", ["greedy", "cp"])
def test_gpus_held_by_running_work_count_against_its_account(name: str) -> None:
    """Work of nlp holding its 4 GPUs until 3000 s keeps every other nlp job waiting.

    a2's A100s are free from 0: with a1 merely down, nlp-1 starts there at once. That
    plan, checked against the held work, puts nlp over its limit, and the verifier says
    so, naming the work held before.
    """
    settings = RunSettings(time_limit_s=2, seed=0)
    schedule = plan(held_a1("nlp"), name, settings=settings)
    assert schedule.verification is not None and schedule.verification.ok
    nlp = [s for s in schedule.segments if s.job.startswith("nlp")]
    assert min(s.start_s for s in nlp) >= 3000.0 - 1e-6
    down = plan(held_a1(None), name, settings=settings)
    assert down.verification is not None and down.verification.ok
    assert min(s.start_s for s in down.segments if s.job.startswith("nlp")) == 0.0
    over = [str(v) for v in verify_schedule(held_a1("nlp"), down).violations]
    assert over and all(v.startswith("[gpu-limit] the jobs of account 'nlp' hold ")
                        and v.endswith("work held before), over its limit of 4") for v in over)


def test_a_running_job_holds_its_qos_limit_too() -> None:
    """ops-2 runs on a2 until 1000 s, holding QOS urgent's 2 GPUs: ops-1 waits for it.

    Its account, ops, has no limit: only the QOS's counts. The batch left is the one a
    re-plan plans, without ops-2.
    """
    whole = quotas()
    ops2 = whole.job_index["ops-2"]
    running = Outage.of_job(whole, ops2, np.array([whole.gpu_index["a2/0"],
                                                   whole.gpu_index["a2/1"]]),
                            np.array([whole.node_index["a2"]]), 1000.0)
    assert [str(whole.gpu_limits[k]) for k in running.limits(whole)] == ["QOS 'urgent'"]
    rest = dataclasses.replace(whole.take(np.flatnonzero(np.arange(whole.n_jobs) != ops2)),
                               outages=(running,))
    schedule = plan(rest, "greedy")
    assert schedule.verification is not None and schedule.verification.ok
    assert next(s.start_s for s in schedule.segments if s.job == "ops-1") >= 1000.0


def test_the_command_line_refuses_what_a_method_or_the_simulator_cannot_keep(
        gpuplan: Gpuplan) -> None:
    """Exit 2 naming the file, the field, the feature, the method and the methods that can."""
    refused = gpuplan("solve", QUOTAS, "--method", "balance")
    assert refused.code == 2
    assert (f"error: {QUOTAS}: accounts, qos: this instance has account/QOS GPU limits, "
            "which method 'balance' does not plan; methods that plan this instance: greedy, "
            "cp, sa, ga") in " ".join(refused.err.split())
    simulated = gpuplan("simulate", QUOTAS, "--policy", "fifo", "-o", "-")
    assert simulated.code == 2
    assert "which the simulator does not play out" in " ".join(simulated.err.split())
