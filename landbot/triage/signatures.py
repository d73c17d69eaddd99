"""The built-in signatures of classify.py: each a name, a class and a check over the step.

A check returns the line that is its evidence, or None. Checks are pure and read only the
chosen failing step's region (``ParsedLog.output``), the step's title and script, the
job's name and workflow file (set-up lines), the marks of context.py, and, with the jobs
API, the failing step's display name.

Where a line sits weighs as much as what it says (issue 14): the runner's own messages
count anywhere in the step; what a tool prints counts only when it is *near the end*: among
the step's last ``NEAR_LINES`` output lines, or at most ``NEAR_LINES`` above its first
error (and a few after it). See ``View.near``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from landbot.core.model import TriageClass
from landbot.triage.context import FAILURE_KINDS, GENERIC_KINDS, TEST_KINDS, Mark
from landbot.triage.log import Line, ParsedLog

# Output lines at the step's end (and above its first error) where a cause is looked for.
NEAR_LINES = 50
# Lines after the first error that still count (a runner's summary follows it).
AFTER_ERROR = 8


@dataclass(frozen=True)
class View:
    """The failing step as the signatures see it."""

    parsed: ParsedLog
    marks: Sequence[Mark]
    step_name: str | None = None
    """The failing step's display name in the jobs API, when given."""

    @cached_property
    def near(self) -> frozenset[int]:
        """Indexes of output lines near the end: the step's last lines, the lines above
        its first error and just after it."""
        lines = self.parsed.output.lines
        n = len(lines)
        near = set(range(max(0, n - NEAR_LINES), n))
        first = self.parsed.first_error
        if first is not None:
            at = next((i for i, line in enumerate(lines) if line.number >= first), n)
            near.update(range(max(0, at - NEAR_LINES), min(n, at + AFTER_ERROR + 1)))
        return frozenset(near)

    def grep(
        self,
        pattern: re.Pattern[str],
        hints: Sequence[str],
        *,
        ignore_case: bool = False,
        near: bool = True,
    ) -> list[Line]:
        """Output lines matching `pattern` among those holding one of `hints` (by default
        only those near the end)."""
        lines = self.parsed.output.lines
        found = self.parsed.output.grep(pattern, hints, ignore_case=ignore_case)
        return [lines[idx] for idx, _m in found if not near or idx in self.near]

    def first(
        self,
        pattern: re.Pattern[str],
        hints: Sequence[str],
        *,
        ignore_case: bool = False,
        near: bool = True,
    ) -> Line | None:
        found = self.grep(pattern, hints, ignore_case=ignore_case, near=near)
        return found[0] if found else None

    def line(self, number: int) -> Line | None:
        for line in self.parsed.region:
            if line.number == number:
                return line
        return None

    @cached_property
    def failed_tests(self) -> tuple[Mark, ...]:
        return tuple(m for m in self.marks if m.kind in TEST_KINDS)


Check = Callable[[View], Line | None]


def regex(pattern: str, *hints: str, ignore_case: bool = False, near: bool = True) -> Check:
    """A check: the first line matching `pattern` (located by its literal `hints`)."""
    compiled = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    lowered = tuple(h.lower() for h in hints) if ignore_case else hints

    def check(view: View) -> Line | None:
        return view.first(compiled, lowered, ignore_case=ignore_case, near=near)

    return check


# --- the runner: shut down, lost, out of time, cancelled -------------------------------
# The messages are actions/runner's (src/Runner.Worker/JobRunner.cs, StepsRunner.cs,
# Handlers/CompositeActionHandler.cs) and the service's (maximum execution time).

RUNNER_SHUTDOWN = regex(
    r"The runner has received a shutdown signal|Operating system is shutting down for computer",
    "shutdown signal",
    "Operating system is shutting down",
    near=False,
)
RUNNER_LOST = regex(r"lost communication with the server", "lost communication", near=False)


def runner_vanished(view: View) -> Line | None:
    """The log ends in the runner's set-up, after the runner took the job and before any
    step ran: the runner died (log.py's ``ended`` section; GitHub keeps nothing more)."""
    section = view.parsed.section
    if section is None or section.signal != "ended":
        return None
    return view.line(section.first_error)


RUNNER_DEPROVISIONED = regex(
    r"Received request to deprovision|runner (?:has been|was) deprovisioned",
    "deprovision",
    ignore_case=True,
    near=False,
)
MAX_EXECUTION_TIME = regex(
    r"has exceeded the maximum execution time of \d+ minutes", "maximum execution time", near=False
)
STEP_TIMEOUT = regex(
    r"^##\[error\]The (?:action|background step) (?:'.*' )?has timed out",
    "\n##[error]The action",
    "\n##[error]The background step",
    near=False,
)
OPERATION_CANCELLED = regex(
    r"^##\[error\]The operation was cancell?ed", "\n##[error]The operation was", near=False
)
# Another run of the concurrency group, or a failing matrix sibling (fail-fast), ended it.
CANCELLED_BY_OTHERS = regex(
    r"^##\[error\](?:Canceling since a higher priority waiting request for .* exists|"
    r"The job was cancell?ed because .* failed)",
    "\n##[error]Canceling since",
    "\n##[error]The job was cancel",
    near=False,
)

