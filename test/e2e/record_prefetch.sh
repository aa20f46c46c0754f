# record --prefetch: prefetchers as plug-ins, measured exactly. A page walk of known order at a
# quarter of its peak: a scan under readahead, a random order (nothing to predict), a fixed stride
# of 3 pages under stride; each run's output is the untraced one's, and the faults a prefetcher
# hid are counted per line (kind prefetch) beside those it left (kind refetch).
source "$(dirname "$0")/../lib.sh"

if ! have_uffd; then
	skip record_prefetch "userfaultfd is not available to this user"
	exit 0
fi

prog=$PROGS/pagewalk
walk=$(src_line pagewalk.c WALK)
fill=$(src_line pagewalk.c FILL)
# 32 MB walked 3 times with 8 MB local: every page of a pass comes back from far memory.
MEM="-L 8 -M 256"

# at DIR KIND LINE: faults of KIND whose stack passes pagewalk.c:LINE (report --by line's rows);
# LINE "any": every fault of KIND
at() {
	"$FLTRACE" report -i "$1" --by line > /dev/null 2>&1
	python3 - "$1" "$2" "$3" <<'PY'
import csv, glob, sys
n = 0
for f in glob.glob(sys.argv[1] + "/fltrace-data-report-*.out"):
    for r in csv.DictReader(open(f)):
        frames = [c.split("/")[-1] for c in r["code"].replace("<//>", "<<<").split("<<<")]
        if r["kind"] == sys.argv[2] and (sys.argv[3] == "any" or "pagewalk.c:" + sys.argv[3] in frames):
            n += int(r["count"])
print(n)
PY
}

# pct A B: A as a whole percentage of B (0 if B is 0)
pct() { if [ "$2" -gt 0 ]; then echo $(($1 * 100 / $2)); else echo 0; fi; }

export FIXED_LAYOUT=1
# -- a scan: readahead hides at least 80% of its re-fetches, at an accuracy above 90% --
if same_output prefetch_scan_none "$MEM --prefetch none" "$prog" seq 32 3 &&
	same_output prefetch_scan_readahead "$MEM --prefetch readahead" "$prog" seq 32 3; then
	base=$(at "$TMP/prefetch_scan_none" refetch "$walk")
	left=$(at "$TMP/prefetch_scan_readahead" refetch "$walk")
	hid=$(at "$TMP/prefetch_scan_readahead" prefetch "$walk")
	d=$TMP/prefetch_scan_readahead
	pages=$(stat_max "$d" prefetch_pages) used=$(stat_max "$d" prefetch_used)
	if [ "$base" -gt 16000 ] && [ $(((base - left) * 100)) -ge $((base * 80)) ] && [ $((used * 100)) -gt $((pages * 90)) ]; then
		pass prefetch_scan_hides
	else
		fail prefetch_scan_hides "re-fetches at the walk: $base without, $left left with readahead ($hid hidden); $used of $pages prefetched pages used"
	fi
	# every staged page is accounted for: used, evicted unused, released unused, or still staged
	unused=$(stat_max "$d" prefetch_unused) dropped=$(stat_max "$d" prefetch_dropped)
	hits=$(stat_max "$d" faults_prefetch)
	if [ "$hits" = "$used" ] && [ $((used + unused + dropped)) -le "$pages" ] && [ $((pages - used - unused - dropped)) -le 32 ]; then
		pass prefetch_scan_accounting
	else
		fail prefetch_scan_accounting "$pages prefetched: $used used ($hits hit faults), $unused evicted unused, $dropped released"
	fi
	# the per-line report: hits where the program re-reads (jemalloc's frees at exit meet a few
	# more), never at the first touches; the report's hits are the stats' to the page
	all=$(at "$d" prefetch any)
	got="$(at "$d" zero "$fill") $(at "$d" prefetch "$fill") $([ "$all" = "$hits" ] && echo same) $([ $((hid + 16)) -ge "$all" ] && echo walk)"
	expect_eq prefetch_scan_per_line "first touches at the fill, hits there, all hits = stats, hits at the walk" \
		"8192 0 same walk" "$got"
	# none costs nothing in kind: no prefetch stats moved, no prefetch rows
	d0=$TMP/prefetch_scan_none
	expect_eq prefetch_none_idle "none: pages prefetched, hit faults" "0 0" \
		"$(stat_max "$d0" prefetch_pages) $(stat_max "$d0" faults_prefetch)"
fi

# -- a random order: readahead is not worse by more than the pages it wasted --
if same_output prefetch_random_none "$MEM --prefetch none" "$prog" random 32 3 &&
	same_output prefetch_random_readahead "$MEM --prefetch readahead" "$prog" random 32 3; then
	base=$(at "$TMP/prefetch_random_none" refetch "$walk")
	d=$TMP/prefetch_random_readahead
	left=$(at "$d" refetch "$walk") hid=$(at "$d" prefetch "$walk")
	wasted=$(( $(stat_max "$d" prefetch_unused) + $(stat_max "$d" prefetch_dropped) ))
	if [ "$base" -gt 16000 ] && [ "$left" -le $((base + wasted)) ]; then
		pass prefetch_random_bounded
	else
		fail prefetch_random_bounded "re-fetches at the walk: $base without, $left with readahead ($hid hidden, $wasted pages wasted)"
	fi
