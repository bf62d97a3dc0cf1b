"""`port_source`: the exact text of every rewrite form, comments kept, idioms, and the report lines."""

from textwrap import dedent

import pytest

from flywheel.porting import Problem, load_table, port_source
from flywheel.porting.table import NOT_YET

TABLE = load_table()


def port(source: str) -> tuple[str, list[str]]:
    text, problems = port_source(dedent(source), "mod.py")
    return text, [str(problem) for problem in problems]


# (RLlib source, ported source); each ports with nothing left to report.
REWRITES = {
    "one name, comment kept": (
        "from ray.rllib.core.columns import Columns  # the column names\n",
        "from flywheel.columns import Columns  # the column names\n",
    ),
    "package path": (
        "from ray.rllib.core.rl_module.torch import TorchRLModule\n",
        "from flywheel.core.rl_module import TorchRLModule\n",
    ),
    "rename keeps the RLlib name": (
        "from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical\n",
        "from flywheel.core.distributions import Categorical as TorchCategorical\n",
    ),
    "rename keeps the user's alias": (
        "from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical as Cat\n",
        "from flywheel.core.distributions import Categorical as Cat\n",
    ),
    "an alias equal to flywheel's name goes": (
        "from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical as Categorical\n",
        "from flywheel.core.distributions import Categorical\n",
    ),
    "constant rename": (
        "from ray.rllib.core import DEFAULT_POLICY_ID\n",
        "from flywheel.typing import DEFAULT_MODULE_ID as DEFAULT_POLICY_ID\n",
    ),
    "split, pragma comment on every line": (
        "from ray.rllib.core import Columns, DEFAULT_MODULE_ID  # noqa: F401\n",
        "from flywheel.columns import Columns  # noqa: F401\nfrom flywheel.typing import DEFAULT_MODULE_ID  # noqa: F401\n",
    ),
    "split, other comment on the first line": (
        "from ray.rllib.core import Columns, DEFAULT_MODULE_ID  # both needed\n",
        "from flywheel.columns import Columns  # both needed\nfrom flywheel.typing import DEFAULT_MODULE_ID\n",
    ),
    "parenthesized, one target": (
        """\
        from ray.rllib.connectors.env_to_module import (
            FlattenObservations,  # dict observations -> one vector
            MeanStdFilter,
        )
        """,
        """\
        from flywheel.connectors.env_to_module import (
            FlattenObservations,  # dict observations -> one vector
            MeanStdFilter,
        )
        """,
    ),
    "parenthesized split keeps each comment with its name": (
        """\
        from ray.rllib.core import (  # what RLlib's core exports
            Columns,  # the column names
            DEFAULT_MODULE_ID,
        )
        """,
        """\
        from flywheel.columns import (  # what RLlib's core exports
            Columns,  # the column names
        )
        from flywheel.typing import (
            DEFAULT_MODULE_ID,
        )
        """,
    ),
    "semicolons": (
        "from ray.rllib.core import Columns, DEFAULT_MODULE_ID; import os\n",
        "from flywheel.columns import Columns; from flywheel.typing import DEFAULT_MODULE_ID; import os\n",
    ),
    "module imported as a module": (
        "import ray.rllib.core.columns as c\nobs = c.Columns.OBS\n",
        "import flywheel.columns as c\nobs = c.Columns.OBS\n",
    ),
    "module attribute renamed in the body": (
        "import ray.rllib.core.distribution.torch.torch_distribution as td\ndist = td.TorchCategorical\n",
        "import flywheel.core.distributions as td\ndist = td.Categorical\n",
    ),
    "module imported without `as`": (
        "import ray.rllib.core.columns\nobs = ray.rllib.core.columns.Columns.OBS\n",
        "import flywheel.columns\nobs = flywheel.columns.Columns.OBS\n",
    ),
    "module from its package": (
        "from ray.rllib.core import columns\nobs = columns.Columns.OBS\n",
        "from flywheel import columns\nobs = columns.Columns.OBS\n",
    ),
    "module whose flywheel name differs": (
        "from ray.rllib.utils import replay_buffers\nbuffer = replay_buffers.EpisodeReplayBuffer\n",
        "from flywheel import replay as replay_buffers\nbuffer = replay_buffers.EpisodeReplayBuffer\n",
    ),
    "ray.tune's register_env": (
        "from ray.tune.registry import register_env\n",
        "from flywheel.env import register_env\n",
    ),
    "examples: from-import": (
        "from ray.rllib.examples.envs.classes.random_env import RandomEnv\n",
        "from examples.envs.classes.random_env import RandomEnv\n",
    ),
    "examples: any name, no table entry needed": (
        "from ray.rllib.examples.rl_modules.classes.vpg_torch_rlm import VPGTorchRLModule as VPG\n",
        "from examples.rl_modules.classes.vpg_torch_rlm import VPGTorchRLModule as VPG\n",
    ),
    "examples: module as": (
        "import ray.rllib.examples.envs.classes.random_env as random_env\n",
        "import examples.envs.classes.random_env as random_env\n",
    ),
    "examples: module without `as`": (
        "import ray.rllib.examples.envs.classes.random_env\nenv = ray.rllib.examples.envs.classes.random_env.RandomEnv\n",
        "import examples.envs.classes.random_env\nenv = examples.envs.classes.random_env.RandomEnv\n",
    ),
    "examples: module from its package": (
        "from ray.rllib.examples import utils\n",
        "from examples import utils\n",
    ),
    "examples: the package itself": (
        "from ray.rllib import examples\n",
        "import examples\n",
    ),
    "imports in functions and TYPE_CHECKING blocks": (
        """\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from ray.rllib.core.rl_module.rl_module import RLModule


        def make():
            from ray.rllib.algorithms.ppo import PPOConfig

            return PPOConfig()
        """,
        """\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from flywheel.core.rl_module import RLModule


        def make():
            from flywheel.algorithms.ppo import PPOConfig

            return PPOConfig()
        """,
    ),
    "try_import_torch": (
        """\
        import numpy as np
        from ray.rllib.utils.framework import try_import_torch

        torch, nn = try_import_torch()  # torch is required
        """,
        """\
        import numpy as np

        import torch  # torch is required
        from torch import nn
        """,
    ),
    "try_import_torch, torch only": (
        "from ray.rllib.utils.framework import try_import_torch\nimport os\ntorch, _ = try_import_torch()\n",
        "import os\nimport torch\n",
    ),
    "try_import_torch, nn only, in a function": (
        "from ray.rllib.utils import try_import_torch\ndef f():\n    _, nn = try_import_torch()\n",
        "def f():\n    from torch import nn\n",
    ),
    "try_import_torch, other names": (
        "from ray.rllib.utils.framework import try_import_torch\nimport os\nth, tnn = try_import_torch(error=True)\n",
        "import os\nimport torch as th\nfrom torch import nn as tnn\n",
    ),
    "annotation decorators go, their comments stay": (
        """\
        from ray.rllib.core.rl_module.torch import TorchRLModule
        from ray.rllib.utils.annotations import (
            OverrideToImplementCustomLogic,
            PublicAPI,
            override,
        )


        @PublicAPI
        class MyModule(TorchRLModule):
            # Builds the layers.
            @override(TorchRLModule)  # RLlib checks that the parent has it
            def setup(self):
                pass

            @staticmethod
            @OverrideToImplementCustomLogic
            def helper():
                pass
        """,
        """\
        from flywheel.core.rl_module import TorchRLModule


        class MyModule(TorchRLModule):
            # Builds the layers.
            # RLlib checks that the parent has it
            def setup(self):
                pass

            @staticmethod
            def helper():
                pass
        """,
    ),
    "an unused idiom import goes, its comment stays": (
        "import os\n# RLlib's annotations\nfrom ray.rllib.utils.annotations import override\nimport sys\n",
        "import os\n# RLlib's annotations\nimport sys\n",
    ),
    "a block left empty keeps a pass": (
        "if TYPE_CHECKING:\n    from ray.rllib.utils.annotations import override  # hints only\n",
        "if TYPE_CHECKING:\n    pass  # hints only\n",
    ),
    "a one-line block left empty keeps a pass": (
        "if TYPE_CHECKING: from ray.rllib.utils.annotations import override\n",
        "if TYPE_CHECKING: pass\n",
    ),
    "imports that are not RLlib's stay": (
        "import ray\nfrom ray import tune\nfrom ray.tune import CLIReporter\nfrom .local import helper\nimport numpy as np\n",
        "import ray\nfrom ray import tune\nfrom ray.tune import CLIReporter\nfrom .local import helper\nimport numpy as np\n",
    ),
    "Tune's names that flywheel has, imported by name": (
        "from ray.tune import Tuner, grid_search\nfrom ray.tune.registry import get_trainable_cls, register_env\n",
        "from flywheel.tune import Tuner\nfrom ray.tune import grid_search\n"
        "from flywheel.algorithms.registry import get_trainable_cls\nfrom flywheel.env import register_env\n",
    ),
    "Tune's names that flywheel has, used as attributes of `tune`": (
        "from ray import tune\n"
        "tune.register_env('e', make)\n"
        "tuner = tune.Tuner(config.algo_class, param_space=config, run_config=tune.RunConfig(stop={}))\n",
        "from ray import tune\nimport flywheel.env\nimport flywheel.tune\n"
        "flywheel.env.register_env('e', make)\n"
        "tuner = flywheel.tune.Tuner(config.algo_class, param_space=config, run_config=tune.RunConfig(stop={}))\n",
    ),
    "a [names] entry wins over its module's prefix (the example harness)": (
        "from ray.rllib.examples.utils import add_rllib_example_script_args\n"
        "from ray.rllib.examples.envs.classes.cartpole_crashing import CartPoleCrashing\n"
        "from ray.rllib.utils.test_utils import run_rllib_example_script_experiment\n",
        "from flywheel.examples_harness import add_rllib_example_script_args\n"
        "from examples.envs.classes.cartpole_crashing import CartPoleCrashing\n"
        "from flywheel.examples_harness import run_rllib_example_script_experiment\n",
    ),
}


