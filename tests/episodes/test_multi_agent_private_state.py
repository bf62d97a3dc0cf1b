"""`MultiAgentEpisode`'s helper modules (`episodes/multi_agent_*.py`) reach its state through its public
attributes and `episode.bookkeeping`, never through another object's private names."""

import ast
from pathlib import Path

import pytest

import flywheel.episodes

EPISODES = Path(flywheel.episodes.__file__).parent
FILES = sorted(EPISODES.glob("multi_agent_*.py"))
SINGLE_AGENT_STATE = {("multi_agent_data.py", "_start_time")}
"""A `SingleAgentEpisode`'s own private state (an episode built from data has no duration), which
`SingleAgentEpisode`'s helper modules reach the same way; not `MultiAgentEpisode`'s."""


def foreign_private_names(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, name) of each `x._name` read or written where `x` is not `self` / `cls`."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        found.append((node.lineno, node.attr))
    return sorted(found)


def test_the_rule_finds_what_it_is_meant_to():
    code = "def f(episode, other):\n    episode._in_flight = other._x\n    return self._mine, episode.book\n"
    assert foreign_private_names(ast.parse(code)) == [(2, "_in_flight"), (2, "_x")]


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.name)
def test_no_private_name_of_another_object(path):
    assert len(FILES) == 7, [p.name for p in FILES]
    names = [
        (line, name)
        for line, name in foreign_private_names(ast.parse(path.read_text()))
        if (path.name, name) not in SINGLE_AGENT_STATE
    ]
    assert not names, f"{path.name} reaches private names of another object: {names}"
