#!/usr/bin/env bash
# The front door beside the binary: the manual pages (made from --help: every option --help lists
# is in its page, and man renders each without a warning), bash completion (its options from
# --help, its names from the tables --help prints), and `make install` putting both in place.
. "$(dirname "$0")/../lib.sh"
MAN=$BUILD/man
CMDS="record report visualize sweep"

# --- manual pages ---
for page in fltrace $(printf 'fltrace-%s ' $CMDS); do
	f=$MAN/$page.1
	if [ ! -f "$f" ]; then fail "man_${page}" "$f not built (make)"; continue; fi
	warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$f" 2>&1 > "$TMP/$page.txt")
	if [ -n "$warn" ]; then fail "man_${page}_renders" "$warn"; else pass "man_${page}_renders"; fi
	# the page is the --help text: each long option --help lists is in its source (roff's \- read
	# as -, so that no line break or hyphenation of the rendered text decides), and each command
	sed 's/\\-/-/g' "$f" > "$TMP/$page.src"
	cmd=${page#fltrace}; cmd=${cmd#-}
	missing=
	for o in $("$FLTRACE" $cmd --help | sed -nE '/^ +-/{s/^ +//; s/  .*//; p}' | grep -oE -- '--[a-z][-a-z]*') \
		$([ -z "$cmd" ] && "$FLTRACE" --complete commands); do
		grep -qF -- "$o" "$TMP/$page.src" || missing="$missing $o"
	done
	expect_eq "man_${page}_has_help_options" "options of --help missing from the page" "" "$missing"
done
expect_eq man_fltrace_record_name "NAME of fltrace-record(1)" \
	"fltrace-record - $("$FLTRACE" --help | awk '$1 == "record" { $1 = ""; sub(/^ +/, ""); print }')" \
	"$(sed -n '/^\.SH NAME/{n;p}' "$TMP/fltrace-record.src")"

# --- bash completion, through bash-completion's own machinery ---
BC=/usr/share/bash-completion/bash_completion
if [ ! -f "$BC" ]; then
	skip completion "no $BC (./deps.sh installs bash-completion)"
else
	# complete WORDS...: what _fltrace offers for the last word, as bash would call it
	complete() {
		bash -c 'source "$1"; source "$2"; shift 2
			COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
			COMPREPLY=(); _fltrace fltrace "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
			printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " " | sed "s/ $//"' \
			_ "$BC" "$ROOT/tools/completion.bash" "$FLTRACE" "$@" 2> /dev/null
	}
	expect_eq completion_record_pol "fltrace record --pol<TAB>" "--policy --poll" "$(complete record --pol)"
	expect_eq completion_record_policy_f "fltrace record --policy f<TAB>" "fifo" "$(complete record --policy f)"
	expect_eq completion_record_policy_eq "fltrace record --policy=<TAB>" \
		"$("$FLTRACE" --complete policies | sort | tr '\n' ' ' | sed 's/ $//')" "$(complete record --policy=)"
	expect_eq completion_commands "fltrace <TAB>" "help record report sweep visualize" "$(complete "")"
	expect_eq completion_far "fltrace record --far m<TAB>" "mem memcached:" "$(complete record --far m)"
	expect_eq completion_formats "fltrace report --format <TAB>" \
		"csv eden files folded perf-script pprof raw speedscope top" "$(complete report --format "")"
	expect_eq completion_sweep_list "fltrace sweep --policy fifo,c<TAB>" "fifo,clock" "$(complete sweep --policy fifo,c)"
	expect_eq completion_sweep_depth "fltrace sweep --de<TAB>" "--depth" "$(complete sweep --de)"
	# the names are fltrace's own tables, exactly as --help lists them
	for p in $("$FLTRACE" --complete policies); do
		"$FLTRACE" record --help | grep -qE "^ {26}$p " || fail completion_policies_in_help "policy $p not in record --help"
	done
	expect_error completion_unknown_list 2 "not a list" "$FLTRACE" --complete nothing
	expect_eq completion_prefetch "fltrace record --prefetch <TAB>" "leap none readahead stride" \
		"$(complete record --prefetch "")"
	expect_eq completion_sweep_list_unrepeated "fltrace sweep --policy fifo,<TAB>: the others" \
		"$("$FLTRACE" --complete policies | grep -vx fifo | sed 's/^/fifo,/' | sort | tr '\n' ' ' | sed 's/ $//')" \
		"$(complete sweep --policy fifo,)"
	expect_eq completion_by "fltrace report --by c<TAB>" "caller" "$(complete report --by c)"
	expect_eq completion_kind_list "fltrace report --kind zero,re<TAB>" "zero,refetch" "$(complete report --kind zero,re)"
	expect_eq completion_poll "fltrace record --poll <TAB>" "adaptive block percpu spin" "$(complete record --poll "")"
	# every word completion offers, fltrace takes
	bad=""
	if "$FLTRACE" record -o "$TMP/words" -- "$PROGS/fillscan" 2 1 > /dev/null 2>&1; then
		for w in $(complete report --by ""); do
			"$FLTRACE" report -i "$TMP/words" --by "$w" --top 1 > /dev/null 2>&1 || bad="$bad --by $w;"
		done
		for w in $(complete report --kind ""); do
			"$FLTRACE" report -i "$TMP/words" --kind "$w" --top 1 > /dev/null 2>&1 || bad="$bad --kind $w;"
		done
		for w in $(complete report --access ""); do
			"$FLTRACE" report -i "$TMP/words" --access "$w" --top 1 > /dev/null 2>&1 || bad="$bad --access $w;"
		done
		for w in $(complete visualize --names ""); do
			"$FLTRACE" visualize -i "$TMP/words" -o "$TMP/words/v" --names "$w" > /dev/null 2>&1 || bad="$bad --names $w;"
		done
	else
		bad="no trace of fillscan to try the words on;"
	fi
	for opt in --poll --files; do
		for w in $(complete record "$opt" ""); do
			"$FLTRACE" record "$opt" "$w" -o "$TMP/words2" -- true > /dev/null 2>&1 || bad="$bad $opt $w;"
		done
	done
	if [ -z "$bad" ]; then pass completion_words_taken; else fail completion_words_taken "$bad"; fi
fi

# --- make install: under PREFIX in DESTDIR ---
D=$TMP/root
if ! make -s -C "$ROOT" install BUILD="${FLTRACE_BUILD:-build}" DESTDIR="$D" PREFIX=/opt/ft > "$TMP/install.log" 2>&1; then
	fail make_install "$(tail -3 "$TMP/install.log")"
else
	got=$(cd "$D" && find . -type f | sort | tr '\n' ' ')
	expect_eq make_install_files "files installed" \
		"./opt/ft/bin/fltrace ./opt/ft/lib/fltrace/libfltrace.so ./opt/ft/share/bash-completion/completions/fltrace ./opt/ft/share/man/man1/fltrace-record.1 ./opt/ft/share/man/man1/fltrace-report.1 ./opt/ft/share/man/man1/fltrace-sweep.1 ./opt/ft/share/man/man1/fltrace-visualize.1 ./opt/ft/share/man/man1/fltrace.1 " \
		"$got"
	# man finds the installed page by its name under that prefix
	out=$(MANPATH=$D/opt/ft/share/man MANWIDTH=80 man --warnings fltrace-sweep 2>&1 | head -4 | tr -s ' \n' ' ')
	case $out in *"fltrace-sweep - record at several local-memory sizes"*) pass make_install_man ;;
	*) fail make_install_man "man fltrace-sweep: $out" ;; esac
fi
