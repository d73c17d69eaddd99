"""JUnit XML test reports: the failed tests a run's report names, read as hostile data.

    report = parse_report(xml_bytes, "TEST-x.xml")     # one file
    reports = reports_in_zip(zip_bytes)                # every *.xml of an artifact's zip

The dialects in use share one shape (`<testsuites>` or `<testsuite>` at the root, suites
nested in suites, `<testcase classname= name= [file=]>` holding `<failure>`, `<error>`,
`<skipped>`): pytest's `--junitxml` (xunit1 and xunit2), Maven Surefire's and Failsafe's
`TEST-*.xml` (with `<flakyFailure>`/`<flakyError>` for a test that failed and then passed on
a rerun, `<rerunFailure>`/`<rerunError>` for one that failed every rerun), Gradle's,
jest-junit's and go-junit-report's.

A failed test's identity is the one the log's recognisers give the same test (the flaky
ledger is keyed by it, whichever source named the test): pytest's node id
`path.py::Class::test`, `package.Class.method` for Java (Gradle's `()` cut off),
`package/path.TestX` for Go, `file > Suite › test` for jest.

The report came from a runner that ran the pull request's own code, so it is hostile:
defusedxml refuses a DTD (and with it entity expansion and external entities), the file,
the nesting, the test cases read, the failures kept and the text kept per failure are
capped, and the zip is read in memory (never extracted) with fixer/artifact.py's checks:
declared sizes capped before anything is inflated, inflation stopped one byte past the
declared size, the compression ratio of a large entry capped, no link, no encrypted entry.
Whatever is wrong with a file, the outcome is a `Report` with `refused` saying why, never
an exception.
"""

from __future__ import annotations

import io
import re
import stat
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import iterparse

from landbot.core.zips import CORRUPT, read_bounded

Kind = Literal["failure", "error"]

_S_IFMT = 0o170000
_FAILED = {"failure": "failure", "error": "error"}
_FLAKY = frozenset({"flakyFailure", "flakyError"})
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@dataclass(frozen=True)
class ReportLimits:
    """Caps on one run's reports; each is checked before the work it bounds."""

    max_zip_bytes: int = 32 * 1024 * 1024  # one artifact's download
    max_entries: int = 5000  # zip entries looked at
    max_files: int = 100  # XML files parsed, in all
    max_file_bytes: int = 16 * 1024 * 1024  # one XML file, inflated
    max_total_bytes: int = 32 * 1024 * 1024  # every XML file of a run, inflated
    max_ratio: int = 200  # inflated / compressed, for an entry over ratio_floor
    ratio_floor: int = 1024 * 1024
    max_depth: int = 32  # real reports nest suites a few levels deep
    max_testcases: int = 50_000  # per file; the rest of the file is not read
    max_elements: int = 500_000  # per file (a case is a few); bounds the time and memory
    max_failures: int = 200  # failed tests kept per file
    max_message: int = 300  # characters of a failure's message kept
    max_text: int = 2000  # characters of a failure's text kept (its start: the assertion)


@dataclass(frozen=True)
class FailedTest:
    """One failed test as a report names it."""

    test: str
    message: str  # one line: the message attribute, else the text's first line
    text: str = ""  # the start of the failure's text (stack trace, output), bounded
    kind: Kind = "failure"


@dataclass(frozen=True)
class Report:
    """What one XML file says: its failed tests, the tests that failed and then passed on
    a rerun, and counts; `refused` says why the file was not read (then nothing else is)."""

    name: str
    failed: tuple[FailedTest, ...] = ()
    flaky: tuple[str, ...] = ()
    tests: int = 0
    skipped: int = 0
    refused: str = ""
    # A cap stopped the reading: more failed tests (or test cases) than were kept.
    truncated: bool = False


@dataclass
class _Budget:
    """What is left of the caps across the files of one run."""

    limits: ReportLimits
    files: int = 0
    inflated: int = 0
    skipped: list[str] = field(default_factory=list)


# --- one XML file ---------------------------------------------------------------------------


