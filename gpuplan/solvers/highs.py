"""HiGHS through highspy: the default backend for MILPs and LPs."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from typing import Any

import highspy
import numpy as np

from gpuplan.instance import FloatArray, IntArray
from gpuplan.models.linear import LinearProgram
from gpuplan.schedule import Status
from gpuplan.solvers.base import ProgramSolution, SolveOptions

logger = logging.getLogger(__name__)

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


def highs_lp(program: LinearProgram) -> highspy.HighsLp:
    """The program as a HiGHS model (row-wise matrix, integrality, sense)."""
    lp = highspy.HighsLp()
    lp.num_col_ = program.n_cols
    lp.num_row_ = program.n_rows
    lp.col_cost_ = program.cost
    lp.col_lower_ = program.col_lower
    lp.col_upper_ = program.col_upper
    lp.row_lower_ = program.row_lower
    lp.row_upper_ = program.row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = program.row_start
    lp.a_matrix_.index_ = program.col_index
    lp.a_matrix_.value_ = program.value
    lp.a_matrix_.num_col_ = program.n_cols
    lp.a_matrix_.num_row_ = program.n_rows
    lp.sense_ = highspy.ObjSense.kMaximize if program.sense == "max" else highspy.ObjSense.kMinimize
    if program.integer.any():
        lp.integrality_ = [
            highspy.HighsVarType.kInteger if flag else highspy.HighsVarType.kContinuous
            for flag in program.integer
        ]
    return lp


def pass_program(highs: highspy.Highs, program: LinearProgram) -> None:
    """Load a program into HiGHS: the LP, and the diagonal Hessian of a QP."""
    highs.passModel(highs_lp(program))
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


#: HiGHS runs one thread pool per process, sized by the first run; a later run asking for
#: another size fails unless the pool is reset, so the size in use is remembered here.
_pool_threads: list[int] = []


#: Whether this process has made its first Highs object (and so printed the banner).
_banner_shown: list[bool] = []


def divert_banner() -> None:
    """Make the first Highs object of the process with standard output sent to stderr.

    HiGHS prints a banner to standard output when the first Highs object of a process is
    made, whoever makes it (Pyomo too); that would corrupt ``gpuplan solve -o -``.
    """
    if _banner_shown:
        return
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    _banner_shown.append(True)


def new_highs(options: SolveOptions) -> highspy.Highs:
    """A configured, silent Highs object."""
    divert_banner()
    highs = highspy.Highs()
    configure(highs, options)
    return highs


def configure(highs: highspy.Highs, options: SolveOptions) -> None:
    """Apply time limit, threads, seed and gap tolerance, with logging off."""
    threads = max(1, int(options.threads))
    if _pool_threads and _pool_threads[0] != threads:
        highspy.Highs.resetGlobalScheduler(True)
        _pool_threads.clear()
    if not _pool_threads:
        _pool_threads.append(threads)
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("random_seed", int(options.seed))
    highs.setOptionValue("mip_rel_gap", float(options.gap_tolerance))
    highs.setOptionValue("threads", threads)
    if options.time_limit_s is not None:
        highs.setOptionValue("time_limit", float(max(options.time_limit_s, 0.01)))


def read_solution(highs: highspy.Highs, program: LinearProgram) -> ProgramSolution:
    """Translate the state of a Highs object after ``run()``."""
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
    logger.debug("HiGHS %s: objective %s, bound %s", model_status, objective, bound)
    return ProgramSolution(status, values, objective, bound, f"highs {highs.version()}")


def solve_relaxation(
    program: LinearProgram, options: SolveOptions
) -> tuple[Status, float | None, FloatArray | None, FloatArray | None]:
    """Solve the continuous relaxation; return status, value, solution and reduced costs."""
    highs = new_highs(options)
    highs.setOptionValue("solver", "ipm")
    pass_program(highs, program.relaxed())
    highs.run()
    if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        status = STATUS_TABLE.get(highs.getModelStatus(), Status.NO_SOLUTION)
        return status, None, None, None
    solution = highs.getSolution()
    return (
        Status.OPTIMAL,
        float(highs.getInfo().objective_function_value),
        np.asarray(solution.col_value),
        np.asarray(solution.col_dual),
    )


class HighsMaster:
    """An LP held open in HiGHS: columns are added and the LP re-solved from the last basis.

    The master problem of column generation. The first solve runs the interior point
    method (with crossover, so a basis exists); later ones restart dual/primal simplex from
    the basis, which after a few new columns takes a fraction of a cold solve.
    """

    def __init__(self, program: LinearProgram, options: SolveOptions) -> None:
        self._highs = new_highs(options)
        self._highs.setOptionValue("solver", "ipm")
        pass_program(self._highs, program)
        self._program = program
        self._solved = False

    def solve(self) -> tuple[ProgramSolution, FloatArray | None]:
        """Solve; return the solution (all columns so far) and the row duals, if optimal."""
        if self._solved:
            self._highs.setOptionValue("solver", "simplex")
        self._highs.run()
        self._solved = True
        solution = read_solution(self._highs, self._program)
        duals = (np.asarray(self._highs.getSolution().row_dual)
                 if solution.status is Status.OPTIMAL else None)
        return solution, duals

    def add_columns(self, cost: FloatArray, upper: FloatArray, start: IntArray,
                    index: IntArray, value: FloatArray) -> None:
        """Append columns with lower bound 0, given column-wise (CSC ``start``, ``index``)."""
        n = int(cost.size)
        self._highs.addCols(n, np.asarray(cost, dtype=float), np.zeros(n),
                            np.asarray(upper, dtype=float), int(index.size),
                            np.asarray(start[:-1], dtype=np.int32),
                            np.asarray(index, dtype=np.int32), np.asarray(value, dtype=float))

    def set_time_limit(self, seconds: float) -> None:
        """Limit the next solve."""
        self._highs.setOptionValue("time_limit", float(max(seconds, 0.01)))


def explain_infeasible(program: LinearProgram) -> str:
    """Name the constraints of an irreducible infeasible subsystem of the LP relaxation."""
    highs = new_highs(SolveOptions())
    pass_program(highs, program.relaxed())
    highs.run()
    if highs.getModelStatus() != highspy.HighsModelStatus.kInfeasible:
        return (
            "the solver proved that no plan satisfies every constraint; the continuous "
            "relaxation is feasible, so the conflict lies in packing whole jobs onto GPUs"
        )
    _, iis = highs.getIis()
    rows = [program.row_names[i] for i in iis.row_index_][:12]
    return "infeasible: these constraints conflict: " + ", ".join(rows)


class HighsBackend:
    """HiGHS (simplex for LPs, branch-and-cut for MILPs) with warm starts.

    :meth:`cancel` may be called from another thread to end the running solve early; it
    then returns the best solution found so far.
    """

    name = "highs"

    def __init__(self) -> None:
        self._running: highspy.Highs | None = None
        self._cancelled = False
        #: Called during branch-and-cut with the incumbent's objective; may return a better
        #: solution found elsewhere (another lane), which HiGHS then adopts.
        self.offer: Callable[[float], FloatArray | None] | None = None

    def cancel(self) -> None:
        """Stop the solve in progress (and any started after), keeping its best solution."""
        self._cancelled = True
        if self._running is not None:
            self._running.cancelSolve()

    def solve_program(
        self, program: LinearProgram, options: SolveOptions, start: FloatArray | None = None
    ) -> ProgramSolution:
        """Solve with HiGHS; a start vector is offered as a MIP starting solution.

        Parameters
        ----------
        program
            The model in canonical form.
        options
            Time limit, threads, seed and gap tolerance.
        start
            Column values of a known solution, tried as the first incumbent.
        """
        highs = new_highs(options)
        if not program.integer.any() and program.hessian is None:
            # Interior point (with crossover, for a vertex to round) is several times faster
            # than simplex on the large, degenerate assignment LPs measured here.
            highs.setOptionValue("solver", "ipm")
        pass_program(highs, program)
        if start is not None and program.integer.any():
            solution = highspy.HighsSolution()
            solution.col_value = np.asarray(start, dtype=float)
            solution.value_valid = True
            highs.setSolution(solution)
        offer = self.offer
        if offer is not None and program.integer.any():

            def adopt(event: Any) -> None:
                values = offer(float(event.data_out.objective_function_value))
                if values is not None:
                    event.data_in.user_has_solution = True
                    event.data_in.user_solution[:] = values

            highs.cbMipUserSolution.subscribe(adopt)
        self._running = highs
        if not self._cancelled:
            highs.run()
        self._running = None
        return read_solution(highs, program)
