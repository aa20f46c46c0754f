#!/usr/bin/env bash
# The test runner: runs unit-test binaries (arguments) and end-to-end scripts (test/e2e/*.sh).
# Each prints one line per case: "PASS name", "FAIL name: why" or "SKIP name: why".
set -u
cd "$(dirname "$0")/.."
export FLTRACE_BUILD=${FLTRACE_BUILD:-build}
export FLTRACE_ROOT=$PWD
pass=0 fail=0 skip=0

# Memory servers for far memory on memcached (--far memcached:...): three on loopback at free ports,
# for the whole session, stopped however it ends; tests that kill or stop a server start their own.
MC_DIR=$(mktemp -d /tmp/fltrace-memcached.XXXXXX)
trap 'python3 test/memcached.py stop "$MC_DIR"; rm -rf "$MC_DIR"' EXIT
trap 'exit 130' INT TERM HUP
if command -v memcached > /dev/null; then
	FLTRACE_TEST_MEMCACHED=$(python3 test/memcached.py start "$MC_DIR" 3 -m 4096) && export FLTRACE_TEST_MEMCACHED
fi
failed=()

tally() { # reads case lines from stdin, echoes them, counts them
	local line
	while IFS= read -r line; do
		case "$line" in
		"PASS "*) pass=$((pass + 1)); echo "  $line" ;;
		"FAIL "*) fail=$((fail + 1)); failed+=("${line#FAIL }"); echo "  $line" ;;
		"SKIP "*) skip=$((skip + 1)); echo "  $line" ;;
		*) echo "    $line" ;;
		esac
	done
}

# A whole script's limit: a hang the per-case limits miss still ends the run, named, within CI's time.
SCRIPT_LIMIT=${FLTRACE_TEST_SCRIPT_LIMIT_S:-1500}

run_one() { # name, command...: a binary or script that dies without saying so is a failure
	local name=$1 out rc fails_before=$fail; shift
	echo "== $name"
	out=$(mktemp)
	# Its lines are shown as they come (a log cut short still says where it stopped).
	tally < <(timeout -k 10 "$SCRIPT_LIMIT" "$@" 2>&1; echo "$?" > "$out")
	rc=$(cat "$out")
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		fail=$((fail + 1)); failed+=("$name: still running after ${SCRIPT_LIMIT} s, stopped")
		echo "  FAIL $name: still running after ${SCRIPT_LIMIT} s, stopped"
	elif [ "$rc" -ne 0 ] && [ $fail -eq $fails_before ]; then
		fail=$((fail + 1)); failed+=("$name: exited $rc without reporting a failure")
		echo "  FAIL $name: exited $rc"
	fi
	rm -f "$out"
}

for bin in "$@"; do run_one "$(basename "$bin")" "$bin"; done
if [ -z "${FLTRACE_UNIT_ONLY:-}" ]; then
	for t in test/e2e/*.sh; do
		[ -n "${FLTRACE_TEST_FILTER:-}" ] && [[ "$t" != *"$FLTRACE_TEST_FILTER"* ]] && continue
		run_one "$(basename "$t" .sh)" bash "$t"
	done
fi

if [ ${#failed[@]} -gt 0 ]; then
	echo "failures:"; for f in "${failed[@]}"; do echo "  $f"; done
fi
if [ $skip -gt 0 ]; then echo "$pass passed, $fail failed, $skip skipped"
else echo "$pass passed, $fail failed"; fi
[ $fail -eq 0 ]
