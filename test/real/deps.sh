#!/usr/bin/env bash
# Installs the real programs' test suites that `make check-real` runs, from Debian's packages only.
# Kept apart from the top-level deps.sh's list so that `make test` and CI never wait for them.
set -euo pipefail

# CPython's own regression tests (python3 -m test) and GLib's installed tests (GTest programs, TAP)
"$(dirname "$0")/../../deps.sh" python3 libpython3.11-testsuite libglib2.0-tests
echo "test/real/deps.sh: the real test suites are installed"
