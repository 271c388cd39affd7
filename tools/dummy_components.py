#!/usr/bin/env python3
"""Add a dummy component of each kind to a scratch copy of the repository, touching only
the files docs/EXTENDING.md lists for that kind, and check that it builds and that the
tests which must cover a component of that kind run it.

Each dummy is a copy of an existing component under a new name (a FIFO replacement
policy, a linear page table, the asap promotion policy, the u64 trace format, a
variant of the skylake preset). What is edited by hand is counted per kind and must
equal the count docs/EXTENDING.md states in the kind's section ("Touches N files");
the generated documentation lists are then regenerated (PAGELAB_BLESS=1, as a person
adding a component would) and the kinds' tests run:

    python3 tools/dummy_components.py            # from the repository's root

The scratch copy is target/dummy-components/x/ (the working tree as it is, commits or
not) under a workspace manifest of its own one folder up: its build shares target/
with the tests' (profile ci), so the dependencies are not built again, while its
crates, at other paths relative to their workspace, get artifacts of their own and
never replace the repository's.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
WORKSPACE = os.path.join(ROOT, "target", "dummy-components")
SCRATCH = os.path.join(WORKSPACE, "x")
CORE = "crates/pagelab-core"


class Scratch:
    """The scratch copy, and which files each kind's edits touched."""

    def __init__(self, root: str):
        self.root = root
        self.touched: dict[str, set[str]] = {}
        self.kind = ""

    def path(self, rel: str) -> str:
        return os.path.join(self.root, rel)

    def _touch(self, rel: str) -> None:
        self.touched.setdefault(self.kind, set()).add(rel)

    def create(self, rel: str, text: str) -> None:
        assert not os.path.exists(self.path(rel)), f"{rel} exists"
        with open(self.path(rel), "w") as f:
            f.write(text)
        self._touch(rel)

    def copy(self, rel: str, src: str, renames: list[tuple[str, str]]) -> None:
        text = open(self.path(src)).read()
        for pattern, repl in renames:
            text, n = re.subn(pattern, repl, text)
            assert n, f"{src}: no {pattern!r}"
        self.create(rel, text)

    def replace(self, rel: str, old: str, new: str) -> None:
        text = open(self.path(rel)).read()
        assert text.count(old) == 1, f"{rel}: {old!r} found {text.count(old)} times"
        with open(self.path(rel), "w") as f:
            f.write(text.replace(old, new))
        self._touch(rel)

    def after(self, rel: str, anchor: str, lines: list[str]) -> None:
        """Insert `lines` after the line holding `anchor`, at its indentation."""
        text = open(self.path(rel)).read().split("\n")
        at = [i for i, line in enumerate(text) if anchor in line]
        assert len(at) == 1, f"{rel}: {anchor!r} on {len(at)} lines"
        indent = re.match(r"\s*", text[at[0]]).group(0)
        text[at[0] + 1:at[0] + 1] = [indent + line for line in lines]
        with open(self.path(rel), "w") as f:
            f.write("\n".join(text))
        self._touch(rel)


def replacement_policy(s: Scratch) -> None:
    src = f"{CORE}/src/replacement"
    s.copy(f"{src}/dummy_fifo.rs", f"{src}/fifo.rs", [(r"\bFifo\b", "DummyFifo")])
    s.after(f"{src}/mod.rs", "mod fifo;", ["mod dummy_fifo;"])
    s.after(f"{src}/mod.rs", "pub use fifo::Fifo;", ["pub use dummy_fifo::DummyFifo;"])
    s.after(f"{src}/mod.rs", '"fifo" => Fifo,', ['"dummy-fifo" => DummyFifo,'])
    s.replace(f"{CORE}/tests/replacement_vs_reference.rs", '"fifo" => Model::Fifo(',
              '"fifo" | "dummy-fifo" => Model::Fifo(')


