"""HiGHS through highspy: the default backend for MILPs, LPs and convex QPs.

HiGHS never writes to the terminal here: its banner, printed when a process makes its
first Highs object, goes to the debug log, and every Highs object has its output switched
off before anything else is done with it. A solve with a time limit holds it: HiGHS gets
what is left of the budget less a reserve for the steps where it does not read its clock,
is not started when less than that is left, and runs on a thread of its own that is
waited for only a little past the limit; a solve still busy then is cancelled and left to
finish on its own, and the answer says so (:mod:`gpuplan.backends.highs_runtime`).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import highspy
import numpy as np

from gpuplan.backends.base import Capabilities, ProgramSolution, Relaxation, check_program
from gpuplan.backends.highs_runtime import quiet_banner, reserve_of, run_guarded, size_pool
from gpuplan.core.budget import Budget, Limits
from gpuplan.core.instance import FloatArray, IntArray
from gpuplan.core.status import Status
from gpuplan.models.linear import LinearProgram

logger = logging.getLogger(__name__)

T = TypeVar("T")

_MS = highspy.HighsModelStatus
#: HiGHS model status -> gpuplan status when no solution is at hand; with a feasible
#: solution every "stopped early" status becomes ``feasible``.
STATUS_TABLE: dict[object, Status] = {
    _MS.kOptimal: Status.OPTIMAL,
    _MS.kModelEmpty: Status.OPTIMAL,
    _MS.kInfeasible: Status.INFEASIBLE,
    # Our programs are bounded (every column has finite bounds but z, which is bounded
    # below by the loads), so "unbounded or infeasible" can only be infeasible.
    _MS.kUnboundedOrInfeasible: Status.INFEASIBLE,
    _MS.kTimeLimit: Status.NO_SOLUTION,
    _MS.kIterationLimit: Status.NO_SOLUTION,
    _MS.kSolutionLimit: Status.NO_SOLUTION,
    _MS.kObjectiveBound: Status.NO_SOLUTION,
    _MS.kObjectiveTarget: Status.NO_SOLUTION,
    _MS.kInterrupt: Status.NO_SOLUTION,
    _MS.kMemoryLimit: Status.NO_SOLUTION,
    _MS.kUnknown: Status.NO_SOLUTION,
}


#: The version string of every solution.
VERSION = (f"highs {highspy.HIGHS_VERSION_MAJOR}.{highspy.HIGHS_VERSION_MINOR}."
           f"{highspy.HIGHS_VERSION_PATCH}")


#: The sentence of an infeasibility that HiGHS could not narrow down in time.
UNNAMED = "the solver proved that no plan satisfies every constraint"


def pass_program(highs: highspy.Highs, program: LinearProgram) -> None:
    """Load a program into HiGHS: the LP, and the diagonal Hessian of a QP.

    The arrays go to HiGHS as they are (no per-column Python objects), which on a model of
    half a million columns takes a fraction of the time of filling a ``HighsLp``.
    """
    sense = highspy.ObjSense.kMaximize if program.sense == "max" else highspy.ObjSense.kMinimize
    highs.passModel(
        program.n_cols, program.n_rows, int(program.value.size),
        int(highspy.MatrixFormat.kRowwise), int(sense), 0.0,
        np.ascontiguousarray(program.cost, dtype=np.float64),
        np.ascontiguousarray(program.col_lower, dtype=np.float64),
        np.ascontiguousarray(program.col_upper, dtype=np.float64),
        np.ascontiguousarray(program.row_lower, dtype=np.float64),
        np.ascontiguousarray(program.row_upper, dtype=np.float64),
        program.row_start.astype(np.int32), program.col_index.astype(np.int32),
        np.ascontiguousarray(program.value, dtype=np.float64),
        program.integer.astype(np.int32),
    )
    if program.hessian is not None:
        hessian = highspy.HighsHessian()
        hessian.dim_ = program.n_cols
        hessian.format_ = highspy.HessianFormat.kTriangular
        nonzero = np.flatnonzero(program.hessian)
        # Column-wise lower triangle: column k holds only its diagonal entry, if any.
        hessian.start_ = np.searchsorted(nonzero, np.arange(program.n_cols + 1))
        hessian.index_ = nonzero
        hessian.value_ = program.hessian[nonzero]
        highs.passHessian(hessian)


def _new_highs(limits: Limits) -> highspy.Highs:
    """A silent Highs object with the limits' threads, seed and gap (no time limit yet).

    The pool of the thread that runs it is sized by :class:`_Run`.
    """
    quiet_banner()
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("log_to_console", False)
    highs.setOptionValue("random_seed", int(limits.seed))
    highs.setOptionValue("mip_rel_gap", float(limits.gap))
    highs.setOptionValue("threads", max(1, int(limits.threads)))
    if not limits.presolve:
        highs.setOptionValue("presolve", "off")
    return highs


def _read_solution(highs: highspy.Highs, program: LinearProgram,
                   scale: FloatArray | None = None) -> ProgramSolution:
    """Translate the state of a Highs object after ``run()``.

    ``scale`` is the row scale of the program HiGHS was given
    (:meth:`~gpuplan.models.linear.LinearProgram.row_scale`), by which an LP's row duals
    are turned back into the program's.
    """
    model_status = highs.getModelStatus()
    info = highs.getInfo()
    has_solution = info.primal_solution_status == highspy.SolutionStatus.kSolutionStatusFeasible
    status = STATUS_TABLE.get(model_status, Status.NO_SOLUTION)
    if status is Status.NO_SOLUTION and has_solution:
        status = Status.FEASIBLE
    values = np.asarray(highs.getSolution().col_value) if has_solution else None
    objective = float(info.objective_function_value) if has_solution else None
    bound: float | None
    if program.integer.any():
        dual = float(info.mip_dual_bound)
        bound = dual if np.isfinite(dual) else None
    else:
        bound = objective if status is Status.OPTIMAL else None
    duals = None
    if not program.integer.any() and (
            info.dual_solution_status != highspy.SolutionStatus.kSolutionStatusNone):
        duals = np.asarray(highs.getSolution().row_dual)
        if scale is not None:
            duals = duals * scale
    logger.debug("HiGHS %s: objective %s, bound %s", model_status, objective, bound)
    return ProgramSolution(status, values, objective, bound, VERSION, duals)


def _why_not(budget: Budget, reserve: float) -> str | None:
    """Why HiGHS is not started within the budget, or None when it may be."""
    if budget.stop():
        return "not started: the caller stopped"
    left = budget.left()
    if left < reserve:
        return f"not started: {max(left, 0.0):.2f} s left"
    return None


def _limit_run(highs: highspy.Highs, budget: Budget, reserve: float) -> str | None:
    """Limit the run to what is left of the budget less the reserve; why not, if it cannot.

    Without a time limit the run has none (a held-open program may have had one).
    """
    why = _why_not(budget, reserve)
    if why is None:
        left = budget.left()
        highs.setOptionValue("time_limit",
                             max(float(left - reserve), 1e-3) if math.isfinite(left)
                             else highspy.kHighsInf)
    return why


def _no_solution(why: str) -> ProgramSolution:
    """The answer of a solve that gave nothing, with why in the solver string."""
    return ProgramSolution(Status.NO_SOLUTION, None, None, None, f"{VERSION} ({why})")


#: Why a solve gave nothing when it was not waited for (:func:`~.highs_runtime.run_guarded`).
BUSY = "still busy at the time limit, not waited for"


class _Run:
    """One run of a Highs object, which another thread may cancel before or while it runs.

    The order of the reads and writes closes the race: :meth:`cancel` sets the flag before
    it looks for the object, :meth:`__call__` sets the object before it looks at the flag.

    Parameters
    ----------
    threads
        The Highs object's thread count, for the pool of the thread that runs it.
    """

    def __init__(self, threads: int) -> None:
        self._threads = threads
        self._highs: highspy.Highs | None = None
        self._cancelled = False

    def cancel(self) -> None:
        """Stop the run (it keeps its best solution), or keep it from starting.

        The run's time limit is set to zero: branch-and-cut reads the option at every
        node and each LP at its next clock reading (HiGHS's own options object, which
        ``setOptionValue`` only writes; no other state changes). ``cancelSolve`` would
        need ``HandleUserInterrupt``, a Python callback at every interrupt check, many
        times a second, which stalls branch-and-cut on the GIL while another lane computes
        in Python (docs/benchmarks.md, "Unrelated parallel machines (R||Cmax)").
        """
        self._cancelled = True
        highs = self._highs  # the running thread may clear it meanwhile
        if highs is not None:
            highs.setOptionValue("time_limit", 0.0)

    def __call__(self, highs: highspy.Highs) -> None:
        """Run on this thread's pool (:func:`size_pool`), unless cancelled already."""
        self._highs = highs
        if not self._cancelled:
            size_pool(self._threads)
            highs.run()
        self._highs = None


