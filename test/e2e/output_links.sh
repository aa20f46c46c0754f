#!/usr/bin/env bash
# No output follows a link someone else put under its name. In a sticky world-writable directory,
# uid 65534 plants a symbolic link and a hard link to a file of root's under each name that record
# (its output directory, and the runtime's trace, stats and maps files), report, visualize and sweep
# write, with fs.protected_symlinks=0 and fs.protected_hardlinks=0 for the test (restored after);
# each command, run as root, names the link in one line and exits non-zero, and every target keeps
# its bytes. Then: fltrace's own earlier outputs are replaced whole, files are 0600, directories 0700.
. "$(dirname "$0")/../lib.sh"

FS=$PROGS/fillscan
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
KINDS="symlink hardlink"
NAMES=()
for k in $KINDS; do
	NAMES+=(links_record_outdir_$k links_record_trace_$k links_record_stats_$k links_record_maps_$k
		links_report_$k links_visualize_$k links_sweep_$k)
done
NAMES+=(links_sweep_dirs links_own_outputs_replaced links_modes links_no_temporary_left)
why=""
if [ "$(id -u)" != 0 ]; then why="not root: planting as another user and running as root need root"
elif ! have_preload || ! have_uffd || [ ! -x "$FS" ]; then why="no preload library, fillscan or userfaultfd"
elif ! "${NOBODY[@]}" true 2>/dev/null; then why="setpriv cannot switch to uid 65534"
elif ! unshare --pid --fork --mount-proc true 2>/dev/null; then why="no pid namespace (unshare --pid)"
elif [ ! -w /proc/sys/fs/protected_symlinks ] || [ ! -w /proc/sys/fs/protected_hardlinks ]; then
	why="fs.protected_symlinks/protected_hardlinks cannot be set here"
elif [ ! -x /usr/bin/python3 ]; then why="no /usr/bin/python3 to plant names in bulk"
fi
if [ -n "$why" ]; then
	for n in "${NAMES[@]}"; do skip "$n" "$why"; done
	exit 0
fi

# The sysctls are the machine's: another run of this test (a second work tree's) waits for this one.
exec 9> /tmp/fltrace-output-links.lock
flock 9

# The shared directory and the targets live outside $TMP (0700): uid 65534 must reach them.
S=$(mktemp -d /tmp/fltrace-links.XXXXXX)
V=$(mktemp -d /tmp/fltrace-victims.XXXXXX)
chmod 1777 "$S"
chmod 0711 "$V"
mkdir "$V/orig"
OLD_SYM=$(cat /proc/sys/fs/protected_symlinks)
OLD_HARD=$(cat /proc/sys/fs/protected_hardlinks)
restore() {
	echo "$OLD_SYM" > /proc/sys/fs/protected_symlinks
	echo "$OLD_HARD" > /proc/sys/fs/protected_hardlinks
	rm -rf "$TMP" "$S" "$V"
}
trap restore EXIT
trap 'exit 143' TERM INT HUP # through restore: the sysctls go back even if the test is stopped
echo 0 > /proc/sys/fs/protected_symlinks
echo 0 > /proc/sys/fs/protected_hardlinks

# A target: a file of root's, 0644, with bytes of its own, and a copy to compare it with.
nvictims=0
victim() {
	nvictims=$((nvictims + 1))
	local v=$V/victim-$nvictims
	{ echo "root's file $nvictims"; head -c 300 /dev/urandom; } > "$v"
	chmod 0644 "$v"
	cp -p "$v" "$V/orig/victim-$nvictims"
	echo "$v"
}

# Every target, byte for byte (and its mode and owner): "" if all kept, else what changed.
victims_changed() {
	local i bad=""
	for ((i = 1; i <= nvictims; i++)); do
		cmp -s "$V/victim-$i" "$V/orig/victim-$i" || bad="$bad victim-$i's bytes;"
		[ "$(stat -c %a:%u "$V/victim-$i")" = 644:0 ] || bad="$bad victim-$i's mode or owner;"
	done
	echo "$bad"
}

