"""RLlib's example-script harness, flywheel's own: the command line of RLlib 2.60's example scripts and the
function that runs their experiment (with Ray Tune, or a plain `train()` loop with `--no-tune`).

    from flywheel.examples_harness import (
        add_rllib_example_script_args,
        run_rllib_example_script_experiment,
    )

    parser = add_rllib_example_script_args(default_reward=450.0, default_timesteps=200_000)
    args = parser.parse_args()
    config = PPOConfig().environment("CartPole-v1")
    run_rllib_example_script_experiment(config, args)   # --as-test: exits non-zero below the reward

`flywheel port` maps both of RLlib's import paths of these names (`ray.rllib.examples.utils` and the
older `ray.rllib.utils.test_utils`) here. Importing this package imports neither ray nor torch.
"""

from flywheel.examples_harness.args import add_rllib_example_script_args
from flywheel.examples_harness.experiment import run_rllib_example_script_experiment, should_stop

__all__ = ["add_rllib_example_script_args", "run_rllib_example_script_experiment", "should_stop"]
