#!/usr/bin/env bash
# make bench: runs every workload natively, under `fltrace record` (ample and quarter -L) and under
# `perf record`, interleaved; prints one table of medians and writes it to test/bench/results/.
#
# Environment: BENCH_RUNS (default 5; 3 with BENCH_QUICK=1), BENCH_QUICK=1 (smaller sizes),
# BENCH_ONLY="fillscan bfs floor" (a subset: workloads, `floor` for the userfaultfd floor alone,
# `report` for the speed of `fltrace report`, `remote` for far memory on a memcached server), BENCH_TIMEOUT (s per run, default 120),
# BENCH_RECORD_OPTS (extra `fltrace record` options, e.g. "--poll spin"), BENCH_BFS_SCALE (graph of
# 2^N vertices, default 19), FLTRACE_BUILD (build directory, default build), BENCH_POLICIES (eviction
# policies run at a quarter of the peak besides the default, default: every policy of the table;
# "" for none).
# Times are never pass/fail: the exit status is non-zero only if the bench itself could not run.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${FLTRACE_BUILD:-build}
B=$ROOT/$BUILD
FLTRACE=$B/bin/fltrace
BENCH_BIN=$B/bench
RESULTS=$ROOT/test/bench/results
QUICK=${BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then RUNS=${BENCH_RUNS:-3}; else RUNS=${BENCH_RUNS:-5}; fi
TIMEOUT=${BENCH_TIMEOUT:-120}
read -r -a RECORD_OPTS <<< "${BENCH_RECORD_OPTS:-}"
AMPLE_MB=4096 MAX_MB=8192
PERF=/usr/bin/perf
export LC_ALL=C # deterministic sort order and number formats, for every workload and for us

# Sizes: full (≈10 min on 2 vCPUs) and quick.
if [ "$QUICK" = 1 ]; then
	FS_MB=64 LC_MB=16 HC_HOT_MB=6 HC_COLD_MB=64 PY_N=100000 SQL_ROWS=100000 SORT_LINES=200000 BFS_SCALE=18 FLOOR_PAGES=1024 FLOOR_REPS=3 DESIGN_PAGES=2048
else
	# At a quarter of the peak every workload re-fetches most of its memory many times (measured
	# here: sort of 100 MB, 1.8M faults, 52 s per run; python with 1M keys, 0.94M faults, 42 s;
	# bfs at scale 20 (1M vertices), 0.44M faults, 34 s): these sizes keep each quarter run to
	# seconds and the whole bench under 10 minutes. BENCH_BFS_SCALE=20 runs the 1M-vertex graph.
	FS_MB=256 LC_MB=64 HC_HOT_MB=24 HC_COLD_MB=256 PY_N=100000 SQL_ROWS=400000 SORT_LINES=300000 BFS_SCALE=19 FLOOR_PAGES=4096 FLOOR_REPS=5 DESIGN_PAGES=8192
fi
BFS_SCALE=${BENCH_BFS_SCALE:-$BFS_SCALE}
# What can be run: the workloads, then the per-fault floor (uffd_floor.c: the figure the other
# costs are compared with) and the speed of `fltrace report` (from the largest trace of this run,
# and a synthetic one).
ALL_WORKLOADS=(startup fillscan fillscan-8t libcalls bfs bfs-2t hotcold python sqlite sort)
KNOWN=("${ALL_WORKLOADS[@]}" floor designs report remote)
SELECTED=("${KNOWN[@]}")
if [ -n "${BENCH_ONLY:-}" ]; then
	read -r -a SELECTED <<< "$BENCH_ONLY"
	for w in "${SELECTED[@]}"; do
		if [[ " ${KNOWN[*]} " != *" $w "* ]]; then
			printf "bench: unknown workload '%s' in BENCH_ONLY (known: %s)\n" "$w" "${KNOWN[*]}" >&2
			exit 2
		fi
	done
fi
selected() { [[ " ${SELECTED[*]} " == *" $1 "* ]]; }
WORKLOADS=()
for w in "${ALL_WORKLOADS[@]}"; do selected "$w" && WORKLOADS+=("$w"); done
# every policy of inc/fltrace/policies.h, the default first (its row is plain "quarter")
DEFAULT_POLICY=$(sed -n 's/^#define FLTRACE_POLICY_DEFAULT "\(.*\)"/\1/p' "$ROOT/inc/fltrace/policies.h")
ALL_POLICIES=$(sed -n 's/^[[:space:]]*X(\([a-z0-9_]*\),.*/\1/p' "$ROOT/inc/fltrace/policies.h" | tr '\n' ' ')
read -r -a POLICIES <<< "${BENCH_POLICIES-$ALL_POLICIES}"
QUARTER_MODES=(quarter)
for p in "${POLICIES[@]}"; do [ "$p" != "$DEFAULT_POLICY" ] && QUARTER_MODES+=("quarter-$p"); done

TMP=$(mktemp -d /tmp/fltrace-bench.XXXXXX)
cleanup() { rm -rf "$TMP"; }
trap cleanup EXIT
trap 'echo "bench: interrupted" >&2; exit 130' INT TERM
PROBLEMS=() # misbehaviour seen (timeouts, failures, changed output): printed at the end

say() { printf '%s\n' "$*" >&2; }

# ---------------------------------------------------------------------------------------------
# Build and inputs

build() {
	local cc=${CC:-cc} flags=(-std=gnu11 -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror
		-D_GNU_SOURCE -pthread -I"$ROOT/inc")
	if [ ! -x "$FLTRACE" ] || [ ! -f "$B/lib/fltrace/libfltrace.so" ] || [ ! -x "$B/progs/fillscan" ]; then
		say "bench: $FLTRACE, its preload library or $B/progs is missing; run 'make' first"
		exit 1
	fi
	mkdir -p "$BENCH_BIN"
	local p
	for p in runstat bfs uffd_floor serve_designs; do
		local src=$ROOT/test/bench/$p.c out=$BENCH_BIN/$p libs=()
		[ "$p" = uffd_floor ] && libs=(-lunwind)
		if [ ! -x "$out" ] || [ "$src" -nt "$out" ]; then
			"$cc" "${flags[@]}" -o "$out" "$src" "${libs[@]}" || exit 1
		fi
	done
	# report_bench.sh's synthetic trace comes from the report unit test's generator
	make -s -C "$ROOT" BUILD="$BUILD" "$BUILD/test/unit/test_report" > /dev/null || say "bench: test_report not built"
}

make_inputs() {
	head -c $((LC_MB << 20)) /dev/urandom > "$TMP/libcalls.bin"
	cat > "$TMP/dict.py" <<- 'EOF'
	import hashlib, sys
	n = int(sys.argv[1])
	d = {i: "v%09d" % (i * 7919 % n) for i in range(n)}
	l = sorted(d.values())
	h = hashlib.sha256()
	for s in l:
	    h.update(s.encode())
	print("python dict", len(d), h.hexdigest())
	EOF
	cat > "$TMP/table.sql" <<- EOF
	CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT);
	WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < $SQL_ROWS)
	  INSERT INTO t SELECT x, (x * 2654435761) % 1000003, printf('%064d', x * 7919) FROM c;
	CREATE INDEX tk ON t(k);
	SELECT count(*), sum(k), max(v) FROM t WHERE k % 7 = 3;
	SELECT k % 100 AS b, count(*), sum(id) FROM t GROUP BY b ORDER BY b LIMIT 3;
	SELECT count(*) FROM t a JOIN t b ON a.k = b.id WHERE a.id % 10 = 0;
	EOF
	# ~40-byte lines (Park-Miller generator: exact in awk's doubles), ~100 MB in the full size
	awk -v n="$SORT_LINES" 'BEGIN { x = 12345; for (i = 0; i < n; i++) {
		x = (x * 16807) % 2147483647; printf "%010d %028d\n", x, i } }' > "$TMP/sort.in"
}

