#!/usr/bin/env python3
"""Deterministic inputs for the pagelab workloads (called by prepare.sh).

    gen.py text  LINES OUT      pseudo-English text, Zipf-distributed words
    gen.py keys  LINES OUT      sort input: "key<TAB>number<TAB>words" lines
    gen.py json  RECORDS OUT    a JSON array of nested records
    gen.py csrc  FUNCS OUT      a C translation unit (structs, loops, switch, qsort)
                                including <stdio.h>, <stdlib.h>, <string.h>, <math.h>
    gen.py cbare FUNCS OUT      the same functions, with a few declarations instead of
                                the headers (much less for the compiler to parse)
    gen.py sql   ROWS OUT       a SQL script for sqlite3 (tables, CTE inserts, index, queries)

Every output depends only on the arguments: a fixed-seed random.Random (Mersenne
Twister, the same stream on every Python 3), no dates, no hostnames, no hash order.
Outputs are written to OUT.tmp and renamed, so an interrupted run leaves nothing half
written.
"""
import os
import random
import sys

SEED = 20240101


def vocabulary(rng, n=4000):
    """n distinct lowercase words of 2-11 letters, with English-like letter odds."""
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    weights = [12.7, 9.1, 8.2, 7.5, 7.0, 6.7, 6.3, 6.1, 6.0, 4.3, 4.0, 2.8, 2.8,
               2.4, 2.4, 2.2, 2.0, 2.0, 1.9, 1.5, 1.0, 0.8, 0.15, 0.15, 0.1, 0.07]
    words, seen = [], set()
    while len(words) < n:
        k = rng.choice((2, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 7, 7, 8, 9, 10, 11))
        w = "".join(rng.choices(letters, weights, k=k))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def zipf_picker(rng, words):
    cum, total = [], 0.0
    for i in range(len(words)):
        total += 1.0 / (i + 1)
        cum.append(total)
    return lambda k: rng.choices(words, cum_weights=cum, k=k)


def sentence(rng, pick):
    ws = pick(rng.randint(4, 14))
    ws[0] = ws[0].capitalize()
    return " ".join(ws) + rng.choice(".......?!;:")


def gen_text(n, out):
    rng = random.Random(SEED)
    pick = zipf_picker(rng, vocabulary(rng))
    for _ in range(n):
        out.write(sentence(rng, pick) + "\n")


def gen_keys(n, out):
    rng = random.Random(SEED + 1)
    pick = zipf_picker(rng, vocabulary(rng))
    for i in range(n):
        key = "".join(pick(rng.randint(1, 3)))[:24]
        out.write(f"{key}\t{rng.randrange(10**9)}\t{' '.join(pick(rng.randint(1, 6)))}\n")


def gen_json(n, out):
    import json
    rng = random.Random(SEED + 2)
    pick = zipf_picker(rng, vocabulary(rng))
    recs = []
    for i in range(n):
        recs.append({
            "id": i,
            "name": " ".join(pick(2)),
            "active": rng.random() < 0.7,
            "score": round(rng.uniform(0, 1000), 3),
            "tags": pick(rng.randint(0, 5)),
            "address": {"street": " ".join(pick(2)).title(), "number": rng.randint(1, 999),
                        "zip": f"{rng.randrange(100000):05d}"},
            "history": [{"t": rng.randrange(10**6), "v": rng.randint(-500, 500)}
                        for _ in range(rng.randint(0, 6))],
            "note": None if rng.random() < 0.5 else sentence(rng, pick),
        })
    json.dump(recs, out, separators=(",", ":"))
    out.write("\n")


C_DECLS = """typedef unsigned long size_t;
#define NULL ((void *)0)
int printf(const char *, ...);
int snprintf(char *, size_t, const char *, ...);
void qsort(void *, size_t, size_t, int (*)(const void *, const void *));
size_t strlen(const char *);
double sqrt(double);

"""


