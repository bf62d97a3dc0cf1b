"""Every new-stack example script of the installed RLlib wheel runs on flywheel after `flywheel port`.

The scripts (`ray/rllib/examples/<folder>/*.py`, not `classes/`, `_old_api_stack/` or `__init__.py`)
are ported with the whole `examples/` folder into a temporary folder and run unmodified, one child
process each, for two training iterations. In the child process `import ray.rllib` fails (a
`sitecustomize` on PYTHONPATH blocks it, also in the Ray workers it starts), while ray, Tune, Data and
Serve import as usual: nothing can silently fall back to RLlib.

Marked `example_scripts` (excluded from `make test`): `make test-scripts` runs all (1 to 8 minutes a script on 2 busy cores),
`pytest -m example_scripts_short tests/porting/test_example_scripts.py` a representative handful.
Scripts that fail today for a reason outside the harness are xfail (not strict), naming the cause.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

import flywheel
from flywheel.porting.rllib_blocker import write_rllib_blocker

SRC = Path(flywheel.__file__).parent.parent
TIMEOUT_S = 600
RUN = ("--stop-iters=2", "--num-env-runners=0")
"""Every harness script: two iterations, sampling in the trial's process (2 cores: one CPU per trial)."""
TWO_AGENTS = (*RUN, "--num-agents=2")
OWN_ARGS = ()
"""Scripts with their own command line (not the harness's) run with none."""
NO_HUMAN_PLAY = (*RUN, "--num-episodes-human-play=0")
"""The OpenSpiel self-play scripts: after training they ask for moves on the command line, unless
told to play no games against a human."""

SCRIPTS: dict[str, tuple[str, ...]] = {
    "algorithms/appo_custom_algorithm_w_shared_data_actor.py": RUN,
    "algorithms/maml_lr_supervised_learning.py": RUN,
    "algorithms/vpg_custom_algorithm.py": RUN,
    "connectors/flatten_observations_dict_space.py": RUN,
    "connectors/frame_stacking.py": RUN,
    "connectors/mean_std_filtering.py": RUN,
    "connectors/multi_agent_observation_preprocessor.py": RUN,
    "connectors/prev_actions_prev_rewards.py": RUN,
    "connectors/single_agent_observation_preprocessor.py": RUN,
    "envs/agents_act_in_sequence.py": TWO_AGENTS,
    "envs/agents_act_simultaneously.py": TWO_AGENTS,
    "envs/async_gym_env_vectorization.py": RUN,
    "envs/custom_env_render_method.py": RUN,
    "envs/custom_gym_env.py": RUN,
    "envs/env_connecting_to_rllib_w_tcp_client.py": (*RUN, "--use-dummy-client"),
    "envs/env_rendering_and_recording.py": RUN,
    "envs/env_w_protobuf_observations.py": RUN,
    "learners/ppo_with_custom_loss_fn.py": RUN,
    "learners/ppo_with_torch_lr_schedulers.py": RUN,
    "learners/separate_vf_lr_and_optimizer.py": RUN,
    "multi_agent/custom_heuristic_policy.py": TWO_AGENTS,
    "multi_agent/different_spaces_for_agents.py": RUN,
    "multi_agent/multi_agent_cartpole.py": TWO_AGENTS,
    "multi_agent/multi_agent_pendulum.py": TWO_AGENTS,
    "multi_agent/pettingzoo_independent_learning.py": TWO_AGENTS,
    "multi_agent/pettingzoo_parameter_sharing.py": TWO_AGENTS,
    "multi_agent/rock_paper_scissors_heuristic_vs_learned.py": TWO_AGENTS,
    "multi_agent/rock_paper_scissors_learned_vs_learned.py": TWO_AGENTS,
    "multi_agent/self_play_footsies.py": RUN,
    "multi_agent/self_play_league_based_with_open_spiel.py": NO_HUMAN_PLAY,
    "multi_agent/self_play_with_open_spiel.py": NO_HUMAN_PLAY,
    "multi_agent/shared_encoder_cartpole.py": TWO_AGENTS,
    "multi_agent/two_step_game_with_grouped_agents.py": TWO_AGENTS,
    "offline_rl/cartpole_recording.py": RUN,
    "offline_rl/offline_rl_with_image_data.py": OWN_ARGS,
    "offline_rl/pretrain_bc_single_agent_evaluate_as_multi_agent.py": TWO_AGENTS,
    "offline_rl/train_w_bc_finetune_w_ppo.py": RUN,
    "ray_serve/ray_serve_with_rllib.py": (*RUN, "--no-render"),
    "ray_tune/appo_hyperparameter_tune.py": RUN,
    "ray_tune/custom_experiment.py": OWN_ARGS,
    "ray_tune/custom_logger.py": OWN_ARGS,
    "ray_tune/custom_progress_reporter.py": OWN_ARGS,
    "rl_modules/action_masking_rl_module.py": RUN,
    "rl_modules/custom_cnn_rl_module.py": RUN,
    "rl_modules/custom_lstm_rl_module.py": RUN,
    "rl_modules/migrate_modelv2_to_new_api_stack_by_config.py": OWN_ARGS,
    "rl_modules/migrate_modelv2_to_new_api_stack_by_policy_checkpoint.py": OWN_ARGS,
    "rl_modules/pretraining_single_agent_training_multi_agent.py": TWO_AGENTS,
}