# `go test -timeout` panics the whole test binary; the goroutine dump that follows can
# be thousands of lines, so this one counts anywhere in the step.
GO_TEST_TIMEOUT = regex(r"^panic: test timed out after \d", "\npanic: test timed out", near=False)

_SIGNAL = re.compile(
    r"\b(?:received|got|caught)\s+(?:signal\s+)?(?:SIGTERM|SIGINT)\b|\bsignal (?:SIGTERM|SIGINT)\b"
    r"|^Terminated$|\bterminated by signal (?:SIGTERM|SIGINT|15|2)\b",
    re.IGNORECASE,
)
_SIGNAL_HINTS = ("sigterm", "sigint", "terminated")


def runner_signal(view: View) -> Line | None:
    """The step's processes were sent SIGTERM or SIGINT (exit code 143 or 130): the runner
    was stopped or the machine taken away, unless a cancellation says why."""
    if view.parsed.exit_code not in (130, 143):
        return None
    return view.first(_SIGNAL, _SIGNAL_HINTS, ignore_case=True)


# --- the machine: memory, disk ---------------------------------------------------------

_OOM_HINTS = (
    "out of memory",
    "oom-kill",
    "oomkill",
    "oom kill",
    "oom_kill",
    "killed signal terminated program",
    "cannot allocate memory",
    "outofmemoryerror",
    "virtual memory exhausted",
    "memory allocation of",
)
_OOM = re.compile(
    r"\bout of memory\b|\boom[-_ ]?kill|Killed signal terminated program|Cannot allocate memory|"
    r"java\.lang\.OutOfMemoryError|virtual memory exhausted|memory allocation of \d+ bytes failed",
    re.IGNORECASE,
)
# A phrase about what *could* happen is not a report that it did.
_HYPOTHETICAL = re.compile(
    r"\b(?:could|may|might|can|would|to avoid|prevent)\b[^.]{0,40}\bout of memory", re.IGNORECASE
)
_KILLED = re.compile(r"(?:^|\s)Killed\b")


# The phrase as a quoted value (``want error "out of memory"``): what a test compares.
_QUOTED_OOM = re.compile(r"[\"'`][^\"'`]{0,40}\bout of memory\b[^\"'`]{0,40}[\"'`]", re.IGNORECASE)


def out_of_memory(view: View) -> Line | None:
    for hit in view.grep(_OOM, _OOM_HINTS, ignore_case=True):
        if _HYPOTHETICAL.search(hit.text):
            continue
        if view.failed_tests and _QUOTED_OOM.search(hit.text):
            continue  # a failing test's own message quoting the words, not a report
        return hit
    # The kernel's OOM killer sends SIGKILL: the shell prints `Killed`, exit code 137.
    if view.parsed.exit_code == 137:
        return view.first(_KILLED, ["Killed"])
    return None


NO_SPACE = regex(
    r"no space left on device|\bENOSPC\b|not enough space on the disk|"
    r"You are running out of disk space|\bdisk quota exceeded\b",
    "no space left on device",
    "enospc",
    "not enough space on the disk",
    "running out of disk space",
    "disk quota exceeded",
    ignore_case=True,
)

# --- provisioning: pods, service containers, actions, the cache ------------------------

# actions-runner-controller's container hooks and Kubernetes' scheduler, when the job's
# pod never ran. A Kubernetes project's own tests print such lines too, so they count
# only as the runner's: an annotation, in the set-up (where "Initialize containers"
# creates the pod), or with the hooks' own failure message.
_NOT_PROVISIONED = re.compile(
    r"[Pp]od .*(?:failed to start|failed to come online|is unhealthy with phase status|"
    r"was never scheduled|could not be scheduled)|\bFailedScheduling\b|"
    r"\b\d+/\d+ nodes are available\b|Error: Pod failed|[Ff]ailed to create (?:the )?(?:job )?pod"
)
_NOT_PROVISIONED_HINTS = (
    "pod ",
    "Pod ",
    "FailedScheduling",
    "nodes are available",
    "ailed to create",
)
_HOOKS_FAILED = re.compile(r"^##\[error\]Executing the custom container implementation failed")


def not_provisioned(view: View) -> Line | None:
    hits = view.grep(_NOT_PROVISIONED, _NOT_PROVISIONED_HINTS)
    if not hits:
        return None
    hooks = view.first(_HOOKS_FAILED, ["\n##[error]Executing the custom"], near=False)
    for hit in hits:
        if hit.text.startswith("##[error]") or hooks is not None or view.parsed.step_title is None:
            return hit
    return None


