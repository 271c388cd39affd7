"""Tests of the pagelab Python package: each writes the small traces it needs."""

import math
import os
import sys

import pytest

import pagelab

# Three base pages, A B C, visited A B A C B A.
PAGES = {"A": 0x1000, "B": 0x2000, "C": 0x3000}
VISITS = "ABACBA"

ONE_SET_TWO_WAYS = {"tlb": {"kind": "set-associative", "sets": 1, "ways": 2, "replacement": "lru"}}
ONE_SET_TWO_WAYS_TOML = """
[tlb]
kind = "set-associative"
sets = 1
ways = 2
replacement = "lru"
"""


@pytest.fixture
def abacba(tmp_path):
    """An address list: 8-byte loads of pages A B A C B A."""
    path = tmp_path / "abacba.addrs"
    path.write_text("# three pages\n" + "".join(f"R {PAGES[p]:#x} 8\n" for p in VISITS))
    return path


@pytest.fixture
def lackey(tmp_path):
    """A lackey trace: 2 fetches, 2 loads, 1 store, 1 modify, Valgrind chatter around."""
    path = tmp_path / "run.lackey"
    path.write_text(
        "==1234== Lackey, an example Valgrind tool\n"
        "I  0400d7d4,3\n"
        " L 7ff000108,8\n"
        "I  0400d7d7,4\n"
        " S 7ff000100,8\n"
        " M 0060f000,4\n"
        " L 0060fffc,8\n"
        "==1234== \n"
    )
    return path


def test_version():
    assert pagelab.__version__ == pagelab._pagelab.__version__
    assert pagelab.__version__.count(".") == 2


def test_simulate_hand_computed_lru(abacba):
    # 1 set, 2 ways, LRU, pages A B A C B A:
    #   A miss [A]; B miss [A B]; A hit (B is now LRU); C miss, evicts B [A C];
    #   B miss, evicts A [C B]; A miss, evicts C [B A].
    # -> 1 hit, 5 misses, 3 evictions; the first touch of each page faults: 3 faults.
    # Walks: one per miss, 5. A 4-level walk reads 4 entries, except the very first,
    # which finds no root and reads none: 4 * 4 = 16. Each fault walks again (4 reads,
    # 12 in all), charged to the faults.
    r = pagelab.simulate(abacba, ONE_SET_TWO_WAYS)
    c = r["counts"]
    assert c["references"] == 6
    assert c["by_kind"] == [6, 0, 0, 0]
    assert c["translations"] == 6 and c["page_crossing"] == 0
    assert c["page_faults"] == 3
    assert (c["walks"], c["walk_refs"], c["fault_walk_refs"]) == (5, 16, 12)
    level = r["levels"][0]
    assert (level["entries"], level["hits"], level["misses"], level["evictions"]) == (2, 1, 5, 3)
    assert level["mpki"] == pytest.approx(5000 / 6)
    assert level["miss_ratio"] == pytest.approx(5 / 6)
    # Default cost model: 1 cycle a reference, 8 a walk reference, 5000 a fault.
    assert r["cycles"] == pytest.approx({"base": 6.0, "tlb_hits": 0.0, "walks": 16 * 8.0, "page_faults": 15000.0 + 12 * 8.0,
                                         "promotions": 0.0, "policy": 0.0})
    assert r["translation_overhead_percent"] == pytest.approx(100 * (224 + 15000) / (6 + 224 + 15000))


def test_default_tlb_holds_all_three_pages(abacba):
    # 16 sets x 4 ways: only the three compulsory misses.
    level = pagelab.simulate(abacba)["levels"][0]
    assert (level["hits"], level["misses"], level["evictions"]) == (3, 3, 0)


def test_dict_config_equals_toml_text_and_file(abacba, tmp_path):
    from_dict = pagelab.simulate(abacba, ONE_SET_TWO_WAYS)
    from_text = pagelab.simulate(abacba, ONE_SET_TWO_WAYS_TOML)
    config_file = tmp_path / "two-ways.toml"
    config_file.write_text(ONE_SET_TWO_WAYS_TOML)
    assert from_dict == from_text
    assert pagelab.simulate(abacba, config_file) == from_dict
    assert pagelab.simulate(abacba, str(config_file)) == from_dict