def page_table(s: Scratch) -> None:
    src = f"{CORE}/src/pagetable"
    s.copy(f"{src}/dummy_linear.rs", f"{src}/linear.rs", [(r"\bLinear(PageTable|Config)\b", r"DummyLinear\1")])
    s.after(f"{src}/mod.rs", "mod linear;", ["mod dummy_linear;"])
    s.after(f"{src}/mod.rs", "pub use linear::{LinearConfig, LinearPageTable};",
            ["pub use dummy_linear::{DummyLinearConfig, DummyLinearPageTable};"])
    s.after(f"{src}/mod.rs", '"linear" => Linear(LinearConfig),',
            ["/// A copy of the linear table.", '"dummy-linear" => DummyLinear(DummyLinearConfig),'])
    tests = f"{CORE}/tests/common/pagetables.rs"
    s.replace(tests, "LinearPageTable, PageTable,", "LinearPageTable, DummyLinearPageTable, PageTable,")
    s.replace(tests, '        "linear" => Kind {', '''        "dummy-linear" => Kind {
            canonical: Some(48),
            ..full(|| Box::new(DummyLinearPageTable::new(&ALL[..3], 3)))
        },
        "linear" => Kind {''')
    s.after(tests, 'linear_matches_hashmap: "linear",', ['dummy_linear_matches_hashmap: "dummy-linear",'])


def promotion_policy(s: Scratch) -> None:
    src = f"{CORE}/src/superpage"
    s.copy(f"{src}/dummy_asap.rs", f"{src}/asap.rs", [(r"\bAsap(Config)?\b", r"DummyAsap\1")])
    s.after(f"{src}/mod.rs", "mod asap;", ["mod dummy_asap;"])
    s.after(f"{src}/mod.rs", "pub use asap::{Asap, AsapConfig};", ["pub use dummy_asap::{DummyAsap, DummyAsapConfig};"])
    s.after(f"{src}/mod.rs", '"asap" => Asap(AsapConfig, Asap),',
            ["/// A copy of asap.", '"dummy-asap" => DummyAsap(DummyAsapConfig, DummyAsap),'])
    s.after(f"{CORE}/tests/superpages_integrity.rs", '("asap", PromotionConfig::Asap(Default::default())),',
            ['("dummy-asap", PromotionConfig::DummyAsap(Default::default())),'])


def trace_format(s: Scratch) -> None:
    src = f"{CORE}/src/trace"
    s.copy(f"{src}/dummy_u64.rs", f"{src}/rawu64.rs", [(r"\bU64Reader\b", "DummyU64Reader")])
    s.after(f"{src}/mod.rs", "pub mod rawu64;", ["pub mod dummy_u64;"])
    s.after(f"{src}/mod.rs", '"u64" => U64(rawu64::U64Reader, ["u64"]),',
            ["/// A copy of the u64 format.", '"dummy-u64" => DummyU64(dummy_u64::DummyU64Reader, ["dummyu64"]),'])
    s.replace(f"{CORE}/tests/roundtrip_readers.rs", "    #[test]\n    fn u64_round_trips(", '''    #[test]
    fn dummy_u64_round_trips(addrs in prop::collection::vec(addr_strategy(), 0..600), chunk_refs in small_chunks()) {
        let bytes: Vec<u8> = addrs.iter().flat_map(|a| a.to_le_bytes()).collect();
        let file = temp_with(".dummyu64", &bytes);
        let refs: Vec<MemRef> = addrs.iter().map(|&a| MemRef::new(a, 1, AccessKind::Load)).collect();
        check_reader(file.path(), TraceFormat::DummyU64, &refs, chunk_refs)?;
    }

    #[test]
    fn u64_round_trips(''')


def mechanism(s: Scratch) -> None:
    src = f"{CORE}/src/superpage/mechanism"
    s.copy(f"{src}/dummy_copy.rs", f"{src}/copy.rs", [(r"\bCopy(Mechanism|Config)\b", r"DummyCopy\1")])
    s.after(f"{src}/mod.rs", "mod copy;", ["mod dummy_copy;"])
    s.after(f"{src}/mod.rs", "pub use copy::{CopyConfig, CopyMechanism};",
            ["pub use dummy_copy::{DummyCopyConfig, DummyCopyMechanism};"])
    s.after(f"{src}/mod.rs", "    Copy(CopyConfig),", ["/// A copy of copy.", "DummyCopy(DummyCopyConfig),"])
    s.replace(f"{src}/mod.rs", '&["copy", "remap"]', '&["copy", "dummy-copy", "remap"]')
    s.replace(f"{src}/mod.rs", "        MechanismConfig::Copy(k) => {", """        MechanismConfig::DummyCopy(k) => Box::new(DummyCopyMechanism::new(k.clone())),
        MechanismConfig::Copy(k) => {""")
    s.after(f"{CORE}/tests/superpages_integrity.rs", "let mechanisms = [",
            ['    ("dummy-copy", MechanismConfig::DummyCopy(Default::default())),'])


