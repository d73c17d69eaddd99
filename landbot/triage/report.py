"""The readable form of an explanation, for `landbot triage log` without --json."""

from __future__ import annotations

from landbot.triage.explain import LogExplanation

_FAULT = {
    True: "the pull request's own failure",
    False: "not the pull request's fault",
    None: "may or may not be the pull request's fault",
}


_SIGNALS = {
    "steps-api": "the jobs API's step conclusions",
    "annotations": "the check run's annotations",
    "log": "the log alone",
}


def render_text(explanation: LogExplanation, name: str) -> str:
    e = explanation
    out = [f"{name}: {e.class_} ({_FAULT[e.pr_fault]})"]
    out.append(f"  {e.summary}")
    if e.step is not None:
        where = f" (section at line {e.step_line})" if e.step_line else ""
        out.append(f"  step: {e.step}{where}")
        if e.step_title is not None and e.step_title != e.step:
            out.append(f"  in the log: {e.step_title}")
        inner = e.parsed.command_title if e.parsed is not None else None
        if inner is not None and inner != e.step_title:
            out.append(f"  failing step of the composite action: {inner}")
        out.append(f"  step chosen by: {_SIGNALS.get(e.signal, e.signal)}")
    if e.exit_code is not None:
        out.append(f"  exit code: {e.exit_code}")
    if e.error_lines:
        out.append("  error lines: " + ", ".join(str(n) for n in e.error_lines))
    for ev in e.evidence:
        out.append(f"  evidence: {ev.signature} at line {ev.line}: {ev.text.strip()}")
    if e.truncated:
        out.append("  (the step was longer than the bounds: its start was not kept)")
    if e.excerpt:
        width = len(str(e.excerpt[-1].line))
        out.append("")
        previous = None
        for item in e.excerpt:
            if previous is not None and item.line > previous + 1:
                out.append(f"  {'⋮':>{width}}")
            out.append(f"  {item.line:>{width}} │ {item.text}")
            previous = item.line
    return "\n".join(out)