def test_default_config_round_trips(abacba):
    text = pagelab.default_config_toml()
    assert "[tlb]" in text
    config = pagelab.default_config()
    if isinstance(config, str):  # Python < 3.11 without tomli
        assert config == text
        return
    assert config["tlb"]["kind"] == "set-associative"
    assert config["name"] == "default"
    # The dict, written back as TOML by pagelab.to_toml, is the same machine.
    assert pagelab.simulate(abacba, config) == pagelab.simulate(abacba, text)
    config["tlb"]["ways"] = 1
    config["tlb"]["sets"] = 1
    assert pagelab.simulate(abacba, config)["levels"][0]["entries"] == 1


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib checks the emitter")
def test_to_toml_is_valid_toml():
    import tomllib

    config = {
        "name": 'quote " backslash \\ newline \n tab \t bell \x07 é',
        "seed": 7,
        "flag": False,
        "ratio": 0.1,
        "big": 1e300,
        "inf": float("inf"),
        "list": [1, 2, 3],
        "empty": [],
        "mixed keys": {"a.b": 1, "nested": {"deep": ["x", "y"]}},
        "inline": [{"a": 1}, {"b": [True]}],
        "emptytable": {},
    }
    assert tomllib.loads(pagelab.to_toml(config)) == config


def test_to_toml_refuses_what_toml_cannot_say():
    with pytest.raises(TypeError, match="tlb.ways"):
        pagelab.to_toml({"tlb": {"ways": None}})
    with pytest.raises(TypeError, match="set"):
        pagelab.to_toml({"tlb": {"sets": {1, 2}}})
    with pytest.raises(TypeError):
        pagelab.simulate("x.addrs", config=42)


def test_unknown_config_field_is_named(abacba):
    with pytest.raises(ValueError, match="setz"):
        pagelab.simulate(abacba, {"tlb": {"kind": "set-associative", "setz": 4}})
    with pytest.raises(ValueError, match="colour"):
        pagelab.simulate(abacba, "colour = 1\n")
    with pytest.raises(ValueError, match="magic"):
        pagelab.simulate(abacba, {"tlb": {"kind": "magic"}})


def test_bad_config_values_are_named(abacba, tmp_path):
    with pytest.raises(ValueError, match="tlb.ways"):
        pagelab.simulate(abacba, {"tlb": {"kind": "set-associative", "ways": 0}})
    with pytest.raises(ValueError, match="tlb.replacement.*lru"):
        pagelab.simulate(abacba, {"tlb": {"kind": "set-associative", "replacement": "clairvoyant"}})
    # An error in a configuration file names the file.
    bad = tmp_path / "bad.toml"
    bad.write_text("[page_table]\nkind = \"radix\"\nlevels = 3\n")
    with pytest.raises(ValueError, match="page_table.levels"):
        pagelab.simulate(abacba, bad)
    bad.write_text("seed = \"many\"\n")
    with pytest.raises(ValueError, match="bad.toml"):
        pagelab.simulate(abacba, bad)
    with pytest.raises(ValueError, match="missing.toml"):
        pagelab.simulate(abacba, str(tmp_path / "missing.toml"))


def test_missing_trace_is_named(tmp_path):
    missing = tmp_path / "no-such-trace.addrs"
    with pytest.raises(ValueError, match="no-such-trace.addrs"):
        pagelab.simulate(missing)
    with pytest.raises(ValueError, match="no-such-trace.addrs"):
        pagelab.trace_info(missing)


def test_malformed_trace_names_file_and_line(tmp_path):
    path = tmp_path / "broken.addrs"
    path.write_text("R 0x1000 8\nR 0x2000 8\nR zzz 8\n")
    with pytest.raises(ValueError, match=r"broken.addrs: line 3"):
        pagelab.simulate(path)


def test_unknown_format_is_a_value_error(abacba):
    with pytest.raises(ValueError, match="unknown trace format"):
        pagelab.simulate(abacba, format="vhdl")


def test_out_of_memory_is_a_value_error(tmp_path):
    path = tmp_path / "many.addrs"
    path.write_text("".join(f"{p << 12:#x}\n" for p in range(100)))
    with pytest.raises(ValueError, match="physical memory"):
        pagelab.simulate(path, {"frames": {"kind": "simple", "memory": 64 * 4096}})


