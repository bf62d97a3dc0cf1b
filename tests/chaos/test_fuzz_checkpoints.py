"""Fuzzed checkpoints: flipped bytes, truncated or deleted files, edited metadata (with checksums left
stale or recomputed) end in a CheckpointError, never another exception; no load unpickles or starts
a process; a failed restore leaves the target as it was; a load that succeeds acts.

One small PPO checkpoint is saved per session (`saved`, tests/conftest.py); each example damages a fresh copy of it, only in the
files the loader under test reads (found by recording a clean load).
"""

import json
import shutil
import sys
import tempfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from chaos.checkpoint_mutations import damage, files_read_by, reseal
from flywheel import Algorithm, Columns, RLModule, RLModuleSpec
from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule
from flywheel.checkpoints import io
from flywheel.errors import CheckpointError, ModuleError
from flywheel.inference import load_policy

pytestmark = pytest.mark.chaos

MODULE = "learner_group/learner/rl_module/default_policy"
_FORBIDDEN = (
    "pickle.find_class",
    "os.system",
    "subprocess.Popen",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
)
_watch: list[str] | None = None


def _audit(event: str, args: tuple) -> None:
    if _watch is not None and event.startswith(_FORBIDDEN):
        _watch.append(event)


sys.addaudithook(_audit)  # audit hooks cannot be removed: this one records only inside `_guarded`


def _guarded(load):
    """`load()`'s result, or None for a CheckpointError; fails on code the checkpoint made run."""
    global _watch
    _watch = []
    try:
        return load()
    except CheckpointError:
        return None
    finally:
        events, _watch = _watch, None
        assert not events, f"loading a damaged checkpoint ran {events}"


def _copy(saved: Path) -> Path:
    return Path(shutil.copytree(saved, Path(tempfile.mkdtemp(prefix="fuzz-")) / "ckpt"))


def _targets(saved: Path, load) -> list[Path]:
    return sorted(files_read_by(lambda: load(saved)))


def _retarget(files: list[Path], saved: Path, copy: Path) -> list[Path]:
    return [copy / file.relative_to(saved) for file in files]


def _module_acts(module: RLModule) -> None:
    obs = np.stack([module.observation_space.sample() for _ in range(3)])
    logits = module.forward_inference({Columns.OBS: torch.from_numpy(obs)})[Columns.ACTION_DIST_INPUTS]
    assert tuple(logits.shape) == (3, module.action_space.n)


@given(data=st.data())
def test_damaged_module_checkpoints_raise_checkpoint_errors(saved, data):
    load = lambda path: RLModule.from_checkpoint(path / MODULE)  # noqa: E731
    copy = _copy(saved)
    try:
        done = damage(data, copy, _retarget(_targets(saved, load), saved, copy))
        module = _guarded(lambda: load(copy))
        if module is None:
            return
        assert {"resealed", "unchanged"} & set(done), f"{done} went unnoticed"
        _module_acts(module)
    finally:
        shutil.rmtree(copy.parent)


@given(data=st.data())
def test_a_failed_restore_leaves_the_module_as_it_was(saved, data):
    """restore_from_path into a module with other weights: all of the checkpoint's weights, or none."""
    module = RLModule.from_checkpoint(saved / MODULE)
    with torch.no_grad():
        for weight in module.parameters():
            weight.fill_(0.5)
    before = module.get_state()
    copy = _copy(saved)
    try:
        damage(data, copy / MODULE, sorted(p for p in (copy / MODULE).iterdir() if p.is_file()))
        if _guarded(lambda: module.restore_from_path(copy / MODULE) or "restored") is None:
            after = module.get_state()
            for name, value in before.items():
                np.testing.assert_array_equal(
                    after[name], value, err_msg=f"{name} changed by a failed restore"
                )
    finally:
        shutil.rmtree(copy.parent)


