"""PPO trained on a CartPole that runs outside flywheel and talks to it over TCP (RLlib's RLlink protocol).

    python examples/external_env_cartpole.py                 # until the mean return reaches 450
    python examples/external_env_cartpole.py --port 6000     # the runner listens on localhost:6000

The runner (`EnvRunnerServerForExternalInference`) has no env: the client below stands for a simulator
in another process or language. It asks for the config and the weights, acts with the module itself,
and sends `rollout_fragment_length` steps at a time, then waits for the weights of the next update.
docs/concepts/environments.md ("External envs (TCP)") describes the messages.
"""

import argparse
import pickle
import socket
import threading

import gymnasium as gym
import numpy as np
import torch

from flywheel import PPOConfig
from flywheel.columns import Columns
from flywheel.env.external import RLlink, get_rllink_message, send_rllink_message
from flywheel.env_runners.external_inference import EnvRunnerServerForExternalInference
from flywheel.episodes import SingleAgentEpisode


def build_config(port: int, fragment: int = 2000) -> PPOConfig:
    """PPO whose single runner serves the external CartPole on `port` (`fragment` steps per message)."""
    env = gym.make("CartPole-v1")
    return (
        PPOConfig()
        .environment(
            observation_space=env.observation_space, action_space=env.action_space, env_config={"port": port}
        )
        .env_runners(env_runner_cls=EnvRunnerServerForExternalInference)
        .training(train_batch_size_per_learner=fragment, minibatch_size=min(fragment, 500), num_epochs=10)
        .debugging(seed=0)
    )


class CartPoleClient:
    """An external CartPole: acts with the module the server's config and weights describe, sends
    `rollout_fragment_length` steps per message, and records what it sent and received."""

    def __init__(self, port: int, messages: int):
        self.sock = socket.create_connection(("localhost", port), timeout=120)
        self.messages = messages
        self.finished_returns: list[list[float]] = []  # per message: whole returns of the episodes it ended
        self.weights_seq_nos: list[int] = []
        self.weights: dict = {}
        self.error: BaseException | None = None

    def run(self) -> None:
        """The client's loop (call it in a thread); an error ends it and is kept in `error`."""
        try:
            self._run()
        except BaseException as err:
            self.error = err

    def _run(self) -> None:
        send_rllink_message(self.sock, {"type": RLlink.PING.name})
        assert get_rllink_message(self.sock)[0] is RLlink.PONG
        send_rllink_message(self.sock, {"type": RLlink.GET_CONFIG.name})
        kind, body = get_rllink_message(self.sock)
        assert kind is RLlink.SET_CONFIG
        config = pickle.loads(body["config"])  # the server's config (the client trusts its server)
        module = config.get_rl_module_spec().build()
        fragment = config.get_rollout_fragment_length()
        send_rllink_message(self.sock, {"type": RLlink.GET_STATE.name})
        self._set_state(module)
        env, rng = gym.make("CartPole-v1"), np.random.default_rng(0)
        obs, _ = env.reset(seed=0)
        episode, returns = SingleAgentEpisode(observations=[obs]), {}
        episodes, ended = [episode], []
        for _ in range(self.messages):
            for _ in range(fragment):
                with torch.no_grad():
                    out = module.forward_exploration({Columns.OBS: torch.tensor(obs[None])})
                logits = out[Columns.ACTION_DIST_INPUTS][0].numpy()
                probs = np.exp(logits - logits.max())
                probs /= probs.sum()
                action = int(rng.choice(len(probs), p=probs))
                obs, reward, terminated, truncated, _ = env.step(action)
                episode.add_env_step(
                    obs, action, reward, terminated=terminated, truncated=truncated,
                    extra_model_outputs={Columns.ACTION_DIST_INPUTS: logits, Columns.ACTION_LOGP: np.log(probs[action])},
                )  # fmt: skip
                returns[episode.id_] = returns.get(episode.id_, 0.0) + reward
                if episode.is_done:
                    ended.append(returns[episode.id_])
                    obs, _ = env.reset()
                    episode = SingleAgentEpisode(observations=[obs])
                    episodes.append(episode)
            message = {
                "type": RLlink.EPISODES_AND_GET_STATE.name,
                "episodes": [e.get_state() for e in episodes],
            }
            send_rllink_message(self.sock, message)
            self.finished_returns.append(ended)
            self._set_state(module)  # on-policy: the next steps act with the updated weights
            episode = episode.cut()
            episodes, ended = [episode], []

    def _set_state(self, module) -> None:
        kind, body = get_rllink_message(self.sock)
        assert kind is RLlink.SET_STATE
        module.set_state(body["state"]["rl_module"])
        self.weights_seq_nos.append(body["state"]["weights_seq_no"])
        self.weights = body["state"]["rl_module"]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=5555, help="the port the runner listens on")
    parser.add_argument("--stop-reward", type=float, default=450.0, help="stop at this mean episode return")
    parser.add_argument("--stop-iters", type=int, default=100, help="... or after this many iterations")
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)

    config = build_config(args.port, fragment=128 if args.smoke else 2000)
    if args.smoke:
        config.training(num_epochs=1)
        args.stop_iters = 1
    algo = config.build_algo()  # the runner listens from here on
    client = CartPoleClient(args.port, messages=args.stop_iters)
    thread = threading.Thread(target=client.run, daemon=True)
    thread.start()
    for _ in range(args.stop_iters):
        result = algo.train()
        ret = result["env_runners"].get("episode_return_mean", float("nan"))
        steps = result["num_env_steps_sampled_lifetime"]
        print(f"iteration {result['training_iteration']}: mean return {ret:.1f} after {steps} env steps")
        if ret >= args.stop_reward:
            break
    algo.stop()  # closes the connection: the client's next message fails, and its thread ends
    thread.join(timeout=60)
    return result


if __name__ == "__main__":
    main()
