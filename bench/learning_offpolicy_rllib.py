"""RLlib 2.60 DQN on CartPole-v1 to 450 (last 100 episodes) and SAC on Pendulum-v1 to -250 (last 10).

    bench/.venv/bin/python bench/learning_offpolicy_rllib.py --seed 0 --max-seconds 600
    bench/.venv/bin/python bench/learning_offpolicy_rllib.py --algos sac --max-seconds 60

New API stack, everything local (`num_env_runners=0`, the learner in this process), with the
settings of RLlib's own tuned examples `examples/algorithms/dqn/cartpole_dqn.py` and
`examples/algorithms/sac/pendulum_sac.py` (the 2.60 wheel does not ship them; see bench/README.md).
Finished episodes are collected from `on_sample_end` (returns summed over chunks per episode id),
not from RLlib's `episode_return_mean`; the threshold is checked as each sample() call ends, and
training stops after the `train()` in which it was reached or once `--max-seconds` of training per
algorithm are used. Prints one JSON line like learning_offpolicy.py (see bench/README.md).
"""

from __future__ import annotations

import traceback
from typing import Any

from benchlib import emit
from offpolicy_watch import TASKS, ThresholdWatch, offpolicy_args, set_torch_threads


def dqn_config() -> Any:
    """cartpole_dqn.py: prioritized replay, double Q, dueling, 2-5 step returns, [256] tanh + [256] heads."""
    from ray.rllib.algorithms.dqn import DQNConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    return (
        DQNConfig()
        .environment("CartPole-v1")
        .training(
            lr=0.0005,
            train_batch_size_per_learner=32,
            replay_buffer_config={
                "type": "PrioritizedEpisodeReplayBuffer",
                "capacity": 50_000,
                "alpha": 0.6,
                "beta": 0.4,
            },
            n_step=(2, 5),
            double_q=True,
            dueling=True,
            epsilon=[(0, 1.0), (25_000, 0.02)],
        )
        .rl_module(
            model_config=DefaultModelConfig(
                fcnet_hiddens=[256],
                fcnet_activation="tanh",
                fcnet_bias_initializer="zeros_",
                head_fcnet_hiddens=[256],
                head_fcnet_bias_initializer="zeros_",
            )
        )
    )


def sac_config() -> Any:
    """pendulum_sac.py: separate actor/critic/alpha learning rates, 2-5 step returns, [256, 256] relu."""
    from ray.rllib.algorithms.sac import SACConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from torch import nn

    return (
        SACConfig()
        .environment("Pendulum-v1")
        .training(
            initial_alpha=1.001,
            actor_lr=2e-4,
            critic_lr=8e-4,
            alpha_lr=9e-4,
            lr=None,
            target_entropy="auto",
            n_step=(2, 5),
            tau=0.005,
            train_batch_size_per_learner=256,
            target_network_update_freq=1,
            replay_buffer_config={
                "type": "PrioritizedEpisodeReplayBuffer",
                "capacity": 100_000,
                "alpha": 1.0,
                "beta": 0.0,
            },
            num_steps_sampled_before_learning_starts=256,
        )
        .rl_module(
            model_config=DefaultModelConfig(
                fcnet_hiddens=[256, 256],
                fcnet_activation="relu",
                fcnet_kernel_initializer=nn.init.xavier_uniform_,
                head_fcnet_hiddens=[],
                head_fcnet_activation=None,
                head_fcnet_kernel_initializer="orthogonal_",
                head_fcnet_kernel_initializer_kwargs={"gain": 0.01},
                fusionnet_hiddens=[256, 256, 256],
                fusionnet_activation="relu",
            )
        )
        .reporting(metrics_num_episodes_for_smoothing=5)
    )


CONFIGS = {"dqn": dqn_config, "sac": sac_config}


def run(algo: str, seed: int, max_seconds: float) -> dict[str, Any]:
    """Trains `algo` until the threshold or `max_seconds` of training; returns its fields of the line."""
    watch = ThresholdWatch(TASKS[algo], max_seconds)
    config = (
        CONFIGS[algo]()
        .env_runners(num_env_runners=0)
        .callbacks(on_sample_end=lambda *, samples, **kw: watch.add_chunks(samples))
        .debugging(seed=seed)
    )
    trainer = config.build_algo()
    watch.start()
    try:
        while not watch.done():
            trainer.train()
        return watch.result()
    finally:
        trainer.stop()


def main() -> None:
    args = offpolicy_args(__doc__.splitlines()[0])
    line: dict[str, Any] = {"bench": "learning_offpolicy", "framework": "rllib", "seed": args.seed}
    line["torch_threads"] = set_torch_threads(args.torch_threads)
    for algo in args.algos:
        try:
            line[algo] = run(algo, args.seed, args.max_seconds)
        except Exception as exc:  # noqa: BLE001 - a failing algorithm is reported, the other still runs
            traceback.print_exc()
            line[algo] = {"error": f"{type(exc).__name__}: {exc}"}
    emit(line)


if __name__ == "__main__":
    main()