def test_trace_info_counts_kinds(lackey):
    info = pagelab.trace_info(lackey)
    assert info["format"] == "lackey"
    assert info["references"] == 6
    assert info["by_kind"] == {"fetch": 2, "load": 2, "store": 1, "modify": 1}
    assert info["instructions"] == 2
    # 0x0400d000, 0x7ff000000, 0x0060f000: three 4K pages; the load of 8 bytes at
    # 0x60fffc spans into the next page, a fourth.
    assert info["footprint_pages"]["4K"] == 4
    assert info["page_crossing"] == 1
    assert info["min_address"] == 0x0060F000
    assert info["max_address"] == 0x7FF000108
    assert info["address_spaces"] == [0]
    assert info["metadata"]["source_format"] == "lackey"


def test_format_can_be_named(lackey, tmp_path):
    # A lackey trace under a name that says nothing, read with its format named.
    plain = tmp_path / "capture.txt"
    plain.write_bytes(lackey.read_bytes())
    assert pagelab.trace_info(plain, format="lackey")["by_kind"] == pagelab.trace_info(lackey)["by_kind"]
    r = pagelab.simulate(plain, format="lackey")
    assert r["counts"]["by_kind"] == [2, 1, 2, 1]  # load, store, fetch, modify
    assert r["counts"]["page_crossing"] == 1


def test_flatten_report(abacba):
    row = pagelab.flatten_report(pagelab.simulate(abacba, ONE_SET_TWO_WAYS))
    assert row["references"] == 6
    assert (row["loads"], row["stores"], row["fetches"], row["modifies"]) == (6, 0, 0, 0)
    assert (row["tlb_hits"], row["tlb_misses"], row["tlb_evictions"]) == (1, 5, 3)
    assert (row["tlb_4K_hits"], row["tlb_4K_misses"]) == (1, 5)
    assert row["mpki"] == pytest.approx(5000 / 6)
    assert row["walk_refs"] == 16 and row["page_faults"] == 3
    assert row["cycles_page_faults"] == 15000.0 + 12 * 8.0
    assert "translation_overhead_percent" in row
    assert not any(isinstance(v, (dict, list)) for v in row.values())


def test_to_frame(abacba):
    pd = pytest.importorskip("pandas")
    reports = [pagelab.simulate(abacba, c) for c in (None, ONE_SET_TWO_WAYS)]
    frame = pagelab.to_frame(reports)
    assert isinstance(frame, pd.DataFrame)
    assert len(frame) == 2
    for column in ("references", "tlb_misses", "mpki", "walk_refs", "page_faults", "translation_overhead_percent"):
        assert column in frame.columns
    assert list(frame["tlb_misses"]) == [3, 5]
    assert len(pagelab.to_frame(reports[0])) == 1


