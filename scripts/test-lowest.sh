#!/usr/bin/env bash
# The lowest-versions job: install wgtpm with the registry's extra and the lowest HTTP stack
# that pyproject.toml allows (ci/lowest.txt: httpx, httpcore, h11, uvicorn, httptools) into
# .venv-lowest, without torch nor the dev extra (whose huggingface_hub wants h11 0.16), and
# run the HTTP and registry-protocol tests there, compat's included: wgtpm/_compat/ must
# find every internal it uses in the oldest versions too, and the fast paths must work.
# About 15 s of pip from scratch and under a minute of tests on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
[ -x .venv-lowest/bin/python ] || "$py" -m venv .venv-lowest
.venv-lowest/bin/python -m pip install -q --disable-pip-version-check \
  -e '.[registry]' pytest pytest-timeout hypothesis -c ci/lowest.txt
.venv-lowest/bin/python -m pip list --disable-pip-version-check 2>/dev/null \
  | grep -iE '^(httpx|httpcore|h11|uvicorn|httptools) '
exec .venv-lowest/bin/python -m pytest -q -p no:cacheprovider \
  tests/test_compat.py tests/test_pool.py tests/test_tls.py tests/test_preconnect.py \
  tests/test_http_limits.py tests/test_settings.py \
  tests/registry/test_compat_uvicorn.py tests/registry/test_http_coalesce.py \
  tests/registry/test_http_limits.py tests/registry/test_protocol_path.py "$@"
