#!/usr/bin/env bash
# End-to-end tests of `fltrace record` on real programs (issue 3, points 6 and 5/7 for children):
# python3, sqlite3, GNU sort and xz, each byte-identical to its untraced run at -L about a quarter
# of the peak tracked memory it reaches with ample -L, with re-fetches really happening and the
# tracked resident peak within -L; and children started by fork+exec, posix_spawn, system(),
# popen(), shell pipelines and exec chains each get their own trace files and pass exit statuses.
# Kept short (well under a minute here): the long versions are in test/stress/run.sh.
. "$(dirname "$0")/../lib.sh"

if ! have_preload; then
	skip record_real "preload library $BUILD/lib/fltrace/libfltrace.so not built (run make)"
	exit 0
fi
if ! have_uffd; then
	skip record_real "no permission for userfaultfd here"
	exit 0
fi
# Per traced run; a run that needs longer is reported as hung (it takes seconds here, minutes on
# a busy machine at most).
LIMIT=${FLTRACE_REAL_TIMEOUT:-$HANG}
PY=/usr/bin/python3 # Debian's interpreter, not a pyenv shim (whose bash wrapper would be traced too)
DATA=$ROOT/test/data
cd "$TMP" || exit 1

# stat_of FILE NAME: the value of NAME in the last line of a stats file (empty if missing)
stat_of() {
	tail -n 1 "$1" 2>/dev/null | tr ',' '\n' | sed -n "s/^$2://p"
}

# traced NAME LOCAL_MB STDIN CMD...: runs CMD under fltrace with -L LOCAL_MB, writing the trace to
# $TMP/NAME.d, stdout to $TMP/NAME.out, stderr to $TMP/NAME.err; sets RC. A run that outlives
# $LIMIT seconds is killed and RC is 124 (HUNG says which command).
traced() {
	local name=$1 l=$2 in=$3
	shift 3
	rm -rf "$TMP/$name.d"
	timeout -k 5 "$LIMIT" "$FLTRACE" record -L "$l" -M 1024 -o "$TMP/$name.d" -- "$@" \
		< "$in" > "$TMP/$name.out" 2> "$TMP/$name.err"
	RC=$?
	HUNG=
	[ $RC -eq 124 ] || [ $RC -eq 137 ] && HUNG="hung: 'fltrace record -L $l -- $*' still running after ${LIMIT}s (killed)"
	return 0
}

# check_capped NAME LOCAL (MB, or KiB with a K suffix): every process of the run has a stats file, at least one re-fetch
# happened in all, and no process's tracked resident peak exceeded -L. Prints FAIL and returns 1,
# or returns 0 silently.
check_capped() {
	local name=$1 cap f peak refetch=0 n=0 r
	case $2 in
	*K) cap=$((${2%K} * 1024)) ;;
	*) cap=$(($2 * 1048576)) ;;
	esac
	for f in "$TMP/$name.d"/fltrace-data-stats-*.out; do
		[ -e "$f" ] || break
		n=$((n + 1))
		peak=$(stat_of "$f" resident_peak_bytes)
		r=$(stat_of "$f" faults_refetch)
		if [ -z "$peak" ] || [ -z "$r" ]; then
			fail "$name" "unreadable stats file $(basename "$f"): $(tail -c 300 "$f")"
			return 1
		fi
		if [ "$peak" -gt "$cap" ]; then
			fail "$name" "resident_peak_bytes $peak > -L ($cap) in $(basename "$f")"
			return 1
		fi
		refetch=$((refetch + r))
	done
	if [ $n -eq 0 ]; then
		fail "$name" "no stats file in the output directory: $(ls "$TMP/$name.d" 2>&1 | tr '\n' ' ')"
		return 1
	fi
	if [ $refetch -eq 0 ]; then
		f=$(ls "$TMP/$name.d"/fltrace-data-stats-*.out | head -n 1)
		fail "$name" "faults_refetch is 0: nothing was evicted and fetched back at -L $2 (faults $(stat_of "$f" faults), tracked_bytes $(stat_of "$f" tracked_bytes), untracked_rss_bytes $(stat_of "$f" untracked_rss_bytes), untracked_maps $(stat_of "$f" untracked_maps))"
		return 1
	fi
	return 0
}

