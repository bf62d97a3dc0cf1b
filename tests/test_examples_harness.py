"""flywheel's example-script harness: RLlib 2.60's flags with their meanings, the `--no-tune` loop, the Tune
run, and `--as-test`."""

import pytest

from flywheel import PPOConfig
from flywheel.errors import ConfigError
from flywheel.examples_harness import add_rllib_example_script_args, run_rllib_example_script_experiment
from flywheel.examples_harness.experiment import apply_args, default_stop


def parse(*argv: str, **defaults):
    return add_rllib_example_script_args(**defaults).parse_args(list(argv))


def tiny() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .training(train_batch_size_per_learner=100, minibatch_size=50, num_epochs=1)
        .debugging(seed=0)
    )


def test_flags_and_defaults_are_rllibs():
    args = parse(default_reward=450.0, default_timesteps=1000, default_iters=7)
    assert (args.stop_reward, args.stop_timesteps, args.stop_iters) == (450.0, 1000, 7)
    assert (args.algo, args.framework, args.num_agents, args.verbose, args.num_samples) == (
        "PPO",
        "torch",
        0,
        2,
        1,
    )
    assert (args.num_env_runners, args.num_learners, args.num_gpus_per_learner) == (None, None, None)
    assert (args.evaluation_interval, args.evaluation_duration, args.evaluation_duration_unit) == (
        0,
        10,
        "episodes",
    )
    assert (args.checkpoint_freq, args.checkpoint_at_end, args.tune_max_report_freq) == (0, False, 5)
    assert parse("--evaluation-duration=auto").evaluation_duration == "auto"
    assert default_stop(args) == {
        "env_runners/episode_return_mean": 450.0,
        "env_runners/num_env_steps_sampled_lifetime": 1000,
        "training_iteration": 7,
    }


def test_flags_set_the_config_as_rllibs_harness_does():
    args = parse(
        "--num-env-runners=3", "--num-envs-per-env-runner=4", "--num-learners=2", "--evaluation-interval=2",
        "--evaluation-num-env-runners=1", "--evaluation-duration=5", "--evaluation-duration-unit=timesteps",
        "--log-level=ERROR", "--env=Pendulum-v1",
    )  # fmt: skip
    config = apply_args(PPOConfig(), args)
    assert (config.env, config.num_env_runners, config.num_envs_per_env_runner) == ("Pendulum-v1", 3, 4)
    assert (config.num_learners, config.num_gpus_per_learner, config.log_level) == (2, 0, "ERROR")
    assert (config.evaluation_interval, config.evaluation_num_env_runners) == (2, 1)
    assert (config.evaluation_duration, config.evaluation_duration_unit) == (5, "timesteps")
    assert (
        apply_args(PPOConfig().environment("CartPole-v1"), args).env == "CartPole-v1"
    )  # the script's env wins


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--num-gpus-per-learner=1"],
            r"--num-gpus-per-learner=1\.0 with 1 learner\(s\) needs 1 GPUs, but this machine has 0\. Fix: --num-gpus-per-learner=0",
        ),
        (
            ["--num-gpus=1"],
            r"--num-gpus=1 is RLlib's old API stack flag\. Fix: train on GPUs with --num-gpus-per-learner=1",
        ),
        (["--framework=tf2"], r"--framework=tf2: flywheel runs torch only\. Fix: drop the flag"),
    ],
)
def test_flags_flywheel_cannot_honour_here_name_the_fix(argv, message):
    if "--num-gpus-per-learner=1" in argv:
        import torch

        if torch.cuda.device_count():
            pytest.skip("this machine has a GPU")
    with pytest.raises(ConfigError, match=message):
        apply_args(PPOConfig(), parse(*argv))


def test_wandb_key_without_wandb_names_the_fix(monkeypatch):
    from importlib.util import find_spec

    from flywheel.examples_harness import experiment

    if find_spec("wandb") is not None:
        pytest.skip("wandb is installed")
    with pytest.raises(
        ConfigError, match=r"wandb is not installed\. Fix: pip install wandb, or drop --wandb-key\."
    ):
        experiment._wandb_callbacks(parse("--wandb-key=abc"), PPOConfig())


@pytest.mark.parametrize("flag", ["--old-api-stack", "--enable-new-api-stack", "--local-mode"])
def test_retired_flags_are_refused(flag):
    with pytest.raises(ConfigError, match="Fix: drop"):
        run_rllib_example_script_experiment(tiny(), parse(flag))


def test_no_tune_trains_in_a_loop_and_as_test_names_metric_value_and_target(capsys):
    results = run_rllib_example_script_experiment(
        tiny(), parse("--no-tune", "--stop-iters=2"), keep_ray_up=True
    )
    assert results["training_iteration"] == 2
    printed = capsys.readouterr().out.splitlines()
    assert [line.split(" R=")[0] for line in printed] == [
        "iter=0",
        "iter=1",
        "Stop criterion (training_iteration=2) fulfilled!",
    ]

    args = parse("--no-tune", "--stop-iters=1", "--stop-reward=1000", "--as-test")
    with pytest.raises(
        ValueError,
        match=r"^`env_runners/episode_return_mean` of 1000\.0 not reached: the best value reached is \d+\.\d+\.$",
    ):
        run_rllib_example_script_experiment(tiny(), args, keep_ray_up=True)
    args = parse("--no-tune", "--stop-iters=3", "--stop-reward=10", "--as-test")
    results = run_rllib_example_script_experiment(tiny(), args, keep_ray_up=True)
    assert results["training_iteration"] == 1  # CartPole's first episodes return more than 10
    assert capsys.readouterr().out.endswith("`env_runners/episode_return_mean` of 10.0 reached! ok\n")


@pytest.mark.ray
def test_tune_runs_trials_with_checkpoints(ray_session, tmp_path, monkeypatch, capsys):
    pytest.importorskip("ray.tune", reason="needs the `tune` extra: pip install flywheel[tune]")
    monkeypatch.chdir(tmp_path)
    args = parse("--stop-iters=2", "--checkpoint-at-end", "--verbose=0", "--as-test", "--stop-reward=5")
    grid = run_rllib_example_script_experiment(tiny(), args, keep_ray_up=True)
    assert len(grid) == 1 and grid.errors == []
    result = grid[0]
    assert result.metrics["training_iteration"] == 1  # the stop reward of 5 is reached at once
    assert result.checkpoint is not None
    assert result.checkpoint.path and "checkpoint_000000" in result.checkpoint.path
    assert "`env_runners/episode_return_mean` of 5.0 reached! ok" in capsys.readouterr().out
