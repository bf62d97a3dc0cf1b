"""Action distributions: small, fast classes built from a module's `ACTION_DIST_INPUTS`.

They are not `torch.distributions`: those validate arguments and build broadcast shapes on
every construction, which costs more than the forward pass of a small policy. Here a
distribution is a thin holder of tensors, so `cls.from_logits(x).sample()` on the runner's
hot path is a handful of tensor ops.

Every class works on any number of leading (batch, time) dimensions; the last dimension of
the inputs holds the distribution parameters. Space-dependent classes (`MultiCategorical`'s
input lengths, `SquashedGaussian`'s bounds, `MultiDistribution`'s children) are made by
`distribution_for_space(space)`, which returns a small subclass carrying those parameters,
so `cls.from_logits(inputs)` always works.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Iterable
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np
import torch

from flywheel.errors import ModuleError

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
# Keeps atanh finite for actions at the bounds of a squashed Gaussian.
_SQUASH_EPS = 1e-6

_SpaceT = TypeVar("_SpaceT", bound=gym.Space)


def _expect_space(space: gym.Space, kind: type[_SpaceT], dist_name: str) -> _SpaceT:
    if not isinstance(space, kind):
        raise ModuleError(
            f"{dist_name} needs a {kind.__name__} action space, got {space}. "
            "Fix: use the distribution that fits the space (distribution_for_space(space) picks it)."
        )
    return space


def _total(terms: Iterable[torch.Tensor]) -> torch.Tensor:
    """The sum of the tensors in order (as the builtin `sum`, typed as a tensor)."""
    return functools.reduce(operator.add, terms)


class Distribution:
    """Interface of all action distributions (see the module docstring), with RLlib's method names."""

    @classmethod
    def from_logits(cls, logits: torch.Tensor, **kwargs: object) -> Distribution:
        """Builds the distribution from a module's `ACTION_DIST_INPUTS`."""
        # Subclasses' constructors take the logits first; the base class declares no constructor.
        # (Runners build one every step: a call without `**{}` costs a third.)
        make: Any = cls
        return make(logits, **kwargs) if kwargs else make(logits)

    @classmethod
    def required_input_dim(cls, space: gym.Space, **kwargs: object) -> int:
        """Size of the last dimension of the inputs this class needs for `space`."""
        raise NotImplementedError

    @classmethod
    def get_partial_dist_cls(cls, **partial_kwargs: Any) -> type[Distribution]:
        """A subclass whose `from_logits(logits)` (and `required_input_dim(space)`) pass `partial_kwargs`
        on, e.g. `MultiDistribution.get_partial_dist_cls(child_distribution_cls_struct=(Categorical,
        DiagGaussian), input_lens=(3, 2))`: what a module returns from `get_*_action_dist_cls()` when
        the class needs arguments besides the logits. Passing one of `partial_kwargs` again raises."""

        def merged(kwargs: dict) -> dict:
            clash = sorted(set(kwargs) & set(partial_kwargs))
            if clash:
                raise ModuleError(
                    f"{cls.__name__}.get_partial_dist_cls() already set {clash}; they cannot be passed again. "
                    "Fix: leave them out of this call, or make another partial class."
                )
            return {**partial_kwargs, **kwargs}

        def from_logits(partial: type, logits: torch.Tensor, **kwargs: object) -> Distribution:
            dist = cls.from_logits(logits, **merged(kwargs))
            dist.__class__ = partial  # type() of the result is the partial class, as in RLlib
            return dist

        def required_input_dim(partial: type, space: gym.Space, **kwargs: object) -> int:
            return cls.required_input_dim(space, **merged(kwargs))

        methods = {
            "from_logits": classmethod(from_logits),
            "required_input_dim": classmethod(required_input_dim),
        }
        return type(f"{cls.__name__}Partial", (cls,), methods)

    def sample(self) -> Any:
        """Draws an action (no gradient through the sample)."""
        raise NotImplementedError

    def rsample(self) -> Any:
        """Draws a reparameterized action (gradients flow into the inputs)."""
        raise NotImplementedError(
            f"{type(self).__name__} has no reparameterized sample. Use sample(), or a continuous "
            "distribution (DiagGaussian, SquashedGaussian) where rsample() is needed."
        )

    def deterministic_sample(self) -> Any:
        """The most likely action (used when not exploring)."""
        raise NotImplementedError

    def to_deterministic(self) -> Distribution:
        """The deterministic counterpart (RLlib's name): a `Deterministic` at `deterministic_sample()`.
        Runners act with `dist.to_deterministic().sample()` when not exploring."""
        return Deterministic(self.deterministic_sample())

    def logp(self, value: object) -> torch.Tensor:
        """Log-likelihood of `value`, one number per leading index."""
        raise NotImplementedError

    def entropy(self) -> torch.Tensor:
        """Entropy, one number per leading index."""
        raise NotImplementedError

    def kl(self, other: Distribution) -> torch.Tensor:
        """KL(self || other), one number per leading index."""
        raise NotImplementedError


