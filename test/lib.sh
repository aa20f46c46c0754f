# Helpers for end-to-end tests: source it, then call the case functions. Every case prints exactly
# one PASS/FAIL/SKIP line; a script's cases run in order and a failing case does not stop the rest.
set -u
ROOT=${FLTRACE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BUILD=$ROOT/${FLTRACE_BUILD:-build}
FLTRACE=$BUILD/bin/fltrace
PROGS=$BUILD/progs
TMP=$(mktemp -d /tmp/fltrace-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# A hang guard for every traced run: longer than any run takes on a busy machine, so that it only
# ever catches a real hang; no verdict here depends on how fast anything ran.
HANG=${FLTRACE_TEST_HANG_S:-600}

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }

# expect_eq NAME WHAT EXPECTED ACTUAL
expect_eq() {
	if [ "$3" == "$4" ]; then pass "$1"; else fail "$1" "$2: expected '$3', got '$4'"; fi
}

# have_uffd: whether this machine lets us use full userfaultfd (root, sysctl or /dev/userfaultfd)
# have_rseq: glibc registers an rseq area per thread here (2.35+, a kernel with rseq, not turned off
# by GLIBC_TUNABLES): fltrace reads faulting threads' stacks without the stack signal only then.
have_rseq() {
	[ "$(python3 -c 'import ctypes; print(ctypes.c_uint.in_dll(ctypes.CDLL(None), "__rseq_size").value)' \
		2>/dev/null)" -gt 0 ] 2>/dev/null
}

# expect_stat_key NAME DIR KEY: the stats line has KEY (expect_stat reads a missing one as 0).
# have_fault_samples: the kernel lets this process sample its own page faults, kernel mode included
# (root, or perf_event_paranoid <= 1; no seccomp filter in the way): fltrace's handlers then read a
# fault's registers from its sample instead of /proc, rbp among them.
have_fault_samples() {
	"$PROGS/perfprobe" 2> /dev/null
}

expect_stat_key() {
	if tail -q -n 1 "$2"/fltrace-data-stats-*.out 2>/dev/null | grep -q "[,:]$3:"; then pass "$1"
	else fail "$1" "no $3 in the stats of $2"; fi
}

have_uffd() {
	[ "$(id -u)" = 0 ] || [ "$(cat /proc/sys/vm/unprivileged_userfaultfd 2>/dev/null)" = 1 ] ||
		[ -r /dev/userfaultfd -a -w /dev/userfaultfd ]
}

# expect_error NAME CODE REGEX CMD...: CMD exits with CODE and writes exactly one line on stderr,
# shaped "fltrace: <what>: <why>; <what to do>" and matching the extended regex REGEX.
expect_error() {
	local name=$1 code=$2 re=$3 err rc lines
	shift 3
	err=$("$@" 2>&1 >/dev/null)
	rc=$?
	lines=$(printf '%s' "$err" | grep -c '')
	if [ "$rc" != "$code" ]; then
		fail "$name" "exit $rc, expected $code (stderr: $err)"
	elif [ "$lines" != 1 ]; then
		fail "$name" "expected one line on stderr, got $lines: $err"
	elif ! printf '%s\n' "$err" | grep -Eq '^fltrace: [^ ].*: .*; .+'; then
		fail "$name" "not shaped 'fltrace: <what>: <why>; <what to do>': $err"
	elif ! printf '%s\n' "$err" | grep -Eq -- "$re"; then
		fail "$name" "message does not match /$re/: $err"
	else
		pass "$name"
	fi
}

# have_preload: whether the preload library of this build exists (make builds it with `all`).
have_preload() {
	[ -f "$BUILD/lib/fltrace/libfltrace.so" ]
}

# same_output NAME "RECORD OPTIONS" ARGS...: the command's stdout + exit status under
# `fltrace record OPTIONS` (trace in $TMP/NAME) equal its untraced run's; a hang is a failure
# With FIXED_LAYOUT set, the traced run has no address randomization: the runs of a case whose fault
# counts are compared with each other place their memory alike (where a 64 MB extent falls decides
# whether jemalloc needs one more page for its radix tree: 1 run in 16 otherwise).
same_output() {
	local name=$1 opts=$2; shift 2
	local dir=$TMP/$name layout=()
	[ -n "${FIXED_LAYOUT:-}" ] && layout=(setarch "$(uname -m)" -R)
	mkdir -p "$dir"
	"$@" > "$dir/native" 2>&1
	local native_rc=$?
	echo "exit $native_rc" >> "$dir/native"
	# A program that crashes by itself proves nothing about fltrace (both runs would agree).
	case $native_rc in 132 | 134 | 135 | 136 | 139)
		if [ -z "${SAME_OUTPUT_CRASH_OK:-}" ]; then
			fail "$name" "the program crashes without fltrace (exit $native_rc): $*"
			return 1
		fi ;;
	esac
	# shellcheck disable=SC2086
	timeout -k 10 "${SAME_OUTPUT_TIMEOUT:-$HANG}" "${layout[@]}" "$FLTRACE" record $opts -o "$dir" -- "$@" \
		> "$dir/traced" 2> "$dir/err"
	local rc=$?
	echo "exit $rc" >> "$dir/traced"
	if [ $rc = 124 ]; then fail "$name" "hung (timeout): $*"; return 1; fi
	if ! cmp -s "$dir/native" "$dir/traced"; then
		fail "$name" "output differs: $(diff "$dir/native" "$dir/traced" | head -4 | tr '\n' ' ') stderr: $(head -c 300 "$dir/err")"
		return 1
	fi
	pass "$name"
}