def frame_allocator(s: Scratch) -> None:
    src = f"{CORE}/src/frames"
    s.copy(f"{src}/dummy_simple.rs", f"{src}/simple.rs", [(r"\bSimple(Allocator|FramesConfig)\b", r"DummySimple\1")])
    s.after(f"{src}/mod.rs", "mod simple;", ["mod dummy_simple;"])
    s.after(f"{src}/mod.rs", "pub use simple::SimpleFramesConfig;", ["pub use dummy_simple::DummySimpleFramesConfig;"])
    s.after(f"{src}/mod.rs", "    Simple(SimpleFramesConfig),", ["/// A copy of simple.", "DummySimple(DummySimpleFramesConfig),"])
    s.replace(f"{src}/mod.rs", '&["simple", "buddy"]', '&["simple", "dummy-simple", "buddy"]')
    s.after(f"{src}/mod.rs", "FramesConfig::Simple(o) => o.build(&cx),", ["FramesConfig::DummySimple(o) => o.build(&cx),"])


def cost_model(s: Scratch) -> None:
    src = f"{CORE}/src/cost"
    s.copy(f"{src}/dummy_simple.rs", f"{src}/simple.rs", [(r"\bSimpleCost(Config)?\b", r"DummySimpleCost\1")])
    s.after(f"{src}/mod.rs", "mod simple;", ["mod dummy_simple;"])
    s.after(f"{src}/mod.rs", "pub use simple::{SimpleCost, SimpleCostConfig};",
            ["pub use dummy_simple::{DummySimpleCost, DummySimpleCostConfig};"])
    s.after(f"{src}/mod.rs", "    Simple(SimpleCostConfig),", ["/// A copy of simple.", "DummySimple(DummySimpleCostConfig),"])
    s.replace(f"{src}/mod.rs", '&["simple"]', '&["simple", "dummy-simple"]')
    s.after(f"{src}/mod.rs", "CostConfig::Simple(o) => o.build(),", ["CostConfig::DummySimple(o) => o.build(),"])
    s.after(f"{src}/mod.rs", "CostConfig::Simple(s) => s.walk_ref_cycles,",
            ["CostConfig::DummySimple(s) => s.walk_ref_cycles,"])


def preset(s: Scratch) -> None:
    s.create("machines/dummy-machine.toml", '\n'.join([
        "# The skylake preset under another name (the dummy-component check).",
        'variant_of = "skylake"',
        'name = "dummy-machine"',
        'description = "skylake, renamed"',
        "",
    ]))
    s.after("machines/README.md", "| `sandy-bridge-rmm` | `sandy-bridge` (a variant", [
        "| `dummy-machine` | `skylake`, renamed | the skylake preset's |"])


def daemon(s: Scratch) -> None:
    src = f"{CORE}/src/pressure/victims"
    s.copy(f"{src}/dummy_clock.rs", f"{src}/clock.rs", [(r"\bClock\b", "DummyClock")])
    s.after(f"{src}/mod.rs", "mod clock;", ["mod dummy_clock;"])
    s.after(f"{src}/mod.rs", "pub use clock::Clock;", ["pub use dummy_clock::DummyClock;"])
    s.after(f"{src}/mod.rs", '"clock" => Clock(Clock),', ["/// A copy of clock.", '"dummy-clock" => DummyClock(DummyClock),'])


def sweep_analysis(s: Scratch) -> None:
    src = "crates/pagelab-sweep/src/analysis"
    s.copy(f"{src}/dummy_reuse.rs", f"{src}/reuse.rs", [(r"\bReuse\b", "DummyReuse")])
    s.after(f"{src}/mod.rs", "mod reuse;", ["mod dummy_reuse;"])
    s.after(f"{src}/mod.rs", "pub use reuse::Reuse;", ["pub use dummy_reuse::DummyReuse;"])
    s.after(f"{src}/mod.rs", '"reuse" => Reuse(Reuse),', ["/// A copy of reuse.", '"dummy-reuse" => DummyReuse(DummyReuse),'])


def repro_paper(s: Scratch) -> None:
    s.copy("repro/dummyrmm.toml", "repro/rmm.toml", [(r'\nid = "rmm"\n', '\nid = "dummyrmm"\n')])
    s.copy("crates/pagelab-repro/src/papers/dummyrmm.rs", "crates/pagelab-repro/src/papers/rmm.rs",
           [(r"^//!", "//! A copy of rmm's measures (the dummy-component check).\n//!")])
    s.copy("docs/repro/dummyrmm.md", "docs/repro/rmm.md", [(r"`pagelab repro rmm`", "`pagelab repro dummyrmm`")])


