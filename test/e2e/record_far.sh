# record --far: every far-memory backend keeps the program's pages (output identical at -L 16, fork
# children see evicted pages), counts its writes and reads exactly, and a failing medium stops the
# run with one line instead of corrupting the program.
source "$(dirname "$0")/../lib.sh"

if ! have_uffd; then
	skip record_far "userfaultfd is not available to this user"
	exit 0
fi
FARDIR=$TMP/fardir
mkdir -p "$FARDIR"
"$PROGS/thrash" gen 3 > "$TMP/input"

# Every backend of the table (inc/fltrace/backends.h; one taking an argument gets a directory),
# the same programs and sizes: output identical to the untraced run, and fault counts exactly the
# same on every backend (the medium never changes which pages fault).
BACKENDS=$(sed -n 's/^[[:space:]]*X(\([a-z0-9_]*\), "\([^"]*\)",.*/\1:\2/p' "$ROOT/inc/fltrace/backends.h")
L16="-L 16 -M 2048"
# A backend on memory servers (memcached, on this machine's loopback) pays a round trip per page,
# and a busy machine starves its servers: it runs a smaller fill-and-scan, compared with the same
# run on `mem`, and the fork cases (test/e2e/record_remote.sh has the rest).
SMALL="-L 4 -M 2048"
FIXED_LAYOUT=1 same_output far_mem_small "$SMALL --policy fifo --far mem" "$PROGS/fillscan" 16 3
for row in $BACKENDS; do
	b=${row%%:*} far=${row%%:*} remote=
	case "$b:${row#*:}" in
	*:) ;;
	memcached:*)
		if [ -z "${FLTRACE_TEST_MEMCACHED:-}" ]; then
			skip "far_$b" "no memcached servers (test/run.sh starts them; is memcached installed?)"
			continue
		fi
		# a healthy server on a busy machine may be slow: no time-out verdicts here
		far="$b:$FLTRACE_TEST_MEMCACHED --far-timeout 120000" remote=1 ;;
	*) far="$b:$FARDIR" ;;
	esac
	if [ -n "$remote" ]; then
		FIXED_LAYOUT=1 same_output "far_${b}_fillscan" "$SMALL --policy fifo --far $far" "$PROGS/fillscan" 16 3 || continue
		want=$(stat_max "$TMP/far_mem_small" faults_refetch) got=$(stat_max "$TMP/far_${b}_fillscan" faults_refetch)
		expect_eq "far_${b}_same_faults_as_mem" "re-fetches of fillscan 16 MB under fifo at -L 4" "$want" "$got"
	else
		FIXED_LAYOUT=1 same_output "far_${b}_fillscan" "$L16 --policy fifo --far $far" "$PROGS/fillscan" 64 3 || continue
	fi
	# fifo: every re-fetch came from the medium, and each was written there first
	gets=$(stat_max "$TMP/far_${b}_fillscan" far_gets)
	refetch=$(stat_max "$TMP/far_${b}_fillscan" faults_refetch)
	expect_eq "far_${b}_reads_are_refetches" "far_gets" "$refetch" "$gets"
	expect_stat "far_${b}_went_far" "$TMP/far_${b}_fillscan" faults_refetch -gt $([ -n "$remote" ] && echo 5000 || echo 30000)
	expect_stat "far_${b}_no_illegal_page_change" "$TMP/far_${b}_fillscan" page_state_illegal -eq 0
	# forkthreads: the forking thread's faults during the fork evict nothing, which the file
	# backend's copy for the child would not hold (a child read stale pages, 1 fork in 20)
	modes="fork forkthreads remap madvise syscalls"
	[ -n "$remote" ] && modes="fork forkthreads"
	for mode in $modes; do
		same_output "far_${b}_memops_$mode" "$L16 --far $far" "$PROGS/memops" "$mode"
	done
	# fork without exec: the child reads pages evicted before the fork, from its own copy
	expect_stat "far_${b}_fork_child_refetched" "$TMP/far_${b}_memops_fork" faults_refetch -gt 1000
	[ -n "$remote" ] && continue
	same_output "far_${b}_threads" "$L16 --far $far" "$PROGS/fillscan" 64 2 4
	same_output "far_${b}_thrash" "$L16 -M 256 --policy clock --far $far" "$PROGS/thrash" 2688 8 "$TMP/input"
