#!/usr/bin/env bash
# End-to-end: many processes, one answer. A shell runs callers and fillscan; `report --top` starts
# with the processes ranked by faults (command line, pid, parent) and prints their tables in that
# order; `visualize` writes fltrace-data-index.html listing them, each linked to its page;
# `visualize --merge` draws one set of pictures for the whole tree.
. "$(dirname "$0")/../lib.sh"
if ! have_preload || [ ! -x "$PROGS/callers" ] || [ ! -x "$PROGS/fillscan" ]; then
	skip visualize_processes "test programs not built"; exit 0; fi
if ! have_uffd; then skip visualize_processes "userfaultfd not available"; exit 0; fi
D=$TMP/rec; mkdir -p "$D"
if ! timeout "$HANG" "$FLTRACE" record -o "$D" -- sh -c "'$PROGS/callers' 32 '$D/f.dat'; '$PROGS/fillscan' 4 1 > /dev/null" > /dev/null 2>&1; then
	fail visualize_processes "record failed"; exit 0; fi
# Each process's faults from its own report, "faults pid ppid command" biggest first.
expected=$(for t in "$D"/fltrace-data-trace-*-0.bin; do
	pid=${t##*/fltrace-data-trace-}; pid=${pid%-0.bin}
	"$FLTRACE" report -i "$D" --pid "$pid" --merge -o "$TMP/r-$pid.csv" > /dev/null 2>&1
	faults=$(python3 -c 'import csv,sys; print(sum(int(r["count"]) for r in csv.DictReader(open(sys.argv[1]))))' "$TMP/r-$pid.csv")
	echo "$faults $pid"
done | sort -k1,1nr -k2,2n)
# Which pid ran what: each process's own table is titled "pid N (command line)".
pid_of() { "$FLTRACE" report -i "$D" --top 1 2>/dev/null | sed -n "s|^pid \\([0-9]*\\) ($1.*|\\1|p"; }
fill_pid=$(pid_of "$PROGS/fillscan"); sh_pid=$(pid_of "sh -c")

"$FLTRACE" report -i "$D" --top 2 > "$TMP/top" 2>&1
got=$(awk 'NR == 1 { print; next } NR == 2 { next } /^$/ { exit } { print $1, $3 }' "$TMP/top")
expect_eq report_top_processes_ranked "processes by faults, biggest first" \
	"processes by faults: 3 processes, $(awk '{ s += $1 } END { print s }' <<< "$expected") faults
$expected" "$got"
row=$(awk -v p="$fill_pid" '$3 == p' "$TMP/top")
if [[ "$row" == *" $sh_pid  $PROGS/fillscan 4 1" ]]; then pass report_top_process_parent_command
else fail report_top_process_parent_command "fillscan's row: '$row' (sh is $sh_pid)"; fi
first_table=$(grep -m1 '^pid ' "$TMP/top")
top_pid=$(head -1 <<< "$expected" | cut -d' ' -f2)
expect_eq report_top_tables_ranked "the first table is the biggest process's" "pid $top_pid" "${first_table%% (*}"

# visualize: one page lists them in that order, each linked to its own index page.
"$FLTRACE" visualize -i "$D" -o "$TMP/v" > "$TMP/v.out" 2>&1
page=$TMP/v/fltrace-data-index.html
if [ ! -f "$page" ]; then fail visualize_processes_page "no fltrace-data-index.html: $(cat "$TMP/v.out")"
else
	got=$(grep -o 'href="fltrace-data-index-[0-9]*.html"' "$page" | sed 's/[^0-9]//g' | tr '\n' ' ')
	expect_eq visualize_processes_page "links, biggest process first" \
		"$(cut -d' ' -f2 <<< "$expected" | tr '\n' ' ')" "$got"
	missing=$(for p in $got; do [ -f "$TMP/v/fltrace-data-index-$p.html" ] || echo "$p"; done)
	expect_eq visualize_processes_linked "every linked page exists" "" "$missing"
fi

# --merge: one set of pictures for all of them, and the processes page links it.
"$FLTRACE" visualize -i "$D" -o "$TMP/m" --merge > "$TMP/m.out" 2>&1
expect_eq visualize_merge_files "files written" \
"$TMP/m/fltrace-data-flamegraph-all.svg
$TMP/m/fltrace-data-flamegraph-alloc-all.svg
$TMP/m/fltrace-data-flamegraph-allocsite-all.svg
$TMP/m/fltrace-data-timeline-all.svg
$TMP/m/fltrace-data-latency-all.svg
$TMP/m/fltrace-data-index-all.html
$TMP/m/fltrace-data-index.html" "$(cat "$TMP/m.out")"
total=$(awk '{ s += $1 } END { print s }' <<< "$expected")
if grep -q ">all ($total faults, 100.00%)<\|<title>all ($total faults, 100.00%)" "$TMP/m/fltrace-data-flamegraph-all.svg" &&
	grep -q 'fillscan.c:19' "$TMP/m/fltrace-data-flamegraph-all.svg" &&
	grep -q 'callers.c:' "$TMP/m/fltrace-data-flamegraph-all.svg" &&
	grep -q 'href="fltrace-data-index-all.html"' "$TMP/m/fltrace-data-index.html"; then
	pass visualize_merge_one_picture
else fail visualize_merge_one_picture "the merged flamegraph has not all $total faults of both programs"; fi
expect_error visualize_merge_pid 2 "merge" "$FLTRACE" visualize -i "$D" --merge --pid 1