# actions/runner ContainerOperationProvider.cs: a `services:` container never healthy.
SERVICE_CONTAINER = regex(
    r"^##\[error\](?:One or more containers failed to start|Failed to initialize container)",
    "\n##[error]One or more containers",
    "\n##[error]Failed to initialize container",
    near=False,
)
# actions/runner ActionManager.cs: the runner could not fetch an action's archive.
ACTION_DOWNLOAD = regex(
    r"^(?!##\[warning\]).*(?:Failed to download (?:action|archive) '|"
    r"Action '.*' download has timed out|An action could not be found at the URI)",
    "failed to download",
    "download has timed out",
    "could not be found at the uri",
    ignore_case=True,
    near=False,
)
# The Actions cache service (actions/cache's toolkit, buildx's `type=gha` cache, which
# stores blobs in Azure storage) failed or lost an entry it had just listed.
_CACHE_SERVICE = regex(
    r"\b(?:getCacheEntry|reserveCache) failed|Cache service responded with (?:5\d\d|429)|"
    r"\bBlobNotFound\b|The specified blob does not exist",
    "getcacheentry",
    "reservecache",
    "cache service responded",
    "blobnotfound",
    "specified blob does not exist",
    ignore_case=True,
)
# A service refused for load, not for the request: GitHub's API and Docker Hub limits.
_RATE_LIMITED = regex(
    r"\bAPI rate limit exceeded\b|\bsecondary rate limit\b|\btoomanyrequests\b|"
    r"\bpull rate limit\b|\b429 Too Many Requests\b",
    "rate limit",
    "toomanyrequests",
    "too many requests",
    ignore_case=True,
)


def _unless_tests_failed(check: Check) -> Check:
    """`check`, but not when tests failed: a test may exercise a client against such an
    answer (``test_returns_429``, a storage client's ``BlobNotFound``), and then the words
    are its own message, not the runner's service failing (as ``server_error``)."""

    def guarded(view: View) -> Line | None:
        return None if view.failed_tests else check(view)

    return guarded


CACHE_SERVICE = _unless_tests_failed(_CACHE_SERVICE)
RATE_LIMITED = _unless_tests_failed(_RATE_LIMITED)

# A service the step called answered with a server error (HTTP 5xx): its outage, not the
# change. Read only in the step's own error annotations and the lines a multi-line one
# continues on (an action reports the response it got: `##[error]{ "code": 500 }`), and
# not when tests failed (a test may expect a server's 500).
_SERVER_ERROR = re.compile(
    r"(?<!exit )\b(?:status(?:[ _-]?code)?|code|HTTP(?:/[\d.]+)?)\"?\s*[:=]?\s*\"?5\d\d\b|"
    r"\b5\d\d (?:Internal Server Error|Bad Gateway|Service Unavailable|Gateway Time-?out)\b|"
    r"HttpError: (?:Internal Server Error|Bad Gateway|Service Unavailable|Server Error)\b",
    re.IGNORECASE,
)
# Lines after an annotation that may be its continuation (a JSON body printed whole).
_ANNOTATION_LINES = 4


def server_error(view: View) -> Line | None:
    """The step's error says a service answered 5xx (Internal Server Error and the like)."""
    if view.failed_tests:
        return None
    lines = view.parsed.output.lines
    for idx, _m in view.parsed.output.grep(_ANY_ERROR, _ERROR_HINT):
        if idx not in view.near:
            continue
        for j in range(idx, min(len(lines), idx + _ANNOTATION_LINES + 1)):
            if j > idx and lines[j].text.startswith("##["):
                break
            if _SERVER_ERROR.search(lines[j].text):
                return lines[j]
    return None


# Dependabot's updater prints a results table of error types: `unknown_error` is its own
# crash (dependabot-core raises it for an exception it does not know), while the others
# (`dependency_file_not_found`, `security_update_not_possible`, …) are the repository's.
DEPENDABOT_UPDATER_CRASH = regex(r"^\|\s*unknown_error\s*\|", "unknown_error")


# --- policy: a gate on the pull request itself -----------------------------------------

