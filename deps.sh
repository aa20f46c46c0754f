#!/usr/bin/env bash
# Installs what fltrace needs to build, run and test, from Debian's packages only. Idempotent.
set -euo pipefail

# build: compiler, jemalloc (linked into the preload library), libunwind, libelf, zlib (pprof),
#   libsodium (--far memcached: pages sealed with an AEAD), help2man (the manual pages, from --help)
# run: addr2line (binutils) for `fltrace report`
# tests and benchmarks: real programs that fltrace traces (python3, sqlite3, gawk, xz, gzip, GNU sort),
#   perf to compare against, xmllint and chromium to check the SVGs, protoc and python's protobuf
#   to read the pprof export back, memcached (memory servers for --far memcached) and sasl2-bin
#   (saslpasswd2: a SASL user for one); clang and its libFuzzer runtime for the fuzzers (make fuzz);
#   man-db, bash-completion and lintian to check the manual pages, the completion and `make deb`
PACKAGES=(
	build-essential binutils pkg-config help2man
	libjemalloc-dev libunwind-dev libelf-dev zlib1g-dev
	python3 sqlite3 gawk xz-utils gzip coreutils procps util-linux gdb
	libxml2-utils chromium protobuf-compiler python3-protobuf
	linux-perf
	memcached sasl2-bin libsodium-dev
	clang libclang-rt-14-dev
	man-db bash-completion lintian
)
# Arguments name other packages to install the same way instead (test/real/deps.sh does).
[ $# -eq 0 ] || PACKAGES=("$@")

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
[ $# -gt 0 ] || echo "deps.sh: all build and test dependencies are installed"
