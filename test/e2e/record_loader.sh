# record --files=all: the code and read-only data the dynamic loader mapped are traced (file,
# offset, order, stack) without the program noticing, and the objects fltrace runs itself are not.
source "$(dirname "$0")/../lib.sh"

if ! have_uffd; then
	skip record_loader "userfaultfd is not available to this user"
	exit 0
fi
PY=/usr/bin/python3 # Debian's interpreter, not a pyenv shim

# files_view DIR: the report's files view (file,offset_start,offset_end,pages,faults,first_s,order)
files_view() {
	"$FLTRACE" report -i "$1" --kind file --files > /dev/null 2>&1
	tail -q -n +2 "$1"/fltrace-data-files-*.out
}

# --- the kernel behaviour the takeover relies on: an mremap of registered memory over a file
#     mapping keeps its registration only with UFFD_FEATURE_EVENT_REMAP (else the range reads zeros) ---
out=$("$PROGS/uffd_remap" "$PROGS/codepages" 2>&1); rc=$?
if [ $rc = 77 ]; then
	skip loader_kernel_remap "userfaultfd not available"
else
	expect_eq loader_kernel_remap "mremap over a file mapping" \
		"without EVENT_REMAP: zeros, no event|with EVENT_REMAP: fault, remap event" "$(printf '%s' "$out" | tr '\n' '|')"
fi

# --- a program of ours with 512 functions, one per page of .text, called forwards then backwards
#     at -L 1 (256 pages): the first faults on the function pages are the 512 pages in call order,
#     and the pages evicted meanwhile come back in the backward pass in exactly descending order ---
prog=$PROGS/codepages
if same_output loader_codepages "-L 1 -M 256 --files=all" "$prog" 1; then
	d=$TMP/loader_codepages
	"$FLTRACE" report -i "$d" --raw --kind file > /dev/null 2>&1
	"$FLTRACE" report -i "$d" --kind file > /dev/null 2>&1
	src=$ROOT/test/progs/codepages.c
	fwd=$(grep -n '/\* FORWARD \*/' "$src" | cut -d: -f1)
	bwd=$(grep -n '/\* BACKWARD \*/' "$src" | cut -d: -f1)
	out=$($PY - "$d" "$prog" "$fwd" "$bwd" <<'EOF'
import csv, glob, os, re, subprocess, sys
d, prog, fwd, bwd = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3], sys.argv[4]
# Function index -> page offset in the file (fn1abc is number a*64 + b*8 + c of the table).
loads = []
for l in subprocess.run(["readelf", "-lW", prog], capture_output=True, text=True).stdout.splitlines():
    f = l.split()
    if f and f[0] == "LOAD":
        loads.append((int(f[1], 16), int(f[2], 16), int(f[4], 16), "E" in f[6:-1]))
def file_off(vaddr):
    for off, va, sz, _ in loads:
        if va <= vaddr < va + sz:
            return vaddr - va + off
page = {}
for l in subprocess.run(["nm", prog], capture_output=True, text=True).stdout.splitlines():
    m = re.match(r"([0-9a-f]+) t fn1([0-7])([0-7])([0-7])$", l)
    if m:
        page[int(m.group(2)) * 64 + int(m.group(3)) * 8 + int(m.group(4))] = file_off(int(m.group(1), 16))
order = [page[i] for i in range(512)]
text = [(off, off + sz) for off, va, sz, x in loads if x][0]
# Maps history: where the executable's code was mapped (its line shows the file again).
base = None
for f in glob.glob(d + "/fltrace-data-procmaps-*.out"):
    for l in open(f):
        p = l.split()
        if len(p) >= 6 and p[5] == prog and p[1] == "r-xp":
            lo = int(p[0].split("-")[0], 16)
            base = lo - int(p[2], 16)
seq = []
for f in glob.glob(d + "/fltrace-data-faults-*.out"):
    for r in csv.DictReader(open(f)):
        off = int(r["addr"], 16) - base
        if r["kind"] == "file" and off in set(order):
            seq.append(off)
first, rest = seq[:512], seq[512:]
print("forward_order", "ok" if first == order else "first 512 faults not in call order: %s" % first[:8])
ok = len(rest) >= 200 and all(a > b for a, b in zip(rest, rest[1:])) and all(x in order[:512 - 64] for x in rest)
print("backward_order", "ok" if ok else "%d re-faults, not strictly descending: %s" % (len(rest), rest[:8]))
print("in_text", "ok" if all(text[0] <= x < text[1] for x in seq) else "a fault outside .text")
# Symbolized: leaf in a generated function (codepages.c), caller the forward or backward loop's line.
n_fwd = n_bwd = 0
for f in glob.glob(d + "/fltrace-data-report-*.out"):
    for r in csv.DictReader(open(f)):
        fr = r["code"].split("<//>")
        if len(fr) > 1 and fr[0].endswith("codepages.c:18") and fr[1].endswith("codepages.c:" + fwd):
            n_fwd += int(r["count"])
        if len(fr) > 1 and fr[0].endswith("codepages.c:18") and fr[1].endswith("codepages.c:" + bwd):
            n_bwd += int(r["count"])
