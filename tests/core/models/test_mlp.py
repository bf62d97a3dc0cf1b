import torch
from torch import nn

from flywheel.core.models import MLPEncoder, OneHotMLPEncoder, mlp, normc_initializer


def test_mlp_layers():
    net = mlp(4, [8, 6], "relu", output_dim=2)
    assert [type(m) for m in net] == [nn.Linear, nn.ReLU, nn.Linear, nn.ReLU, nn.Linear]
    assert [m.out_features for m in net if isinstance(m, nn.Linear)] == [8, 6, 2]
    assert type(mlp(4, [8], "linear")) is nn.Linear
    single = mlp(4, [], "tanh", output_dim=3)
    assert isinstance(single, nn.Linear) and single.out_features == 3
    assert isinstance(mlp(4, [], "tanh"), nn.Identity)


def test_normc_initializer_scales_each_output_unit():
    layer = nn.Linear(50, 3)
    normc_initializer(0.01)(layer.weight)
    assert torch.allclose(layer.weight.norm(dim=1), torch.full((3,), 0.01))


def test_mlp_encoder_any_leading_dims_and_float_cast():
    enc = MLPEncoder(3, [5], "tanh")
    assert enc.output_dim == 5
    assert enc(torch.zeros(2, 7, 3)).shape == (2, 7, 5)
    assert enc(torch.zeros(4, 3, dtype=torch.float64)).dtype == torch.float32
    identity = MLPEncoder(3, [], "tanh")
    assert identity.output_dim == 3 and torch.equal(identity(torch.ones(1, 3)), torch.ones(1, 3))


def test_one_hot_encoder_discrete_and_multi_discrete():
    discrete = OneHotMLPEncoder([3], [], "tanh", scalar=True)
    assert discrete.output_dim == 3
    assert discrete(torch.tensor([2, 0])).tolist() == [[0, 0, 1], [1, 0, 0]]
    multi = OneHotMLPEncoder([2, 3], [], "tanh", scalar=False)
    assert multi.output_dim == 5
    assert multi(torch.tensor([[1, 0], [0, 2]])).tolist() == [[0, 1, 1, 0, 0], [1, 0, 0, 0, 1]]
    assert multi(torch.zeros(4, 6, 2, dtype=torch.long)).shape == (4, 6, 5)
    assert "offsets" not in multi.state_dict()
