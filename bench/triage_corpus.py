"""Score `landbot triage log` on the corpus of real job logs (tests/triage/real/).

Each folder of the corpus is one ecosystem and holds `labels.toml`: one ``[[log]]`` table
per log, written by reading the log (see tests/triage/real/README.md):

    [[log]]
    file = "markitdown-hatch-pytest.log"
    classes = ["genuine"]          # the classes a person could accept, best first
    step = "Run cd packages/markitdown; hatch test"   # the failing step's title as the log
                                   # shows it (text after ##[group]); "" when it shows none
    api_step = "Run tests"         # optional: the jobs API name of the failing step
    steps = "x.steps.json"         # optional: the jobs API steps the source recorded
    see = [188, 214, 392]          # lines a person must see
    not_report = [386, "387-391"]  # lines that must not be reported (ranges allowed)

A log is scored on three points, from the log alone (as `landbot triage log FILE`):

- class: the class given is one of `classes` (the table also shows how often it is the
  first, the labeller's best reading);
- step: the step title given is `step` (whitespace-normalised; none when `step` is "");
- lines: every `see` line is in the excerpt, at least one `see` line is an error line,
  and no `not_report` line is an error line.

With ``steps`` recorded, the log is scored a second time with the jobs API steps given (as
the land loop does), the step point then comparing the API name with `api_step`. With a
passing log of the same job beside it (``<stem>.pass.log``, more as ``<stem>.pass2.log``
…), it is scored with those as baselines (``landbot triage log FILE --baseline PASS``).
``--generic`` adds a fourth mode: the log alone with the per-ecosystem recognisers off
(only the ``##[error]`` annotation and the generic rules), to see that the right line does
not need them. Beside the three points, the ``hit`` column counts logs with at least one
must-see line among the error lines (a looser reading of "the lines are right"), and the
second table gives the lines per answer (median and max of error lines and excerpt).

    .venv/bin/python bench/triage_corpus.py            # the table, per ecosystem
    .venv/bin/python bench/triage_corpus.py --misses   # and every log not right, with why
    .venv/bin/python bench/triage_corpus.py --json     # machine-readable
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "triage" / "real"
sys.path.insert(0, str(ROOT))

from landbot.core.model import TriageClass  # noqa: E402
from landbot.triage.baseline import Baseline, read_baseline  # noqa: E402
from landbot.triage.explain import LogExplanation, explain_parsed  # noqa: E402
from landbot.triage.log import parse_log  # noqa: E402
from landbot.triage.recognisers import annotation  # noqa: E402

MODES = {
    "log": "log alone",
    "baseline": "with --baseline",
    "api": "with the jobs API steps",
    "generic": "log alone, recognisers off",
}

CLASSES = frozenset(get_args(TriageClass))


@dataclass(frozen=True)
class Label:
    ecosystem: str
    file: Path
    classes: tuple[str, ...]
    step: str
    api_step: str | None
    steps: Path | None
    see: frozenset[int]
    not_report: frozenset[int]

    @property
    def name(self) -> str:
        return f"{self.ecosystem}/{self.file.name}"

    @property
    def passes(self) -> list[Path]:
        """Passing logs of the same job beside it: ``<stem>.pass.log``, ``<stem>.pass2.log``."""
        stem = self.file.name.removesuffix(".log")
        return sorted(self.file.parent.glob(f"{stem}.pass*.log"))


@dataclass
class Score:
    label: Label
    mode: str
    class_ok: bool
    step_ok: bool
    lines_ok: bool
    got_class: str
    got_step: str | None
    first_ok: bool = False
    """The class is the label's first (best) reading, not only an accepted one."""
    why: list[str] = field(default_factory=list)
    hit: bool = False
    """A must-see line is among the error lines (or the label has none)."""
    error_count: int = 0
    excerpt_count: int = 0

    @property
    def all_ok(self) -> bool:
        return self.class_ok and self.step_ok and self.lines_ok


