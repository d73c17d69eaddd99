"""Classify: why a pull request left the merge queue (failed job logs, merge conflicts)."""

from landbot.triage.classify import Match, compile_rules
from landbot.triage.explain import LogExplanation, explain_log, explain_parsed
from landbot.triage.log import ParsedLog, parse_log

__all__ = [
    "LogExplanation",
    "Match",
    "ParsedLog",
    "compile_rules",
    "explain_log",
    "explain_parsed",
    "parse_log",
]
