"""symlog / symexp against their formulas."""

import math

import torch

from flywheel.algorithms.dreamerv3.symlog import symexp, symlog


def test_symlog_values():
    x = torch.tensor([-100.0, -1.0, 0.0, 0.5, 1.0, math.e - 1.0, 1e6])
    expected = [-math.log(101.0), -math.log(2.0), 0.0, math.log(1.5), math.log(2.0), 1.0, math.log(1e6 + 1)]
    assert torch.allclose(symlog(x), torch.tensor(expected), atol=1e-6)


def test_symexp_inverts_symlog():
    x = torch.tensor([-3e5, -7.25, -1e-4, 0.0, 2e-3, 12.0, 4.5e7], dtype=torch.float64)
    assert torch.allclose(symexp(symlog(x)), x, rtol=1e-12)
    expected = torch.tensor([math.e - 1.0, -(math.e**2 - 1.0)], dtype=torch.float64)
    assert torch.allclose(symexp(torch.tensor([1.0, -2.0], dtype=torch.float64)), expected, rtol=1e-15)


def test_symlog_slope_is_one_at_zero():
    x = torch.tensor(0.0, requires_grad=True)
    symlog(x + 1e-3).backward()
    assert abs(x.grad.item() - 1.0 / 1.001) < 1e-6