fi

# -- a fixed stride of 3 pages: stride finds it; readahead, which looks for neighbours, does not --
if same_output prefetch_stride_stride "$MEM --prefetch stride" "$prog" stride 32 3 3 &&
	same_output prefetch_stride_readahead "$MEM --prefetch readahead" "$prog" stride 32 3 3; then
	d=$TMP/prefetch_stride_stride
	left=$(at "$d" refetch "$walk") hid=$(at "$d" prefetch "$walk")
	pages=$(stat_max "$d" prefetch_pages) used=$(stat_max "$d" prefetch_used)
	ra=$(at "$TMP/prefetch_stride_readahead" prefetch "$walk")
	if [ "$hid" -gt 16000 ] && [ "$(pct "$hid" $((hid + left)))" -ge 95 ] && [ "$(pct "$used" "$pages")" -ge 95 ] &&
		[ "$ra" -lt 100 ]; then
		pass prefetch_stride_found
	else
		fail prefetch_stride_found "stride: $hid hidden, $left left, $used of $pages used; readahead hid $ra"
	fi
fi

# -- leap on the same stride, and every prefetcher with another policy and another backend --
if same_output prefetch_leap "$MEM --prefetch leap --policy clock" "$prog" stride 32 3 3; then
	d=$TMP/prefetch_leap
	hid=$(at "$d" prefetch "$walk") left=$(at "$d" refetch "$walk")
	expect_eq prefetch_leap_trend "leap hides most of a stride's re-fetches under clock" yes \
		"$([ "$(pct "$hid" $((hid + left)))" -ge 80 ] && echo yes || echo "no: $hid hidden, $left left")"
fi
mkdir -p "$TMP/farfile"
if same_output prefetch_far_file "$MEM --prefetch readahead --far file:$TMP/farfile --policy sfifo" "$prog" seq 32 3; then
	d=$TMP/prefetch_far_file
	expect_eq prefetch_far_file_hits "hits with --far file (pages read into their slots) and no illegal state" \
		"yes 0" "$([ "$(stat_max "$d" prefetch_used)" -gt 16000 ] && echo yes) $(stat_max "$d" page_state_illegal)"
fi

expect_error prefetch_unknown 2 "--prefetch: 'bogus' is not a prefetcher; give none, readahead, stride or leap" \
	"$FLTRACE" record --prefetch bogus -- true

# -- sweep --prefetch: every size under each prefetcher, the miss-ratio curves side by side --
sw=$TMP/sweep
if timeout -k 10 "$HANG" "$FLTRACE" sweep -L 8 --prefetch none,readahead -M 256 -o "$sw" -- "$prog" seq 32 2 \
	> "$TMP/sweep.out" 2> "$TMP/sweep.err"; then
	col() { awk -F, -v run="$1" -v col="$2" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$1 == run { print $c[col] }' "$sw/sweep.csv"; }
	none=$(col L8M-2q refetch) ra=$(col L8M-2q+readahead refetch) hits=$(col L8M-2q+readahead prefetch_hits)
	if [ -n "$none" ] && [ -n "$ra" ] && [ "$none" -gt 10000 ] && [ $((ra * 5)) -lt "$none" ] &&
		[ "$hits" -gt $((none / 2)) ] && [ "$(col L8M-2q+readahead policy)" = 2q+readahead ] &&
		xmllint --noout "$sw/curve.svg" 2> /dev/null && grep -q '2q+readahead' "$sw/curve.svg"; then
		pass prefetch_sweep
	else
		fail prefetch_sweep "re-fetches at -L 8: $none under none, $ra under readahead ($hits hits); $(head -3 "$sw/sweep.csv" 2> /dev/null | tr '\n' ' ')"
	fi
	# the text table gives each prefetching run its hits and its coverage against the run without
	cov=$(awk -v n="$none" -v r="$ra" 'BEGIN { if (n > 0) printf "%.1f%%", 100 * (n - r) / n }')
	row=$(grep '^L8M-2q+readahead ' "$sw/sweep.txt")
	case "$row" in
	*" $hits "*" $cov "*) pass prefetch_sweep_coverage ;;
	*) fail prefetch_sweep_coverage "want hits $hits and coverage $cov in: $row" ;;
	esac
else
	fail prefetch_sweep "sweep failed: $(tail -2 "$TMP/sweep.err")"
fi
expect_error prefetch_sweep_unknown 2 "--prefetch: 'ahead' is not a prefetcher" \
	"$FLTRACE" sweep -L 8 --prefetch none,ahead -M 256 -o "$TMP/sw2" -- true
