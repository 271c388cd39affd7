#!/usr/bin/env python3
"""Write the drmemtrace fuzzing seeds here: 12-byte little-endian trace_entry_t records
(u16 type, u16 size, u64 value) as DynamoRIO's raw2trace writes them.

    python3 fuzz/seeds/drmemtrace/make.py
"""
import os
import struct
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def rec(kind, size, value):
    return struct.pack("<HHQ", kind, size, value)


def marker(kind, value):
    return rec(28, kind, value)


header = (rec(25, 0, 6) + marker(12, 6) + marker(9, 0x40) + rec(22, 4, 7) + rec(24, 4, 7)
          + marker(10, 64) + marker(20, 10_000_000) + marker(18, 4096) + marker(2, 1000) + marker(3, 0))
body = (rec(47, 3, 0x90) + rec(10, 3, 0x401000) + rec(0, 8, 0x7FF000) + rec(1, 4, 0x600000)
        + rec(17, 2, 0x0502) + rec(29, 2, 0x402000) + rec(2, 1, 0x601000) + rec(27, 64, 0x602000)
        + rec(18, 64, 0x400000) + marker(2, 1500) + rec(13, 2, 0x403000) + rec(48, 2, 0x403002))
end = rec(23, 4, 7) + rec(26, 0, 0)
whole = header + body + end
with open(os.path.join(HERE, "small.trace"), "wb") as f:
    f.write(whole)
with open(os.path.join(HERE, "truncated.trace"), "wb") as f:
    f.write(whole[: len(header) + 30])
with zipfile.ZipFile(os.path.join(HERE, "chunks.zip"), "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("chunk.0000", header + body[:48] + marker(21, 0))
    z.writestr("chunk.0001", marker(22, 4) + marker(2, 1000) + body[48:] + end)