SHORT = {
    "algorithms/vpg_custom_algorithm.py",
    "connectors/flatten_observations_dict_space.py",
    "connectors/multi_agent_observation_preprocessor.py",
    "envs/agents_act_simultaneously.py",
}
"""`-m example_scripts_short`: a custom algorithm, env-to-module connectors single- and multi-agent, a
custom multi-agent env (each took 1 to 4 minutes on 2 cores shared at load 15; most of it Ray starting)."""

NOT_SHIPPED = "which the wheel does not ship"
SKIPS: dict[str, str] = {
    "multi_agent/self_play_footsies.py": f"imports examples/algorithms/ppo/multi_agent_footsies_ppo.py, {NOT_SHIPPED}",
    "offline_rl/pretrain_bc_single_agent_evaluate_as_multi_agent.py": (
        f"reads rllib/offline/tests/data/cartpole/large.json, {NOT_SHIPPED}"
    ),
    "offline_rl/train_w_bc_finetune_w_ppo.py": f"reads rllib/offline/tests/data/cartpole/cartpole-v1_large, {NOT_SHIPPED}",
}
"""Script -> why it cannot run here (a dependency not on the registry, a file the wheel does not ship)."""

WATERWORLD = ("multi_agent/pettingzoo_independent_learning.py", "multi_agent/pettingzoo_parameter_sharing.py")
"""They train on `pettingzoo.sisl.waterworld_v4`, which PettingZoo 1.26 dropped."""


def has_waterworld() -> bool:
    try:
        return find_spec("pettingzoo.sisl.waterworld_v4") is not None
    except ImportError:  # no pettingzoo, or no pettingzoo.sisl
        return False


WATERWORLD_GONE = (
    "pettingzoo.sisl.waterworld_v4 is gone from the installed PettingZoo (1.26 dropped it). Fix: pip install "
    "'flywheel[pettingzoo]' (pettingzoo<1.26, pymunk<7); RLlib's PettingZooEnv, the AEC wrapper it uses, "
    "ports to flywheel.env.pettingzoo_aec.AECPettingZooEnv"
)
NOT_IN_FLYWHEEL = "imports RLlib names flywheel does not have (flywheel port reports each line): "
XFAILS: dict[str, str] = {
    "algorithms/maml_lr_supervised_learning.py": (
        NOT_IN_FLYWHEEL + "DifferentiableAlgorithmConfig, DifferentiableLearnerConfig, TrainingData (MAML)"
    ),
    "envs/env_rendering_and_recording.py": (
        "two PPO iterations on its default Pong (4x64x64 float32 frames rendered every step, 10 epochs on "
        "4000 steps an iteration) take longer than the 600 s timeout on 2 shared cores: run alone it "
        "finishes both, videos logged, in 803 s (676 s of training)"
    ),
    "offline_rl/offline_rl_with_image_data.py": (
        NOT_IN_FLYWHEEL + "BCCatalog, DefaultBCTorchRLModule, DefaultModelConfig (and it reads s3://)"
    ),
    "ray_serve/ray_serve_with_rllib.py": (
        "it starts `serve run` and asks it for actions after a fixed 20 s, but Ray Serve takes over a minute "
        "to start on 2 busy cores (ConnectionError: connection refused); its deployment, on flywheel's "
        "RLModule.from_checkpoint, answers once up"
    ),
    "ray_tune/appo_hyperparameter_tune.py": (
        "its defaults ask for num_gpus_per_learner=1 and it runs its own Tuner (not the harness's): on a "
        "machine without a GPU RLlib's trials stay PENDING forever; flywheel's Tuner.fit() refuses with "
        "the fix (ConfigError: each trial asks for 1 GPU(s) ... this machine has 0)"
    ),
    "rl_modules/migrate_modelv2_to_new_api_stack_by_config.py": (
        "imports rl_modules/classes/modelv2_to_rlm.py, a bridge from RLlib's old API stack ModelV2"
    ),
    "rl_modules/migrate_modelv2_to_new_api_stack_by_policy_checkpoint.py": (
        "it first trains on RLlib's old API stack (api_stack(enable_rl_module_and_learner=False)) for an old "
        "stack Policy checkpoint, and imports rl_modules/classes/modelv2_to_rlm.py, a bridge from ModelV2"
    ),
}
"""Script -> the cause outside the harness it fails on today (not strict: fixed causes show as XPASS)."""


