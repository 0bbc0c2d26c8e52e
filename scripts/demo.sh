#!/usr/bin/env bash
# Set up .venv (the CPU build of torch and wgtpm) and run the offline demo.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q torch==2.13.0
.venv/bin/python -m pip install -q -e '.[weightlang]'
exec .venv/bin/python examples/demo.py
