"""A large Python dict: the python-dict workload.

    dict-build.py N LOOKUPS

builds a dict of N entries, each an int key drawn by a multiplicative hash of its
index (so insertion order is not key order) mapping to a short string, then looks up
LOOKUPS keys chosen by a linear congruential generator (a fixed seed: every run does
the same), summing the lengths of the values found. Prints the sum.
"""
import sys


def main():
    n, lookups = (int(a) for a in sys.argv[1:3])
    table = {}
    for i in range(n):
        table[(i * 2654435761) % 4294967296] = "v" + str(i)
    x, total = 12345, 0
    for _ in range(lookups):
        x = (x * 6364136223846793005 + 1442695040888963407) % 18446744073709551616
        i = (x >> 33) % n
        total += len(table[(i * 2654435761) % 4294967296])
    print(total)


main()
