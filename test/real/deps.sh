#!/usr/bin/env bash
# Installs the real programs' test suites that `make check-real` runs, from Debian's packages only.
# Kept apart from ../../deps.sh so that `make test` and CI never wait for them. Idempotent.
set -euo pipefail

# CPython's own regression tests (python3 -m test) and GLib's installed tests (GTest programs, TAP)
PACKAGES=(python3 libpython3.11-testsuite libglib2.0-tests)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "test/real/deps.sh: the real test suites are installed"
