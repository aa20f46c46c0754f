#!/usr/bin/env bash
# The earlier fltrace's users keep their scripts: the default CSV's lib and code lists have as many
# elements as ips.split('|'), and --format eden writes that tool's report layout exactly (checked
# here field by field against the default CSV of the same recording, and, where its source is on
# this machine, by its own scripts/prepare_flame_graph.py run unmodified).
. "$(dirname "$0")/../lib.sh"
if ! have_preload || [ ! -x "$PROGS/fillscan" ]; then
	skip report_eden "preload library or fillscan not built"; exit 0; fi
if ! have_uffd; then skip report_eden "userfaultfd not available"; exit 0; fi
ANCHOR_SRC=${ANCHOR_FLTRACE_SRC:-/work/anchor-src/fltrace}
D=$TMP/rec; mkdir -p "$D"
if ! timeout -k 10 "$HANG" "$FLTRACE" record -L 4 -M 256 -o "$D" -- "$PROGS/fillscan" 16 2 > /dev/null 2>&1; then
	fail report_eden "record failed"; exit 0; fi
"$FLTRACE" report -i "$D" > /dev/null 2>&1 || { fail report_eden "report failed"; exit 0; }
mkdir -p "$D/csv" && mv "$D"/fltrace-data-report-*.out "$D/csv/"
"$FLTRACE" report -i "$D" --format eden > /dev/null 2> "$TMP/err" ||
	{ fail report_eden "report --format eden failed: $(cat "$TMP/err")"; exit 0; }

# The default CSV: one lib and one code element per ips.split('|') element, the last one (after
# ips' closing '|') "??" and "??:?" as the earlier tool padded it.
got=$(python3 - "$D/csv" <<'PY'
import csv, glob, sys
bad, rows = [], 0
for f in glob.glob(sys.argv[1] + "/fltrace-data-report-*.out"):
    for r in csv.DictReader(open(f, newline="")):
        rows += 1
        n = len(r["ips"].split("|"))
        lib, code = r["lib"].split("<//>"), r["code"].split("<//>")
        if len(lib) != n or len(code) != n or lib[-1] != "??" or code[-1] != "??:?":
            bad.append("%d ips, %d lib, %d code: %s" % (n, len(lib), len(code), r["ips"][:60]))
print("ok %d" % rows if rows and not bad else "bad: %s" % bad[:3])
PY
)
case $got in ok\ *) pass report_csv_lists_match_ips ;; *) fail report_csv_lists_match_ips "$got" ;; esac

# --format eden, checked against the default CSV: its eight columns; a row per (stack, flags), the
# counts the CSV's summed, count descending; percent as pandas' astype(int) truncates it; op and
# type decoded from flags as the earlier tool did; ips the two handler placeholders, then the
# CSV's frames; lib and code the placeholders' "??" / "??:?", the CSV's frames, and the pad.
got=$(python3 - "$D" <<'PY'
import csv, glob, os, sys
d = sys.argv[1]
def op(f): return {0: "read", 1: "write", 3: "wrprotect"}[f & 0x1f]
def typ(f): return {0: "regular", 1: "zero"}[f >> 5]
out = []
files = sorted(glob.glob(d + "/fltrace-data-report-*.out"))
if not files:
    print("no eden file"); sys.exit()
for f in files:
    ref, frames = {}, {}
    for r in csv.DictReader(open(os.path.join(d, "csv", os.path.basename(f)), newline="")):
        k = (r["ips"], int(r["flags"]))
        ref[k] = ref.get(k, 0) + int(r["count"])
        frames[r["ips"]] = (r["lib"].split("<//>")[:-1], r["code"].split("<//>")[:-1])
    total = sum(ref.values())
    lines = open(f, newline="").read().split("\n")
    if lines[0] != "ips,flags,count,percent,op,type,lib,code" or lines[-1] != "":
        out.append("%s: header %r" % (f, lines[0]))
        continue
    rows = list(csv.reader(lines[1:-1]))
    seen, last = {}, None
    for row in rows:
        if len(row) != 8:
            out.append("%d columns" % len(row)); break
        ips, flags, count, pct, o, t, lib, code = row
        flags, count = int(flags), int(count)
        fr = ips.split("|")
        if fr[:2] != ["0x0", "0x0"] or fr[-1] != "":
            out.append("ips %s" % ips[:40]); break
        ours = "|".join(fr[2:])
        k = (ours, flags)
        if k in seen:
            out.append("two rows for %s" % (k,)); break
        seen[k] = count
        if last is not None and count > last:
            out.append("not count-descending"); break
        last = count
        if int(pct) != int(count / total * 100) or o != op(flags) or t != typ(flags):
            out.append("row %s: %s %s %s" % (ours[:30], pct, o, t)); break
        l, c = lib.split("<//>"), code.split("<//>")
        el, ec = frames[ours]
        if l != ["??", "??"] + el + ["??"] or c != ["??:?", "??:?"] + ec + ["??:?"]:
            out.append("frames of %s" % ours[:30]); break
    if seen != ref:
        out.append("%s: %d rows, %d faults; the CSV: %d keys, %d faults" %
                   (f, len(seen), sum(seen.values()), len(ref), total))
print("ok" if not out else "; ".join(out[:3]))
PY
)
expect_eq report_eden_layout "eden file against the default CSV" ok "$got"

