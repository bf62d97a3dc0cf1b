"""`flywheel port` on every file of RLlib's own examples (the installed wheel's `ray/rllib/examples/`).

The files are read from the wheel and written to a temporary folder only. Every one ports without an
error into valid Python, the tree is mirrored, porting the result again changes nothing, and every
RLlib import that is left is reported on its line (none goes unreported).
"""

import ast
from pathlib import Path

from flywheel.porting import port_paths
from flywheel.porting.table import in_rllib


def rllib_import_lines(text: str) -> set[int]:
    """The lines of every import of a `ray.rllib` name or module in `text` (the line of each name)."""
    lines = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            lines |= {
                alias.lineno
                for alias in node.names
                if in_rllib(node.module) or in_rllib(f"{node.module}.{alias.name}")
            }
        elif isinstance(node, ast.Import):
            lines |= {alias.lineno for alias in node.names if in_rllib(alias.name)}
    return lines


def test_every_example_file_ports_and_no_rllib_import_is_left_unreported(
    rllib_examples, ported_rllib_examples
):
    out, report = ported_rllib_examples
    inputs = sorted(
        path.relative_to(rllib_examples)
        for path in rllib_examples.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    )
    assert sorted(path.relative_to(out) for path in out.rglob("*") if path.is_file()) == inputs
    python_files = [path for path in inputs if path.suffix == ".py"]
    assert len(report.files) == len(python_files) > 150

    reported: dict[str, set[int]] = {}
    for problem in report.problems:
        reported.setdefault(problem.path, set()).add(problem.line)
    unreported = {}
    for relative in python_files:
        path = out / relative
        text = path.read_text()
        compile(text, str(path), "exec")  # valid Python
        missing = rllib_import_lines(text) - reported.get(str(path), set())
        if missing:
            unreported[str(relative)] = sorted(missing)
    assert unreported == {}


def test_porting_the_ported_examples_again_changes_nothing(ported_rllib_examples):
    out, report = ported_rllib_examples
    texts = {path: path.read_bytes() for path in out.rglob("*.py")}
    again = port_paths([out])
    assert again.changed == []
    assert sorted((p.path, p.line, p.message) for p in again.problems) == sorted(
        (p.path, p.line, p.message) for p in report.problems
    )
    assert {path: path.read_bytes() for path in out.rglob("*.py")} == texts


CLEAN_TODAY = [
    "algorithms/classes/maml_lr_differentiable_rlm.py",
    "envs/classes/action_mask_env.py",
    "envs/classes/cartpole_crashing.py",
    "envs/classes/cartpole_with_protobuf_observation_space.py",
    "envs/classes/debug_counter_env.py",
    "envs/classes/gpu_requiring_env.py",
    "envs/classes/memory_leaking_env.py",
    "envs/classes/multi_agent/double_row_corridor_env.py",
    "envs/classes/multi_agent/footsies/encoder.py",
    "envs/classes/multi_agent/footsies/footsies_env.py",
    "envs/classes/multi_agent/footsies/game/footsies_binary.py",
    "envs/classes/multi_agent/footsies/game/footsies_game.py",
    "envs/classes/multi_agent/footsies/game/proto/footsies_service_pb2_grpc.py",
    "envs/classes/multi_agent/guess_the_number_game.py",
    "envs/classes/multi_agent/pettingzoo_chess.py",
    "envs/classes/multi_agent/pettingzoo_connect4.py",
    "envs/classes/multi_agent/rock_paper_scissors.py",
    "envs/classes/multi_agent/tic_tac_toe.py",
    "envs/classes/random_env.py",
    "envs/classes/six_room_env.py",
    "envs/classes/windy_maze_env.py",
    "learners/classes/separate_vf_lr_and_optimizer_learner.py",
    "learners/classes/vpg_torch_learner_shared_optimizer.py",
    "ray_serve/classes/cartpole_deployment.py",
    "rl_modules/classes/__init__.py",
    "rl_modules/classes/rock_paper_scissors_heuristic_rlm.py",
    "rl_modules/classes/vpg_torch_rlm.py",
]
"""Example classes that import RLlib and port with nothing left to report (more as the table grows)."""


def test_example_classes_that_port_cleanly_stay_clean(rllib_examples, ported_rllib_examples):
    out, report = ported_rllib_examples
    reported = {Path(problem.path).relative_to(out).as_posix() for problem in report.problems}
    assert all(rllib_import_lines((rllib_examples / name).read_text()) for name in CLEAN_TODAY)
    assert sorted(set(CLEAN_TODAY) & reported) == []
    assert (
        (out / "rl_modules/classes/vpg_torch_rlm.py")
        .read_text()
        .startswith(
            "import torch\n\nfrom flywheel.columns import Columns\nfrom flywheel.core.rl_module import TorchRLModule\n\n\n"
        )
    )