plant() { # KIND TARGET NAME, as uid 65534
	if [ "$1" = symlink ]; then "${NOBODY[@]}" ln -s "$2" "$3"; else "${NOBODY[@]}" ln "$2" "$3"; fi
}

# refused CASE KIND LINKNAME CMD...: LINKNAME planted (kind KIND) in place of any earlier output
# before CMD runs in $S; CMD must exit non-zero with one line "fltrace: <LINKNAME, or $SHOWN>: <is a
# symbolic link|has other hard links>...; ..." on stderr (the last one; with NOTES=1 progress notes
# may come before it), and leave the target as it was. Appends to $bad.
refused() {
	local case=$1 kind=$2 name=$3 v err rc lines want shown=${SHOWN:-$3}
	shift 3
	v=$(victim)
	rm -f "$name"
	if ! plant "$kind" "$v" "$name"; then bad="$bad $case: cannot plant $name;"; return; fi
	err=$(cd "$S" && "$@" 2>&1 >/dev/null < /dev/null); rc=$?
	rm -f "$name"
	[ "$kind" = symlink ] && want="is a symbolic link that fltrace did not make" ||
		want="has other hard links, so fltrace did not write it"
	lines=$(printf '%s' "$err" | grep -c '')
	if [ $rc = 0 ]; then bad="$bad $case ($(basename "$name")): exit 0;"
	elif [ -z "${NOTES:-}" ] && [ "$lines" != 1 ]; then
		bad="$bad $case ($(basename "$name")): $lines lines on stderr: $err;"
	elif [[ "$(printf '%s\n' "$err" | tail -1)" != "fltrace: $shown: $want; "* ]] ||
		[ "$(printf '%s\n' "$err" | grep -c "^fltrace: $shown: ")" != 1 ]; then
		bad="$bad $case ($(basename "$name")): message '$err';"
	fi
	local changed; changed=$(victims_changed)
	[ -z "$changed" ] || bad="$bad $case ($(basename "$name")): target changed:$changed;"
}

verdict() { if [ -z "$bad" ]; then pass "$1"; else fail "$1" "$bad"; fi; }

# ---- record: its output directory, before anything runs ----
for k in $KINDS; do
	bad=""
	D=$S/rec-$k
	mkdir "$D" && chmod 1777 "$D"
	refused links_record_outdir_$k $k "$D/fltrace-data-trace-1-0.bin" \
		"$FLTRACE" record -L 8 -M 64 -o "$D" -- "$FS" 4 1
	verdict links_record_outdir_$k
done

# ---- record: the runtime's own files, planted while the command runs ----
# In a pid namespace the processes get small pids; the traced shell has uid 65534 plant a link
# under the name of the file kind for every pid up to 3000 (but its own), then starts fillscan,
# whose runtime meets one of them (a new process: its trace, stats or maps file).
cat > "$V/plant.py" <<'PY'
import os, sys
kind, target, d, pattern = sys.argv[1:5]
for pid in range(1, 3000):
    name = os.path.join(d, pattern.replace("PID", str(pid)))
    try:
        (os.symlink if kind == "symlink" else os.link)(target, name)
    except FileExistsError:
        pass
PY
chmod 0644 "$V/plant.py"
runtime_case() { # CASE KIND PATTERN
	local case=$1 kind=$2 pattern=$3 D=$S/rt-$1 v err rc hits
	bad=""
	mkdir "$D" && chmod 1777 "$D"
	v=$(victim)
	err=$(unshare --pid --fork --mount-proc timeout -k 10 "$HANG" "$FLTRACE" record -L 8 -M 64 -o "$D" -- \
		sh -c 'env -u LD_PRELOAD setpriv --reuid=65534 --regid=65534 --clear-groups -- \
			/usr/bin/python3 "$1" "$2" "$3" "$4" "$5" || exit 9; "$6" 4 1; exit $?' \
		sh "$V/plant.py" "$kind" "$v" "$D" "$pattern" "$FS" 2>&1 > /dev/null); rc=$?
	[ "$kind" = symlink ] && want="is a symbolic link that fltrace did not make" ||
		want="has other hard links, so fltrace did not write it"
	local re="^fltrace: $D/${pattern/PID/[0-9]+}: $want; remove it"
	hits=$(printf '%s\n' "$err" | grep -Ec "$re")
	if [ $rc != 125 ]; then bad="exit $rc, expected 125 (the runtime's): $err"
	elif [ "$hits" != 1 ]; then bad="$hits lines like /$re/: $err"
	fi
	local changed; changed=$(victims_changed)
	[ -z "$changed" ] || bad="$bad target changed:$changed"
	find "$D" -type l -delete
	find "$D" -type f -links +1 -delete
	verdict "$case"
}
for k in $KINDS; do
	runtime_case links_record_trace_$k $k "fltrace-data-trace-PID-0.bin"
	runtime_case links_record_stats_$k $k "fltrace-data-stats-PID.out"
	runtime_case links_record_maps_$k $k "fltrace-data-procmaps-PID.out"