print("symbolized", "ok" if n_fwd == 512 and n_bwd == len(rest) else "forward %d (512), backward %d (%d)" % (n_fwd, n_bwd, len(rest)))
EOF
)
	for c in forward_order backward_order in_text symbolized; do
		r=$(printf '%s\n' "$out" | sed -n "s/^$c //p")
		[ "$r" = ok ] && pass "loader_codepages_$c" || fail "loader_codepages_$c" "${r:-no result: $out}"
	done
	expect_stat loader_codepages_cap "$d" resident_peak_bytes -le $((1 << 20))
	expect_stat loader_codepages_dropped "$d" evict_file_dropped -ge 256
	# The files view: every page of the executable's code segment was read (one range, .plt and
	# _start through main), nothing of its other segments, nothing of any other file.
	seg=$($PY -c '
import subprocess, sys
for l in subprocess.run(["readelf", "-lW", sys.argv[1]], capture_output=True, text=True).stdout.splitlines():
    f = l.split()
    if f and f[0] == "LOAD" and "E" in f[6:-1]:
        print(int(f[1], 16), int(f[1], 16) + int(f[4], 16))' "$prog")
	set -- $seg
	lo=$1 hi=$(( ($2 + 4095) / 4096 * 4096 ))
	expect_eq loader_codepages_files_view "files view" "$(realpath "$prog"),$lo,$hi,$(( (hi - lo) / 4096 ))" \
		"$(files_view "$d" | cut -d, -f1-4 | tr '\n' ' ' | sed 's/ $//')"
fi
expect_error loader_bad_files_value 2 "--files: 'some' is not a choice" "$FLTRACE" record -L 8 -M 64 --files=some -- true

# --- the default stays what it was: nothing of the loader's is taken over ---
if same_output loader_default_off "-L 1 -M 256" "$prog" 1; then
	expect_stat loader_default_off_none "$TMP/loader_default_off" loader_file_bytes -eq 0
fi

# --- a real program: Debian's python3 (libpython is linked into the executable) at -L 4, with
#     a fork: faults on its own code and read-only data; libc, ld.so, libm, libunwind, liblzma
#     and fltrace itself are never taken over, and are counted as left alone ---
cat > "$TMP/loader.py" <<'EOF'
import json, os, sys, decimal, hashlib
data = {"k%d" % i: [i, str(i) * 3, i / 7] for i in range(3000)}
s = json.dumps(data, sort_keys=True)
print(len(s), hashlib.sha256(s.encode()).hexdigest())
print(sum(v[0] for v in json.loads(s).values()), decimal.Decimal(1) / decimal.Decimal(7))
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    print("child", sorted(set(s))[:12]); sys.stdout.flush(); os._exit(3)
_, st = os.waitpid(pid, 0)
print("parent", os.WEXITSTATUS(st))
EOF
if [ -x $PY ] && same_output loader_python "-L 4 -M 1024 --files=all" $PY "$TMP/loader.py"; then
	d=$TMP/loader_python
	exe=$(realpath $PY)
	view=$(files_view "$d")
	n=$(printf '%s\n' "$view" | awk -F, -v f="$exe" '$1 == f { s += $5 } END { print s + 0 }')
	[ "$n" -ge 300 ] && pass loader_python_exe_faults || fail loader_python_exe_faults "$n file faults on $exe"
	bad=$(printf '%s\n' "$view" | cut -d, -f1 | sort -u | grep -E 'libc\.so|ld-linux|libm\.so|libunwind|liblzma|libfltrace' | tr '\n' ' ')
	[ -z "$bad" ] && pass loader_python_excluded_not_traced || fail loader_python_excluded_not_traced "file faults on $bad"
	# libc's code alone is 1.3 MB; every process (the fork child too) counts it.
	expect_stat loader_python_excluded_counted "$d" untracked_loader_file_bytes -ge $((1 << 20))
	expect_stat loader_python_taken_counted "$d" loader_file_bytes -ge $((2 << 20))
	np=$(ls "$d"/fltrace-data-trace-*.bin | wc -l)
	expect_eq loader_python_fork_traced "traced processes" 2 "$np"
	# Code of libc may read python's pages (strlen of a string in .rodata): the instruction is in
	# libc, the page is python's. The report's file column names python, never libc.
	"$FLTRACE" report -i "$d" --kind file > /dev/null 2>&1
	bad=$($PY -c '
import csv, glob, sys
print(" ".join(sorted({r["file"] for f in glob.glob(sys.argv[1] + "/fltrace-data-report-*.out")
      for r in csv.DictReader(open(f)) if "libc.so" in r["file"] or "ld-linux" in r["file"]})))' "$d")
	[ -z "$bad" ] && pass loader_python_report_files || fail loader_python_report_files "report names $bad"
else
	[ -x $PY ] || skip loader_python "$PY is not installed"
fi

# --- threads running python code while the main thread imports extension modules: each import's
#     dlopen takes the new module's code over while the others execute taken-over code ---
cat > "$TMP/loader_threads.py" <<'EOF'
import threading, hashlib, json
stop = False
done = [0] * 4
def work(i):
    while not stop:
        json.dumps({"a": list(range(50)), "i": i}) and hashlib.sha1(b"x" * 100).hexdigest()
    done[i] = 1
ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in ts: t.start()
import decimal, fractions, statistics, csv, sqlite3, ctypes, array, zlib, bz2, lzma, unicodedata, select, mmap, socket, binascii
print(decimal.Decimal(2).sqrt(), fractions.Fraction(3, 9), statistics.mean([1, 2, 3, 4]))
print(zlib.crc32(b"abc"), binascii.hexlify(b"hi"), unicodedata.name("a"))
stop = True
for t in ts: t.join()
print(done)
EOF
if [ -x $PY ]; then
	for i in 1 2 3; do
		same_output loader_threads_$i "-L 2 -M 1024 --files=all" $PY "$TMP/loader_threads.py" || break
	done
fi

# --- a fork child that closes every fd before exec (subprocess's close_fds with preexec_fn, which
#     forks instead of vforking): fltrace's userfaultfds and files must survive, or the child's
#     evicted and taken-over pages read zeros (its exec'd argv came out empty) ---
cat > "$TMP/loader_subprocess.py" <<'EOF'
import subprocess, os
print(subprocess.run(["/bin/echo", "vfork-path"], capture_output=True).stdout)
print(subprocess.run(["/bin/echo", "fork-path"], capture_output=True, preexec_fn=lambda: None).stdout)
print(subprocess.run(["/bin/echo", "fork-path2"], capture_output=True, preexec_fn=os.getpid, close_fds=True).stdout)
EOF
if [ -x $PY ]; then
	same_output loader_subprocess_close_fds "-L 1 -M 512 --files=all" $PY "$TMP/loader_subprocess.py"
	same_output subprocess_close_fds_default "-L 1 -M 512" $PY "$TMP/loader_subprocess.py"
fi

# --- SIGALRM every 200 us while the program maps and unmaps: the handler (its code on a page of
#     its own, its counter on the heap) must never run on a thread of fltrace's, which would wait
#     for a fault only it can serve (1 run of 3 hung so with --files=all at -L 1) ---
for i in 1 2 3; do
	same_output loader_sigalarm_$i "-L 1 -M 256 --files=all" "$PROGS/sigalarm" 20000 || break
done
same_output sigalarm_default "-L 1 -M 256" "$PROGS/sigalarm" 20000

# --- sqlite3: its code lives in libsqlite3.so, which is taken over; the answer stays the same ---
if command -v sqlite3 > /dev/null; then
	q="CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT); CREATE INDEX iv ON t(v);
		WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 30000)
		INSERT INTO t SELECT x, printf('%08d-%x', x * 7919 % 30011, x * x) FROM c;
		SELECT count(*), sum(length(v)), max(v), min(v) FROM t; SELECT k FROM t ORDER BY v DESC LIMIT 3;"
	if same_output loader_sqlite "-L 4 -M 1024 --files=all" sqlite3 :memory: "$q"; then
		lib=$(files_view "$TMP/loader_sqlite" | cut -d, -f1 | grep -c 'libsqlite3\.so')
		[ "$lib" -ge 1 ] && pass loader_sqlite_library_faults || fail loader_sqlite_library_faults "no file faults on libsqlite3.so"
	fi
else
	skip loader_sqlite "sqlite3 is not installed"
fi

# --- dlopen and dlclose: the plugin's code is taken over when it is loaded, given back before it
#     is unloaded (something else is then mapped at its address), and its frames still resolve ---
if same_output loader_dlopen "-L 8 -M 256 --files=all" "$PROGS/dlopener" "$PROGS/plugin.so"; then
	rep=$("$FLTRACE" report -i "$TMP/loader_dlopen" --kind file --by line --top 10 2>&1)
	printf '%s\n' "$rep" | grep -q 'plugin_touch .*plugin\.c:[0-9]' && pass loader_dlopen_plugin_code ||
		fail loader_dlopen_plugin_code "no file fault in plugin_touch: $rep"
fi

# The loader's own allocations are never evicted: binding a PLT slot walks the global scope list,
# which a dlopen(RTLD_GLOBAL) put on the heap, and a handler thread binds libunwind's slots as it
# unwinds a thread asleep in a system call. With that list evicted the handler waited for itself
# (a hang, in every run).
same_output loader_lazy_binding_heap "-L 4 -M 256" "$PROGS/lazybind" "$PROGS/plugin.so" "$PROGS/lazybind" &&
	grep -q '^read 4096$' "$TMP/loader_lazy_binding_heap/traced" && pass loader_lazy_binding_read ||
	fail loader_lazy_binding_read "$(head -c 200 "$TMP/loader_lazy_binding_heap/traced")"

# An executable that defines malloc itself (rustc; programs linking tcmalloc or mimalloc): its
# definitions come before ours, so the loader put link maps, the scope list and TLS vectors on the
# program's heap, and libunwind allocated from it on the handler thread. Evicted, any of them made
# the handler wait for itself: a hang, in every run, that not even the watchdog could report.
# Threads touching a dlopened object's TLS, one after another, reuse a cached stack: nptl then
# frees the TLS block the loader allocated through libc's free, the program's (a crash before
# libc's free slot was rebound too).
same_output loader_own_malloc "-L 4 -M 256" "$PROGS/ownmalloc" "$PROGS/plugin.so" "$PROGS/ownmalloc" "$PROGS/tlsmod.so" &&
	grep -q '^read 4096 readlink ok thread readlink ok tls 3$' "$TMP/loader_own_malloc/traced" &&
	pass loader_own_malloc_calls || fail loader_own_malloc_calls "$(head -c 200 "$TMP/loader_own_malloc/traced")"
expect_stat loader_own_malloc_evicted "$TMP/loader_own_malloc" faults_refetch -gt 0

# The same program with a library whose constructor dlopens (RTLD_GLOBAL) before fltrace's runs:
# that link map and the scope list stay on the program's heap, and a handler that bound one of
# libunwind's lazy PLT slots walked them once evicted (a hang). libunwind's slots are bound at
# start now.
EARLY_DLOPEN=$PROGS/plugin.so same_output loader_own_malloc_early_dlopen "-L 4 -M 256" "$PROGS/ownmalloc-early" \
	"$PROGS/plugin.so" "$PROGS/ownmalloc" "$PROGS/tlsmod.so"

# A non-PIE executable that only takes malloc's address has an undefined symbol with a value (its
# PLT entry), which dlsym returns: it does not bring its own malloc. Taken for one, CPython got a
# note on its stderr (its own tests compare stderr) and libunwind was rebound for nothing.
same_output loader_malloc_address_only "-L 4 -M 256" "$PROGS/mallocaddr" &&
	grep -q '^sum [0-9]* readlink ok$' "$TMP/loader_malloc_address_only/traced" &&
	pass loader_malloc_address_only_runs || fail loader_malloc_address_only_runs "$(head -c 200 "$TMP/loader_malloc_address_only/traced")"
expect_eq loader_malloc_address_only_quiet "fltrace's notes on the program's stderr" "0" \
	"$(grep -c 'defines malloc' "$TMP/loader_malloc_address_only/err")"

# A thread made before 16 objects with TLS were dlopened touches their TLS: the loader grows its TLS
# vector and allocates each block inside __tls_get_addr. A fault on jemalloc's metadata there ran
# the stack signal's handler, whose libunwind reads its own TLS through __tls_get_addr again: the
# loader's arena was re-entered mid-operation and crashed (SIGSEGV in every run, -L or not).
mkdir -p "$TMP/tlsmods"
mods=()
for i in $(seq 1 16); do cp "$PROGS/tlsmod.so" "$TMP/tlsmods/tls$i.so"; mods+=("$TMP/tlsmods/tls$i.so"); done
same_output loader_tls_vector_grows "" "$PROGS/tlsmany" "${mods[@]}"
same_output loader_tls_vector_grows_evicted "-L 4 -M 256" "$PROGS/tlsmany" "${mods[@]}"

# Every trace file ends where its records end: faults recorded after the trace was closed at exit
# (the loader's pages, touched by exit code) once grew it to its 64 GiB window (sparse, but `ls`,
# `tar` and `scp` see 64 GiB).
big=$(find "$TMP" -name 'fltrace-data-trace-*.bin' -size +1G | head -3 | tr '\n' ' ')
expect_eq trace_files_end_at_their_records "trace files over 1 GiB" "" "$big"
