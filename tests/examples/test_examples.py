"""Every script in examples/ runs in smoke mode (one tiny iteration) and reports what it trained."""

import re
import runpy
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from flywheel import SingleAgentEpisode

EXAMPLES = Path(__file__).parents[2] / "examples"
NAMES = sorted(p.name for p in EXAMPLES.glob("*.py"))


def load(name):
    """The example's module namespace, without running its main()."""
    return runpy.run_path(str(EXAMPLES / name), run_name="example")


def test_the_examples_are_found():
    assert {"custom_connector.py", "custom_rl_module.py", "ppo_cartpole.py", "ppo_pendulum.py"} <= set(NAMES)
    assert {"multi_agent_cartpole.py", "turn_based_game.py", "pettingzoo_parallel.py"} <= set(NAMES)


# Examples that start Ray actors use the shared Ray session.
RAY_EXAMPLES = {"appo_cartpole.py", "distributed_ppo.py", "ray_serve_cartpole.py", "tune_ppo_cartpole.py"}


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.ray) if n in RAY_EXAMPLES else n for n in NAMES]
)
def test_script_runs_as_main(name, monkeypatch, capsys, request, tmp_path):
    if name in RAY_EXAMPLES:
        request.getfixturevalue("ray_session")
    monkeypatch.setattr(sys, "argv", [name, "--smoke"])
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # checkpoints and Tune results go here
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    # Every example takes --smoke (one tiny iteration) and reports its training iteration.
    assert re.search(r"^iteration 1: mean return (-?\d+\.\d|nan)", capsys.readouterr().out, re.M)
    # ... and cleans up after itself: the temporary folders it made are gone (torch keeps its compile
    # cache, torchinductor_<user>, in the temp dir on purpose: it is not the example's).
    assert [path.name for path in tmp_path.iterdir() if not path.name.startswith("torchinductor_")] == []


def test_ppo_cartpole_writes_result_files(capsys, tmp_path):
    result = load("ppo_cartpole.py")["main"](["--smoke", "--run-dir", str(tmp_path)])
    out, err = capsys.readouterr()
    assert (result["training_iteration"], result["num_env_steps_sampled_lifetime"]) == (1, 256)
    assert (
        out
        == f"iteration 1: mean return {result['env_runners']['episode_return_mean']:.1f} after 256 env steps\n"
    )
    assert "iter=1 env_steps=256" in err  # the progress bar
    assert (tmp_path / "results.csv").read_text().count("\n") == 2  # header + one iteration
    assert (tmp_path / "results.jsonl").read_text().count("\n") == 1
    assert len(list(tmp_path.glob("events.out.tfevents.*"))) == 1


def test_ppo_pendulum_normalizes_observations_with_a_mean_std_filter(capsys):
    namespace = load("ppo_pendulum.py")
    result = namespace["main"](["--smoke"])
    # 16 sub-envs x 16 steps: no 200-step episode has finished yet.
    assert capsys.readouterr().out == "iteration 1: mean return nan after 256 env steps\n"
    assert result["num_env_steps_sampled_lifetime"] == 256

    config = namespace["build_config"]().training(
        train_batch_size_per_learner=64, minibatch_size=64, num_epochs=1
    )
    algo = config.build_algo()
    episodes = algo.env_runner.sample(num_timesteps=64)
    first_piece = algo.env_runner.env_to_module[0]
    algo.stop()
    assert type(first_piece).__name__ == "MeanStdFilter"
    observations = np.concatenate([e.get_observations() for e in episodes])
    assert np.abs(observations).max() <= 10.0  # clipped, normalized observations went to the module
    assert abs(observations.mean()) < 0.5


def test_custom_rl_module(capsys):
    result = load("custom_rl_module.py")["main"](["--smoke"])
    assert capsys.readouterr().out.splitlines() == [
        "module: TinyActorCritic",
        f"iteration 1: mean return {result['env_runners']['episode_return_mean']:.1f}",
    ]
    assert result["num_env_steps_sampled_lifetime"] == 256


def test_custom_connector(capsys):
    namespace = load("custom_connector.py")
    result = namespace["main"](["--smoke"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"iteration 1: mean return {result['env_runners']['episode_return_mean']:.1f}"
    left, right = map(int, re.fullmatch(r"actions chosen so far: left (\d+), right (\d+)", lines[1]).groups())
    assert left + right == 256  # one action per env step of the iteration

    # ScaleObs rewrites the newest observation of each episode in place.
    episode = SingleAgentEpisode()
    episode.add_env_reset(observation=np.array([2.0, 4.0, 6.0, 8.0], np.float32))
    batch = namespace["ScaleObs"](factor=0.5)(rl_module=None, batch={}, episodes=[episode])
    assert batch == {}
    np.testing.assert_array_equal(episode.get_observations(-1), [1.0, 2.0, 3.0, 4.0])


def test_ppo_mujoco_is_cleanrls_recipe_as_plain_settings():
    namespace = load("ppo_mujoco.py")
    config = namespace["cleanrl_config"]("Hopper-v5", seed=3)
    # No custom class, env creator or wrapper: a gymnasium id, the default module and learner.
    assert config.env == "Hopper-v5" and config.env_wrappers == [] and config.env_config == {}
    assert (config.rl_module_spec, config.learner_class, config.learner_connector) == (None, None, None)
    assert config.normalize_rewards is True and config.seed == 3
    assert (config.adam_epsilon, config.vf_clip_range, config.advantage_normalization) == (
        1e-5,
        0.2,
        "minibatch",
    )
    assert config.lr == [[0, 3e-4], [1_000_000, 0.0]]
    tuned = namespace["tuned_config"]()
    assert (tuned.train_batch_size_per_learner, tuned.num_epochs, tuned.model_config["log_std_init"]) == (
        512,
        20,
        -2.0,
    )
    config.validate()
    tuned.validate()
