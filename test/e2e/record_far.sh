# record --far: every far-memory backend keeps the program's pages (output identical at -L 8, fork
# children see evicted pages), counts its writes and reads exactly, and a failing medium stops the
# run with one line instead of corrupting the program.
source "$(dirname "$0")/../lib.sh"

if ! have_uffd; then
	skip record_far "userfaultfd is not available to this user"
	exit 0
fi
FARDIR=$TMP/fardir
mkdir -p "$FARDIR"

# The same programs and sizes on every backend: mem (the default) and file.
for far in mem "file:$FARDIR"; do
	b=${far%%:*}
	same_output "far_${b}_fillscan" "-L 8 -M 2048 --policy fifo --far $far" "$PROGS/fillscan" 48 3 || continue
	# fifo at -L 8: every re-fetch came from the medium, and each was written there first
	gets=$(stat_max "$TMP/far_${b}_fillscan" far_gets)
	refetch=$(stat_max "$TMP/far_${b}_fillscan" faults_refetch)
	expect_eq "far_${b}_reads_are_refetches" "far_gets" "$refetch" "$gets"
	for mode in fork remap madvise; do
		same_output "far_${b}_memops_$mode" "-L 8 -M 2048 --far $far" "$PROGS/memops" "$mode"
	done
	same_output "far_${b}_threads" "-L 8 -M 2048 --far $far" "$PROGS/fillscan" 64 2 4
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
(ulimit -f 32768; exec timeout "$HANG" "$FLTRACE" record -L 4 -M 2048 --far "file:$FARDIR" -o "$dir" -- \
	"$PROGS/fillscan" 96 2) > "$dir/out" 2> "$dir/err"
rc=$?
msg=$(grep '^fltrace: far memory:' "$dir/err" | head -1)
[ $rc = 125 ] && [[ "$msg" == *"cannot write an evicted page to $FARDIR"* ]] && pass far_full_stops ||
	fail far_full_stops "exit $rc, message: $(head -c 300 "$dir/err")"

# Bad backends are refused before anything runs.
expect_error far_unknown 2 "--far: 'disk' is not a far-memory backend; give mem or file:<dir>" \
	"$FLTRACE" record --far disk -- true
expect_error far_no_dir 2 "--far: '$TMP/none' is not a directory" "$FLTRACE" record --far "file:$TMP/none" -- true
expect_error far_latency_bad 2 "--far-latency" "$FLTRACE" record --far-latency fast -- true
