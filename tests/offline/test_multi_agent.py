"""Multi-agent recordings read back as MultiAgentEpisodes: each module trains on exactly its agents'
rows (the training config's policy_mapping_fn decides), BC learns, and a single-agent config reading
a multi-agent recording (or the reverse) is told which setting to change."""

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from flywheel import BCConfig, MARWILConfig, PPOConfig
from flywheel.env_runners.multi_agent import MultiAgentEnvRunner
from flywheel.episodes import MultiAgentEpisode
from flywheel.errors import OfflineDataError
from flywheel.offline.reader import OfflineData
from flywheel.offline.writer import OfflineWriter
from flywheel.testing.multi_agent_envs import MultiCartPole

from .conftest import record


def multi_agent_config(cls, data, num_agents=3, **training):
    """3 agents: agent_0 and agent_1 share module "shared", agent_2 has "solo"; 2 agents: agent_i has "p<i>".
    (The mapping is a lambda, so it travels to remote learners by value.)"""
    if num_agents == 3:
        policies, mapping = (
            {"shared", "solo"},
            lambda agent_id, episode, **kw: "solo" if agent_id == "agent_2" else "shared",
        )
    else:
        policies, mapping = {"p0", "p1"}, lambda agent_id, episode, **kw: f"p{agent_id[-1]}"
    return (
        cls()
        .environment(MultiCartPole, env_config={"num_agents": num_agents})
        .multi_agent(policies=policies, policy_mapping_fn=mapping)
        .offline_data(input_=str(data), input_read_method_kwargs={"shuffle": False})
        .training(**training)
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .debugging(seed=0)
    )  # fmt: skip


def record_random(folder, write_episodes):
    """3 random-action MultiCartPole episodes recorded by the multi-agent runner (every agent maps to
    one module there: the recorded module ids are not what training uses)."""
    config = (
        PPOConfig()
        .environment(MultiCartPole, env_config={"num_agents": 3})
        .multi_agent(policies={"recorder"}, policy_mapping_fn=lambda agent_id, episode, **kw: "recorder")
        .offline_data(output=str(folder), output_write_episodes=write_episodes)
        .debugging(seed=0)
    )
    runner = MultiAgentEnvRunner(config=config)
    episodes = runner.sample(num_episodes=3, random_actions=True)
    runner.stop()
    return episodes


@pytest.mark.parametrize("write_episodes", [False, True])
def test_reads_multi_agent_episodes_with_the_training_configs_modules(tmp_path, write_episodes):
    recorded = record_random(tmp_path, write_episodes)
    config = multi_agent_config(BCConfig, tmp_path).offline_data(input_read_episodes=write_episodes)
    env = MultiCartPole({"num_agents": 3})
    read = OfflineData(config, env.observation_spaces, env.action_spaces).sample(num_rows=1)
    assert [type(e) for e in read] == [MultiAgentEpisode]
    [episode], [original] = read, [e for e in recorded if e.id_ == read[0].id_]
    episode.validate()
    assert {a: len(e) for a, e in episode.agent_episodes.items()} == {
        a: len(e) for a, e in original.agent_episodes.items()
    }
    assert {a: e.module_id for a, e in episode.agent_episodes.items()} == {
        "agent_0": "shared", "agent_1": "shared", "agent_2": "solo",
    }  # fmt: skip
    for agent_id, agent_episode in episode.agent_episodes.items():
        np.testing.assert_array_equal(
            agent_episode.get_actions(), original.agent_episodes[agent_id].get_actions()
        )
        assert agent_episode.is_terminated == original.agent_episodes[agent_id].is_terminated


def test_bc_trains_each_module_on_exactly_its_agents_rows(tmp_path):
    record_random(tmp_path, write_episodes=False)
    table = pq.read_table(tmp_path)
    rows = {
        a: pc.sum(pc.equal(table.column("agent_id"), a)).as_py() for a in ("agent_0", "agent_1", "agent_2")
    }
    # One update on the whole dataset (one pass, files in order), one epoch.
    config = multi_agent_config(BCConfig, tmp_path, train_batch_size_per_learner=table.num_rows, num_epochs=1)
    algo = config.build_algo()
    learners = algo.train()["learners"]
    algo.stop()
    assert learners["shared"]["num_module_steps_trained"] == rows["agent_0"] + rows["agent_1"]
    assert learners["solo"]["num_module_steps_trained"] == rows["agent_2"]
    assert table.num_rows == sum(rows.values())


