"""RLlib's checkpoint component constants name flywheel's layout: ported code that composes component
paths from them (as RLlib's `train_w_bc_finetune_w_ppo.py` and Ray Serve examples do) finds the parts."""

import os

from flywheel import PPOConfig, RLModule
from flywheel.checkpoints import components
from flywheel.porting import port_source

RLLIB_IMPORT = (
    "from ray.rllib.core import (\n"
    "    COMPONENT_ENV_RUNNER, COMPONENT_ENV_TO_MODULE_CONNECTOR, COMPONENT_LEARNER, COMPONENT_LEARNER_GROUP,\n"
    "    COMPONENT_METRICS_LOGGER, COMPONENT_MODULE_TO_ENV_CONNECTOR, COMPONENT_OPTIMIZER, COMPONENT_RL_MODULE,\n"
    ")\n"
)


def test_the_port_maps_every_constant_but_the_evaluation_runner():
    text, problems = port_source(RLLIB_IMPORT)
    assert text.startswith("from flywheel.checkpoints.components import (\n") and problems == []
    namespace: dict = {}
    exec(text, namespace)
    assert {name: namespace[name] for name in vars(components) if name.startswith("COMPONENT_")} == {
        "COMPONENT_LEARNER_GROUP": "learner_group",
        "COMPONENT_LEARNER": "learner",
        "COMPONENT_RL_MODULE": "rl_module",
        "COMPONENT_OPTIMIZER": "optimizer",
        "COMPONENT_ENV_RUNNER": "env_runner",
        "COMPONENT_ENV_TO_MODULE_CONNECTOR": "env_to_module_connector",
        "COMPONENT_MODULE_TO_ENV_CONNECTOR": "module_to_env_connector",
        "COMPONENT_METRICS_LOGGER": "metrics",
    }
    _, problems = port_source("from ray.rllib.core import COMPONENT_EVAL_ENV_RUNNER\n")
    assert [problem.message.split(":")[0] for problem in problems] == [
        "ray.rllib.core.COMPONENT_EVAL_ENV_RUNNER"
    ]


def test_constants_name_the_checkpoint_folders_and_state_keys(tmp_path):
    c = components
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .training(train_batch_size=32, minibatch_size=16)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .build_algo()
    )
    try:
        path = algo.save_to_path(tmp_path / "ckpt")
        module_dir = os.path.join(
            path, c.COMPONENT_LEARNER_GROUP, c.COMPONENT_LEARNER, c.COMPONENT_RL_MODULE, "default_policy"
        )
        module = RLModule.from_checkpoint(module_dir)
        trained = algo.learner_group._learner.module["default_policy"].get_state()
        assert module.get_state().keys() == trained.keys()
        for folder in (
            c.COMPONENT_ENV_TO_MODULE_CONNECTOR,
            c.COMPONENT_MODULE_TO_ENV_CONNECTOR,
            c.COMPONENT_RL_MODULE,
        ):
            assert os.path.isdir(os.path.join(path, c.COMPONENT_ENV_RUNNER, folder))
        state = algo.get_state(components=[c.COMPONENT_LEARNER_GROUP, c.COMPONENT_METRICS_LOGGER])
        assert sorted(state) == [c.COMPONENT_LEARNER_GROUP, c.COMPONENT_METRICS_LOGGER]
        assert c.COMPONENT_OPTIMIZER in state[c.COMPONENT_LEARNER_GROUP][c.COMPONENT_LEARNER]
    finally:
        algo.stop()
