"""config.env_runners(normalize_rewards=True): learners train on normalized rewards, every report shows
the env's raw returns, and the statistics are merged, synced and saved in checkpoints."""

import csv
import json

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from flywheel import Algorithm, PPOConfig, SingleAgentEnvRunner, cli
from flywheel.connectors.env_to_module import MeanStdFilter, NormalizeRewards
from flywheel.errors import ConfigError


def tiny_config():
    # CartPole pays 1 per step, so a raw return equals the episode's length.
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2, normalize_rewards=True)
        .training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
        .debugging(seed=0)
    )


def reward_piece(runner):
    (piece,) = [p for p in runner.env_to_module.connectors if isinstance(p, NormalizeRewards)]
    return piece


def test_the_piece_follows_the_users_pieces_and_takes_gamma():
    config = (
        tiny_config()
        .training(gamma=0.9)
        .env_runners(env_to_module_connector=lambda env, spaces, device: MeanStdFilter())
    )
    runner = SingleAgentEnvRunner(config=config)
    names = [type(p).__name__ for p in runner.env_to_module.connectors]
    assert names[:2] == ["MeanStdFilter", "NormalizeRewards"]
    assert reward_piece(runner).gamma == 0.9 and reward_piece(runner).clip == 10.0
    runner.stop()


def test_episodes_hold_normalized_rewards_while_metrics_count_raw_ones():
    runner = SingleAgentEnvRunner(config=tiny_config())
    episodes = runner.sample(num_timesteps=600)
    rewards = np.concatenate([episode.get_rewards() for episode in episodes])
    assert len(rewards) >= 600 and not np.any(rewards == 1.0)
    piece = reward_piece(runner)
    np.testing.assert_allclose(rewards[-1], 1.0 / np.sqrt(piece.variance + 1e-8), rtol=1e-6)
    metrics = runner.get_metrics()
    assert metrics["num_episodes"] > 0
    assert metrics["episode_return_mean"] == metrics["episode_len_mean"]
    assert metrics["episode_return_max"] == metrics["episode_len_max"]
    runner.stop()


def test_results_evaluation_and_every_logger_report_raw_returns(tmp_path, capsys):
    run_dir = tmp_path / "run"
    argv = ["train", "--env", "CartPole-v1", "--stop-iters", "2", "--checkpoint-dir", str(run_dir), "--seed", "0",
            "--no-progress", "--set", "normalize_rewards=True", "train_batch_size_per_learner=256",
            "minibatch_size=64", "num_epochs=1", "evaluation_interval=1", "evaluation_duration=2"]  # fmt: skip
    assert cli.main(argv) == 0
    capsys.readouterr()
    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    for result in results:
        for part in (result["env_runners"], result["evaluation"]["env_runners"]):
            assert part["episode_return_mean"] == part["episode_len_mean"]
    with (run_dir / "results.csv").open(newline="") as file:
        rows = list(csv.DictReader(file))
    assert [float(row["env_runners/episode_return_mean"]) for row in rows] == [
        float(row["env_runners/episode_len_mean"]) for row in rows
    ]
    events = EventAccumulator(str(run_dir))
    events.Reload()
    returns = [s.value for s in events.Scalars("env_runners/episode_return_mean")]
    lengths = [s.value for s in events.Scalars("env_runners/episode_len_mean")]
    assert returns == pytest.approx(lengths)


def test_statistics_survive_a_checkpoint_round_trip(tmp_path):
    algo = tiny_config().build_algo()
    algo.train()
    saved = stats(reward_piece(algo.env_runner))
    assert saved["count"] >= 256 and saved["var"] != 1.0
    path = algo.save_to_path(str(tmp_path / "ckpt"))
    algo.stop()

    restored = Algorithm.from_checkpoint(path)
    piece = reward_piece(restored.env_runner)
    assert stats(piece) == saved
    assert piece.variance == saved["var"]  # what the next rewards are divided by
    restored.train()  # and training goes on from them
    assert stats(piece)["count"] >= saved["count"] + 256
    restored.stop()


def stats(piece):
    """The piece's statistics, shared and this runner's own together (public state)."""
    return piece.merge_states([piece.get_state()])["shared"]


@pytest.mark.ray
def test_remote_runners_statistics_are_merged(ray_session):
    algo = tiny_config().env_runners(num_env_runners=2, num_envs_per_env_runner=1).build_algo()
    algo.train()
    states = algo.env_runner_group.foreach_env_runner(lambda r: r.env_to_module.get_state())
    counts = {state["0_NormalizeRewards"]["shared"]["count"] for state in states}
    assert len(counts) == 1 and counts.pop() >= 256  # every runner (local too) holds the merged stats
    algo.stop()


def test_normalize_rewards_is_validated():
    with pytest.raises(
        ConfigError, match=r"- normalize_rewards='yes' must be True or False\. Fix: pass a bool"
    ):
        tiny_config().env_runners(normalize_rewards="yes").validate()
    config = tiny_config().multi_agent(policies={"p0"}, policy_mapping_fn=lambda aid, ep, **kw: "p0")
    with pytest.raises(ConfigError, match=r"- normalize_rewards=True works on single-agent runs only"):
        config.validate()


def test_load_policy_acts_with_a_normalize_rewards_checkpoint(tmp_path):
    from flywheel.inference import load_policy

    algo = tiny_config().build_algo()
    algo.train()
    path = algo.save_to_path(str(tmp_path / "ckpt"))
    expected = algo.get_module().forward_inference({"obs": np.zeros((1, 4), np.float32)})[
        "action_dist_inputs"
    ]
    algo.stop()
    action = load_policy(path).compute_single_action(np.zeros(4, np.float32), explore=False)
    assert action == int(expected.argmax())