# workload_cmd NAME: sets CMD (the command line) and EXTRA_OUT (a file the command writes that is
# part of its output, or "")
workload_cmd() {
	EXTRA_OUT=
	case $1 in
	startup) CMD=(/bin/true) ;;
	fillscan) CMD=("$B/progs/fillscan" "$FS_MB" 2 1) ;;
	fillscan-8t) CMD=("$B/progs/fillscan" "$FS_MB" 2 8) ;;
	# faults inside system calls libc makes (an fread straight into fresh memory): remote unwinds
	libcalls) CMD=("$B/progs/libcalls-O2" "$TMP/libcalls.bin" $((LC_MB << 20))) ;;
	bfs) CMD=("$BENCH_BIN/bfs" "$BFS_SCALE" 8 1) ;;
	# the same search on 2 threads, a level at a time: its output must equal bfs's
	bfs-2t) CMD=("$BENCH_BIN/bfs" "$BFS_SCALE" 8 1 2) ;;
	# irregular reuse: a hot subset touched between steps of a cold stream (recency pays here)
	hotcold) CMD=("$B/progs/hotcold" "$HC_HOT_MB" "$HC_COLD_MB") ;;
	python) CMD=(/usr/bin/python3 "$TMP/dict.py" "$PY_N") ;;
	sqlite) CMD=(/usr/bin/sqlite3 :memory: ".read $TMP/table.sql") ;;
	sort) CMD=(/usr/bin/sort -o "$TMP/sort.out" "$TMP/sort.in"); EXTRA_OUT=$TMP/sort.out ;;
	*) say "bench: unknown workload '$1' (known: ${ALL_WORKLOADS[*]})"
	   exit 1 ;;
	esac
}

# ---------------------------------------------------------------------------------------------
# Measuring one run

# stats_get DIR KEY sum|max: KEY of the last stats line of every process traced into DIR
stats_get() {
	local f
	for f in "$1"/fltrace-data-stats-*.out; do [ -f "$f" ] && tail -n 1 "$f" && echo; done |
		awk -F, -v k="$2" -v op="$3" '
		{ for (i = 2; i <= NF; i++) { split($i, kv, ":"); if (kv[1] == k) {
			v = kv[2] + 0; if (op == "max") { if (v > r) r = v } else r += v } } }
		END { printf "%.0f\n", r + 0 }'
}

# The runtime's own time counters (stats t_*_ns, rt.h struct rt_time_stats) of one quarter run:
# one line to $TMP/breakdown: wl faults evict_ops evict_pages, then each counter.
BREAKDOWN_KEYS=(t_serve_ns t_procfs_ns t_lockwait_ns t_soft_ns t_evict_ns t_copyin_ns t_signal_ns
	t_unwind_ns t_record_ns t_sigstack_ns t_sigwait_ns t_sigrecord_ns t_idle_ns handler_sleeps
	t_cpu_ns faults_backstop faults_routed)
