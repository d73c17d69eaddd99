"""How the demo shows itself: live progress lines (rich on a terminal, plain text on stderr
for `--json`), then a summary table and the comments landbot posted."""

from __future__ import annotations

import threading
import time
from typing import IO, TYPE_CHECKING

from landbot.demo.outcome import Outcome, final_state, happened, judge

if TYPE_CHECKING:
    from rich.console import Console
    from rich.status import Status

STYLES = {"queue": "cyan", "ci": "magenta", "landbot": "green", "github": "blue", "demo": "bold"}


class ConsoleReporter:
    """Progress on a rich console: one line per event, a spinner saying what runs now."""

    def __init__(self, console: Console, started: float | None = None) -> None:
        self.console = console
        self.started = time.monotonic() if started is None else started
        self.status: Status | None = None

    def event(self, who: str, pr: int | None, text: str) -> None:
        from rich.text import Text

        line = Text()
        line.append(f"{time.monotonic() - self.started:5.1f}s ", style="dim")
        line.append(f"{who:<8}", style=STYLES.get(who, ""))
        line.append(f"{'#' + str(pr) if pr is not None else '':<4} ", style="bold")
        line.append(text, style="dim" if who == "landbot" and text[:1].islower() else "")
        self.console.print(line, soft_wrap=False, overflow="fold")

    def activity(self, text: str) -> None:
        if self.status is not None:
            self.status.update(f"[dim]{text}…[/]")


class PlainReporter:
    """Progress as plain lines (on stderr for `--json`, so stdout holds only the JSON)."""

    def __init__(self, stream: IO[str], started: float | None = None) -> None:
        self.stream = stream
        self.started = time.monotonic() if started is None else started
        self.lock = threading.Lock()

    def event(self, who: str, pr: int | None, text: str) -> None:
        number = f"#{pr}" if pr is not None else ""
        with self.lock:
            self.stream.write(
                f"{time.monotonic() - self.started:5.1f}s {who:<8}{number:<4} {text}\n"
            )
            self.stream.flush()

    def activity(self, text: str) -> None:
        pass


def print_summary(console: Console, outcome: Outcome) -> None:
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"landbot demo: {outcome.seconds:.1f} s, agent: {outcome.agent}")
    table.add_column("PR", no_wrap=True)
    table.add_column("story")
    table.add_column("what happened")
    table.add_column("final state", no_wrap=True)
    table.add_column("as described", no_wrap=True)
    for pull in outcome.pulls:
        verdict = judge(pull)
        mark = Text("yes", style="green") if verdict.ok else Text(f"no: {verdict.problem}", "red")
        table.add_row(
            Text(f"#{pull.number} {pull.author}"),
            Text(f"{pull.label}: {pull.title}"),
            Text(happened(pull)),
            Text(final_state(pull)),
            mark,
        )
    console.print()
    console.print(table)
    console.print(Text(f"The loop ended: {outcome.why} ({outcome.steps} queue steps).", "dim"))
    console.print()
    console.print(Text("The comments landbot posted", style="bold"))
    for pull in outcome.pulls:
        for comment in pull.comments:
            title = f"#{pull.number} · {comment.kind} comment"
            if comment.minimized:
                title += f" (minimized: {comment.minimized})"
            console.print(Panel(Text(comment.body.rstrip("\n")), title=title, title_align="left"))
    verdict_line = (
        Text("Every story ended as described.", style="bold green")
        if outcome.as_described
        else Text("Some stories did not end as described (see the table).", style="bold red")
    )
    console.print(verdict_line)
