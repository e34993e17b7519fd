"""The backend contract, over every registered backend: what it declares, it does.

A backend added to :data:`gpuplan.backends.BACKENDS` is covered here without a new test:
the tiny programs it declares it can solve reach their known optimum, the others are
refused naming ``--solver``, a spent budget returns at once, and the operations it does
not declare are never reached silently.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

from gpuplan.backends import BACKENDS, get_backend, highs_runtime, solves_left_running
from gpuplan.backends import highs as highs_backend
from gpuplan.backends.base import Backend, Capabilities, check_capabilities, program_needs
from gpuplan.core.budget import Budget, Limits
from gpuplan.core.errors import InputError
from gpuplan.core.status import Status
from gpuplan.models.assignment_makespan import AssignmentMakespanModel
from gpuplan.models.linear import LinearProgram, RowBuilder

NAMES = sorted(BACKENDS)
#: The capacity row of :func:`knapsack`: 2 a + 3 b + c <= 5.
WEIGHTS = np.array([2.0, 3.0, 1.0])
#: The values of a, b and c.
VALUES = np.array([5.0, 4.0, 3.0])


def knapsack(integer: bool, quadratic: bool = False) -> LinearProgram:
    """Three items of weights 2, 3, 1 and values 5, 4, 3 in a knapsack of 5.

    Linear: maximise the value (9 with a and b; 32/3 relaxed, b taking 2/3). Quadratic:
    minimise ``x'x / 2 - value @ x`` (-85/9 relaxed, b at 2/3; -8 with a and b whole).
    """
    rows = RowBuilder()
    rows.add(np.zeros(3, dtype=np.int64), np.arange(3), WEIGHTS, np.array([-np.inf]),
             np.array([5.0]), ["capacity"])
    if quadratic:
        return rows.program("min", -VALUES, np.zeros(3), np.ones(3), np.full(3, integer),
                            ["a", "b", "c"], hessian=np.ones(3))
    return rows.program("max", VALUES, np.zeros(3), np.ones(3), np.full(3, integer),
                        ["a", "b", "c"])


#: Program kind -> the program and its optimum.
PROGRAMS: dict[str, tuple[Callable[[], LinearProgram], float]] = {
    "milp": (lambda: knapsack(True), 9.0),
    "lp": (lambda: knapsack(False), 32 / 3),
    "qp": (lambda: knapsack(False, quadratic=True), -85 / 9),
    "miqp": (lambda: knapsack(True, quadratic=True), -8.0),
}


def limits(seconds: float | None = 10.0) -> Limits:
    """One thread, a fixed seed, a fresh budget."""
    return Limits(Budget(seconds), threads=1, seed=0)


def declares(name: str, kind: str) -> bool:
    """Whether the backend declares all that the program of this kind needs."""
    return not BACKENDS[name].capabilities.missing(program_needs(PROGRAMS[kind][0]()))


#: (backend, program kind) pairs the backend declares it solves, and those it does not.
SOLVED = [(name, kind) for name in NAMES for kind in PROGRAMS if declares(name, kind)]
REFUSED = [(name, kind) for name in NAMES for kind in PROGRAMS if not declares(name, kind)]


def backends_with(capability: str) -> list[str]:
    """The registered backends that declare a capability."""
    return [name for name in NAMES if getattr(BACKENDS[name].capabilities, capability)]


def backends_without(capability: str) -> list[str]:
    """The registered backends that do not declare a capability."""
    return [name for name in NAMES if name not in backends_with(capability)]


@pytest.mark.parametrize("name", NAMES)
def test_a_backend_declares_its_capabilities(name: str) -> None:
    """``--solver NAME`` is refused up front for what the backend cannot do, never mid-run.

    That needs each backend to say what it can do, as a class attribute planning reads
    before it builds one, and to have the attributes every method may touch.
    """
    backend_type = BACKENDS[name]
    assert isinstance(backend_type.capabilities, Capabilities)
    assert backend_type.name == name
    backend: Backend = get_backend(name)
    assert backend.offer is None
    backend.cancel()  # with nothing running, a no-op everywhere


@pytest.mark.parametrize(("name", "kind"), SOLVED)
@pytest.mark.parametrize("seconds", [None, 10.0], ids=["unlimited", "limited"])
def test_what_a_backend_declares_it_solves_to_the_optimum(
        name: str, kind: str, seconds: float | None) -> None:
    """A backend that says it solves MILPs (LPs, QPs) gives the optimum, called optimal.

    With and without a time limit: a limited solve runs on a guarded thread, and its answer
    must be the same.
    """
    program, optimum = PROGRAMS[kind]
    solution = get_backend(name).solve_program(program(), limits(seconds))
    assert solution.status is Status.OPTIMAL
    assert solution.objective == pytest.approx(optimum, rel=1e-6)
    assert solution.values is not None
    assert program().objective_value(solution.values) == pytest.approx(optimum, rel=1e-6)
    assert solution.solver.startswith(name)


@pytest.mark.parametrize(("name", "kind"), REFUSED)
def test_what_a_backend_lacks_is_refused_naming_the_solver(name: str, kind: str) -> None:
    """``--solver cpsat`` for an LP (or any MIQP) is exit 2 naming --solver and the backend.

    Planning refuses it before solving; the backend itself refuses it too, rather than
    ignoring the continuous columns or the quadratic term.
    """
    program = PROGRAMS[kind][0]()
    with pytest.raises(InputError, match=f"`backend`.*{name} backend") as refused:
        check_capabilities(BACKENDS[name].capabilities, name, program_needs(program),
                           f"--method milp for {kind}")
    assert refused.value.source == "`backend`"
    with pytest.raises(InputError, match=f"`backend`.*{name} backend"):
        get_backend(name).solve_program(program, limits())


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("budget", [
    pytest.param(lambda: Budget(1.0, started=time.perf_counter() - 2.0), id="time-up"),
    pytest.param(lambda: Budget(stop=lambda: True), id="caller-stopped"),
])
def test_a_spent_budget_returns_at_once(name: str, budget: Callable[[], Budget]) -> None:
    """A solve whose time is already up (or whose caller has stopped) starts nothing.

    It says so with ``no_solution`` and no exception, so the method keeps the plan it has.
    """
    program = knapsack(integer=True)
    backend = get_backend(name)
    backend.solve_program(program, Limits(budget()))  # the first call imports the solver
    began = time.perf_counter()
    solution = backend.solve_program(program, Limits(budget()))
    assert time.perf_counter() - began < 0.5
    assert solution.status is Status.NO_SOLUTION
    assert solution.values is None and solution.objective is None
    assert "not started" in solution.solver


@pytest.mark.parametrize("name", backends_with("warm_start"))
def test_a_start_is_taken_where_declared(name: str) -> None:
    """``--warm-start`` hands the backend a plan; one that takes starts still proves it."""
    start = np.array([1.0, 1.0, 0.0])
    solution = get_backend(name).solve_program(knapsack(integer=True), limits(), start)
    assert solution.status is Status.OPTIMAL
    assert solution.objective == pytest.approx(9.0)


@pytest.mark.parametrize(("name", "operation", "capability"), [
    (name, operation, capability)
    for operation, capability in (("relax", "relaxation"), ("open", "incremental"),
                                  ("explain_infeasible", "explain"))
    for name in backends_without(capability)
])
def test_an_undeclared_operation_is_never_reached_silently(
        name: str, operation: str, capability: str) -> None:
    """A method that skipped the capability check gets an error naming what is missing.

    Planning refuses such a combination first, so this is a bug, never a wrong answer.
    """
    with pytest.raises(NotImplementedError, match=f"{name} backend.*{capability}"):
        getattr(get_backend(name), operation)(knapsack(integer=False), limits())


@pytest.mark.parametrize("name", backends_with("relaxation"))
def test_the_relaxation_gives_its_value_and_reduced_costs(name: str) -> None:
    """``lp`` and ``milp``'s core MIP read the relaxation's value and reduced costs."""
    relaxation = get_backend(name).relax(knapsack(integer=True), limits())
    assert relaxation.status is Status.OPTIMAL
    assert relaxation.objective == pytest.approx(32 / 3)
    assert relaxation.values is not None and relaxation.reduced_costs is not None
    np.testing.assert_allclose(relaxation.values, [1.0, 2 / 3, 1.0], atol=1e-6)
    # The capacity's price is b's value per weight, 4/3: a and c earn more than it.
    np.testing.assert_allclose(relaxation.reduced_costs, [5 - 8 / 3, 0.0, 3 - 4 / 3],
                               atol=1e-6)


@pytest.mark.parametrize("name", backends_with("incremental"))
def test_a_held_program_takes_columns_and_resolves(name: str) -> None:
    """``balance`` with space sharing adds pair columns and re-solves to the new optimum."""
    session = get_backend(name).open(knapsack(integer=False), limits())
    solution = session.solve(Budget(10.0))
    duals = solution.duals
    assert solution.objective == pytest.approx(32 / 3)
    assert duals is not None
    np.testing.assert_allclose(duals, [4 / 3], atol=1e-6)
    # Item d: weight 1, value 10, priced at 10 - 4/3 > 0, so it enters.
    session.add_columns(np.array([10.0]), np.array([1.0]), np.array([0, 1]),
                        np.array([0]), np.array([1.0]))
    solution = session.solve(Budget())
    duals = solution.duals
    assert solution.status is Status.OPTIMAL
    assert solution.objective == pytest.approx(10 + 3 + 5 + 4 / 3)
    assert solution.values is not None and solution.values.size == 4


@pytest.mark.parametrize("name", backends_with("explain"))
def test_an_infeasible_program_is_explained_by_its_rows(name: str) -> None:
    """An infeasible instance's jobs are unplaced with the constraints that conflict."""
    rows = RowBuilder()
    rows.add(np.zeros(2, dtype=np.int64), np.arange(2), np.ones(2), np.array([3.0]),
             np.array([np.inf]), ["demand of job 7"])
    program = rows.program("min", np.ones(2), np.zeros(2), np.ones(2), np.ones(2, dtype=bool),
                           ["x", "y"])
    backend = get_backend(name)
    assert backend.solve_program(program, limits()).status is Status.INFEASIBLE
    assert "demand of job 7" in backend.explain_infeasible(program, limits())