class HighsBackend:
    """HiGHS: simplex or interior point for LPs and convex QPs, branch-and-cut for MILPs.

    It takes MIP starts and incumbents found elsewhere during branch-and-cut
    (:attr:`offer`), solves relaxations with reduced costs, holds an LP open for column
    generation, and names an irreducible infeasible subsystem. :meth:`cancel` may be
    called from another thread to end the running solve early; it then returns the best
    solution found so far. HiGHS has no MIQP: a quadratic objective needs continuous
    columns.
    """

    name = "highs"
    capabilities: ClassVar[Capabilities] = Capabilities(
        integer=True, continuous=True, quadratic=True, warm_start=True, time_limit=True,
        threads=True, incremental=True, relaxation=True, explain=True, incumbents=True,
        duals=True,
    )

    def __init__(self) -> None:
        self._run: _Run | None = None
        self._cancelled = False
        #: Called during branch-and-cut with the incumbent's objective; may return a better
        #: solution found elsewhere (another lane), which HiGHS then adopts.
        self.offer: Callable[[float], FloatArray | None] | None = None

    def cancel(self) -> None:
        """Stop the solve in progress (and any started after), keeping its best solution."""
        self._cancelled = True
        run = self._run  # the solving thread may replace it meanwhile
        if run is not None:
            run.cancel()

    def _solve(self, size: int, limits: Limits, set_up: Callable[[highspy.Highs], None],
               read: Callable[[highspy.Highs], T], nothing: Callable[[str], T]) -> T:
        """Set up a fresh Highs object and run it within the limits (:func:`run_guarded`).

        Parameters
        ----------
        size
            Nonzeros and columns of the program HiGHS gets, for its reserve.
        limits
            Budget, threads, seed and gap.
        set_up
            Loads the program and sets what else the run needs.
        read
            The answer from the Highs object after its run.
        nothing
            The answer when there was no run to read, from why.
        """
        budget = limits.budget
        reserve = reserve_of(size)
        why = _why_not(budget, reserve)
        if why is not None:
            logger.debug("HiGHS %s, %.3f s kept for a program of %d nonzeros and columns",
                         why, reserve, size)
            return nothing(why)
        run = _Run(limits.threads)
        self._run = run
        if self._cancelled:
            run.cancel()

        def work() -> T:
            highs = _new_highs(limits)
            set_up(highs)
            why = _limit_run(highs, budget, reserve)
            if why is not None:
                return nothing(why)
            run(highs)
            return read(highs)

        answer = run_guarded(work, budget, run.cancel)
        return nothing(BUSY) if answer is None else answer

    def solve_program(self, program: LinearProgram, limits: Limits,
                      start: FloatArray | None = None) -> ProgramSolution:
        """Solve with HiGHS; a start vector is offered as a MIP starting solution.

        The time limit covers loading the program, and holds (see the module's notes);
        when too little of it is left to start, the status is ``no_solution``, as it is
        for a solve not waited for.

        Parameters
        ----------
        program
            The model in canonical form.
        limits
            Budget, threads, seed and gap.
        start
            Column values of a known solution, tried as the first incumbent.

        Raises
        ------
        InputError
            Naming ``--solver``, for a quadratic objective with integer columns.
        """
        check_program(self, program)
        integer = bool(program.integer.any())
        offer = self.offer
        scale = program.row_scale()

        def set_up(highs: highspy.Highs) -> None:
            if not integer and program.hessian is None:
                # Interior point (with crossover, for a vertex to round) is faster than
                # simplex on the large, degenerate assignment LPs.
                highs.setOptionValue("solver", "ipm" if limits.algorithm == "auto"
                                     else limits.algorithm)
            pass_program(highs, program.equilibrated())
            if start is not None and integer:
                solution = highspy.HighsSolution()
                solution.col_value = np.asarray(start, dtype=float)
                solution.value_valid = True
                highs.setSolution(solution)
            if offer is not None and integer:

                def adopt(event: Any) -> None:
                    values = offer(float(event.data_out.objective_function_value))
                    if values is not None:
                        event.data_in.user_has_solution = True
                        event.data_in.user_solution[:] = values

                highs.cbMipUserSolution.subscribe(adopt)

        return self._solve(int(program.value.size) + program.n_cols, limits, set_up,
                           lambda highs: _read_solution(highs, program, scale), _no_solution)

    def relax(self, program: LinearProgram, limits: Limits) -> Relaxation:
        """Solve the continuous relaxation by interior point: value, columns, reduced costs.

        The time limit covers loading the program too; the status is ``no_solution`` with
        nothing else when it is spent first.
        """
        relaxed = program.relaxed().equilibrated()

        def set_up(highs: highspy.Highs) -> None:
            highs.setOptionValue("solver", "ipm")
            pass_program(highs, relaxed)

        def read(highs: highspy.Highs) -> Relaxation:
            if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                status = STATUS_TABLE.get(highs.getModelStatus(), Status.NO_SOLUTION)
                return Relaxation(status, None, None, None)
            solution = highs.getSolution()
            return Relaxation(Status.OPTIMAL, float(highs.getInfo().objective_function_value),
                              np.asarray(solution.col_value), np.asarray(solution.col_dual))

        return self._solve(int(relaxed.value.size) + relaxed.n_cols, limits, set_up, read,
                           lambda _: Relaxation(Status.NO_SOLUTION, None, None, None))

    def explain_infeasible(self, program: LinearProgram, limits: Limits) -> str:
        """Name the constraints of an irreducible infeasible subsystem of the LP relaxation.

        Parameters
        ----------
        program
            A program the solver proved infeasible.
        limits
            What the relaxation may spend; without an answer in time the sentence says
            what was proved and names no constraint.
        """
        relaxed = program.relaxed().equilibrated()

        def read(highs: highspy.Highs) -> str:
            status = highs.getModelStatus()
            if status == highspy.HighsModelStatus.kTimeLimit:
                return UNNAMED
            if status != highspy.HighsModelStatus.kInfeasible:
                return (f"{UNNAMED}; the continuous relaxation is feasible, so the conflict "
                        "lies in packing whole jobs onto GPUs")
            _, iis = highs.getIis()
            rows = [program.row_names[i] for i in iis.row_index_][:12]
            return "infeasible: these constraints conflict: " + ", ".join(rows)

        return self._solve(int(relaxed.value.size) + relaxed.n_cols, limits,
                           lambda highs: pass_program(highs, relaxed), read,
                           lambda _: UNNAMED)

    def open(self, program: LinearProgram, limits: Limits) -> HighsSession:
        """Hold an LP open in HiGHS for column generation (:class:`HighsSession`)."""
        check_program(self, program)
        return HighsSession(program, limits)


