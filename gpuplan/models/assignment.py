"""The static assignment MILP: place each job's gang on eligible GPUs under per-GPU capacity.

Columns
    ``x[j, g]`` (binary) job ``j`` uses GPU ``g``; created only for eligible pairs whose node
    holds enough GPUs of the type for the gang's share on a node (sparse eligibility), and
    is labelled with its required topology level. ``y[j, q]`` (binary) gang job ``j`` runs
    in group ``q`` (one node, one type). ``w[j, c]`` (binary) a multi-node gang runs on
    the groups of choice ``c``: one type, and one domain of its required level.
    ``u[g]`` (binary) GPU ``g`` is used, for the GPU-count objectives. ``z`` (continuous)
    the largest utilisation, for ``min-max-load``.
Rows
    assignment (each job once, at most once when jobs may be dropped: over ``x`` for a
    single GPU, ``y`` for a one-node gang, ``w`` for a multi-node one), gang linking
    (``sum_{g in q} x[j, g] = k_j y[j, q]`` with ``k_j`` its GPUs per node, and
    ``sum_{q in c} y[j, q] = m_j w[j, c]`` with ``m_j`` its nodes), capacity of every
    resource of every GPU and of every node resource of every node (only where the jobs
    that may use it could exceed it), ``x <= u`` linking, load rows, and symmetry
    breaking.

Identical GPUs: GPUs of one type on one node are interchangeable, so any plan can be
permuted to put them in a canonical order. We break that symmetry rather than aggregate them
(aggregation would lose the per-GPU capacity that makes packing hard): consecutive GPUs of a
group are ordered by ``u`` (used GPUs first) for the GPU-count objectives, and by load of the
first resource otherwise. The LP method uses the aggregated relaxation instead (see
:func:`type_relaxation`), where per-GPU capacity is summed per type.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuplan.core.budget import Budget
from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.models.linear import (
    LazyNames,
    LinearProgram,
    RowBuilder,
    chain_names,
    check_budget,
)

#: (job, GPU) pairs examined between two readings of the budget while building.
PAIRS_PER_CHECK = 1 << 20


def job_value(instance: Instance) -> FloatArray:
    """``(J, T)`` objective contribution of placing a whole job on a type (0 where unused)."""
    match instance.objective:
        case ObjectiveKind.ASSIGN_COST | ObjectiveKind.ASSIGN_PROFIT:
            values = instance.assignment_value
        case ObjectiveKind.MAX_WEIGHT:
            values = np.broadcast_to(instance.weight[:, None], instance.eligible.shape)
        case _:
            values = np.zeros(instance.eligible.shape)
    return np.where(instance.eligible, values, 0.0)


@dataclass(frozen=True)
class AssignmentModel:
    """The assignment MILP of an instance, and the maps between its columns and placements.

    Attributes
    ----------
    instance
        The instance it was built from.
    program
        The canonical program.
    x_job, x_gpu
        Job and GPU of each ``x`` column; ``x`` columns come first, sorted by (job, GPU).
    y_job, y_group, y_start
        Job and group (``node * T + type``) of each ``y`` column, from column ``y_start``.
    w_job, w_choice, w_start
        Job and choice (``type * D + domain``, ``D`` the domains of the job's required
        level plus one) of each ``w`` column, from column ``w_start``.
    u_start
        First ``u`` column (one per GPU), or -1.
    z_col
        The ``z`` column, or -1.
    """

    instance: Instance
    program: LinearProgram
    x_job: IntArray
    x_gpu: IntArray
    y_job: IntArray
    y_group: IntArray
    y_start: int
    w_job: IntArray
    w_choice: IntArray
    w_start: int
    u_start: int
    z_col: int

    @staticmethod
    def supports(objective: ObjectiveKind) -> bool:
        """Whether the model can express the objective (the static ones)."""
        return objective.is_static

    @classmethod
    def build(cls, instance: Instance, budget: Budget | None = None) -> AssignmentModel:
        """Formulate the instance (which must have a static objective).

        Parameters
        ----------
        instance
            A static-objective instance.
        budget
            Read between the stages of the build; None: build it whatever it takes.

        Raises
        ------
        OutOfTimeError
            When the budget is spent before the model is built, naming the stage.
        """
        budget = budget or Budget()
        objective = instance.objective
        if not cls.supports(objective):
            raise ValueError(f"the assignment model cannot express {objective.value!r}")
        gpu_type, gpu_node, n_types = instance.gpu_type, instance.gpu_node, instance.n_types
        n_gpus, n_jobs = instance.n_gpus, instance.n_jobs
        group_of = gpu_node * n_types + gpu_type
        group_size = instance.node_gpus.ravel()[group_of]
        # (job, GPU) pairs in blocks of jobs, the budget read between blocks: on a large
        # fleet the pairs alone take seconds.
        per_block = max(1, PAIRS_PER_CHECK // max(n_gpus, 1))
        blocks = []
        for first in range(0, n_jobs, per_block):
            check_budget(budget, "columns")
            end = first + per_block
            usable = (instance.eligible[first:end, gpu_type]
                      & (instance.gpus_per_node[first:end, None] <= group_size[None, :])
                      & (instance.gang[first:end, None] > 0))
            if instance.levels:
                level = instance.required_level[first:end]
                labelled = instance.node_domain[gpu_node[None, :], np.maximum(level, 0)[:, None]]
                usable &= (level[:, None] < 0) | (labelled >= 0)
            job, gpu = np.nonzero(usable)
            blocks.append((job.astype(np.int64) + first, gpu.astype(np.int64)))
        x_job = np.concatenate([b[0] for b in blocks]) if blocks else np.zeros(0, np.int64)
        x_gpu = np.concatenate([b[1] for b in blocks]) if blocks else np.zeros(0, np.int64)
        nx = x_job.size
        check_budget(budget, "columns")
        gang = instance.gang[x_job]
        multi = gang > 1
        pair = np.unique(x_job[multi] * (n_gpus * n_types + 1) + group_of[x_gpu[multi]])
        y_job, y_group = pair // (n_gpus * n_types + 1), pair % (n_gpus * n_types + 1)
        y_start = nx
        w_job, w_choice, y_choice = _choices(instance, y_job, y_group)
        w_start = y_start + y_job.size
        uses_u = objective in (ObjectiveKind.MIN_GPUS, ObjectiveKind.MIN_GPU_COST)
        u_start = w_start + w_job.size if uses_u else -1
        n_cols = w_start + w_job.size + (n_gpus if uses_u else 0)
        z_col = n_cols if objective is ObjectiveKind.MIN_MAX_LOAD else -1
        n_cols += int(z_col >= 0)

        cost = np.zeros(n_cols)
        cost[:nx] = job_value(instance)[x_job, gpu_type[x_gpu]] / gang
        if objective is ObjectiveKind.MIN_GPUS:
            cost[u_start:u_start + n_gpus] = 1.0
        elif objective is ObjectiveKind.MIN_GPU_COST:
            cost[u_start:u_start + n_gpus] = instance.price_per_hour[gpu_type]
        elif z_col >= 0:
            cost[z_col] = 1.0

        rows = RowBuilder()
        job_names, gpu_names = instance.job_ids, instance.gpu_ids
        # Assignment: single-GPU jobs over their x columns, one-node gangs over their y
        # columns, multi-node gangs over their w columns.
        lower = 0.0 if objective.allows_unplaced else 1.0
        single = np.flatnonzero(instance.gang == 1)
        row_of_job = np.full(n_jobs, -1)
        row_of_job[single] = np.arange(single.size)
        row_of_job[instance.gang > 1] = single.size + np.arange(int((instance.gang > 1).sum()))
        ones_x = ~multi
        one_node = instance.gang_nodes[y_job] == 1
        rows.add(
            np.concatenate([row_of_job[x_job[ones_x]], row_of_job[y_job[one_node]],
                            row_of_job[w_job]]),
            np.concatenate([np.flatnonzero(ones_x), y_start + np.flatnonzero(one_node),
                            w_start + np.arange(w_job.size)]),
            np.ones(int(ones_x.sum()) + int(one_node.sum()) + w_job.size),
            np.full(n_jobs, lower), np.ones(n_jobs),
            [f"assign[{job_names[j]}]" for j in np.argsort(row_of_job)],
        )
        # Gang linking: sum of x over the group equals k * y, k the GPUs per node.
        if y_job.size:
            key = y_job * (n_gpus * n_types + 1) + y_group
            x_key = x_job * (n_gpus * n_types + 1) + group_of[x_gpu]
            link_row = np.searchsorted(key, x_key[multi])
            rows.add(
                np.concatenate([link_row, np.arange(y_job.size)]),
                np.concatenate([np.flatnonzero(multi), y_start + np.arange(y_job.size)]),
                np.concatenate([np.ones(link_row.size),
                                -instance.gpus_per_node[y_job].astype(float)]),
                np.zeros(y_job.size), np.zeros(y_job.size),
                [
                    f"gang[{job_names[j]},{instance.node_ids[q // n_types]},"
                    f"{instance.type_ids[q % n_types]}]"
                    for j, q in zip(y_job, y_group, strict=True)
                ],
            )
        # Multi-node linking: the groups of a choice hold m nodes of the gang, or none.
        if w_job.size:
            spread = np.flatnonzero(~one_node)
            rows.add(
                np.concatenate([y_choice[spread], np.arange(w_job.size)]),
                np.concatenate([y_start + spread, w_start + np.arange(w_job.size)]),
                np.concatenate([np.ones(spread.size),
                                -instance.gang_nodes[w_job].astype(float)]),
                np.zeros(w_job.size), np.zeros(w_job.size),
                [f"nodes[{job_names[j]},{c}]" for j, c in zip(w_job, w_choice, strict=True)],
            )
        _node_rows(rows, instance, x_job[ones_x], x_gpu[ones_x], np.flatnonzero(ones_x),
                   y_job, y_group, y_start)
        check_budget(budget, "rows")
        # Capacity, only where the jobs that may use a GPU could exceed it.
        demand = instance.packing_demand[x_job, gpu_type[x_gpu]]
        capacity = instance.packing_capacity[gpu_type]
        kept_g, kept_r, entry_rows, entry_cols, entry_vals = _binding_entries(
            x_gpu, np.arange(nx), demand, capacity)
        upper = capacity[kept_g, kept_r]
        if uses_u:
            entry_rows.append(np.arange(kept_g.size))
            entry_cols.append(u_start + kept_g)
            entry_vals.append(-upper)
            upper = np.zeros(kept_g.size)
        rows.add(
            np.concatenate(entry_rows), np.concatenate(entry_cols), np.concatenate(entry_vals),
            np.full(kept_g.size, -np.inf), upper,
            [f"capacity[{gpu_names[g]},{instance.packing_resources[r]}]"
             for g, r in zip(kept_g, kept_r, strict=True)],
        )
        if uses_u:
            # x <= u: a GPU that runs anything is used (stronger than capacity alone).
            rows.add(
                np.repeat(np.arange(nx), 2),
                np.stack([np.arange(nx), u_start + x_gpu], axis=1).ravel(),
                np.tile([1.0, -1.0], nx),
                np.full(nx, -np.inf), np.zeros(nx),
                LazyNames(nx, lambda k: f"used[{job_names[x_job[k]]},{gpu_names[x_gpu[k]]}]"),
            )
        if z_col >= 0:
            total = np.zeros(capacity.shape)
            np.add.at(total, x_gpu, demand)
            load_g, load_r = np.nonzero(total > 0)
            load_id = np.full(total.shape, -1)
            load_id[load_g, load_r] = np.arange(load_g.size)
            entry_rows, entry_cols, entry_vals = [], [], []
            for r in range(len(instance.packing_resources)):
                mask = demand[:, r] > 0
                entry_rows.append(load_id[x_gpu[mask], r])
                entry_cols.append(np.flatnonzero(mask))
                entry_vals.append(demand[mask, r] / capacity[x_gpu[mask], r])
            entry_rows.append(np.arange(load_g.size))
            entry_cols.append(np.full(load_g.size, z_col))
            entry_vals.append(-np.ones(load_g.size))
            rows.add(
                np.concatenate(entry_rows), np.concatenate(entry_cols),
                np.concatenate(entry_vals), np.full(load_g.size, -np.inf),
                np.zeros(load_g.size),
                [f"load[{gpu_names[g]},{instance.packing_resources[r]}]"
                 for g, r in zip(load_g, load_r, strict=True)],
            )
        _symmetry_rows(rows, instance, x_job, x_gpu, demand, group_of, u_start)
        check_budget(budget, "rows")

        col_upper = np.ones(n_cols)
        integer = np.ones(n_cols, dtype=bool)
        if z_col >= 0:
            col_upper[z_col] = np.inf
            integer[z_col] = False
        node_ids, type_ids = instance.node_ids, instance.type_ids
        names = chain_names(
            LazyNames(nx, lambda k: f"x[{job_names[x_job[k]]},{gpu_names[x_gpu[k]]}]"),
            LazyNames(y_job.size, lambda k: f"y[{job_names[y_job[k]]},"
                      f"{node_ids[y_group[k] // n_types]},{type_ids[y_group[k] % n_types]}]"),
            LazyNames(w_job.size, lambda k: f"w[{job_names[w_job[k]]},{w_choice[k]}]"),
            [f"u[{g}]" for g in gpu_names] if uses_u else [],
            ["z"] if z_col >= 0 else [],
        )
        program = rows.program(objective.sense, cost, np.zeros(n_cols), col_upper, integer, names)
        check_budget(budget, "matrix")
        return cls(instance, program, x_job, x_gpu, y_job, y_group, y_start, w_job, w_choice,
                   w_start, u_start, z_col)

    def decode(self, values: FloatArray) -> dict[int, IntArray]:
        """Placed jobs and their GPUs from a (near-)integral column vector."""
        chosen = values[: self.x_job.size] > 0.5
        jobs, gpus = self.x_job[chosen], self.x_gpu[chosen]
        if not jobs.size:
            return {}
        starts = np.flatnonzero(np.r_[True, jobs[1:] != jobs[:-1]])
        return {
            int(jobs[s]): gpus[s:e]
            for s, e in zip(starts, np.r_[starts[1:], jobs.size], strict=True)
        }

    def encode(self, placed: dict[int, IntArray]) -> FloatArray:
        """The column vector of a plan (job to GPUs), for warm starts.

        Pairs the model has no column for are left out, so the vector may be infeasible;
        solvers treat it as a hint.
        """
        instance = self.instance
        values = np.zeros(self.program.n_cols)
        n_gpus, n_types = instance.n_gpus, instance.n_types
        key = self.x_job * n_gpus + self.x_gpu
        y_key = self.y_job * (n_gpus * n_types + 1) + self.y_group
        used = np.zeros(n_gpus, dtype=bool)
        load = np.zeros((n_gpus, len(instance.packing_resources)))
        for j, gpus in placed.items():
            columns = np.searchsorted(key, j * n_gpus + gpus)
            wanted = j * n_gpus + gpus
            valid = (columns < key.size) & (key[np.minimum(columns, key.size - 1)] == wanted)
            values[columns[valid]] = 1.0
            used[gpus] = True
            load[gpus] += instance.packing_demand[j, instance.gpu_type[gpus]]
            if instance.gang[j] > 1:
                for group in np.unique(instance.gpu_node[gpus] * n_types
                                       + instance.gpu_type[gpus]).tolist():
                    at = np.searchsorted(y_key, j * (n_gpus * n_types + 1) + group)
                    if at < y_key.size and y_key[at] == j * (n_gpus * n_types + 1) + group:
                        values[self.y_start + at] = 1.0
            if instance.gang_nodes[j] > 1:
                choice = _choice_of(instance, j, gpus)
                at = np.flatnonzero((self.w_job == j) & (self.w_choice == choice))
                values[self.w_start + at] = 1.0
        if self.u_start >= 0:
            values[self.u_start : self.u_start + n_gpus] = used
        if self.z_col >= 0:
            values[self.z_col] = (load / instance.packing_capacity[instance.gpu_type]).max()
        return values


def _domains(instance: Instance) -> int:
    """The most domains of any topology level, plus one: the stride of a choice's type."""
    return 1 + max((len(ids) for ids in instance.domain_ids), default=0)