class Deterministic(Distribution):
    """Always `loc` (RLlib's `TorchDeterministic`): what `to_deterministic()` returns. `logp` is 0."""

    def __init__(self, loc: Any):
        self.loc = loc

    @classmethod
    def required_input_dim(cls, space: gym.Space, **kwargs: object) -> int:
        if space.shape is None:
            raise ModuleError(
                f"Deterministic needs an action space with a shape, got {space}. "
                "Fix: use a Box, Discrete or MultiDiscrete action space."
            )
        return int(np.prod(space.shape))

    def sample(self) -> Any:
        return self.loc

    def deterministic_sample(self) -> Any:
        return self.loc

    def to_deterministic(self) -> Deterministic:
        return self

    def logp(self, value: object) -> torch.Tensor:
        return torch.zeros_like(self.loc, dtype=torch.float32)


class Categorical(Distribution):
    """Categorical over the last dimension of `logits` (Discrete actions); RLlib's `TorchCategorical`
    (given `probs` instead, the logits are their logs)."""

    def __init__(self, logits: torch.Tensor | None = None, probs: torch.Tensor | None = None):
        if logits is None and probs is not None:
            logits = torch.log(probs)
        elif logits is None or probs is not None:
            raise ModuleError(
                "Categorical takes exactly one of logits= and probs=. Fix: pass the module's "
                "ACTION_DIST_INPUTS as logits (Categorical.from_logits(inputs))."
            )
        self.logits = logits
        self.probs = probs
        self._log_probs: torch.Tensor | None = None
        # The last `sample()` and its `[..., 1]` index: `logp` of it gathers at the index as it is.
        self._sampled: tuple[torch.Tensor, torch.Tensor] | None = None

    @classmethod
    def required_input_dim(cls, space: gym.Space, **kwargs: object) -> int:
        return int(_expect_space(space, gym.spaces.Discrete, "Categorical").n)

    @property
    def log_probs(self) -> torch.Tensor:
        """Normalized log-probabilities, computed once and only when needed."""
        if self._log_probs is None:
            self._log_probs = torch.log_softmax(self.logits, dim=-1)
        return self._log_probs

    def sample(self) -> torch.Tensor:
        # An exponential race: with E_i = -log(U_i) ~ Exp(1), argmax_i p_i / E_i (the action whose
        # exponential clock rings first), i.e. argmax_i log(U_i) / p_i, is an exact categorical
        # sample. It takes one op after the probabilities, fewer than Gumbel-max (which also needs a
        # clamp) or torch.multinomial (which also needs a reshape for extra leading dims), and the
        # log-probabilities it starts from are the ones `logp` reads; the uniforms are divided in
        # place (one tensor fewer a step). U_i in [0, 1) keeps log(U_i) < 0, so an action of
        # probability 0 (a -inf logit) scores -inf and is never picked. (No `no_grad` needed:
        # argmax's integer output never carries gradients.)
        probs = self.log_probs.exp() if self.probs is None else self.probs
        index = torch.argmax(torch.rand_like(probs).log_().div_(probs), dim=-1, keepdim=True)
        actions = index.squeeze(-1)
        self._sampled = (actions, index)
        return actions

    def rsample(self) -> torch.Tensor:
        """A one-hot sample whose gradient is that of the probabilities (straight-through, as RLlib's)."""
        probs = self.log_probs.exp()
        one_hot = torch.nn.functional.one_hot(self.sample(), probs.shape[-1]).to(probs.dtype)
        return (one_hot - probs).detach() + probs

    def deterministic_sample(self) -> torch.Tensor:
        return torch.argmax(self.logits, dim=-1)

    def logp(self, value: torch.Tensor) -> torch.Tensor:
        # A runner asks for the log-prob of the sample it just drew: two tensor ops fewer (~0.7 us).
        sampled = self._sampled
        index = sampled[1] if sampled is not None and value is sampled[0] else value.long().unsqueeze(-1)
        return self.log_probs.gather(-1, index).squeeze(-1)

    def entropy(self) -> torch.Tensor:
        log_probs = self.log_probs
        return -(log_probs.exp() * log_probs).sum(-1)

    def kl(self, other: Categorical) -> torch.Tensor:
        log_probs = self.log_probs
        return (log_probs.exp() * (log_probs - other.log_probs)).sum(-1)