def test_single_agent_config_on_a_multi_agent_recording_and_the_reverse(tmp_path):
    record_random(tmp_path / "multi", write_episodes=False)
    single = BCConfig().environment("CartPole-v1").offline_data(input_=str(tmp_path / "multi"))
    with pytest.raises(
        OfflineDataError,
        match=r"was recorded from a multi-agent env \(agents \['agent_0', 'agent_1', 'agent_2'\]\), but this "
        r"config is single-agent\. Fix: config\.multi_agent\(policies=\.\.\., policy_mapping_fn=\.\.\.\)",
    ):
        single.build_algo()
    record(tmp_path / "single", num_episodes=2, seed=0)
    with pytest.raises(
        OfflineDataError,
        match=r"was recorded from a single-agent env, but this config is multi-agent \(agents "
        r"\['agent_0', 'agent_1', 'agent_2'\]\)\. Fix: train without config\.multi_agent\(\.\.\.\)",
    ):
        multi_agent_config(BCConfig, tmp_path / "single").offline_data(input_read_episodes=False).build_algo()


def scripted_rows(folder, num_episodes=4):
    """`num_episodes` 2-agent MultiCartPole episodes of a hand-written controller (push toward where
    the pole falls) taking a random action 10% of the time, written one row per agent step by the
    writer the runners use; returns the rows per agent."""
    env = MultiCartPole({"num_agents": 2})
    spaces = {a: (env.observation_spaces[a], env.action_spaces[a]) for a in env.possible_agents}
    writer = OfflineWriter(folder, spaces=spaces, write_episodes=False)
    rng = np.random.default_rng(0)
    for index in range(num_episodes):
        obs, infos = env.reset(seed=10 * index)
        episode = MultiAgentEpisode(observation_space=env.observation_spaces, action_space=env.action_spaces)
        episode.add_env_reset(observations=obs, infos=infos)
        while not episode.is_done:
            actions = {
                a: int(o[2] + 0.5 * o[3] > 0) if rng.random() > 0.1 else int(rng.integers(2))
                for a, o in obs.items()
                if a in episode.get_agents_to_act()
            }
            obs, rewards, terminateds, truncateds, infos = env.step(actions)
            episode.add_env_step(obs, actions, rewards, infos, terminateds=terminateds, truncateds=truncateds)
        writer.write([episode.to_numpy()])
    writer.close()


@pytest.mark.learning
@pytest.mark.parametrize("cls", [BCConfig, MARWILConfig])
def test_multi_agent_bc_and_marwil_learn_each_agents_policy(tmp_path, cls):
    """Each module from <100 (untrained, greedy) to >= 300 within 12 iterations (seeds 0-2 checked: every
    module of both algorithms best 438-500)."""
    scripted_rows(tmp_path)
    config = (
        multi_agent_config(
            cls, tmp_path, num_agents=2,
            lr=3e-3, train_batch_size_per_learner=2000, minibatch_size=250, num_epochs=4,
        )
        .offline_data(input_read_method_kwargs={"shuffle": True})
        .evaluation(evaluation_interval=4, evaluation_duration=4, evaluation_config={"explore": False})
    )  # fmt: skip
    algo = config.build_algo()
    before = algo.evaluate()["env_runners"]["module_episode_returns_mean"]
    evaluations = [
        r["evaluation"]["env_runners"] for r in (algo.train() for _ in range(12)) if "evaluation" in r
    ]
    algo.stop()
    best = {m: max(e["module_episode_returns_mean"][m] for e in evaluations) for m in ("p0", "p1")}
    assert all(before[m] < 100 for m in ("p0", "p1")), before
    assert all(best[m] >= 300 for m in ("p0", "p1")), best


@pytest.mark.ray
def test_remote_learners_read_multi_agent_rows_with_ray_data(ray_session, tmp_path):
    record_random(tmp_path, write_episodes=False)
    table = pq.read_table(tmp_path)
    rows = {
        a: pc.sum(pc.equal(table.column("agent_id"), a)).as_py() for a in ("agent_0", "agent_1", "agent_2")
    }
    # Two learners, each one update on its shard (half the rows; streaming_split(equal=True) drops the
    # odd row): one pass over the dataset, one epoch.
    config = multi_agent_config(
        BCConfig, tmp_path, train_batch_size_per_learner=table.num_rows // 2, minibatch_size=20, num_epochs=1
    ).learners(num_learners=2, num_cpus_per_learner=0.5)
    config.offline_data(input_read_method_kwargs={})  # Ray Data's read_parquet takes no "shuffle" flag
    algo = config.build_algo()
    learners = algo.train()["learners"]
    algo.stop()
    shared, solo = (learners[m]["num_module_steps_trained"] for m in ("shared", "solo"))
    assert shared + solo == 2 * (table.num_rows // 2)
    assert 0 <= rows["agent_0"] + rows["agent_1"] - shared <= 1 and 0 <= rows["agent_2"] - solo <= 1
