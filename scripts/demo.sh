#!/usr/bin/env bash
# The main job from a clean checkout, in one command: makes .venv when it is missing, installs this
# checkout into it, then runs `mini-agent demo` (extra arguments go to it, e.g. --tool-mode native).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e .
exec .venv/bin/mini-agent demo "$@"
