"""Fuzz kvviz's inputs with thousands of fresh hostile cases and print how they ended, per
surface: scenarios (hostile edits of every bundled one, tests/input_mutations.py), trace files
in every format, command-line flags, output paths and the size guard on what is read
(tests/input_surfaces.py). Each ends as
"ran", "refused" (exit 2, at most 21 error lines) or "other" (a traceback, another exit code,
too many lines): other must be 0. Cases are drawn fresh from SEED (default: the clock).
Then the files surface (issue 29, tests/input_files.py): FILES cases, each a user's sandbox
judged by the files-lost oracle (a share run as `kvviz-gui --screenshot` children), and KILLS
SIGKILLs per command plus full-disk runs (tmpfs as root, else RLIMIT_FSIZE); lost must be 0.

    python benchmarks/bench_fuzz_input.py [CASES] [--seed SEED] [--files N] [--kills K] [--only-files]
    (default 3,200 cases, files = CASES / 4, 5 kills per command)
"""
import argparse
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

from tests import input_files as files  # noqa: E402
from tests.input_mutations import cases, outcome, source_of  # noqa: E402
from tests.input_surfaces import SURFACES, run_case  # noqa: E402


def _scenarios(n: int, rng_seed: int, seen: Counter, others: list) -> None:
    @seed(rng_seed)
    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(cases())
    def run(case):
        try:
            what = outcome(case[4], source_of(case[0]))
        except Exception as e:  # noqa: BLE001 - counted, and the case shown
            what = f"other: {type(e).__name__}"
            others.append(("scenario", case[:4], str(e)[:200]))
        seen["scenario", "refused" if what.startswith("validator bug") else what] += 1

    run()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", type=int, nargs="?", default=3200)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--files", type=int, default=None, help="files-surface cases (default CASES / 4)")
    ap.add_argument("--kills", type=int, default=5, help="SIGKILLs per command (csv set, json+png, gui)")
    ap.add_argument("--gui-share", type=float, default=0.03, help="share of files cases run as kvviz-gui")
    ap.add_argument("--only-files", action="store_true", help="the files surface and kill/full-disk cases alone")
    args = ap.parse_args()
    rng_seed = args.seed if args.seed is not None else time.time_ns() % 2 ** 32
    n_files = args.cases // 4 if args.files is None else args.files
    if args.only_files:
        return _files_campaign(n_files, args.kills, args.gui_share, rng_seed)
    rc = _surfaces(args.cases, rng_seed)
    return _files_campaign(n_files, args.kills, args.gui_share, rng_seed) or rc


def _surfaces(cases: int, rng_seed: int) -> int:
    seen: Counter = Counter()
    others: list = []
    t = time.perf_counter()
    k = len(SURFACES)
    per = cases // (k + 1)
    _scenarios(cases - k * per, rng_seed, seen, others)
    rng = random.Random(rng_seed)
    with tempfile.TemporaryDirectory(prefix="kvviz-fuzz-") as d:
        for i in range(k * per):
            surface = list(SURFACES)[i % k]
            tmp = Path(d) / str(i)
            tmp.mkdir()
            argv = SURFACES[surface](rng, tmp)
            what = run_case(argv)
            if what.startswith("other"):
                others.append((surface, argv[:10], what))
                what = "other"
            seen[surface, what] += 1
    total = sum(seen.values())
    print(f"fuzz_input: {total:,} cases (seed {rng_seed}) in {time.perf_counter() - t:.0f} s")
    print(f"  {'surface':<10} {'refused':>8} {'ran':>8} {'other':>6}")
    for surface in ["scenario", *SURFACES]:
        print(f"  {surface:<10} {seen[surface, 'refused']:>8,} {seen[surface, 'ran']:>8,} "
              f"{sum(v for (s, w), v in seen.items() if s == surface and w not in ('ran', 'refused')):>6,}")
    counts = {w: sum(v for (s, x), v in seen.items() if (x if x in ('ran', 'refused') else 'other') == w)
              for w in ("refused", "ran", "other")}
    print(f"  {'all':<10} {counts['refused']:>8,} {counts['ran']:>8,} {counts['other']:>6,}")
    for o in others[:20]:
        print("  other:", *o)
    return 1 if counts["other"] else 0


