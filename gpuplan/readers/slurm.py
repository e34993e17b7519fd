"""Slurm's own files: the fleet in ``slurm.conf``, ``gres.conf``, ``topology.conf``; ``sacct -P``.

:func:`read_slurm_fleet` turns the ``NodeName`` lines (node ranges such as ``gpu[01-16]``,
``NodeName=DEFAULT``, typed GPUs in ``Gres=gpu:TYPE:N``, ``CPUs``, ``RealMemory``) into the
``gpu_types`` and ``nodes`` of an instance file, the ``PartitionName`` lines into its
``partitions``, and the switch tree of ``topology.conf`` (Slurm's ``topology/tree``) into
topology levels. :func:`read_sacct` reads what a cluster
actually ran into a version-2 schedule of an instance, so that the verifier and ``gpuplan
diff`` can hold reality against the plan. Every problem is an
:class:`~gpuplan.core.errors.InputError` naming the file, the line and what is wrong.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Container, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from gpuplan._version import __version__
from gpuplan.core.errors import InputError
from gpuplan.core.files import read_text
from gpuplan.core.instance import MAX_GPUS, Instance
from gpuplan.core.schedule import Schedule, Segment, Unplaced
from gpuplan.core.status import Status

#: The GPU type of GPUs that ``slurm.conf`` and ``gres.conf`` leave untyped.
UNTYPED = "gpu"
#: The capacity every imported GPU type gets: Slurm states no per-GPU memory, so each GPU
#: is one unit of ``compute``; add ``memory_gib`` by hand to plan by memory.
IMPORTED_CAPACITY = {"compute": 1.0}
#: ``NodeName`` keys Slurm 22.05 to 24.x define (slurm.conf(5)); any other is a typo.
NODE_KEYS = frozenset(k.lower() for k in (
    "NodeName", "NodeHostname", "NodeAddr", "BcastAddr", "Boards", "CoreSpecCount",
    "CoresPerSocket", "CpuBind", "CPUs", "CPUSpecList", "Features", "Feature", "Gres",
    "MemSpecLimit", "Port", "Procs", "RealMemory", "Reason", "Sockets", "SocketsPerBoard",
    "State", "ThreadsPerCore", "TmpDisk", "Weight", "Parameters", "RestrictedCoresPerGPU"))
#: ``PartitionName`` keys Slurm 22.05 to 24.x define (slurm.conf(5)); any other is a typo.
PARTITION_KEYS = frozenset(k.lower() for k in (
    "PartitionName", "AllocNodes", "AllowAccounts", "AllowGroups", "AllowQos", "Alternate",
    "CpuBind", "Default", "DefaultTime", "DefCpuPerGPU", "DefMemPerCPU", "DefMemPerGPU",
    "DefMemPerNode", "DenyAccounts", "DenyQos", "DisableRootJobs", "ExclusiveTopo",
    "ExclusiveUser", "GraceTime", "Hidden", "JobDefaults", "LLN", "MaxCPUsPerNode",
    "MaxCPUsPerSocket", "MaxMemPerCPU", "MaxMemPerNode", "MaxNodes", "MaxTime", "MinNodes",
    "Nodes", "OverSubscribe", "OverTimeLimit", "PowerDownOnIdle", "PreemptMode",
    "PriorityJobFactor", "PriorityTier", "QOS", "ReqResv", "ResumeTimeout", "RootOnly",
    "SelectTypeParameters", "Shared", "State", "SuspendTime", "SuspendTimeout",
    "Topology", "TRESBillingWeights"))
#: ``topology.conf`` keys of the ``topology/tree`` plugin (topology.conf(5)).
TOPOLOGY_KEYS = frozenset(k.lower() for k in ("SwitchName", "Switches", "Nodes", "LinkSpeed"))
#: The topology level of the switches a tier above the leaves (``tier1``: leaf switches).
TIER = "tier{k}"
#: ``gres.conf`` keys (gres.conf(5)).
GRES_KEYS = frozenset(k.lower() for k in (
    "AutoDetect", "Count", "Cores", "File", "Flags", "Links", "MultipleFiles", "Name",
    "NodeName", "Type", "EnvVar"))
_PAIR = re.compile(r"\s*([A-Za-z][A-Za-z0-9_]*)=(\"[^\"]*\"|\S*)")
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
_INCLUDE_DEPTH = 8


@dataclass
class _Line:
    """One logical line of a Slurm configuration file: its ``key=value`` pairs."""

    source: str
    number: int
    pairs: dict[str, str]
    first: str


def _lines(path: Path, depth: int = 0) -> Iterator[_Line]:
    """The logical lines of a Slurm configuration file, ``Include`` files followed.

    Comments (``#`` to the end of the line) and blank lines are dropped, lines ending in
    a backslash are joined, and keys are compared without case, as Slurm does.
    """
    source = str(path)
    text = read_text(path)
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].rstrip()
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = (pending + line).strip(), ""
        if not line:
            continue
        word = line.split(None, 1)
        if word[0].lower() == "include":
            if len(word) < 2 or depth >= _INCLUDE_DEPTH:
                raise InputError(source, f"line {start}", "Include needs one file name (and "
                                 f"at most {_INCLUDE_DEPTH} levels of inclusion)")
            included = Path(word[1].strip())
            yield from _lines(included if included.is_absolute() else path.parent / included,
                              depth + 1)
            continue
        pairs: dict[str, str] = {}
        position = 0
        while position < len(line):
            match = _PAIR.match(line, position)
            if match is None:
                raise InputError(source, f"line {start}", f"expected KEY=VALUE pairs, got "
                                 f"{line[position:].strip()[:60]!r}")
            pairs[match.group(1).lower()] = match.group(2).strip('"')
            position = match.end()
        yield _Line(source, start, pairs, next(iter(pairs)))


def expand_hostlist(text: str, source: str, where: str) -> list[str]:
    """Expand a Slurm host list: ``gpu[01-03,08],cpu1`` is gpu01, gpu02, gpu03, gpu08, cpu1.

    Ranges keep the zero padding of their first number, and several brackets in one name
    multiply (``r[1-2]n[1-2]``).

    Raises
    ------
    InputError
        For an unbalanced bracket, a range that is not ``A`` or ``A-B`` with ``A <= B``,
        or more than :data:`~gpuplan.core.instance.MAX_GPUS` names.
    """
    names: list[str] = []
    depth, part = 0, ""
    pieces = []
    for char in text:
        depth += (char == "[") - (char == "]")
        if depth < 0 or depth > 1:
            raise InputError(source, where, f"unbalanced brackets in host list {text!r}")
        if char == "," and depth == 0:
            pieces.append(part)
            part = ""
        else:
            part += char
    if depth:
        raise InputError(source, where, f"unbalanced brackets in host list {text!r}")
    pieces.append(part)
    for piece in pieces:
        if not piece:
            raise InputError(source, where, f"empty name in host list {text!r}")
        names.extend(_expand_one(piece, source, where))
        if len(names) > MAX_GPUS:
            raise InputError(source, where, f"host list {text!r} names more than "
                             f"{MAX_GPUS} nodes")
    return names


def _expand_one(piece: str, source: str, where: str) -> list[str]:
    opening = piece.find("[")
    if opening < 0:
        return [piece]
    closing = piece.index("]", opening)
    head, body, tail = piece[:opening], piece[opening + 1:closing], piece[closing + 1:]
    numbers: list[str] = []
    for item in body.split(","):
        match = _RANGE.match(item)
        if match is None or (match.group(2) is not None
                             and int(match.group(2)) < int(match.group(1))):
            raise InputError(source, where, f"bad range {item!r} in host list {piece!r}: "
                             "expected N or A-B with A <= B")
        low, high = match.group(1), match.group(2) or match.group(1)
        if int(high) - int(low) >= MAX_GPUS:
            raise InputError(source, where, f"range {item!r} names more than {MAX_GPUS} nodes")
        numbers.extend(str(k).zfill(len(low)) for k in range(int(low), int(high) + 1))
    rests = _expand_one(tail, source, where)
    return [f"{head}{number}{rest}" for number in numbers for rest in rests]


def _count(text: str, source: str, where: str, what: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 10**12:
        raise InputError(source, where, f"{what} {text!r} is not a whole number")
    return int(text)


def _gpu_gres(text: str, source: str, where: str) -> dict[str, int]:
    """GPU counts by type from a ``Gres=`` value (other GRES, such as ``shard``, skipped)."""
    gpus: dict[str, int] = defaultdict(int)
    for item in filter(None, text.split(",")):
        item = item.split("(", 1)[0]  # a socket binding such as (S:0-1)
        fields = item.split(":")
        if fields[0] != "gpu":
            continue
        if len(fields) == 2 and not fields[1].isdigit():
            fields.append("1")  # gpu:TYPE means one
        if len(fields) == 2:
            gpus[UNTYPED] += _count(fields[1], source, where, "GPU count")
        elif len(fields) == 3 and fields[1]:
            gpus[fields[1]] += _count(fields[2], source, where, "GPU count")
        else:
            raise InputError(source, where, f"Gres item {item!r}: expected gpu:N or "
                             "gpu:TYPE:N")
    return dict(gpus)


@dataclass
class _Node:
    gpus: dict[str, int]
    cpus: int
    memory_mib: int
    line: str


@dataclass
class _GresNode:
    gpus: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    source: str = ""
    line: str = ""


def _node_lines(conf: Path) -> dict[str, _Node]:
    """The nodes of ``slurm.conf``, in file order, ``NodeName=DEFAULT`` applied."""
    nodes: dict[str, _Node] = {}
    defaults: dict[str, str] = {}
    for line in _lines(conf):
        if line.first != "nodename":
            continue
        where = f"line {line.number}"
        unknown = [k for k in line.pairs if k not in NODE_KEYS]
        if unknown:
            raise InputError(line.source, where, f"unknown NodeName key {unknown[0]!r}")
        if line.pairs["nodename"].upper() == "DEFAULT":
            defaults.update({k: v for k, v in line.pairs.items() if k != "nodename"})
            continue
        pairs = {**defaults, **line.pairs}
        cpus = pairs.get("cpus") or pairs.get("procs")
        if cpus is None:
            cpus = str(_count(pairs.get("sockets", "1"), line.source, where, "Sockets")
                       * _count(pairs.get("corespersocket", "1"), line.source, where,
                                "CoresPerSocket")
                       * _count(pairs.get("threadspercore", "1"), line.source, where,
                                "ThreadsPerCore"))
        node = _Node(_gpu_gres(pairs.get("gres", ""), line.source, where),
                     _count(cpus, line.source, where, "CPUs"),
                     _count(pairs.get("realmemory", "1"), line.source, where, "RealMemory"),
                     f"{line.source}: {where}")
        for name in expand_hostlist(line.pairs["nodename"], line.source, where):
            if name in nodes:
                raise InputError(line.source, where, f"node {name!r} is defined twice "
                                 f"(first at {nodes[name].line})")
            nodes[name] = node
    return nodes


def _partition_lines(conf: Path, known: dict[str, _Node]) -> dict[str, list[str]]:
    """The partitions of ``slurm.conf`` and their nodes, ``PartitionName=DEFAULT`` applied.

    ``Nodes=ALL`` is every node of ``known``; a partition without ``Nodes`` holds none.
    """
    partitions: dict[str, list[str]] = {}
    defaults: dict[str, str] = {}
    first: dict[str, str] = {}
    for line in _lines(conf):
        if line.first != "partitionname":
            continue
        where = f"line {line.number}"
        unknown = [k for k in line.pairs if k not in PARTITION_KEYS]
        if unknown:
            raise InputError(line.source, where, f"unknown PartitionName key {unknown[0]!r}")
        name = line.pairs["partitionname"]
        if name.upper() == "DEFAULT":
            defaults.update({k: v for k, v in line.pairs.items() if k != "partitionname"})
            continue
        if name in first:
            raise InputError(line.source, where, f"partition {name!r} is defined twice "
                             f"(first at {first[name]})")
        first[name] = f"{line.source}: {where}"
        text = {**defaults, **line.pairs}.get("nodes", "")
        nodes = (list(known) if text.upper() == "ALL" else
                 expand_hostlist(text, line.source, f"{where} Nodes") if text else [])
        for node in nodes:
            if node not in known:
                raise InputError(line.source, f"{where} Nodes", f"node {node!r} is not in "
                                 "slurm.conf (gpuplan reads a partition's nodes by name or "
                                 "host list, not by NodeSet)")
        partitions[name] = nodes
    return partitions


def _gres_lines(path: Path, known: dict[str, _Node]) -> dict[str, _GresNode]:
    """GPU counts by node and type from ``gres.conf`` (``Count``, else the ``File`` range)."""
    found: dict[str, _GresNode] = defaultdict(_GresNode)
    for line in _lines(path):
        where = f"line {line.number}"
        unknown = [k for k in line.pairs if k not in GRES_KEYS]
        if unknown:
            raise InputError(line.source, where, f"unknown gres.conf key {unknown[0]!r}")
        if line.pairs.get("name") != "gpu":
            continue
        if "nodename" not in line.pairs:
            raise InputError(line.source, where, "a GPU line needs NodeName= (gpuplan reads "
                             "one gres.conf for the whole cluster)")
        if "count" in line.pairs:
            count = _count(line.pairs["count"], line.source, where, "Count")
        elif "file" in line.pairs or "multiplefiles" in line.pairs:
            files = line.pairs.get("file") or line.pairs["multiplefiles"]
            count = len(expand_hostlist(files, line.source, where))
        else:
            raise InputError(line.source, where, "a GPU line needs Count= or File=")
        for name in expand_hostlist(line.pairs["nodename"], line.source, where):
            if name not in known:
                raise InputError(line.source, where, f"node {name!r} is not in slurm.conf")
            entry = found[name]
            entry.gpus[line.pairs.get("type", UNTYPED)] += count
            entry.source, entry.line = line.source, where
    return found


@dataclass
class _Switch:
    """A switch of ``topology.conf``: its line, and the nodes or switches under it."""

    where: str
    nodes: list[str]
    switches: list[str]


def _switches(path: Path, known: Container[str]) -> dict[str, _Switch]:
    """The switches of ``topology.conf`` by name, each line checked on its own."""
    switches: dict[str, _Switch] = {}
    for line in _lines(path):
        where = f"line {line.number}"
        unknown = [k for k in line.pairs if k not in TOPOLOGY_KEYS]
        if unknown:
            raise InputError(line.source, where, f"unknown topology.conf key {unknown[0]!r}")
        if line.first != "switchname":
            raise InputError(line.source, where, "a line of topology.conf names a switch: "
                             "SwitchName=NAME with Nodes= or Switches=")
        name = line.pairs["switchname"]
        if name in switches:
            raise InputError(line.source, where, f"switch {name!r} is defined twice (first "
                             f"at {switches[name].where})")
        if ("nodes" in line.pairs) == ("switches" in line.pairs):
            raise InputError(line.source, where, f"switch {name!r}: give Nodes= (a leaf "
                             "switch) or Switches= (the switches under it), one of them")
        switch = _Switch(where, [], [])
        if "nodes" in line.pairs:
            switch.nodes = expand_hostlist(line.pairs["nodes"], line.source, f"{where} Nodes")
            for node in switch.nodes:
                if node not in known:
                    raise InputError(line.source, f"{where} Nodes", f"node {node!r} is not "
                                     "in slurm.conf")
        else:
            switch.switches = expand_hostlist(line.pairs["switches"], line.source,
                                              f"{where} Switches")
        switches[name] = switch
    return switches


def read_topology(path: str | Path, known: Container[str]
                  ) -> tuple[list[str], dict[str, dict[str, str]]]:
    """The levels of ``topology.conf``'s switch tree and each node's switch at each.

    Levels are tiers counted from the leaves (:data:`TIER`: ``tier1`` the leaf switches,
    ``tier2`` the switches above them, ...), widest first. A node's label at tier ``k`` is
    the lowest switch above it whose subtree is ``k`` tiers high (its root where none
    is), so that a tree of uneven depth still nests its domains.

    Parameters
    ----------
    path
        ``topology.conf``.
    known
        The nodes of ``slurm.conf``.

    Raises
    ------
    InputError
        Naming the file, line and key: an unknown key, a line that names no switch, a
        switch defined twice or with both or neither of ``Nodes`` and ``Switches``, a node
        that ``slurm.conf`` does not have or under two leaf switches, a child switch not
        defined, under two switches or in a cycle.
    """
    source = str(path)
    switches = _switches(Path(path), known)
    parent: dict[str, str] = {}
    leaf: dict[str, str] = {}
    for name, switch in switches.items():
        for child in switch.switches:
            if child not in switches:
                raise InputError(source, f"{switch.where} Switches", f"switch {child!r} is "
                                 "not defined in the file")
            if child in parent:
                raise InputError(source, f"{switch.where} Switches", f"switch {child!r} is "
                                 f"under {parent[child]!r} and {name!r}: the switches must "
                                 "form a tree")
            parent[child] = name
        for node in switch.nodes:
            if node in leaf:
                raise InputError(source, f"{switch.where} Nodes", f"node {node!r} is under "
                                 f"the leaf switches {leaf[node]!r} and {name!r}")
            leaf[node] = name
    depth: dict[str, int] = {}
    for name, switch in switches.items():
        up, seen = name, {name}
        while up in parent:
            up = parent[up]
            if up in seen:
                raise InputError(source, switch.where, f"switch {name!r} is in a cycle of "
                                 "switches: the switches must form a tree")
            seen.add(up)
        depth[name] = len(seen) - 1
    # A switch's children are deeper: its height follows from theirs.
    height: dict[str, int] = {}
    for name in sorted(switches, key=lambda name: -depth[name]):
        height[name] = 1 + max((height[c] for c in switches[name].switches), default=0)
    tiers = max(height.values(), default=0)
    labels: dict[str, dict[str, str]] = {}
    for node, first in leaf.items():
        chain = [first]
        while chain[-1] in parent:
            chain.append(parent[chain[-1]])
        labels[node] = {TIER.format(k=k): next((s for s in chain if height[s] >= k),
                                               chain[-1])
                        for k in range(tiers, 0, -1)}
    return [TIER.format(k=k) for k in range(tiers, 0, -1)], labels


def read_slurm_fleet(conf: str | Path, gres: str | Path | None = None,
                     topology: str | Path | None = None) -> dict[str, Any]:
    """The fleet of a Slurm cluster as the ``gpu_types`` and ``nodes`` of an instance file.

    A node's GPUs come from its ``Gres=gpu:TYPE:N`` items; untyped ones (``gpu:N``) take
    their types from ``gres.conf`` when it is given, and are type :data:`UNTYPED`
    otherwise. Nodes without GPUs are left out (an instance's nodes hold GPUs). Each node
    gets the resources ``cpu_milli`` (``CPUs`` x 1000) and ``memory_mib``
    (``RealMemory``), which jobs' ``node_demand`` draws on. With ``topology.conf``, the
    fleet has its tiers as ``topology`` levels (:func:`read_topology`) and each node its
    switches. The ``PartitionName`` lines become ``partitions`` (each with its nodes that
    hold GPUs; one with none is left out), which jobs may name.

    Parameters
    ----------
    conf
        ``slurm.conf``.
    gres
        ``gres.conf``, or None.
    topology
        ``topology.conf``, or None.

    Raises
    ------
    InputError
        Naming the file and line: a line that is not ``KEY=VALUE`` pairs, an unknown
        ``NodeName``, ``PartitionName``, ``gres.conf`` or ``topology.conf`` key, a bad host
        list or count, a node or partition defined twice, a partition, ``gres.conf`` or
        ``topology.conf`` node or count that ``slurm.conf`` does not have, switches that do
        not form a tree, or no GPU at all.
    """
    conf = Path(conf)
    nodes = _node_lines(conf)
    from_gres = {} if gres is None else _gres_lines(Path(gres), nodes)
    for name, entry in from_gres.items():
        node = nodes[name]
        if sum(entry.gpus.values()) != sum(node.gpus.values()) or (
                set(node.gpus) != {UNTYPED} and dict(entry.gpus) != node.gpus):
            raise InputError(entry.source, entry.line, f"node {name!r} has GPUs "
                             f"{dict(entry.gpus)} "
                             f"here but {node.gpus} in {conf}")
        node.gpus = dict(entry.gpus)
    with_gpus = {name: node for name, node in nodes.items() if sum(node.gpus.values())}
    if not with_gpus:
        raise InputError(str(conf), "", "no NodeName line gives GPUs (Gres=gpu:TYPE:N)")
    types = sorted({t for node in with_gpus.values() for t in node.gpus})
    levels, labels = ([], {}) if topology is None else read_topology(topology, nodes)
    fleet: dict[str, Any] = {
        "gpu_types": [{"id": t, "capacity": dict(IMPORTED_CAPACITY)} for t in types],
        "nodes": [{"id": name, "gpus": {t: n for t, n in node.gpus.items() if n},
                   "resources": {"cpu_milli": node.cpus * 1000,
                                 "memory_mib": node.memory_mib},
                   **({"topology": labels[name]} if name in labels else {})}
                  for name, node in with_gpus.items()],
    }
    if levels:
        fleet["topology"] = {"levels": levels}
    partitions = {name: [node for node in members if node in with_gpus]
                  for name, members in _partition_lines(conf, nodes).items()}
    if any(partitions.values()):
        fleet["partitions"] = {name: members for name, members in partitions.items()
                               if members}
    return fleet


#: The ``sacct`` columns :func:`read_sacct` needs, and those it reads when present.
SACCT_NEEDS = ("JobName", "State", "Start", "End", "NodeList")
SACCT_READS = (*SACCT_NEEDS, "JobID", "AllocTRES")
#: The command that writes what :func:`read_sacct` reads (wall-clock times in UTC).
SACCT_COMMAND = ("TZ=UTC sacct -P -X --format=JobID,JobName,State,Start,End,NodeList,"
                 "AllocTRES -j IDS")
_NOT_A_TIME = ("Unknown", "None", "N/A", "")

#: What a schedule of what ran makes of a job, by its Slurm state: its runs are
#: history (done), it runs where it runs until the instance's duration says it ends
#: (running), or it is placed nowhere and free to plan (not started; ended unsuccessfully,
#: to be planned again).
DONE, RUNNING, NOT_STARTED, ENDED = "done", "running", "not started", "ended unsuccessfully"
#: Slurm's job states (sacct(1), squeue(1) "JOB STATE CODES") by what they make of a job.
SLURM_STATES: dict[str, str] = {
    "COMPLETED": DONE,
    **dict.fromkeys(("RUNNING", "CONFIGURING", "COMPLETING", "RESIZING", "SIGNALING",
                     "STAGE_OUT"), RUNNING),
    **dict.fromkeys(("PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"),
                    NOT_STARTED),
    **dict.fromkeys(("FAILED", "TIMEOUT", "NODE_FAIL", "CANCELLED", "OUT_OF_MEMORY",
                     "BOOT_FAIL", "DEADLINE", "PREEMPTED", "SPECIAL_EXIT", "REVOKED"), ENDED),
}
#: Slurm states of a job that holds its GPUs without running: no plan can say when it ends.
SLURM_HELD = ("SUSPENDED", "STOPPED")
#: The ``method`` of a schedule of what ran (:func:`read_sacct`, :func:`read_squeue`): a
#: record, not a plan (``gpuplan replan`` takes its jobs placed nowhere as free, and the
#: runs of its done jobs as long as they took).
RECORDS = ("sacct", "squeue")
#: The ``squeue`` columns :func:`read_squeue` reads, as its header names them.
SQUEUE_COLUMNS = ("JOBID", "NAME", "STATE", "START_TIME", "NODELIST", "TRES_PER_NODE")
#: The command that writes what :func:`read_squeue` reads (start times in UTC).
SQUEUE_COMMAND = "TZ=UTC squeue -o '%i|%j|%T|%S|%N|%b' -j IDS"


def _utc(text: str, source: str, where: str) -> datetime | None:
    if text in _NOT_A_TIME:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise InputError(source, where, f"{text!r} is not a time YYYY-MM-DDTHH:MM:SS") from None


def _allocated_type(tres: str, node: int, instance: Instance, source: str,
                    where: str) -> tuple[str | None, int, bool]:
    """The GPU type and count a job held, from ``AllocTRES``; whether it held shards.

    GPUs are ``gres/gpu:TYPE=N`` (all nodes' together); a job that held shards
    (``gres/shard=N``) held one GPU per node. The type is the node's type of that name in
    any case; a name the node lacks is returned as it is, for the caller to refuse.
    """
    typed: dict[str, int] = {}
    total = 0
    shards = False
    for item in filter(None, tres.split(",")):
        key, _, value = item.partition("=")
        if key == "gres/gpu":
            total = _count(value, source, where, "gres/gpu")
        elif key.startswith("gres/gpu:"):
            typed[key.removeprefix("gres/gpu:")] = _count(value, source, where, key)
        elif key.split(":")[0] == "gres/shard":
            shards = _count(value, source, where, key) > 0
    if len(typed) > 1:
        raise InputError(source, where, f"the job held GPUs of several types {typed}: a "
                         "gpuplan job runs on one type")
    held = [instance.type_ids[t] for t in range(instance.n_types)
            if instance.node_gpus[node, t]]
    if typed:
        ((name, count),) = typed.items()
        # Slurm's accounting writes GRES types in lower case.
        return next((t for t in held if t.lower() == name.lower()), name), count, False
    if shards:
        # Shards come from the node's sharing GPUs.
        sharing = [t for t in held if instance.shared[instance.type_index[t]]]
        return (sharing or held)[0], 0, True
    if total and len(held) > 1:
        raise InputError(source, where, "AllocTRES gives no GPU type and the node holds "
                         f"several ({', '.join(held)}): add gres/gpu:TYPE to "
                         "AccountingStorageTRES (gpuplan export slurm-conf does)")
    return held[0], total, False


@dataclass(frozen=True)
class _Row:
    """One Slurm job of a gpuplan job, as ``sacct`` or ``squeue`` lists it.

    Times are seconds from the epoch (None where Slurm gives none); where it ran is read
    only for a job that runs or is done.
    """

    job: str
    state: str
    kind: str
    start: float | None
    end: float | None
    nodes: tuple[str, ...]
    per_node: int
    gpu_type: str
    where: str


@dataclass(frozen=True)
class _Reading:
    """What a row is read against: the instance, t = 0, the file and the command that wrote it."""

    instance: Instance
    epoch: datetime
    source: str
    #: ``sacct`` or ``squeue``: the schedule's method.
    method: str

    def seconds(self, text: str, where: str) -> float | None:
        """A UTC wall-clock time of the file as seconds from the epoch; None for none."""
        when = _utc(text, self.source, where)
        if when is None:
            return None
        offset = self.epoch.utcoffset() or timedelta(0)
        return (when - (self.epoch.replace(tzinfo=None) - offset)).total_seconds()

    def row(self, job: str, state: str, start: str, end: str, nodes: str, tres: str,
            where: str) -> _Row:
        """One row, checked: a job of the instance, a known state, its nodes and GPUs."""
        source, instance = self.source, self.instance
        if job not in instance.job_index:
            raise InputError(source, where, f"job name {job!r} is not a job of "
                             f"{instance.name}; select the plan's jobs by their ids "
                             f"({self.method} -j; the export's job-ids.csv lists them)")
        word = state.split(" ", 1)[0]
        if word in SLURM_HELD:
            raise InputError(source, where, f"job {job!r} is {word}: it holds its GPUs "
                             "without running, which no plan can say; resume or cancel it "
                             "(scontrol resume, scancel), then read the state again")
        if word not in SLURM_STATES:
            raise InputError(source, where, f"unknown Slurm state {state!r}; known: "
                             f"{', '.join(sorted(SLURM_STATES))}, {', '.join(SLURM_HELD)}")
        kind = SLURM_STATES[word]
        began, ended = self.seconds(start, where), self.seconds(end, where)
        if kind not in (DONE, RUNNING):
            return _Row(job, state, kind, began, ended, (), 0, "", where)
        if began is None or (kind == DONE and ended is None):
            raise InputError(source, where, f"job {job!r} is {word} but has no "
                             f"{'start' if began is None else 'end'} time (running jobs need "
                             "their start, done ones their start and end)")
        names = expand_hostlist(nodes, source, where)
        for node in names:
            if node not in instance.node_index:
                raise InputError(source, where, f"node {node!r} is not a node of "
                                 f"{instance.name}")
        names.sort(key=instance.node_index.__getitem__)
        gpu_type, count, shards = _allocated_type(tres, instance.node_index[names[0]],
                                                  instance, source, where)
        if gpu_type not in instance.type_index:
            raise InputError(source, where, f"GPU type {gpu_type!r} is not a type of "
                             f"{instance.name}")
        return _Row(job, state, kind, began, ended, tuple(names),
                    1 if shards else count // len(names), gpu_type, where)


def read_sacct(path: str | Path, instance: Instance, epoch: datetime,
               at: float | None = None) -> Schedule:
    """What a cluster ran and runs, from ``sacct -P`` output, as a schedule of ``instance``.

    Rows are matched to jobs by ``JobName`` (``gpuplan export slurm`` names each Slurm job
    after its job); steps (``JobID`` with a dot) are skipped. Each job is what its Slurm
    state makes of it (:data:`SLURM_STATES`):

    - **done** (``COMPLETED``): each of its rows is a segment from its ``Start`` to its
      ``End``, history;
    - **running** (``RUNNING``, ``Start`` set, ``End`` Unknown): a segment from its start
      to its planned end, when the work its done rows left takes the instance's duration
      on its GPUs; a later row of the job still pending (the next segment of a paused
      plan) is left out, as the segment runs the job to its end;
    - **not started** (``PENDING`` and the other queued states, or no row at all) and
      **ended unsuccessfully** (``FAILED``, ``TIMEOUT``, ``NODE_FAIL``, ``CANCELLED``,
      ...): unplaced, their Slurm state the reason; a re-plan plans them (a failed job
      from the start).

    Segments are on the row's nodes (``NodeList``, a host list for a multi-node job), on
    GPUs of the type ``AllocTRES`` names (the node's only type when it names none), as
    many on each node, one per node for a job that held shards, numbered from the lowest
    free, as Slurm gives no GPU index; times are wall-clock UTC, read relative to
    ``epoch``. The work of a done segment is left for the verifier to infer from its
    interval, so a job that ran longer or shorter than the instance says is reported,
    not hidden. The schedule's ``method`` is ``sacct`` (one of :data:`RECORDS`).

    Parameters
    ----------
    path
        The ``sacct -P`` output (:data:`SACCT_COMMAND`), with its header line.
    instance
        The instance that was planned.
    epoch
        The plan's time zero.
    at
        The instant the output was taken, in seconds from ``epoch``; needed when a job
        runs.

    Raises
    ------
    InputError
        Naming the file and line: a missing column, a row with the wrong number of
        fields, a job name that is not a job of the instance, an unknown node, GPU type
        or Slurm state, a time that does not parse or comes after ``at``; a running job
        without ``at``, or past its planned end at ``at``; a suspended job; a job that
        ran in part and waits for the rest.
    """
    source = str(path)
    lines = [line for line in read_text(Path(path)).splitlines() if line.strip()]
    if not lines:
        raise InputError(source, "", "empty: expected sacct -P output with its header line")
    header = lines[0].split("|")
    missing = [name for name in SACCT_NEEDS if name not in header]
    if missing:
        raise InputError(source, "line 1", f"missing column(s) {', '.join(missing)}; write "
                         f"the file with: {SACCT_COMMAND}")
    column = {name: header.index(name) for name in SACCT_READS if name in header}
    reading = _Reading(instance, epoch, source, "sacct")
    rows: list[_Row] = []
    for number, line in enumerate(lines[1:], start=2):
        where = f"line {number}"
        fields = line.split("|")
        if len(fields) != len(header):
            raise InputError(source, where, f"{len(fields)} fields, the header has "
                             f"{len(header)} (was the file written with -P?)")
        row = {name: fields[k] for name, k in column.items()}
        if "." in row.get("JobID", ""):
            continue
        rows.append(reading.row(row["JobName"], row["State"], row["Start"], row["End"],
                                row["NodeList"], row.get("AllocTRES", ""), where))
    return _record(reading, rows, at, {})


def read_squeue(path: str | Path, instance: Instance, epoch: datetime, at: float,
                plan: Schedule) -> Schedule:
    """What runs and waits in a cluster, from ``squeue`` output, as a schedule of ``instance``.

    ``squeue`` lists the jobs in the queue, running or waiting, by the format of
    :data:`SQUEUE_COMMAND` (its header line names the columns :data:`SQUEUE_COLUMNS`).
    Jobs are matched by name and their states read as :func:`read_sacct` reads them: a
    running job is a segment from its ``START_TIME`` to its planned end on its
    ``NODELIST``, with the GPUs ``TRES_PER_NODE`` asks of each node; a waiting one is
    unplaced, not started. A job ``squeue`` does not list has left the queue, and the
    plan it was exported from says what it did: it is done as ``plan`` ran it, its
    planned segments that start before ``at`` cut there (squeue cannot tell a done job
    from a failed one: read sacct when jobs may have failed); one planned to start at
    ``at`` or later never started (unplaced). The planned segments that end before a
    running job starts are its history. The schedule's ``method`` is ``squeue``.

    Parameters
    ----------
    path
        The ``squeue`` output (:data:`SQUEUE_COMMAND`), with its header line.
    instance
        The instance that was planned.
    epoch
        The plan's time zero.
    at
        The instant the output was taken, in seconds from ``epoch``.
    plan
        The plan the jobs were exported from.

    Raises
    ------
    InputError
        As :func:`read_sacct` does, and for a header without the columns of
        :data:`SQUEUE_COLUMNS`.
    """
    source = str(path)
    lines = [line for line in read_text(Path(path)).splitlines() if line.strip()]
    header = lines[0].split("|") if lines else []
    if [name.strip() for name in header] != list(SQUEUE_COLUMNS):
        raise InputError(source, "line 1", f"expected the header {'|'.join(SQUEUE_COLUMNS)}; "
                         f"write the file with: {SQUEUE_COMMAND}")
    reading = _Reading(instance, epoch, source, "squeue")
    rows: list[_Row] = []
    for number, line in enumerate(lines[1:], start=2):
        where = f"line {number}"
        fields = [field.strip() for field in line.split("|")]
        if len(fields) != len(SQUEUE_COLUMNS):
            raise InputError(source, where, f"{len(fields)} fields, the header has "
                             f"{len(SQUEUE_COLUMNS)}; write the file with: {SQUEUE_COMMAND}")
        _, job, state, start, nodes, per_node = fields
        count = len(expand_hostlist(nodes, source, where)) if nodes else 1
        rows.append(reading.row(job, state, start, "", nodes,
                                _per_node_tres(per_node, count, source, where), where))
    planned: dict[str, list[Segment]] = defaultdict(list)
    for segment in plan.segments:
        planned[segment.job].append(segment)
    return _record(reading, rows, at, planned)


def _per_node_tres(text: str, nodes: int, source: str, where: str) -> str:
    """The GPUs of ``TRES_PER_NODE`` over ``nodes`` nodes, as ``AllocTRES`` writes them.

    squeue writes ``gres:gpu:TYPE:N`` (Slurm 22.05; ``gres/gpu:TYPE:N`` later), ``gpu:N``
    without a type and ``shard:N`` for shards, per node.
    """
    tres = []
    for item in filter(None, text.split(",")):
        if item == "N/A":
            continue
        parts = item.removeprefix("gres:").removeprefix("gres/").split(":")
        if parts[0] not in ("gpu", "shard"):
            continue
        count = _count(parts[-1], source, where, item) if parts[-1].isdigit() else 1
        named = parts[1:-1] if parts[-1].isdigit() else parts[1:]
        kind = f"gres/{parts[0]}" + (f":{named[0]}" if named else "")
        tres.append(f"{kind}={count * nodes}")
    return ",".join(tres)


@dataclass(frozen=True)
class _Run:
    """One run of a job, times from the epoch: done, running (``end`` None) or as planned.

    ``gpus`` are the planned GPUs of a run :func:`read_squeue` takes from the plan; None:
    numbered from the lowest free. ``where`` is its line, for messages.
    """

    start: float
    job: str
    nodes: tuple[str, ...]
    per_node: int
    gpu_type: str
    end: float | None
    gpus: tuple[str, ...] | None = None
    where: str = ""


def _runs_of(reading: _Reading, job: str, mine: list[_Row], at: float | None,
             planned: list[Segment]) -> list[_Run] | str:
    """A job's runs (history, then the one running), or why it is unplaced.

    ``planned`` are its planned segments, for a job of an output that lists only the
    queue (squeue's): those that end before a run it lists starts are taken as run as
    planned, and so are all that start before ``at`` (cut there) when it lists none.
    """
    def run(row: _Row) -> _Run:
        assert row.start is not None
        return _Run(row.start, job, row.nodes, row.per_node, row.gpu_type, row.end,
                    where=row.where)

    def as_planned(segment: Segment, end: float) -> _Run:
        return _Run(segment.start_s, job, (segment.node,), 0, segment.gpu_type, end,
                    tuple(segment.gpu_ids))

    source = reading.source
    running = [row for row in mine if row.kind == RUNNING]
    done = [row for row in mine if row.kind == DONE]
    if len(running) > 1:
        raise InputError(source, running[1].where, f"job {job!r} runs twice at once (also "
                         f"at {running[0].where})")
    if running:
        if at is None:
            raise InputError(source, running[0].where, f"job {job!r} is "
                             f"{running[0].state}: give the instant this output was taken "
                             "(`at`), for its planned end")
        first = running[0].start
        assert first is not None
        return [*(as_planned(s, s.end_s) for s in planned if s.end_s <= first),
                *map(run, done), run(running[0])]
    if done and mine[-1].kind == DONE:
        return [run(row) for row in done]
    if done:
        raise InputError(source, mine[-1].where, f"job {job!r} ran in part ({done[-1].where}) "
                         f"and is {mine[-1].state} for the rest: a job paused between its "
                         "segments is not read; read the state while it runs or once it ended")
    if mine:
        return f"{mine[-1].kind}: Slurm state {mine[-1].state}"
    if at is not None and any(s.start_s < at for s in planned):
        return [as_planned(s, min(s.end_s, at)) for s in planned if s.start_s < at]
    return f"{NOT_STARTED}: not in the {reading.method} output"


def _record(reading: _Reading, rows: list[_Row], at: float | None,
            planned: dict[str, list[Segment]]) -> Schedule:
    """The rows as an unverified schedule of what ran: segments, and unplaced with why."""
    instance, source = reading.instance, reading.source
    if at is not None:
        for row in rows:
            late = next((t for t in (row.start, row.end) if t is not None and t > at), None)
            if row.kind in (DONE, RUNNING) and late is not None:
                raise InputError(source, row.where, f"job {row.job!r} has a time {late:g} s "
                                 f"from the epoch, after the output was taken (`at` = "
                                 f"{at:g} s)")
    by_job: dict[str, list[_Row]] = defaultdict(list)
    for row in rows:
        by_job[row.job].append(row)
    runs: list[_Run] = []
    unplaced = []
    for job in instance.job_ids:
        found = _runs_of(reading, job, by_job.get(job, []), at, planned.get(job, []))
        if isinstance(found, str):
            unplaced.append(Unplaced(job=job, reason=found))
        else:
            runs.extend(found)
    runs.sort(key=lambda run: (run.start, run.job))
    segments = _numbered(instance, runs)
    # The work each job's earlier runs did, at the instance's durations.
    done: dict[str, float] = defaultdict(float)
    for segment, run in zip(segments, runs, strict=True):
        if run.end is not None:
            done[run.job] += (segment.end_s - segment.start_s) / _takes(instance, segment)
    for k, run in enumerate(runs):
        if run.end is None:
            assert at is not None
            segments[k] = _planned_end(reading, segments[k], done[run.job], at, run.where)
    return Schedule(
        instance=instance.name, objective_kind=instance.objective.value,
        status=Status.FEASIBLE, objective=None, bound=None, gap=None, method=reading.method,
        solver="slurm", wall_time_s=0.0, seed=0, gpuplan_version=__version__,
        epoch=reading.epoch, segments=segments, unplaced=unplaced)


def _takes(instance: Instance, segment: Segment) -> float:
    """Seconds the whole job takes where the segment runs it (its spread slowdown too)."""
    j, t = instance.job_index[segment.job], instance.type_index[segment.gpu_type]
    seconds = float(instance.duration[j, t])
    if not segment.gpu_ids:
        return seconds
    # One GPU of each node: the nodes the gang spans, each once.
    per_node = {instance.gpu_node[instance.gpu_index[g]]: instance.gpu_index[g]
                for g in segment.gpu_ids}
    return seconds * instance.spread_factor(j, instance.gpu_node[list(per_node.values())])


def _planned_end(reading: _Reading, segment: Segment, done: float, at: float,
                 where: str) -> Segment:
    """A running segment to when the work its job's earlier runs left (``done``) is done.

    Raises
    ------
    InputError
        If that is not after ``at``: the job runs longer than the instance says.
    """
    takes = _takes(reading.instance, segment)
    end = segment.start_s + max(0.0, 1.0 - done) * takes
    if end <= at:
        raise InputError(reading.source, where, f"job {segment.job!r} started at "
                         f"{segment.start_s:g} s and still runs at {at:g} s, past its planned "
                         f"end at {end:g} s (it takes {takes:g} s on {segment.gpu_type} in "
                         f"{reading.instance.name}): the state would have it done; raise its "
                         "duration_s in the instance file to what it will take, then read the "
                         "state again")
    return segment.model_copy(update={"end_s": end})


def _numbered(instance: Instance, runs: list[_Run]) -> list[Segment]:
    """Segments of the runs (in start order), each on the lowest-numbered GPUs free then.

    A run's segment names its first node; a planned run keeps its GPUs; a running one
    holds its GPUs to the end (its segment ends where it starts, for the caller to set).
    """
    free_at: dict[str, float] = {}
    segments = []
    for run in runs:
        if run.gpus is not None:
            gpus = list(run.gpus)
        else:
            t = instance.type_index[run.gpu_type]
            gpus = []
            for node in run.nodes:
                n = instance.node_index[node]
                first = sum(int(instance.node_gpus[n, k]) for k in range(t))
                own = [f"{node}/{first + k}" for k in range(int(instance.node_gpus[n, t]))]
                idle = [g for g in own if free_at.get(g, run.start) <= run.start]
                # Too few idle means Slurm ran more than the node holds (or shards shared a
                # GPU): keep the overlap, so that the verifier judges it.
                gpus += (idle + [g for g in own if g not in idle])[:run.per_node]
        for gpu in gpus:
            free_at[gpu] = float("inf") if run.end is None else run.end
        segments.append(Segment(job=run.job, node=run.nodes[0], gpu_type=run.gpu_type,
                                gpu_ids=gpus, start_s=run.start,
                                end_s=run.start if run.end is None else run.end))
    return segments
