"""PPO on CartPole-v1 with remote env runners and learners (Ray actors), locally or on a cluster.

    python examples/distributed_ppo.py                    # starts Ray on this machine
    ray start --head                                      # ... or start a cluster (workers: ray start --address=...)
    python examples/distributed_ppo.py --address auto     # and join it: actors go anywhere in the cluster

Two runners sample in parallel; two learners each update on half of the episodes and average their
gradients (torch.distributed, gloo), so both hold identical weights after every update. A runner
whose env crashes is restarted with the current weights (see `fault_tolerance/...` in the output).
"""

import argparse

from flywheel import PPOConfig


def build_config(num_env_runners: int = 2, num_learners: int = 2) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=4)
        .learners(num_learners=num_learners)
        # Per learner: 2 x 2000 = 4000 env steps per iteration, as in the single-process example.
        .training(
            clip_param=0.2,
            use_kl_loss=False,
            lambda_=0.95,
            lr=3e-4,
            train_batch_size_per_learner=2000,
            minibatch_size=128,
            num_epochs=10,
        )
        .training(vf_clip_param=float("inf"))  # RLlib's 10 clamps 64-94% of the value errors in updates 2-11
        .fault_tolerance(restart_failed_env_runners=True, delay_between_env_runner_restarts_s=5.0)
        .debugging(seed=0)
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default=None, help="join this Ray cluster (e.g. 'auto')")
    parser.add_argument("--num-env-runners", type=int, default=2)
    parser.add_argument("--num-learners", type=int, default=2)
    parser.add_argument("--stop-reward", type=float, default=475.0)
    parser.add_argument("--stop-iters", type=int, default=50)
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)
    if args.address is not None:
        import ray

        ray.init(address=args.address)
    config = build_config(args.num_env_runners, args.num_learners)
    if args.smoke:
        # CI: tiny batches, and the actors share whatever cores the test session has.
        config.training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
        config.env_runners(num_cpus_per_env_runner=0).learners(num_cpus_per_learner=0)
        args.stop_iters = 1
    algo = config.build_algo()
    try:
        for _ in range(args.stop_iters):
            result = algo.train()
            runners, faults = result["env_runners"], result.get("fault_tolerance", {})
            print(
                f"iteration {result['training_iteration']}: mean return {runners['episode_return_mean']:.1f} "
                f"after {result['num_env_steps_sampled_lifetime']} env steps "
                f"({faults.get('num_healthy_env_runners', 0)} healthy remote runners, "
                f"{faults.get('num_env_runner_restarts', 0)} restarts)"
            )
            if runners["episode_return_mean"] >= args.stop_reward:
                break
    finally:
        algo.stop()
    return result


if __name__ == "__main__":
    main()