def _lines(values: Iterable[int | str], where: str) -> frozenset[int]:
    out: set[int] = set()
    for value in values:
        if isinstance(value, int):
            out.add(value)
        elif isinstance(value, str) and "-" in value:
            lo, hi = (int(part) for part in value.split("-", 1))
            if hi < lo:
                raise ValueError(f"{where}: range {value!r} runs backwards")
            out.update(range(lo, hi + 1))
        else:
            raise ValueError(f"{where}: {value!r} is not a line or a range 'A-B'")
    return frozenset(out)


def load_labels(corpus: Path = CORPUS) -> list[Label]:
    """Every label of the corpus; a malformed one fails with the file and the entry."""
    labels: list[Label] = []
    for labels_file in sorted(corpus.glob("*/labels.toml")):
        folder = labels_file.parent
        data = tomllib.loads(labels_file.read_text(encoding="utf-8"))
        for n, entry in enumerate(data.get("log", []), 1):
            where = f"{labels_file} entry {n}"
            unknown = set(entry) - {
                "file",
                "classes",
                "step",
                "api_step",
                "steps",
                "see",
                "not_report",
                "note",
            }
            if unknown:
                raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
            path = folder / entry["file"]
            if not path.is_file():
                raise ValueError(f"{where}: {entry['file']} is not in {folder.name}/")
            classes = tuple(entry["classes"])
            if not classes or not set(classes) <= CLASSES:
                raise ValueError(f"{where}: classes {classes} (use {sorted(CLASSES)})")
            steps = folder / entry["steps"] if "steps" in entry else None
            if steps is not None and not steps.is_file():
                raise ValueError(f"{where}: steps file {entry['steps']} is missing")
            labels.append(
                Label(
                    ecosystem=folder.name,
                    file=path,
                    classes=classes,
                    step=str(entry.get("step", "")),
                    api_step=entry.get("api_step"),
                    steps=steps,
                    see=_lines(entry.get("see", []), where),
                    not_report=_lines(entry.get("not_report", []), where),
                )
            )
    return labels


def _norm(text: str | None) -> str:
    return " ".join((text or "").split())


