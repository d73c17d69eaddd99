"""A run's test reports (triage/reports.py): which artifacts are read, what they cost, and
which job's failed tests they replace."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field

import pytest

from landbot.core.model import JobFailure, ReportedTest
from landbot.github.errors import GitHubError, RateLimited
from landbot.github.models import Artifact, CheckRun
from landbot.triage.combine import JobVerdict
from landbot.triage.reports import MAX_ARTIFACTS, fits, matches, with_reports

from .conftest import FIXTURES

WEB = "https://github.com/acme/widgets/actions/runs"
PYTEST = (FIXTURES / "junit" / "pytest-xunit2.xml").read_bytes()
REPORTED = ("tests/test_lib.py::test_always_fail", "tests/test_lib.py::test_error")


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def report(cls: str, *names: str) -> bytes:
    cases = "".join(
        f'<testcase classname="{cls}" name="{n}"><failure message="{n} broke"/></testcase>'
        for n in names
    )
    return f"<testsuite>{cases}</testsuite>".encode()


@dataclass
class FakeArtifacts:
    """run_artifacts and download_artifact over a dict; every call recorded."""

    runs: dict[int, list[tuple[str, bytes]]] = field(default_factory=dict)
    expired: set[str] = field(default_factory=set)
    list_error: GitHubError | None = None
    calls: list[str] = field(default_factory=list)

    def run_artifacts(self, repo: str, run_id: int) -> list[Artifact]:
        self.calls.append(f"list {run_id}")
        if self.list_error is not None:
            raise self.list_error
        return [
            Artifact(
                id=run_id * 100 + i,
                name=name,
                size_in_bytes=len(data),
                expired=name in self.expired,
                run_id=run_id,
            )
            for i, (name, data) in enumerate(self.runs.get(run_id, []))
        ]

    def download_artifact(self, repo: str, artifact_id: int, *, max_bytes: int) -> bytes:
        self.calls.append(f"download {artifact_id}")
        run_id, i = divmod(artifact_id, 100)
        return self.runs[run_id][i][1]


def check(job_id: int, run_id: int, name: str = "test", conclusion: str = "failure") -> CheckRun:
    url = f"{WEB}/{run_id}/job/{job_id}"
    return CheckRun(
        id=job_id,
        name=name,
        status="completed",
        conclusion=conclusion,
        html_url=url,
        details_url=url,
        app_slug="github-actions",
        started_at=None,
        completed_at=None,
    )


def verdict(name: str = "test", cls: str = "genuine", tests: tuple[str, ...] = ()) -> JobVerdict:
    failure = JobFailure(
        job=name,
        url="",
        step="Run pytest",
        error_lines=(5,),
        excerpt=((5, "E assert False"),),
        summary="a test failed",
        class_=cls,  # type: ignore[arg-type]
        failed_tests=tests,
    )
    return JobVerdict(failure, "log line 5")


def test_a_matching_artifact_replaces_the_logs_test_names() -> None:
    gh = FakeArtifacts({7: [("coverage", b"x"), ("JUnit-Results", zipped({"r.xml": PYTEST}))]})
    [out] = with_reports(gh, "acme/widgets", [check(1, 7)], [verdict(tests=("test_x",))])
    job = out.failure
    assert job.failed_tests == REPORTED
    assert job.tests_from == "JUnit-Results"
    assert job.reported_tests[0] == ReportedTest(
        REPORTED[0], "assert False", job.reported_tests[0].text
    )
    # The log's reading stays.
    assert (job.step, job.error_lines, job.excerpt, job.class_) == (
        "Run pytest",
        (5,),
        ((5, "E assert False"),),
        "genuine",
    )
    assert out.why == "log line 5"
    assert gh.calls == ["list 7", "download 701"]  # the coverage artifact is not fetched


def test_no_matching_artifact_costs_the_listing_alone() -> None:
    gh = FakeArtifacts({7: [("coverage", zipped({"r.xml": PYTEST})), ("dist", b"x")]})
    before = verdict(tests=("test_x",))
    [out] = with_reports(gh, "acme/widgets", [check(1, 7)], [before])
    assert out == before
    assert gh.calls == ["list 7"]


def test_a_report_without_failures_keeps_the_logs_names() -> None:
    passing = b'<testsuite><testcase classname="a" name="b"/></testsuite>'
    gh = FakeArtifacts({7: [("test-results", zipped({"r.xml": passing}))]})
    before = verdict(tests=("test_x",))
    assert with_reports(gh, "acme/widgets", [check(1, 7)], [before]) == [before]


def test_one_listing_per_run_for_every_job_of_it() -> None:
    gh = FakeArtifacts(
        {
            7: [
                ("junit-3.11", zipped({"r.xml": report("a.ATest", "x")})),
                ("junit-3.12", zipped({"r.xml": report("a.ATest", "y")})),
            ]
        }
    )
    checks = [check(1, 7, "test (3.11)"), check(2, 7, "test (3.12)")]
    out = with_reports(gh, "r/r", checks, [verdict("test (3.11)"), verdict("test (3.12)")])
    assert [v.failure.failed_tests for v in out] == [("a.ATest.x",), ("a.ATest.y",)]
    assert [v.failure.tests_from for v in out] == ["junit-3.11", "junit-3.12"]
    assert gh.calls == ["list 7", "download 700", "download 701"]


def test_a_report_no_job_of_a_matrix_can_be_told_from_is_not_used() -> None:
    gh = FakeArtifacts({7: [("junit", zipped({"r.xml": report("a.ATest", "x")}))]})
    checks = [check(1, 7, "test (3.11)"), check(2, 7, "test (3.12)")]
    before = [verdict("test (3.11)", tests=("l1",)), verdict("test (3.12)", tests=("l2",))]
    assert with_reports(gh, "r/r", checks, before) == before


def test_jobs_not_about_tests_cost_nothing() -> None:
    gh = FakeArtifacts({7: [("junit", zipped({"r.xml": PYTEST}))]})
    checks = [check(1, 7), check(2, 8, conclusion="cancelled"), check(3, 9)]
    before = [verdict(cls="infrastructure"), verdict(cls="cancelled"), verdict(cls="policy")]
    assert with_reports(gh, "r/r", checks, before) == before
    assert gh.calls == []


def test_a_client_without_artifacts_or_no_patterns_costs_nothing() -> None:
    gh = FakeArtifacts({7: [("junit", zipped({"r.xml": PYTEST}))]})
    before = [verdict()]
    assert with_reports(object(), "r/r", [check(1, 7)], before) == before
    assert with_reports(gh, "r/r", [check(1, 7)], before, patterns=[]) == before
    assert gh.calls == []


def test_expired_or_oversized_artifacts_are_not_downloaded() -> None:
    big = b"x" * 2048
    gh = FakeArtifacts({7: [("junit-a", b"zip"), ("junit-b", big)]}, expired={"junit-a"})
    from landbot.triage.junit import ReportLimits

    before = [verdict()]
    out = with_reports(gh, "r/r", [check(1, 7)], before, limits=ReportLimits(max_zip_bytes=1024))
    assert out == before
    assert gh.calls == ["list 7"]


def test_downloads_are_capped_per_run() -> None:
    arts = [(f"junit-{i}", zipped({"r.xml": report("a.T", f"t{i}")})) for i in range(6)]
    gh = FakeArtifacts({7: arts})
    [out] = with_reports(gh, "r/r", [check(1, 7)], [verdict()])
    assert len([c for c in gh.calls if c.startswith("download")]) == MAX_ARTIFACTS
    assert out.failure.failed_tests == tuple(f"a.T.t{i}" for i in range(MAX_ARTIFACTS))


def test_a_github_error_is_no_evidence_and_a_rate_limit_is_raised() -> None:
    gh = FakeArtifacts(list_error=GitHubError(403, "Resource not accessible by integration"))
    before = [verdict(tests=("test_x",))]
    assert with_reports(gh, "r/r", [check(1, 7)], before) == before
    gh.list_error = RateLimited(403, "secondary rate limit", retry_after=60)
    with pytest.raises(RateLimited):
        with_reports(gh, "r/r", [check(1, 7)], before)


def test_a_hostile_artifact_is_skipped() -> None:
    laughs = (
        b'<!DOCTYPE t [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
        b'<testsuite><testcase classname="c" name="n"><failure message="&b;"/></testcase>'
        b"</testsuite>"
    )
    gh = FakeArtifacts({7: [("junit", zipped({"r.xml": laughs})), ("test-results", b"PK junk")]})
    before = [verdict(tests=("test_x",))]
    assert with_reports(gh, "r/r", [check(1, 7)], before) == before
    assert gh.calls == ["list 7", "download 700", "download 701"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("junit-results", True),
        ("JUnit", True),
        ("test-results-ubuntu", True),
        ("Test-Results", True),
        ("coverage", False),
        ("results", False),
    ],
)
def test_default_patterns_match_any_case(name: str, expected: bool) -> None:
    assert matches(name, ("*junit*", "*test-results*")) is expected


@pytest.mark.parametrize(
    ("artifact", "job", "expected"),
    [
        ("junit-3.12-ubuntu-latest", "test (3.12, ubuntu-latest)", True),
        ("junit-3.12-windows-latest", "test (3.12, ubuntu-latest)", False),
        ("junit-3.1", "test (3.12)", False),
        ("unit-tests-junit", "unit tests", True),
        ("junit", "lint", False),
    ],
)
def test_an_artifact_fits_a_matrix_job_by_its_values(
    artifact: str, job: str, expected: bool
) -> None:
    assert fits(artifact, job) is expected


def test_the_heads_run_reports_name_its_tests() -> None:
    from landbot.triage.reports import reported_tests

    gh = FakeArtifacts(
        {
            7: [("junit-results", zipped({"r.xml": PYTEST}))],
            8: [("junit-lint", b"x"), ("junit-test", zipped({"r.xml": report("a.T", "x")}))],
            9: [("coverage", b"x")],
        }
    )
    assert reported_tests(gh, "r/r", check(1, 7)) == REPORTED  # the only report of the run
    assert reported_tests(gh, "r/r", check(2, 8, name="test")) == ("a.T.x",)  # its own
    assert reported_tests(gh, "r/r", check(3, 9)) == ()
    assert reported_tests(object(), "r/r", check(1, 7)) == ()
    assert gh.calls == [
        "list 7",
        "download 700",
        "list 8",
        "download 800",
        "download 801",
        "list 9",
    ]
