# report --advise / record --keep-local: placement advice, then its test. A program with three
# objects of very different heat (test/progs/placement.c: per byte the hot one is re-fetched
# twice as often as the warm one, four times as often as the cold one), recorded at 5 MB local:
# the advice names them in that order; keeping the hottest local takes its faults to its first
# touches only and saves exactly the re-fetches predicted; output identical to the untraced run.
source "$(dirname "$0")/../lib.sh"

if ! have_uffd; then
	skip record_placement "userfaultfd is not available to this user"
	exit 0
fi

prog=$PROGS/placement
hot=placement.c:$(src_line placement.c HOT)
warm=placement.c:$(src_line placement.c WARM)
cold=placement.c:$(src_line placement.c COLD)
MEM="-L 5 -M 256"
export PLACEMENT_SPANS=$TMP/placement_spans

# alloc_col DIR SITE COLUMN: a column of report --by alloc's row whose alloc_site ends with SITE
alloc_col() {
	"$FLTRACE" report -i "$1" --by alloc -o - 2> /dev/null |
		awk -F, -v site="$2" -v col="$3" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
			{ n = length(site); if (substr($1, length($1) - n + 1) == site) { print $c[col]; exit } }'
}

# sites_refetch DIR: the re-fetches of the three objects' pages
sites_refetch() {
	echo $(($(alloc_col "$1" "$hot" refetch) + $(alloc_col "$1" "$warm" refetch) + $(alloc_col "$1" "$cold" refetch)))
}

if same_output placement_plain "$MEM" "$prog" 8; then
	dir=$TMP/placement_plain
	"$FLTRACE" report -i "$dir" --advise 5 > "$dir/advice.csv" 2> "$dir/advice.err"
	expect_eq placement_advise_header "--advise's CSV header" \
		"rank,alloc_site,bytes,refetch,refetch_per_mb,keep,predicted_saved,kept_bytes" \
		"$(head -1 "$dir/advice.csv")"
	# ranked by heat, each site named as --by alloc names it; at 5 MB only the hot 2 MB fit
	got=$(awk -F, 'NR > 1 { n = split($2, p, "/"); printf "%s %s|", p[n], $6 }' "$dir/advice.csv")
	expect_eq placement_advise_order "sites in heat order, and which are kept at 5 MB" \
		"$hot yes|$warm no|$cold no|" "$got"
	# advice at the recording's own -L says nothing more; at another size it says whose misses it counts
	expect_eq placement_advise_quiet "--advise at the recording's -L: stderr" "" "$(cat "$dir/advice.err")"
	"$FLTRACE" report -i "$dir" --advise 64 > /dev/null 2> "$dir/advice64.err"
	expect_eq placement_advise_other_size "--advise at another size than the recording's -L" \
		"fltrace: warning: --advise: the recording ran at -L 5, not 64:" \
		"$(grep -o '^fltrace: warning: --advise: the recording ran at -L 5, not 64:' "$dir/advice64.err")"
	# its numbers are the recording's: the hot site's bytes are its pages first touched, the
	# re-fetches it is predicted to save are its re-fetches
	got=$(awk -F, 'NR == 2 { print $3, $7 }' "$dir/advice.csv")
	expect_eq placement_advise_numbers "hot site: bytes (first touches x 4096) and predicted saving" \
		"$(($(alloc_col "$dir" "$hot" zero) * 4096)) $(alloc_col "$dir" "$hot" refetch)" "$got"
	predicted=$(awk -F, 'NR == 2 { print $7 }' "$dir/advice.csv")
	before=$(sites_refetch "$dir")

	# --keep-local on the hottest site: its faults are its first touches only, exactly
	if same_output placement_keep "$MEM --keep-local $hot" "$prog" 8; then
		kdir=$TMP/placement_keep
		read -r ph _ _ < "$PLACEMENT_SPANS"
		got="$(alloc_col "$kdir" "$hot" count) $(alloc_col "$kdir" "$hot" zero) $(alloc_col "$kdir" "$hot" refetch)"
		expect_eq placement_keep_hot "hot site kept: faults, first touches, re-fetches" "$ph $ph 0" "$got"
		expect_eq placement_keep_stats "stats: allocations kept, kept pages handed to the policy" \
			"1 0" "$(stat_max "$kdir" keep_local_allocs) $(stat_max "$kdir" keep_local_over)"
		# the others re-fetch every page every time anyway: the saving is exactly the prediction
		expect_eq placement_predicted_measured "re-fetches saved: predicted, measured" \
			"$predicted $predicted" "$predicted $((before - $(sites_refetch "$kdir")))"
		if grep -q "keep-local: 1 allocation at $hot kept" "$kdir/err"; then
			pass placement_keep_note
		else
			fail placement_keep_note "no keep-local note in record's summary: $(cat "$kdir/err")"
		fi
	fi
fi

# kept pages that would fill -L: the run goes on, the excess goes to the policy, and record says so
if same_output placement_over "-L 4 -M 256 --keep-local $cold" "$prog" 2; then
	odir=$TMP/placement_over
	expect_stat placement_over_counted "$odir" keep_local_over -gt 0
	if grep -q "warning: keep-local: the kept pages filled -L" "$odir/err"; then
		pass placement_over_warned
	else
		fail placement_over_warned "no warning: $(cat "$odir/err")"
	fi
fi

# a function names the site too: the function that allocates the hot object
if same_output placement_function "$MEM --keep-local hot_alloc" "$prog" 8; then
	read -r ph _ _ < "$PLACEMENT_SPANS"
	got="$(alloc_col "$TMP/placement_function" "$hot" count) $(alloc_col "$TMP/placement_function" "$hot" refetch)"
	expect_eq placement_function_hot "hot site kept by function name: faults, re-fetches" "$ph 0" "$got"
fi

# a stripped program: sites are named by object and offset ("placement-stripped+0x11e1 < ..."),
# and --keep-local takes the call's name (same_output splits its options at spaces: without the
# " < caller" part, which record does not look at)
stripped=$TMP/placement-stripped
if cp "$prog" "$stripped" && strip "$stripped" && same_output placement_stripped "$MEM" "$stripped" 8; then
	site=$("$FLTRACE" report -i "$TMP/placement_stripped" --advise 5 2> /dev/null | awk -F, 'NR == 2 { print $2 }')
	if same_output placement_stripped_keep "$MEM --keep-local ${site%% < *}" "$stripped" 8; then
		read -r ph _ _ < "$PLACEMENT_SPANS"
		got="$(alloc_col "$TMP/placement_stripped_keep" "$site" count) $(alloc_col "$TMP/placement_stripped_keep" "$site" refetch)"
		expect_eq placement_stripped_hot "stripped: '$site' kept: faults, re-fetches" "$ph 0" "$got"
	fi
fi

expect_error placement_bad_size 2 "--advise: 'lots' is not a number" \
	"$FLTRACE" report -i "$TMP" --advise lots
expect_error placement_unknown_site 2 "'placement.c:9999' names no code of" \
	"$FLTRACE" record -L 4 -M 256 -o "$TMP/placement_bad" --keep-local placement.c:9999 -- "$prog" 1
expect_error placement_empty_site 2 "--keep-local: no site given" \
	"$FLTRACE" record -L 4 -M 256 -o "$TMP/placement_bad" --keep-local , -- "$prog" 1
