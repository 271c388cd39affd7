-- Deterministic SQL workload for the pagelab sqlite lackey trace.
-- Run as: sqlite3 -batch -init /dev/null :memory: < sqlite-workload.sql
-- No randomness, no dates: all data derives from integer sequences.
-- Kept deliberately small: sqlite3's start-up alone is ~3M lackey references,
-- and every extra statement costs a few hundred thousand more to compile.
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, region INTEGER);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, amount INTEGER, note TEXT);

WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 20)
INSERT INTO customers SELECT n, 'customer-' || n, n % 4 FROM seq;

WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 100)
INSERT INTO orders
SELECT n, (n * 7) % 20 + 1, (n * 104729) % 1009,
       CASE WHEN n % 3 = 0 THEN 'express delivery' ELSE 'standard' END
FROM seq;

CREATE INDEX orders_customer ON orders(customer_id);

-- Join + group by + order by (index lookup on orders.customer_id).
SELECT c.region, count(*), sum(o.amount) AS total
FROM customers c JOIN orders o ON o.customer_id = c.id
GROUP BY c.region ORDER BY total DESC;

-- LIKE scan over the full table.
SELECT count(*) FROM orders WHERE note LIKE '%express%';
