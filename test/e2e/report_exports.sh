#!/usr/bin/env bash
# End-to-end: the exports of `fltrace report` read back by parsers we did not write: pprof's
# profile.proto through protoc and python's protobuf, speedscope's JSON through python's json and
# the rules of its published schema, perf-script's text through FlameGraph's stackcollapse-perf.pl
# when it is installed (Debian does not package it) and perf script's documented layout.
. "$(dirname "$0")/../lib.sh"
GEN=$BUILD/test/unit/test_report
if [ ! -x "$GEN" ]; then skip report_exports "$GEN not built (make unit-test)"; exit 0; fi
D=$TMP/t; mkdir -p "$D"
"$GEN" --write "$D" 1000 > "$TMP/answers" || { fail report_exports_write "writer failed"; exit 0; }
. "$TMP/answers"
# The synthetic trace: 5 first touches and 3 re-fetches at leaf<-b<-c, 2 file faults in getpid<-c,
# one inside read(2) at b<-c, one without a stack, one in libm's cos when libm could be loaded.
if [ -n "$libm" ]; then total=13 lat=96000; else total=12 lat=95000; fi

# ---- pprof
"$FLTRACE" report -i "$D" --format pprof > "$TMP/out" 2> "$TMP/err" # stderr: the note on the fault without a stack
P=$D/fltrace-data-report-1000.pb.gz
expect_eq pprof_written "file named on stdout" "$P" "$(cat "$TMP/out")"
PY=/usr/bin/python3 # Debian's python, where python3-protobuf is installed
if ! command -v protoc >/dev/null || ! "$PY" -c 'import google.protobuf' 2>/dev/null; then
	skip pprof_readback "protoc or python3-protobuf missing; run ./deps.sh"
else
	protoc --python_out="$TMP" -I "$ROOT/test/data" "$ROOT/test/data/profile.proto"
	got=$(PYTHONPATH=$TMP "$PY" - "$P" <<'PYEOF'
import gzip, sys
import profile_pb2
p = profile_pb2.Profile()
p.ParseFromString(gzip.open(sys.argv[1]).read())
S = p.string_table
assert S[0] == ""
fn = {f.id: S[f.name] for f in p.function}
loc = {l.id: l for l in p.location}
maps = {m.id: S[m.filename] for m in p.mapping}
print("types", " ".join(S[t.type] + "/" + S[t.unit] for t in p.sample_type))
print("totals", sum(s.value[0] for s in p.sample), sum(s.value[1] for s in p.sample))
for s in p.sample:
    names = ";".join(fn[ln.function_id] for i in s.location_id for ln in loc[i].line)
    labels = ",".join(S[l.key] + "=" + S[l.str] for l in s.label)
    print("sample", names, s.value[0], s.value[1], labels)
print("leafmap", maps.get(loc[p.sample[0].location_id[0]].mapping_id, "none"))
PYEOF
)
	expect_eq pprof_types "sample types" "types faults/count latency/nanoseconds" \
		"$(grep '^types' <<< "$got")"
	expect_eq pprof_totals "faults and latency summed over samples" "totals $total $lat" \
		"$(grep '^totals' <<< "$got")"
	expect_eq pprof_first_touch "first-touch sample, leaf first" \
		"sample synth_leaf;synth_site_b;synth_site_c 5 15000 kind=zero,access=write,origin=user" \
		"$(grep '^sample' <<< "$got" | sed -n 1p)"
	expect_eq pprof_refetch "re-fetch sample" \
		"sample synth_leaf;synth_site_b;synth_site_c 3 30000 kind=refetch,access=read,origin=user" \
		"$(grep '^sample' <<< "$got" | sed -n 2p)"
	expect_eq pprof_syscall_label "syscall sample labelled" \
		"sample synth_site_b;synth_site_c 1 7000 kind=refetch,access=write,origin=syscall,syscall=read" \
		"$(grep '^sample synth_site_b' <<< "$got")"
	expect_eq pprof_mapping "leaf's mapping is the object" "leafmap $exe" "$(grep '^leafmap' <<< "$got")"
fi

# ---- speedscope
"$FLTRACE" report -i "$D" --format speedscope >/dev/null 2>&1
J=$D/fltrace-data-report-1000.speedscope.json
got=$(python3 - "$J" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
# The rules of speedscope's file-format-schema.json for a sampled profile.
assert d["$schema"] == "https://www.speedscope.app/file-format-schema.json"
frames = d["shared"]["frames"]
assert all(isinstance(f["name"], str) for f in frames)
assert all(isinstance(f.get("line", 0), int) and isinstance(f.get("file", ""), str) for f in frames)
units = {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}
for p in d["profiles"]:
    assert p["type"] == "sampled" and p["unit"] in units and isinstance(p["name"], str)
    assert len(p["samples"]) == len(p["weights"])
    assert all(0 <= i < len(frames) for s in p["samples"] for i in s)
    assert sum(p["weights"]) == p["endValue"] - p["startValue"]
    print(p["name"], p["unit"], sum(p["weights"]))
s0 = d["profiles"][0]["samples"][0]
print("root-first", ";".join(frames[i]["name"] for i in s0), frames[s0[-1]].get("line"))
PYEOF
)
expect_eq speedscope_faults "faults profile: weights sum to the fault count" "faults (pages) none $total" \
	"$(sed -n 1p <<< "$got")"