class HighsSession:
    """An LP held open in HiGHS: columns are added and the LP re-solved from the last basis.

    The master problem of column generation. The first solve runs the interior point
    method (with crossover, so a basis exists); later ones restart dual/primal simplex from
    the basis, which after a few new columns takes a fraction of a cold solve. Each solve
    holds its budget's time limit as :meth:`HighsBackend.solve_program` does; once one was
    not waited for, the session is done and every later solve gives nothing.

    The rows are given as they are (not equilibrated), so that the row duals are those of
    the program.
    """

    def __init__(self, program: LinearProgram, limits: Limits) -> None:
        self._highs = _new_highs(limits)
        self._threads = limits.threads
        self._highs.setOptionValue("solver", "ipm")
        pass_program(self._highs, program)
        self._program = program
        self._size = int(program.value.size) + program.n_cols
        self._solved = False
        self._busy = False

    def solve(self, budget: Budget) -> ProgramSolution:
        """Solve within the budget: all columns so far, with the row duals when optimal."""
        if self._busy:
            return _no_solution(BUSY)
        highs = self._highs
        why = _limit_run(highs, budget, reserve_of(self._size))
        if why is not None:
            return _no_solution(why)
        if self._solved:
            highs.setOptionValue("solver", "simplex")
        run = _Run(self._threads)

        def work() -> bool:
            run(highs)
            return True

        self._busy = run_guarded(work, budget, run.cancel) is None
        if self._busy:
            return _no_solution(BUSY)
        self._solved = True
        solution = _read_solution(highs, self._program)
        if solution.status is Status.OPTIMAL:
            return solution
        return dataclasses.replace(solution, duals=None)

    def add_columns(self, cost: FloatArray, upper: FloatArray, start: IntArray,
                    index: IntArray, value: FloatArray) -> None:
        """Append columns with lower bound 0, given column-wise (CSC ``start``, ``index``)."""
        n = int(cost.size)
        self._highs.addCols(n, np.asarray(cost, dtype=float), np.zeros(n),
                            np.asarray(upper, dtype=float), int(index.size),
                            np.asarray(start[:-1], dtype=np.int32),
                            np.asarray(index, dtype=np.int32), np.asarray(value, dtype=float))
        self._size += n + int(index.size)