_GATE_WORDS = (
    r"\b(?:PR|pull[ -]request)(?:'s)? (?:title|description|body|labels?|milestone)\b|"
    r"\btitle (?:doesn't|does not|must|should)\b|\blabels?\b.{0,60}\b(?:required|missing|must|"
    r"should|needs?|not (?:be )?merged|starting with)\b|\b(?:must|should|needs? to) have .{0,40}"
    r"\blabels?\b|\bchangelog\b|\bmilestone\b|\bDCO\b|Signed-off-by|\bsign[- ]?off\b|"
    r"\ballow edits\b|maintainers? (?:can|to) (?:modify|edit)|conventional commits?\b|"
    r"semantic (?:PR|pull request)"
)
_GATE_TEXT = re.compile(_GATE_WORDS, re.IGNORECASE)
# Action names and job or workflow names of the common gates.
# Not ``pr-lint`` (a workflow that lints the code of pull requests as often as their
# titles) nor a bare ``changelog`` (``Generate changelog`` is a release script): a
# changelog *check*.
_GATE_NAME = re.compile(
    r"(?:pr|pull[-_ ]?request)[-_ ]?(?:title|name|labels?)|semantic[-_ ]?pull|"
    r"enforce[-_ ]?labels?|required?[-_ ]?labels?|labels?[-_ ]?check|"
    r"check[-_ ]?(?:pr[-_ ]?)?labels?|"
    r"verify[-_ ]?labels?|blocking[-_ ]?labels?|allow[-_ ]?edits|\bdco\b|milestone|"
    r"changelog[-_ ]?(?:check|lint|verif|valid|requir|entry|guard|enforc)|"
    r"(?:check|lint|verify|validate|require|enforce)[-_ ]?(?:the[-_ ]?)?changelog|"
    r"sign[-_ ]?off",
    re.IGNORECASE,
)
_ERROR_HINT = ("\n##[error]",)
_ANY_ERROR = re.compile(r"^##\[error\](?!Process completed with exit code)")


def pr_gate(view: View) -> Line | None:
    """The step is a check of the pull request itself (its title, labels, changelog entry,
    milestone, sign-off, "allow edits"), not of its code.

    Only when nothing in the step shows a failure of the code: no failed test, no line a
    recogniser marks as a failure (a compiler's, a linter's, a crash's), no tool's error
    line near the end. Then said by the step's own error message (``##[error]Every PR
    must have at least one label …``; not a tool's ``file:line`` diagnostic a problem
    matcher annotated, nor an exception), or by the gate's name (the action it runs, its
    jobs API name, the job's name or its workflow file).
    """
    if _code_failed(view):
        return None
    for hit in view.grep(_ANY_ERROR, _ERROR_HINT):
        if _gate_message(hit.text):
            return hit
    parsed = view.parsed
    named = [parsed.step_title or "", view.step_name or ""]
    job = [line for line in (parsed.job_name, parsed.workflow) if line is not None]
    if any(_GATE_NAME.search(name) for name in named):
        return view.line(parsed.first_error) if parsed.first_error else None
    for line in job:
        if _GATE_NAME.search(_job_part(line.text)):
            return line
    return None


# Recognisers' kinds that are no verdict on the code: the bare annotation, quest's, and
# the generic rules' (they find the lines to read, not what kind of thing failed).
_NOT_CODE = frozenset({"error", "quest"}) | GENERIC_KINDS
# A crash's typed exception (``TypeError: …``, ``KeyError``), not a bare ``Error:`` (what
# a gate's script throws with its message).
_TYPED_EXCEPTION = re.compile(r"(?:^|[\s(])(?:[\w$]+\.)*[A-Z]\w*(?:Error|Exception)\b(?::|$)")
_TYPED_HINTS = ("Error", "Exception")
# A tool's diagnostic about a file: ``src/a.tsx(12,5): error …``, ``a.py:3:1: …``,
# ``deployment.yaml: …``, an eslint row ``  12:7  error  …``.
_DIAGNOSTIC = re.compile(
    r"^\s*(?:[\w./\\-]+\.\w{1,6}(?:[:(]\d+(?:[:,]\d+)?\)?)?:\s|\d+:\d+\s+(?:error|warning)\b)"
)
# Paths and file names are no words of a gate: ``open '…/CHANGELOG.md'``.
_PATHISH = re.compile(r"[\w.~-]*[/\\][\w./\\~-]*|\b[\w-]+\.(?:md|txt|rst|ya?ml|json|toml)\b")


def _code_failed(view: View) -> bool:
    """A test, a tool or the script itself failed in the step: what failed is code."""
    if view.failed_tests or _tool_errors(view) or view.first(_CRASHED, _CRASH_HINTS):
        return True
    if any(m.kind in FAILURE_KINDS and m.kind not in _NOT_CODE for m in view.marks):
        return True
    return view.first(_TYPED_EXCEPTION, _TYPED_HINTS) is not None


def _gate_message(annotation: str) -> bool:
    """An ``##[error]`` that is a gate's message about the pull request."""
    text = annotation.removeprefix("##[error]")
    if _DIAGNOSTIC.match(text) or _TYPED_EXCEPTION.search(text):
        return False
    return _GATE_TEXT.search(_PATHISH.sub(" ", text)) is not None


