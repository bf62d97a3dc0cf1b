"""What a resume reproduces: env state is not saved, so a restored algorithm's runners start new
episodes, seeded from (seed, worker index, restored lifetime env steps): a resumed run does not
replay the first iteration's episodes, and every resume of one checkpoint starts the same ones."""

import pytest

from flywheel import Algorithm, PPOConfig


def config(num_env_runners):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=2, num_cpus_per_env_runner=0)
        .training(train_batch_size_per_learner=40, minibatch_size=20, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )


def next_starts(algo):
    """The reset observations of the episodes the algorithm's runners sample next (one per sub-env)."""
    episodes = algo.env_runner_group.sample(num_timesteps=2)
    assert all(episode.t_started == 0 for episode in episodes)
    return sorted(tuple(float(x) for x in episode.get_observations()[0]) for episode in episodes)


@pytest.mark.parametrize("num_env_runners", [0, pytest.param(1, marks=pytest.mark.ray)])
def test_a_resumed_run_starts_new_episodes_and_every_resume_starts_the_same(
    num_env_runners, tmp_path, request
):
    if num_env_runners:
        request.getfixturevalue("ray_session")
    fresh = config(num_env_runners).build_algo()
    try:
        first_iteration = next_starts(fresh)  # what a run with this seed starts its first iteration with
    finally:
        fresh.stop()
    algo = config(num_env_runners).build_algo()
    resumed = []
    try:
        assert algo.train()["num_env_steps_sampled_lifetime"] == 40
        path = algo.save_to_path(tmp_path / "ckpt")
        for _ in range(2):
            restored = Algorithm.from_checkpoint(path)
            try:
                resumed.append(next_starts(restored))
            finally:
                restored.stop()
        algo.train()
        algo.restore_from_path(path)  # into the running algorithm: its episodes in flight are dropped
        in_place = next_starts(algo)
    finally:
        algo.stop()
    assert len(first_iteration) == len(resumed[0]) == 2
    assert not set(resumed[0]) & set(first_iteration)
    assert resumed[1] == in_place == resumed[0]
