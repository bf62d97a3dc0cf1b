"""`ImportTable`: the RLlib -> flywheel import table that `flywheel port` rewrites with (imports.toml).

Sections (see the comments in imports.toml and docs/porting.md):

- ``[prefixes]``  RLlib module prefix -> flywheel module prefix (``ray.rllib.examples`` -> ``examples``);
- ``[names]``     ``"module:Name"`` -> ``"flywheel.module:Name"`` (a different name is a rename);
- ``[modules]``   RLlib module -> flywheel module, for modules imported as modules;
- ``[idioms]``    ``"module:Name"`` -> ``drop-decorator`` | ``import-torch``;
- ``[problems]``  ``"module:Name"`` / bare ``Name`` / module prefix -> what a reported line says.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import NamedTuple

from flywheel.errors import PortError

RLLIB = "ray.rllib"
DROP_DECORATOR = "drop-decorator"
IMPORT_TORCH = "import-torch"
IDIOMS = (DROP_DECORATOR, IMPORT_TORCH)
NOT_YET = "not in flywheel yet; port it by hand (docs/porting.md lists everything flywheel port maps)"
WHOLE_RLLIB = "import each name you use from its RLlib module, so flywheel port can map it"
SECTIONS = ("prefixes", "names", "modules", "idioms", "problems")


class Target(NamedTuple):
    """Where an RLlib name lives in flywheel: ``from <module> import <name>``."""

    module: str
    name: str


def in_rllib(module: str) -> bool:
    """Whether `module` is ``ray.rllib`` or one of its submodules (every import of those is ported or reported)."""
    return module == RLLIB or module.startswith(RLLIB + ".")


def _split(key: str, section: str) -> Target:
    module, sep, name = key.partition(":")
    if not (sep and module and name):
        raise PortError(f"imports.toml [{section}]: expected 'module:Name', got {key!r}.")
    return Target(module, name)


@dataclass(frozen=True)
class ImportTable:
    """The parsed import table; every lookup answers from the table alone (nothing is guessed)."""

    prefixes: dict[str, str]
    names: dict[str, Target]
    modules: dict[str, str]
    idioms: dict[str, str]
    problems: dict[str, str]

    @classmethod
    def from_toml(cls, text: str) -> ImportTable:
        data = tomllib.loads(text)
        unknown = set(data) - set(SECTIONS)
        if unknown:
            raise PortError(f"imports.toml: unknown sections {sorted(unknown)}; expected {list(SECTIONS)}.")
        sections = {section: dict(data.get(section, {})) for section in SECTIONS}
        for key in (*sections["names"], *sections["idioms"]):
            _split(key, "names/idioms")
        bad = {key: kind for key, kind in sections["idioms"].items() if kind not in IDIOMS}
        if bad:
            raise PortError(f"imports.toml [idioms]: unknown kinds {bad}; expected one of {list(IDIOMS)}.")
        sections["names"] = {key: _split(value, "names") for key, value in sections["names"].items()}
        return cls(**sections)

    def name(self, module: str, name: str) -> Target | None:
        """The flywheel target of ``from <module> import <name>``, if the table has one."""
        return self.names.get(f"{module}:{name}")

    def module(self, module: str) -> tuple[str, bool] | None:
        """``(flywheel module, by_prefix)`` for `module` imported as a module, if the table maps it.

        `by_prefix` tells a ``[prefixes]`` mapping (any attribute is fine) from a ``[modules]`` one (each
        attribute used must map by ``[names]``)."""
        for prefix, target in self.prefixes.items():
            if module == prefix or module.startswith(prefix + "."):
                return target + module[len(prefix) :], True
        target = self.modules.get(module)
        return (target, False) if target is not None else None

    def idiom(self, module: str, name: str) -> str | None:
        return self.idioms.get(f"{module}:{name}")

    def touches(self, module: str, name: str) -> bool:
        """Whether ``from <module> import <name>`` is flywheel port's business (ported or reported)."""
        key = f"{module}:{name}"
        return (
            in_rllib(module)
            or in_rllib(f"{module}.{name}")
            or key in self.names
            or key in self.problems
            or self.has_names_in(f"{module}.{name}")
        )

    def has_names_in(self, module: str) -> bool:
        """Whether [names] maps names of `module` (outside RLlib, e.g. ``ray.tune``): uses of them as
        attributes of the imported module (``tune.Tuner``) are rewritten to their flywheel targets."""
        return not in_rllib(module) and any(target.startswith(f"{module}:") for target in self.names)

    def problem(self, module: str, name: str | None = None) -> str:
        """What a report says about `module`'s `name` (or the module itself): the most specific entry."""
        dotted = f"{module}.{name}" if name else module
        if dotted == RLLIB:
            return WHOLE_RLLIB
        keys = [f"{module}:{name}", name] if name else []
        parts = dotted.split(".")
        keys += [".".join(parts[:end]) for end in range(len(parts), 0, -1)]
        return next((self.problems[key] for key in keys if key in self.problems), NOT_YET)


@cache
def load_table() -> ImportTable:
    """The import table shipped with flywheel (``flywheel/porting/imports.toml``)."""
    return ImportTable.from_toml(files("flywheel.porting").joinpath("imports.toml").read_text())