# A gate says no with its own message (`core.setFailed`); a script that crashed on an API
# call (github-script's `Unhandled error: HttpError: …`, a token without the permission)
# failed before deciding anything, whatever the job is called.
_CRASHED = re.compile(
    r"^##\[error\]Unhandled error:|HttpError|Resource not accessible by integration"
)
_CRASH_HINTS = ("Unhandled error:", "HttpError", "Resource not accessible by integration")


def _job_part(text: str) -> str:
    """The name in a ``Complete job name:`` line, the file in a ``Job defined at:`` one."""
    if text.startswith("Job defined at: "):
        path = text.removeprefix("Job defined at: ").split("@", 1)[0]
        return path.rsplit("/", 1)[-1]
    return text.removeprefix("Complete job name: ")


# Also an eslint stylish row (``  3:8  error  …``) and a typed exception (``TypeError:
# …``); a linter's coded rows (``a.py:1:8: F401 …``) are the recognisers' marks.
_TOOL_ERROR = re.compile(
    r"^(?:\S+:\d+(?::\d+)?: )?(?:error|fatal error)\b|\berror(?:\[\w+\])?: |^E\s|Traceback \(most|"
    r"\bFAIL(?:ED)?\b|\bpanic:|npm ERR!|BUILD FAILED|\bExceptions?\b|^\s*\d+:\d+\s+error\s|"
    r"[a-z\d]Error: ",
)
_TOOL_HINTS = ("error", "fail", "panic:", "traceback", "npm err!", "exception", "\ne ")


def _tool_errors(view: View) -> bool:
    """A tool reported an error near the end (other than the annotations)."""
    return any(
        not line.text.startswith("##[")
        for line in view.grep(_TOOL_ERROR, _TOOL_HINTS, ignore_case=True)
    )


# --- flaky: the network, known markers -------------------------------------------------

NETWORK_WORDS = (
    "ECONNRESET",
    "ETIMEDOUT",
    "ESOCKETTIMEDOUT",
    "EAI_AGAIN",
    "ENOTFOUND",
    "ECONNREFUSED",
    "ENETUNREACH",
    "EHOSTUNREACH",
    "socket hang up",
    "Read timed out",
    "Connection reset by peer",
    "Connection timed out",
    "Connection refused",
    "Connection aborted",
    "Connection broken",
    "connection reset",
    "RemoteDisconnected",
    "IncompleteRead",
    "Temporary failure in name resolution",
    "Name or service not known",
    "nodename nor servname",
    "Could not resolve host",
    "no such host",
    "getaddrinfo",
    "TLS handshake timeout",
    "i/o timeout",
    "network timeout",
    "Network is unreachable",
    "Failed to connect to",
    "The remote end hung up unexpectedly",
    "RPC failed",
    "SSL_ERROR_SYSCALL",
    "unexpected EOF",
    "502 Bad Gateway",
    "503 Service Unavailable",
    "504 Gateway Time",
)
# Not Python's or bash's ``unexpected EOF while parsing`` / ``while looking for matching``:
# a syntax error, not a connection cut short.
_NETWORK = re.compile(
    "|".join(
        re.escape(w) + (r"(?! while\b)" if w == "unexpected EOF" else "") for w in NETWORK_WORDS
    )
)
_REGISTRY = re.compile(
    r"\bnpm (?:ERR!|error|warn|WARN)|\byarn\b|\bpnpm\b|ERR_PNPM|\bpip\b|pypi\.org|"
    r"pythonhosted\.org|registry\.npmjs\.org|registry\.yarnpkg\.com|npm\.pkg\.github\.com|"
    r"crates\.io|proxy\.golang\.org|sum\.golang\.org|repo1?\.maven|maven\.org|gradle\.org|"
    r"rubygems\.org|archive\.ubuntu\.com|security\.ubuntu\.com|deb\.debian\.org|"
    r"packages\.microsoft\.com|registry-1\.docker\.io|ghcr\.io|nuget\.org|"
    r"conda\.anaconda\.org|\bapt-get\b"
)
_INSTALL = re.compile(
    r"\bnpm (?:ci|install|i|update)\b|\byarn(?: install)?[ \t]*$|\byarn install\b|"
    r"\bpnpm (?:install|i)\b|\bpip3? install\b|-m pip install\b|\buv (?:sync|pip install|add)\b|"
    r"\bpoetry install\b|\bpipenv install\b|\bapt(?:-get)? (?:update|install)\b|"
    r"\bbundle install\b|\bgo mod download\b|\bcargo fetch\b|\bdocker pull\b|"
    r"\bconda install\b|actions/setup-(?:node|python|go|java)\b",
    re.MULTILINE,
)
_REGISTRY_NEAR = 30
_NETWORK_HITS = 50
# A container registry (or its mirror) listed an image but failed to serve a layer of it.
REGISTRY_UNAVAILABLE = regex(
    r"could not fetch content descriptor|httpReadSeeker: failed open|"
    r"received unexpected HTTP status: 5\d\d",
    "could not fetch content descriptor",
    "httpreadseeker",
    "unexpected http status: 5",
    ignore_case=True,
)