def script_params() -> list:
    params = []
    for script, flags in SCRIPTS.items():
        marks = [pytest.mark.example_scripts]
        if script in SHORT:
            marks.append(pytest.mark.example_scripts_short)
        if script in SKIPS:
            marks.append(pytest.mark.skip(reason=SKIPS[script]))
        elif script in WATERWORLD:
            marks.append(pytest.mark.skipif(not has_waterworld(), reason=WATERWORLD_GONE))
        elif script in XFAILS:
            marks.append(pytest.mark.xfail(reason=XFAILS[script], strict=False))
        params.append(pytest.param(script, flags, marks=marks, id=script))
    return params


def test_the_list_is_every_new_stack_script_of_the_wheel(rllib_examples):
    shipped = sorted(
        str(path.relative_to(rllib_examples))
        for path in rllib_examples.glob("*/*.py")
        if path.parent.name not in {"classes", "_old_api_stack"} and path.name != "__init__.py"
    )
    assert shipped == sorted(SCRIPTS) and len(shipped) == 48
    assert set(SHORT) | set(SKIPS) | set(XFAILS) <= set(SCRIPTS) and not set(SKIPS) & set(XFAILS)


@pytest.fixture(scope="session")
def script_env(ported_rllib_examples, tmp_path_factory) -> dict[str, str]:
    """The child processes' environment: the RLlib blocker, the ported folder's parent and flywheel on
    PYTHONPATH, the venv's scripts (`serve`, `tune`) on PATH, as in an activated environment."""
    out, _ = ported_rllib_examples
    blocker = write_rllib_blocker(tmp_path_factory.mktemp("block_rllib"))
    path = os.pathsep.join([str(blocker), str(out.parent), str(SRC)])
    # A loaded machine (2 cores) can take Ray over a minute to start its node: allow 5.
    scripts = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {
        **os.environ,
        "PYTHONPATH": path,
        "PATH": scripts,
        "RAY_DEDUP_LOGS": "0",
        "RAY_raylet_start_wait_time_s": "300",
    }


def first_error_line(output: str) -> str:
    """The exception line of the last traceback in `output` (else its last line)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if ("Error" in line or "Exception" in line) and ":" in line]
    return (errors or lines or ["(no output)"])[-1][:300]


def run_script(script: str, flags: tuple[str, ...], ported: Path, env: dict[str, str]) -> tuple[int, str]:
    """(exit code, output) of one ported script run in its own folder (-1: timed out)."""
    path = ported / script
    try:
        done = subprocess.run(
            [sys.executable, path.name, *flags],
            cwd=path.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as timeout:
        return -1, f"{timeout.stdout or ''}{timeout.stderr or ''}\nTimeoutError: over {TIMEOUT_S} s"
    return done.returncode, done.stdout + done.stderr


@pytest.mark.skipif(find_spec("ray") is None, reason="the ray wheel is not installed")
@pytest.mark.parametrize(("script", "flags"), script_params())
def test_ported_script_runs_two_iterations(script, flags, ported_rllib_examples, script_env):
    out, _ = ported_rllib_examples
    code, output = run_script(script, flags, out, script_env)
    assert code == 0, f"{script} exited with {code}: {first_error_line(output)}"
