"""`load_policy`: act with a trained module from a checkpoint, without building an algorithm or Ray.

    policy = load_policy("runs/cartpole/checkpoint")            # module + saved connector states
    action = policy.compute_single_action(obs)                  # greedy (explore=False)
    actions = policy.compute_actions(obs_batch, explore=True)   # sampled, one row per observation
    policy.export_torchscript("policy.pt")                      # module-space obs -> action dist inputs
    policy.record_video("CartPole-v1", "cartpole.mp4")          # one episode, played and saved as mp4

The policy runs what a runner runs: the env-to-module pipeline (e.g. `MeanStdFilter` with the saved
statistics), the module's inference or exploration pass, and the module-to-env pipeline (sampling,
action unsquashing), all rebuilt from the pieces' metadata and states in the checkpoint. Nothing is
unpickled and neither `ray` nor the algorithm classes are imported.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from flywheel.checkpoints.checkpointable import load_tree
from flywheel.checkpoints.components import (
    COMPONENT_ENV_RUNNER,
    COMPONENT_ENV_TO_MODULE_CONNECTOR,
    COMPONENT_LEARNER,
    COMPONENT_LEARNER_GROUP,
    COMPONENT_MODULE_TO_ENV_CONNECTOR,
    COMPONENT_RL_MODULE,
)
from flywheel.checkpoints.registry import Allowed
from flywheel.checkpoints.tree import read_tree
from flywheel.columns import Columns
from flywheel.connectors.pipeline import ConnectorPipelineV2
from flywheel.core.rl_module.rl_module import RLModule
from flywheel.env.make import make_env
from flywheel.env.observation_checks import check_explore, check_observations
from flywheel.env.recording import RecordEpisodeFrames
from flywheel.episodes import SingleAgentEpisode
from flywheel.errors import CheckpointError, InferenceError, ModuleError
from flywheel.reporting.media import VIDEO_FPS
from flywheel.reporting.videos import save_video
from flywheel.typing import DEFAULT_MODULE_ID

MODULES_DIR = (COMPONENT_LEARNER_GROUP, COMPONENT_LEARNER, COMPONENT_RL_MODULE)
ENV_TO_MODULE_DIR = (COMPONENT_ENV_RUNNER, COMPONENT_ENV_TO_MODULE_CONNECTOR)
MODULE_TO_ENV_DIR = (COMPONENT_ENV_RUNNER, COMPONENT_MODULE_TO_ENV_CONNECTOR)


def load_policy(
    path: str | os.PathLike,
    module_id: str = DEFAULT_MODULE_ID,
    *,
    classes: Iterable[Any] = (),
    trusted: bool = False,
) -> Policy:
    """The policy of `module_id` in the algorithm checkpoint at `path` (what `save_to_path` returned).

    Every metadata file the policy needs is verified before any is decoded, and only flywheel's own
    classes and `classes` (your module class or connector pieces, e.g. `classes=[MyModule]`) are
    built; `trusted=True` lets the checkpoint name classes to import instead. Nothing is unpickled.
    """
    root = read_tree(path)
    if not {MODULES_DIR[0], ENV_TO_MODULE_DIR[0]} <= set(root.children):
        raise CheckpointError(
            f"{root.path} holds a {root.metadata['class']}, not an algorithm checkpoint (it has no learner_group "
            "and env_runner components). Fix: pass the directory algo.save_to_path() returned."
        )
    modules = root.at("/".join(MODULES_DIR))
    if module_id not in modules.children:
        raise CheckpointError(
            f"The checkpoint at {root.path} has no module {module_id!r}; its modules are {list(modules.children)}. "
            f"Fix: load_policy(path, module_id=...) with one of them."
        )
    allowed = Allowed.of(classes, trusted=trusted, entry="load_policy")
    module = load_tree(RLModule, modules.children[module_id], allowed)
    env_to_module = load_tree(ConnectorPipelineV2, root.at("/".join(ENV_TO_MODULE_DIR)), allowed)
    module_to_env = load_tree(ConnectorPipelineV2, root.at("/".join(MODULE_TO_ENV_DIR)), allowed)
    return Policy(module, env_to_module, module_to_env)


class Policy:
    """An RLModule between its env-to-module and module-to-env pipelines, acting on raw env observations.

    Each call treats every observation as the first of an episode: pieces that read history
    (frame stacking, previous actions) see only that observation, and recurrent modules start from
    their initial state. Observation statistics are frozen at their saved values (pieces with an
    `update_stats` attribute, such as `MeanStdFilter`, get `update_stats=False`), so the same
    observation always gets the same greedy action.

    Inputs are checked against the env's observation space (saved in the checkpoint): None, a batch
    where one observation is expected and the reverse, a wrong shape or rank, an empty batch, NaN or
    inf, and an `explore` that is not a bool raise an `InferenceError` saying what was expected.
    Lists and other dtypes are converted to what the env returns.
    """

    def __init__(
        self, module: RLModule, env_to_module: ConnectorPipelineV2, module_to_env: ConnectorPipelineV2
    ) -> None:
        self.module = module
        self.env_to_module = env_to_module
        self.module_to_env = module_to_env
        self._observation_space = env_to_module.input_observation_space
        for piece in env_to_module.connectors:
            if hasattr(piece, "update_stats"):  # any piece with the flag (e.g. MeanStdFilter) freezes
                setattr(piece, "update_stats", False)  # noqa: B010 (the attribute is not on ConnectorV2)

    def compute_actions(self, obs_batch: Any, explore: bool = False) -> np.ndarray:
        """Actions for the env (after unsquashing/clipping) for a batch of observations (rows or a list)."""
        check_explore(explore)
        rows = check_observations(self._observation_space, obs_batch, single=False)
        return self._actions(rows, explore)

    def compute_single_action(self, obs: np.ndarray, explore: bool = False) -> Any:
        """The env action for one observation (e.g. a numpy int for Discrete, an array for Box)."""
        check_explore(explore)
        return self._actions(check_observations(self._observation_space, obs, single=True), explore)[0]

    def forward_inference(self, obs_batch: Any) -> dict[str, Any]:
        """The module's inference output (e.g. `ACTION_DIST_INPUTS`, as tensors) for a batch of raw env
        observations, after the env-to-module pipeline: what `compute_actions(explore=False)` samples from."""
        rows = check_observations(self._observation_space, obs_batch, single=False)
        return self.module.forward_inference(self._module_batch(rows, explore=False)[0])

    def _actions(self, rows: Any, explore: bool) -> np.ndarray:
        batch, call = self._module_batch(rows, explore)
        out = self.module.forward_exploration(batch) if explore else self.module.forward_inference(batch)
        return self.module_to_env(batch=out, **call)[Columns.ACTIONS_FOR_ENV]

    def _module_batch(self, rows: Any, explore: bool) -> tuple[dict, dict]:
        """The env-to-module pipeline's batch for checked observation rows, and the call's arguments."""
        episodes = []
        for obs in rows:
            episode = SingleAgentEpisode(id_="inference", len_lookback_buffer=0)  # no new episode id per call
            episode.add_env_reset(obs)
            episodes.append(episode)
        call = {"rl_module": self.module, "episodes": episodes, "explore": explore, "shared_data": {}}
        return self.env_to_module(batch={}, **call), call

    def record_video(
        self,
        env: Any,
        path: str | os.PathLike,
        *,
        env_config: dict | None = None,
        explore: bool = False,
        seed: int | None = None,
        max_steps: int = 100_000,
        fps: int = VIDEO_FPS,
    ) -> dict[str, Any]:
        """Plays one episode and saves it as an mp4 at `path` (needs the `video` extra).

        `env` is what `config.environment()` takes (a gymnasium id, a registered name, an Env class or
        a creator), made with `env_config` as the runners make it (Atari ids with their preprocessing,
        gymnasium ids with ``render_mode="rgb_array"``; a creator or class must render RGB frames
        itself), or an env instance made with ``render_mode="rgb_array"``, played as it is (no
        preprocessing added) and left open for the caller. Unlike `compute_actions`, the policy sees
        the episode's history, so frame stacking and recurrent state work as in training. Returns
        ``{"path", "episode_return", "episode_len"}``.
        """
        check_explore(explore)
        given = isinstance(env, gym.Env)
        rendering = _record_given_env(env, env_config) if given else make_env(env, env_config, render=True)
        assert isinstance(rendering, RecordEpisodeFrames)  # what make_env(render=True) returns
        try:
            episode = self._play_episode(rendering, explore, seed, max_steps)
            frames = rendering.flywheel_pop_episode_frames()
            if frames is None:  # stopped at max_steps: the frames of the unfinished episode
                frames = rendering.flywheel_pop_episode_frames(unfinished=True)
            assert frames is not None  # reset() recorded the first frame
        finally:
            if not given:  # the caller's env stays open
                rendering.close()
        saved = save_video(frames, path, fps=fps)
        return {"path": saved, "episode_return": float(episode.get_return()), "episode_len": len(episode)}

    def _play_episode(self, env: Any, explore: bool, seed: int | None, max_steps: int) -> SingleAgentEpisode:
        """One episode of `env` acted on through the pipelines (each step sees the episode so far)."""
        obs, info = env.reset(seed=seed)
        episode = SingleAgentEpisode(len_lookback_buffer=0)
        episode.add_env_reset(obs, infos=info)
        while not episode.is_done and len(episode) < max_steps:
            call = {"rl_module": self.module, "episodes": [episode], "explore": explore, "shared_data": {}}
            batch = self.env_to_module(batch={}, **call)
            out = self.module.forward_exploration(batch) if explore else self.module.forward_inference(batch)
            to_env = self.module_to_env(batch=out, **call)
            extra = {
                k: _row(v) for k, v in to_env.items() if k not in (Columns.ACTIONS, Columns.ACTIONS_FOR_ENV)
            }
            obs, reward, terminated, truncated, info = env.step(_row(to_env[Columns.ACTIONS_FOR_ENV]))
            episode.add_env_step(
                obs, _row(to_env[Columns.ACTIONS]), reward, infos=info,
                terminated=terminated, truncated=truncated, extra_model_outputs=extra,
            )  # fmt: skip
        return episode

    def export_torchscript(self, path: str | os.PathLike) -> str:
        """Saves the module's inference pass, `obs tensor [B, ...] -> ACTION_DIST_INPUTS [B, ...]`, as
        TorchScript (load with `torch.jit.load`, also from C++). The graph takes observations as the
        module sees them, i.e. after the env-to-module pieces (such as observation filters)."""
        if self.module.is_stateful():
            raise ModuleError(
                f"{type(self.module).__name__} is recurrent; export_torchscript() exports stateless "
                "`obs -> action dist inputs` graphs only. Fix: export a module without use_lstm."
            )
        space = self.module.observation_space
        if space is None:
            raise ModuleError(
                f"export_torchscript() traces the module on a sample of its observation space, but this "
                f"{type(self.module).__name__} has none. Fix: build the module with its observation_space."
            )
        example = np.asarray(space.sample())[None]
        example = torch.as_tensor(example.astype(np.float32) if example.dtype.kind == "f" else example)
        graph = _InferenceGraph(self.module).eval()
        with warnings.catch_warnings(), torch.no_grad():
            # torch marks TorchScript deprecated, but it is still what C++ (libtorch) deployments load.
            warnings.simplefilter("ignore", DeprecationWarning)
            traced = torch.jit.trace(graph, example)
        assert isinstance(traced, torch.jit.ScriptModule)  # tracing a torch module gives a module
        traced.save(str(path))
        return str(path)


def _row(value: Any) -> Any:
    """Row 0 of a batched (possibly nested) module output."""
    if isinstance(value, dict):
        return {key: _row(item) for key, item in value.items()}
    return value[0]


class _InferenceGraph(torch.nn.Module):
    """The module's `_forward_inference` with a tensor in and a tensor out (what tracing needs)."""

    def __init__(self, module: RLModule) -> None:
        super().__init__()
        self.module = module

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.module._forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]


def _record_given_env(env: gym.Env, env_config: dict | None) -> RecordEpisodeFrames:
    """`env`, a caller's instance, wrapped to record its frames (it must render RGB arrays)."""
    if env_config is not None:
        raise InferenceError(
            f"record_video got an env instance ({type(env).__name__}) and env_config={env_config!r}; an "
            "instance is already made. Fix: drop env_config, or pass the env id instead of an instance."
        )
    if env.render_mode != "rgb_array":
        raise InferenceError(
            f"record_video needs frames, but the env it got renders with render_mode={env.render_mode!r}. "
            f'Fix: make it with render_mode="rgb_array", e.g. gym.make("CartPole-v1", render_mode="rgb_array").'
        )
    return RecordEpisodeFrames(env, record=True)
