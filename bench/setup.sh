#!/usr/bin/env bash
# Creates bench/.venv: a venv separate from the dev .venv, holding RLlib, SB3 and flywheel (editable).
# torch goes in first (the machine's pip config finds the local CPU wheel) and stays pinned through constraints.txt so ray[rllib] cannot pull another (CUDA) torch.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
python="${PYTHON:-python3.11}"
if [[ ! -x .venv/bin/python ]]; then
    "$python" -m venv .venv
fi
pip=(.venv/bin/python -m pip install --disable-pip-version-check)
"${pip[@]}" --upgrade pip wheel setuptools
"${pip[@]}" torch==2.13.0
"${pip[@]}" -c constraints.txt -r requirements.txt
"${pip[@]}" -c constraints.txt -e ..
.venv/bin/python -c "import torch, ray, stable_baselines3, flywheel; print('bench venv ok: torch', torch.__version__, 'ray', ray.__version__)"
