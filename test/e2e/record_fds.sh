# record: the traced program's fd table is the untraced one's (same /proc/self/fd listing, open()
# returns the same numbers, in a fork child and after exec too), and closing or dup2ing over every
# fd it has, or a small RLIMIT_NOFILE, neither loses the trace nor lifts the cap.
source "$(dirname "$0")/../lib.sh"

if ! have_uffd; then
	skip record_fds "userfaultfd is not available to this user"
	exit 0
fi

# fill_exact NAME: in the trace of $TMP/NAME, the 64 MB fill's first touches and the scan's
# re-fetches are all there (16384 each: fifo at -L 16 keeps none of the buffer for the scan), and
# the tracked resident memory stayed under the cap
fill_exact() {
	local name=$1 dir=$TMP/$1 fill scan got
	fill=$(grep -n '/\* FILL \*/' "$ROOT/test/progs/fdtable.c" | cut -d: -f1)
	scan=$(grep -n '/\* SCAN \*/' "$ROOT/test/progs/fdtable.c" | cut -d: -f1)
	if ! "$FLTRACE" report -i "$dir" > /dev/null 2> "$dir/report.err"; then
		fail "${name}_trace" "fltrace report failed: $(head -c 300 "$dir/report.err")"
		return
	fi
	got=$(python3 - "$dir" <<'PY'
import collections, csv, glob, sys
n = collections.Counter()
for f in glob.glob(sys.argv[1] + "/fltrace-data-report-*.out"):
    for r in csv.DictReader(open(f)):
        leaf = r["code"].split("<//>")[0].split("<<<")[0].split("/")[-1]
        if leaf.startswith("fdtable.c:"):
            n["%s %s" % (leaf, r["op"])] += int(r["count"])
print(";".join("%s %d" % kv for kv in sorted(n.items())))
PY
)
	expect_eq "${name}_trace" "faults at the fill and the scan" \
		"fdtable.c:$fill write 16384;fdtable.c:$scan read 16384" "$got"
	expect_stat "${name}_cap" "$dir" resident_peak_bytes -le $((16 << 20))
}

L16="-L 16 -M 1024 --policy fifo"

# the fd list, open()'s number, in the parent, a fork child and after exec
same_output fds_listing "$L16" "$PROGS/fdtable" list
for mode in close_range close_range_libc closefrom close_loop dup2 ulimit; do
	same_output "fds_$mode" "$L16" "$PROGS/fdtable" "$mode" && fill_exact "fds_$mode"
done
# and the same under a shell's small limit
same_output fds_shell_ulimit "$L16" sh -c "ulimit -n 64; exec $PROGS/fdtable close_loop" &&
	fill_exact fds_shell_ulimit