def _steps_of(path: Path) -> list[dict[str, Any]]:
    """The failing job's steps from a recorded jobs API answer (a list of jobs, a job,
    or a list of steps)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict) and "steps" in data:
        return list(data["steps"])
    if isinstance(data, list) and data and isinstance(data[0], dict) and "steps" in data[0]:
        return list(data[0]["steps"])
    return list(data)


def score(label: Label, e: LogExplanation, mode: str) -> Score:
    why: list[str] = []
    class_ok = e.class_ in label.classes
    if not class_ok:
        why.append(f"class {e.class_}, wanted {'/'.join(label.classes)}")
    if mode == "api" and label.api_step is not None:
        got_step, wanted = e.step, label.api_step
    else:
        got_step, wanted = e.step_title, label.step
    step_ok = _norm(got_step) == _norm(wanted)
    if not step_ok:
        why.append(f"step {got_step!r}, wanted {wanted!r}")
    shown = {x.line for x in e.excerpt}
    errors = set(e.error_lines)
    unseen = sorted(label.see - shown)
    bad = sorted(label.not_report & errors)
    lines_ok = not unseen and not bad
    if unseen:
        why.append(f"not in the excerpt: {unseen}")
    if label.see and not (label.see & errors):
        lines_ok = False
        why.append(f"no must-see line among the error lines {sorted(errors)[:8]}")
    if bad:
        why.append(f"reported lines that must not be: {bad[:8]}")
    first_ok = e.class_ == label.classes[0]
    return Score(
        label,
        mode,
        class_ok,
        step_ok,
        lines_ok,
        e.class_,
        got_step,
        first_ok=first_ok,
        why=why,
        hit=not label.see or bool(label.see & errors),
        error_count=len(e.error_lines),
        excerpt_count=len(e.excerpt),
    )


def run(labels: Sequence[Label], *, generic: bool = False) -> list[Score]:
    scores: list[Score] = []
    for label in labels:
        with label.file.open("rb") as fh:
            parsed = parse_log(fh)  # explain_parsed is pure: one parse serves every mode
        scores.append(score(label, explain_parsed(parsed), "log"))
        passes = label.passes
        if passes:
            baselines: list[Baseline] = []
            for path in passes:
                with path.open("rb") as fh:
                    baselines.append(read_baseline(fh))
            scores.append(score(label, explain_parsed(parsed, baselines=baselines), "baseline"))
        if label.steps is not None:
            e = explain_parsed(parsed, steps=_steps_of(label.steps))
            scores.append(score(label, e, "api"))
        if generic:
            e = explain_parsed(parsed, ecosystems=(annotation.ECOSYSTEM,))
            scores.append(score(label, e, "generic"))
    return scores


def totals(scores: Sequence[Score]) -> dict[str, float]:
    n = len(scores) or 1
    return {
        "logs": len(scores),
        "class": sum(s.class_ok for s in scores) / n,
        "first": sum(s.first_ok for s in scores) / n,
        "step": sum(s.step_ok for s in scores) / n,
        "lines": sum(s.lines_ok for s in scores) / n,
        "all": sum(s.all_ok for s in scores) / n,
        "hit": sum(s.hit for s in scores) / n,
    }


def sizes(scores: Sequence[Score]) -> dict[str, float]:
    """Lines per answer: median and max of the error lines and of the excerpt."""
    errors = [s.error_count for s in scores] or [0]
    excerpt = [s.excerpt_count for s in scores] or [0]
    return {
        "error_lines_median": statistics.median(errors),
        "error_lines_max": max(errors),
        "excerpt_median": statistics.median(excerpt),
        "excerpt_max": max(excerpt),
    }


def table(scores: Sequence[Score]) -> str:
    rows = [
        "| ecosystem | logs | class | class (first choice) | step | lines | all three | hit |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def row(name: str, group: Sequence[Score]) -> str:
        t = totals(group)
        return (
            f"| {name} | {t['logs']} | {t['class']:.0%} | {t['first']:.0%} | {t['step']:.0%} | "
            f"{t['lines']:.0%} | {t['all']:.0%} | {t['hit']:.0%} |"
        )

    log_alone = [s for s in scores if s.mode == "log"]
    for eco in sorted({s.label.ecosystem for s in log_alone}):
        rows.append(row(eco, [s for s in log_alone if s.label.ecosystem == eco]))
    rows.append(row("**all, log alone**", log_alone))
    for mode in ("baseline", "api", "generic"):
        group = [s for s in scores if s.mode == mode]
        if group:
            rows.append(row(f"**{MODES[mode]}**", group))
            # The same logs, log alone: the side-by-side figure.
            names = {s.label.name for s in group}
            same = [s for s in log_alone if s.label.name in names]
            if len(same) != len(log_alone):
                rows.append(row(f"(the same {len(same)} logs, log alone)", same))
    if not any(s.mode == "baseline" for s in scores):
        rows.append(
            "| (with --baseline: no log has a `<stem>.pass.log` beside it) | 0 | | | | | | |"
        )
    rows += [
        "",
        "| mode | logs | error lines median | max | excerpt lines median | max |",
        "|---|---|---|---|---|---|",
    ]
    for mode, name in MODES.items():
        group = [s for s in scores if s.mode == mode]
        if group:
            z = sizes(group)
            rows.append(
                f"| {name} | {len(group)} | {z['error_lines_median']:g} | "
                f"{z['error_lines_max']} | {z['excerpt_median']:g} | {z['excerpt_max']} |"
            )
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--misses", action="store_true", help="list every log not all right")
    ap.add_argument("--json", action="store_true", help="print the totals as JSON")
    ap.add_argument("--corpus", type=Path, default=CORPUS, help="another corpus folder")
    ap.add_argument(
        "--generic",
        action="store_true",
        help="also score the generic rules alone (recognisers off)",
    )
    args = ap.parse_args(argv)
    scores = run(load_labels(args.corpus.resolve()), generic=args.generic)
    if args.json:
        out: dict[str, Any] = {}
        for mode in MODES:
            group = [s for s in scores if s.mode == mode]
            if group:
                out[mode] = totals(group) | sizes(group)
        print(json.dumps(out))
        return 0
    print(table(scores))
    if args.misses:
        print()
        for s in scores:
            if not s.all_ok:
                print(f"- {s.label.name} ({s.mode}): " + "; ".join(s.why))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