@pytest.mark.parametrize(("source", "expected"), REWRITES.values(), ids=REWRITES.keys())
def test_rewrites(source, expected):
    assert port(source) == (dedent(expected), [])


def test_comments_and_formatting_elsewhere_are_untouched():
    source = dedent(
        """\
        # -*- coding: utf-8 -*-
        \"\"\"Module docstring mentioning ray.rllib.core.columns.Columns.\"\"\"
        from ray.rllib.core.columns import Columns
        x   =  Columns.OBS    # odd spacing stays
        y = "from ray.rllib.core import Columns"
        """
    )
    assert port(source)[0] == source.replace(
        "from ray.rllib.core.columns import Columns\n", "from flywheel.columns import Columns\n"
    )


def test_newlines_and_non_ascii_text_are_kept():
    source = 'from ray.rllib.core import Columns, DEFAULT_MODULE_ID\r\nname = "café"\r\n'
    expected = 'from flywheel.columns import Columns\r\nfrom flywheel.typing import DEFAULT_MODULE_ID\r\nname = "café"\r\n'
    assert port_source(source) == (expected, [])


def test_a_file_without_rllib_imports_is_returned_as_is():
    source = "import os\nray = 1\n"
    assert port_source(source) == (source, [])


# ------------------------------------------------------------------------------------------ reports