class DiagGaussian(Distribution):
    """Diagonal Gaussian with mean `loc` and standard deviation `scale` (RLlib's `TorchDiagGaussian`);
    `from_logits` reads inputs `concat(mean, log_std)` along the last dimension. `mean`, `std` and
    `log_std` name the same parameters."""

    def __init__(self, loc: torch.Tensor, scale: torch.Tensor):
        self.loc = self.mean = loc
        self.scale = self.std = scale
        self._log_std: torch.Tensor | None = None

    @classmethod
    def from_logits(cls, logits: torch.Tensor, **kwargs: object) -> DiagGaussian:
        mean, log_std = torch.chunk(logits, 2, dim=-1)
        dist = cls(mean, log_std.exp(), **kwargs)
        dist._log_std = log_std
        return dist

    @property
    def log_std(self) -> torch.Tensor:
        if self._log_std is None:
            self._log_std = torch.log(self.std)
        return self._log_std

    @classmethod
    def required_input_dim(cls, space: gym.Space, **kwargs: object) -> int:
        return 2 * _box_action_size(space)

    def sample(self) -> torch.Tensor:
        with torch.no_grad():
            return self.rsample()

    def rsample(self) -> torch.Tensor:
        return self.mean + self.std * torch.randn_like(self.mean)

    def deterministic_sample(self) -> torch.Tensor:
        return self.mean

    def logp(self, value: torch.Tensor) -> torch.Tensor:
        z = (value - self.mean) / self.std
        return (-0.5 * z * z - self.log_std - _HALF_LOG_2PI).sum(-1)

    def entropy(self) -> torch.Tensor:
        return (self.log_std + 0.5 + _HALF_LOG_2PI).sum(-1)

    def kl(self, other: DiagGaussian) -> torch.Tensor:
        var_ratio = (self.std / other.std) ** 2
        mean_term = ((self.mean - other.mean) / other.std) ** 2
        return 0.5 * (var_ratio + mean_term - 1.0 - var_ratio.log()).sum(-1)


class SquashedGaussian(DiagGaussian):
    """Gaussian squashed by tanh into the bounds `[low, high]` of a Box (e.g. for SAC).

    Made by `distribution_for_space(box, squashed=True)`, which sets `low` and `high` on the class;
    `SquashedGaussian(loc, scale, low, high)` (RLlib's signature) sets them on the instance.
    """

    low: torch.Tensor = torch.tensor(-1.0)
    high: torch.Tensor = torch.tensor(1.0)

    def __init__(
        self, loc: torch.Tensor, scale: torch.Tensor | float = 1.0, low: Any = None, high: Any = None
    ):
        super().__init__(loc, torch.as_tensor(scale))
        if low is not None:
            self.low = torch.as_tensor(low, dtype=torch.float32)
        if high is not None:
            self.high = torch.as_tensor(high, dtype=torch.float32)

    def _squash(self, u: torch.Tensor) -> torch.Tensor:
        low, high = self.low.to(u.device), self.high.to(u.device)
        return low + (torch.tanh(u) + 1.0) * 0.5 * (high - low)

    def rsample(self) -> torch.Tensor:
        return self._squash(super().rsample())

    def deterministic_sample(self) -> torch.Tensor:
        return self._squash(self.mean)

    def logp(self, value: torch.Tensor) -> torch.Tensor:
        low, high = self.low.to(value.device), self.high.to(value.device)
        half_range = 0.5 * (high - low)
        unit = ((value - low) / half_range - 1.0).clamp(-1.0 + _SQUASH_EPS, 1.0 - _SQUASH_EPS)
        u = torch.atanh(unit)
        # Change of variables: d(action)/du = half_range * (1 - tanh(u)^2).
        log_det = (torch.log1p(-unit * unit + _SQUASH_EPS) + half_range.log()).sum(-1)
        return super().logp(u) - log_det

    def entropy(self) -> torch.Tensor:
        raise NotImplementedError(
            "SquashedGaussian has no closed-form entropy. Estimate it with -dist.logp(dist.rsample())."
        )

    # KL is invariant under the (shared, invertible) squashing, so DiagGaussian.kl is exact here.


