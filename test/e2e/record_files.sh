# record: private file mappings are traced (path, offset, order) without the program noticing:
# same bytes at a small -L, SIGBUS past the last page, the file never written; shared ones counted.
source "$(dirname "$0")/../lib.sh"

if ! have_uffd; then
	skip record_files "userfaultfd is not available to this user"
	exit 0
fi
PY=/usr/bin/python3


# file_faults DIR: faults of kind file in the trace(s), summed from the report's CSV
file_faults() {
	"$FLTRACE" report -i "$1" --kind file > /dev/null 2>&1
	$PY -c '
import csv, glob, sys
print(sum(int(r["count"]) for f in glob.glob(sys.argv[1] + "/fltrace-data-report-*.out")
          for r in csv.DictReader(open(f)) if r["kind"] == "file"))' "$1"
}

# --- our own program: every case, at -L 4 for a 24 MB file (reads, writes, offsets, munmap,
#     mremap, mprotect, msync, fork, past the end) ---
mkdir -p "$TMP/data"
if same_output filemap_all "-L 4 -M 1024" "$PROGS/filemap" all "$TMP/data" 24; then
	d=$TMP/filemap_all
	grep -q '^beyond the last page: SIGBUS$' "$d/traced" && pass filemap_sigbus_past_last_page ||
		fail filemap_sigbus_past_last_page "$(grep beyond "$d/traced")"
	grep -q '^file unchanged mismatches 0$' "$d/traced" && pass filemap_private_writes_not_in_file ||
		fail filemap_private_writes_not_in_file "$(grep unchanged "$d/traced")"
	expect_stat filemap_file_faults "$d" faults_file -gt 6144
	expect_stat filemap_clean_dropped "$d" evict_file_dropped -gt 1000
	expect_stat filemap_written_moved "$d" evict_file_moved -gt 1000
fi

# --- exact counts: a sequential read of N pages is N file faults; the files view names the file
#     and the offsets read ---
head -c $((8 * 1048576 + 100)) /dev/urandom > "$TMP/data/seq.dat"
if same_output filemap_seq "-L 2 -M 256" "$PROGS/filemap" seq "$TMP/data/seq.dat"; then
	d=$TMP/filemap_seq
	expect_eq filemap_seq_exact_faults "file faults for 2049 pages" 2049 "$(file_faults "$d")"
	expect_stat filemap_seq_cap "$d" resident_peak_bytes -le $((2 << 20))
	expect_stat filemap_seq_dropped "$d" evict_file_dropped -ge $((2049 - 512))
	"$FLTRACE" report -i "$d" --kind file --files > /dev/null 2>&1
	expect_eq filemap_seq_files_view "files view" \
		"$TMP/data/seq.dat,0,$((2049 * 4096)),2049,2049" \
		"$(tail -n +2 "$d"/fltrace-data-files-*.out | cut -d, -f1-5)"
fi
if same_output filemap_offset "-L 2 -M 256" "$PROGS/filemap" seq "$TMP/data/seq.dat" 100 300; then
	d=$TMP/filemap_offset
	"$FLTRACE" report -i "$d" --kind file --files > /dev/null 2>&1
	expect_eq filemap_offset_files_view "files view" \
		"$TMP/data/seq.dat,$((100 * 4096)),$((400 * 4096)),300,300" \
		"$(tail -n +2 "$d"/fltrace-data-files-*.out | cut -d, -f1-5)"
fi

# --- python3's mmap module over a 64 MB file: private (traced) and shared read-only (counted) ---
head -c $((64 * 1048576 + 777)) /dev/urandom > "$TMP/data/big.dat"
cat > "$TMP/data/pymm.py" <<'EOF'
import hashlib, mmap, random, sys
with open(sys.argv[1], "rb") as f:
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
n = len(m)
print("len", n, "sha", hashlib.sha256(m).hexdigest())
h = hashlib.sha256()
for off in range(((n - 1) // 65536) * 65536, -1, -65536):
    h.update(m[off:off + 65536])
print("backward", h.hexdigest())
r = random.Random(7)
print("random", sum(m[r.randrange(n)] for _ in range(100000)))
m[0:5] = b"HELLO"
print("written", bytes(m[0:5]))
m.close()
with open(sys.argv[1], "rb") as f:
    s = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
print("shared", hashlib.sha256(s).hexdigest(), bytes(s[0:5]) != b"HELLO")
EOF
if same_output python_mmap "-L 8 -M 2048" $PY "$TMP/data/pymm.py" "$TMP/data/big.dat"; then
	n=$(file_faults "$TMP/python_mmap")
	[ "$n" -ge 16385 ] && pass python_mmap_file_faults || fail python_mmap_file_faults "$n file faults, expected >= 16385"
	expect_stat python_mmap_shared_counted "$TMP/python_mmap" untracked_shared_file_bytes -ge $((64 << 20))
fi

# --- sqlite3 with memory-mapped I/O: its mapping is shared (left to the kernel, counted) ---
if command -v sqlite3 > /dev/null; then
	db=$TMP/data/t.db
	sqlite3 "$db" "CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT);
		WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000)
		INSERT INTO t SELECT x, printf('%08d-%s', x, hex(randomblob(24))) FROM c;"
	q="PRAGMA mmap_size=268435456; SELECT count(*), sum(length(v)), max(v) FROM t;
		SELECT v FROM t WHERE k % 9973 = 0 ORDER BY k DESC; SELECT k FROM t ORDER BY v LIMIT 3 OFFSET 150000;"
	if same_output sqlite_mmap "-L 8 -M 2048" sqlite3 "$db" "$q"; then
		expect_stat sqlite_mmap_shared_counted "$TMP/sqlite_mmap" untracked_shared_file_bytes -gt 0
	fi
else
	skip sqlite_mmap "sqlite3 is not installed"
fi
