-- Workload for test/e2e/record_real.sh: run as `sqlite3 :memory: < real_sqlite.sql`, after a
-- line `CREATE TEMP TABLE p(n); INSERT INTO p VALUES(<rows>);` (the runner prepends it).
-- Deterministic: no random(), no dates; every query has an ORDER BY or is an aggregate.
PRAGMA cache_size = -200000;
CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, g INTEGER, v TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < (SELECT n FROM p))
INSERT INTO t SELECT x, printf('k%09d', (x * 2654435761) % 1000000007), x % 97,
	printf('%.*c', 40 + x % 60, char(97 + x % 26)) || x FROM c;
CREATE INDEX t_k ON t(k);
CREATE INDEX t_g ON t(g, k);
SELECT count(*), sum(length(v)), min(k), max(k) FROM t;
SELECT g, count(*), sum(id), max(length(v)) FROM t GROUP BY g ORDER BY g LIMIT 10;
SELECT id, k FROM t ORDER BY k LIMIT 5 OFFSET 1000;
SELECT count(*) FROM t a JOIN t b ON a.k = b.k WHERE a.id % 3 = 0;
UPDATE t SET v = upper(v) WHERE id % 5 = 0;
DELETE FROM t WHERE g = 13;
SELECT count(*), sum(length(v)), total(id), group_concat(substr(v, 1, 2), '') FILTER (WHERE id % 9973 = 0) FROM t;
SELECT k, g, substr(v, 1, 8) FROM t ORDER BY v DESC, id LIMIT 5;
