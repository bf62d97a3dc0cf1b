"""Multi-agent algorithms: which modules train, per-module results, shared policies, modules added and
removed at run time."""

import numpy as np
import pytest

from flywheel import Algorithm, MultiRLModuleSpec, PPOConfig, RLModuleSpec
from flywheel.testing.multi_agent_envs import TurnBasedEnv


def by_agent(agent_id, episode, **kwargs):
    return agent_id


def small_config(policies=("p0", "p1"), mapping=by_agent, **multi_agent):
    return (
        PPOConfig()
        .environment(TurnBasedEnv)
        .multi_agent(policies=set(policies), policy_mapping_fn=mapping, **multi_agent)
        .training(train_batch_size_per_learner=60, minibatch_size=30, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )


def weights(algo, module_id):
    (learner_weights,) = algo.learner_group.foreach_learner(lambda learner: learner.get_weights())
    return learner_weights[module_id]


def same(a, b):
    return all(np.array_equal(a[k], b[k]) for k in a)


def test_only_policies_to_train_are_updated(build):
    algo = build(small_config(policies_to_train={"p0"}))
    before = {mid: weights(algo, mid) for mid in ("p0", "p1")}
    result = algo.train()
    assert "total_loss" in result["learners"]["p0"]
    assert "total_loss" not in result["learners"].get("p1", {})
    assert not same(weights(algo, "p0"), before["p0"])
    assert same(weights(algo, "p1"), before["p1"])
    env_runners = result["env_runners"]
    assert env_runners["module_episode_returns_mean"] == {"p0": 6.0, "p1": 10.0}
    assert env_runners["agent_episode_returns_mean"] == {"p0": 6.0, "p1": 10.0}
    assert env_runners["num_env_steps_sampled_lifetime"] == 60


def test_runners_get_each_modules_trained_weights(build):
    algo = build(small_config())
    algo.train()
    for module_id in ("p0", "p1"):
        runner_state = algo.get_module(module_id).get_state(inference_only=True)
        assert same(runner_state, weights(algo, module_id))
    with pytest.raises(
        KeyError, match=r"No module with id 'p9' in this MultiRLModule; it has \['p0', 'p1'\]"
    ):
        algo.get_module("p9")


def test_shared_policy_trains_on_both_agents(build):
    algo = build(small_config(policies=("shared",), mapping=lambda agent_id, episode, **kw: "shared"))
    result = algo.train()
    assert list(result["env_runners"]["module_episode_returns_mean"]) == ["shared"]
    assert result["env_runners"]["module_episode_returns_mean"]["shared"] == 16.0
    assert result["env_runners"]["num_module_steps_sampled"]["shared"] == 60
    assert "total_loss" in result["learners"]["shared"]


def p1_to_p2(agent_id, episode, **kwargs):
    return "p2" if agent_id == "p1" else "p0"


def test_add_module_at_run_time(build):
    algo = build(small_config())
    algo.train()
    spec = algo.add_module(
        "p2", RLModuleSpec(model_config={"fcnet_hiddens": [4]}), new_agent_to_module_mapping_fn=p1_to_p2
    )
    assert spec.observation_space == TurnBasedEnv().observation_spaces["p1"]
    assert sorted(algo.config.policies) == ["p0", "p1", "p2"]
    assert algo.env_runner_group.config is algo.config  # runners restarted later build p2 as well
    assert sorted(algo.env_runner.module.keys()) == ["p0", "p1", "p2"]
    assert same(algo.get_module("p2").get_state(inference_only=True), weights(algo, "p2"))
    algo.env_runner.sample(force_reset=True, num_timesteps=1)  # new episodes map p1 -> p2
    result = algo.train()
    assert result["env_runners"]["module_episode_returns_mean"]["p2"] == 10.0
    assert "total_loss" in result["learners"]["p2"]


def test_remove_module_at_run_time(build):
    env = TurnBasedEnv()
    p1_spec = RLModuleSpec(
        observation_space=env.observation_spaces["p1"], action_space=env.action_spaces["p1"]
    )
    config = small_config(policies=("p0", "p1", "p2"), mapping=p1_to_p2)
    algo = build(config.rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={"p1": p1_spec})))
    result = algo.train()
    assert result["env_runners"]["module_episode_returns_mean"] == {"p0": 6.0, "p2": 10.0}
    algo.remove_module("p2", new_agent_to_module_mapping_fn=by_agent)
    assert sorted(algo.config.policies) == ["p0", "p1"]
    assert sorted(algo.env_runner.module.keys()) == ["p0", "p1"]
    (learner_modules,) = algo.learner_group.foreach_learner(lambda learner: sorted(learner.module.keys()))
    assert learner_modules == ["p0", "p1"]
    result = algo.train()
    assert "total_loss" in result["learners"]["p1"]


def test_remove_unknown_module():
    config = small_config()
    algo = config.build_algo()
    try:
        with pytest.raises(KeyError, match=r"No module 'p7' to remove; the policies are \['p0', 'p1'\]"):
            algo.remove_module("p7")
    finally:
        algo.stop()


def test_docs_training_section_runs(capsys, run_doc_blocks):
    run_doc_blocks("docs/concepts/multi_agent.md", blocks=3, fence="py")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("{'learner': ") and lines[1].startswith("{'X': ")
    assert "total_loss" in lines[2]


def test_checkpoint_round_trip_and_evaluation(build, tmp_path):
    algo = build(small_config().evaluation(evaluation_interval=1, evaluation_duration=2))
    result = algo.train()
    assert result["evaluation"]["env_runners"]["module_episode_returns_mean"] == {"p0": 6.0, "p1": 10.0}
    assert result["evaluation"]["env_runners"]["num_episodes"] == 2
    algo.save_to_path(tmp_path)
    restored = Algorithm.from_checkpoint(tmp_path, classes=[by_agent])  # a function of this test module
    try:
        for module_id in ("p0", "p1"):
            assert same(
                restored.get_module(module_id).get_state(inference_only=True), weights(algo, module_id)
            )
            assert same(weights(restored, module_id), weights(algo, module_id))
        assert restored.train()["training_iteration"] == 2
    finally:
        restored.stop()


def test_policies_no_agent_maps_to_yet_are_built_saved_and_untrained(build, tmp_path):
    """RLlib's self-play examples list five policies and map agents to two at first: the others get the
    spaces every agent shares, are in the learner and the checkpoint, and samples do not train them."""
    policies = ("p0", "p1", "main_v1", "main_v2", "main_v3")
    algo = build(small_config(policies=policies))
    before = {mid: weights(algo, mid) for mid in policies}
    result = algo.train()
    learners = result["learners"]
    assert ["total_loss" in learners[mid] for mid in policies] == [True, True, False, False, False]
    assert [same(weights(algo, mid), before[mid]) for mid in policies] == [False, False, True, True, True]
    module = algo.learner_group._learner.module["main_v2"]
    assert (module.observation_space, module.action_space) == (
        TurnBasedEnv().observation_spaces["p0"],
        TurnBasedEnv().action_spaces["p0"],
    )
    algo.save_to_path(tmp_path / "ckpt")
    assert (tmp_path / "ckpt" / "learner_group" / "learner" / "rl_module" / "main_v3").is_dir()
