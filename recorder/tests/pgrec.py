#!/usr/bin/env python3
"""Decoder of the pagelab recorder's stream (.pgrec, see ../FORMAT.md).

Standard library only.  As a script:

    pgrec.py FILE            summary (header, counts by kind, segments, END)
    pgrec.py --dump FILE     one line per record
    pgrec.py --lackey FILE   the references in Lackey's --trace-mem text form

As a module:
    s = read(path)           -> Stream: .header, .records (Ref / Event in
                                stream order), .complete, .refs(), .events()
    lackey_lines(data)       -> the references as Lackey's lines (fast path
                                for long streams; events skipped)
"""
import array
import struct
import sys
from collections import Counter, namedtuple

MAGIC = 0x31304345524C4750
M48 = (1 << 48) - 1
KINDS = ("load", "store", "fetch", "modify")
ALLOC_OPS = ("malloc", "calloc", "realloc", "free", "mmap", "munmap", "brk",
             "posix_memalign", "mprotect", "mremap")
SEG_KINDS = ("text", "data", "bss", "heap", "stack", "mmap", "other")

Header = namedtuple("Header", "version fetch_mode sample")
Ref = namedtuple("Ref", "addr size kind")            # kind: 0..3 (KINDS)
Event = namedtuple("Event", "tag fields")            # tag name, dict


class FormatError(Exception):
    pass


class Stream:
    def __init__(self, header, records, complete):
        self.header = header
        self.records = records
        self.complete = complete      # an END record ends the stream

    def refs(self):
        return [r for r in self.records if isinstance(r, Ref)]

    def events(self, tag=None):
        return [r for r in self.records
                if isinstance(r, Event) and (tag is None or r.tag == tag)]


def _words(data):
    data = data[:len(data) - len(data) % 8]          # cut short mid-word
    w = array.array("Q")
    w.frombytes(data)
    if sys.byteorder != "little":
        w.byteswap()
    return w


def _header(w):
    if len(w) < 2 or w[0] != MAGIC:
        raise FormatError("not a .pgrec stream (bad magic)")
    h = w[1]
    if h >> 48:
        raise FormatError("header bits 48-63 are not zero")
    return Header(h & 0xFF, (h >> 8) & 0xFF, (h >> 16) & 0xFFFFFFFF)


def _name(w, start, length):
    n = (length + 7) // 8
    if start + n > len(w):
        raise FormatError("name runs past the end of the stream")
    raw = b"".join(struct.pack("<Q", x) for x in w[start:start + n])
    return raw[:length].decode("utf-8", "replace"), start + n


def _event(w, i, x):
    """Decode the event whose first word x is w[i-1]; return (Event or Ref,
    index of the next record)."""
    n = len(w)
    tag = (x >> 56) & 0x7F
    p = x & ((1 << 56) - 1)
    if tag == 0:
        if i + 2 > n:
            raise FormatError("truncated LONGREF")
        return Ref(w[i], w[i + 1], p & 3), i + 2
    if tag == 1:
        if i + 5 > n:
            raise FormatError("truncated ALLOC")
        a, s, o, f, c = w[i:i + 5]
        op = p & 0xFF
        return Event("ALLOC", dict(
            op=op, opname=ALLOC_OPS[op] if op < len(ALLOC_OPS) else str(op),
            addr=a, size=s, old=o, flags=f, callsite=c)), i + 5
    if tag == 2:
        if i + 2 > n:
            raise FormatError("truncated SEGMENT")
        start, end = w[i], w[i + 1]
        name, j = _name(w, i + 2, (p >> 16) & 0xFFFF)
        k = (p >> 8) & 0xFF
        return Event("SEGMENT", dict(
            perms=p & 0xFF, kind=k,
            kindname=SEG_KINDS[k] if k < len(SEG_KINDS) else str(k),
            start=start, end=end, name=name)), j
    if tag == 3:
        name, j = _name(w, i, (p >> 32) & 0xFFFF)
        return Event("MARKER", dict(id=p & 0xFFFFFFFF, name=name)), j
    if tag == 4:
        return Event("THREAD", dict(tid=p & 0xFFFFFFFF)), i
    if tag == 5:
        if i + 2 > n:
            raise FormatError("truncated END")
        if i + 2 != n:
            raise FormatError("%d words after END" % (n - i - 2))
        return Event("END", dict(seen=w[i], written=w[i + 1])), i + 2
    raise FormatError("unknown tag %d at word %d" % (tag, i - 1))