# real_case NAME LOCAL_MB STDIN CMD...: CMD under fltrace matches its untraced run (stdout and
# exit status), with re-fetches and the cap held.
real_case() {
	local name=$1 l=$2 in=$3 want_rc
	shift 3
	"$@" < "$in" > "$TMP/$name.want" 2> /dev/null
	want_rc=$?
	traced "$name" "$l" "$in" "$@"
	if [ -n "$HUNG" ]; then
		fail "$name" "$HUNG"
	elif [ $RC -ne $want_rc ]; then
		fail "$name" "exit status $RC, untraced $want_rc (stderr: $(tail -c 400 "$TMP/$name.err" | tr '\n' ' '))"
	elif ! cmp -s "$TMP/$name.want" "$TMP/$name.out"; then
		fail "$name" "output differs from the untraced run ($(wc -c < "$TMP/$name.out") vs $(wc -c < "$TMP/$name.want") bytes; $(cmp "$TMP/$name.want" "$TMP/$name.out" 2>&1 | head -1))"
	elif [ ! -s "$TMP/$name.want" ]; then
		fail "$name" "the untraced run printed nothing: the workload is broken"
	elif check_capped "$name" "$l"; then
		pass "$name"
	fi
}

# Inputs, generated untraced and deterministic: lines with pseudo-random keys, ~3 MB and ~0.4 MB.
if [ -x $PY ]; then
	$PY -c '
import sys
w = sys.stdout.write
for i in range(80000):
    k = (i * 2654435761) % 4294967291
    w("%010d %s %d\n" % (k, "abcdefghijklmnopqrstuvwxyz"[i % 26] * (i % 40), i))
' > lines.txt
	head -c 400000 lines.txt > small.txt
	printf 'CREATE TEMP TABLE p(n); INSERT INTO p VALUES(200000);\n' | cat - "$DATA/real_sqlite.sql" > sqlite.sql
fi

# Peaks below: resident_peak_bytes with -L 4000 on this machine (Debian 12, 2 vCPUs); -L is ~1/4.
# python3: 0.3 of real_objects.py (30000 records: dicts, tuples, str, bytes, lists, a dict index,
# a sort), peak 28.7 MB -> -L 7 (~10 s here: Python's GC and refcounts re-fetch a lot).
if [ -x $PY ]; then
	real_case python3_objects 7 /dev/null $PY "$DATA/real_objects.py" 0.3 1
else
	skip python3_objects "$PY not installed"
fi
# sqlite3 :memory:, 200000 rows, two indexes, a self-join, update, delete: peak 84.5 MB -> -L 21.
if command -v sqlite3 > /dev/null && [ -x $PY ]; then
	real_case sqlite3_memory 21 sqlite.sql sqlite3 :memory:
else
	skip sqlite3_memory "sqlite3 (or $PY to generate its input) not installed"
fi
# GNU sort of 3 MB (80000 lines), default locale and threads: peak 6.9 MB -> -L 2 (~2 s).
if [ -x $PY ]; then
	real_case sort_lines 2 lines.txt sort
	# by fields, numeric, reversed, in the C.UTF-8 locale (its collation data is read on every
	# comparison: the earlier tracer deadlocked on exactly this)
	real_case sort_keys_locale 2 lines.txt env LC_ALL=C.UTF-8 sort -k2,2r -k3,3n -t ' '
	# Linux 6.18 now and then answers a UFFDIO_MOVE of a run it moved whole with EEXIST (uffd.c,
	# uffd_move_landed): taken at its word, the run's pages came back as zeros (this test's CI run,
	# once in 52 here). Every 400th move answered so, at -L 1 with two sorting threads.
	FLTRACE_TEST_MOVE_MISREPORT=400 real_case sort_lines_moves_misreported 1 lines.txt sort --parallel=2 &&
		expect_stat sort_lines_moves_misreported_counted "$TMP/sort_lines_moves_misreported.d" \
			evict_move_misreported -gt 0
else
	skip sort_lines "$PY (to generate the input) not installed"
fi
# xz -0 of 0.4 MB: peak 1.5 MB -> -L 384K (its hash chains re-fetch about once per input byte:
# 75000 faults, ~5 s). The compressed bytes must match, and decompress to the input.
xz_case() {
	local name=xz_compress
	real_case $name 384K small.txt xz -T1 -0 -c
	# real_case printed the verdict; decompressing is one more way to see a wrong byte
	if [ ! -s $name.out ]; then
		fail xz_decompresses "the traced xz wrote nothing"
	elif ! xz -dc < $name.out | cmp -s - small.txt; then
		fail xz_decompresses "the traced xz output does not decompress to its input"
	else
		pass xz_decompresses
	fi
}
# xz -d of 1 MB compressed with -0 (a 256 KiB dictionary, written round 4 times, matches read back
# from anywhere in it) at -L 64K. Its peak cannot be measured today: the dictionary (one malloc
# of 256 KiB) lands in heap that is not tracked at all (tracked_bytes 0, untracked_maps 0), as
# does any heap of a few MB a small program allocates: this case fails until that is fixed.
xz_decompress_case() {
	head -c 1000000 lines.txt > mb.txt
	xz -T1 -0 -c mb.txt > mb.xz
	real_case xz_decompress_tracked 64K mb.xz xz -dc
}
if command -v xz > /dev/null && [ -x $PY ]; then
	xz_case
	xz_decompress_case
