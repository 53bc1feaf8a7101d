#!/usr/bin/env bash
# The isolation tests as a real unprivileged user (developer script; run as root from the repo root on a
# machine whose Python lives where other users cannot read it, e.g. under /root): makes the user
# kmcpuser, a virtual environment for it from the system Python (CPU torch from the local disk), and runs
# the cheats, the storm, the caller-death and runner tests as that user (the checkout must be readable by
# it). Extra arguments go to pytest.
# Candidates then get their namespaces through a user namespace, as they would for any ordinary user.
set -euo pipefail
USER_NAME=kmcpuser VENV=/opt/kmcp-user-venv PY=${PY:-/usr/bin/python3}
id "$USER_NAME" >/dev/null 2>&1 || useradd -m "$USER_NAME"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q torch==2.13.0
fi
"$VENV/bin/pip" install -q -e '.[test]'
exec runuser -u "$USER_NAME" -- env HOME="/home/$USER_NAME" PATH="$VENV/bin:/usr/bin:/bin" \
  "$VENV/bin/python" -m pytest -q -p no:cacheprovider -rfs tests/test_cheats.py tests/test_fault_storm.py \
  tests/test_caller_death.py tests/test_runner.py "$@"
