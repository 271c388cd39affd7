"""drmemtrace traces written here with Python's struct and zipfile (independently of
pagelab's own test writer): the same references whether a thread is a plain file or a
.zip of chunks, a folder of threads merged by timestamp, and `trace convert` to the
native format simulating the same."""

import json
import random
import struct
import subprocess
import zipfile

import pagelab
from conftest import CLI


def rec(kind, size, value):
    return struct.pack("<HHQ", kind, size, value)


def thread(tid, pid, stamps, seed):
    """A thread of 2,000 instructions with loads and stores, a timestamp every 500."""
    rng = random.Random(seed)
    out = [rec(25, 0, 6), rec(28, 12, 6), rec(28, 9, 0x40), rec(22, 4, tid), rec(24, 4, pid),
           rec(28, 10, 64), rec(28, 20, 10_000_000), rec(28, 18, 4096)]
    for i in range(2000):
        if i % 500 == 0:
            out += [rec(28, 2, stamps[i // 500]), rec(28, 3, 0)]
        out.append(rec(10, 4, 0x400000 + 4 * i))
        if i % 2 == 0:
            out.append(rec(0, 8, 0x7F0000000000 + rng.randrange(1 << 28)))
        if i % 3 == 0:
            out.append(rec(1, 4, 0x600000 + rng.randrange(1 << 20)))
    out += [rec(23, 4, tid), rec(26, 0, 0)]
    return b"".join(out)


def zipped(path, records, chunks=3):
    """Chunks as raw2trace cuts them: footers, then the ordinal and timestamp again."""
    n = len(records) // 12
    cuts = [12 * (n * k // chunks) for k in range(chunks + 1)]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for k in range(chunks):
            body = records[cuts[k]:cuts[k + 1]]
            head = b"" if k == 0 else rec(28, 22, cuts[k] // 12) + rec(28, 2, 1)
            tail = rec(28, 21, k) if k < chunks - 1 else b""
            z.writestr(f"chunk.{k:04d}", head + body + tail)


def test_a_thread_plain_and_zipped_reads_the_same(tmp_path):
    records = thread(7, 7, [10, 20, 30, 40], seed=1)
    (tmp_path / "t.trace").write_bytes(records)
    zipped(tmp_path / "drmemtrace.app.00007.0000.trace.zip", records)
    plain = pagelab.Trace(tmp_path / "t.trace").info()
    zip_info = pagelab.Trace(tmp_path / "drmemtrace.app.00007.0000.trace.zip").info()
    assert plain.format == zip_info.format == "drmemtrace"
    assert plain.by_kind == zip_info.by_kind == {"load": 1000, "store": 667, "fetch": 2000, "modify": 0}
    assert plain.footprint_pages == zip_info.footprint_pages
    skylake = pagelab.Machine.preset("skylake")
    assert (pagelab.simulate(tmp_path / "t.trace", skylake).counts
            == pagelab.simulate(tmp_path / "drmemtrace.app.00007.0000.trace.zip", skylake).counts)


def test_a_folder_of_threads_and_its_native_conversion(tmp_path):
    folder = tmp_path / "drmemtrace.app.7.0000.dir" / "trace"
    folder.mkdir(parents=True)
    zipped(folder / "drmemtrace.app.00007.0000.trace.zip", thread(7, 7, [10, 30, 50, 70], seed=2))
    zipped(folder / "drmemtrace.app.00008.0000.trace.zip", thread(8, 7, [20, 40, 60, 80], seed=3))
    top = folder.parent
    info = pagelab.trace_info(top)
    assert info.references == 2 * (2000 + 1000 + 667)
    assert info["events"].get("thread") == 8  # the threads alternate every 500 instructions
    native = tmp_path / "t.plt"
    subprocess.run([CLI, "trace", "convert", str(top), str(native)], check=True, capture_output=True)
    reports = [json.loads(subprocess.run([CLI, "simulate", "--machine", "skylake", "--trace", str(p), "--json", "-", "-q"],
                                         check=True, capture_output=True, text=True).stdout)["report"]
               for p in (top, native)]
    assert reports[0]["counts"] == reports[1]["counts"]