def range_unit(s: Scratch) -> None:
    src = f"{CORE}/src/range"
    s.after(f"{src}/config.rs", "    RangeTlb,", ["/// A copy of range-tlb.", "DummyRangeTlb,"])
    s.replace(f"{src}/config.rs", "&[RangeUnitKind::RangeTlb, RangeUnitKind::DirectSegment]",
              "&[RangeUnitKind::RangeTlb, RangeUnitKind::DummyRangeTlb, RangeUnitKind::DirectSegment]")
    s.after(f"{src}/config.rs", 'RangeUnitKind::RangeTlb => "range-tlb",',
            ['RangeUnitKind::DummyRangeTlb => "dummy-range-tlb",'])
    s.replace(f"{src}/tlb.rs", "RangeUnitKind::RangeTlb => c.entries,",
              "RangeUnitKind::RangeTlb | RangeUnitKind::DummyRangeTlb => c.entries,")
    s.replace(f"{src}/tlb.rs", "RangeUnitKind::RangeTlb => self.find(asid, vpn),",
              "RangeUnitKind::RangeTlb | RangeUnitKind::DummyRangeTlb => self.find(asid, vpn),")


def report_figure(s: Scratch) -> None:
    report = "crates/pagelab-py/python/pagelab/report.py"
    s.replace(report, "\nFIGURES: List[Callable[[_Runs], Figure]] = [", "\n".join([
        "",
        "def _dummy_speedup(runs: _Runs) -> Figure:",
        "    made = _speedup(runs)",
        '    return made and ("Dummy " + made[0], made[1], made[2])',
        "",
        "",
        "FIGURES: List[Callable[[_Runs], Figure]] = [_dummy_speedup, ",
    ]))


def python_tests() -> None:
    """The report's figures, drawn by the scratch copy's Python package with the compiled
    module `make python` built into the repository's (so after `make test-python`)."""
    package = os.path.join(ROOT, "crates", "pagelab-py", "python", "pagelab")
    compiled = [f for f in os.listdir(package) if f.startswith("_pagelab.") and f.endswith(".so")]
    python = os.path.join(ROOT, ".venv", "bin", "python")
    if not compiled or not os.path.exists(python):
        sys.exit("dummy components: no compiled module in crates/pagelab-py/python/pagelab: run make python first")
    scratch_python = os.path.join(SCRATCH, "crates", "pagelab-py", "python")
    shutil.copy2(os.path.join(package, compiled[0]), os.path.join(scratch_python, "pagelab"))
    command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "crates/pagelab-py/tests/test_report.py",
               "-k", "figure"]
    print("+", " ".join(command), flush=True)
    env = dict(os.environ, PYTHONPATH=scratch_python)
    if subprocess.run(command, cwd=SCRATCH, env=env).returncode != 0:
        sys.exit(f"dummy components: {' '.join(command)} failed in {SCRATCH}")


# Each kind: its section of docs/EXTENDING.md, its edits, and the tests that must run
# a component of that kind (`cargo test` target arguments, and the packages besides
# pagelab-core they are in; cargo runs a target in each package that has it).
KINDS = [
    ("A replacement policy", replacement_policy, ["--test", "replacement_vs_reference"]),
    ("A page-table structure", page_table, ["--test", "pagetables_trees_vs_hashmap", "--test", "pagetables_hashed_vs_hashmap"]),
    ("A superpage promotion policy", promotion_policy, ["--test", "superpages_integrity"]),
    ("A trace format", trace_format, ["--test", "roundtrip_readers", "--test", "bad_input"]),
    ("A promotion mechanism", mechanism, ["--test", "superpages_integrity"]),
    ("A machine preset", preset, ["--lib"]),
    ("A frame allocator", frame_allocator, ["--test", "allocators"]),
    ("A cost model", cost_model, ["--lib"]),
    ("A page daemon's victim choice", daemon, ["--test", "superpages_pressure"]),
    ("An analysis a sweep can run", sweep_analysis,
     ["-p", "pagelab-sweep", "-p", "pagelab-cli", "--test", "sweep", "--lib"]),
    ("A range unit", range_unit, ["--test", "decoupled_equals_in_order", "--lib"]),
    ("A figure of the HTML report", report_figure, ["python"]),
    ("A paper for `pagelab repro`", repro_paper, ["-p", "pagelab-repro", "-p", "pagelab-cli", "--test", "repro_docs", "--lib"]),
]
# The generated documentation: its lists (pagelab-core's docs_lists) and the README's
# table of papers (pagelab-cli's repro_docs), regenerated with PAGELAB_BLESS=1.
GENERATED = ["--test", "docs_lists", "--test", "repro_docs"]
# What every kind's dummy must also pass: the documentation's generated lists and
# field reference.
COMMON_TESTS = ["--test", "docs_lists", "--test", "configuration_doc", "--test", "repro_docs"]