def test_report_lines_name_the_line_what_it_is_and_what_to_use_instead():
    source = """\
        from ray.rllib.policy.sample_batch import MultiAgentBatch
        from ray.rllib.core import Columns, COMPONENT_EVAL_ENV_RUNNER
        from ray.rllib.models.torch.torch_modelv2 import TorchModelV2
        from ray.rllib.core.rl_module.apis import (
            ValueFunctionAPI,
            QNetAPI,
        )
        from ray.tune.registry import get_trainable_cls, register_env
        """
    text, report = port(source)
    assert text == dedent(
        """\
        from ray.rllib.policy.sample_batch import MultiAgentBatch
        from flywheel.columns import Columns
        from ray.rllib.core import COMPONENT_EVAL_ENV_RUNNER
        from ray.rllib.models.torch.torch_modelv2 import TorchModelV2
        from flywheel.core.rl_module.apis import (
            ValueFunctionAPI,
        )
        from ray.rllib.core.rl_module.apis import (
            QNetAPI,
        )
        from flywheel.algorithms.registry import get_trainable_cls
        from flywheel.env import register_env
        """
    )
    assert report == [
        "mod.py:1: ray.rllib.policy.sample_batch.MultiAgentBatch: RLlib's old API stack batch; flywheel's train "
        "batches are plain dicts {module_id: {column: tensor}}",
        f"mod.py:3: ray.rllib.core.COMPONENT_EVAL_ENV_RUNNER: {NOT_YET}",
        "mod.py:4: ray.rllib.models.torch.torch_modelv2.TorchModelV2: RLlib's old API stack model; write a "
        "flywheel.TorchRLModule (setup() builds the layers, _forward() returns Columns.ACTION_DIST_INPUTS)",
        f"mod.py:9: ray.rllib.core.rl_module.apis.QNetAPI: {NOT_YET}",
    ]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from ray.rllib.evaluation.postprocessing import Postprocessing\n", "ray.rllib.evaluation"),
        ("from ray.rllib.execution.train_ops import train_one_step\n", "ray.rllib.execution"),
        ("from ray.rllib.models import ModelCatalog\n", "ModelCatalog"),
        ("from ray.rllib.policy.torch_policy_v2 import TorchPolicyV2\n", "TorchPolicyV2"),
        ("from ray.rllib.utils.framework import try_import_tf\n", "ray.rllib.utils.framework:try_import_tf"),
        (
            "from ray.rllib.algorithms.dreamerv3.utils import do_symlog_obs\n",
            "ray.rllib.algorithms.dreamerv3",
        ),
        ("from ray.rllib.connectors.common import AgentToModuleMapping\n", "ray.rllib.connectors.common"),
        ("import ray.rllib.policy.sample_batch as sb\n", "ray.rllib.policy"),
    ],
)
def test_old_api_stack_and_missing_names_say_what_to_use(source, expected):
    text, report = port(source)
    assert text == source
    assert len(report) == 1 and report[0].endswith(": " + TABLE.problems[expected])


