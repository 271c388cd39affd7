-- The sqlite-big workload: an in-memory database of 150,000 rows of 400 bytes (about
-- 64 MiB of B-tree pages, all held in sqlite's page cache), then 300,000 lookups by
-- primary key drawn by a linear congruential generator. No randomness, no dates:
-- every run does the same.
PRAGMA cache_size = -1000000;
CREATE TABLE t (id INTEGER PRIMARY KEY, k INTEGER, v BLOB);
WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < 149999)
INSERT INTO t SELECT n, (n * 2654435761) % 4294967296, zeroblob(400) FROM seq;
WITH RECURSIVE r(i, x) AS (
    SELECT 0, 12345
    UNION ALL
    SELECT i + 1, (x * 1103515245 + 12345) % 2147483648 FROM r WHERE i < 299999
)
SELECT count(*), sum(t.k % 1000) FROM r JOIN t ON t.id = r.x % 150000;
