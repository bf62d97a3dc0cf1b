"""Shared test fixtures."""

import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

torch.set_num_threads(1)

REPO = Path(__file__).parents[1]


@pytest.fixture(scope="session")
def ray_session():
    """One Ray session for every test that needs it (started on first use, 2 CPUs)."""
    import ray

    if not ray.is_initialized():
        # address="local": a new Ray of its own, even while a cluster started elsewhere on this machine
        # (e.g. another test run's multi-node test) would otherwise be joined.
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _run_doc_blocks(
    page: str, *, blocks: int, fence: str = "python", module: str | None = None
) -> dict[str, Any]:
    """Runs the code blocks of `page` (a path from the repo root) in order in one namespace, as a
    reader pasting them one after another would, and returns that namespace. `blocks` is how many
    the page must have, so a block that stops being fenced (and silently stops running) fails.
    With `module`, the namespace is that of a new importable module of that name (so the classes
    the page defines can be found again, as a script's are in its `__main__`)."""
    path = REPO / page
    found = re.findall(rf"```{fence}\n(.*?)```", path.read_text(), re.S)
    assert len(found) == blocks, f"{page} has {len(found)} ```{fence} blocks, the test expects {blocks}"
    namespace: dict[str, Any] = {}
    if module is not None:
        namespace = sys.modules.setdefault(module, types.ModuleType(module)).__dict__
    for block in found:
        exec(compile(block, str(path), "exec"), namespace)
    return namespace


@pytest.fixture(scope="session")
def saved(tmp_path_factory) -> Path:
    """A small PPO checkpoint (one iteration on CountingEnv) that tests copy and then damage or attack."""
    from flywheel import PPOConfig
    from flywheel.testing import CountingEnv

    config = (
        PPOConfig()
        .environment(CountingEnv, env_config={"episode_len": 4})
        .training(train_batch_size_per_learner=32, minibatch_size=16, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    algo = config.build_algo()
    algo.train()
    path = Path(algo.save_to_path(tmp_path_factory.mktemp("saved") / "ckpt"))
    algo.stop()
    return path


@pytest.fixture
def run_doc_blocks() -> Callable[..., dict[str, Any]]:
    """`run_doc_blocks("docs/concepts/x.md", blocks=3)` -> the namespace the page's blocks built."""
    return _run_doc_blocks
