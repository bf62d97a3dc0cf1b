"""EnvRunnerServerForExternalInference: PPO trains on episodes an external client steps and sends."""

from __future__ import annotations

import runpy
import socket
import threading
from pathlib import Path

import numpy as np
import pytest

from flywheel import PPOConfig
from flywheel.env.external import RLlink, get_rllink_message, send_rllink_message
from flywheel.env_runners.external_inference import EnvRunnerServerForExternalInference
from flywheel.errors import ConfigError

FRAGMENT = 200
EXAMPLE = runpy.run_path(
    str(Path(__file__).parents[2] / "examples" / "external_env_cartpole.py"), run_name="example"
)
"""examples/external_env_cartpole.py: the server's config and an external CartPole client."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


def server_config(port: int) -> PPOConfig:
    return EXAMPLE["build_config"](port, fragment=FRAGMENT).training(minibatch_size=100, num_epochs=1)


def connect(port: int) -> socket.socket:
    return socket.create_connection(("localhost", port), timeout=60)


def test_ppo_trains_on_the_episodes_an_external_client_sends():
    port = free_port()
    algo = server_config(port).build_algo()
    client = EXAMPLE["CartPoleClient"](port, messages=2)
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


def test_stop_ends_the_connection_of_a_client_the_runner_is_waiting_on():
    port = free_port()
    runner = EnvRunnerServerForExternalInference(server_config(port))
    with connect(port) as client:
        send_rllink_message(client, {"type": RLlink.PING.name})
        assert get_rllink_message(client)[0] is RLlink.PONG  # the listener now waits in recv()
        runner.stop()
        client.settimeout(5)
        with pytest.raises(ConnectionError, match=r"the peer closed the connection \(0 of 8 bytes read\)"):
            get_rllink_message(client)