# stat_max DIR KEY: the largest value of KEY in the last stats line of the processes in DIR
stat_max() {
	local best=0 f v
	for f in "$1"/fltrace-data-stats-*.out; do
		v=$(tail -n 1 "$f" | tr ',' '\n' | sed -n "s/^$2://p")
		[ -n "$v" ] && [ "$v" -gt "$best" ] && best=$v
	done
	echo "$best"
}

# expect_stat NAME DIR KEY OP VALUE: e.g. expect_stat x "$dir" faults_refetch -gt 0
expect_stat() {
	local v; v=$(stat_max "$2" "$3")
	if [ "$v" "$4" "$5" ]; then pass "$1"; else fail "$1" "$3 is $v, expected $4 $5"; fi
}

# stacks_callsites DIR: the faults of test/progs/stacks.c in DIR's trace, as "COUNT OP FRAME FRAME
# FRAME" rows (innermost first) joined by ";"; stacks_expected: what its exact run gives.
stacks_callsites() {
	"$FLTRACE" report -i "$1" > /dev/null 2>&1
	python3 - "$1" <<'PY'
import csv, glob, sys
rows = []
for f in glob.glob(sys.argv[1] + "/fltrace-data-report-*.out"):
    for r in csv.DictReader(open(f)):
        frames = [c.split("<<<")[0].split("/")[-1] for c in r["code"].split("<//>")]
        if frames and frames[0].startswith("stacks.c:"):
            rows.append("%s %s %s" % (r["count"], r["op"], " ".join(frames[:3])))
print(";".join(sorted(rows)))
PY
}
stacks_expected() {
	local lw lr ct cr cm
	lw=$(src_line stacks.c LEAF-W); lr=$(src_line stacks.c LEAF-R)
	ct=$(src_line stacks.c CALL-TOUCH); cr=$(src_line stacks.c CALL-READ); cm=$(src_line stacks.c CALL-MIDDLE)
	echo "100 write stacks.c:$lw stacks.c:$ct stacks.c:$cm;50 read stacks.c:$lr stacks.c:$cr stacks.c:$cm"
}

# faults_at DIR FILE:LINE: faults whose innermost frame is FILE:LINE, summed over DIR's processes
faults_at() {
	"$FLTRACE" report -i "$1" > /dev/null 2>&1
	python3 - "$1" "$2" <<'PY'
import csv, glob, sys
n = 0
for f in glob.glob(sys.argv[1] + "/fltrace-data-report-*.out"):
    for r in csv.DictReader(open(f)):
        if r["code"].split("<//>")[0].split("<<<")[0].split("/")[-1] == sys.argv[2]:
            n += int(r["count"])
print(n)
PY
}

# src_line FILE TAG: the line of test/progs/FILE marked /* TAG */
src_line() { grep -n "/\* $2 \*/" "$ROOT/test/progs/$1" | head -1 | cut -d: -f1; }