breakdown_add() { # WL DIR CPU_S (the run's user + system time, fltrace's threads included)
	local wl=$1 dir=$2 line k
	line="$wl $(stats_get "$dir" faults sum) $(stats_get "$dir" evict_ops sum) $(stats_get "$dir" evict_pages_done sum)"
	for k in "${BREAKDOWN_KEYS[@]}"; do line="$line $(stats_get "$dir" "$k" sum)"; done
	echo "$line $3" >> "$TMP/breakdown"
}

# print_breakdown: per quarter workload, medians over its runs: µs per fault of each part of the
# fault path, eviction per page and per round, and the handler's sleeps per fault.
print_breakdown() {
	[ -s "$TMP/breakdown" ] || return 0
	echo
	echo "where a fault's time goes at a quarter of the peak (runtime counters, µs per recorded fault, medians):"
	printf '%-10s %8s %6s %6s %6s %6s %6s %6s %6s %6s %6s | %6s %6s %6s | %7s %7s %6s %6s | %6s %6s %5s %5s\n' workload faults \
		serve procfs lockw soft evict copyin signal unwind record sigstk sigwt sigrec "ev/page" "ev/round" idle "sleeps" \
		"flcpu" "prgcpu" "bs%" "rt%"
	local wl
	for wl in $(awk '{ print $1 }' "$TMP/breakdown" | awk '!seen[$0]++'); do
		awk -v w="$wl" '$1 == w' "$TMP/breakdown" | awk '
		function med(col,   n, i, j, t, a) { n = 0; for (i = 1; i <= NR; i++) a[++n] = v[i, col]
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
		{ for (i = 2; i <= NF; i++) v[NR, i] = $i; f = $2; per[NR] = 1
		  # per fault (µs): serve..idle are columns 5..17; ev/page and ev/round from t_evict_ns
		  for (i = 5; i <= 17; i++) v[NR, "pf" i] = f > 0 ? $i / f / 1000 : 0
		  v[NR, "evp"] = $4 > 0 ? $9 / $4 / 1000 : 0; v[NR, "evr"] = $3 > 0 ? $9 / $3 / 1000 : 0
		  v[NR, "slp"] = f > 0 ? $18 / f : 0
		  # fltrace CPU (t_cpu_ns: its handler threads, polling included) and the rest of the
		  # CPU of the run (the program, with its stack-signal handlers), per fault; shares of
		  # faults the backstop served and faults routed to the poller of another CPU
		  v[NR, "fc"] = f > 0 ? $19 / f / 1000 : 0; v[NR, "pc"] = f > 0 ? ($22 * 1e9 - $19) / f / 1000 : 0
		  v[NR, "bs"] = f > 0 ? 100 * $20 / f : 0; v[NR, "rt"] = f > 0 ? 100 * $21 / f : 0 }
		END { printf "%-10s %8d", $1, med(2)
		  for (i = 5; i <= 16; i++) { if (i == 14) printf " |"; printf " %6.2f", med("pf" i) }
		  printf " | %7.2f %7.1f %6.2f %6.3f", med("evp"), med("evr"), med("pf17"), med("slp")
		  printf " | %6.2f %6.2f %5.1f %5.1f\n", med("fc"), med("pc"), med("bs"), med("rt") }'
	done
	cat <<- 'EOF'
	  serve: a handler thread from a fault's message to its thread's wake-up, of which procfs (what the
	  thread does, /proc/<tid>/syscall), lockw (waiting for rt.lock), soft (probation pages put back),
	  evict (eviction rounds on the fault path), copyin (UFFDIO_COPY of the page), signal (tgkill of the
	  stack signal: on a busy vCPU it includes the woken thread running first), unwind and record (a
	  handler unwinding a thread in a system call, writing its record). sigstk, sigwt, sigrec: on the
	  faulting thread, in the stack signal's handler: its own unwind, waiting for the page, its record.
	  ev/page, ev/round: µs per page evicted and per eviction round. idle: handler time in poll per
	  fault; sleeps: polls that slept, per fault. Wall-clock times: on a loaded machine a preempted
	  thread's wait counts in the part it was in. flcpu: CPU time of fltrace's handler threads per
	  fault (user + system, polling included: with --poll percpu, time no program thread wanted);
	  prgcpu: the rest of the run's CPU time per fault (the program, its faults in the kernel and
	  its stack-signal handlers). bs%: faults the backstop served (every CPU was busy); rt%: faults
	  routed to the poller of another CPU.
	EOF
}