else
	skip xz_compress "xz (or $PY to generate its input) not installed"
fi

# ---- children ----
# pids_with_stats DIR: the distinct pids that have a stats file in DIR, one a line, sorted
pids_with_stats() {
	ls "$1" 2>/dev/null | sed -n 's/^fltrace-data-stats-\([0-9]*\)\.out$/\1/p' | sort -u
}

# A parent (8 MB heap at -L 2) starting a child each by fork+exec, posix_spawn, system() and
# popen(), each child with an 8 MB heap of its own: the output, every exit status (the program
# checks them and exits 5 when all were right), a stats file per process that says it was capped
# and re-fetched, and the parent's heap unchanged afterwards.
spawn_case() {
	local name=spawn_children prog=$PROGS/real_spawn want got missing="" p f n
	if [ ! -x "$prog" ]; then
		skip $name "$prog not built (run make)"
		return
	fi
	rm -f pids.want pids.got
	"$prog" parent "$TMP/pids.want" 8 > $name.want 2> /dev/null
	want=$?
	traced $name 2 /dev/null "$prog" parent "$TMP/pids.got" 8
	if [ -n "$HUNG" ]; then
		fail $name "$HUNG"
		return
	fi
	if [ $RC -ne 5 ] || [ $want -ne 5 ]; then
		fail $name "exit status $RC (untraced $want), expected 5: $(tr '\n' ' ' < $name.out) $(tail -c 300 $name.err)"
		return
	fi
	if ! cmp -s $name.want $name.out; then
		fail $name "output differs: $(diff $name.want $name.out | head -4 | tr '\n' ' ')"
		return
	fi
	n=$(grep -c . pids.got)
	if [ "$n" != 5 ]; then
		fail $name "expected 5 processes to note their pids, got $n: $(tr '\n' ' ' < pids.got)"
		return
	fi
	for p in $(cut -d' ' -f2 pids.got); do
		f=$name.d/fltrace-data-stats-$p.out
		if [ ! -s "$f" ]; then
			missing="$missing $p"
		elif [ "$(stat_of "$f" faults_refetch)" -eq 0 ] 2>/dev/null; then
			fail $name "process $p has no re-fetches at -L 2 with an 8 MB heap: $(tail -n 1 "$f")"
			return
		elif [ -z "$(stat_of "$f" faults_refetch)" ]; then
			fail $name "unreadable stats file of $p: $(tail -c 300 "$f")"
			return
		fi
	done
	if [ -n "$missing" ]; then
		fail $name "no stats file for pid(s)$missing (have: $(pids_with_stats $name.d | tr '\n' ' '))"
	elif check_capped $name 2; then
		pass $name
	fi
}
spawn_case

# A shell pipeline: sh and each of its 5 commands are separate processes, each with its own trace;
# the pipeline's output and the shell's exit status pass through.
pipeline_case() {
	local name=pipeline_pids want n script='cut -c1-3 lines.txt | sort | uniq -c | sort -k1,1nr -k2 | tail -n 3; exit 4'
	sh -c "$script" > $name.want 2> /dev/null
	want=$?
	traced $name 2 /dev/null sh -c "$script"
	n=$(pids_with_stats $name.d | grep -c .)
	if [ -n "$HUNG" ]; then
		fail $name "$HUNG"
	elif [ $RC -ne 4 ] || [ $want -ne 4 ]; then
		fail $name "exit status $RC (untraced $want), expected 4: $(tail -c 300 $name.err)"
	elif ! cmp -s $name.want $name.out || [ ! -s $name.want ]; then
		fail $name "output differs: $(diff $name.want $name.out | head -4 | tr '\n' ' ')"
	elif [ "$n" != 6 ]; then
		fail $name "expected 6 processes with stats files (sh + 5 commands), got $n: $(ls $name.d | tr '\n' ' ')"
	else
		for f in $name.d/fltrace-data-stats-*.out; do
			if [ -z "$(stat_of "$f" faults)" ]; then
				fail $name "unreadable stats file $(basename "$f"): $(tail -c 300 "$f")"
				return
			fi
		done
		pass $name
	fi
}
if [ -e lines.txt ]; then pipeline_case; else skip pipeline_pids "no input (needs $PY)"; fi