class MultiCategorical(Distribution):
    """Independent categoricals (MultiDiscrete actions); inputs concatenate their logits.

    Made by `distribution_for_space(MultiDiscrete(nvec))`, which sets `input_lens = nvec`.
    """

    input_lens: tuple[int, ...] = ()

    def __init__(self, categoricals: list[Categorical]):
        self.categoricals = categoricals

    @classmethod
    def from_logits(
        cls, logits: torch.Tensor, input_lens: Any = None, temperatures: Any = None, **kwargs: object
    ) -> MultiCategorical:
        """`input_lens` (default: the class's) splits the logits; `temperatures` divide each part."""
        parts = torch.split(logits, list(input_lens or cls.input_lens), dim=-1)
        temperatures = temperatures or [1.0] * len(parts)
        return cls([Categorical(x if t == 1.0 else x / t) for x, t in zip(parts, temperatures)])

    @classmethod
    def required_input_dim(cls, space: gym.Space, **kwargs: object) -> int:
        return int(np.sum(_expect_space(space, gym.spaces.MultiDiscrete, "MultiCategorical").nvec))

    def sample(self) -> torch.Tensor:
        return torch.stack([c.sample() for c in self.categoricals], dim=-1)

    def deterministic_sample(self) -> torch.Tensor:
        return torch.stack([c.deterministic_sample() for c in self.categoricals], dim=-1)

    def logp(self, value: torch.Tensor) -> torch.Tensor:
        return _total(c.logp(value[..., i]) for i, c in enumerate(self.categoricals))

    def entropy(self) -> torch.Tensor:
        return _total(c.entropy() for c in self.categoricals)

    def kl(self, other: MultiCategorical) -> torch.Tensor:
        return _total(c.kl(o) for c, o in zip(self.categoricals, other.categoricals))


class MultiDistribution(Distribution):
    """One child distribution per part of a Dict or Tuple action space (nested as the space).

    Made by `distribution_for_space(space)`, which sets `child_classes` (a dict or tuple of
    classes in the space's order) and `input_lens`; or built from child distributions,
    `MultiDistribution((dist_a, dist_b))` (RLlib's `TorchMultiDistribution(child_distribution_struct)`).
    Samples are dicts/tuples like the space; `logp`, `entropy` and `kl` add up the children's.
    """

    child_classes: dict[str, type[Distribution]] | tuple[type[Distribution], ...] = ()
    input_lens: tuple[int, ...] = ()

    def __init__(
        self,
        child_distribution_struct: dict[str, Distribution] | tuple[Distribution, ...] | list[Distribution],
    ):
        self.children: dict[str, Distribution] | tuple[Distribution, ...] = (
            tuple(child_distribution_struct)
            if isinstance(child_distribution_struct, list)
            else child_distribution_struct
        )

    @classmethod
    def from_logits(
        cls,
        logits: torch.Tensor,
        child_distribution_cls_struct: Any = None,
        input_lens: Any = None,
        **kwargs: object,
    ) -> MultiDistribution:
        """Splits `logits` by `input_lens` among `child_distribution_cls_struct` (both default to the
        class's, as `distribution_for_space` set them; RLlib's keywords)."""
        classes = (
            cls.child_classes if child_distribution_cls_struct is None else child_distribution_cls_struct
        )
        lens = cls.input_lens if input_lens is None else input_lens
        lens = tuple(lens.values()) if isinstance(lens, dict) else tuple(lens)
        parts = torch.split(logits, list(lens), dim=-1)
        if isinstance(classes, dict):
            return cls({k: c.from_logits(x) for (k, c), x in zip(classes.items(), parts)})
        return cls(tuple(c.from_logits(x) for c, x in zip(classes, parts)))

    @classmethod
    def required_input_dim(cls, space: gym.Space, input_lens: Any = None, **kwargs: object) -> int:
        if input_lens is not None:
            return sum(input_lens.values() if isinstance(input_lens, dict) else input_lens)
        dist_cls = distribution_for_space(space)
        if not issubclass(dist_cls, MultiDistribution | MultiCategorical):
            raise ModuleError(
                f"MultiDistribution needs a Dict or Tuple action space, got {space}. "
                "Fix: use the distribution that fits the space (distribution_for_space(space) picks it)."
            )
        return sum(dist_cls.input_lens)

    def to_deterministic(self) -> MultiDistribution:
        """Each child's deterministic counterpart, in the same structure (as RLlib)."""
        if isinstance(self.children, dict):
            return MultiDistribution({k: c.to_deterministic() for k, c in self.children.items()})
        return MultiDistribution(tuple(c.to_deterministic() for c in self.children))

    def _items(self) -> Iterable[tuple[Any, Distribution]]:
        """(key, child) pairs; a key (str or int) indexes values structured like the children."""
        return self.children.items() if isinstance(self.children, dict) else enumerate(self.children)

    def _map(self, method: str) -> dict | tuple:
        if isinstance(self.children, dict):
            return {k: getattr(c, method)() for k, c in self.children.items()}
        return tuple(getattr(c, method)() for c in self.children)

    def sample(self) -> dict | tuple:
        return self._map("sample")

    def rsample(self) -> dict | tuple:
        return self._map("rsample")

    def deterministic_sample(self) -> dict | tuple:
        return self._map("deterministic_sample")

    def logp(self, value: dict | tuple) -> torch.Tensor:
        return _total(c.logp(value[k]) for k, c in self._items())

    def entropy(self) -> torch.Tensor:
        return _total(c.entropy() for _, c in self._items())

    def kl(self, other: MultiDistribution) -> torch.Tensor:
        return _total(c.kl(other.children[k]) for k, c in self._items())


