#!/usr/bin/env bash
# End-to-end tests of fltrace's help and version output, and of the check that stdout was
# really written (a full disk is an error, not a silently cut output).
. "$(dirname "$0")/../lib.sh"

out=$("$FLTRACE" --version); rc=$?
expect_eq version "output and status" "fltrace $(sed -n 's/^#define FLTRACE_VERSION_STRING "\(.*\)"/\1/p' "$ROOT/inc/fltrace/config.h") 0" "$out $rc"

top=$("$FLTRACE" help); rc=$?
missing=""
for w in record report visualize help --version "fltrace record -L 140 -M 1000"; do
	grep -qF -- "$w" <<<"$top" || missing="$missing '$w'"
done
if [ $rc -ne 0 ] || [ -n "$missing" ]; then fail help_lists_commands "exit $rc, missing:$missing"
else pass help_lists_commands; fi
expect_eq help_same_as_dash_dash_help "output" "$top" "$("$FLTRACE" --help)"
expect_eq help_help "output of 'fltrace help help'" "$top" "$("$FLTRACE" help help)"

rec=$("$FLTRACE" record --help); rc=$?
missing=""
for w in --localmem --maxmem --handlers --cores --samplerate --output --policy --depth --poll \
	-L -M -C -S -o examples: "fltrace record -L 140 -M 1000 -- " "exit status"; do
	grep -qF -- "$w" <<<"$rec" || missing="$missing '$w'"
done
if [ $rc -ne 0 ] || [ -n "$missing" ]; then fail record_help_lists_options "exit $rc, missing:$missing"
else pass record_help_lists_options; fi
# every eviction policy of the table, each on its own line with its price
missing=""
for p in $(sed -n 's/^[[:space:]]*X(\([a-z0-9_]*\),.*/\1/p' "$ROOT/inc/fltrace/policies.h"); do
	grep -Eq "^ {26}$p +[a-z]" <<<"$rec" || missing="$missing $p"
done
default=$(sed -n 's/^#define FLTRACE_POLICY_DEFAULT "\(.*\)"/\1/p' "$ROOT/inc/fltrace/policies.h")
if [ -z "$missing" ] && grep -qF -- "--policy <p>        eviction policy (default $default)" <<<"$rec"; then
	pass record_help_lists_policies
else
	fail record_help_lists_policies "missing:$missing (or the default $default)"
fi
expect_eq help_record_same_as_record_help "output" "$rec" "$("$FLTRACE" help record)"
expect_eq record_short_help "output" "$rec" "$("$FLTRACE" record -h)"
# --help wins over everything else on the line, even invalid options that follow it.
expect_eq record_help_before_bad_option "output" "$rec" "$("$FLTRACE" record --help -L abc)"

# Every long option a command's --help lists is in the README, the user's manual.
missing=""
for c in record report visualize sweep; do
	for o in $("$FLTRACE" "$c" --help | grep -oE '^ +(-[a-zA-Z], )?--[a-z][a-z-]*' | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
		grep -qE -- "$o([^a-z-]|\$)" "$ROOT/README.md" || missing="$missing $c $o;"
	done
done
if [ -z "$missing" ]; then pass readme_has_every_option; else fail readme_has_every_option "not in README.md:$missing"; fi

expect_error stdout_full 1 '^fltrace: stdout: write error: No space left on device; ' \
	bash -c '"$1" help > /dev/full' _ "$FLTRACE"
expect_error record_help_stdout_full 1 '^fltrace: stdout: write error: No space left on device; ' \
	bash -c '"$1" record --help > /dev/full' _ "$FLTRACE"
# A report to a full stdout: one line, with the device's own error (there were two, the second EIO).
if have_uffd && "$FLTRACE" record -o "$TMP/full" -- "$PROGS/fillscan" 4 1 > /dev/null 2>&1; then
	for how in "--top 3" "--folded" "--by alloc --top 3"; do
		expect_error "report_stdout_full_${how//[ -]/_}" 1 '^fltrace: stdout: write error: No space left on device; ' \
			bash -c '"$1" report -i "$2" $3 > /dev/full' _ "$FLTRACE" "$TMP/full" "$how"
	done
else
	skip report_stdout_full "no trace of fillscan to report (userfaultfd not available?)"
fi
out=$("$FLTRACE" --version 2>&1 >&-); rc=$?
if [ $rc -ne 0 ]; then pass stdout_closed_is_an_error
else fail stdout_closed_is_an_error "exit 0 with stdout closed: $out"; fi
