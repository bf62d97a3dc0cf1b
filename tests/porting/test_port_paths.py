"""`port_paths` and `flywheel port`: in place, folders, `-o OUT` mirroring, exit codes and report lines."""

import subprocess
import sys
from pathlib import Path

import pytest

from flywheel import cli
from flywheel.errors import PortError
from flywheel.porting import port_paths
from flywheel.porting.table import NOT_YET

RLLIB = "from ray.rllib.core.columns import Columns\n"
PORTED = "from flywheel.columns import Columns\n"
UNPORTABLE = "from ray.rllib.core.rl_module.rl_module import RLModuleConfig\n"
UNPORTABLE_REPORT = f"ray.rllib.core.rl_module.rl_module.RLModuleConfig: {NOT_YET}"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """project/{a.py (RLlib imports), b.py (none), sub/c.py (RLlib imports), data.json, skipped files}."""
    root = tmp_path / "project"
    for name, text in {
        "a.py": RLLIB,
        "b.py": "import os\n",
        "sub/c.py": "import numpy\n" + RLLIB,
        "data.json": "{}\n",
        "__pycache__/d.py": RLLIB,
        ".hidden/e.py": RLLIB,
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def run(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_folders_are_ported_in_place_skipping_caches_and_hidden_folders(project, capsys):
    untouched = (project / "b.py").stat().st_mtime_ns
    assert run(["port", str(project)], capsys) == (
        0,
        "",
        "flywheel port: 3 Python files, 2 rewritten in place; nothing left to port\n",
    )
    assert (project / "a.py").read_text() == PORTED
    assert (project / "sub/c.py").read_text() == "import numpy\n" + PORTED
    assert (project / "b.py").stat().st_mtime_ns == untouched  # unchanged files are not written
    assert (project / "__pycache__/d.py").read_text() == RLLIB
    assert (project / ".hidden/e.py").read_text() == RLLIB


def test_lines_left_to_port_are_printed_and_exit_1(project, capsys):
    (project / "sub/c.py").write_text(RLLIB + UNPORTABLE)
    code, out, err = run(["port", str(project / "a.py"), str(project / "sub/c.py")], capsys)
    assert code == 1
    assert out == f"{project / 'sub/c.py'}:2: {UNPORTABLE_REPORT}\n"
    assert err == "flywheel port: 2 Python files, 2 rewritten in place; 1 line to port by hand (above)\n"
    assert (project / "sub/c.py").read_text() == PORTED + UNPORTABLE


def test_porting_twice_changes_nothing_and_reports_the_same(project, capsys):
    (project / "a.py").write_text(RLLIB + UNPORTABLE)
    first = run(["port", str(project)], capsys)
    texts = {path: path.read_text() for path in project.rglob("*.py")}
    second = run(["port", str(project)], capsys)
    assert first[:2] == second[:2] == (1, f"{project / 'a.py'}:2: {UNPORTABLE_REPORT}\n")
    assert (
        second[2] == "flywheel port: 3 Python files, 0 rewritten in place; 1 line to port by hand (above)\n"
    )
    assert {path: path.read_text() for path in project.rglob("*.py")} == texts


def test_out_mirrors_the_folder_and_leaves_the_inputs_alone(project, tmp_path, capsys):
    (project / "a.py").write_text(RLLIB + UNPORTABLE)
    out = tmp_path / "ported"
    code, stdout, stderr = run(["port", str(project), "-o", str(out)], capsys)
    assert (code, stdout) == (1, f"{out / 'project/a.py'}:2: {UNPORTABLE_REPORT}\n")
    # The summary names where the copy of the folder is: one level below `out` (docs/cli.md).
    assert stderr == (
        f"flywheel port: 3 Python files, 2 written under {out / 'project'}; 1 line to port by hand (above)\n"
    )
    assert sorted(str(path.relative_to(out)) for path in out.rglob("*") if path.is_file()) == [
        "project/a.py",
        "project/b.py",
        "project/data.json",
        "project/sub/c.py",
    ]
    assert (out / "project/a.py").read_text() == PORTED + UNPORTABLE
    assert (out / "project/b.py").read_text() == "import os\n"
    assert (out / "project/data.json").read_text() == "{}\n"
    assert (project / "a.py").read_text() == RLLIB + UNPORTABLE


def test_out_mirrors_files_below_the_folder_that_holds_them_all(project, tmp_path):
    report = port_paths([project / "a.py", project / "sub/c.py"], out=tmp_path / "ported")
    assert report.ok and report.files == [project / "a.py", project / "sub/c.py"]
    assert report.written_under == tmp_path / "ported"
    assert report.changed == [tmp_path / "ported/a.py", tmp_path / "ported/sub/c.py"]
    assert (tmp_path / "ported/sub/c.py").read_text() == "import numpy\n" + PORTED


def test_encoding_declarations_and_crlf_newlines_survive(tmp_path):
    path = tmp_path / "legacy.py"
    path.write_bytes(
        b'# -*- coding: latin-1 -*-\r\nfrom ray.rllib.core import Columns\r\nname = "caf\xe9"\r\n'
    )
    assert port_paths([path]).changed == [path]
    assert (
        path.read_bytes()
        == b'# -*- coding: latin-1 -*-\r\nfrom flywheel.columns import Columns\r\nname = "caf\xe9"\r\n'
    )


def test_a_file_that_cannot_be_decoded_is_reported_and_copied_as_is(tmp_path):
    path = tmp_path / "broken.py"
    path.write_bytes(b"from ray.rllib.core import Columns\nname = '\xff'\n")
    report = port_paths([path], out=tmp_path / "out")
    assert [str(problem) for problem in report.problems] == [
        f"{tmp_path / 'out/broken.py'}:1: cannot be read as Python source ('utf-8' codec can't decode byte 0xff "
        "in position 43: invalid start byte); save it as UTF-8"
    ]
    assert (report.files, report.changed) == ([path], [])
    assert (tmp_path / "out/broken.py").read_bytes() == path.read_bytes()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["port", "{tmp}/missing"],
            "{tmp}/missing: no such file or folder. Fix: pass the Python files or folders to port.",
        ),
        (
            ["port", "{tmp}/project", "-o", "{tmp}/project/out"],
            "-o {tmp}/project/out lies inside {tmp}/project, which is being ported. Fix: write the ported copy "
            "outside it.",
        ),
        (
            ["port", "{tmp}/project", "-o", "{tmp}/project/a.py"],
            "-o {tmp}/project/a.py: is a file. Fix: name a folder (it is created if missing).",
        ),
    ],
)
def test_path_mistakes_exit_2_with_one_line(project, tmp_path, capsys, argv, message):
    argv = [arg.format(tmp=tmp_path) for arg in argv]
    assert run(argv, capsys) == (2, "", f"flywheel port: error: {message.format(tmp=tmp_path)}\n")