def parse_report(
    data: bytes, name: str = "report.xml", limits: ReportLimits = ReportLimits()
) -> Report:
    """The failed tests of one JUnit XML file. Never raises on bad input: a file that is
    too large, not XML, not a JUnit report, declares a DTD or nests too deep comes back
    with `refused` saying so."""
    shown = _shown(name)
    if len(data) > limits.max_file_bytes:
        return Report(
            shown, refused=f"{len(data):,} bytes, over the cap of {limits.max_file_bytes:,}"
        )
    try:
        return _parse(data, shown, limits)
    except DefusedXmlException as exc:
        # DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden: never expanded.
        return Report(shown, refused=f"refused: {type(exc).__name__} (no DTD or entity is read)")
    except ParseError as exc:
        return Report(shown, refused=f"not well-formed XML ({_one_line(str(exc), 120)})")
    except _Refused as exc:
        return Report(shown, refused=str(exc))
    except (ValueError, RecursionError, MemoryError) as exc:  # belt and braces
        return Report(shown, refused=f"unreadable ({type(exc).__name__})")


class _Refused(Exception):
    pass


@dataclass
class _Case:
    test: str
    failed: FailedTest | None
    flaky: bool
    skipped: bool


@dataclass
class _Outcome:
    """What the attempts of one test add up to (a report may list a test once per run)."""

    failed: FailedTest | None = None
    passed: bool = False
    flaky: bool = False


# Kept for a failed test past the cap on failures: its name counts, its text is not kept.
_UNKEPT = FailedTest("", "")
_SUITES = ("testsuites", "testsuite")


def _parse(data: bytes, name: str, limits: ReportLimits) -> Report:
    stack: list[Element] = []
    suites: list[str] = []  # names of the enclosing <testsuite>s
    dialect = ""
    outcomes: dict[str, _Outcome] = {}
    tests = skipped = elements = kept = 0
    truncated = False
    events = iterparse(
        io.BytesIO(data),
        events=("start", "end"),
        forbid_dtd=True,
        forbid_entities=True,
        forbid_external=True,
    )
    for event, elem in events:
        tag = _local(elem.tag)
        if event == "start":
            if not stack and tag not in _SUITES:
                raise _Refused(f"not a JUnit report (its root is <{_shown(tag, 40)}>)")
            if len(stack) >= limits.max_depth:
                raise _Refused(f"nested more than {limits.max_depth} elements deep")
            elements += 1
            if elements > limits.max_elements:
                truncated = True  # what was read stands; the rest is not read
                break
            if tag in _SUITES and not dialect:
                dialect = _dialect(tag, elem.get("name") or "")
            if tag == "testsuite":
                suites.append(elem.get("name") or "")
            stack.append(elem)
            continue
        stack.pop()
        if tag == "testsuite" and suites:
            suites.pop()
        if tag == "testcase":
            tests += 1
            case = _case(elem, dialect, suites[-1] if suites else "", limits)
            skipped += case.skipped
            seen = outcomes.setdefault(case.test, _Outcome())
            if case.failed is not None and seen.failed is None:
                kept += 1
                seen.failed = case.failed if kept <= limits.max_failures else _UNKEPT
            seen.passed |= case.failed is None and not case.skipped
            seen.flaky |= case.flaky
        # Whatever a suite holds is let go once read (its cases, Surefire's environment
        # dump, its output): only the outcomes are kept, however long the report.
        if stack and _local(stack[-1].tag) in _SUITES:
            stack[-1].remove(elem)
        if tests >= limits.max_testcases:
            truncated = True
            break
    failed: list[FailedTest] = []
    flaky: list[str] = []
    for test, seen in outcomes.items():
        # A failed attempt and a passed one (pytest-rerunfailures, a retrying runner
        # listing each attempt), or Surefire's flakyFailure: flaky, not failed.
        if seen.failed is not None and not seen.passed and not seen.flaky:
            if seen.failed is _UNKEPT:
                truncated = True
            else:
                failed.append(seen.failed)
        elif seen.failed is not None or seen.flaky:
            flaky.append(test)
    return Report(
        name,
        failed=tuple(failed),
        flaky=tuple(flaky),
        tests=tests,
        skipped=skipped,
        truncated=truncated,
    )


