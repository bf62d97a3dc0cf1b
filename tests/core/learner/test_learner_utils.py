"""flywheel.core.learner.utils: make_target_network / update_target_network (RLlib's semantics)."""

import pytest
import torch
from torch import nn

from flywheel.core.learner.utils import make_target_network, update_target_network
from flywheel.errors import ArgumentError


def test_make_target_network_is_a_frozen_deep_copy():
    main = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    target = make_target_network(main)
    assert target is not main and isinstance(target, nn.Sequential)
    for (name, p), (_, q) in zip(main.named_parameters(), target.named_parameters()):
        assert torch.equal(p, q) and p is not q, name
        assert p.requires_grad and not q.requires_grad
    with torch.no_grad():
        main[0].weight.add_(1.0)
    assert not torch.equal(main[0].weight, target[0].weight)
    with pytest.raises(ArgumentError, match=r"make_target_network needs a torch.nn.Module; got a Tensor"):
        make_target_network(torch.zeros(1))


def test_update_target_network_polyak_steps_parameters_and_buffers():
    main = nn.Sequential(nn.Linear(1, 1), nn.BatchNorm1d(1))
    target = make_target_network(main)
    with torch.no_grad():
        main[0].weight.fill_(2.0)
        target[0].weight.fill_(0.0)
        main[1].running_mean.fill_(4.0)
        main[1].num_batches_tracked.fill_(7)
    update_target_network(main_net=main, target_net=target, tau=0.25)
    assert target[0].weight.item() == 0.5
    assert target[1].running_mean.item() == 1.0
    assert target[1].num_batches_tracked.item() == 7  # not a float: copied
    update_target_network(main, target, 1.0)
    assert target[0].weight.item() == 2.0 and not target[0].weight.requires_grad
    with pytest.raises(ArgumentError, match=r"target_net has 2 parameters and float buffers, main_net 6"):
        update_target_network(main, nn.Linear(1, 1), 0.5)