def stated_counts() -> dict[str, int]:
    """Each section's "Touches N files" of docs/EXTENDING.md."""
    text = open(os.path.join(ROOT, "docs", "EXTENDING.md")).read()
    counts = {}
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        # The heading without its parenthesis: "A replacement policy (TLB arrays, …)".
        title = section.split("\n", 1)[0].split(" (")[0].strip()
        m = re.search(r"Touches (\d+) files?", section)
        if m:
            counts[title] = int(m.group(1))
    return counts


def copy_tree() -> None:
    if os.path.exists(WORKSPACE):
        shutil.rmtree(WORKSPACE)
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    for rel in files:
        if not rel or rel.startswith(("data/", "bench/", "fuzz/", "recorder/", "workloads/")):
            continue
        src = os.path.join(ROOT, rel)
        if not os.path.isfile(src):
            continue  # deleted in the working tree
        dst = os.path.join(SCRATCH, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst)
    # The bundled traces, which tests read, by reference.
    os.symlink(os.path.join(ROOT, "data"), os.path.join(SCRATCH, "data"))
    # The workspace one folder up: the repository's manifest with its paths moved.
    os.rename(os.path.join(SCRATCH, "Cargo.toml"), os.path.join(WORKSPACE, "Cargo.toml"))
    manifest = open(os.path.join(WORKSPACE, "Cargo.toml")).read().replace('"crates/', '"x/crates/')
    with open(os.path.join(WORKSPACE, "Cargo.toml"), "w") as f:
        f.write(manifest)
    os.rename(os.path.join(SCRATCH, "Cargo.lock"), os.path.join(WORKSPACE, "Cargo.lock"))


def cargo(args: list[str], env: dict[str, str]) -> None:
    command = ["cargo", "test", "--profile", "ci", *args]
    print("+", " ".join(command), flush=True)
    done = subprocess.run(command, cwd=WORKSPACE, env=env)
    if done.returncode != 0:
        sys.exit(f"dummy components: {' '.join(command)} failed in {SCRATCH}")


def main() -> int:
    start = time.time()
    copy_tree()
    scratch = Scratch(SCRATCH)
    for title, edit, _ in KINDS:
        scratch.kind = title
        edit(scratch)
    env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(ROOT, "target"))
    # The generated documentation lists, regenerated as the person adding would.
    # Each package and test target once (cargo refuses `--lib` twice); the same
    # packages in both builds, so that the second builds nothing again.
    targets: list[tuple[str, ...]] = [("-p", "pagelab-core")]
    for args in [t for _, _, t in KINDS] + [COMMON_TESTS]:
        if args == ["python"]:
            continue  # run by pytest, python_tests()
        pairs = [tuple(args[i:i + 2]) if args[i] in ("--test", "-p") else (args[i],)
                 for i in range(len(args)) if args[i].startswith("-")]
        targets += [p for p in pairs if p not in targets]
    packages = [a for p in targets if p[0] == "-p" for a in p]
    tests = [a for p in targets if p[0] != "-p" for a in p]
    # The generated documentation, regenerated as the person adding would.
    cargo(packages + GENERATED, dict(env, PAGELAB_BLESS="1"))
    cargo(packages + tests, env)
    python_tests()
    stated = stated_counts()
    wrong = []
    print(f"\n{'kind':<32}{'files touched':>14}{'EXTENDING.md':>14}")
    for title, _, _ in KINDS:
        n = len(scratch.touched.get(title, ()))
        said = stated.get(title)
        print(f"{title:<32}{n:>14}{said if said is not None else '-':>14}")
        if said != n or n > 3:
            wrong.append(f"{title}: {n} files touched, docs/EXTENDING.md says {said}")
        for rel in sorted(scratch.touched.get(title, ())):
            print(f"    {rel}")
    print(f"({time.time() - start:.0f} s)")
    if wrong:
        print("\n".join(wrong), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