# exec chains: one pid runs sh, then env, then sh (which forks a pipeline): one trace file per
# executed image of that pid (generations 0, 1, 2), the output and the final exit status intact.
exec_case() {
	local name=exec_chain script='exec env sh -c "sort lines.txt | md5sum; exit 6"' want p gens
	sh -c "$script" > $name.want 2> /dev/null
	want=$?
	traced $name 2 /dev/null sh -c "$script"
	p=$(sed -n 's/^fltrace-data-trace-\([0-9]*\)-2\.bin$/\1/p' < <(ls $name.d 2>/dev/null) | head -n 1)
	gens=$([ -n "$p" ] && ls $name.d | grep -c "^fltrace-data-trace-$p-[0-9]*\.bin$")
	if [ -n "$HUNG" ]; then
		fail $name "$HUNG"
	elif [ $RC -ne 6 ] || [ $want -ne 6 ]; then
		fail $name "exit status $RC (untraced $want), expected 6: $(tail -c 300 $name.err)"
	elif ! cmp -s $name.want $name.out; then
		fail $name "output differs: $(diff $name.want $name.out | head -4 | tr '\n' ' ')"
	elif [ -z "$p" ] || [ "$gens" != 3 ]; then
		fail $name "expected one pid with trace files of generations 0, 1, 2: $(ls $name.d | tr '\n' ' ')"
	elif ! check_capped $name 2; then
		:
	elif ! (cd $name.d && "$FLTRACE" report > ../$name.report 2>&1) || [ ! -s $name.d/fltrace-data-report-$p.out ]; then
		fail $name "fltrace report on the trace failed: $(tail -c 300 $name.report)"
	else
		pass $name
	fi
}
if [ -e lines.txt ]; then exec_case; else skip exec_chain "no input (needs $PY)"; fi

# SIGKILL in the middle of a run (issue 3, point 7): python3 killed once its stats file shows
# re-fetches. fltrace passes 137 on, and what was recorded up to the kill is readable: the stats
# file, and a report with faults in it.
sigkill_case() {
	local name=sigkill_midway tpid fpid cpid f="" i r rows
	rm -rf $name.d
	timeout -k 5 "$LIMIT" "$FLTRACE" record -L 7 -M 1024 -o $name.d -- \
		$PY "$DATA/real_objects.py" 1 100 > $name.out 2> $name.err &
	tpid=$!
	# until the stats file shows re-fetches, or the run ends (then the case fails): not a time limit
	while kill -0 $tpid 2> /dev/null; do
		fpid=$(pgrep -P $tpid | head -n 1)
		cpid=${fpid:+$(pgrep -P "$fpid" | head -n 1)}
		[ -n "$cpid" ] && f=$name.d/fltrace-data-stats-$cpid.out
		r=${f:+$(stat_of "$f" faults_refetch)}
		[ "${r:-0}" -gt 0 ] && break
		sleep 0.1
	done
	if [ "${r:-0}" -eq 0 ]; then
		kill -KILL ${cpid:-} ${fpid:-} 2> /dev/null
		wait $tpid
		fail $name "the run ended without a stats file showing re-fetches (pid ${cpid:-none}): $(ls $name.d 2>&1 | tr '\n' ' ')"
		return
	fi
	kill -KILL "$cpid"
	wait $tpid
	RC=$?
	rows=$(cd $name.d && "$FLTRACE" report > /dev/null 2>&1 &&
		awk -F, 'NR > 1 { n += $3 } END { print n + 0 }' fltrace-data-report-$cpid.out 2> /dev/null)
	if [ $RC -ne 137 ]; then
		fail $name "exit status $RC, expected 137: $(tail -c 300 $name.err)"
	elif [ -z "$(stat_of "$f" faults)" ]; then
		fail $name "stats file unreadable after SIGKILL: $(tail -c 300 "$f")"
	elif [ "${rows:-0}" -eq 0 ]; then
		fail $name "fltrace report found no faults in the trace of the killed process $cpid"
	else
		pass $name
	fi
}
if [ -x $PY ]; then sigkill_case; else skip sigkill_midway "$PY not installed"; fi
