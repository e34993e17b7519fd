"""The recorder: segments and events as they close, built into one verified-ready Result."""

from __future__ import annotations

import numpy as np

from gpuplan.core.result import EventKind
from gpuplan.core.sim import Recorder


def test_a_run_is_its_segments_and_events_in_the_order_they_happened() -> None:
    """Broken, the run log would lose a segment's overheads or list events out of order."""
    recorder = Recorder()
    gpus = np.array([0, 1])
    recorder.event(0.0, EventKind.START, 3, gpus)
    recorder.segment(3, 0, 0.0, 50.0, gpus, work=0.4, restore=0.0, migrate=0.0, lost=0.1)
    recorder.event(50.0, EventKind.PREEMPT, 3, gpus)
    recorder.event(60.0, EventKind.MIGRATE, 3, np.array([4, 5]))
    recorder.segment(3, 1, 60.0, 200.0, np.array([4, 5]), work=0.7, restore=30.0,
                     migrate=60.0)
    recorder.event(200.0, EventKind.COMPLETE, 3, np.array([4, 5]))
    assert len(recorder) == 2
    result = recorder.result("test")
    assert result.solver == "test"
    assert result.job.tolist() == [3, 3]
    assert result.gpu_type.tolist() == [0, 1]
    assert result.end.tolist() == [50.0, 200.0]
    assert result.work.tolist() == [0.4, 0.7]
    assert result.restore_s.tolist() == [0.0, 30.0]
    assert result.migrate_s.tolist() == [0.0, 60.0]
    assert result.lost is not None and result.lost.tolist() == [0.1, 0.0]
    assert [e.kind for e in result.events] == [EventKind.START, EventKind.PREEMPT,
                                               EventKind.MIGRATE, EventKind.COMPLETE]
    assert result.node is None


def test_columns_holding_only_defaults_are_left_out_but_named_nodes_kept() -> None:
    """Broken, every run log would carry a node and a lost column of defaults."""
    recorder = Recorder()
    recorder.segment(0, 0, 0.0, 1.0, np.array([2]), node=5)
    recorder.segment(1, 0, 0.0, 1.0, np.array([3]))
    result = recorder.result("test")
    assert result.lost is None
    assert result.node is not None and result.node.tolist() == [5, -1]
