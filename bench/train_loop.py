"""Single-file PPO on CartPole-v1 (CleanRL-style), until the last 100 finished episodes average 450 (and 475).

Settings of CleanRL's classic-control PPO (shared/BENCHMARKS.md): 4 envs x 128 steps, 4 epochs of
4 minibatches, lr 2.5e-4 annealed linearly over 500k steps, gamma 0.99, GAE lambda 0.95, clip 0.2
(also on the value loss), entropy 0.01, value coefficient 0.5, grad norm 0.5, normalized
advantages, separate 64-64 tanh actor and critic. Like CleanRL, a truncated episode is treated as
terminated (no bootstrap from the final observation). One torch thread. Prints one JSON line.
"""

from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch
from benchlib import EpisodeReturnTracker, ThresholdClock, run_guarded, since_start, training_args
from torch import nn

NUM_ENVS, NUM_STEPS, NUM_MINIBATCHES, EPOCHS = 4, 128, 4, 4
LR, TOTAL_TIMESTEPS = 2.5e-4, 500_000
GAMMA, LAMBDA, CLIP, ENT_COEF, VF_COEF, MAX_GRAD_NORM = 0.99, 0.95, 0.2, 0.01, 0.5, 0.5


def layer(n_in: int, n_out: int, std: float = 2**0.5) -> nn.Linear:
    """Orthogonal weights, zero bias: the initialization the PPO implementation studies recommend."""
    linear = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(linear.weight, std)
    nn.init.zeros_(linear.bias)
    return linear


class Agent(nn.Module):
    def __init__(self, n_obs: int, n_actions: int) -> None:
        super().__init__()
        self.critic = nn.Sequential(layer(n_obs, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, 1, 1.0))
        self.actor = nn.Sequential(
            layer(n_obs, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, n_actions, 0.01)
        )

    def act(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Sampled actions, their log-probs and the state values."""
        dist = torch.distributions.Categorical(logits=self.actor(obs))
        actions = dist.sample()
        return actions, dist.log_prob(actions), self.critic(obs).squeeze(-1)

    def evaluate(self, obs: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Log-probs of taken actions, entropies and values, with gradients."""
        dist = torch.distributions.Categorical(logits=self.actor(obs))
        return dist.log_prob(actions), dist.entropy(), self.critic(obs).squeeze(-1)


def advantages(rewards, dones, values, next_value, next_done) -> torch.Tensor:
    """GAE(lambda) backwards over the rollout; `dones[t]` marks that obs t started a new episode."""
    adv = torch.zeros_like(rewards)
    last = torch.zeros(NUM_ENVS)
    for t in reversed(range(NUM_STEPS)):
        not_done = 1.0 - (next_done if t == NUM_STEPS - 1 else dones[t + 1])
        next_v = next_value if t == NUM_STEPS - 1 else values[t + 1]
        delta = rewards[t] + GAMMA * next_v * not_done - values[t]
        adv[t] = last = delta + GAMMA * LAMBDA * not_done * last
    return adv


def update(agent, optimizer, obs, actions, logp, adv, returns, values) -> None:
    """The clipped PPO update: epochs x shuffled minibatches."""
    batch = NUM_ENVS * NUM_STEPS
    mb = batch // NUM_MINIBATCHES
    for _ in range(EPOCHS):
        order = torch.randperm(batch)
        for start in range(0, batch, mb):
            i = order[start : start + mb]
            new_logp, entropy, new_v = agent.evaluate(obs[i], actions[i])
            ratio = (new_logp - logp[i]).exp()
            a = (adv[i] - adv[i].mean()) / (adv[i].std() + 1e-8)
            pg_loss = torch.max(-a * ratio, -a * ratio.clamp(1 - CLIP, 1 + CLIP)).mean()
            v_clipped = values[i] + (new_v - values[i]).clamp(-CLIP, CLIP)
            v_loss = 0.5 * torch.max((new_v - returns[i]) ** 2, (v_clipped - returns[i]) ** 2).mean()
            loss = pg_loss - ENT_COEF * entropy.mean() + VF_COEF * v_loss
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), MAX_GRAD_NORM)
            optimizer.step()


