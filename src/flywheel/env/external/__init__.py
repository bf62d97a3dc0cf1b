"""Envs that run outside flywheel and talk to it over a socket (RLlib's `ray.rllib.env.external`)."""

from flywheel.env.external.rllink import RLlink, get_rllink_message, send_rllink_message

__all__ = ["RLlink", "get_rllink_message", "send_rllink_message"]