def _choice_of(instance: Instance, j: int, gpus: IntArray) -> int:
    """The choice (``type * D + domain``) a multi-node gang on ``gpus`` makes."""
    level = int(instance.required_level[j]) if instance.levels else -1
    node = int(instance.gpu_node[gpus[0]])
    domain = int(instance.node_domain[node, level]) if level >= 0 else 0
    return int(instance.gpu_type[gpus[0]]) * _domains(instance) + domain


def _choices(instance: Instance, y_job: IntArray,
             y_group: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """The ``w`` columns of the multi-node gangs, and the ``w`` column of each ``y``.

    Returns each ``w`` column's job and choice, and for each ``y`` column the number of its
    ``w`` column (-1 for a one-node gang's).
    """
    n_types, stride = instance.n_types, _domains(instance)
    node, kind = y_group // n_types, y_group % n_types
    level = (instance.required_level[y_job] if instance.levels
             else np.full(y_job.size, -1, dtype=np.int64))
    domain = np.where(level >= 0, instance.node_domain[node, np.maximum(level, 0)]
                      if instance.levels else 0, 0)
    choice = kind * stride + domain
    spread = instance.gang_nodes[y_job] > 1
    key = y_job * (n_types * stride) + choice
    unique, inverse = np.unique(key[spread], return_inverse=True)
    y_choice = np.full(y_job.size, -1, dtype=np.int64)
    y_choice[spread] = inverse.ravel()
    return unique // (n_types * stride), unique % (n_types * stride), y_choice


def _binding_entries(key: IntArray, col: IntArray, amount: FloatArray, capacity: FloatArray
                     ) -> tuple[IntArray, IntArray, list[IntArray], list[IntArray],
                                list[FloatArray]]:
    """Capacity rows where the draws could exceed it: the kept pairs and the rows' entries.

    ``key`` (the GPU or node each draw is on), ``col`` (its column) and ``amount``
    (``(E, R)``) list the draws; ``capacity`` is ``(K, R)``. Returns the kept (key,
    resource) pairs, row ``i`` for the ``i``-th, and each resource's row numbers, columns
    and coefficients.
    """
    total = np.zeros(capacity.shape)
    np.add.at(total, key, amount)
    binding = total > capacity * (1 + 1e-12)
    kept_k, kept_r = np.nonzero(binding)
    row_id = np.full(binding.shape, -1)
    row_id[kept_k, kept_r] = np.arange(kept_k.size)
    entry_rows, entry_cols, entry_vals = [], [], []
    for r in range(capacity.shape[1]):
        mask = binding[key, r] & (amount[:, r] > 0)
        entry_rows.append(row_id[key[mask], r])
        entry_cols.append(col[mask])
        entry_vals.append(amount[mask, r])
    return kept_k, kept_r, entry_rows, entry_cols, entry_vals


def _node_rows(rows: RowBuilder, instance: Instance, x_job: IntArray, x_gpu: IntArray,
               x_col: IntArray, y_job: IntArray, y_group: IntArray, y_start: int) -> None:
    """Node-resource capacity: a job draws its node demand on each node it uses.

    A single-GPU job uses the node of its ``x`` column, a gang that of each ``y`` column;
    a row only where the jobs that may use the node could exceed one of its resources.
    """
    if not instance.node_demand.any():
        return
    node = np.concatenate([instance.gpu_node[x_gpu], y_group // instance.n_types])
    job = np.concatenate([x_job, y_job])
    col = np.concatenate([x_col, y_start + np.arange(y_job.size)])
    kept_n, kept_r, entry_rows, entry_cols, entry_vals = _binding_entries(
        node, col, instance.node_demand[job], instance.node_capacity)
    rows.add(np.concatenate(entry_rows), np.concatenate(entry_cols),
             np.concatenate(entry_vals), np.full(kept_n.size, -np.inf),
             instance.node_capacity[kept_n, kept_r],
             [f"node[{instance.node_ids[n]},{instance.node_resources[r]}]"
              for n, r in zip(kept_n, kept_r, strict=True)])


def _symmetry_rows(
    rows: RowBuilder,
    instance: Instance,
    x_job: IntArray,
    x_gpu: IntArray,
    demand: FloatArray,
    group_of: IntArray,
    u_start: int,
) -> None:
    """Order consecutive identical GPUs of a group: by use, or by load of the first resource."""
    same = np.flatnonzero(group_of[:-1] == group_of[1:])  # GPU g and g + 1 are twins
    if same.size == 0:
        return
    names = [f"symmetry[{instance.gpu_ids[g]}]" for g in same]
    if u_start >= 0:
        rows.add(
            np.repeat(np.arange(same.size), 2),
            np.stack([u_start + same, u_start + same + 1], axis=1).ravel(),
            np.tile([1.0, -1.0], same.size),
            np.zeros(same.size), np.full(same.size, np.inf), names,
        )
        return
    pair_of_gpu = np.full(instance.n_gpus + 1, -1)
    pair_of_gpu[same] = np.arange(same.size)
    follower = np.full(instance.n_gpus + 1, -1)
    follower[same + 1] = np.arange(same.size)
    first, second = pair_of_gpu[x_gpu], follower[x_gpu]
    weight = demand[:, 0]
    a, b = (first >= 0) & (weight > 0), (second >= 0) & (weight > 0)
    rows.add(
        np.concatenate([first[a], second[b]]),
        np.concatenate([np.flatnonzero(a), np.flatnonzero(b)]),
        np.concatenate([weight[a], -weight[b]]),
        np.zeros(same.size), np.full(same.size, np.inf), names,
    )


#: Objectives whose value is a sum over (job, type) choices, which the pooled LP captures.
POOLED_OBJECTIVES = frozenset(
    {ObjectiveKind.ASSIGN_COST, ObjectiveKind.ASSIGN_PROFIT, ObjectiveKind.MAX_WEIGHT}
)


@dataclass(frozen=True)
class PooledModel:
    """The LP relaxation with each type's GPUs pooled: ``w[j, t]`` = share of job j on type t.

    Per-GPU capacity is summed per type, and a gang counts ``k_j`` times its per-GPU demand,
    so the type choices of every plan are feasible here and its optimum bounds the
    assignment optimum. It has one column per eligible (job, type) pair, however many GPUs
    there are, which is what makes 10,000 jobs on 1,000 GPUs a small LP.
    """

    instance: Instance
    program: LinearProgram
    w_job: IntArray
    w_type: IntArray

    @classmethod
    def build(cls, instance: Instance) -> PooledModel:
        """Formulate the pooled relaxation (objectives in :data:`POOLED_OBJECTIVES`)."""
        objective = instance.objective
        if objective not in POOLED_OBJECTIVES:
            raise ValueError(f"the pooled relaxation cannot express {objective.value!r}")
        w_job, w_type = (a.astype(np.int64) for a in np.nonzero(instance.eligible))
        n, n_res = w_job.size, len(instance.packing_resources)
        demand = instance.packing_demand[w_job, w_type] * instance.gang[w_job, None]
        pooled = instance.packing_capacity * instance.node_gpus.sum(axis=0)[:, None]
        rows = RowBuilder()
        lower = 0.0 if objective.allows_unplaced else 1.0
        rows.add(
            w_job, np.arange(n), np.ones(n), np.full(instance.n_jobs, lower),
            np.ones(instance.n_jobs), [f"assign[{j}]" for j in instance.job_ids],
        )
        rows.add(
            (w_type[:, None] * n_res + np.arange(n_res)[None, :]).ravel(),
            np.repeat(np.arange(n), n_res), demand.ravel(),
            np.full(instance.n_types * n_res, -np.inf), pooled.ravel(),
            [f"capacity[{t},{r}]" for t in instance.type_ids for r in instance.packing_resources],
        )
        names = tuple(
            f"w[{instance.job_ids[j]},{instance.type_ids[t]}]"
            for j, t in zip(w_job, w_type, strict=True)
        )
        program = rows.program(
            objective.sense, job_value(instance)[w_job, w_type], np.zeros(n), np.ones(n),
            np.zeros(n, dtype=bool), names,
        )
        return cls(instance, program, w_job, w_type)

    def shares(self, values: FloatArray) -> FloatArray:
        """``(J, T)`` share of each job on each type from the LP solution."""
        out = np.zeros(self.instance.eligible.shape)
        out[self.w_job, self.w_type] = values
        return out