def _network_hits(view: View) -> list[int]:
    found = view.parsed.output.grep(_NETWORK, NETWORK_WORDS)
    return [idx for idx, _m in found if idx in view.near][:_NETWORK_HITS]


def registry_network(view: View) -> Line | None:
    """A network error while talking to a package registry: worth a re-run."""
    lines = view.parsed.output.lines
    hits = _network_hits(view)
    if not hits:
        return None
    for idx in hits:
        if any(
            _REGISTRY.search(lines[j].text) for j in range(max(0, idx - _REGISTRY_NEAR), idx + 1)
        ):
            return lines[idx]
    # The step itself installs packages; unless tests failed (then the error may be theirs)
    # or the step's own code failed first.
    command = "\n".join((view.parsed.step_title or "", *view.parsed.step_script))
    if _INSTALL.search(command) and not view.failed_tests:
        for idx in hits:
            if not _local(view, idx) and not _failed_before(view, idx):
                return lines[idx]
    return None


# A downloaded archive came truncated or corrupt (a dropped connection mid-download):
# what fails after it (an emulator that never started, a missing tool) is its consequence.
# Not ``gzip: stdin: not in gzip format``: that is most often a wrong URL that answered
# with an HTML page (a release the pull request names that does not exist).
_ZIP_CORRUPT = regex(
    r"Error on ZipFile|\bunknown archive\b|End-of-central-directory signature not found|"
    r"zip file (?:is )?(?:truncated|corrupt)",
    "zipfile",
    "unknown archive",
    "end-of-central-directory",
    "zip file",
    ignore_case=True,
)
# A stream cut short, read straight from a download (``curl -sL … | tar xz``).
_TRUNCATED = regex(
    r"gzip: stdin: unexpected end of file|tar: Unexpected EOF in archive",
    "unexpected end of file",
    "unexpected eof in archive",
    ignore_case=True,
)
_FETCHES = re.compile(r"\b(?:curl|wget)\b|https?://")


def download_corrupt(view: View) -> Line | None:
    hit = _ZIP_CORRUPT(view)
    if hit is not None:
        return hit
    command = "\n".join((view.parsed.step_title or "", *view.parsed.step_script))
    return _TRUNCATED(view) if _FETCHES.search(command) else None


# A remote host named on the network error's line or next to it (the URL is often on
# the line above: `Error downloading "https://…":` then `net/http: TLS handshake timeout`).
# A ``name:port`` is a host when its last label is a word that is no source file's
# extension: ``api.example.com:443``, never pytest's ``tests/test_api.py:12``.
_SOURCE_EXT = (
    r"py|pyx|js|mjs|cjs|ts|tsx|jsx|vue|go|rs|java|kt|kts|scala|rb|php|cs|swift|c|h|cc|cpp|"
    r"hpp|m|ex|exs|erl|sh|pl|lua|dart|ya?ml|json|toml|xml|md|txt|log|html|css"
)
_HOST = re.compile(
    r"https?://[\w.-]+|\bhost='?[\w.-]+|\b\d{1,3}(?:\.\d{1,3}){3}:\d{2,5}\b|"
    rf"\b[\w-]+(?:\.[\w-]+)*\.(?!(?:{_SOURCE_EXT}):)[A-Za-z][\w-]+:\d{{2,5}}\b"
)
_HOST_NEAR = 3
_LOCAL = re.compile(r"\b(?:localhost|127\.\d+\.\d+\.\d+|0\.0\.0\.0)\b|\[::1\]|(?<![\w:])::1\b")
# A failed assertion near the end: the tests failed on what the code did (pytest's
# ``E   assert``, its ``--tb=line`` ``path:88: assert …``, a summary's ``- assert …``).
_ASSERTION = re.compile(
    r"\bAssertionError\b|(?:^E\s+|:\d+: |\s-\s)assert\b|\bassert(?:ion)? failed\b|"
    r"\bExpected\b.*\b(?:got|but|Received)\b|"
    r"^\s*Expected:|^\s*Received:|\bexpected .* to (?:be|equal|have)\b|\bassert\.\w+\(|"
    r"\bComparisonFailure\b|\bAssertionFailedError\b"
)
_ASSERTION_HINTS = ("assert", "expected", "received", "comparisonfailure")