@pytest.mark.parametrize("name", backends_with("incumbents"))
def test_a_cancelled_backend_starts_no_more_solves(name: str) -> None:
    """When one lane of ``milp`` proves optimality, the other lane's solver stops at once."""
    backend = get_backend(name)
    backend.cancel()
    began = time.perf_counter()
    solution = backend.solve_program(knapsack(integer=True), limits())
    assert time.perf_counter() - began < 0.5
    assert solution.status is Status.NO_SOLUTION


@pytest.mark.parametrize("name", backends_with("incumbents"))
def test_a_running_solve_stops_when_cancelled_and_keeps_its_plan(name: str) -> None:
    """``cancel()`` from another lane ends a solve in progress soon, with its best plan.

    (With ``cancelSolve`` it ran on to its time limit: the lane that had proved
    optimality waited for it.) An R||Cmax batch of 300 jobs on 20 GPUs keeps
    branch-and-cut busy far past the second after which it is cancelled.
    """
    times = np.random.default_rng(3).integers(1, 101, size=(300, 20))
    model = AssignmentMakespanModel.of_times(
        times, np.ones(times.shape, dtype=bool), True, [f"j{j}" for j in range(300)],
        [f"g{g}" for g in range(20)])
    backend = get_backend(name)
    threading.Timer(1.0, backend.cancel).start()
    began = time.perf_counter()
    solution = backend.solve_program(model.program, limits(30.0))
    assert time.perf_counter() - began < 2.5
    assert solution.status is Status.FEASIBLE
    assert solution.values is not None and solution.objective is not None