def _case(elem: Element, dialect: str, suite: str, limits: ReportLimits) -> _Case:
    test = identity(
        elem.get("classname") or "",
        elem.get("name") or "",
        file=elem.get("file") or "",
        suite=suite,
        dialect=dialect,
    )
    failed: FailedTest | None = None
    flaky = skipped = False
    for child in elem:
        tag = _local(child.tag)
        if tag in _FAILED and failed is None:
            failed = _failed_test(test, child, "error" if tag == "error" else "failure", limits)
        elif tag in _FLAKY:
            flaky = True
        elif tag == "skipped":
            skipped = True
    return _Case(test, failed, flaky and failed is None, skipped and failed is None)


def _failed_test(test: str, elem: Element, kind: Kind, limits: ReportLimits) -> FailedTest:
    # Surefire puts the trace in a <stackTrace> child of rerun/flaky elements; the rest
    # put it in the element's own text.
    text = elem.text or ""
    if not text.strip():
        for child in elem:
            if _local(child.tag) == "stackTrace" and child.text:
                text = child.text
                break
    message = elem.get("message") or ""
    if not message.strip() or message.strip() in ("Failed", "failed"):
        # go-junit-report says only "Failed"; jest-junit gives no message: the text says.
        first = next((line for line in text.splitlines() if line.strip()), "")
        message = first or message or elem.get("type") or kind
    return FailedTest(
        test=test,
        message=_one_line(message, limits.max_message),
        text=_clean(text.rstrip().lstrip("\n"), limits.max_text),
        kind=kind,
    )


# --- identities -----------------------------------------------------------------------------


def _dialect(tag: str, name: str) -> str:
    # pytest: <testsuite name="pytest"> (junit_suite_name's default), and since pytest 7
    # <testsuites name="pytest tests">; jest-junit: <testsuites name="jest tests">.
    if name in ("pytest", "pytest tests"):
        return "pytest"
    if name == "jest tests":
        return "jest"
    return "junit" if tag == "testsuite" else ""


def identity(
    classname: str, name: str, *, file: str = "", suite: str = "", dialect: str = ""
) -> str:
    """The test's identity as the log's recognisers spell it (see the module's doc)."""
    classname, name = classname.strip(), name.strip()
    if dialect == "pytest":
        return _pytest_id(classname, name, file)
    if dialect == "jest":
        where = (file or suite).replace("\\", "/")
        title = name if not classname or name.startswith(classname) else f"{classname} › {name}"
        return f"{where} > {title}" if where else title
    if name.endswith("()"):  # JUnit 5 through Gradle or Surefire: `method()`
        name = name[:-2]
    if classname and not name.startswith(classname + "."):
        return f"{classname}.{name}"
    return name or classname


def _pytest_id(classname: str, name: str, file: str) -> str:
    """pytest's `classname` is the node id's path with `/` as `.` and `.py` cut, then the
    classes: `tests.test_a.TestX` for `tests/test_a.py::TestX`. With `file` (xunit1) the
    path is known; without it (xunit2, pytest's default) the classes are the parts that
    start with a capital letter (pytest collects `Test*` classes)."""
    parts = [p for p in classname.split(".") if p]
    if file:
        path = file.replace("\\", "/")
        module = path.removesuffix(".py").replace("/", ".").split(".")
        classes = parts[len(module) :] if parts[: len(module)] == module else parts[-1:]
        if parts == module:
            classes = []
    else:
        at = next((i for i, p in enumerate(parts) if p[:1].isupper()), len(parts))
        path = "/".join(parts[:at]) + ".py" if at else ""
        classes = parts[at:]
    if not path:
        return "::".join([*classes, name]) if classes else name
    return "::".join([path, *classes, name])


# --- an artifact's zip ----------------------------------------------------------------------


