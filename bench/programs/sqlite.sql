-- Whole-program workload: sqlite3 on an in-memory database. scripts/bench.sh replaces ROWS by
-- the row count. Inserts ROWS generated rows in one transaction (a recursive CTE makes the
-- values), indexes them, aggregates, joins, updates and deletes; prints checksums.
PRAGMA cache_size = -65536;
CREATE TABLE items(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, price REAL, note TEXT);
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ROWS)
INSERT INTO items(grp, name, price, note)
  SELECT i % 1000, 'item-' || i || '-' || (i * 7919 % 10007), (i * 37 % 1000) / 10.0,
         substr('abcdefghijklmnopqrstuvwxyz0123456789', 1 + i % 20, 5 + i % 30)
  FROM n;
COMMIT;
CREATE INDEX items_name ON items(name);
CREATE INDEX items_grp_price ON items(grp, price);
SELECT count(*), sum(length(name)), round(sum(price), 1) FROM items;
SELECT count(*) FROM (SELECT grp, avg(price), group_concat(note, ',') FROM items GROUP BY grp);
SELECT count(*) FROM items a JOIN items b ON a.name = b.name WHERE a.grp < 500;
SELECT count(DISTINCT note), max(length(note)) FROM items;
SELECT sum(c) FROM (SELECT grp, count(*) AS c FROM items WHERE price > 50 GROUP BY grp ORDER BY 2 DESC LIMIT 100);
UPDATE items SET note = note || '-updated' WHERE id % 3 = 0;
DELETE FROM items WHERE id % 5 = 0;
SELECT count(*), sum(length(note)) FROM items;
