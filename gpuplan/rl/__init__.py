"""Learned scheduling policies: Gymnasium environments, masked PPO, safe policy folders.

This package needs the optional extra ``rl`` (gymnasium, stable-baselines3, sb3-contrib,
torch): ``pip install -e '.[rl]'``. The rest of gpuplan never imports it; the command
line imports it only for ``gpuplan rl`` and ``--policy rl:DIR``, and says how to install
it when it is missing (:func:`require`).

- :mod:`gpuplan.rl.ordering`: which waiting job starts next, on SWF traces under
  RLScheduler's machine (:class:`~gpuplan.simulate.hpc.HpcSimulator`);
- :mod:`gpuplan.rl.placement`: which node and GPUs the next pod of the FGD replay takes;
- :mod:`gpuplan.rl.policy`: the networks, and policy folders saved as weights plus a JSON
  description, loaded without unpickling;
- :mod:`gpuplan.rl.train`: masked PPO with a learning curve.

The environments are registered with Gymnasium as :data:`ENV_IDS` when this package is
imported.
"""

from __future__ import annotations

import importlib.util

from gpuplan.core.errors import InputError

#: What the extra installs, for messages.
INSTALL = "pip install -e '.[rl]'   (gymnasium, stable-baselines3, sb3-contrib, torch 2.13.0)"
#: The modules the extra provides.
_NEEDED = ("gymnasium", "stable_baselines3", "sb3_contrib", "torch")

#: Gymnasium ids of gpuplan's environments.
ENV_IDS = {"ordering": "gpuplan/HpcOrdering-v0", "placement": "gpuplan/PodPlacement-v0"}


def missing() -> list[str]:
    """The modules of the extra that are not installed."""
    return [name for name in _NEEDED if importlib.util.find_spec(name) is None]


def require(source: str = "gpuplan rl") -> None:
    """Refuse, naming how to install it, when the extra is missing.

    Raises
    ------
    InputError
        Naming ``source`` and the missing modules.
    """
    absent = missing()
    if absent:
        raise InputError(source, "", f"needs the optional extra 'rl' ({', '.join(absent)} "
                         f"not installed): {INSTALL}")


def register_envs() -> None:
    """Register the environments with Gymnasium (once)."""
    import gymnasium

    known = gymnasium.registry
    if ENV_IDS["ordering"] not in known:
        gymnasium.register(ENV_IDS["ordering"], entry_point="gpuplan.rl.ordering:OrderingEnv")
    if ENV_IDS["placement"] not in known:
        gymnasium.register(ENV_IDS["placement"],
                           entry_point="gpuplan.rl.placement:PlacementEnv")


if not missing():
    register_envs()
