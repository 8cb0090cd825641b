#!/usr/bin/env bash
# python_test.sh - install the Python package the way users do (pip install .
# into a venv that sees Debian's numpy and pytest) and run its tests.
# The build is incremental (pyproject.toml: build-py/). Usage:
# tools/python_test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
python=/usr/bin/python3 # Debian's, with python3-numpy / python3-pytest (tools/setup.sh)
[ -x "$python" ] || python=python3
venv="$PWD/build-py/venv"
[ -x "$venv/bin/python" ] || "$python" -m venv --system-site-packages "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check .
# run from outside the source tree, so that the installed package is the one imported
cd build-py
"$venv/bin/python" -c "import kiln; print('python_test: kiln', kiln.version(), 'from', kiln.__file__)"
"$venv/bin/python" -m pytest ../tests/python -q -p no:cacheprovider "$@"
