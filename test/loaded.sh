#!/usr/bin/env bash
# make test-loaded: the whole suite (test/run.sh, same arguments) while every CPU also runs a hog
# (build/progs/hog: a busy loop over memory it maps, writes and unmaps), as on a shared machine.
# The hogs stop when the suite ends, however it ends (they also exit on their own once this
# script is gone). The exit status is the suite's.
set -u
cd "$(dirname "$0")/.."
BUILD=${FLTRACE_BUILD:-build}
HOG=$BUILD/progs/hog
HOG_MB=${FLTRACE_HOG_MB:-128}
if [ ! -x "$HOG" ]; then
	echo "test-loaded: $HOG is missing; run 'make' first" >&2
	exit 2
fi
hogs=() suite=
stop_hogs() {
	local p
	for p in "${hogs[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${hogs[@]}"; do wait "$p" 2>/dev/null; done
	hogs=()
}
# Stopped from outside: the suite stops too, with every case it runs.
stop_all() {
	[ -n "$suite" ] && kill -- -"$suite" 2>/dev/null
	stop_hogs
}
trap stop_hogs EXIT
trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM HUP
for ((i = 0; i < $(nproc); i++)); do
	"$HOG" "$HOG_MB" > /dev/null &
	hogs+=($!)
done
echo "test-loaded: ${#hogs[@]} hogs of $HOG_MB MB beside the suite (pids ${hogs[*]})"
# In the background and waited for, so that a signal to this script is handled at once; in a
# process group of its own (job control), so that stopping it reaches every case it runs.
set -m
bash test/run.sh "$@" &
suite=$!
set +m
wait "$suite"
rc=$?
suite=
exit $rc
