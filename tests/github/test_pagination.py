"""REST lists follow `Link: rel="next"` to the end, and only on GitHub's own host."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_httpx import HTTPXMock

from landbot.github.client import GitHubClient
from landbot.github.errors import GitHubError

API = "https://api.test"
SHA = "b" * 40
CHECKS = f"{API}/repos/octo/widgets/commits/{SHA}/check-runs"
COMMENTS = f"{API}/repos/octo/widgets/issues/5/comments"


def check_run(n: int, conclusion: str | None = "success") -> dict[str, Any]:
    return {
        "id": 1000 + n,
        "head_sha": SHA,
        "node_id": f"CR_{n}",
        "name": f"check {n}",
        "status": "completed" if conclusion else "in_progress",
        "conclusion": conclusion,
        "html_url": f"https://github.test/octo/widgets/runs/{1000 + n}",
        "details_url": f"https://github.test/octo/widgets/actions/runs/9/job/{1000 + n}",
        "started_at": "2027-01-15T08:00:00Z",
        "completed_at": "2027-01-15T08:05:00Z" if conclusion else None,
        "app": {"id": 15368, "slug": "github-actions", "name": "GitHub Actions"},
        "pull_requests": [],
    }


def comment(n: int, login: str = "alice") -> dict[str, Any]:
    return {
        "id": n,
        "node_id": f"IC_{n}",
        "body": f"comment {n}",
        "user": {"login": login, "type": "User"},
        "created_at": "2027-01-15T08:00:00Z",
        "html_url": f"https://github.test/octo/widgets/pull/5#issuecomment-{n}",
    }


def link(url: str, last: str | None = None) -> dict[str, str]:
    value = f'<{url}>; rel="next"'
    if last:
        value += f', <{last}>; rel="last"'
    return {"Link": value}


def test_check_runs_follow_the_next_links_to_the_last_page(
    client: GitHubClient, httpx_mock: HTTPXMock
) -> None:
    page2 = f"{API}/repositories/77/commits/{SHA}/check-runs?per_page=100&page=2"
    page3 = f"{API}/repositories/77/commits/{SHA}/check-runs?per_page=100&page=3"
    httpx_mock.add_response(
        url=f"{CHECKS}?per_page=100",
        headers=link(page2, page3),
        json={"total_count": 201, "check_runs": [check_run(n) for n in range(100)]},
    )
    httpx_mock.add_response(
        url=page2,
        headers=link(page3, page3),
        json={"total_count": 201, "check_runs": [check_run(n) for n in range(100, 200)]},
    )
    httpx_mock.add_response(
        url=page3, json={"total_count": 201, "check_runs": [check_run(200, None)]}
    )

    runs = client.check_runs("octo/widgets", SHA)

    assert len(runs) == 201
    assert [r.id for r in runs[:2]] == [1000, 1001]
    last = runs[-1]
    assert last.conclusion is None and last.status == "in_progress" and last.completed_at is None
    assert runs[0].app_slug == "github-actions"
    assert runs[0].started_at is not None and runs[0].started_at.year == 2027
    assert client.calls == 3
    # every page carries the token
    assert all(r.headers["authorization"] == "token tok-123" for r in httpx_mock.get_requests())


def test_a_single_page_list_makes_one_call(client: GitHubClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(url=f"{COMMENTS}?per_page=100", json=[comment(1), comment(2)])

    got = client.comments("octo/widgets", 5)

    assert [(c.id, c.user, c.body) for c in got] == [
        (1, "alice", "comment 1"),
        (2, "alice", "comment 2"),
    ]
    assert client.calls == 1


def test_comments_follow_the_next_links(client: GitHubClient, httpx_mock: HTTPXMock) -> None:
    page2 = f"{API}/repositories/77/issues/5/comments?per_page=100&page=2"
    httpx_mock.add_response(
        url=f"{COMMENTS}?per_page=100",
        headers=link(page2),
        json=[comment(n) for n in range(1, 101)],
    )
    httpx_mock.add_response(url=page2, json=[comment(101, login="ghost-user")])

    got = client.comments("octo/widgets", 5)

    assert [c.id for c in got] == list(range(1, 102))
    assert got[-1].user == "ghost-user"


def test_a_next_link_to_another_host_is_refused(
    client: GitHubClient, httpx_mock: HTTPXMock
) -> None:
    """The token travels with each page: a link elsewhere must not be followed."""
    httpx_mock.add_response(
        url=f"{COMMENTS}?per_page=100",
        headers=link("https://evil.test/steal?page=2"),
        json=[comment(1)],
    )

    with pytest.raises(GitHubError, match="another host"):
        client.comments("octo/widgets", 5)
    assert len(httpx_mock.get_requests()) == 1


def test_a_next_link_loop_is_stopped(client: GitHubClient, httpx_mock: HTTPXMock) -> None:
    page2 = f"{API}/repositories/77/issues/5/comments?page=2"
    httpx_mock.add_response(url=f"{COMMENTS}?per_page=100", headers=link(page2), json=[comment(1)])
    httpx_mock.add_response(url=page2, headers=link(page2), json=[comment(2)], is_reusable=True)

    with pytest.raises(GitHubError, match="loop"):
        client.comments("octo/widgets", 5)


def test_merge_group_runs_and_their_jobs(client: GitHubClient, httpx_mock: HTTPXMock) -> None:
    httpx_mock.add_response(
        url=f"{API}/repos/octo/widgets/actions/runs?event=merge_group&head_sha={SHA}&per_page=100",
        json={
            "total_count": 1,
            "workflow_runs": [
                {
                    "id": 9,
                    "name": "CI",
                    "event": "merge_group",
                    "head_branch": f"gh-readonly-queue/main/pr-5-{'c' * 40}",
                    "head_sha": SHA,
                    "status": "completed",
                    "conclusion": "failure",
                    "html_url": "https://github.test/octo/widgets/actions/runs/9",
                    "pull_requests": [],
                }
            ],
        },
    )
    httpx_mock.add_response(
        url=f"{API}/repos/octo/widgets/actions/runs/9/jobs?per_page=100",
        json={
            "total_count": 1,
            "jobs": [
                {
                    "id": 1001,
                    "run_id": 9,
                    "name": "test",
                    "status": "completed",
                    "conclusion": "failure",
                    "html_url": "https://github.test/octo/widgets/actions/runs/9/job/1001",
                    "steps": [
                        {
                            "name": "Set up job",
                            "status": "completed",
                            "conclusion": "success",
                            "number": 1,
                        },
                        {
                            "name": "Run tests",
                            "status": "completed",
                            "conclusion": "failure",
                            "number": 2,
                        },
                    ],
                }
            ],
        },
    )

    (run,) = client.merge_group_runs("octo/widgets", head_sha=SHA)
    assert (run.id, run.head_sha, run.conclusion) == (9, SHA, "failure")
    assert run.head_branch is not None and run.head_branch.startswith("gh-readonly-queue/")
    (job,) = client.run_jobs("octo/widgets", run.id)
    assert job.run_id == 9
    assert [(s.number, s.name, s.conclusion) for s in job.steps] == [
        (1, "Set up job", "success"),
        (2, "Run tests", "failure"),
    ]


def test_an_answer_of_the_wrong_shape_is_a_clear_error(
    client: GitHubClient, httpx_mock: HTTPXMock
) -> None:
    httpx_mock.add_response(url=f"{CHECKS}?per_page=100", json={"total_count": 1})
    with pytest.raises(GitHubError, match="no list under 'check_runs'"):
        client.check_runs("octo/widgets", SHA)

    httpx_mock.add_response(
        url=f"{CHECKS}?per_page=100", json={"total_count": 1, "check_runs": [{"id": 1}]}
    )
    with pytest.raises(GitHubError, match="unexpected check run object"):
        client.check_runs("octo/widgets", SHA)


def test_merge_group_runs_without_a_commit_read_one_page_only(
    client: GitHubClient, httpx_mock: HTTPXMock
) -> None:
    runs = f"{API}/repos/octo/widgets/actions/runs"
    run = {
        "id": 9,
        "name": "CI",
        "head_branch": f"gh-readonly-queue/main/pr-5-{SHA}",
        "head_sha": SHA,
        "status": "completed",
        "conclusion": "failure",
        "html_url": "https://github.test/octo/widgets/actions/runs/9",
    }
    httpx_mock.add_response(
        url=f"{runs}?event=merge_group&per_page=100",
        json={"total_count": 5000, "workflow_runs": [run]},
        headers=link(f"{runs}?event=merge_group&per_page=100&page=2"),
    )
    assert [r.id for r in client.merge_group_runs("octo/widgets")] == [9]
    # The control: with a commit, the list is followed to its end.
    httpx_mock.add_response(
        url=f"{runs}?event=merge_group&head_sha={SHA}&per_page=100",
        json={"total_count": 2, "workflow_runs": [run]},
        headers=link(f"{runs}?event=merge_group&head_sha={SHA}&per_page=100&page=2"),
    )
    httpx_mock.add_response(
        url=f"{runs}?event=merge_group&head_sha={SHA}&per_page=100&page=2",
        json={"total_count": 2, "workflow_runs": [{**run, "id": 10}]},
    )
    assert [r.id for r in client.merge_group_runs("octo/widgets", head_sha=SHA)] == [9, 10]


def test_a_branchs_green_runs_are_one_filtered_page(
    client: GitHubClient, httpx_mock: HTTPXMock
) -> None:
    """Triage's baselines (issue 26): the base's successful push runs, every workflow's,
    one call whatever GitHub has beyond the first page; each with its workflow."""
    runs = f"{API}/repos/octo/widgets/actions/runs"
    query = "branch=release%2F2.x&status=success&event=push&exclude_pull_requests=true"
    run = {
        "id": 12,
        "name": "CI",
        "workflow_id": 161335,
        "event": "push",
        "head_branch": "release/2.x",
        "head_sha": SHA,
        "status": "completed",
        "conclusion": "success",
        "html_url": "https://github.test/octo/widgets/actions/runs/12",
    }
    httpx_mock.add_response(
        url=f"{runs}?{query}&per_page=100",
        json={"total_count": 900, "workflow_runs": [run, {**run, "id": 11, "workflow_id": None}]},
        headers=link(f"{runs}?{query}&per_page=100&page=2"),
    )
    got = client.green_runs("octo/widgets", "release/2.x")
    assert [(r.id, r.name, r.workflow_id, r.event, r.conclusion) for r in got] == [
        (12, "CI", 161335, "push", "success"),
        (11, "CI", None, "push", "success"),
    ]
    assert len(httpx_mock.get_requests()) == 1


def test_a_jobs_workflow_and_branch_are_read(client: GitHubClient, httpx_mock: HTTPXMock) -> None:
    group = f"gh-readonly-queue/main/pr-5-{SHA}"
    job = {
        "id": 1001,
        "run_id": 9,
        "name": "test (3.12)",
        "workflow_name": "CI",
        "head_branch": group,
        "status": "completed",
        "conclusion": "failure",
        "steps": [],
    }
    httpx_mock.add_response(url=f"{API}/repos/octo/widgets/actions/jobs/1001", json=job)
    got = client.job("octo/widgets", 1001)
    assert (got.name, got.workflow_name, got.head_branch) == ("test (3.12)", "CI", group)
    # GitHub leaves both null on old runs: a job all the same.
    httpx_mock.add_response(
        url=f"{API}/repos/octo/widgets/actions/jobs/1001",
        json={**job, "workflow_name": None, "head_branch": None},
    )
    got = client.job("octo/widgets", 1001)
    assert (got.workflow_name, got.head_branch) == (None, None)
