#!/usr/bin/env bash
# Set up .venv (the CPU build of torch and wgtpm) and run the offline demo.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_venv.sh
setup_venv weightlang,paw,publish,registry
exec .venv/bin/python examples/demo.py