# print_designs: serve_designs' table, µs per page all in and over the native row of its case.
print_designs() {
	[ -s "$TMP/designs" ] || return 0
	echo
	echo "serving designs side by side (serve_designs.c: one byte and a little compute per fresh page, served by UFFDIO_COPY; µs per page, median and min-max; +nat: over native):"
	awk -F, '$2 == "native" { nat[$3] = $4 } { rows[NR] = $0 }
	END { printf "%-13s %-9s %8s %17s %8s\n", "design", "case", "us/page", "min-max", "+nat"
	  for (i = 1; i <= NR; i++) { split(rows[i], f, ",")
	    printf "%-13s %-9s %8.2f %8.2f-%-8.2f %8.2f\n", f[2], f[3], f[4], f[5], f[6], f[4] - nat[f[3]] } }' "$TMP/designs"
	cat <<- 'EOF'
	  block, adaptive: one normal handler thread (asleep / polling 100 us first); idle-any, idle-routed:
	  a SCHED_IDLE poller per CPU, serving what it reads / handing each fault to its thread's CPU;
	  idle-tick: idle-routed with a normal backstop looking every 1 ms (--poll percpu's design);
	  idle-woken: with a backstop woken by every fault instead; watch-server: a SCHED_IDLE watcher
	  waking a normal server on its CPU. busy1 / busyall: a busy loop on the last CPU / every CPU.
	EOF
}

# print_policy_pairs: each policy at a quarter against fifo, run by run. A run of every mode is
# taken in turn (run_one's loop), so the r-th runs of two policies saw the same moment of a shared
# machine: the ratio of the pair cancels most of its drift, which the ratio of medians does not.
print_policy_pairs() {
	local fifo_mode=quarter-fifo wl m
	[ "$DEFAULT_POLICY" = fifo ] && fifo_mode=quarter
	[ ${#QUARTER_MODES[@]} -gt 1 ] || return 0
	echo
	echo "policies against fifo at a quarter of the peak, run by run (ratio of the r-th runs; median, min-max, pairs where the policy was faster):"
	printf '%-10s %-8s %5s %9s %7s  %-22s %-22s\n' workload policy pairs "faults÷f" soft "time÷fifo" "cpu÷fifo"
	for wl in "${WORKLOADS[@]}"; do
		for m in "${QUARTER_MODES[@]}"; do
			[ "$m" = "$fifo_mode" ] && continue
			local pol=${m#quarter-}; [ "$pol" = quarter ] && pol=$DEFAULT_POLICY
			awk -v w="$wl" -v m="$m" -v f="$fifo_mode" -v pol="$pol" '
			function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
				return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
			function show(a, n, faster) { return sprintf("%.3f %.2f-%.2f %d/%d", med(a, n), a[1], a[n], faster, n) }
			$1 == w && $3 > 0 && $12 == "ok" && ($2 == m || $2 == f) { t[$2, $3] = $4; c[$2, $3] = $16; fl[$2, $3] = $6; so[$2, $3] = $15; runs[$3] = 1 }
			END { n = 0; ft = fc = 0
			  for (r in runs) if ((m, r) in t && (f, r) in t && t[f, r] > 0) {
				n++; rt[n] = t[m, r] / t[f, r]; ft += rt[n] < 1
				rc[n] = c[f, r] > 0 ? c[m, r] / c[f, r] : 0; fc += rc[n] < 1
				rf[n] = fl[f, r] > 0 ? fl[m, r] / fl[f, r] : 0; s[n] = so[m, r] }
			  if (!n) exit
			  printf "%-10s %-8s %5d %9.3f %7d  %-22s %-22s\n", w, pol, n, med(rf, n), med(s, n), show(rt, n, ft), show(rc, n, fc) }' "$TMP/runs"
		done
	done
	echo "  time: wall clock of the whole run; cpu: user + system time of the traced process, its handler threads included."
}

# run_one WL MODE RUN: runs workload WL in MODE (native ample quarter perf perfstat) and appends
# one line to $TMP/runs: wl mode run time_s rss_kb faults zero refetch trace_bytes nostack hwm
# status outsum L_MB soft cpu_s
run_one() {
	local wl=$1 mode=$2 run=$3 dir=$TMP/trace/$1-$2 pre=() lmb=- status
	workload_cmd "$wl"
	rm -rf "$dir"; mkdir -p "$dir"
	case $mode in
	native) ;;
	ample) lmb=$AMPLE_MB ;;
	nostack) lmb=$AMPLE_MB ;; # -S 1: faults served, (almost) none recorded
	quarter) lmb=${QUARTER_MB[$wl]} ;;
	quarter-*) lmb=${QUARTER_MB[$wl]} ;; # another policy than the default
	perf) pre=("$PERF" record -e page-faults -c 1 -g -o "$dir/perf.data" --) ;;
	perfstat) pre=("$PERF" stat -x, -e page-faults -o "$dir/perfstat.txt" --) ;;
	esac
	[ "$lmb" != - ] && pre=("$FLTRACE" record -L "$lmb" -M "$MAX_MB" "${RECORD_OPTS[@]}" -o "$dir" --)
	[ "$mode" = nostack ] && pre=("$FLTRACE" record -L "$lmb" -M "$MAX_MB" -S 1 "${RECORD_OPTS[@]}" -o "$dir" --)
	[ "${mode#quarter-}" != "$mode" ] && pre=("$FLTRACE" record -L "$lmb" -M "$MAX_MB" --policy "${mode#quarter-}" \
		"${RECORD_OPTS[@]}" -o "$dir" --)
	rm -f "$TMP/rs"
	"$BENCH_BIN/runstat" "$TMP/rs" timeout -k 5 "$TIMEOUT" "${pre[@]}" "${CMD[@]}" \
		> "$dir/stdout" 2> "$dir/stderr" < /dev/null
	local t rss code cpu
	read -r t rss code cpu < "$TMP/rs" || { t=0 rss=0 code=999 cpu=0; }
	status=ok
	if [ "$code" = 124 ] || [ "$code" = 137 ]; then
		status=timeout
		PROBLEMS+=("$wl/$mode run $run: timed out after ${TIMEOUT}s: ${pre[*]} ${CMD[*]}")
	elif [ "$code" != 0 ]; then
		status=exit$code
		PROBLEMS+=("$wl/$mode run $run: exit $code: ${pre[*]} ${CMD[*]}; stderr: $(tail -n 2 "$dir/stderr" | tr '\n' ' ')")
	fi
	local outsum
	outsum=$(cat "$dir/stdout" ${EXTRA_OUT:+"$EXTRA_OUT"} | md5sum | cut -c1-12)
	[ -n "$EXTRA_OUT" ] && rm -f "$EXTRA_OUT"
	if [ "$mode" != native ] && [ "$status" = ok ] && [ -n "${OUTSUM[$wl]:-}" ] && [ "$outsum" != "${OUTSUM[$wl]}" ]; then
		status=output-differs
		PROBLEMS+=("$wl/$mode run $run: output differs from the native run: ${pre[*]} ${CMD[*]}")
	fi
	[ "$mode" = native ] && [ "$status" = ok ] && OUTSUM[$wl]=$outsum
	local faults=0 zero=0 refetch=0 tbytes=0 nostack=0 hwm=0 soft=0
	case $mode in
	ample | quarter | quarter-* | nostack)
		soft=$(stats_get "$dir" faults_soft sum)
		faults=$(stats_get "$dir" faults sum) zero=$(stats_get "$dir" faults_zp sum)
		refetch=$(stats_get "$dir" faults_refetch sum) tbytes=$(stats_get "$dir" trace_bytes sum)
		nostack=$(stats_get "$dir" faults_nostack sum) hwm=$(stats_get "$dir" vm_hwm max)
		PEAK=$(stats_get "$dir" resident_peak_bytes max)
		[ "$mode" = quarter ] && [ "$run" -gt 0 ] && [ "$status" = ok ] && breakdown_add "$wl" "$dir" "${cpu:-0}" ;;
	perf)
		faults=$(sed -n 's/.*(\([0-9]*\) samples).*/\1/p' "$dir/stderr" | tail -n 1)
		tbytes=$(stat -c %s "$dir/perf.data" 2> /dev/null || echo 0)
		rm -f "$dir/perf.data" ;;
	perfstat)
		faults=$(awk -F, '$3 == "page-faults" { print $1 }' "$dir/perfstat.txt") ;;
	esac
	echo "$wl $mode $run $t $rss ${faults:-0} $zero $refetch $tbytes $nostack $hwm $status $outsum $lmb $soft ${cpu:-0}" >> "$TMP/runs"
}