class LoopPPO:
    """The loop's state (envs, agent, optimizer, rollout buffers); `iterate` runs one PPO iteration.

    `on_episode_end` gets the return of every episode that finishes while sampling.
    """

    def __init__(self, seed: int, on_episode_end: Callable[[float], None]) -> None:
        torch.set_num_threads(1)
        torch.manual_seed(seed)
        self.envs = gym.vector.SyncVectorEnv(
            [lambda: gym.make("CartPole-v1") for _ in range(NUM_ENVS)],
            autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
        )
        envs = self.envs
        self.agent = Agent(envs.single_observation_space.shape[0], int(envs.single_action_space.n))
        self.optimizer = torch.optim.Adam(self.agent.parameters(), lr=LR, eps=1e-5)
        shape = (NUM_STEPS, NUM_ENVS)
        self.obs_buf = torch.zeros(shape + envs.single_observation_space.shape)
        self.act_buf, self.logp_buf, self.rew_buf, self.done_buf, self.val_buf = (
            torch.zeros(shape) for _ in range(5)
        )
        self.next_obs = torch.from_numpy(envs.reset(seed=seed)[0])
        self.next_done = torch.zeros(NUM_ENVS)
        self.episode_returns = np.zeros(NUM_ENVS)
        self.on_episode_end = on_episode_end

    def iterate(self, it: int, iterations: int) -> int:
        """Iteration `it` of `iterations` (the lr anneals over them): a rollout and an update.
        Returns the env steps sampled."""
        agent = self.agent
        self.optimizer.param_groups[0]["lr"] = LR * (1.0 - it / iterations)
        for t in range(NUM_STEPS):
            self.obs_buf[t], self.done_buf[t] = self.next_obs, self.next_done
            with torch.no_grad():
                action, logp, value = agent.act(self.next_obs)
            self.act_buf[t], self.logp_buf[t], self.val_buf[t] = action, logp, value
            obs, reward, terminated, truncated, _ = self.envs.step(action.numpy())
            done = terminated | truncated
            self.episode_returns += reward
            for ret in self.episode_returns[done]:
                self.on_episode_end(float(ret))
            self.episode_returns[done] = 0.0
            self.rew_buf[t] = torch.from_numpy(reward)
            self.next_obs, self.next_done = torch.from_numpy(obs), torch.from_numpy(done.astype(np.float32))
        with torch.no_grad():
            next_value = agent.critic(self.next_obs).squeeze(-1)
            adv = advantages(self.rew_buf, self.done_buf, self.val_buf, next_value, self.next_done)
        flat = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731 - (steps, envs, ...) -> (batch, ...)
        update(
            agent, self.optimizer, flat(self.obs_buf), flat(self.act_buf).long(), flat(self.logp_buf),
            flat(adv), flat(adv + self.val_buf), flat(self.val_buf),
        )  # fmt: skip
        return NUM_ENVS * NUM_STEPS


def train(seed: int, max_seconds: float, clock: ThresholdClock) -> int:
    """Runs PPO iterations until the clock's last threshold, the time cap or the step budget; returns env steps."""
    ppo = LoopPPO(seed, clock.tracker.add_finished)
    steps, iterations = 0, TOTAL_TIMESTEPS // (NUM_ENVS * NUM_STEPS)
    clock.start_training()
    for it in range(iterations):
        steps += ppo.iterate(it, iterations)
        if clock.check(steps) or since_start() >= max_seconds:
            break
    ppo.envs.close()
    return steps


def main() -> None:
    args = training_args(__doc__)

    def body() -> dict:
        clock = ThresholdClock(EpisodeReturnTracker())
        steps = train(args.seed, args.max_seconds, clock)
        return clock.result(steps)

    run_guarded({"bench": "train", "framework": "loop", "seed": args.seed}, body)


if __name__ == "__main__":
    main()