done
first=${BACKENDS%% *}; first=${first%%:*}
# what else could have changed the eviction order, shown if the counts differ
order_stats() {
	local k
	for k in faults faults_zp faults_self faults_dup faults_reraised evict_failed evict_fallback \
		evict_move_misreported; do
		printf '%s:%s ' "$k" "$(stat_max "$1" "$k")"
	done
}
for row in $BACKENDS; do
	b=${row%%:*}
	[ "$b" = "$first" ] || [ "$b" = memcached ] && continue
	want=$(stat_max "$TMP/far_${first}_fillscan" faults_refetch)
	got=$(stat_max "$TMP/far_${b}_fillscan" faults_refetch)
	expect_eq "far_${b}_same_faults_as_$first" "re-fetches of fillscan under fifo ($first: $(order_stats \
		"$TMP/far_${first}_fillscan"); $b: $(order_stats "$TMP/far_${b}_fillscan"))" "$want" "$got"
done
puts=$(stat_max "$TMP/far_file_fillscan" far_puts)
[ "$puts" -ge "$(stat_max "$TMP/far_file_fillscan" faults_refetch)" ] && pass far_file_writes_before_reads ||
	fail far_file_writes_before_reads "far_puts $puts below the re-fetches"
# The file backend's file is unnamed: nothing is left in the directory.
left=$(ls -A "$FARDIR" | head -3)
[ -z "$left" ] && pass far_file_leaves_nothing || fail far_file_leaves_nothing "left in $FARDIR: $left"

# --far-latency: waited at each re-fetch, and counted apart (t_far_wait_ns at least latency x reads).
same_output far_latency "-L 8 -M 2048 --policy fifo --far-latency 20" "$PROGS/fillscan" 16 2 && {
	gets=$(stat_max "$TMP/far_latency" far_gets) wait=$(stat_max "$TMP/far_latency" t_far_wait_ns)
	lat=$(stat_max "$TMP/far_latency" far_latency_ns)
	[ "$lat" = 20000 ] && [ "$gets" -gt 0 ] && [ "$wait" -ge $((gets * 20000)) ] && pass far_latency_counted ||
		fail far_latency_counted "far_latency_ns $lat, far_gets $gets, t_far_wait_ns $wait"
}

# A medium that fails: no file may grow past 32 MB (ulimit -f, in 1 KB blocks here; the trace stays
# below it), while the program evicts ~90 MB: the run stops with one line naming the directory,
# exit 125, before any page is lost.
dir=$TMP/far_full; mkdir -p "$dir"
(ulimit -f 32768; exec timeout -k 10 "$HANG" "$FLTRACE" record -L 4 -M 2048 --far "file:$FARDIR" -o "$dir" -- \
	"$PROGS/fillscan" 96 2) > "$dir/out" 2> "$dir/err"
rc=$?
msg=$(grep '^fltrace: far memory:' "$dir/err" | head -1)
[ $rc = 125 ] && [[ "$msg" == *"cannot write an evicted page to $FARDIR"* ]] && pass far_full_stops ||
	fail far_full_stops "exit $rc, message: $(head -c 300 "$dir/err")"

# A full disk: a 4 MB tmpfs mounted here (root only) fills up while the program evicts ~90 MB.
tiny=$TMP/tiny; mkdir -p "$tiny"
if mount -t tmpfs -o size=4m fltrace-test "$tiny" 2>/dev/null; then
	dir=$TMP/far_disk_full; mkdir -p "$dir"
	timeout -k 10 "$HANG" "$FLTRACE" record -L 4 -M 2048 --far "file:$tiny" -o "$dir" -- "$PROGS/fillscan" 96 2 \
		> "$dir/out" 2> "$dir/err"
	rc=$?
	umount "$tiny"
	msg=$(grep '^fltrace: far memory:' "$dir/err" | head -1)
	[ $rc = 125 ] && [[ "$msg" == *"cannot write an evicted page to $tiny (No space left on device)"* ]] &&
		pass far_disk_full_stops || fail far_disk_full_stops "exit $rc, message: $(head -c 300 "$dir/err")"
else
	skip far_disk_full_stops "cannot mount a tmpfs here (not root)"
fi

# Bad backends are refused before anything runs.
expect_error far_unknown 2 "--far: 'disk' is not a far-memory backend; give mem, file:<dir> or memcached:<host:port,...>" \
	"$FLTRACE" record --far disk -- true
expect_error far_no_dir 2 "--far: '$TMP/none' is not a directory" "$FLTRACE" record --far "file:$TMP/none" -- true
expect_error far_latency_bad 2 "--far-latency" "$FLTRACE" record --far-latency fast -- true