# ---------------------------------------------------------------------------------------------
# Summaries

# col WL MODE N: the Nth field (1-based, see run_one) of every successful run of WL in MODE
# (run 0 is the warm-up: it does not count, except for perf stat, which runs only then)
col() { awk -v w="$1" -v m="$2" -v n="$3" '$1 == w && $2 == m && $12 == "ok" && ($3 > 0 || m == "perfstat") { print $n }' "$TMP/runs"; }
# med / lo / hi: median, minimum, maximum of numbers on stdin ("" if none)
med() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.6g\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
lo() { sort -g | head -n 1; }
hi() { sort -g | tail -n 1; }
fmt() { [ -n "$2" ] && printf "$1" "$2" || printf -- -; } # fmt FORMAT VALUE: "-" for no value
calc() { awk "BEGIN { $1 }" 2> /dev/null; }              # calc 'if (...) printf ...'

# leaf_share DIR: % of faults whose innermost frame resolves to a source line (report --by line)
leaf_share() {
	"$FLTRACE" report -i "$1" --by line > /dev/null 2>&1 || return
	cat "$1"/fltrace-data-report-*.out 2> /dev/null | awk -F, '
		$1 == "ips" { for (i = 1; i <= NF; i++) { if ($i == "count") c = i; if ($i == "code") k = i }; next }
		c && k { n = $c + 0; all += n; split($k, f, "<//>"); if (f[1] !~ /^\?\?/) ok += n }
		END { if (all) printf "%.1f\n", 100 * ok / all }'
}

ROWS=() # CSV rows of the table, in order
HEADER="workload,mode,L_MB,runs,time_s,time_min_s,time_max_s,x_native,faults,faults_zero,faults_refetch,us_per_fault,trace_bytes_per_fault,peak_rss_mb,perfstat_faults,zero_vs_perfstat_pct,leaf_src_pct,faults_soft,x_floor,note"

