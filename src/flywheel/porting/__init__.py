"""`flywheel port`: rewrites RLlib 2.60 (new API stack) imports into flywheel's.

    from flywheel.porting import port_paths, port_source

    text, problems = port_source(open("my_module.py").read(), "my_module.py")
    report = port_paths(["my_project/"], out="my_project_flywheel/")
    for problem in report.problems:
        print(problem)  # my_project_flywheel/my_project/model.py:3: ray.rllib...: what to use instead

Every rewrite comes from one table shipped with flywheel (`imports.toml`, shown in docs/porting.md):
RLlib names that have a flywheel counterpart become imports of it (renamed back to the RLlib name
where flywheel's differs, so the file's body needs no edit); ``ray.rllib.examples.<rest>`` becomes
``examples.<rest>``; RLlib's annotation decorators (``@override(...)``) are removed and
``torch, nn = try_import_torch()`` becomes ``import torch`` / ``from torch import nn``. Every other
RLlib import stays as it is and is reported as ``file:line: what it is: what to use instead``.
Comments and formatting are kept (libcst), and porting a ported file changes nothing.

Importing this package imports libcst; ``import flywheel`` does not import it.
"""

from flywheel.porting.paths import PortReport, port_paths
from flywheel.porting.source import Problem, port_source
from flywheel.porting.table import ImportTable, Target, load_table

__all__ = ["ImportTable", "PortReport", "Problem", "Target", "load_table", "port_paths", "port_source"]
