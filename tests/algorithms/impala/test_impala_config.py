"""IMPALAConfig / APPOConfig: RLlib 2.60's defaults and names, validation, default classes, registry, imports."""

import subprocess
import sys

import pytest

import flywheel
from flywheel import AlgorithmConfig, APPOConfig, IMPALAConfig
from flywheel.algorithms.appo import APPO, APPOTorchLearner, DefaultAPPOTorchRLModule
from flywheel.algorithms.impala import IMPALA, IMPALATorchLearner
from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule
from flywheel.algorithms.registry import algorithm_name, config_class, config_class_of
from flywheel.errors import ConfigError

IMPALA_DEFAULTS = {  # RLlib 2.60's IMPALAConfig (new API stack)
    "vtrace": True,
    "vtrace_clip_rho_threshold": 1.0,
    "vtrace_clip_pg_rho_threshold": 1.0,
    "learner_queue_size": 3,
    "broadcast_interval": 1,
    "grad_clip": 40.0,
    "grad_clip_by": "global_norm",
    "vf_loss_coeff": 0.5,
    "entropy_coeff": 0.01,
    "rollout_fragment_length": 50,
    "train_batch_size": 500,
    "train_batch_size_per_learner": None,
    "minibatch_size": None,
    "num_epochs": 1,
    "num_env_runners": 2,
    "lr": 5e-4,
    "min_time_s_per_iteration": 10,
}
APPO_DEFAULTS = {  # RLlib 2.60's APPOConfig on top of IMPALA's
    **IMPALA_DEFAULTS,
    "learner_queue_size": 16,
    "clip_param": 0.4,
    "use_kl_loss": False,
    "kl_coeff": 1.0,
    "kl_target": 0.01,
    "target_network_update_freq": 2,
    "tau": 1.0,
    "target_worker_clipping": 2.0,
    "use_circular_buffer": True,
    "circular_buffer_num_batches": 8,
    "circular_buffer_iterations_per_batch": 2,
    "simple_queue_size": 32,
}


def test_defaults_are_rllibs():
    assert {name: getattr(IMPALAConfig(), name) for name in IMPALA_DEFAULTS} == IMPALA_DEFAULTS
    assert {name: getattr(APPOConfig(), name) for name in APPO_DEFAULTS} == APPO_DEFAULTS
    assert isinstance(APPOConfig(), IMPALAConfig) and isinstance(IMPALAConfig(), AlgorithmConfig)
    assert IMPALAConfig().num_learners == 0  # the learner trains in this process (RLlib: 1 remote learner)


def test_training_takes_the_algorithm_keywords():
    config = APPOConfig().training(
        vtrace_clip_rho_threshold=2.0,
        vtrace_clip_pg_rho_threshold=None,
        clip_param=0.2,
        use_kl_loss=True,
        kl_coeff=0.5,
        kl_target=0.02,
        target_network_update_freq=4,
        tau=0.5,
        circular_buffer_num_batches=4,
        circular_buffer_iterations_per_batch=3,
        broadcast_interval=2,
        entropy_coeff=[[0, 0.01], [10_000, 0.0]],
        vf_loss_coeff=0.05,
        grad_clip=10.0,
    )
    config.environment("CartPole-v1").validate()
    assert (config.clip_param, config.tau, config.circular_buffer_iterations_per_batch) == (0.2, 0.5, 3)
    with pytest.raises(TypeError, match=r"IMPALAConfig.training\(\) got an unexpected keyword 'clip_param'"):
        IMPALAConfig().training(clip_param=0.2)


def test_validation_lists_every_problem_with_its_fix():
    config = (
        APPOConfig()
        .environment("CartPole-v1")
        .training(
            vtrace=False,
            learner_queue_size=3,
            broadcast_interval=0,
            circular_buffer_iterations_per_batch=0,
            vtrace_clip_rho_threshold=-1.0,
            tau=2.0,
        )
    )
    with pytest.raises(ConfigError) as error:
        config.validate()
    message = str(error.value)
    assert message.startswith("Invalid APPOConfig (6 problems):")
    assert (
        "vtrace=False: APPOConfig always uses V-trace (RLlib 2.60 rejects vtrace=False too). "
        "Fix: leave vtrace=True in config.training()." in message
    )
    assert "learner_queue_size=3 is not used by APPO (RLlib 2.60 rejects it too)." in message
    assert "broadcast_interval=0 must be an int >= 1." in message
    assert "circular_buffer_iterations_per_batch=0 must be an int >= 1." in message
    assert "vtrace_clip_rho_threshold=-1.0 must be a number > 0 or None." in message
    assert "tau=2.0 must be a number in [0, 1]." in message
    IMPALAConfig().environment("CartPole-v1").training(learner_queue_size=5, minibatch_size=100).validate()


def test_default_classes_and_modules():
    assert IMPALAConfig().algo_class is IMPALA and APPOConfig().algo_class is APPO
    assert IMPALAConfig().get_default_learner_class() is IMPALATorchLearner
    assert APPOConfig().get_default_learner_class() is APPOTorchLearner
    impala_spec = IMPALAConfig().get_rl_module_spec()
    assert impala_spec.module_class is DefaultPPOTorchRLModule and impala_spec.model_config["vf_share_layers"]
    appo_spec = APPOConfig().rl_module(model_config={"fcnet_hiddens": [8]}).get_rl_module_spec()
    assert appo_spec.module_class is DefaultAPPOTorchRLModule
    assert appo_spec.model_config == {"fcnet_hiddens": [8]}


def test_queues_follow_the_settings():
    impala = IMPALAConfig().training(learner_queue_size=5).build_learner_queue()
    assert (impala.capacity, impala.uses_per_batch, impala.random_order) == (5, 1, False)
    appo = APPOConfig().build_learner_queue()
    assert (appo.capacity, appo.uses_per_batch, appo.random_order) == (8, 2, True)
    simple = APPOConfig().training(use_circular_buffer=False, simple_queue_size=4).build_learner_queue()
    assert (simple.capacity, simple.uses_per_batch, simple.random_order) == (4, 1, False)


def test_registered_names_and_top_level_imports():
    assert config_class("IMPALA") is IMPALAConfig and config_class("APPO") is APPOConfig
    assert algorithm_name(APPOConfig) == "APPO" and config_class_of(APPO) is APPOConfig
    assert config_class_of(IMPALA) is IMPALAConfig
    assert {"APPO", "APPOConfig", "IMPALA", "IMPALAConfig"} <= set(flywheel.__all__)
    assert flywheel.APPO is APPO and flywheel.IMPALA is IMPALA


def test_to_dict_round_trips():
    config = APPOConfig().environment("CartPole-v1").training(clip_param=0.3, circular_buffer_num_batches=3)
    again = APPOConfig.from_dict(config.to_dict())
    assert again == config and again.circular_buffer_num_batches == 3


def test_importing_the_configs_imports_neither_torch_nor_ray():
    code = (
        "import sys\n"
        "from flywheel import APPOConfig, IMPALAConfig\n"
        "APPOConfig().environment('CartPole-v1').validate()\n"
        "print('torch' in sys.modules, 'ray' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout == "False False\n", out.stderr[-2000:]