expect_eq speedscope_latency "service-time profile" "fault service time nanoseconds $lat" \
	"$(sed -n 2p <<< "$got")"
expect_eq speedscope_stack "first sample, root first, leaf line" \
	"root-first synth_site_c;synth_site_b;synth_leaf $leaf_line" "$(sed -n 3p <<< "$got")"

# ---- perf-script
"$FLTRACE" report -i "$D" --format perf-script >/dev/null 2>&1
T=$D/fltrace-data-report-1000.perf.txt
want="test_report;synth_site_c;synth_site_b;synth_leaf 8"
got=$(python3 - "$T" <<'PYEOF'
import re, sys, collections
# perf script's layout: an event line "comm pid/tid [cpu] time: period event:", then one
# "\taddr sym (dso)" line per frame, leaf first, then a blank line. A sample weighs its period.
stacks, cur, comm = collections.Counter(), None, None
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    m = re.match(r"^(\S+) (\d+)/(\d+) \[\d+\] (\d+\.\d{6}): (\d+) (\S+):$", line)
    if m:
        assert cur is None, "event line inside a sample"
        comm, cur, period = m.group(1), [], int(m.group(5))
    elif line == "":
        stacks[";".join([comm] + cur[::-1])] += period
        cur = None
    else:
        m = re.match(r"^\t *([0-9a-f]+) (\S.*) \((\S+)\)$", line)
        assert m and cur is not None, "bad frame line: " + line
        cur.append(m.group(2))
print(sum(stacks.values()))
for k, v in stacks.most_common(1):
    print(k, v)
PYEOF
)
expect_eq perf_script_layout "samples in perf script's layout" "$total|$want" "$(tr '\n' '|' <<< "$got" | sed 's/|$//')"
expect_eq perf_script_one_sample_a_callsite "samples: one per distinct stack" \
	"$("$FLTRACE" report -i "$D" -o - 2>/dev/null | python3 -c 'import csv,sys; print(len(list(csv.DictReader(sys.stdin))))')" \
	"$(grep -c ' page-faults:$' "$T")"
SC=$(command -v stackcollapse-perf.pl || true)
[ -z "$SC" ] && [ -n "${FLAMEGRAPH_DIR:-}" ] && SC=$FLAMEGRAPH_DIR/stackcollapse-perf.pl
if [ -n "$SC" ] && [ -f "$SC" ]; then
	# it counts samples, one per callsite, whatever their period
	expect_eq perf_script_stackcollapse "stackcollapse-perf.pl" "${want% *} 1" \
		"$(perl "$SC" "$T" 2>/dev/null | grep synth_leaf)"
else
	skip perf_script_stackcollapse "FlameGraph's stackcollapse-perf.pl not found (Debian does not package it; set FLAMEGRAPH_DIR)"
fi

# A real sort under a small -L (re-fetches at thousands of stacks): the export is no bigger than
# the trace it comes from (a stack per page made it 4x that), and its periods sum to the faults.
if have_uffd && have_preload; then
	S=$TMP/sort; mkdir -p "$S"
	awk 'BEGIN { x = 12345; for (i = 0; i < 200000; i++) { x = (x * 16807) % 2147483647; printf "%010d %028d\n", x, i } }' > "$S/in"
	if LC_ALL=C timeout "$HANG" "$FLTRACE" record -L 8 -M 1024 -o "$S" -- sort -o "$S/out" "$S/in" > /dev/null 2>&1 &&
		"$FLTRACE" report -i "$S" --format perf-script > /dev/null 2>&1; then
		pt=$(stat -c %s "$S"/fltrace-data-report-*.perf.txt); tr=$(stat -c %s "$S"/fltrace-data-trace-*.bin)
		sum=$(awk '/ page-faults:$/ { s += $(NF - 1) } END { print s }' "$S"/fltrace-data-report-*.perf.txt)
		faults=$(stat_max "$S" faults)
		if [ "$pt" -le "$tr" ] && [ "$sum" = "$faults" ]; then pass perf_script_sort_size
		else fail perf_script_sort_size "perf.txt $pt bytes, trace $tr; periods sum to $sum, $faults faults"; fi
	else fail perf_script_sort_size "record or report of sort failed"; fi
else skip perf_script_sort_size "userfaultfd or the preload library missing"; fi

# ---- output choices
"$FLTRACE" report -i "$D" --format speedscope -o "$TMP/one.json" >/dev/null 2>&1
expect_eq export_output_file "-o FILE: the same profiles (only the title says all processes)" \
	"$(sed 's/"name":"page faults: [^"]*"//' "$J")" "$(sed 's/"name":"page faults: [^"]*"//' "$TMP/one.json")"
expect_error export_unknown_format 2 "--format: unknown format 'nope'" "$FLTRACE" report -i "$D" --format nope