done

# ---- report and visualize: every name they write next to a recording ----
R=$S/run
mkdir "$R" && chmod 1777 "$R"
"$FLTRACE" record -L 8 -M 64 -o "$R" -- "$FS" 4 1 > /dev/null 2>&1
P=$(ls "$R" | sed -n 's/^fltrace-data-trace-\([0-9]*\)-0\.bin$/\1/p' | head -1)
if [ -z "$P" ]; then
	for n in "${NAMES[@]}"; do [[ $n == links_record_* ]] || fail "$n" "no recording in $R"; done
	exit 0
fi
for k in $KINDS; do
	bad=""
	refused links_report_$k $k "$R/fltrace-data-report-$P.out" "$FLTRACE" report -i "$R"
	refused links_report_$k $k "$R/fltrace-data-report-$P.pb.gz" "$FLTRACE" report -i "$R" --format pprof
	refused links_report_$k $k "$R/fltrace-data-report-$P.speedscope.json" \
		"$FLTRACE" report -i "$R" --format speedscope
	refused links_report_$k $k "$R/fltrace-data-report-$P.perf.txt" "$FLTRACE" report -i "$R" --format perf-script
	refused links_report_$k $k "$R/fltrace-data-faults-$P-0.out" "$FLTRACE" report -i "$R" --raw
	refused links_report_$k $k "$R/fltrace-data-files-$P.out" "$FLTRACE" report -i "$R" --files
	refused links_report_$k $k "$R/fltrace-data-report-all.out" "$FLTRACE" report -i "$R" --merge
	refused links_report_$k $k "$R/fltrace-data-report-alloc-all.out" "$FLTRACE" report -i "$R" --by alloc
	refused links_report_$k $k "$S/chosen.csv" "$FLTRACE" report -i "$R" -o "$S/chosen.csv"
	SHOWN=fltrace-data-diff.out refused links_report_$k $k "$S/fltrace-data-diff.out" \
		"$FLTRACE" report --diff "$R" "$R"
	verdict links_report_$k
	bad=""
	for stem in flamegraph-$P.svg flamegraph-alloc-$P.svg flamegraph-allocsite-$P.svg timeline-$P.svg \
		latency-$P.svg index-$P.html index.html; do
		refused links_visualize_$k $k "$R/fltrace-data-$stem" "$FLTRACE" visualize -i "$R"
	done
	refused links_visualize_$k $k "$R/fltrace-data-flamegraph-diff.svg" "$FLTRACE" visualize --diff "$R" "$R" -o "$R"
	verdict links_visualize_$k
done

# ---- sweep: its files, its runs' files (in a run directory left open to all), its stdin ----
SW=$S/sw
mkdir "$SW" "$SW/L16M-clock" && chmod 1777 "$SW" "$SW/L16M-clock"
SWEEP=("$FLTRACE" sweep -L 16 -M 64 --policy clock -o "$SW" -- "$FS" 4 1)
for k in $KINDS; do
	bad=""
	for f in sweep.csv curve.svg callsites.csv sweep.txt L16M-clock/stdout L16M-clock/stderr; do
		NOTES=1 refused links_sweep_$k $k "$SW/$f" "${SWEEP[@]}"
	done
	NOTES=1 refused links_sweep_$k $k "$SW/stdin" sh -c 'echo input | "$@"' sh "${SWEEP[@]}"
	verdict links_sweep_$k
