"""Offline data for the BC / MARWIL tests: small recordings, and (for learning tests) a PPO expert."""

import pytest

from flywheel import PPOConfig, SingleAgentEnvRunner

EXPERT_RETURN = 490


def record(folder, *, num_episodes, seed, weights=None, random_actions=False):
    """Records `num_episodes` CartPole episodes (one row per step) with `weights` or random actions."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .offline_data(output=str(folder), output_write_episodes=False)
        .debugging(seed=seed)
    )
    runner = SingleAgentEnvRunner(config=config)
    if weights is not None:
        runner.set_state({"rl_module": weights, "weights_seq_no": 0})
    episodes = runner.sample(num_episodes=num_episodes, random_actions=random_actions)
    runner.stop()
    return episodes


@pytest.fixture(scope="session")
def expert_data(tmp_path_factory):
    """100 episodes of a PPO CartPole policy trained to a mean return of 490 (seed 1: ~65k env steps),
    trained once per test session."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=8)
        .training(
            gamma=0.98,
            lambda_=0.8,
            lr=[[0, 1e-3], [100_000, 1e-4]],
            train_batch_size_per_learner=1024,
            minibatch_size=128,
            num_epochs=10,
            vf_clip_param=float("inf"),
            vf_loss_coeff=0.5,
        )  # fmt: skip
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .debugging(seed=1)
    )
    algo = config.build_algo()
    result = algo.train()
    while result["env_runners"]["episode_return_mean"] < EXPERT_RETURN:
        assert result["num_env_steps_sampled_lifetime"] < 150_000, "the PPO expert did not learn"
        result = algo.train()
    weights = algo.get_module().get_state(inference_only=True)
    algo.stop()
    folder = tmp_path_factory.mktemp("expert")
    episodes = record(folder, num_episodes=100, seed=2, weights=weights)
    return folder, episodes