summarize() { # WL: appends its rows to ROWS
	local wl=$1 mode nat
	nat=$(col "$wl" native 4 | med)
	local pstat; pstat=$(col "$wl" perfstat 6 | med)
	for mode in native ample nostack "${QUARTER_MODES[@]}" perf; do
		local n t tmin tmax x faults zero refetch usf bpf rss pct leaf note lmb soft= xfl=
		n=$(col "$wl" "$mode" 4 | wc -l)
		lmb=$(awk -v w="$wl" -v m="$mode" '$1 == w && $2 == m && $3 > 0 { l = $14 } END { print l }' "$TMP/runs")
		[ -z "$lmb" ] && continue
		t=$(col "$wl" "$mode" 4 | med) tmin=$(col "$wl" "$mode" 4 | lo) tmax=$(col "$wl" "$mode" 4 | hi)
		faults=$(col "$wl" "$mode" 6 | med) zero=$(col "$wl" "$mode" 7 | med)
		refetch=$(col "$wl" "$mode" 8 | med)
		x=$(calc "if ($nat + 0 > 0 && \"$t\" != \"\") printf \"%.2f\", $t / $nat")
		usf= bpf= rss= pct= leaf= note=
		case $mode in
		native)
			faults=$pstat zero= refetch=
			rss=$(col "$wl" native 5 | med); rss=$(calc "printf \"%.0f\", ${rss:-0} / 1024")
			note="faults: perf stat page-faults (all kinds)" ;;
		ample | nostack | quarter | quarter-* | perf)
			usf=$(calc "if ($faults + 0 > 0 && \"$t\" != \"\") printf \"%.1f\", ($t - $nat) * 1e6 / $faults")
			bpf=$(calc "if ($faults + 0 > 0) printf \"%.0f\", $(col "$wl" "$mode" 9 | med) / $faults")
			;;&
		nostack)
			note="served, not recorded (-S 1): the cost without signal, stack and trace" ;;
		ample | quarter | quarter-*)
			rss=$(col "$wl" "$mode" 11 | med); rss=$(calc "printf \"%.0f\", ${rss:-0} / 1048576")
			local lost; lost=$(col "$wl" "$mode" 10 | hi)
			note="zero $zero refetch $refetch"
			[ "${lost:-0}" != 0 ] && note="$note; nostack up to $lost" ;;&
		quarter | quarter-*)
			# all-in per recorded fault (soft faults and eviction included), against the
			# handler-same-core floor of this run
			soft=$(col "$wl" "$mode" 15 | med)
			xfl=$(calc "if (\"$usf\" != \"\" && $FLOOR_H + 0 > 0) printf \"%.2f\", $usf / $FLOOR_H")
			local pol=${mode#quarter-}; [ "$pol" = quarter ] && pol=$DEFAULT_POLICY
			note="policy $pol; $note; soft $soft" ;;&
		ample)
			# first touches with their stacks, against the same floor
			xfl=$(calc "if (\"$usf\" != \"\" && $FLOOR_H + 0 > 0) printf \"%.2f\", $usf / $FLOOR_H")
			pct=$(calc "if ($pstat + 0 > 0) printf \"%.1f\", 100 * $zero / $pstat")
			[ -n "${LEAF[$wl]:-}" ] && leaf=${LEAF[$wl]}
			[ -n "$pct" ] && note="$note; zero = $pct% of perf stat"
			[ -n "$leaf" ] && note="$note; leaf on a source line: $leaf%" ;;
		perf)
			zero= refetch= note="faults: samples written"
			# perf record has a fixed start-up and wind-down of about a second (it reads kallsyms
			# and waits in a side-band thread): the startup row measures it, and the cost per
			# fault is also given without it
			local ps ns net
			ps=$(col startup perf 4 | med) ns=$(col startup native 4 | med)
			net=$(calc "if (\"$ps\" != \"\" && $faults + 0 > 0 && \"$t\" != \"\") printf \"%.1f\", ($t - $nat - ($ps - $ns)) * 1e6 / $faults")
			if [ -n "$net" ] && [ "$wl" != startup ]; then
				case $net in
				-*) note="$note; without perf's fixed start-up: below this bench's resolution" ;;
				*) note="$note; $net us/flt without perf's fixed start-up" ;;
				esac
			fi ;;
		esac
		local bad; bad=$(awk -v w="$wl" -v m="$mode" '$1 == w && $2 == m && $12 != "ok" { print $12 }' "$TMP/runs" | sort | uniq -c | awk '{ printf "%s%s x%s", s, $2, $1; s = ", " }')
		[ -n "$bad" ] && note="$note; FAILED RUNS: $bad"
		[ "$n" = 0 ] && t= tmin= tmax= x=
		ROWS+=("$wl,$mode,$lmb,$n,$t,$tmin,$tmax,$x,$faults,$zero,$refetch,$usf,$bpf,$rss,$pstat,$pct,$leaf,$soft,$xfl,\"$note\"")
	done
}