@given(data=st.data())
def test_damaged_policy_checkpoints_raise_checkpoint_errors(saved, data):
    copy = _copy(saved)
    try:
        done = damage(data, copy, _retarget(_targets(saved, load_policy), saved, copy))
        policy = _guarded(lambda: load_policy(copy))
        if policy is None:
            return
        assert {"resealed", "unchanged"} & set(done), f"{done} went unnoticed"
        assert policy.module.action_space.contains(policy.compute_single_action(np.array([1.0], np.float32)))
    finally:
        shutil.rmtree(copy.parent)


@given(data=st.data())
def test_damaged_algorithm_checkpoints_raise_checkpoint_errors(saved, data):
    copy = _copy(saved)
    try:
        done = damage(data, copy, _retarget(_targets(saved, Algorithm.from_checkpoint), saved, copy))
        algo = _guarded(lambda: Algorithm.from_checkpoint(copy))
        if algo is None:
            return
        try:
            assert {"resealed", "unchanged"} & set(done), f"{done} went unnoticed"
            _module_acts(algo.get_module())
        finally:
            algo.stop()
    finally:
        shutil.rmtree(copy.parent)


# What the fuzzing found: edits with recomputed checksums got past the integrity checks and ended in
# a ModuleError from the module's constructor or set_state, and set_state copied the weights before a
# wrong-shaped one into the module.


def _edit(directory: Path, edit) -> None:
    metadata = json.loads((directory / io.METADATA_FILE).read_text())
    edit(metadata)
    (directory / io.METADATA_FILE).write_text(json.dumps(metadata))
    reseal(directory.parents[len(MODULE.split("/")) - 1])


@pytest.mark.parametrize(
    ("edit", "cause"),
    [
        (
            lambda m: m["ctor_kwargs"].update(model_config=None),
            r"ModuleError: DefaultPPOTorchRLModule\.set_state\(\): weight ",
        ),
        (
            lambda m: m["ctor_kwargs"].update(observation_space=None),
            r"ModuleError: The default models do not support observation space None",
        ),
        (
            lambda m: m["ctor_kwargs"]["model_config"].update(fcnet_hiddens=[None]),
            r"ModuleError: Invalid model_config",
        ),
    ],
    ids=["model_config", "observation_space", "fcnet_hiddens"],
)
def test_module_metadata_edited_with_fresh_checksums_is_a_checkpoint_error(saved, tmp_path, edit, cause):
    copy = Path(shutil.copytree(saved, tmp_path / "ckpt"))
    _edit(copy / MODULE, edit)
    action = "restore" if "set_state" in cause else "build"
    with pytest.raises(
        CheckpointError,
        match=rf"(?s)^Cannot {action} DefaultPPOTorchRLModule from the checkpoint at {copy / MODULE}: {cause}.*The checkpoint "
        r"does not fit this code: it is damaged, was edited, or was saved by another version of its classes\. Fix: "
        r"load another checkpoint, or load it with the code that saved it\.$",
    ):
        RLModule.from_checkpoint(copy / MODULE)
    with pytest.raises(
        CheckpointError, match=rf"^Cannot {action} DefaultPPOTorchRLModule from the checkpoint"
    ):
        load_policy(copy)


def test_a_state_with_one_wrong_weight_changes_no_weight():
    spec = RLModuleSpec(
        module_class=DefaultPPOTorchRLModule,
        observation_space=gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
        action_space=gym.spaces.Discrete(2),
        model_config={"fcnet_hiddens": [4]},
    )
    module = spec.build()
    before = module.get_state()
    names = list(before)
    state = {name: np.ones_like(value) for name, value in before.items()}
    state[names[-1]] = np.ones((7,), np.float32)
    with pytest.raises(ModuleError, match=rf"weight {names[-1]!r} has shape \(7,\), expected"):
        module.set_state(state)
    state[names[-1]] = "not an array"
    with pytest.raises(
        ModuleError, match=rf"weight {names[-1]!r} is a str, expected a numpy array or tensor of shape"
    ):
        module.set_state(state)
    for name, value in module.get_state().items():
        np.testing.assert_array_equal(value, before[name])
