"""Target-network helpers for learners and RLModules (RLlib's `ray.rllib.core.learner.utils`).

The pattern (an RLModule's `make_target_networks`, a learner's update)::

    self._target_pi = make_target_network(self._pi)        # frozen copy, same weights
    update_target_network(main_net=self._pi, target_net=self._target_pi, tau=0.005)  # Polyak step
"""

from __future__ import annotations

import copy

import torch

from flywheel.compat import foreach_copy_, foreach_lerp_
from flywheel.errors import ArgumentError


def make_target_network(main_net: torch.nn.Module) -> torch.nn.Module:
    """A deep copy of `main_net` (same weights, buffers and structure) with `requires_grad` off.

    Nothing links the copy to `main_net` afterwards: move it with `update_target_network`.
    """
    if not isinstance(main_net, torch.nn.Module):
        raise ArgumentError(
            f"make_target_network needs a torch.nn.Module; got a {type(main_net).__name__}. "
            "Fix: pass the network (e.g. self._encoder), not its output or its parameters."
        )
    return copy.deepcopy(main_net).requires_grad_(False)


@torch.no_grad()
def update_target_network(main_net: torch.nn.Module, target_net: torch.nn.Module, tau: float) -> None:
    """Polyak step: `target = tau * main + (1 - tau) * target`, for every parameter and float buffer.

    `tau=1` copies `main_net` into `target_net`. Other buffers (e.g. int step counters) are copied.
    Both nets must have the same structure (as after `make_target_network`).
    """
    targets = [*target_net.parameters(), *_float_buffers(target_net)]
    mains = [*main_net.parameters(), *_float_buffers(main_net)]
    if len(targets) != len(mains):
        raise ArgumentError(
            f"update_target_network: target_net has {len(targets)} parameters and float buffers, main_net "
            f"{len(mains)}. Fix: build the target with make_target_network(main_net)."
        )
    if tau == 1.0:
        foreach_copy_(targets, mains)
    else:
        foreach_lerp_(targets, mains, tau)
    for target, main in zip(_other_buffers(target_net), _other_buffers(main_net)):
        target.copy_(main)


def _float_buffers(net: torch.nn.Module) -> list[torch.Tensor]:
    return [b for b in net.buffers() if b.is_floating_point()]


def _other_buffers(net: torch.nn.Module) -> list[torch.Tensor]:
    return [b for b in net.buffers() if not b.is_floating_point()]
