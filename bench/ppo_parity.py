"""PPO learning parity: env steps to a mean return of 450 on CartPole-v1, flywheel vs RLlib 2.60.

RLlib's tuned example `cartpole_ppo` with its settings written out, identical on both sides: lr 3e-4,
6 epochs, vf_loss_coeff 0.01, one shared linear 32-unit layer; PPO's defaults otherwise (batch
4000, minibatch 128, clip 0.3, KL loss 0.2 / target 0.01, lambda 1.0, gamma 0.99, vf_clip_param
10). One JSON line per run with two measures (null: not within the budget):

- `env_steps_to_target`: env steps sampled when the mean return of the last 100 finished episodes
  first reaches the target, counted here for both frameworks from `on_sample_end` (benchlib's tracker);
- `env_steps_to_own_metric`: when the framework's own `env_runners/episode_return_mean` first does.
  These differ in meaning: RLlib 2.60 clears its window at every `reduce()`, so its metric is the mean
  over one iteration's episodes (with 500-step episodes, the ~8 of the last 4000 steps); flywheel's
  is the last 100 episodes (docs/porting.md, "Windows carry over `reduce()`").

    PYTHONPATH=src python bench/ppo_parity.py --framework flywheel --seed 0 >> bench/results/ppo_parity.jsonl
    python bench/ppo_parity.py --framework rllib --seed 0 >> bench/results/ppo_parity.jsonl

`--label` names the row in bench/report_ppo_parity.py (default: the framework; "flywheel-before" for a
run of an older flywheel source tree through PYTHONPATH).
"""

import argparse
import json
import time

import torch
from benchlib import EpisodeReturnTracker


def build(framework: str, seed: int, runners: int, envs: int, tracker: EpisodeReturnTracker):
    if framework == "rllib":
        import ray
        from ray.rllib.algorithms.ppo import PPOConfig

        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

        model_config = DefaultModelConfig(fcnet_hiddens=[32], fcnet_activation="linear", vf_share_layers=True)
    else:
        from flywheel import PPOConfig

        model_config = {"fcnet_hiddens": [32], "fcnet_activation": "linear", "vf_share_layers": True}
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=runners, num_envs_per_env_runner=envs)
        .training(lr=3e-4, num_epochs=6, vf_loss_coeff=0.01)
        .rl_module(model_config=model_config)
        .callbacks(on_sample_end=lambda *, samples, **kw: tracker.add_chunks(samples))
        .debugging(seed=seed)
    )
    return config.build_algo()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--framework", choices=["flywheel", "rllib"], required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", default=None)
    parser.add_argument("--num-env-runners", type=int, default=0)
    parser.add_argument("--num-envs-per-env-runner", type=int, default=16)
    parser.add_argument("--target", type=float, default=450.0)
    parser.add_argument("--max-env-steps", type=int, default=600_000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    tracker = EpisodeReturnTracker()
    algo = build(args.framework, args.seed, args.num_env_runners, args.num_envs_per_env_runner, tracker)
    start, steps, reached, own, curve = time.time(), 0, None, None, []
    while steps < args.max_env_steps and reached is None:
        runners = algo.train()["env_runners"]
        steps = int(runners["num_env_steps_sampled_lifetime"])
        own_mean = float(runners.get("episode_return_mean", float("nan")))
        last_100 = tracker.mean_last_100()
        curve.append([steps, None if last_100 is None else round(last_100, 1), round(own_mean, 1)])
        if own is None and own_mean >= args.target:
            own = steps
        if last_100 is not None and last_100 >= args.target:
            reached = steps
    algo.stop()
    print(
        json.dumps(
            {
                "label": args.label or args.framework,
                "framework": args.framework,
                "seed": args.seed,
                "num_env_runners": args.num_env_runners,
                "num_envs_per_env_runner": args.num_envs_per_env_runner,
                "target": args.target,
                "env_steps_to_target": reached,
                "env_steps_to_own_metric": own,
                "seconds": round(time.time() - start, 1),
                "curve": curve,
            }
        )
    )


if __name__ == "__main__":
    main()