def _files_campaign(n: int, kills: int, gui_share: float, rng_seed: int) -> int:
    """The files surface, then kills and full disks: totals, silent acceptances by kind and every
    distinct loss (command verb: entry, change) with a count and an example."""
    rng = random.Random(rng_seed)
    t = time.perf_counter()
    seen: Counter = Counter()
    accepted: Counter = Counter()   # exit 0 where the guard must refuse, by the target's sub-kind
    eager: Counter = Counter()      # refused a fine command, by kind
    losses: dict = {}
    others: list = []
    slowest = 0.0
    with tempfile.TemporaryDirectory(prefix="kvviz-files-") as d:
        for i in range(n):
            sandbox = Path(d) / str(i)
            sandbox.mkdir()
            files.build(sandbox)
            case = files.file_case(rng, sandbox, gui=gui_share)
            t0 = time.perf_counter()
            out = files.play(case, sandbox, child=case.gui)  # a GUI hang (a FIFO) is killed there
            slowest = max(slowest, time.perf_counter() - t0)
            seen[out.verdict] += 1
            seen["gui"] += case.gui
            if out.silent:
                accepted.update(case.must_refuse)
            if out.overeager:
                eager[case.kind] += 1
            if out.verdict in ("other", "hang"):
                others.append((case.argv, out.stderr.strip().splitlines()[-1:]))
            if out.lost:
                seen["lost"] += 1
                verb = "kvviz-gui --screenshot" if case.gui else case.argv[0]
                for problem in out.lost:
                    losses.setdefault((verb, problem), []).append(case.argv)
            shutil.rmtree(sandbox, ignore_errors=True)  # a thousand sandboxes: keep /tmp small
        kill_lines = _kills_and_full_disks(rng, Path(d), kills, losses, seen)
    total = time.perf_counter() - t
    print(f"files: {n:,} cases (seed {rng_seed}; {seen['gui']} as kvviz-gui children) in {total:.0f} s, "
          f"slowest case {slowest:.1f} s (budget {files.CASE_SECONDS} s in process, 90 s in a child)")
    print(f"  ran {seen['ran']:,}  refused {seen['refused']:,}  other {seen['other']:,}  hangs {seen['hang']:,}  "
          f"files lost in {seen['lost']:,} cases  silently accepted {sum(accepted.values()):,}  "
          f"fine commands refused {sum(eager.values()):,}")
    print("\n".join(kill_lines))
    print("  accepted (exit 0) where the guard must refuse, by target:")
    for kind, k in accepted.most_common():
        print(f"    {k:>5}  {kind}")
    if eager:
        print("  refused though fine:")
        for kind, k in eager.most_common(10):
            print(f"    {k:>5}  {kind}")
    print(f"  distinct losses ({len(losses)}): command -> entry: what happened  [cases]  e.g.")
    for (verb, problem), argvs in sorted(losses.items(), key=lambda kv: -len(kv[1])):
        print(f"    {verb} -> {problem}  [{len(argvs)}]  e.g. {' '.join(min(argvs, key=len))}")
    for argv, why in others[:20]:
        print("  other:", " ".join(argv), why)
    return 1 if losses or seen["other"] or seen["hang"] else 0


def _kills_and_full_disks(rng: random.Random, d: Path, kills: int, losses: dict, seen: Counter) -> list[str]:
    """SIGKILL each command `kills` times at a moment drawn from its measured run, then run it
    on a full disk with a few sizes of room left: the set's oracle (old or whole new, all alike)."""
    lines = []
    for which in ("csv", "json", "gui"):
        ref = d / f"ref-{which}"
        ref.mkdir()
        files.build(ref)
        argv, targets, gui = files.kill_command(which)
        t0 = time.perf_counter()
        code, err = files.run_child(argv, ref, gui=gui)
        duration = time.perf_counter() - t0
        if code != 0:
            lines.append(f"  kill {which}: the measured run failed (exit {code}): {err.strip().splitlines()[-1:]}")
            continue
        reference = {t: (ref / t).read_bytes() for t in targets}
        verb = ("kvviz-gui " if gui else "kvviz ") + " ".join(argv)
        bad = left = 0
        for k in range(kills):
            sandbox = d / f"kill-{which}-{k}"
            sandbox.mkdir()
            files.build(sandbox)
            problems = files.kill_case(rng, sandbox, which, duration, reference)
            left += bool(files.partials(sandbox))
            bad += bool(problems)
            for problem in problems:
                losses.setdefault((f"SIGKILL {verb}", problem), []).append(argv)
        full = Counter()
        for room in (300, 3000, 30000):
            for tmpfs in (True, False):
                sandbox = d / f"full-{which}-{room}-{tmpfs}"
                sandbox.mkdir()
                with files.small_disk(sandbox) as mounted:
                    if tmpfs and not mounted:
                        continue
                    files.build(sandbox)
                    problems, v = files.full_disk_case(sandbox, which, room, tmpfs, reference)
                full[v] += 1
                full["lost"] += bool(problems)
                how = "tmpfs full" if tmpfs else "RLIMIT_FSIZE"
                for problem in problems:
                    losses.setdefault((f"{how} {verb}", problem), []).append([*argv, f"(room {room} B)"])
        seen["lost"] += bad + full["lost"]
        lines.append(f"  {verb}: run {duration:.1f} s; {kills} kills: {bad} lost, {left} left a partial; "
                     f"full disk: {sum(full[v] for v in ('ran', 'refused', 'other', 'hang'))} runs, "
                     f"{full['refused']} refused, {full['ran']} ran, {full['lost']} lost")
    return lines


if __name__ == "__main__":
    sys.exit(main())
