#!/usr/bin/env bash
# make bench-anchor: the earlier public fltrace and ours side by side on that tool's own example
# (GAPBS bfs -g 20, serial and OpenMP x2) and a python3 run, at ample and small -L, runs interleaved.
#
# Needs two source trees the user points it at (nothing is downloaded):
#   ANCHOR_FLTRACE  the earlier fltrace (eden-farmem/fltrace, cf9f93f) with its jemalloc submodule
#   ANCHOR_GAPBS    GAPBS (sbeamer/gapbs, b5e3e19)
# Both are copied into $BUILD/anchor and built there unmodified. Environment: ANCHOR_RUNS (default
# 3), ANCHOR_ONLY (a subset of rows, e.g. "bfs-serial-140 python-170"), ANCHOR_TIMEOUT (s per run,
# default 600), ANCHOR_PERF=1 (a fourth tool: the kernel serves every fault and `perf record` keeps
# each with 2 KiB of its stack, the cheapest way to record them all), FLTRACE_BUILD. Times are never
# pass/fail: it exits non-zero only if it could not run.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${FLTRACE_BUILD:-build}
B=$ROOT/$BUILD
FLTRACE=$B/bin/fltrace
RUNSTAT=$B/bench/runstat
WORK=$B/anchor
RUNS=${ANCHOR_RUNS:-3}
TIMEOUT=${ANCHOR_TIMEOUT:-600}
PERF=${ANCHOR_PERF:-0}
TOOLS=(native earlier ours)
export LC_ALL=C

say() { printf '%s\n' "$*" >&2; }

usage_sources() {
	cat >&2 <<- 'EOF'
	bench-anchor: skipped: it needs the earlier fltrace's and GAPBS's source trees, e.g.
	  git clone --recursive https://github.com/eden-farmem/fltrace && git -C fltrace checkout cf9f93f && git -C fltrace submodule update
	  git clone https://github.com/sbeamer/gapbs && git -C gapbs checkout b5e3e19
	  make bench-anchor ANCHOR_FLTRACE=$PWD/fltrace ANCHOR_GAPBS=$PWD/gapbs
	The earlier tool also needs: apt-get install autoconf libibverbs-dev librdmacm-dev libnuma-dev
	EOF
}

check_sources() {
	local ok=1
	if [ -z "${ANCHOR_FLTRACE:-}" ] || [ ! -f "${ANCHOR_FLTRACE:-}/src/fltrace.c" ]; then
		say "bench-anchor: ANCHOR_FLTRACE='${ANCHOR_FLTRACE:-}' is not the earlier fltrace's source tree"; ok=0
	elif [ ! -f "$ANCHOR_FLTRACE/jemalloc/configure.ac" ]; then
		say "bench-anchor: $ANCHOR_FLTRACE/jemalloc is empty: run 'git submodule update --init' there"; ok=0
	fi
	if [ -z "${ANCHOR_GAPBS:-}" ] || [ ! -f "${ANCHOR_GAPBS:-}/src/bfs.cc" ]; then
		say "bench-anchor: ANCHOR_GAPBS='${ANCHOR_GAPBS:-}' is not GAPBS's source tree"; ok=0
	fi
	local p
	for p in autoconf libibverbs-dev librdmacm-dev libnuma-dev; do
		dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" ||
			{ say "bench-anchor: package $p is missing (the earlier tool's build needs it)"; ok=0; }
	done
	[ $ok = 1 ] || { usage_sources; exit 0; }
	if [ "$PERF" = 1 ]; then
		perf_usable || exit 1
		TOOLS+=(perf)
	fi
	if [ ! -x "$FLTRACE" ] || [ ! -x "$RUNSTAT" ]; then
		say "bench-anchor: $FLTRACE or $RUNSTAT is missing; run 'make' first"
		exit 1
	fi
}