def test_highs_busy_past_its_limit_is_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--time-limit`` holds even when HiGHS is in a step that never reads its clock.

    (Branch-and-cut's set-up ran for minutes on half a million columns.) The solve is left
    to finish on its own thread, the caller goes on with ``no_solution``, and the process
    knows one is still running (it must not exit normally then).
    """
    release = threading.Event()
    monkeypatch.setattr(highs_backend._Run, "__call__", lambda run, highs: release.wait())
    limit = 0.2
    try:
        began = time.perf_counter()
        solution = get_backend("highs").solve_program(knapsack(integer=True), limits(limit))
        waited = time.perf_counter() - began
        assert solution.status is Status.NO_SOLUTION
        assert "not waited for" in solution.solver
        assert limit <= waited < limit + highs_runtime.GRACE_SHARE * limit \
            + highs_runtime.GRACE_S + 0.2
        assert solves_left_running()
    finally:
        release.set()
    ended = time.perf_counter() + 5
    while solves_left_running() and time.perf_counter() < ended:
        time.sleep(0.01)
    assert not solves_left_running()


def test_highs_solves_from_two_threads_at_once_with_their_own_thread_counts() -> None:
    """``milp``'s two lanes run HiGHS at once, each thread with the pool of its own run."""
    answers: list[float | None] = []

    def lane(threads: int) -> None:
        run = Limits(Budget(10.0), threads=threads)
        answers.append(get_backend("highs").solve_program(knapsack(True), run).objective)

    lanes = [threading.Thread(target=lane, args=(threads,)) for threads in (1, 2)]
    for thread in lanes:
        thread.start()
    for thread in lanes:
        thread.join(10)
    assert answers == [pytest.approx(9.0)] * 2


@pytest.mark.parametrize(("first", "last"), [("highs", "highs"), ("pyomo", "highs"),
                                             ("highs", "pyomo")])
def test_highs_solves_on_a_thread_whose_pool_another_thread_count_made(
        first: str, last: str) -> None:
    """A run on this thread after runs with other thread counts here and on another thread.

    HiGHS keeps a thread pool per thread that runs it, sized by that thread's first run,
    and a run asking another count fails: a 2-thread solve here, then a time-limited
    1-thread MIP (on a thread of its own), then a 1-thread solve here must be optimal.
    """
    for name, threads, seconds in ((first, 2, None), ("highs", 1, 1.0), (last, 1, None)):
        run = Limits(Budget(seconds), threads=threads)
        solution = get_backend(name).solve_program(knapsack(True), run)
        assert (name, threads, solution.status) == (name, threads, Status.OPTIMAL)