done
# Directories fltrace names itself: a run's, and the default ./fltrace-sweep.
bad=""
mkdir "$V/dir" && chmod 0755 "$V/dir"
rm -rf "$SW" && mkdir "$SW" && chmod 1777 "$SW"
for d in "$SW/L16M-clock" "$S/fltrace-sweep"; do
	"${NOBODY[@]}" ln -s "$V/dir" "$d"
	err=$(cd "$S" && "$FLTRACE" sweep -L 16 -M 64 --policy clock \
		$([ "$d" = "$SW/L16M-clock" ] && echo -o "$SW") -- "$FS" 4 1 2>&1 >/dev/null </dev/null); rc=$?
	rm -f "$d"
	shown=$d; [ "$d" = "$S/fltrace-sweep" ] && shown=fltrace-sweep
	[ $rc != 0 ] && [[ "$(printf '%s\n' "$err" | tail -1)" == "fltrace: $shown: is a symbolic link that fltrace did not make; "* ]] ||
		bad="$bad $(basename "$d"): exit $rc, '$err';"
done
[ -z "$(ls -A "$V/dir")" ] || bad="$bad the linked directory got files: $(ls "$V/dir");"
verdict links_sweep_dirs

# ---- fltrace's own earlier outputs are replaced whole (an older version's 0644 one too) ----
bad=""
"$FLTRACE" report -i "$R" > /dev/null 2>&1 || bad="first report failed;"
F=$R/fltrace-data-report-$P.out
first=$(md5sum < "$F"); ino=$(stat -c %i "$F")
chmod 0644 "$F"
echo "stale" >> "$F"
out=$("$FLTRACE" report -i "$R" 2>&1) || bad="$bad report over its own output failed: $out;"
[ "$(md5sum < "$F")" = "$first" ] || bad="$bad the report was not rewritten whole;"
[ "$(stat -c %i "$F")" != "$ino" ] || bad="$bad the report was written in place (same inode);"
"$FLTRACE" visualize -i "$R" > /dev/null 2>&1 && "$FLTRACE" visualize -i "$R" > /dev/null 2>&1 ||
	bad="$bad visualize over its own pictures failed;"
"${SWEEP[@]}" > /dev/null 2>&1 < /dev/null && "${SWEEP[@]}" > /dev/null 2>&1 < /dev/null ||
	bad="$bad sweep over its own files failed;"
verdict links_own_outputs_replaced

# ---- modes: files derived from a trace 0600, directories fltrace makes 0700 ----
bad=""
rm -rf "$S/fltrace-sweep"
(cd "$S" && "$FLTRACE" sweep -L 16 -M 64 --policy clock -- "$FS" 4 1 > /dev/null 2>&1 < /dev/null) || bad="sweep to ./fltrace-sweep failed;"
"$FLTRACE" visualize -i "$R" -o "$S/new/pictures" > /dev/null 2>&1 || bad="$bad visualize -o a new dir failed;"
for f in "$F" "$R"/fltrace-data-*.svg "$R"/fltrace-data-index*.html "$SW"/sweep.csv "$SW"/curve.svg \
	"$SW"/callsites.csv "$SW"/sweep.txt "$SW"/L16M-clock/stdout "$SW"/L16M-clock/stderr \
	"$S"/fltrace-sweep/sweep.csv "$S"/new/pictures/fltrace-data-index*.html; do
	[ "$(stat -c %a "$f" 2>/dev/null)" = 600 ] || bad="$bad $f: mode $(stat -c %a "$f" 2>&1);"
done
for d in "$S/fltrace-sweep" "$S/fltrace-sweep/L16M-clock" "$S/new" "$S/new/pictures"; do
	[ "$(stat -c %a "$d" 2>/dev/null)" = 700 ] || bad="$bad $d: mode $(stat -c %a "$d" 2>&1);"
done
verdict links_modes

left=$(find "$S" -name '.fltrace-*' | head -3)
if [ -z "$left" ]; then pass links_no_temporary_left; else fail links_no_temporary_left "left: $left"; fi