print_table() { # the CSV rows as an aligned table
	printf '%-12s %-26s %6s %8s %-17s %6s %8s %7s %6s %5s %6s  %s\n' workload mode "-L MB" "time s" "min-max" \
		"x nat" faults "us/flt" "x flr" "B/flt" "RSS MB" notes
	local r
	for r in "${ROWS[@]}"; do
		local note=${r#*\"} head=${r%%,\"*}
		note=${note%\"}
		IFS=, read -r wl mode lmb n t tmin tmax x faults zero refetch usf bpf rss pstat pct leaf soft xfl <<< "$head"
		local mm=-
		[ -n "$tmin" ] && mm=$(printf '%.3g-%.3g' "$tmin" "$tmax")
		printf '%-12s %-26s %6s %8s %-17s %6s %8s %7s %6s %5s %6s  %s\n' "$wl" "$mode" "$lmb" \
			"$(fmt %.3f "$t")" "$mm" "$(fmt %s "$x")" "$(fmt %s "$faults")" "$(fmt %s "$usf")" \
			"$(fmt %s "$xfl")" "$(fmt %s "$bpf")" "$(fmt %s "$rss")" "$note"
	done
}

# ---------------------------------------------------------------------------------------------
# Main

START=$(date +%s)
build
[ ${#WORKLOADS[@]} -gt 0 ] && make_inputs
declare -A QUARTER_MB OUTSUM LEAF
for f in runs floor designs breakdown; do : > "$TMP/$f"; done
say "bench: $RUNS runs per mode, quick=$QUICK, running: ${SELECTED[*]}; $(nproc) CPUs, Linux $(uname -r)"

for wl in "${WORKLOADS[@]}"; do
	say "bench: $wl: warm-up (native, ample for the peak, perf stat)"
	run_one "$wl" native 0
	PEAK=0
	run_one "$wl" ample 0
	if [ "${PEAK:-0}" -gt 0 ]; then
		QUARTER_MB[$wl]=$(( (PEAK / 4 + 1048575) / 1048576 ))
	fi
	run_one "$wl" perfstat 0
	for ((r = 1; r <= RUNS; r++)); do
		say "bench: $wl: run $r/$RUNS"
		run_one "$wl" native "$r"
		run_one "$wl" ample "$r"
		# the same faults served without stacks or trace: what recording costs on top
		[ "$wl" = fillscan ] && run_one "$wl" nostack "$r"
		if [ -n "${QUARTER_MB[$wl]:-}" ]; then
			for m in "${QUARTER_MODES[@]}"; do run_one "$wl" "$m" "$r"; done
		fi
		run_one "$wl" perf "$r"
	done
	# accuracy of the stacks on our own programs, from the last ample trace
	case $wl in fillscan | bfs) LEAF[$wl]=$(leaf_share "$TMP/trace/$wl-ample") ;; esac
done

if selected floor; then
	say "bench: per-fault floor (uffd_floor $FLOOR_PAGES pages x $FLOOR_REPS)"
	"$BENCH_BIN/uffd_floor" "$FLOOR_PAGES" "$FLOOR_REPS" > "$TMP/floor" || PROBLEMS+=("uffd_floor failed")
fi
if selected designs; then
	say "bench: serving designs side by side (serve_designs $DESIGN_PAGES pages x $FLOOR_REPS)"
	"$BENCH_BIN/serve_designs" "$DESIGN_PAGES" "$FLOOR_REPS" > "$TMP/designs" || PROBLEMS+=("serve_designs failed")
fi

: > "$TMP/remote"
if selected remote; then
	say "bench: remote far memory (memcached on loopback; test/bench/remote.sh)"
	ROOT=$ROOT B=$B FLTRACE=$FLTRACE BENCH_BIN=$BENCH_BIN RUNS=$RUNS TMP=$TMP FS_MB=$FS_MB TIMEOUT=$TIMEOUT \
		bash "$ROOT/test/bench/remote.sh" > "$TMP/remote" || PROBLEMS+=("remote.sh failed")
fi

REPORT_LINES=()
big= bigf=0 # the trace directory (last run of each workload and mode) with most faults
selected report && say "bench: report speed"
selected report && for d in "$TMP"/trace/*-ample "$TMP"/trace/*-quarter; do
	[ -d "$d" ] || continue
	f=$(stats_get "$d" faults sum)
	[ "$f" -gt "$bigf" ] && big=$d bigf=$f
done
if [ -n "$big" ]; then
	rm -f "$big"/fltrace-data-report-*.out
	t0=$EPOCHREALTIME
	if timeout -k 5 "$TIMEOUT" "$FLTRACE" report -i "$big" > /dev/null 2> "$TMP/report.err"; then
		t1=$EPOCHREALTIME
		REPORT_LINES+=("report-largest (${big##*/}): $bigf faults in $(calc "printf \"%.2f\", $t1 - $t0") s = $(calc "printf \"%.0f\", $bigf / ($t1 - $t0)") faults/s")
	else
		PROBLEMS+=("fltrace report -i <trace of ${big##*/}> failed: $(head -n 2 "$TMP/report.err")")
	fi
fi
if selected report; then
	while IFS= read -r line; do REPORT_LINES+=("$line"); done < <(bash "$ROOT/test/bench/report_bench.sh" "$BUILD" 2>&1)
fi

FLOOR_H=$(awk -F, '$2 == "handler-same-core" { print $3 }' "$TMP/floor")
for wl in "${WORKLOADS[@]}"; do summarize "$wl"; done
while IFS=, read -r _ name m lo_ hi_; do
	unit="µs per fault"
	case $name in evict-* | slot-*) unit="µs per page" ;; esac
	ROWS+=("floor,$name,,$FLOOR_REPS,,,,,,,,$m,,,,,,,,\"$unit, min-max $lo_-$hi_\"")
done < "$TMP/floor"
while IFS=, read -r _ name kase m lo_ hi_; do
	ROWS+=("designs,$name $kase,,$FLOOR_REPS,,,,,,,,$m,,,,,,,,\"µs per page all in, min-max $lo_-$hi_\"")
done < "$TMP/designs"
for line in "${REPORT_LINES[@]}"; do
	# "report-NAME: N faults in T s = F faults/s"
	name=${line%%:*} n=$(sed -n 's/.*: \([0-9]*\) faults in \([0-9.]*\) s = \([0-9]*\) faults\/s.*/\1 \2 \3/p' <<< "$line")
	if [ -n "$n" ]; then
		set -- $n
		ROWS+=("report,${name#report-},,1,$2,,,,$1,,,,,,,,,,,\"$3 faults/s\"")
	else
		ROWS+=("report,${name#report-},,0,,,,,,,,,,,,,,,,\"${line#*: }\"")
	fi
done