def _local(view: View, idx: int) -> bool:
    """The network error at output line `idx` is about the job's own machine: its line
    names a loopback address and no other host, or names no host and the lines around it
    name only loopback ones (``Waiting for http://localhost:8000`` above ``curl: (7)
    Failed to connect …``). A server of the job's own that never listened (it crashed,
    it was never started) is no network's fault."""
    lines = view.parsed.output.lines
    text = lines[idx].text
    own = _HOST.findall(text)
    if _LOCAL.search(text):
        return all(_LOCAL.search(h) for h in own)
    if own:
        return False
    around = [lines[j].text for j in range(max(0, idx - _HOST_NEAR), min(len(lines), idx + 2))]
    hosts = [h for t in around for h in _HOST.findall(t)]
    return bool(hosts) and all(_LOCAL.search(h) for h in hosts)


# Words of a failure that is itself the network's (a timeout's, a socket's exception in
# the same traceback), so no *other* failure.
_NETWORKISH = re.compile(
    r"[Tt]ime(?:d ?)?out|[Cc]onnect|[Ss]ocket|URLError|SSL|TLS|gaierror|Protocol|Remote|"
    r"MaxRetry|DNS|[Rr]esol(?:v|ution)|[Nn]etwork|EOF|[Hh]andshake|UnknownHost|NoRouteToHost"
)


def _other_error(text: str) -> bool:
    """A line that states a failure other than the network's."""
    return not _NETWORK.search(text) and not _NETWORKISH.search(text)


def _failed_before(view: View, idx: int) -> bool:
    """Something else failed near the end of the step before the network error at `idx`
    (a traceback, a crash, a compiler's error): the network error is its consequence (a
    server that crashed refuses the connection), not the cause."""
    lines = view.parsed.output.lines
    number = lines[idx].number
    near = {lines[i].number for i in view.near}
    for m in view.marks:
        if m.line >= number:
            break
        if (
            m.line in near
            and m.kind in FAILURE_KINDS
            and m.kind not in _NOT_CODE
            and _other_error(m.text)
        ):
            return True
    return any(
        line.number < number and _other_error(line.text)
        for line in view.grep(_TYPED_EXCEPTION, _TYPED_HINTS)
    )


def _remote(view: View, idx: int) -> bool:
    """The network error at output line `idx` is about a remote host."""
    lines = view.parsed.output.lines
    around = [lines[j].text for j in range(max(0, idx - _HOST_NEAR), min(len(lines), idx + 2))]
    hosts = [h for text in around for h in _HOST.findall(text)]
    return any(not _LOCAL.search(h) for h in hosts)


def network_error(view: View) -> Line | None:
    """A DNS or connection failure decided the step.

    Never one to the job's own machine (``localhost``, ``127.0.0.1``: a server of the
    job's that never listened). With no failed test: at the step's end, and not after
    another failure of the step (then it is that failure's consequence). With failed
    tests: a failure reaching a remote host (not a bare error code a test may assert on),
    and near the end no failed assertion nor any other error a test stated (``E
    KeyError``, ``TypeError: …``): a log line about a remote host next to a test failing
    for its own reason is not why it failed."""
    lines = view.parsed.output.lines
    hits = [idx for idx in _network_hits(view) if not _local(view, idx)]
    if not hits:
        return None
    if not view.failed_tests:
        return None if _failed_before(view, hits[0]) else lines[hits[0]]
    remote = [idx for idx in hits if _remote(view, idx)]
    if not remote:
        return None
    if view.grep(_ASSERTION, _ASSERTION_HINTS, ignore_case=True):
        return None
    if any(_other_error(line.text) for line in view.grep(_TYPED_EXCEPTION, _TYPED_HINTS)):
        return None
    return lines[remote[0]]


_SOME_FAILED = re.compile(r"\b[1-9]\d* failed\b")
# pytest-rerunfailures, flaky, jest-circus retries, Playwright and Gradle's test-retry
# say a test passed on a retry; a job failing on such a test alone is flaky.
FLAKY_MARKER = regex(
    r"\bpassed on retry\b|\bflaky\b.*\bpassed\b|\b\d+ rerun\b|^\s*\d+ flaky$",
    "passed on retry",
    "flaky",
    " rerun",
    ignore_case=True,
)


def flaky_marker(view: View) -> Line | None:
    """The runner reports a test that failed, then passed on retry, and nothing else failed.

    Playwright counts "flaky" tests apart from "failed" ones: with a failed one, the job
    failed for it, not for the flaky one.
    """
    hit = FLAKY_MARKER(view)
    if hit is None:
        return None
    return None if view.first(_SOME_FAILED, [" failed"]) is not None else hit


# --- genuine ------------------------------------------------------------------------------


def from_marks(kinds: Iterable[str]) -> Check:
    wanted = frozenset(kinds)

    def check(view: View) -> Line | None:
        for m in view.marks:
            if m.kind in wanted:
                return view.line(m.line)
        return None

    return check


_NOT_TOOL = frozenset({"error", "quest"}) | GENERIC_KINDS


