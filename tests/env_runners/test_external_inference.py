"""EnvRunnerServerForExternalInference: PPO trains on episodes an external client steps and sends."""

from __future__ import annotations

import pickle
import socket
import threading

import gymnasium as gym
import numpy as np
import pytest
import torch

from flywheel import PPOConfig
from flywheel.columns import Columns
from flywheel.env.external import RLlink, get_rllink_message, send_rllink_message
from flywheel.env_runners.external_inference import EnvRunnerServerForExternalInference
from flywheel.episodes import SingleAgentEpisode
from flywheel.errors import ConfigError

FRAGMENT = 200


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


def server_config(port: int) -> PPOConfig:
    env = gym.make("CartPole-v1")
    return (
        PPOConfig()
        .environment(
            observation_space=env.observation_space, action_space=env.action_space, env_config={"port": port}
        )
        .env_runners(env_runner_cls=EnvRunnerServerForExternalInference)
        .training(train_batch_size_per_learner=FRAGMENT, minibatch_size=100, num_epochs=1)
        .debugging(seed=0)
    )


def connect(port: int) -> socket.socket:
    return socket.create_connection(("localhost", port), timeout=60)


class Client:
    """An external CartPole that acts with the module the server's config and weights describe, and
    sends `FRAGMENT` steps per message, as RLlib's dummy client does."""

    def __init__(self, port: int, messages: int):
        self.sock = connect(port)
        self.messages = messages
        self.finished_returns: list[list[float]] = []  # per message: whole returns of the episodes it ended
        self.weights_seq_nos: list[int] = []
        self.weights: dict = {}
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as err:  # reported by the test
            self.error = err

    def _run(self) -> None:
        send_rllink_message(self.sock, {"type": RLlink.PING.name})
        assert get_rllink_message(self.sock)[0] is RLlink.PONG
        send_rllink_message(self.sock, {"type": RLlink.GET_CONFIG.name})
        kind, body = get_rllink_message(self.sock)
        assert kind is RLlink.SET_CONFIG
        module = pickle.loads(body["config"]).get_rl_module_spec().build()
        send_rllink_message(self.sock, {"type": RLlink.GET_STATE.name})
        self._set_state(module)
        env = gym.make("CartPole-v1")
        rng = np.random.default_rng(0)
        obs, _ = env.reset(seed=0)
        episode, returns = SingleAgentEpisode(observations=[obs]), {}
        episodes, ended = [episode], []
        for _ in range(self.messages):
            for _ in range(FRAGMENT):
                with torch.no_grad():
                    logits = module.forward_exploration({Columns.OBS: torch.tensor(obs[None])})
                logits = logits[Columns.ACTION_DIST_INPUTS][0].numpy()
                probs = np.exp(logits - logits.max())
                probs /= probs.sum()
                action = int(rng.choice(2, p=probs))
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
                "episodes": [e.get_state() for e in episodes],
                "type": RLlink.EPISODES_AND_GET_STATE.name,
            }
            send_rllink_message(self.sock, message)
            self.finished_returns.append(ended)
            self._set_state(module)
            episode = episode.cut()
            episodes, ended = [episode], []

    def _set_state(self, module) -> None:
        kind, body = get_rllink_message(self.sock)
        assert kind is RLlink.SET_STATE
        module.set_state(body["state"]["rl_module"])
        self.weights_seq_nos.append(body["state"]["weights_seq_no"])
        self.weights = body["state"]["rl_module"]


def test_ppo_trains_on_the_episodes_an_external_client_sends():
    port = free_port()
    algo = server_config(port).build_algo()
    client = Client(port, messages=2)
    thread = threading.Thread(target=client.run, daemon=True)
    thread.start()
    try:
        results = [algo.train() for _ in range(2)]
        thread.join(timeout=60)
        assert client.error is None, client.error
        runners = [r["env_runners"] for r in results]
        assert [r["num_env_steps_sampled_lifetime"] for r in runners] == [FRAGMENT, 2 * FRAGMENT]
        # Episodes cut between messages count once, with their whole return.
        first, second = client.finished_returns
        assert runners[0]["episode_return_mean"] == pytest.approx(np.mean(first))
        assert runners[1]["episode_return_mean"] == pytest.approx(np.mean(first + second))
        # The client got the weights of each update, numbered as the runner's.
        assert client.weights_seq_nos == [0, 1, 2] == [0, 1, algo.env_runner.weights_seq_no]
        learner_weights = algo.env_runner.module.get_state(inference_only=True)
        assert set(client.weights) == set(learner_weights)
        for name, value in learner_weights.items():
            np.testing.assert_array_equal(client.weights[name], value)
    finally:
        algo.stop()
    with pytest.raises(ConnectionError, match="Could not (send|receive) an RLlink"):  # closed, or reset
        send_rllink_message(client.sock, {"type": RLlink.PING.name})
        get_rllink_message(client.sock)


def test_a_client_sending_bad_episodes_is_disconnected_and_the_next_one_served():
    port = free_port()
    runner = EnvRunnerServerForExternalInference(server_config(port))
    try:
        with connect(port) as bad:
            send_rllink_message(bad, {"type": RLlink.EPISODES.name, "episodes": [{"not": "an episode"}]})
            with pytest.raises(ConnectionError, match="the peer closed the connection"):
                get_rllink_message(bad)
        with connect(port) as good:
            send_rllink_message(good, {"type": RLlink.PING.name})
            assert get_rllink_message(good)[0] is RLlink.PONG
    finally:
        runner.stop()


def test_the_server_needs_the_spaces_and_a_free_port():
    config = PPOConfig().env_runners(env_runner_cls=EnvRunnerServerForExternalInference)
    with pytest.raises(
        ConfigError, match=r"no env to read the spaces from.*Fix: config.environment\(observation_space="
    ):
        EnvRunnerServerForExternalInference(config)
    port = free_port()
    taken = rf"could not listen on localhost:{port} .*Fix: env_config="
    with socket.create_server(("localhost", port)), pytest.raises(ConfigError, match=taken):
        EnvRunnerServerForExternalInference(server_config(port))
