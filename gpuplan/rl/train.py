"""Masked PPO on gpuplan's environments: a policy folder and its learning curve.

:func:`train` runs sb3-contrib's MaskablePPO with :class:`~gpuplan.rl.policy.KernelPolicy`
(masks from the environment's ``action_masks``), records each finished episode (the
steps so far, its reward and what it measured), and writes the policy folder
(:mod:`gpuplan.rl.policy`) with ``curve.csv`` and ``learning_curve.png`` beside it. Given
a validation score, it keeps the weights that scored best on it (checked every few
rollouts and at the end), which are the ones saved.
PPO's settings (:class:`PpoSettings`) are RLScheduler's where it states them (clip 0.2,
lambda 0.97), with the discount at 1: the reward comes once, at an episode's end.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from gpuplan.core.files import csv_text, write_text_atomic
from gpuplan.rl.policy import KernelPolicy, PolicyDescription, save_policy

#: The fewest steps per environment copy in a rollout.
MIN_ROLLOUT = 64
#: Files a training run writes beside the policy.
CURVE_FILE, CURVE_PLOT = "curve.csv", "learning_curve.png"


@dataclass(frozen=True)
class PpoSettings:
    """MaskablePPO's settings for gpuplan's environments.

    Attributes
    ----------
    n_steps
        Steps per update (per environment copy).
    batch_size, n_epochs, learning_rate, gamma, gae_lambda, clip_range, ent_coef
        As sb3 names them.
    hidden
        Widths of the kernel's shared layers.
    envs
        Environment copies stepped in turn.
    """

    n_steps: int = 2048
    batch_size: int = 256
    n_epochs: int = 4
    learning_rate: float = 1e-3
    gamma: float = 1.0
    gae_lambda: float = 0.97
    clip_range: float = 0.2
    ent_coef: float = 0.0
    hidden: tuple[int, ...] = (32, 16, 8)
    envs: int = 2


#: Scores a policy on validation episodes (lower is better).
Validate = Callable[[KernelPolicy], float]


class _Curve(BaseCallback):
    """Records episodes, stops at a wall-clock limit, keeps the best validated weights."""

    def __init__(self, fields: tuple[str, ...], minutes: float | None,
                 validate: Validate | None, every: int) -> None:
        super().__init__()
        self.fields = fields
        self.rows: list[dict[str, Any]] = []
        self.deadline = None if minutes is None else time.monotonic() + 60 * minutes
        self.stopped_early = False
        self.validate, self.every = validate, every
        self.rollouts = 0
        self.checks: list[tuple[int, float]] = []
        self.best: tuple[float, int, dict[str, torch.Tensor]] | None = None

    def _on_rollout_end(self) -> None:
        self.rollouts += 1
        if self.validate is None or self.rollouts % self.every:
            return
        policy = self.model.policy
        assert isinstance(policy, KernelPolicy)
        policy.set_training_mode(False)
        score = self.validate(policy)
        self.checks.append((self.num_timesteps, score))
        if self.best is None or score < self.best[0]:
            state = {k: v.detach().clone() for k, v in policy.state_dict().items()}
            self.best = (score, self.num_timesteps, state)

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", []):
            episode = info.get("episode")
            if episode is not None:
                row = {"steps": self.num_timesteps, "reward": float(episode["r"]),
                       "seconds": round(float(episode["t"]), 3)}
                row.update({name: float(info[name]) for name in self.fields if name in info})
                self.rows.append(row)
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.stopped_early = True
            return False
        return True


def _plot(rows: list[dict[str, Any]], title: str, path: Path) -> None:
    from matplotlib.figure import Figure

    from gpuplan.exporters.plot import write_figure

    figure = Figure(figsize=(7, 4))
    axes = figure.add_subplot()
    steps = np.array([r["steps"] for r in rows], dtype=np.float64)
    reward = np.array([r["reward"] for r in rows], dtype=np.float64)
    axes.plot(steps, reward, ".", alpha=0.25, label="episode")
    window = max(1, len(rows) // 25)
    if len(rows) >= window:
        smooth = np.convolve(reward, np.ones(window) / window, mode="valid")
        axes.plot(steps[window - 1:], smooth, label=f"mean of {window}")
    axes.set_xlabel("environment steps")
    axes.set_ylabel("episode reward")
    axes.set_title(title)
    axes.legend()
    write_figure(figure, path)


def train(make_env: Callable[[], gym.Env[Any, Any]], description: PolicyDescription,
          steps: int, seed: int, folder: Path, settings: PpoSettings | None = None,
          progress: bool = False, minutes: float | None = None,
          fields: tuple[str, ...] = (), validate: Validate | None = None,
          validate_every: int = 10) -> dict[str, Any]:
    """Train a policy with MaskablePPO and write its folder, curve and plot.

    Parameters
    ----------
    make_env
        Builds one copy of the environment.
    description
        The policy's description (its ``training`` is filled in here).
    steps
        Environment steps to train for.
    seed
        Seeds the environments and the network.
    folder
        Where the policy folder is written.
    settings
        PPO's settings.
    progress
        Show a progress bar.
    minutes
        Stop after this many minutes of wall time (the steps done are recorded).
    fields
        Episode ``info`` entries recorded in the curve.
    validate
        Scores the policy on validation episodes (lower is better), every
        ``validate_every`` rollouts; the best-scoring weights are the ones saved (model
        selection on episodes apart from any evaluation's).

    Returns
    -------
    dict
        The training record stored in ``policy.json``.
    """
    chosen = settings or PpoSettings()
    # A run shorter than one rollout collects only what it asked for.
    rollout = max(MIN_ROLLOUT, min(chosen.n_steps, -(-steps // chosen.envs)))
    chosen = dataclasses.replace(chosen, n_steps=rollout,
                                 batch_size=min(chosen.batch_size, rollout * chosen.envs))
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    vec = DummyVecEnv([lambda: Monitor(make_env(), info_keywords=fields)
                       for _ in range(chosen.envs)])
    vec.seed(seed)
    model = MaskablePPO(KernelPolicy, vec, n_steps=chosen.n_steps,
                        batch_size=chosen.batch_size, n_epochs=chosen.n_epochs,
                        learning_rate=chosen.learning_rate, gamma=chosen.gamma,
                        gae_lambda=chosen.gae_lambda, clip_range=chosen.clip_range,
                        ent_coef=chosen.ent_coef, seed=seed, device="cpu", verbose=0,
                        policy_kwargs={"hidden": chosen.hidden})
    curve = _Curve(fields, minutes, validate, validate_every)
    began = time.perf_counter()
    model.learn(total_timesteps=steps, callback=curve, progress_bar=progress)
    seconds = time.perf_counter() - began
    policy = model.policy
    assert isinstance(policy, KernelPolicy)
    if validate is not None:
        policy.set_training_mode(False)
        curve.checks.append((int(model.num_timesteps), validate(policy)))
        if curve.best is not None and curve.best[0] < curve.checks[-1][1]:
            policy.load_state_dict(curve.best[2])
    chosen_at = (int(model.num_timesteps) if curve.best is None
                 or curve.best[0] >= curve.checks[-1][1] else curve.best[1])
    record = {**description.training, "steps": int(model.num_timesteps),
              "steps_asked": steps, "seed": seed, "wall_time_s": round(seconds, 1),
              "stopped_at_minutes": minutes if curve.stopped_early else None,
              "episodes": len(curve.rows), "ppo": asdict(chosen),
              "torch": torch.__version__}
    if validate is not None:
        record["validation"] = {"weights_from_step": chosen_at,
                                "checks": [[s, round(v, 4)] for s, v in curve.checks]}
    done = description.model_copy(update={"training": record, "hidden": list(chosen.hidden)})
    save_policy(policy, done, folder)
    columns = ("steps", "reward", "seconds", *fields)
    write_text_atomic(folder / CURVE_FILE, csv_text(columns, [[r.get(c, "") for c in columns]
                                                              for r in curve.rows]))
    if curve.rows:
        _plot(curve.rows, f"{description.env}: {record.get('trace', '')}",
              folder / CURVE_PLOT)
    return record