def _box_action_size(space: gym.Space) -> int:
    if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
        raise ModuleError(
            f"Gaussian action distributions need a 1-D Box action space, got {space}. "
            "Fix: give the env a 1-D Box action space (e.g. reshape actions in a gymnasium ActionWrapper)."
        )
    return int(space.shape[0])


def distribution_for_space(space: gym.Space, *, squashed: bool = False) -> type[Distribution]:
    """The default distribution class for an action space.

    Discrete → `Categorical`, MultiDiscrete → `MultiCategorical`, 1-D Box → `DiagGaussian`
    (`SquashedGaussian` into the Box bounds when `squashed`), Dict/Tuple of those →
    `MultiDistribution`. Anything else raises a ModuleError naming the space.
    """
    if isinstance(space, gym.spaces.Discrete):
        return Categorical
    if isinstance(space, gym.spaces.MultiDiscrete) and space.nvec.ndim == 1:
        lens = tuple(int(n) for n in space.nvec)
        return type("MultiCategorical", (MultiCategorical,), {"input_lens": lens})
    if isinstance(space, gym.spaces.Box):
        _box_action_size(space)
        if not squashed:
            return DiagGaussian
        return _squashed_for_box(space)
    if isinstance(space, gym.spaces.Dict | gym.spaces.Tuple):
        return _multi_for_space(space, squashed)
    raise ModuleError(
        f"No action distribution for action space {space}. Supported: Discrete, MultiDiscrete, "
        "1-D Box, and Dict/Tuple of those. Fix: use a supported action space, or override the "
        "module's get_*_action_dist_cls() methods."
    )


def _squashed_for_box(space: gym.spaces.Box) -> type[SquashedGaussian]:
    if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
        raise ModuleError(
            f"SquashedGaussian needs finite Box bounds to squash into, got {space}. "
            "Fix: give the action space finite low/high, or use DiagGaussian."
        )
    bounds = {
        "low": torch.as_tensor(space.low, dtype=torch.float32),
        "high": torch.as_tensor(space.high, dtype=torch.float32),
    }
    return type("SquashedGaussian", (SquashedGaussian,), bounds)


def _multi_for_space(space: gym.spaces.Dict | gym.spaces.Tuple, squashed: bool) -> type[MultiDistribution]:
    if isinstance(space, gym.spaces.Dict):
        children = {k: distribution_for_space(s, squashed=squashed) for k, s in space.spaces.items()}
        lens = tuple(c.required_input_dim(s) for c, s in zip(children.values(), space.spaces.values()))
    else:
        children = tuple(distribution_for_space(s, squashed=squashed) for s in space.spaces)
        lens = tuple(c.required_input_dim(s) for c, s in zip(children, space.spaces))
    return type("MultiDistribution", (MultiDistribution,), {"child_classes": children, "input_lens": lens})


__all__ = [
    "Categorical",
    "Deterministic",
    "DiagGaussian",
    "Distribution",
    "MultiCategorical",
    "MultiDistribution",
    "SquashedGaussian",
    "distribution_for_space",
]
