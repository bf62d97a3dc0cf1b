"""Type aliases shared across flywheel."""

from typing import Any

AgentID = Any
ModuleID = str
EpisodeID = str
StateDict = dict[str, Any]

DEFAULT_MODULE_ID: ModuleID = "default_policy"
ALL_MODULES: str = "__all_modules__"
