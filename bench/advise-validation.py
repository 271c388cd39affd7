"""The table of bench/advise-validation.sh: per program and mapping, the speedup
`pagelab advise` predicted (on the calibrated host, and before, on zen4's flat costs)
beside the one measured, with its interval; then the mean and worst error of the
predicted speedup over the mappings whose measured difference is larger than the
noise (their interval leaves out 1.0).

    advise-validation.py OUT MACHINE DATE COMMIT NAME... [--write DOC README]

The error of a prediction p of a measured speedup m is |p - m| / m; a prediction of
the whole run time saved (no finite speedup) has an infinite error.
"""
import json
import math
import statistics
import sys

BEGIN, END = "<!-- advise-validation -->", "<!-- /advise-validation -->"


def cpuinfo_clock():
    """/proc/cpuinfo's clock in GHz: the one advise converted cycles with before it
    measured the core clock."""
    for line in open("/proc/cpuinfo"):
        if line.startswith("cpu MHz"):
            return float(line.split(":")[1]) / 1000
    raise SystemExit("advise-validation.py: /proc/cpuinfo gives no clock")


def flat_predictions(advice, zen4):
    """Each mapping's predicted speedup as advise made it before: the flat-cost
    analysis at /proc/cpuinfo's clock, against the measured all-small time (a sum
    mapping: the sum of its parts)."""
    benefit = {r["mapping"]: r["benefit_cycles"] for r in zen4["rows"]}
    small = advice["mappings"][0]["median_seconds"]
    out = {}
    for a in advice["mappings"]:
        if a["mapping"] == "all small":
            cycles = 0.0
        elif a["additive"]:
            cycles = sum(benefit[f"{c}@2M"] for c in a["categories"])
        else:
            cycles = benefit[a["mapping"]]
        saved = cycles / (cpuinfo_clock() * 1e9)
        out[a["mapping"]] = small / (small - saved) if saved < small else math.inf
    return out


def error(predicted, measured):
    if predicted is None or math.isinf(predicted):
        return math.inf
    return abs(predicted - measured) / measured


def pct(e):
    return "∞" if math.isinf(e) else f"{100 * e:.1f}%"


def speedup(x):
    return "all" if x is None or math.isinf(x) else f"{x:.2f}×"


def main(argv):
    write = None
    if "--write" in argv:
        i = argv.index("--write")
        write, argv = argv[i + 1:i + 3], argv[:i]
    out, machine, day, commit, *names = argv
    rows, measurable, quiet, confidences = [], [], [], set()
    for name in names:
        advice = json.load(open(f"{out}/{name}.json"))
        before = flat_predictions(advice, json.load(open(f"{out}/{name}.zen4.json")))
        confidences.add(advice.get("confidence", 0.95))
        for a in advice["mappings"][1:]:
            m = a["measured_speedup"]
            p = a["predicted_speedup"]
            b = before[a["mapping"]]
            low, high = a["measured_low"], a["measured_high"]
            interval = f"{low:.3f}–{high:.3f}" if low is not None else "–"
            row = [name, a["mapping"].replace("static+small-dynamic+large-dynamic", "all three"),
                   speedup(b), speedup(p), f"{m:.3f}×" if a["measurable"] else "no difference", interval,
                   str(a["rounds"])]
            if a["large_pages"] > 0 and a["anon_huge_mib"] == 0 and not a["measurable"]:
                # The mapping could not be made natively: nothing to compare.
                row += ["", "no huge pages"]
            elif a["measurable"]:
                eb, ea = error(b, m), error(p, m)
                measurable.append((name, a["mapping"], eb, ea))
                row += [pct(eb), pct(ea)]
            else:
                # Told apart from 1.0 or not, as measured: does the prediction fall in
                # the interval (is it as small as the noise)?
                inside = low is not None and p is not None and low <= p <= high
                quiet.append(inside)
                row += ["", "within" if inside else "outside"]
            rows.append(row)
    shared = f"{100 * confidences.pop():g}% interval" if len(confidences) == 1 else "interval"
    head = ["program", "mapping", "predicted before", "predicted", "measured", shared, "rounds",
            "error before", "error"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    table = "\n".join(lines)

    def mean(v):
        return sum(v) / len(v) if v else math.nan

    now = [x[3] for x in measurable]
    worst = max(measurable, key=lambda x: x[3]) if measurable else ("", "", 0, math.nan)
    # Where the flat costs predict short of the whole run: both errors on those.
    finite = [x for x in measurable if not math.isinf(x[2])]
    summary = (f"of their {len(rows)} mappings, {len(measurable)} measure a difference larger than the noise; on them "
               f"the predicted speedup is off by {pct(mean(now))} on average (median "
               f"{pct(statistics.median(now)) if now else 'nan'}; worst {worst[0]}, {pct(worst[3])}). zen4's "
               f"flat costs at /proc/cpuinfo's clock are off by {pct(mean([x[2] for x in finite]))} on the "
               f"{len(finite)} they predict short of the whole run (the calibrated host: "
               f"{pct(mean([x[3] for x in finite]))} on those), and predict the other "
               f"{len(measurable) - len(finite)} to save the whole run. Of the {len(quiet)} mappings with huge pages "
               f"but no measurable difference, {sum(quiet)} were predicted within the interval.")
    where = f"{machine}, THP madvise, {day}, commit {commit}"
    print(table)
    print()
    print(summary)
    print(where)
    if write:
        doc, readme = write
        with open(doc, "w") as f:
            f.write("# `pagelab advise` against the machine\n\n")
            f.write(__doc__.split("\n\n")[0].replace("The table of", "The output of") + "\n\n")
            f.write(f"Measured: {where}; each program by `pagelab advise --runs 3 --max-seconds 60`, whose 95 % "
                    "confidence is shared among its looks at the intervals (five: each interval at 99 %). "
                    "*predicted before*: zen4's flat walk and fault costs, as advise "
                    "priced them before it simulated walks through this machine's caches; *predicted*: the "
                    "`host` machine as `pagelab calibrate` measured it, C_TLBmiss the program's mean walk "
                    "through its caches. *within*/*outside*: where no difference was measurable, whether "
                    "the prediction lies in the interval; *no huge pages*: the mapping got none in any run (its "
                    "measured time is of small pages), left out.\n\n")
            f.write(table + "\n\n" + summary[0].upper() + summary[1:] + "\n")
        text = open(readme).read()
        if BEGIN in text and END in text:
            a, b = text.index(BEGIN) + len(BEGIN), text.index(END)
            text = text[:a] + "\n" + summary[0].upper() + summary[1:-1] + f" ({where}; every program in "\
                "[docs/advise-validation.md](docs/advise-validation.md)). " + text[b:]
            open(readme, "w").write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