# The earlier tool's own script, unmodified, counts every fault (not copied here: it is run from the
# earlier tool's source tree when that is on this machine).
SCRIPT=$ANCHOR_SRC/scripts/prepare_flame_graph.py
if [ ! -f "$SCRIPT" ]; then
	skip report_eden_prepare_flame_graph "no $SCRIPT (set ANCHOR_FLTRACE_SRC to the earlier fltrace's source)"
	exit 0
fi
total=$(python3 -c 'import csv,glob,sys; print(sum(int(r["count"]) for f in glob.glob(sys.argv[1] + "/fltrace-data-report-*.out") for r in csv.DictReader(open(f))))' "$D/csv")
zero=$(python3 -c 'import csv,glob,sys; print(sum(int(r["count"]) for f in glob.glob(sys.argv[1] + "/fltrace-data-report-*.out") for r in csv.DictReader(open(f)) if r["type"] == "zero"))' "$D/csv")
for f in "$D"/fltrace-data-report-*.out; do
	python3 "$SCRIPT" -i "$f" -o "$f.dat" > "$f.log" 2>&1 || { fail report_eden_prepare_flame_graph "$(tail -3 "$f.log")"; exit 0; }
	python3 "$SCRIPT" -i "$f" -z -o "$f.alloc.dat" > "$f.alloc.log" 2>&1 || { fail report_eden_prepare_flame_graph "-z: $(tail -3 "$f.alloc.log")"; exit 0; }
done
sum_dat() { cat "$@" | awk '{ n += $NF } END { print n + 0 }'; }
expect_eq report_eden_prepare_flame_graph "faults in its flame graph data" "$total" "$(sum_dat "$D"/*.out.dat)"
expect_eq report_eden_prepare_flame_graph_zero "first-touch faults in its -z data" "$zero" "$(sum_dat "$D"/*.out.alloc.dat)"
# its leaves name our innermost frames: the first touches at fillscan.c's fill line, writes
fill=$(grep -n 'w->p\[i\] = ' "$ROOT/test/progs/fillscan.c" | head -1 | cut -d: -f1)
at_fill=$(python3 -c '
import csv, glob, sys
print(sum(int(r["count"]) for f in glob.glob(sys.argv[1] + "/fltrace-data-report-*.out") for r in csv.DictReader(open(f))
          if r["type"] == "zero" and r["code"].split("<//>")[0].split("<<<")[0].endswith("/fillscan.c:" + sys.argv[2])))' "$D/csv" "$fill")
[ "$at_fill" -ge 4096 ] || fail report_eden_fill_line "the CSV has $at_fill first touches at fillscan.c:$fill, not 16 MB of them"
expect_eq report_eden_prepare_flame_graph_leaf "faults at fillscan.c:$fill[w] in -z data" "$at_fill" \
	"$(grep -h "|fillscan.c:$fill\[w\] [0-9]*$" "$D"/*.out.alloc.dat | awk '{ n += $NF } END { print n + 0 }')"