DATE=$(date +%F)
mkdir -p "$RESULTS"
# A subset (BENCH_ONLY) is written beside the full table, never over it.
LATEST=latest
[ -n "${BENCH_ONLY:-}" ] && LATEST=only-$(IFS=-; echo "${SELECTED[*]}")
# Runs with extra record options are tables of their own: "--prefetch readahead" -> "-prefetch-readahead"
[ -n "${BENCH_RECORD_OPTS:-}" ] && LATEST=$LATEST$(tr -cs 'A-Za-z0-9' - <<< " ${BENCH_RECORD_OPTS}" | sed 's/-*$//')
{ echo "$HEADER"; printf '%s\n' "${ROWS[@]}"; } > "$RESULTS/$LATEST.csv"
[ -z "${BENCH_ONLY:-}" ] && cp "$RESULTS/latest.csv" "$RESULTS/$DATE.csv"
{ echo "workload mode run time_s rss_kb faults zero refetch trace_bytes nostack hwm status outsum L_MB soft cpu_s"
  cat "$TMP/runs"; } | tr ' ' , > "$RESULTS/$LATEST-runs.csv"

echo
echo "fltrace bench, $DATE, $(nproc) CPUs, Linux $(uname -r); median of $RUNS runs (quick=$QUICK); \
$(( $(date +%s) - START )) s in all${BENCH_RECORD_OPTS:+; record options: $BENCH_RECORD_OPTS}"
print_table
print_policy_pairs
print_breakdown
print_designs
echo
# the gap between fltrace and the floors, from the fill-and-scan rows
fs_a=$(printf '%s\n' "${ROWS[@]}" | awk -F, '$1 == "fillscan" && $2 == "ample" { print $12 }')
fs_q=$(printf '%s\n' "${ROWS[@]}" | awk -F, '$1 == "fillscan" && $2 == "quarter" { print $12 }')
fl_h=$(awk -F, '$2 == "handler-same-core" { print $3 }' "$TMP/floor")
fl_s=$(awk -F, '$2 == "signal+unwind-same-core" { print $3 }' "$TMP/floor")
fl_b=$(awk -F, '$2 == "sigbus+unwind-1-thread" { print $3 }' "$TMP/floor")
if [ -n "$fs_a" ] && [ -n "$fl_h" ]; then
	calc "printf \"gap: fillscan costs %s us/fault at ample -L and %s at quarter -L; floors: handler thread %s, + signal + unwind %s, SIGBUS in-thread %s us: fltrace = %.2fx the signal+unwind floor, which is itself %.2fx the handler floor\n\", \"$fs_a\", \"${fs_q:--}\", \"$fl_h\", \"$fl_s\", \"$fl_b\", $fs_a / ($fl_s + 0.000001), $fl_s / ($fl_h + 0.000001)"
fi
cat <<- 'EOF'

	How to read it: one row per workload and mode. native = the program alone; ample = `fltrace
	record` with -L larger than the program's peak (only first-touch faults); quarter = -L a quarter
	of the peak tracked resident memory of an ample run (evictions and re-fetches); perf = `perf record
	-e page-faults -c 1 -g` (it has a fixed start-up of about a second: see the startup row; its
	notes give its cost per fault without it). time s is the median wall time, min-max its range
	over the runs, x nat the ratio of medians to native. faults: fltrace's recorded faults (native: `perf stat -e
	page-faults`, every fault the kernel takes; perf: samples written). us/flt = (median time -
	native median) / faults: what one recorded fault costs the program. B/flt: trace (or perf.data)
	bytes per fault. x flr: us/flt over the handler-same-core floor of this run; at a quarter, the
	all-in cost of a fault (its share of evictions, soft faults and policy work included);
	quarter-<policy>: a quarter -L with that eviction policy (quarter: the default), soft = faults
	on pages on probation, served but not recorded. RSS MB: peak RSS (native: the process; fltrace: VmHWM, which includes the far
	store, emulated in the process). Accuracy: zero = first-touch faults on tracked memory at ample -L,
	as a share of all faults perf stat counts (perf also counts stack, library, file and page-table
	faults that fltrace does not track, so below 100% is expected; far above 100% would be double
	counting); leaf on a source line = share of faults whose innermost frame resolves to file:line.
	floor rows: the raw userfaultfd round trip on this machine (uffd_floor.c), µs per fault, and
	perf-sampled-first-touch: the kernel's own first touch recorded by a perf event with 2 KiB of the
	stack (the faulting thread's share of a tracer that unwinds later); the gap line compares them
	with fillscan. report rows: `fltrace report` speed. Noise: shared VM; read ratios and orders of
	magnitude, compare only numbers from the same invocation.
	EOF
if [ -s "$TMP/remote" ]; then
	cat "$TMP/remote"
	cp "$TMP/remote" "$RESULTS/remote-$DATE.txt"
fi
if [ -n "${BENCH_ONLY:-}" ]; then
	echo "results: $RESULTS/$LATEST.csv ($LATEST-runs.csv for every run)"
else
	echo "results: $RESULTS/latest.csv (and $DATE.csv, latest-runs.csv for every run)"
fi
if [ ${#PROBLEMS[@]} -gt 0 ]; then
	echo
	echo "problems seen (fltrace or a workload misbehaved; not a timing verdict):"
	for p in "${PROBLEMS[@]}"; do echo "  $p"; done
fi
exit 0
