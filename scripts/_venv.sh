# Sourced by demo.sh and test.sh: make .venv (or reuse it) with the CPU build of
# torch, then install wgtpm with the extras given as arguments.
setup_venv() {
  local py=${PYTHON:-python3}
  [ -x .venv/bin/python ] || "$py" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  # The CPU build of torch first: a plain 'torch' would pull a CUDA build of several GB.
  .venv/bin/python -m pip install -q torch==2.13.0
  .venv/bin/python -m pip install -q -e ".[$1]"
}