def test_port_paths_raises_port_error_for_a_missing_path(tmp_path):
    with pytest.raises(PortError, match=r"nope: no such file or folder"):
        port_paths([tmp_path / "nope"])


def test_python_m_flywheel_port(project):
    done = subprocess.run(
        [sys.executable, "-m", "flywheel", "port", str(project / "a.py")], capture_output=True, text=True
    )
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == "flywheel port: 1 Python file, 1 rewritten in place; nothing left to port\n"
    assert (project / "a.py").read_text() == PORTED


def test_import_flywheel_and_its_cli_do_not_import_libcst():
    code = "import sys, flywheel, flywheel.cli; flywheel.cli.build_parser(); print('libcst' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout == "False\n"


def test_the_docs_cli_md_port_example(tmp_path, monkeypatch, capsys):
    page = (Path(__file__).parents[2] / "docs/cli.md").read_text()
    block = page[page.index("$ flywheel port my_model.py") :].split("```")[0]
    command, *expected = block.strip().splitlines()
    lines = ["from ray.rllib.core.columns import Columns\n"] + ["\n"] * 5
    (tmp_path / "my_model.py").write_text(
        "".join([*lines, "from ray.rllib.policy.sample_batch import MultiAgentBatch\n"])
    )
    monkeypatch.chdir(tmp_path)
    code, out, err = run(command.split()[2:], capsys)
    assert (code, (out + err).splitlines()) == (1, expected)


def test_the_docs_cli_md_port_out_example_names_the_folder_of_the_copy(tmp_path, monkeypatch, capsys):
    page = (Path(__file__).parents[2] / "docs/cli.md").read_text()
    block = page[page.index("$ flywheel port rl -o rl_ported") :].split("```")[0]
    command, *expected = block.strip().splitlines()
    (tmp_path / "rl").mkdir()
    (tmp_path / "rl/train.py").write_text("from ray.rllib.core.columns import Columns\n")
    (tmp_path / "rl/models.py").write_text("import os\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run(command.split()[2:], capsys)
    assert (code, (out + err).splitlines()) == (0, expected)
    assert sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "rl_ported").rglob("*.py")) == [
        "rl_ported/rl/models.py",
        "rl_ported/rl/train.py",
    ]


def test_api_md_section_11_port_command_parses():
    args = cli.build_parser().parse_args(["port", "a.py", "folder", "-o", "out"])
    assert (args.handler, args.paths, args.out) == (cli.port, ["a.py", "folder"], "out")
