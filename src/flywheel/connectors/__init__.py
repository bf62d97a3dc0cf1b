"""Connector pipelines: env → module, module → env, and episodes → learner.

Built-in pieces live in `flywheel.connectors.env_to_module`, `flywheel.connectors.module_to_env`
and `flywheel.connectors.learner`.
"""

from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.pipeline import ConnectorPipelineV2

__all__ = ["ConnectorPipelineV2", "ConnectorV2"]