def gen_csrc(n, out, headers=True):
    rng = random.Random(SEED + 3)
    if headers:
        out.write("#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <math.h>\n\n")
    else:
        out.write(C_DECLS)
    out.write("struct item { int key; double weight; char name[16]; struct item *next; };\n\n")
    out.write("static int cmp_items(const void *a, const void *b)\n{\n"
              "    const struct item *x = a, *y = b;\n"
              "    return (x->key > y->key) - (x->key < y->key);\n}\n\n")
    for f in range(n):
        a, b, c = rng.randint(2, 97), rng.randint(1, 31), rng.randint(3, 11)
        out.write(f"double work_{f}(struct item *items, int n, unsigned seed)\n{{\n")
        out.write("    double acc = 0.0;\n    struct item *head = NULL;\n")
        out.write("    for (int i = 0; i < n; i++) {\n")
        out.write(f"        seed = seed * 1103515245u + {12345 + f}u;\n")
        out.write(f"        items[i].key = (int)(seed % {a * 1000}u);\n")
        out.write(f"        items[i].weight = sqrt((double)(items[i].key + {b})) * {c}.0;\n")
        out.write(f"        snprintf(items[i].name, sizeof items[i].name, \"w{f}-%d\", i);\n")
        out.write("        items[i].next = head;\n        head = &items[i];\n    }\n")
        out.write("    qsort(items, (size_t)n, sizeof *items, cmp_items);\n")
        out.write("    for (int i = 0; i < n; i++) {\n")
        out.write(f"        switch (items[i].key % {c}) {{\n")
        for k in range(c):
            op = rng.choice(["+=", "-=", "+="])
            out.write(f"        case {k}: acc {op} items[i].weight * {rng.randint(1, 9)}.0 / (1.0 + {k}); break;\n")
        out.write("        default: acc += strlen(items[i].name); break;\n        }\n    }\n")
        out.write(f"    for (struct item *p = head; p; p = p->next)\n        if (p->key % {a} == {b % a}) acc *= 1.0001;\n")
        out.write("    return acc;\n}\n\n")
    out.write("int main(void)\n{\n    static struct item items[256];\n    double total = 0.0;\n")
    for f in range(n):
        out.write(f"    total += work_{f}(items, 256, {rng.randrange(10**6)}u);\n")
    out.write('    printf("%.3f\\n", total);\n    return 0;\n}\n')


def gen_sql(n, out):
    """A query workload in the style of workloads/sqlite-workload.sql, with n orders."""
    customers = max(20, n // 50)
    products = max(10, n // 200)
    out.write(f"""-- Generated by gen.py sql {n}: deterministic (integer sequences only).
PRAGMA cache_size = -16384;
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, region INTEGER, since INTEGER);
CREATE TABLE products (id INTEGER PRIMARY KEY, title TEXT, price INTEGER, category TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, product_id INTEGER,
                     quantity INTEGER, amount INTEGER, note TEXT);

WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < {customers})
INSERT INTO customers SELECT n, 'customer-' || n, n % 7, 2000 + n % 23 FROM seq;

WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < {products})
INSERT INTO products SELECT n, 'product-' || (n * 37 % {products}), 100 + (n * 7919) % 9000,
       CASE n % 5 WHEN 0 THEN 'books' WHEN 1 THEN 'garden' WHEN 2 THEN 'kitchen'
                  WHEN 3 THEN 'tools' ELSE 'toys' END FROM seq;

BEGIN;
WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < {n})
INSERT INTO orders
SELECT n, (n * 7) % {customers} + 1, (n * 104729) % {products} + 1, 1 + n % 9,
       (n * 104729) % 1009,
       CASE WHEN n % 3 = 0 THEN 'express delivery' WHEN n % 3 = 1 THEN 'standard'
            ELSE 'pick-up at store ' || (n % 13) END
FROM seq;
COMMIT;

CREATE INDEX orders_customer ON orders(customer_id);
CREATE INDEX orders_product ON orders(product_id, quantity);
CREATE INDEX customers_region ON customers(region);

-- Join + group by + order by.
SELECT c.region, count(*), sum(o.amount) AS total
FROM customers c JOIN orders o ON o.customer_id = c.id
GROUP BY c.region ORDER BY total DESC;

-- Three-way join, grouped by category, with HAVING.
SELECT p.category, count(DISTINCT o.customer_id), sum(o.quantity * p.price) AS revenue
FROM orders o JOIN products p ON p.id = o.product_id JOIN customers c ON c.id = o.customer_id
WHERE c.since >= 2005
GROUP BY p.category HAVING count(*) > 0 ORDER BY revenue DESC;

-- Top customers (sort of an aggregate).
SELECT c.name, sum(o.amount) AS spent FROM orders o JOIN customers c ON c.id = o.customer_id
GROUP BY o.customer_id ORDER BY spent DESC, c.name LIMIT 10;

-- LIKE scan, then an update and a delete through the index.
SELECT count(*) FROM orders WHERE note LIKE '%express%';
UPDATE orders SET amount = amount + 1 WHERE customer_id IN (SELECT id FROM customers WHERE region = 3);
DELETE FROM orders WHERE product_id % 11 = 0 AND quantity > 6;

-- Window function over the customers' totals.
SELECT region, name, spent, rank() OVER (PARTITION BY region ORDER BY spent DESC) AS r
FROM (SELECT c.region, c.name, sum(o.amount) AS spent
      FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.id)
ORDER BY region, r LIMIT 20;

-- Correlated subquery and a final check.
SELECT count(*) FROM customers c
WHERE (SELECT max(amount) FROM orders o WHERE o.customer_id = c.id) > 1000;
SELECT count(*), sum(amount), min(id), max(id) FROM orders;
""")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    kind, count, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    gen = {"text": gen_text, "keys": gen_keys, "json": gen_json, "csrc": gen_csrc,
           "cbare": lambda n, out: gen_csrc(n, out, headers=False), "sql": gen_sql}.get(kind)
    if gen is None:
        sys.exit(f"gen.py: unknown kind {kind!r}\n{__doc__}")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="ascii", newline="\n") as out:
        gen(count, out)
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
