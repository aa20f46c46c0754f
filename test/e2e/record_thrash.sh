# record under thrash: a program shaped like xz -3's LZMA encoder (a dictionary ring, a hash table
# and a chain array read at random, input read() into the heap, buffers freed and taken again) at
# -L 16, well under its working set, so that under CLOCK most pages go through probation, far
# memory and back many times. It must finish with the untraced output, and every page change must
# have been legal (issue 13 point 4: xz -3 -T1 at -L 16 was once stopped by fltrace's watchdog, a
# page fltrace had "in place" that the kernel kept faulting on).
source "$(dirname "$0")/../lib.sh"

if ! have_uffd; then
	skip record_thrash "userfaultfd is not available to this user"
	exit 0
fi

"$PROGS/thrash" gen 3 > "$TMP/input"
# A hang (a fault that never ends, or the watchdog's stop) fails here, after the suite's hang timeout
# (how long it takes depends on the machine's load: about 10 s on an idle one).
same_output thrash_clock_same_output "-L 16 -M 256 --policy clock" "$PROGS/thrash" 2688 8 "$TMP/input" &&
	expect_stat thrash_clock_went_far "$TMP/thrash_clock_same_output" faults_refetch -gt 10000
expect_stat thrash_clock_soft_faults "$TMP/thrash_clock_same_output" faults_soft -gt 10000
expect_stat thrash_no_stuck_fault "$TMP/thrash_clock_same_output" faults_stuck -eq 0
expect_stat thrash_no_illegal_page_change "$TMP/thrash_clock_same_output" page_state_illegal -eq 0
expect_stat thrash_no_failed_eviction "$TMP/thrash_clock_same_output" evict_failed -eq 0
# sfifo keeps a short probation, 2q (the default) none: the same output
same_output thrash_sfifo_same_output "-L 16 -M 256 --policy sfifo" "$PROGS/thrash" 2688 8 "$TMP/input"
expect_stat thrash_sfifo_no_illegal_page_change "$TMP/thrash_sfifo_same_output" page_state_illegal -eq 0
same_output thrash_2q_same_output "-L 16 -M 256 --policy 2q" "$PROGS/thrash" 2688 8 "$TMP/input" &&
	expect_stat thrash_2q_went_far "$TMP/thrash_2q_same_output" faults_refetch -gt 10000
expect_stat thrash_2q_no_illegal_page_change "$TMP/thrash_2q_same_output" page_state_illegal -eq 0

# Issue 13 point 4's cause: Linux 6.18 now and then answers UFFDIO_MOVE with EEXIST for a page it has
# moved (xz -3 -T1 of 100 MB at -L 16: twice in 38 million moves; runs met the first after 2-10 M faults).
# Believed, the page stayed "present" for fltrace while the kernel had it unmapped, and its next
# fault never ended (the watchdog's stop). FLTRACE_TEST_MOVE_MISREPORT answers every 97th move so:
# the untraced output all the same, each such move counted, no fault stuck (both failed before).
export FLTRACE_TEST_MOVE_MISREPORT=97
for pol in clock fifo; do
	name=thrash_misreported_move_$pol
	same_output "$name" "-L 16 -M 256 --policy $pol" "$PROGS/thrash" 2688 8 "$TMP/input"
	expect_stat "${name}_counted" "$TMP/$name" evict_move_misreported -gt 100
	expect_stat "${name}_none_stuck" "$TMP/$name" faults_stuck -eq 0
done
unset FLTRACE_TEST_MOVE_MISREPORT

# A fault that never ends (here: memory emptied by a raw madvise, behind fltrace's back) stops the
# program with the page's state and its last changes, and the stats count it.
err=$(timeout -k 10 "$HANG" "$FLTRACE" record -L 8 -M 64 -o "$TMP/stuck" -- "$PROGS/memops" rawzap 2>&1 >/dev/null)
rc=$?
expect_eq stuck_fault_names_page_state "exit status and message" \
	"125 page state present; last changes, newest first: empty->present (zero fill)" \
	"$rc $(grep -o 'page state present; last changes, newest first: empty->present (zero fill)' <<<"$err" | head -1)"
expect_stat stuck_fault_counted "$TMP/stuck" faults_stuck -eq 1
