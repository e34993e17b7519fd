"""Named parts of one kind: the registry shape of every simulator's policies."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gpuplan.core.errors import InputError
from gpuplan.core.sim import Registry


@dataclass(frozen=True)
class _Part:
    name: str


def test_a_registry_lists_its_parts_in_order_and_names_the_setting_when_asked_wrong() -> None:
    """Broken, `--policy nope` would be a traceback or a message without the choices."""
    parts = Registry("queue policy", "policy", (_Part("fifo"), _Part("sjf")))
    assert list(parts) == ["fifo", "sjf"]
    assert parts.part("sjf") == _Part("sjf")
    with pytest.raises(InputError) as caught:
        parts.part("nope")
    assert "unknown queue policy 'nope'; choose one of: fifo, sjf" in str(caught.value)
    assert "policy" in caught.value.source


def test_parts_are_registered_under_their_own_names_once() -> None:
    """A plug-in added under another name, or twice, would be chosen by the wrong flag."""
    with pytest.raises(ValueError, match="queue policy 'fifo' is registered twice"):
        Registry("queue policy", "policy", (_Part("fifo"), _Part("fifo")))
    parts = Registry("queue policy", "policy", ())
    parts["mine"] = _Part("mine")
    assert parts.part("mine") == _Part("mine")
    with pytest.raises(ValueError, match="its own name"):
        parts["other"] = _Part("mine")
    del parts["mine"]
    assert len(parts) == 0