# The perf column's recorder: perf(1) (Debian: linux-perf) allowed to sample page faults here.
perf_usable() {
	command -v perf > /dev/null || { say "bench-anchor: ANCHOR_PERF=1 needs perf: apt-get install linux-perf"; return 1; }
	perf record -q --no-buildid -o /dev/null -e page-faults -c 1 -- true 2> /dev/null && return 0
	say "bench-anchor: ANCHOR_PERF=1: perf cannot sample page faults here (kernel.perf_event_paranoid is $(cat /proc/sys/kernel/perf_event_paranoid 2> /dev/null)); run as root or lower it"
	return 1
}

# The earlier tool's own deps.sh builds its jemalloc (it ends with 'sudo apt-get install binutils',
# which a root shell without sudo would fail: a shim runs it directly). gcc 12 defaults to
# -fno-common, which that 2023 source predates: the compiler is given -fcommon, the source is not
# touched.
build_earlier() {
	local dir=$WORK/fltrace-earlier
	[ -f "$dir/fltrace.so" ] && return 0
	rm -rf "$dir"; cp -a "$ANCHOR_FLTRACE" "$dir" || return 1
	mkdir -p "$WORK/shim"
	if ! command -v sudo > /dev/null; then
		printf '#!/bin/sh\nexec "$@"\n' > "$WORK/shim/sudo"; chmod +x "$WORK/shim/sudo"
	fi
	say "bench-anchor: building the earlier fltrace in $dir"
	(cd "$dir" && PATH=$WORK/shim:$PATH bash deps.sh && make -j"$(nproc)" CC="gcc -fcommon" LD="gcc -fcommon") \
		> "$WORK/earlier-build.log" 2>&1 || { say "bench-anchor: build failed, see $WORK/earlier-build.log"; return 1; }
}

# GAPBS as the issue measured it: -O3 -g (CXX_FLAGS from the environment, so the Makefile's
# '+= -O3 -fopenmp' still applies; on the command line it would replace them).
build_gapbs() {
	local dir=$WORK/gapbs
	[ -x "$dir/bfs-serial" ] && [ -x "$dir/bfs-omp" ] && return 0
	rm -rf "$dir"; cp -a "$ANCHOR_GAPBS" "$dir" || return 1
	say "bench-anchor: building GAPBS bfs in $dir"
	(cd "$dir" && CXX_FLAGS=-g make bfs SERIAL=1 && mv bfs bfs-serial && CXX_FLAGS=-g make bfs && mv bfs bfs-omp) \
		> "$WORK/gapbs-build.log" 2>&1 || { say "bench-anchor: build failed, see $WORK/gapbs-build.log"; return 1; }
}

# row_cmd ROW: sets CMD, L (MB) and ENVS for a row name
row_cmd() {
	ENVS=()
	case $1 in
	startup) CMD=(/bin/true) L=1000 ;;
	bfs-serial-1000) CMD=("$WORK/gapbs/bfs-serial" -g 20 -n 1) L=1000 ;;
	bfs-serial-140) CMD=("$WORK/gapbs/bfs-serial" -g 20 -n 1) L=140 ;;
	bfs-omp2-1000) CMD=("$WORK/gapbs/bfs-omp" -g 20 -n 1) L=1000 ENVS=(OMP_NUM_THREADS=2) ;;
	bfs-omp2-140) CMD=("$WORK/gapbs/bfs-omp" -g 20 -n 1) L=140 ENVS=(OMP_NUM_THREADS=2) ;;
	# PYTHONMALLOC=malloc: python3.11 maps its object arenas with mmap64, which the earlier tool does
	# not interpose (it wraps mmap only), so under pymalloc it leaves them to the kernel untraced (23,753
	# first touches of 94 1-MiB arenas here) while ours traces them. Through malloc both tools trace the
	# same memory. The python-pymalloc rows (not run unless named in ANCHOR_ONLY) keep the default.
	python-1000) CMD=(/usr/bin/python3 "$WORK/fill.py") L=1000 ENVS=(PYTHONMALLOC=malloc) ;;
	python-170) CMD=(/usr/bin/python3 "$WORK/fill.py") L=170 ENVS=(PYTHONMALLOC=malloc) ;;
	python-pymalloc-1000) CMD=(/usr/bin/python3 "$WORK/fill.py") L=1000 ;;
	python-pymalloc-170) CMD=(/usr/bin/python3 "$WORK/fill.py") L=170 ;;
	*) say "bench-anchor: unknown row '$1' (known: ${ALL_ROWS[*]} python-pymalloc-1000 python-pymalloc-170)"; exit 1 ;;
	esac
}
# A file, not -c: the earlier tool's launcher splits a multi-line argument.
write_python() {
	printf '%s\n' 'b = bytearray(300 << 20)' 'for i in range(0, len(b), 4096): b[i] = 1' \
		'l = list(range(3000000))' 'print(sum(b), len(l), sum(l))' > "$WORK/fill.py"
}
ALL_ROWS=(startup bfs-serial-1000 bfs-serial-140 bfs-omp2-1000 bfs-omp2-140 python-1000 python-170)

