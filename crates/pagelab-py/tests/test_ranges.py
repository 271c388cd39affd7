"""Range translations from Python (pagelab.contiguity, pagelab.compare_translation and
its virtualized form, pagelab.compare_virtualized) on
the bundled traces: the same numbers as the command line, as typed results with their
DataFrames."""

import json
import os
import subprocess

import pytest

import pagelab
from conftest import CLI, trace


def test_contiguity_of_gups_as_a_frame():
    result = pagelab.contiguity(trace("gups-rec.plt"))
    frame = result.to_frame()
    assert list(frame.columns) == ["mapping", "percent", "entries"]
    curves = frame.pivot(index="percent", columns="mapping", values="entries")
    assert curves.loc[99.0, "4K pages"] > 250_000
    assert curves.loc[99.0, "eager ranges"] <= 4
    assert curves.loc[99.9].notna().all()
    assert result.machine == "sandy-bridge-rmm"
    assert result.note is None
    assert result.footprint_pages == result["footprint_pages"] > 250_000
    # The whole footprint takes every entry of a mapping.
    for mapping, entries in result.entries.items():
        assert curves.loc[100.0, mapping] == entries
    runs = result.coalescable_frame()
    assert list(runs["pages"]) == [2, 4, 8, 16, 32, 64, 128, 256, 512]


@pytest.mark.skipif(not os.path.exists(CLI), reason="the command line is not built (make build)")
def test_coalescable_footprint_matches_the_command_line():
    result = pagelab.contiguity(trace("sqlite-rec.plt"), machine="neoverse-n1")
    out = subprocess.run(
        [CLI, "analyze", "contiguity", "--machine", "neoverse-n1", "--trace", trace("sqlite-rec.plt"),
         "--json", "-", "--quiet"],
        check=True,
        capture_output=True,
        text=True,
    )
    cli = json.loads(out.stdout)
    assert result.coalescable_frame().to_dict("records") == cli["coalescable"]
    # Demand paging leaves some pairs of sqlite's pages contiguous and aligned.
    assert cli["coalescable"][0]["groups"] > 0


def test_contiguity_without_eager_paging_says_so():
    result = pagelab.contiguity(trace("sqlite-rec.plt"), machine="sandy-bridge")
    assert "eager ranges" not in set(result.to_frame()["mapping"])
    assert "does not allocate eagerly" in result.note


@pytest.mark.skipif(not os.path.exists(CLI), reason="the command line is not built (make build)")
def test_compare_translation_matches_the_command_line():
    result = pagelab.compare_translation(trace("sqlite-rec.plt"))
    out = subprocess.run(
        [CLI, "compare", "translation", "--trace", trace("sqlite-rec.plt"), "--json", "-", "--quiet"],
        check=True,
        capture_output=True,
        text=True,
    )
    cli = json.loads(out.stdout)
    assert result.schemes == cli["schemes"]
    assert result.to_frame().to_dict("records") == cli["schemes"]
    assert result.machine == cli["machine"] == "sandy-bridge"


@pytest.mark.skipif(not os.path.exists(CLI), reason="the command line is not built (make build)")
def test_compare_translation_with_coalescing_matches_the_command_line():
    result = pagelab.compare_translation(trace("sqlite-rec.plt"), machine="neoverse-n1", coalescing=True)
    out = subprocess.run(
        [CLI, "compare", "translation", "--coalescing", "--machine", "neoverse-n1", "--trace",
         trace("sqlite-rec.plt"), "--json", "-", "--quiet"],
        check=True,
        capture_output=True,
        text=True,
    )
    cli = json.loads(out.stdout)
    assert result.schemes == cli["schemes"]
    frame = result.to_frame().set_index("scheme")
    assert list(frame.index[:4]) == ["4K", "THP 2M", "mTHP 64K", "PTE coalescing"]
    # 64 KiB folios of contiguous frames take fewer walks than base pages.
    assert frame.loc["mTHP 64K", "tlb_misses"] < frame.loc["4K", "tlb_misses"]


def test_compare_translation_says_which_schemes_a_machine_cannot_run():
    result = pagelab.compare_translation(trace("sqlite-rec.plt"), machine="mips-r4x00")
    assert list(result.to_frame()["scheme"]) == ["4K", "DS", "RMM"]
    assert [s.split(":")[0] for s in result.skipped] == ["THP 2M", "1G"]


@pytest.mark.skipif(not os.path.exists(CLI), reason="the command line is not built (make build)")
def test_compare_virtualized_matches_the_command_line():
    guests, hosts = ["radix", "hashed"], ["radix", "inverted"]
    result = pagelab.compare_virtualized(trace("sqlite-rec.plt"), machine="skylake", guests=guests,
                                         hosts=hosts, host_page="2M")
    out = subprocess.run(
        [CLI, "compare", "translation", "--virtualized", "--trace", trace("sqlite-rec.plt"),
         "--machine", "skylake", "--guests", ",".join(guests), "--hosts", ",".join(hosts),
         "--host-page", "2M", "--json", "-", "--quiet"],
        check=True,
        capture_output=True,
        text=True,
    )
    cli = json.loads(out.stdout)["comparison"]
    assert result.to_dict() == cli
    frame = result.to_frame()
    assert list(zip(frame["guest"], frame["host"].fillna("native"))) == [
        ("radix", "native"), ("hashed", "native"),
        ("radix", "radix"), ("radix", "inverted"), ("hashed", "radix"), ("hashed", "inverted")]
    assert result.host_page == "2M"
    # The guest's own walks, and host walks besides: every miss of sqlite is a first
    # touch, whose walk finds no data page, so a radix guest (its walk caches hold the
    # last table's host address) adds none there; a hashed guest adds one per entry.
    for pair in result.pairs:
        native = next(n for n in result.native if n["guest"] == pair["guest"])
        assert pair["walks"] == native["walks"]
        assert pair["guest_refs_per_walk"] == native["refs_per_walk"]
        assert pair["refs_per_walk"] >= native["refs_per_walk"]
        if pair["guest"] == "hashed":
            assert pair["host_refs_per_walk"] > 0
    with pytest.raises(ValueError, match="btree"):
        pagelab.compare_virtualized(trace("xz.plt"), guests=["btree"])
    with pytest.raises(TypeError, match="list"):
        pagelab.compare_virtualized(trace("xz.plt"), hosts="radix")


def test_bad_arguments_name_what_is_wrong():
    with pytest.raises(ValueError, match="not both"):
        pagelab.contiguity(trace("xz.plt"), machine="sandy-bridge", config={})
    with pytest.raises(ValueError, match="no-such-machine"):
        pagelab.compare_translation(trace("xz.plt"), machine="no-such-machine")
    with pytest.raises(ValueError, match=r"ranges.regions\[0\]"):
        pagelab.contiguity(trace("xz.plt"), regions=["heap"])
    with pytest.raises(TypeError, match="list of spans"):
        pagelab.contiguity(trace("xz.plt"), regions="0x1000+4K")
    with pytest.raises(ValueError, match="fragmentation_threshold"):
        pagelab.contiguity(
            trace("xz.plt"),
            config={"frames": {"kind": "buddy"}, "ranges": {"allocation": "eager", "fragmentation_threshold": 2.0}},
        )
