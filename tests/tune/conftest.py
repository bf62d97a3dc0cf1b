"""What the Ray Tune tests share: a tiny PPO config and a RunConfig whose storage is under tmp_path."""

import pytest

tune = pytest.importorskip("ray.tune", reason="needs the `tune` extra: pip install flywheel[tune]")

from flywheel import PPOConfig  # noqa: E402

RETURN = "env_runners/episode_return_mean"


def tiny_config(**training) -> PPOConfig:
    """PPO on CartPole with 200 env steps and one minibatch pass per iteration (about 0.1 s)."""
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1, **training)
        .debugging(seed=0)
    )


def run_config(tmp_path, **kwargs) -> "tune.RunConfig":
    """Tune's results and checkpoints go under `tmp_path`, and it prints nothing."""
    return tune.RunConfig(storage_path=str(tmp_path / "ray_results"), verbose=0, **kwargs)