# The program's output without its timings (bfs prints them) and without the lines the earlier tool
# prints on the program's stdout ("CPU 01| <5> ...", "Run complete. ..."), to compare runs.
out_sum() { grep -v -i -e 'time' -e '^CPU [0-9]*|' -e '^Run complete' "$1" | md5sum | cut -c1-12; }

# run_tool ROW TOOL RUN: appends "row tool run time_s rss_kb handled recorded status outsum"
# perf: runstat runs under perf, so that the time is the program's and not perf's own start (a
# second, reading the kernel's symbols) or end; "handled" is then the page faults perf sampled (the
# kernel's own count, a read and then a write of a fresh page being two), "recorded" those it kept.
run_tool() {
	local row=$1 tool=$2 run=$3 dir=$TMP/$1-$2-$3 pre=() wrap=()
	row_cmd "$row"
	mkdir -p "$dir"
	case $tool in
	native) ;;
	earlier) pre=("$WORK/fltrace-earlier/fltrace" record -L="$L" -M=1000 --) ;;
	ours) pre=("$FLTRACE" record -L "$L" -M 1000 -o "$dir" --) ;;
	perf) wrap=(perf record -q --no-buildid -o "$dir/perf.data" -e page-faults -c 1 --call-graph "dwarf,2048" --) ;;
	esac
	rm -f "$TMP/rs"
	(cd "$dir" && env "${ENVS[@]}" "${wrap[@]}" "$RUNSTAT" "$TMP/rs" timeout -k 5 "$TIMEOUT" "${pre[@]}" "${CMD[@]}" \
		> "$dir/stdout" 2> "$dir/stderr" < /dev/null)
	local t=0 rss=0 code=999 handled=0 recorded=0 status=ok
	read -r t rss code _ < "$TMP/rs"
	[ "$code" = 0 ] || status=exit$code
	case $tool in
	earlier) # its stats lines carry faults:N; every trace line after the header is one fault
		handled=$(for f in "$dir"/fltrace-data-stats-*.out; do tail -n 1 "$f"; echo; done |
			grep -o '[ ,]faults:[0-9]*' | awk -F: '{ s += $2 } END { print s + 0 }')
		recorded=$(cat "$dir"/fltrace-data-faults-*.out 2> /dev/null | grep -vc '^tstamp') ;;
	ours)
		handled=$(for f in "$dir"/fltrace-data-stats-*.out; do tail -n 1 "$f"; echo; done |
			grep -o '[ ,]faults:[0-9]*' | awk -F: '{ s += $2 } END { print s + 0 }')
		recorded=$(sed -n 's/^fltrace: recorded \([0-9]*\) faults.*/\1/p' "$dir/stderr" | tail -n 1) ;;
	perf) # its stats: "page-faults stats:" then SAMPLE events (kept) and LOST_SAMPLES events (dropped)
		local kept lost
		read -r kept lost < <(perf report -i "$dir/perf.data" --stats 2> /dev/null | awk '
			/page-faults stats/ { p = 1 } p && /LOST_SAMPLES events/ { l = $3; next }
			p && /SAMPLE events/ { k = $3 } END { print k + 0, l + 0 }')
		recorded=$kept handled=$((kept + lost)) ;;
	esac
	local sum; sum=$(out_sum "$dir/stdout")
	if [ "$tool" != native ] && [ -n "${NATIVE_SUM[$row]:-}" ] && [ "$sum" != "${NATIVE_SUM[$row]}" ] && [ $status = ok ]; then
		status=output-differs
	fi
	[ "$tool" = native ] && [ $status = ok ] && NATIVE_SUM[$row]=$sum
	echo "$row $tool $run $t $rss ${handled:-0} ${recorded:-0} $status $sum" >> "$TMP/runs"
	rm -rf "$dir"
}

med() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.6g\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { awk -v r="$1" -v t="$2" -v n="$3" '$1 == r && $2 == t && $8 == "ok" { print $n }' "$TMP/runs"; }
bad() { awk -v r="$1" -v t="$2" '$1 == r && $2 == t && $8 != "ok" { printf "%s:%s ", t, $8 }' "$TMP/runs"; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'; }
mb() { awk -v k="${1:-0}" 'BEGIN { printf "%.0f", k / 1024 }'; }

# nat/earl: native's own time over the earlier tool's, the least ours/earl any tracer can reach in
# that run (none runs the program faster than it runs untraced).
table_header() {
	printf '%-16s %9s %9s %9s %8s %8s %10s %10s %10s %10s %9s %9s' row native_s earlier_s ours_s \
		ours/earl nat/earl earl_faults earl_rec ours_faults ours_rec earl_rssMB ours_rssMB
	[ "$PERF" = 1 ] && printf ' %9s %8s %10s %10s' perf_s perf/earl perf_faults perf_rec
	printf ' %s\n' problems
}

table_row() {
	local row=$1 n e o
	n=$(col "$row" native 4 | med) e=$(col "$row" earlier 4 | med) o=$(col "$row" ours 4 | med)
	printf '%-16s %9s %9s %9s %8s %8s %10s %10s %10s %10s %9s %9s' "$row" "${n:--}" "${e:--}" "${o:--}" \
		"$(ratio "$o" "$e")" "$(ratio "$n" "$e")" \
		"$(col "$row" earlier 6 | med)" "$(col "$row" earlier 7 | med)" \
		"$(col "$row" ours 6 | med)" "$(col "$row" ours 7 | med)" \
		"$(mb "$(col "$row" earlier 5 | med)")" "$(mb "$(col "$row" ours 5 | med)")"
	if [ "$PERF" = 1 ]; then
		local p; p=$(col "$row" perf 4 | med)
		printf ' %9s %8s %10s %10s' "${p:--}" "$(ratio "$p" "$e")" \
			"$(col "$row" perf 6 | med)" "$(col "$row" perf 7 | med)"
	fi
	local t bad_runs=
	for t in "${TOOLS[@]}"; do bad_runs+=$(bad "$row" "$t"); done
	printf ' %s\n' "$bad_runs"
}

main() {
	check_sources
	mkdir -p "$WORK"
	build_earlier || exit 1
	build_gapbs || exit 1
	write_python
	local rows=("${ALL_ROWS[@]}")
	[ -n "${ANCHOR_ONLY:-}" ] && read -r -a rows <<< "$ANCHOR_ONLY"
	TMP=$(mktemp -d /tmp/fltrace-anchor.XXXXXX)
	trap 'rm -rf "$TMP"' EXIT
	declare -gA NATIVE_SUM
	local row run tool
	for row in "${rows[@]}"; do
		row_cmd "$row"
		for run in $(seq 1 "$RUNS"); do
			for tool in "${TOOLS[@]}"; do # interleaved: drift in the machine's load hits them all
				[ "$row" = startup ] && [ $tool = native ] && continue
				say "bench-anchor: $row $tool run $run/$RUNS"
				run_tool "$row" $tool "$run"
			done
		done
	done
	local out=$ROOT/test/bench/results/anchor-$(date -u +%Y%m%d-%H%M).txt
	mkdir -p "$(dirname "$out")"
	{
		echo "bench-anchor $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, medians of $RUNS runs, -M 1000"
		table_header
		for row in "${rows[@]}"; do
			table_row "$row"
		done
	} | tee "$out"
	say "bench-anchor: table written to $out"
}

main "$@"
