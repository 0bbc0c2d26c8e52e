#!/usr/bin/env bash
# The no-extras job: install wgtpm with none of its extras (no torch, numpy, GitPython,
# huggingface_hub nor the registry's stack) into .venv-noextras, then run
# tests/test_noextras.py there: every command that needs an extra says which in one
# line, and the commands that need none (init, get, list, verify, ...) work.
# About 20 s from scratch (most of it pip), a few seconds when .venv-noextras exists.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
[ -x .venv-noextras/bin/python ] || "$py" -m venv .venv-noextras
# wgtpm's own dependencies and the test runner, nothing else.
.venv-noextras/bin/python -m pip install -q --disable-pip-version-check -e . pytest pytest-timeout
exec .venv-noextras/bin/python -m pytest -q -p no:cacheprovider tests/test_noextras.py "$@"