def test_old_stack_names_new_stack_programs_use_port_to_flywheel_old_stack():
    source = (
        "from ray.rllib.policy.policy import Policy, PolicySpec\n"
        "from ray.rllib.policy.sample_batch import SampleBatch\n"
    )
    assert port(source) == (
        "from flywheel.old_stack import Policy, PolicySpec\nfrom flywheel.old_stack import SampleBatch\n",
        [],
    )


def test_dreamerv3_names_port():
    source = (
        "from ray.rllib.algorithms.dreamerv3 import DreamerV3Config\n"
        "from ray.rllib.algorithms.dreamerv3.torch.dreamerv3_torch_learner import DreamerV3TorchLearner\n"
    )
    assert port(source) == (
        "from flywheel.algorithms.dreamerv3 import DreamerV3Config\n"
        "from flywheel.algorithms.dreamerv3 import DreamerV3TorchLearner\n",
        [],
    )


def test_impala_and_appo_names_port():
    source = (
        "from ray.rllib.algorithms.appo import APPOConfig\n"
        "from ray.rllib.algorithms.impala.torch.vtrace_torch_v2 import vtrace_torch\n"
        "from ray.rllib.core.rl_module.apis import TARGET_NETWORK_ACTION_DIST_INPUTS, TargetNetworkAPI\n"
    )
    assert port(source) == (
        "from flywheel.algorithms.appo import APPOConfig\n"
        "from flywheel.algorithms.impala import vtrace_torch\n"
        "from flywheel.core.rl_module.apis import TARGET_NETWORK_ACTION_DIST_INPUTS, TargetNetworkAPI\n",
        [],
    )


def test_a_name_not_in_the_table_is_reported_never_guessed():
    source = "from ray.rllib.core.learner.learner import Learner, POLICY_LOSS_KEY\n"
    assert port(source) == (
        "from flywheel.core.learner import Learner\nfrom ray.rllib.core.learner.learner import POLICY_LOSS_KEY\n",
        [f"mod.py:2: ray.rllib.core.learner.learner.POLICY_LOSS_KEY: {NOT_YET}"],
    )


def test_module_attributes_flywheel_lacks_keep_the_module_import():
    source = "import ray.rllib.utils.typing as rt\nhints = rt.ModuleID, rt.SampleBatchType\n"
    assert port(source) == (
        source,
        [
            f"mod.py:1: ray.rllib.utils.typing.SampleBatchType (used as rt.SampleBatchType on line 2): {NOT_YET}"
        ],
    )


def test_idioms_used_in_other_ways_keep_their_import():
    source = """\
        from ray.rllib.utils.annotations import override
        from ray.rllib.utils.framework import try_import_torch

        torch = try_import_torch()[0]
        check = override(object)
        """
    assert port(source) == (
        dedent(source),
        [
            "mod.py:1: ray.rllib.utils.annotations.override: used other than as `@override` / `@override(...)` "
            "on line 5; port that by hand (flywheel port rewrites only that form)",
            "mod.py:2: ray.rllib.utils.framework.try_import_torch: used other than as `torch, nn = "
            "try_import_torch()` on line 4; port that by hand (flywheel port rewrites only that form)",
        ],
    )


def test_star_and_whole_package_imports_are_reported():
    source = "from ray.rllib.core.columns import *\nfrom ray import rllib\nimport ray.rllib\n"
    assert port(source) == (
        source,
        [
            "mod.py:1: from ray.rllib.core.columns import *: import each name you use, so flywheel port can map it",
            "mod.py:2: ray.rllib: import each name you use from its RLlib module, so flywheel port can map it",
            "mod.py:3: ray.rllib: import each name you use from its RLlib module, so flywheel port can map it",
        ],
    )


def test_invalid_python_is_reported_and_left_alone():
    assert port_source("from ray.rllib.core import (\n", "bad.py") == (
        "from ray.rllib.core import (\n",
        [Problem("bad.py", 1, "not valid Python ('(' was never closed); fix it and port again")],
    )


# ------------------------------------------------------------------------------------------ idempotence

SOURCES = [source for source, _ in REWRITES.values()] + [
    "from ray.rllib.policy.sample_batch import MultiAgentBatch\nfrom ray.rllib.core import Columns, COMPONENT_EVAL_ENV_RUNNER\n",
    "import ray.rllib.utils.typing as rt\nx = rt.TensorType\nfrom ray.rllib.utils.annotations import override\n"
    "f = override(object)\n",
]


@pytest.mark.parametrize("source", SOURCES)
def test_porting_a_ported_file_changes_nothing_and_reports_the_same(source):
    once = port(source)
    assert port(once[0]) == (once[0], once[1])


def test_the_porting_docs_example_runs(run_doc_blocks):
    run_doc_blocks("docs/porting.md", blocks=1)
