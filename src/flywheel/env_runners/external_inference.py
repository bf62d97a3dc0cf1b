"""`EnvRunnerServerForExternalInference`: a runner whose env runs elsewhere and acts on its own.

An external client (a simulator, a game engine) connects over TCP to `port + worker_index` (`port`
from `env_config`, default 5555), asks for the config and the weights, runs the policy itself, and
sends whole episodes (RLlib 2.60's protocol, `flywheel.env.external.rllink`). `sample()` returns the
episodes that arrived since the last call, waiting for the first; each weights update the runner
receives goes to a client that waits for it (`EPISODES_AND_GET_STATE`: on-policy sampling).

    config.environment(observation_space=..., action_space=..., env_config={"port": 5555})
    config.env_runners(env_runner_cls=EnvRunnerServerForExternalInference)

The runner has no env and runs no forward pass: its module only holds the weights the client asks
for. One client at a time; when it disconnects, the runner waits for the next.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, cast

import cloudpickle
import gymnasium as gym

from flywheel.env.external.rllink import RLlink, get_rllink_message, send_rllink_message
from flywheel.env_runners.env_runner import EnvRunner
from flywheel.env_runners.single_agent import log_episode_metrics
from flywheel.episodes import SingleAgentEpisode
from flywheel.errors import ConfigError
from flywheel.typing import DEFAULT_MODULE_ID

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig

logger = logging.getLogger(__name__)
DEFAULT_PORT = 5555


class EnvRunnerServerForExternalInference(EnvRunner):
    """Serves one external client on `localhost:port + worker_index` (see the module docstring)."""

    def __init__(
        self, config: AlgorithmConfig, *, worker_index: int = 0, num_workers: int | None = None, **kwargs
    ):
        super().__init__(config, worker_index=worker_index, num_workers=num_workers)
        if config.observation_space is None or config.action_space is None:
            raise ConfigError(
                "EnvRunnerServerForExternalInference has no env to read the spaces from, but the config "
                f"gives observation_space={config.observation_space} and action_space={config.action_space}. "
                "Fix: config.environment(observation_space=..., action_space=...), the external env's spaces."
            )
        self.env = None  # the client steps its own
        spaces = self._env_spaces()
        self._env_to_module = config.build_env_to_module_connector(None, spaces=spaces)
        self._module_to_env = config.build_module_to_env_connector(None, spaces=spaces)
        self.module = config.get_rl_module_spec(spaces=spaces, inference_only=True).build()
        self.port = int(config.env_config.get("port", DEFAULT_PORT)) + worker_index
        try:
            self._server = socket.create_server(("localhost", self.port))
        except OSError as err:
            raise ConfigError(
                f"EnvRunnerServerForExternalInference {worker_index} could not listen on localhost:{self.port} "
                f"({err}). Fix: env_config={{'port': ...}} with a free port (runner i listens on port + i)."
            ) from err
        self._client: socket.socket | None = None
        self._arrived: list[SingleAgentEpisode] = []  # episodes and chunks sample() has not returned yet
        self._arrival = threading.Condition()
        self._new_weights = threading.Event()  # set_state() received weights a waiting client needs
        self._partial: dict[str, tuple[float, int]] = {}  # (return, length) of earlier chunks, by episode id
        self._stopped = False
        threading.Thread(target=self._serve, name=f"rllink-server:{self.port}", daemon=True).start()

    # ----------------------------------------------------------------- spaces

    def _env_spaces(self) -> tuple[gym.Space, gym.Space]:
        return self.config.observation_space, self.config.action_space

    def _vector_env_spaces(self) -> tuple[gym.Space, gym.Space]:
        return self._env_spaces()

    def _module_spaces(self) -> dict[str, tuple]:
        return {DEFAULT_MODULE_ID: (self._env_to_module.observation_space, self._env_to_module.action_space)}

    def _env_check(self) -> NoReturn:
        raise NotImplementedError("the external client checks and steps its own env")

    def _make_vector_env(self, check: Callable[[object], None] | None) -> NoReturn:
        raise NotImplementedError("the external client checks and steps its own env")

    # --------------------------------------------------------------- sampling

    def _reset_envs(self, explore: bool) -> None:
        self._episodes = []  # the client resets its env itself

    def _sample_timesteps(self, num_timesteps: int, explore: bool, random_actions: bool) -> tuple[list, list]:
        return self._take_arrived()

    def _sample_episodes(self, num_episodes: int, explore: bool, random_actions: bool) -> tuple[list, list]:
        return self._take_arrived()

    def _take_arrived(self) -> tuple[list, list]:
        """The episodes that arrived since the last call (waiting for the first), and `(return, length)`
        of those that finished, over all their chunks."""
        with self._arrival:
            while not self._arrived:
                if not self._arrival.wait(timeout=self.config.sample_timeout_s or None):
                    logger.warning(
                        "EnvRunnerServerForExternalInference on port %d: no episodes from the external env "
                        "for %s s (%s); still waiting.", self.port, self.config.sample_timeout_s,
                        "a client is connected" if self._client else "no client connected",
                    )  # fmt: skip
            episodes, self._arrived = self._arrived, []
        stats = []
        for episode in episodes:
            ret, length = self._partial.pop(episode.id_, (0.0, 0))
            ret, length = ret + float(episode.get_return()), length + len(episode)
            if episode.is_done:
                stats.append((ret, length))
            else:
                self._partial[episode.id_] = (ret, length)
        return episodes, stats

    def _log_sample_metrics(self, episodes: list, stats: list) -> None:
        log_episode_metrics(self, episodes, stats)

    # ------------------------------------------------------------------ state

    def set_state(self, state: dict[str, object]) -> None:
        """`EnvRunner.set_state`; new weights also go to a client waiting for them."""
        super().set_state(state)
        if "rl_module" in state:
            self._new_weights.set()

    def stop(self) -> None:
        """Shuts the sockets down, which also wakes the listener thread blocked on them (a bare close()
        would leave it blocked and the connection open), and closes them: the client sees its
        connection end."""
        self._stopped = True
        self._new_weights.set()
        for sock in (self._client, self._server):
            if sock is not None:
                with contextlib.suppress(OSError):  # already shut down by the peer
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        super().stop()

    # ------------------------------------------------------------- the client

    def _serve(self) -> None:
        """The listener thread: one client at a time, until `stop()`."""
        while not self._stopped:
            try:
                self._client, address = self._server.accept()
            except OSError:  # stop() closed the server socket
                return
            logger.info(
                "EnvRunnerServerForExternalInference on port %d: client %s connected", self.port, address
            )
            try:
                while True:
                    self._answer(*get_rllink_message(self._client))
            except ConnectionError as err:
                if not self._stopped:
                    logger.warning("EnvRunnerServerForExternalInference on port %d: %s", self.port, err)
            finally:
                self._client.close()
                self._client = None

    def _answer(self, kind: RLlink, body: dict[str, object]) -> None:
        assert self._client is not None  # _serve answers the connected client
        if kind is RLlink.PING:
            send_rllink_message(self._client, {"type": RLlink.PONG.name})
        elif kind is RLlink.GET_CONFIG:
            send_rllink_message(
                self._client, {"type": RLlink.SET_CONFIG.name, "config": cloudpickle.dumps(self.config)}
            )
        elif kind is RLlink.GET_STATE:
            self._send_state()
        elif kind in (RLlink.EPISODES, RLlink.EPISODES_AND_GET_STATE):
            try:
                states = cast(list[dict[str, Any]], body["episodes"])
                episodes = [SingleAgentEpisode.from_state(state).to_numpy() for state in states]
            except Exception as err:  # the client's data: its fault, reported and the connection closed
                raise ConnectionError(f"the client's episodes could not be read ({err!r})") from err
            self._new_weights.clear()  # before sample() can return these: their update comes after
            with self._arrival:
                self._arrived.extend(episodes)
                self._arrival.notify_all()
            if kind is RLlink.EPISODES_AND_GET_STATE:
                self._new_weights.wait()
                if self._stopped:
                    raise ConnectionError("the runner stopped")
                self._send_state()
        else:
            raise ConnectionError(f"the client sent {kind.name}, which is a server's message")

    def _send_state(self) -> None:
        assert self._client is not None  # _serve answers the connected client
        state = self.get_state(components=["rl_module"])
        send_rllink_message(self._client, {"type": RLlink.SET_STATE.name, "state": state})
