"""Hand-written sampling loop: the speed a framework's EnvRunner could approach on CartPole-v1.

gymnasium SyncVectorEnv (autoreset SAME_STEP) + the default PPO module's policy network
(obs -> 256 -> 256 tanh -> logits) + categorical sampling with its log-prob, storing
obs/actions/rewards/logp/terminated/truncated per vector step in Python lists.
One torch thread, `torch.inference_mode()`. Timed alone or in turns with flywheel (--turns-dir).
Prints one JSON line: env steps per second.
"""

import math

import gymnasium as gym
import numpy as np
import torch
from benchlib import run_guarded, sampling_args, time_sampling_args
from torch import nn


def mlp(n_in: int, n_out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(n_in, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, n_out)
    )


class ActorCritic(nn.Module):
    """Same shapes as the default PPO module (separate value branch, vf_share_layers=False).

    The value branch is built but NOT computed while sampling: RLlib's runners build the
    module with `inference_only=True`, which drops the critic, so the fair reference skips it.
    """

    def __init__(self, n_obs: int, n_actions: int) -> None:
        super().__init__()
        self.pi = mlp(n_obs, n_actions)
        self.vf = mlp(n_obs, 1)


def main() -> None:
    args = sampling_args(__doc__)

    def body() -> dict:
        torch.set_num_threads(1)
        torch.manual_seed(args.seed)
        env = gym.vector.SyncVectorEnv(
            [lambda: gym.make("CartPole-v1") for _ in range(args.num_envs)],
            autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
        )
        model = ActorCritic(env.single_observation_space.shape[0], int(env.single_action_space.n)).eval()
        obs, _ = env.reset(seed=args.seed)
        store: dict[str, list] = {
            k: [] for k in ("obs", "actions", "rewards", "logp", "terminated", "truncated")
        }

        def sample(n: int) -> int:
            nonlocal obs
            for k in store:
                store[k].clear()
            vector_steps = math.ceil(n / args.num_envs)
            with torch.inference_mode():
                for _ in range(vector_steps):
                    logits = model.pi(torch.from_numpy(obs))
                    log_probs = torch.log_softmax(logits, dim=-1)
                    actions = torch.multinomial(log_probs.exp(), 1)
                    logp = log_probs.gather(-1, actions).squeeze(-1).numpy()
                    actions = actions.squeeze(-1).numpy()
                    next_obs, rewards, terminated, truncated, _ = env.step(actions)
                    store["obs"].append(obs)
                    store["actions"].append(actions)
                    store["rewards"].append(rewards)
                    store["logp"].append(logp)
                    store["terminated"].append(terminated)
                    store["truncated"].append(truncated)
                    obs = next_obs
            np.stack(store["obs"])  # the batch a learner would receive: one conversion per call
            return vector_steps * args.num_envs

        result = time_sampling_args(sample, args)
        env.close()
        return result

    run_guarded({"bench": "sampling", "framework": "loop", "num_envs": args.num_envs}, body)


if __name__ == "__main__":
    main()