def decode(data):
    w = _words(data)
    header = _header(w)
    recs = []
    append = recs.append
    complete = False
    i, n = 2, len(w)
    while i < n:
        x = w[i]
        i += 1
        if x < (1 << 63):
            if x & (1 << 62):
                raise FormatError("bit 62 set in a reference at word %d" % (i - 1))
            append(Ref(x & M48, (x >> 48) & 0xFFF, (x >> 60) & 3))
            continue
        r, i = _event(w, i, x)
        append(r)
        if isinstance(r, Event) and r.tag == "END":
            complete = True
    return Stream(header, recs, complete)


def read(path):
    with open(path, "rb") as f:
        return decode(f.read())


def lackey_line(r):
    if r.kind == 2:
        return "I  %08x,%d" % (r.addr, r.size)
    return " %s %08x,%d" % ("LS?M"[r.kind], r.addr, r.size)


def lackey_lines(data):
    """References of a stream as Lackey prints them ("I  ADDR,SIZE",
    " L ADDR,SIZE", " S ...", " M ..."), events skipped.  Returns
    (header, lines, end_fields or None)."""
    w = _words(data)
    header = _header(w)
    out = []
    append = out.append
    end = None
    i, n = 2, len(w)
    pre = (" L %08x,%d", " S %08x,%d", "I  %08x,%d", " M %08x,%d")
    top = 1 << 63
    while i < n:
        x = w[i]
        i += 1
        if x < top:
            append(pre[x >> 60] % (x & M48, (x >> 48) & 0xFFF))
            continue
        r, i = _event(w, i, x)
        if isinstance(r, Ref):
            append(lackey_line(r))
        elif r.tag == "END":
            end = r.fields
    return header, out, end


def main(argv):
    mode = "summary"
    if argv and argv[0] in ("--dump", "--lackey"):
        mode = argv.pop(0)[2:]
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        if mode == "lackey":
            with open(argv[0], "rb") as f:
                _, lines, _ = lackey_lines(f.read())
            sys.stdout.write("\n".join(lines) + ("\n" if lines else ""))
            return 0
        s = read(argv[0])
    except FormatError as e:
        print("%s: %s" % (argv[0], e), file=sys.stderr)
        return 1
    out = sys.stdout
    if mode == "dump":
        hexkeys = ("addr", "old", "start", "end", "callsite", "flags")
        for r in s.records:
            if isinstance(r, Ref):
                out.write("%-6s %#x %d\n" % (KINDS[r.kind], r.addr, r.size))
            else:
                out.write("%s %s\n" % (r.tag, ", ".join(
                    "%s=%s" % (k, hex(v) if k in hexkeys else v)
                    for k, v in r.fields.items())))
        return 0
    c = Counter(KINDS[r.kind] for r in s.refs())
    e = Counter(r.tag for r in s.events())
    print("header: version %d, fetch mode %d, sample %d" % s.header)
    print("references: %d %s" % (sum(c.values()), dict(c)))
    print("events: %s" % dict(e))
    for ev in s.events("SEGMENT"):
        f = ev.fields
        print("  segment %012x-%012x %s%s%s %-5s %s" % (
            f["start"], f["end"], "r" if f["perms"] & 1 else "-",
            "w" if f["perms"] & 2 else "-", "x" if f["perms"] & 4 else "-",
            f["kindname"], f["name"]))
    end = s.events("END")
    print("complete: %s %s" % (s.complete, end[0].fields if end else ""))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:
        sys.exit(0)
