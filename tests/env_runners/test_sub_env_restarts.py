"""`restart_failed_sub_environments`: a failing sub-env is rebuilt, its ongoing episode dropped, the
restart counted; the other sub-envs go on untouched. Off, the env's own exception reaches the caller."""

import pytest

from flywheel import PPOConfig
from flywheel.testing import FailingEnv

from .conftest import obs_of


def failing_config(*, restart=True, fail_after=7, vectorize_mode="sync"):
    """3 sub-envs with 5-step episodes; sub-env 1 fails at its `fail_after + 1`-th step (each rebuilt
    copy again after `fail_after` steps)."""
    return (
        PPOConfig()
        .environment(
            FailingEnv,
            env_config={"fail_after": fail_after, "fail_on_vector_indices": [1], "episode_len": 5},
        )
        .env_runners(num_envs_per_env_runner=3, gym_env_vectorize_mode=vectorize_mode)
        .fault_tolerance(restart_failed_sub_environments=restart)
        .debugging(seed=0)
    )


@pytest.mark.parametrize("vectorize_mode", ["sync", "async"])
def test_failing_sub_env_is_rebuilt_and_only_its_episode_dropped(make_runner, vectorize_mode):
    runner = make_runner(failing_config(vectorize_mode=vectorize_mode))
    # Sub-env 1: episode 1 (steps 1-5), then episode 2 fails at its 3rd step (vector step 8): its 2
    # recorded steps are dropped, so the runner takes 11 vector steps to record 30. The fresh copy
    # then records vector steps 9-11 (obs 0..3). Sub-envs 0 and 2: 5 + 5 + 1 steps each.
    episodes = runner.sample(num_timesteps=30, random_actions=True)
    assert [len(e) for e in episodes] == [5, 5, 5, 5, 5, 1, 3, 1]
    assert [obs_of(e) for e in episodes[:5]] == [[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]] * 5
    assert [obs_of(e) for e in episodes[5:]] == [[0.0, 1.0], [0.0, 1.0, 2.0, 3.0], [0.0, 1.0]]
    assert all(e.t_started == 0 for e in episodes)
    assert len({e.id_ for e in episodes}) == 8
    metrics = runner.get_metrics()
    assert metrics["num_sub_env_restarts"] == 1
    assert metrics["num_sub_env_restarts_lifetime"] == 1
    assert metrics["num_env_steps_sampled"] == 30 == sum(len(e) for e in episodes)
    assert metrics["num_episodes"] == 5

    # The next sample continues every ongoing episode; the rebuilt sub-env fails again only after
    # 7 steps (at vector step 5 of this sample): a second restart, lifetime 2.
    episodes = runner.sample(num_timesteps=30, random_actions=True)
    assert [(e.t_started, len(e)) for e in episodes[:3]] == [(3, 2), (1, 4), (1, 4)]
    metrics = runner.get_metrics()
    assert metrics["num_sub_env_restarts"] == 1
    assert metrics["num_sub_env_restarts_lifetime"] == 1  # a runner's logger hands lifetime sums over
    assert metrics["num_env_steps_sampled"] == 30 == sum(len(e) for e in episodes)


def test_failed_autoreset_keeps_the_finished_episode_and_counts_the_restart(make_runner):
    runner = make_runner(failing_config(fail_after=5))
    # Sub-env 1's episode ends at step 5; the autoreset then fails and is redone on a fresh copy:
    # the finished episode is complete and returned, only the restart is counted.
    episodes = runner.sample(num_timesteps=18, random_actions=True)
    assert [len(e) for e in episodes] == [5, 5, 5, 1, 1, 1]
    assert obs_of(episodes[1]) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and episodes[1].is_terminated
    metrics = runner.get_metrics()
    assert (metrics["num_sub_env_restarts"], metrics["num_episodes"], metrics["num_env_steps_sampled"]) == (
        1,
        3,
        18,
    )


def test_a_sub_env_that_fails_again_on_its_rebuild_raises(make_runner):
    with pytest.raises(RuntimeError, match=r"^FailingEnv\.reset\(\) failed on purpose after 0 steps"):
        make_runner(failing_config(fail_after=0)).sample(num_timesteps=3, random_actions=True)


def test_without_the_setting_the_env_error_reaches_the_caller(make_runner):
    runner = make_runner(failing_config(restart=False))
    with pytest.raises(RuntimeError, match=r"^FailingEnv\.step\(\) failed on purpose after 7 steps"):
        runner.sample(num_timesteps=30, random_actions=True)


def test_without_the_setting_sub_envs_are_not_wrapped(make_runner):
    runner = make_runner(failing_config(restart=False))
    assert [type(env).__name__ for env in runner.env.envs] == ["FailingEnv"] * 3
