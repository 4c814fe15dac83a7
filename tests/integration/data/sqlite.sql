-- sqlite3 workload: a table of generated rows, an index, aggregates, a join, a window
-- function, updates and deletes, then an integrity check. Everything printed is deterministic.
.bail on
.headers on
.mode list
PRAGMA cache_size = -16000;
CREATE TABLE t (id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, val REAL, payload BLOB);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000)
INSERT INTO t (id, grp, name, val, payload)
SELECT i, (i * 7919) % 1000, printf('name-%06d-%s', (i * 104729) % 300000, hex(i)),
       (i % 997) * 1.5, zeroblob(i % 64)
FROM n;
SELECT count(*), sum(grp), total(val), sum(length(name)), sum(length(payload)) FROM t;
CREATE INDEX t_grp ON t (grp, val);
CREATE INDEX t_name ON t (name);
SELECT grp, count(*), round(avg(val), 3), min(name), max(name) FROM t
GROUP BY grp ORDER BY count(*) DESC, grp LIMIT 10;
SELECT grp % 7, count(DISTINCT name), length(group_concat(name)) FROM t GROUP BY grp % 7 ORDER BY 1;
CREATE TABLE g AS SELECT grp, sum(val) AS s FROM t GROUP BY grp;
SELECT count(*), round(sum(g.s), 1) FROM t JOIN g USING (grp) WHERE t.id % 10 = 0;
SELECT id, name, rank FROM (
  SELECT id, name, rank() OVER (PARTITION BY grp ORDER BY val DESC, id) AS rank FROM t
) WHERE rank = 1 ORDER BY id LIMIT 10;
UPDATE t SET name = upper(name), val = val + 1 WHERE grp < 300;
DELETE FROM t WHERE id % 3 = 0;
SELECT count(*), sum(val), count(DISTINCT substr(name, 1, 8)) FROM t;
SELECT name FROM t WHERE name LIKE 'NAME-0001%' ORDER BY name LIMIT 5;
PRAGMA integrity_check;
VACUUM;
SELECT count(*) FROM t;