def reports_in_zip(
    data: bytes, limits: ReportLimits = ReportLimits(), *, budget: _Budget | None = None
) -> tuple[list[Report], list[str]]:
    """Every `*.xml` file of an artifact's zip, parsed; and why anything was skipped (the
    whole zip, or one entry). Read in memory, never extracted: names are never paths."""
    budget = budget or _Budget(limits)
    reports: list[Report] = []
    for name, xml in _xml_entries(data, budget):
        reports.append(parse_report(xml, name, limits))
    return reports, budget.skipped


def new_budget(limits: ReportLimits = ReportLimits()) -> _Budget:
    """One budget shared by the artifacts of one run (their caps are in all)."""
    return _Budget(limits)


def _xml_entries(data: bytes, budget: _Budget) -> Iterator[tuple[str, bytes]]:
    limits = budget.limits
    if len(data) > limits.max_zip_bytes:
        budget.skipped.append(f"the zip is {len(data):,} bytes, over {limits.max_zip_bytes:,}")
        return
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        budget.skipped.append(f"not a zip file ({_one_line(str(exc), 80)})")
        return
    with archive:
        infos = archive.infolist()
        if len(infos) > limits.max_entries:
            budget.skipped.append(f"{len(infos):,} entries, over the cap of {limits.max_entries:,}")
            return
        for info in infos:
            name = info.filename
            if info.is_dir() or not name.lower().endswith(".xml"):
                continue
            why = _entry_refused(info, budget)
            if why:
                budget.skipped.append(f"{_shown(name)}: {why}")
                continue
            if budget.files >= limits.max_files:
                budget.skipped.append(f"more than {limits.max_files} XML files: the rest not read")
                return
            budget.files += 1
            budget.inflated += info.file_size
            try:
                yield name, _inflate(archive, info)
            except _Refused as exc:
                budget.skipped.append(f"{_shown(name)}: {exc}")


def _entry_refused(info: zipfile.ZipInfo, budget: _Budget) -> str:
    limits = budget.limits
    mode = (info.external_attr >> 16) & _S_IFMT
    if mode not in (0, stat.S_IFREG):
        return "a symbolic link" if mode == stat.S_IFLNK else "not a regular file"
    if info.flag_bits & 0x1:
        return "encrypted"
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        return f"compression method {info.compress_type} (only stored or deflated are read)"
    if info.file_size > limits.max_file_bytes:
        return f"{info.file_size:,} bytes inflated, over the cap of {limits.max_file_bytes:,}"
    ratio = info.file_size / max(info.compress_size, 1)
    if info.file_size > limits.ratio_floor and ratio > limits.max_ratio:
        return f"inflates {ratio:,.0f} times, over the cap of {limits.max_ratio}: a zip bomb"
    if budget.inflated + info.file_size > limits.max_total_bytes:
        return f"over the cap of {limits.max_total_bytes:,} bytes for all reports"
    return ""


def _inflate(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The entry's bytes, read with core/zips.py's bound."""
    try:
        data = read_bounded(archive, info)
    except (*CORRUPT, zlib.error) as exc:
        raise _Refused(f"corrupt ({_one_line(str(exc), 80)})") from None
    if len(data) != info.file_size:
        more = "more" if len(data) > info.file_size else "less"
        raise _Refused(f"inflates to {more} than the {info.file_size:,} bytes it declares")
    return data


# --- text -----------------------------------------------------------------------------------


def _local(tag: object) -> str:
    # `{namespace}name` (a Surefire report may declare one): the local name.
    text = tag if isinstance(tag, str) else ""
    return text.rsplit("}", 1)[-1]


def _one_line(text: str, limit: int) -> str:
    line = " ".join(_CONTROL.sub(" ", text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _clean(text: str, limit: int) -> str:
    text = _CONTROL.sub(" ", text.replace("\r\n", "\n"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shown(name: str, limit: int = 80) -> str:
    """A name from the zip, safe to print (it may hold anything)."""
    return ascii(name)[1:-1][:limit]
