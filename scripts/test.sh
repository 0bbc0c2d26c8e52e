#!/usr/bin/env bash
# Set up .venv from scratch (or reuse it) and run the whole test suite.
# This is the README's test command, and what .ci/run runs.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_venv.sh
setup_venv all,dev
# The PAW SDK, for its cache and validation code only: its llama-cpp-python
# dependency compiles for minutes and is not needed for those.
.venv/bin/python -m pip install -q --no-deps programasweights==0.4.14
.venv/bin/python -m pip list 2>/dev/null | grep -iE '^(torch|transformers|peft|gguf|huggingface.hub|httpx|semver|programasweights) ' || true
exec .venv/bin/python -m pytest -q "$@"
