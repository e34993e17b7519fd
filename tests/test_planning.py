"""plan(): the one path from an instance to a verified schedule, and its warm starts."""

from __future__ import annotations

from typing import Any

import pytest

from gpuplan import InputError, Instance, ObjectiveKind, RunSettings, plan
from gpuplan.core.result import Result
from gpuplan.core.settings import Context
from gpuplan.methods import METHODS


def _count_solves(monkeypatch: pytest.MonkeyPatch, name: str) -> list[Context]:
    """Record the contexts the registered method ``name`` is solved with."""
    method = METHODS[name]
    calls: list[Context] = []
    solve = type(method).solve

    def counted(self: Any, instance: Instance, options: Any, context: Context) -> Result:
        calls.append(context)
        return solve(self, instance, options, context)

    monkeypatch.setattr(type(method), "solve", counted)
    return calls


def test_cp_starts_tardiness_from_the_annealing_it_declares(
        small: Instance, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cp declares sa as its start for tardiness; plan() runs it through the registry."""
    instance = small.with_objective(ObjectiveKind.TARDINESS)
    declared = METHODS["cp"].default_warm(instance, 4.0)
    assert declared is not None and declared.method == "sa"
    annealed = _count_solves(monkeypatch, "sa")
    schedule = plan(instance, "cp", settings=RunSettings(time_limit_s=4.0))
    assert schedule.verification is not None and schedule.verification.ok
    assert len(annealed) == 1
    # It runs on its declared share of the limit.
    assert annealed[0].budget.time_limit_s == pytest.approx(declared.share * 4.0, rel=0.05)


def test_a_named_warm_start_replaces_the_declared_one(
        small: Instance, monkeypatch: pytest.MonkeyPatch) -> None:
    """--warm-start greedy on a tardiness batch: greedy runs first, the annealing does not."""
    instance = small.with_objective(ObjectiveKind.TARDINESS)
    annealed = _count_solves(monkeypatch, "sa")
    greedy = _count_solves(monkeypatch, "greedy")
    plan(instance, "cp", settings=RunSettings(time_limit_s=4.0), warm="greedy")
    assert (len(annealed), len(greedy)) == (0, 1)


def test_methods_without_a_declared_start_run_none(small: Instance) -> None:
    """Only cp declares default warm starts, and only for tardiness and long makespans."""
    for kind in (ObjectiveKind.TARDINESS, ObjectiveKind.MAKESPAN):
        instance = small.with_objective(kind)
        declared = {name for name, method in METHODS.items()
                    if method.default_warm(instance, 10.0) is not None}
        assert declared == ({"cp"} if kind is ObjectiveKind.TARDINESS else set())


@pytest.mark.parametrize(("method", "options", "setting"), [
    ("balance", {"floor": 2.0}, "floor"),
    ("balance", {"round_s": 1e-6}, "round_s"),
    ("greedy", {"policy": "makespan"}, "policy"),
    ("cp", {"backend": "highs"}, "backend"),
])
def test_library_errors_name_settings_not_flags(small: Instance, method: str,
                                                 options: dict[str, Any], setting: str) -> None:
    """The API names the setting a caller gave (``round_s``), never a command-line flag."""
    with pytest.raises(InputError) as refused:
        plan(small, method, options)
    assert refused.value.source == f"`{setting}`"
    assert "--" not in str(refused.value)
