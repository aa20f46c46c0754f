# Workload for test/e2e/record_real.sh and test/stress/run.sh: builds N MB-ish of Python objects
# (dicts, tuples, strings, bytes, lists), then re-reads them several times and hashes what it sees.
# Deterministic: no randomness, no addresses, no hash-seed dependence (set order is never printed).
# Usage: python3 real_objects.py [scale] [passes] [stride]; scale 1 is ~80 MB of objects.
# stride 1 (default) re-reads the objects in allocation order (one re-fetch per page and pass at a
# small -L); a large prime stride jumps between pages on every object (a re-fetch per object).
import hashlib, math, sys

scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
passes = int(sys.argv[2]) if len(sys.argv) > 2 else 3
stride = int(sys.argv[3]) if len(sys.argv) > 3 else 1
n = int(100000 * scale)

recs = []
for i in range(n):
    k = (i * 2654435761) % 1000003
    recs.append({"id": i, "key": "k%07d" % k, "vals": (i, k, i ^ k, float(i) / 7.0),
                 "blob": bytes((i + j) & 0xff for j in range(64)), "tags": ["t%d" % (k % 97), "u%d" % (i % 13)]})
index = {r["key"]: r["id"] for r in recs}

h = hashlib.sha256()
for p in range(passes):
    step = stride
    while math.gcd(step, n) != 1:  # visit every object once per pass
        step += 1
    j = p
    for _ in range(n):
        r = recs[j]
        h.update(r["key"].encode())
        h.update(r["blob"])
        h.update(repr(r["vals"]).encode())
        h.update(r["tags"][p % 2].encode())
        j = (j + step) % n
srt = sorted(recs, key=lambda r: (r["vals"][2], r["key"]))
h.update(b"".join(r["key"].encode() for r in srt[:: max(1, n // 1000)]))
print("objects", n, "passes", passes, "index", len(index), "sha256", h.hexdigest())