def test_to_frame_without_pandas_says_so(abacba, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # makes `import pandas` fail
    with pytest.raises(ImportError, match="pip install pandas"):
        pagelab.to_frame([pagelab.simulate(abacba)])


def test_paths_may_be_str_or_pathlike(abacba):
    assert pagelab.simulate(str(abacba)) == pagelab.simulate(abacba)
    assert pagelab.trace_info(os.fspath(abacba))["references"] == 6


def test_flatten_report_with_a_policy_caches_and_buddy_memory(abacba):
    config = {
        "frames": {"kind": "buddy", "memory": "64M", "max_block": "4M", "sample_every": 2},
        "promotion": {"policy": "asap"},
        "tlb": {"kind": "set-associative", "sets": 1, "ways": 4, "page_sizes": ["4K", "2M"]},
        "cache": {"levels": [{"name": "l1d", "sets": 4, "ways": 2, "hit_cycles": 4}]},
    }
    row = pagelab.flatten_report(pagelab.simulate(abacba, config))
    assert not any(isinstance(v, (dict, list)) for v in row.values())
    assert row["cache_l1d_hits_data"] + row["cache_l1d_misses_data"] == 6
    assert row["free_usable_2M"] > 0 and row["free_frames"] > 0
    assert row["policy_misses"] == row["walks"]


def test_the_name_lists_come_from_the_core():
    assert pagelab.TRACE_FORMATS[:2] == ["native", "lackey"] and "pgrec" in pagelab.TRACE_FORMATS
    assert pagelab.PAGE_TABLES[0] == "radix" and "variable-radix" in pagelab.PAGE_TABLES
    assert pagelab.PROMOTION_POLICIES[0] == "none" and "reservation" in pagelab.PROMOTION_POLICIES
    assert "lru" in pagelab.REPLACEMENT_POLICIES


# --- hostile input: every error the command line reports is an exception here ----------


def test_a_machine_too_large_for_memory_is_a_value_error(abacba, tmp_path):
    huge = {"page_table": {"kind": "hashed", "buckets": 1 << 30}}
    with pytest.raises(ValueError, match=r"max_memory.*page_table\.buckets"):
        pagelab.simulate(abacba, huge)
    # In a sweep, before any run: the database is not even made.
    db = tmp_path / "r.db"
    grid = {"page_table.kind": ["hashed"], "page_table.buckets": [1 << 30]}
    with pytest.raises(ValueError, match=r"max_memory.*page_table\.buckets"):
        pagelab.sweep({"traces": [str(abacba)], "grid": grid}, db, quiet=True)
    assert not db.exists()


def test_an_endless_line_is_a_value_error(tmp_path):
    path = tmp_path / "long.lackey"
    path.write_bytes(b" L 10," + b"1" * (1 << 20))
    with pytest.raises(ValueError, match=r"long\.lackey: line 1: the line is longer"):
        pagelab.simulate(path)


@pytest.mark.parametrize(
    "text, message",
    [
        (" L fffffffffffffff0,100\n", "past the top of the address space"),
        (" L 10000000,4294967295\n" * 400, "max_reference"),
        ("==1== chatter only\n", "no references"),
    ],
    ids=["wrapping-access", "huge-reference", "no-references"],
)
def test_a_bad_lackey_trace_is_a_value_error(tmp_path, text, message):
    path = tmp_path / "bad.lackey"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        pagelab.simulate(path)


def test_a_non_finite_cost_is_a_value_error(abacba):
    with pytest.raises(ValueError, match="cost.page_fault_cycles"):
        pagelab.simulate(abacba, {"cost": {"kind": "simple", "page_fault_cycles": 1e308}})


def test_a_pipe_is_read_once(tmp_path):
    read, write = os.pipe()
    os.write(write, b" L 1000,8\n S 2000,4\n")
    os.close(write)
    try:
        info = pagelab.trace_info(f"/dev/fd/{read}")
    finally:
        os.close(read)
    assert info["references"] == 2


def test_a_warmup_leaves_its_references_out(abacba):
    # A B A C B A on a 2-entry LRU TLB: after A B A (warm-up), C misses, B misses
    # (evicted by C), A misses (evicted by B): 3 references, 3 misses, 1 page fault.
    whole = pagelab.simulate(abacba, ONE_SET_TWO_WAYS)
    steady = pagelab.simulate(abacba, ONE_SET_TWO_WAYS, warmup=3)
    assert steady["counts"]["references"] == 3
    assert steady["levels"][0]["misses"] == 3
    assert steady["counts"]["page_faults"] == 1
    assert steady["warmup"]["references"] == 3
    assert steady["warmup"]["page_faults"] == 2
    assert whole["counts"]["page_faults"] == 3
    # A share of the input, as a float or as the command line's text.
    assert pagelab.simulate(abacba, ONE_SET_TWO_WAYS, warmup=0.5)["warmup"]["references"] == 3
    assert pagelab.simulate(abacba, ONE_SET_TWO_WAYS, warmup="50%")["warmup"]["references"] == 3
    assert pagelab.to_frame([steady])["warmup_references"].tolist() == [3]
    # Reuse distances after A B A: C is cold, B at distance 2, A at distance 2.
    reuse = pagelab.reuse_distance(abacba, warmup=3)
    assert reuse.summary["cold"].tolist() == [1]


def test_the_host_machine_says_where_each_number_comes_from():
    d = pagelab.host_machine()
    assert d["config"]["name"] == "host"
    assert all(t["source"].startswith("CPUID") for t in d["host"]["tlbs"])
    assert d["levels"], d
    # The same preset by name, as every command takes it.
    assert pagelab.Machine.preset("host").to_dict()["name"] == "host"


def test_calibrate_measures_and_writes_the_host_machine(tmp_path, monkeypatch):
    from conftest import CLI

    monkeypatch.setenv("PAGELAB_BIN", CLI)
    out = tmp_path / "host.toml"
    c = pagelab.calibrate(out, quick=True)
    assert c["fault_4k_cycles"]["min"] <= c["fault_4k_cycles"]["median"] <= c["fault_4k_cycles"]["max"]
    assert len(c["loads"]) == 3
    # Rounded half away from zero, as Rust's f64::round (Python's round goes to even, and
    # a median of an even count of samples may end in .5).
    median = c["fault_4k_cycles"]["median"]
    assert f"page_fault_cycles = {math.floor(median + 0.5):.1f}" in out.read_text()
    assert pagelab.Machine.load(out).to_dict()["name"] == "host"