def first_error(view: View) -> Line | None:
    if view.parsed.first_error is None:
        return None
    return view.line(view.parsed.first_error)


# --- gates whose needs were cancelled -------------------------------------------------------

_ANY_RESULT = re.compile(r'"result"|→ ')
_RESULT_JSON = re.compile(r'"result"\s*:\s*"(?P<result>success|failure|cancelled|skipped)"')
# re-actors/alls-green: `📝 build → ❌ cancelled [required to succeed]`
_RESULT_ALLS_GREEN = re.compile(
    r"→ \S+ (?P<result>success|failure|cancelled|skipped) "
    r"\[(?P<kind>required to succeed|allowed to fail)\]"
)


def dependencies_cancelled(view: View) -> Line | None:
    """A gate job that failed only because jobs it needs were cancelled.

    The results show in the echoed script (``${{ toJSON(needs) }}`` is interpolated before
    the runner prints it) or in the gate's output.
    """
    parsed = view.parsed
    sources: list[tuple[Line | None, str]] = [(None, text) for text in parsed.step_script]
    sources += [(line, line.text) for line in parsed.region if line.header]
    sources += [
        (line, line.text) for line in view.grep(_ANY_RESULT, ('"result"', "→ "), near=False)
    ]
    seen = False
    at: Line | None = None
    for line, text in sources:
        for result, required in _results(text):
            if not required:
                continue
            if result == "failure":
                return None
            if result == "cancelled":
                seen = True
                if at is None and line is not None and not line.header:
                    at = line
    if not seen:
        return None
    # Only the echoed script showed it: point at the error the gate printed.
    return at if at is not None else first_error(view)


def _results(text: str) -> Iterable[tuple[str, bool]]:
    for m in _RESULT_JSON.finditer(text):
        yield m.group("result"), True
    for m in _RESULT_ALLS_GREEN.finditer(text):
        yield m.group("result"), m.group("kind") == "required to succeed"


# (name, class, check), in order of precedence (classify.py's docstring says why).
SIGNATURES: tuple[tuple[str, TriageClass, Check], ...] = (
    ("runner-shutdown", "infrastructure", RUNNER_SHUTDOWN),
    ("runner-lost-communication", "infrastructure", RUNNER_LOST),
    ("runner-vanished", "infrastructure", runner_vanished),
    ("runner-deprovisioned", "infrastructure", RUNNER_DEPROVISIONED),
    ("max-execution-time", "timeout", MAX_EXECUTION_TIME),
    ("step-timeout", "timeout", STEP_TIMEOUT),
    ("go-test-timeout", "timeout", GO_TEST_TIMEOUT),
    ("operation-cancelled", "cancelled", OPERATION_CANCELLED),
    ("cancelled-by-others", "cancelled", CANCELLED_BY_OTHERS),
    ("dependencies-cancelled", "cancelled", dependencies_cancelled),
    ("runner-signal", "infrastructure", runner_signal),
    ("out-of-memory", "infrastructure", out_of_memory),
    ("no-space-left", "infrastructure", NO_SPACE),
    ("not-provisioned", "infrastructure", not_provisioned),
    ("service-container", "infrastructure", SERVICE_CONTAINER),
    ("action-download", "infrastructure", ACTION_DOWNLOAD),
    ("cache-service", "infrastructure", CACHE_SERVICE),
    ("rate-limited", "infrastructure", RATE_LIMITED),
    ("server-error", "infrastructure", server_error),
    ("dependabot-updater-crash", "infrastructure", DEPENDABOT_UPDATER_CRASH),
    ("quest-finding", "policy", from_marks({"quest"})),
    ("pr-gate", "policy", pr_gate),
    ("registry-network", "flaky", registry_network),
    ("registry-unavailable", "flaky", REGISTRY_UNAVAILABLE),
    ("download-corrupt", "flaky", download_corrupt),
    ("network-error", "flaky", network_error),
    ("flaky-marker", "flaky", flaky_marker),
    ("pytest-failed", "genuine", from_marks({"pytest-failed"})),
    ("vitest-failed", "genuine", from_marks({"vitest-failed"})),
    ("go-test-failed", "genuine", from_marks({"go-failed"})),
    ("cargo-test-failed", "genuine", from_marks({"cargo-failed"})),
    ("python-traceback", "genuine", from_marks({"traceback-exception"})),
    ("test-failed", "genuine", from_marks({"test-failed", "jest-failed"})),
    # Whatever else context.py's recognisers name: a failed test of another runner, then
    # a tool's error line (a compiler's, a linter's, a build tool's).
    ("failed-test", "genuine", from_marks(TEST_KINDS)),
    ("tool-error", "genuine", from_marks(FAILURE_KINDS - _NOT_TOOL)),
    ("step-error", "genuine", first_error),
)
