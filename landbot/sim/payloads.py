"""JSON shapes of GitHub's REST resources and webhook payloads, built from the state.

The same builders serve the REST routes and the webhook deliveries, so a pull request
looks the same in `GET /pulls/{n}` and in a `pull_request` event. Every shape is checked in
tests against githubkit's models of GitHub's published OpenAPI description.

`World` is what a builder needs besides the object itself: the base URLs and user lookup.
`FakeGitHub` is a World; `fixtures.py` has a small standalone one for payload-only tests.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any, Protocol

from landbot.sim import git
from landbot.sim.ids import iso, node_id
from landbot.sim.state import (
    ACTIONS_APP_ID,
    ACTIONS_APP_SLUG,
    App,
    CheckRun,
    Installation,
    Issue,
    IssueComment,
    Job,
    MergeGroup,
    PullRequest,
    Reaction,
    Repository,
    User,
    WorkflowRun,
)

Json = dict[str, Any]


@dataclass(frozen=True)
class Urls:
    api: str = "https://api.github.com"
    web: str = "https://github.com"


class World(Protocol):
    urls: Urls

    def user(self, login: str) -> User: ...

    def installation_for(self, full_name: str) -> Installation | None: ...

    def app_by_slug(self, slug: str) -> App | None: ...


APP_PERMISSIONS = {
    "actions": "write",
    "checks": "write",
    "contents": "write",
    "issues": "write",
    "merge_queues": "write",
    "metadata": "read",
    "pull_requests": "write",
}
APP_EVENTS = ["check_run", "issue_comment", "merge_group", "pull_request", "push", "workflow_run"]


# --- users, repositories, apps ------------------------------------------------------------


def user_json(world: World, login: str) -> Json:
    user = world.user(login)
    api, web = world.urls.api, world.urls.web
    return {
        "login": user.login,
        "id": user.id,
        "node_id": user.node_id,
        "avatar_url": f"https://avatars.githubusercontent.com/u/{user.id}?v=4",
        "gravatar_id": "",
        "url": f"{api}/users/{user.login}",
        "html_url": f"{web}/{user.login}" if user.type == "User" else f"{web}/apps/{_slug(user)}",
        "followers_url": f"{api}/users/{user.login}/followers",
        "following_url": f"{api}/users/{user.login}/following{{/other_user}}",
        "gists_url": f"{api}/users/{user.login}/gists{{/gist_id}}",
        "starred_url": f"{api}/users/{user.login}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/users/{user.login}/subscriptions",
        "organizations_url": f"{api}/users/{user.login}/orgs",
        "repos_url": f"{api}/users/{user.login}/repos",
        "events_url": f"{api}/users/{user.login}/events{{/privacy}}",
        "received_events_url": f"{api}/users/{user.login}/received_events",
        "type": user.type,
        "user_view_type": "public",
        "site_admin": False,
    }


def _slug(user: User) -> str:
    return user.login.removesuffix("[bot]")


def private_user_json(world: World, login: str) -> Json:
    """`GET /user` for a token's own user (the public fields plus profile fields)."""
    user = world.user(login)
    data = user_json(world, login)
    data.update(
        {
            "name": user.name,
            "company": None,
            "blog": "",
            "location": None,
            "email": None,
            "hireable": None,
            "bio": None,
            "twitter_username": None,
            "public_repos": 0,
            "public_gists": 0,
            "followers": 0,
            "following": 0,
            "created_at": "2020-01-01T00:00:00Z",
            "updated_at": "2020-01-01T00:00:00Z",
            "private_gists": 0,
            "total_private_repos": 0,
            "owned_private_repos": 0,
            "disk_usage": 0,
            "collaborators": 0,
            "two_factor_authentication": True,
            "plan": {
                "name": "free",
                "space": 976562499,
                "collaborators": 0,
                "private_repos": 10000,
            },
        }
    )
    return data


def repo_json(world: World, repo: Repository) -> Json:
    api, web = world.urls.api, world.urls.web
    base = f"{api}/repos/{repo.full_name}"
    stamp = iso(repo.created_at)
    return {
        "id": repo.id,
        "node_id": repo.node_id,
        "name": repo.name,
        "full_name": repo.full_name,
        "private": repo.private,
        "owner": user_json(world, repo.owner),
        "html_url": f"{web}/{repo.full_name}",
        "description": None,
        "fork": repo.fork_of is not None,
        "url": base,
        "archive_url": f"{base}/{{archive_format}}{{/ref}}",
        "assignees_url": f"{base}/assignees{{/user}}",
        "blobs_url": f"{base}/git/blobs{{/sha}}",
        "branches_url": f"{base}/branches{{/branch}}",
        "collaborators_url": f"{base}/collaborators{{/collaborator}}",
        "comments_url": f"{base}/comments{{/number}}",
        "commits_url": f"{base}/commits{{/sha}}",
        "compare_url": f"{base}/compare/{{base}}...{{head}}",
        "contents_url": f"{base}/contents/{{+path}}",
        "contributors_url": f"{base}/contributors",
        "deployments_url": f"{base}/deployments",
        "downloads_url": f"{base}/downloads",
        "events_url": f"{base}/events",
        "forks_url": f"{base}/forks",
        "git_commits_url": f"{base}/git/commits{{/sha}}",
        "git_refs_url": f"{base}/git/refs{{/sha}}",
        "git_tags_url": f"{base}/git/tags{{/sha}}",
        "git_url": f"git://github.com/{repo.full_name}.git",
        "issue_comment_url": f"{base}/issues/comments{{/number}}",
        "issue_events_url": f"{base}/issues/events{{/number}}",
        "issues_url": f"{base}/issues{{/number}}",
        "keys_url": f"{base}/keys{{/key_id}}",
        "labels_url": f"{base}/labels{{/name}}",
        "languages_url": f"{base}/languages",
        "merges_url": f"{base}/merges",
        "milestones_url": f"{base}/milestones{{/number}}",
        "notifications_url": f"{base}/notifications{{?since,all,participating}}",
        "pulls_url": f"{base}/pulls{{/number}}",
        "releases_url": f"{base}/releases{{/id}}",
        "ssh_url": f"git@github.com:{repo.full_name}.git",
        "stargazers_url": f"{base}/stargazers",
        "statuses_url": f"{base}/statuses/{{sha}}",
        "subscribers_url": f"{base}/subscribers",
        "subscription_url": f"{base}/subscription",
        "tags_url": f"{base}/tags",
        "teams_url": f"{base}/teams",
        "trees_url": f"{base}/git/trees{{/sha}}",
        "clone_url": f"{web}/{repo.full_name}.git",
        "mirror_url": None,
        "hooks_url": f"{base}/hooks",
        "svn_url": f"{web}/{repo.full_name}",
        "homepage": None,
        "language": "Python",
        "forks_count": 0,
        "forks": 0,
        "network_count": 0,
        "subscribers_count": 0,
        "stargazers_count": 0,
        "watchers_count": 0,
        "watchers": 0,
        "size": 1,
        "default_branch": repo.default_branch,
        "open_issues_count": sum(1 for p in repo.pulls.values() if p.state == "open"),
        "open_issues": sum(1 for p in repo.pulls.values() if p.state == "open"),
        "is_template": False,
        "topics": [],
        "has_issues": True,
        "has_projects": True,
        "has_wiki": False,
        "has_pages": False,
        "has_downloads": True,
        "has_discussions": False,
        "archived": False,
        "disabled": False,
        "visibility": "private" if repo.private else "public",
        "pushed_at": iso(repo.pushed_at or repo.created_at),
        "created_at": stamp,
        "updated_at": stamp,
        "allow_forking": True,
        "web_commit_signoff_required": False,
        "license": None,
    }


def app_json(world: World, app: App) -> Json:
    return {
        "id": app.id,
        "slug": app.slug,
        "client_id": f"Iv23li{app.id:08d}",
        "node_id": app.node_id,
        "owner": user_json(world, app.owner),
        "name": app.name,
        "description": "",
        "external_url": f"{world.urls.web}/{app.owner}",
        "html_url": f"{world.urls.web}/apps/{app.slug}",
        "created_at": iso(app.created_at),
        "updated_at": iso(app.created_at),
        "permissions": dict(app.permissions or APP_PERMISSIONS),
        "events": list(app.events or APP_EVENTS),
        "installations_count": 1,
    }


def _actions_app_json(world: World) -> Json:
    return {
        "id": ACTIONS_APP_ID,
        "slug": ACTIONS_APP_SLUG,
        "client_id": "Iv1.05c79e9ad1f6bdfa",
        "node_id": "MDM6QXBwMTUzNjg=",
        "owner": user_json(world, "github"),
        "name": "GitHub Actions",
        "description": "Automate your workflow from idea to production",
        "external_url": "https://help.github.com/en/actions",
        "html_url": f"{world.urls.web}/apps/github-actions",
        "created_at": "2018-07-30T09:30:17Z",
        "updated_at": "2024-04-10T20:33:16Z",
        "permissions": {
            "actions": "write",
            "checks": "write",
            "contents": "write",
            "metadata": "read",
        },
        "events": ["check_run", "check_suite", "push", "pull_request", "merge_group"],
    }


def _other_app_json(world: World, slug: str) -> Json:
    app = world.app_by_slug(slug)
    if app is not None:
        return app_json(world, app)
    digest = int(hashlib.sha256(slug.encode()).hexdigest()[:6], 16)
    return {
        "id": 100_000 + digest,
        "slug": slug,
        "client_id": f"Iv1.{digest:016x}",
        "node_id": node_id("app", slug),
        "owner": user_json(world, "ci-vendor"),
        "name": slug,
        "description": "",
        "external_url": f"https://{slug}.example",
        "html_url": f"{world.urls.web}/apps/{slug}",
        "created_at": "2019-01-01T00:00:00Z",
        "updated_at": "2019-01-01T00:00:00Z",
        "permissions": {"checks": "write", "metadata": "read"},
        "events": [],
    }


def installation_json(world: World, inst: Installation, app: App) -> Json:
    api = world.urls.api
    owner = world.user(inst.account)
    return {
        "id": inst.id,
        "account": user_json(world, inst.account),
        "repository_selection": inst.repository_selection,
        "access_tokens_url": f"{api}/app/installations/{inst.id}/access_tokens",
        "repositories_url": f"{api}/installation/repositories",
        "html_url": f"{world.urls.web}/settings/installations/{inst.id}",
        "app_id": app.id,
        "client_id": f"Iv23li{app.id:08d}",
        "app_slug": app.slug,
        "target_id": owner.id,
        "target_type": "Organization" if owner.type == "User" else owner.type,
        "permissions": dict(app.permissions or APP_PERMISSIONS),
        "events": list(app.events or APP_EVENTS),
        "created_at": iso(inst.created_at),
        "updated_at": iso(inst.created_at),
        "single_file_name": None,
        "has_multiple_single_files": False,
        "single_file_paths": [],
        "suspended_by": None,
        "suspended_at": None,
    }


def installation_ref(world: World, full_name: str) -> Json | None:
    inst = world.installation_for(full_name)
    if inst is None:
        return None
    return {"id": inst.id, "node_id": node_id("installation", inst.id)}


# --- pull requests ------------------------------------------------------------------------


def label_json(world: World, repo: Repository, name: str) -> Json:
    digest = int(hashlib.sha256(f"{repo.full_name}:{name}".encode()).hexdigest()[:8], 16)
    return {
        "id": 5_000_000_000 + digest,
        "node_id": node_id("label", f"{repo.full_name}:{name}"),
        "url": f"{world.urls.api}/repos/{repo.full_name}/labels/{name}",
        "name": name,
        "description": None,
        "color": f"{digest & 0xFFFFFF:06x}",
        "default": False,
        "archived_at": None,
        "archived_by": None,
    }


def author_association(repo: Repository, login: str) -> str:
    if login.lower() == repo.owner.lower():
        return "OWNER"
    if login in repo.collaborators:
        return "COLLABORATOR" if repo.collaborators[login] != "admin" else "MEMBER"
    return "CONTRIBUTOR"


def _branch_json(world: World, repo: Repository, ref: str, sha: str) -> Json:
    return {
        "label": f"{repo.owner}:{ref}",
        "ref": ref,
        "sha": sha,
        "user": user_json(world, repo.owner),
        "repo": repo_json(world, repo),
    }


def pull_request_json(world: World, pr: PullRequest) -> Json:
    repo = pr.repo
    api, web = world.urls.api, world.urls.web
    base = f"{api}/repos/{repo.full_name}"
    html = f"{web}/{repo.full_name}/pull/{pr.number}"
    auto = None
    if pr.auto_merge is not None:
        auto = {
            "enabled_by": user_json(world, pr.auto_merge.enabled_by),
            "merge_method": pr.auto_merge.merge_method.lower(),
            "commit_title": pr.auto_merge.commit_title or "",
            "commit_message": pr.auto_merge.commit_message or "",
        }
    return {
        "url": f"{base}/pulls/{pr.number}",
        "id": pr.id,
        "node_id": pr.node_id,
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "issue_url": f"{base}/issues/{pr.number}",
        "commits_url": f"{base}/pulls/{pr.number}/commits",
        "review_comments_url": f"{base}/pulls/{pr.number}/comments",
        "review_comment_url": f"{base}/pulls/comments{{/number}}",
        "comments_url": f"{base}/issues/{pr.number}/comments",
        "statuses_url": f"{base}/statuses/{pr.head_sha}",
        "number": pr.number,
        "state": pr.state,
        "locked": False,
        "title": pr.title,
        "user": user_json(world, pr.author),
        "body": pr.body or None,
        "labels": [label_json(world, repo, name) for name in pr.labels],
        "milestone": None,
        "active_lock_reason": None,
        "created_at": iso(pr.created_at),
        "updated_at": iso(pr.updated_at),
        "closed_at": iso(pr.closed_at),
        "merged_at": iso(pr.merged_at),
        "merge_commit_sha": pr.merge_commit_sha,
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": _branch_json(world, pr.head_repo, pr.head_ref, pr.head_sha),
        "base": _branch_json(world, repo, pr.base_ref, pr.base_sha),
        "_links": {
            "self": {"href": f"{base}/pulls/{pr.number}"},
            "html": {"href": html},
            "issue": {"href": f"{base}/issues/{pr.number}"},
            "comments": {"href": f"{base}/issues/{pr.number}/comments"},
            "review_comments": {"href": f"{base}/pulls/{pr.number}/comments"},
            "review_comment": {"href": f"{base}/pulls/comments{{/number}}"},
            "commits": {"href": f"{base}/pulls/{pr.number}/commits"},
            "statuses": {"href": f"{base}/statuses/{pr.head_sha}"},
        },
        "author_association": author_association(repo, pr.author),
        "auto_merge": auto,
        "draft": pr.draft,
        "merged": pr.merged,
        "mergeable": None if pr.merged else True,
        "rebaseable": None if pr.merged else True,
        "mergeable_state": "unknown" if pr.merged else "clean",
        "merged_by": user_json(world, pr.merged_by) if pr.merged_by else None,
        "comments": 0,
        "review_comments": 0,
        "maintainer_can_modify": pr.maintainer_can_modify,
        "commits": 1,
        "additions": 1,
        "deletions": 0,
        "changed_files": 1,
    }


def pull_request_minimal(world: World, pr: PullRequest) -> Json:
    """The small PR object inside check runs and workflow runs."""

    def side(repo: Repository, ref: str, sha: str) -> Json:
        return {
            "ref": ref,
            "sha": sha,
            "repo": {
                "id": repo.id,
                "url": f"{world.urls.api}/repos/{repo.full_name}",
                "name": repo.name,
            },
        }

    return {
        "id": pr.id,
        "number": pr.number,
        "url": f"{world.urls.api}/repos/{pr.repo.full_name}/pulls/{pr.number}",
        "head": side(pr.head_repo, pr.head_ref, pr.head_sha),
        "base": side(pr.repo, pr.base_ref, pr.base_sha),
    }


# --- checks and Actions -------------------------------------------------------------------


def annotation_json(world: World, repo: Repository, run: CheckRun) -> list[Json]:
    """`GET …/check-runs/{id}/annotations`: the check run's annotations, as GitHub lists them."""
    web = world.urls.web
    sent = [
        {
            "path": a.path,
            "blob_href": f"{web}/{repo.full_name}/blob/{run.head_sha}/{a.path}",
            "start_line": a.start_line,
            "end_line": a.end_line,
            "start_column": a.start_column,
            "end_column": a.end_column,
            "annotation_level": a.annotation_level,
            "title": a.title,
            "message": a.message,
            "raw_details": a.raw_details,
        }
        for a in run.api_annotations
    ]
    return sent + [
        {
            "path": a.path,
            "blob_href": f"{web}/{repo.full_name}/blob/{run.head_sha}/{a.path}",
            "start_line": a.line,
            "end_line": a.line,
            "start_column": None,
            "end_column": None,
            "annotation_level": a.level,
            "title": a.title,
            "message": a.message,
            "raw_details": "",
        }
        for a in run.annotations
    ]


def check_run_json(world: World, repo: Repository, run: CheckRun) -> Json:
    api = world.urls.api
    app = (
        _actions_app_json(world)
        if run.app_slug == ACTIONS_APP_SLUG
        else _other_app_json(world, run.app_slug)
    )
    pulls = [
        pull_request_minimal(world, repo.pulls[n]) for n in run.pull_numbers if n in repo.pulls
    ]
    return {
        "id": run.id,
        "name": run.name,
        "node_id": run.node_id,
        "head_sha": run.head_sha,
        "external_id": (
            run.external_id if run.via_api else ("" if run.job_id is None else f"ext-{run.id}")
        ),
        "url": f"{api}/repos/{repo.full_name}/check-runs/{run.id}",
        "html_url": run.html_url,
        "details_url": run.details_url,
        "status": run.status,
        "conclusion": run.conclusion,
        "started_at": iso(run.started_at),
        "completed_at": iso(run.completed_at),
        "output": {
            "title": run.title if run.via_api else (None if not run.summary else run.name),
            "summary": run.summary or None,
            "text": run.text or None,
            "annotations_count": len(run.annotations) + len(run.api_annotations),
            "annotations_url": f"{api}/repos/{repo.full_name}/check-runs/{run.id}/annotations",
        },
        "check_suite": {
            "id": run.check_suite_id,
            "node_id": node_id("check_suite", run.check_suite_id),
            "head_branch": None,
            "head_sha": run.head_sha,
            "status": run.status,
            "conclusion": run.conclusion,
            "url": f"{api}/repos/{repo.full_name}/check-suites/{run.check_suite_id}",
            "before": None,
            "after": run.head_sha,
            "pull_requests": pulls,
            "app": app,
            "created_at": iso(run.started_at),
            "updated_at": iso(run.completed_at or run.started_at),
        },
        "app": app,
        "pull_requests": pulls,
    }


def _simple_commit(sha: str, message: str, when: Any, author: User) -> Json:
    who = {"name": author.login, "email": author.email}
    return {
        "id": sha,
        "tree_id": hashlib.sha1(sha.encode()).hexdigest(),
        "message": message,
        "timestamp": iso(when),
        "author": who,
        "committer": who,
    }


def _minimal_repo(world: World, repo: Repository) -> Json:
    full = repo_json(world, repo)
    keep = {k: v for k, v in full.items() if k not in ("license",)}
    return keep


def workflow_run_json(
    world: World, repo: Repository, run: WorkflowRun, *, message: str = ""
) -> Json:
    api, web = world.urls.api, world.urls.web
    base = f"{api}/repos/{repo.full_name}/actions/runs/{run.id}"
    actor = user_json(world, run.actor or repo.owner)
    pulls = [
        pull_request_minimal(world, repo.pulls[n]) for n in run.pull_numbers if n in repo.pulls
    ]
    return {
        "id": run.id,
        "name": run.name,
        "node_id": run.node_id,
        "check_suite_id": run.check_suite_id,
        "check_suite_node_id": node_id("check_suite", run.check_suite_id),
        "head_branch": run.head_branch,
        "head_sha": run.head_sha,
        "path": run.path,
        "display_title": run.display_title or (message.splitlines()[0] if message else run.name),
        "run_number": run.run_number,
        "event": run.event,
        "status": run.status,
        "conclusion": run.conclusion,
        "workflow_id": run.workflow_id,
        "url": base,
        "html_url": f"{web}/{repo.full_name}/actions/runs/{run.id}",
        "pull_requests": pulls,
        "created_at": iso(run.created_at),
        "updated_at": iso(run.updated_at),
        "actor": actor,
        "triggering_actor": actor,
        "run_attempt": run.run_attempt,
        "referenced_workflows": [],
        "run_started_at": iso(run.created_at),
        "jobs_url": f"{base}/jobs",
        "logs_url": f"{base}/logs",
        "check_suite_url": f"{api}/repos/{repo.full_name}/check-suites/{run.check_suite_id}",
        "artifacts_url": f"{base}/artifacts",
        "cancel_url": f"{base}/cancel",
        "rerun_url": f"{base}/rerun",
        "previous_attempt_url": None,
        "workflow_url": f"{api}/repos/{repo.full_name}/actions/workflows/{run.workflow_id}",
        "head_commit": _simple_commit(
            run.head_sha, message, run.created_at, world.user(repo.owner)
        ),
        "repository": _minimal_repo(world, repo),
        "head_repository": _minimal_repo(world, repo),
    }


def workflow_json(world: World, repo: Repository, run: WorkflowRun) -> Json:
    api, web = world.urls.api, world.urls.web
    return {
        "id": run.workflow_id,
        "node_id": node_id("workflow", run.workflow_id),
        "name": run.name,
        "path": run.path,
        "state": "active",
        "created_at": iso(repo.created_at),
        "updated_at": iso(repo.created_at),
        "url": f"{api}/repos/{repo.full_name}/actions/workflows/{run.workflow_id}",
        "html_url": f"{web}/{repo.full_name}/blob/{repo.default_branch}/{run.path}",
        "badge_url": f"{web}/{repo.full_name}/workflows/{run.name}/badge.svg",
    }


def job_json(world: World, repo: Repository, job: Job) -> Json:
    api, web = world.urls.api, world.urls.web
    return {
        "id": job.id,
        "run_id": job.run_id,
        "run_url": f"{api}/repos/{repo.full_name}/actions/runs/{job.run_id}",
        "run_attempt": 1,
        "node_id": job.node_id,
        "head_sha": job.head_sha,
        "head_branch": job.head_branch,
        "url": f"{api}/repos/{repo.full_name}/actions/jobs/{job.id}",
        "html_url": f"{web}/{repo.full_name}/actions/runs/{job.run_id}/job/{job.id}",
        "status": job.status,
        "conclusion": job.conclusion,
        "created_at": iso(job.started_at),
        "started_at": iso(job.started_at),
        "completed_at": iso(job.completed_at),
        "name": job.name,
        "steps": [
            {
                "name": s.name,
                "status": s.status,
                "conclusion": s.conclusion,
                "number": s.number,
                "started_at": iso(s.started_at),
                "completed_at": iso(s.completed_at),
            }
            for s in job.steps
        ],
        "check_run_url": f"{api}/repos/{repo.full_name}/check-runs/{job.id}",
        "labels": ["ubuntu-latest"],
        "runner_id": 1,
        "runner_name": job.runner_name,
        "runner_group_id": 0,
        "runner_group_name": "GitHub Actions",
        "workflow_name": job.workflow_name,
    }


# --- comments and reactions ---------------------------------------------------------------


def reactions_summary(world: World, repo: str, comment: IssueComment) -> Json:
    counts = dict.fromkeys(
        ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"), 0
    )
    for reaction in comment.reactions:
        counts[reaction.content] += 1
    return {
        "url": f"{world.urls.api}/repos/{repo}/issues/comments/{comment.id}/reactions",
        "total_count": len(comment.reactions),
        **counts,
    }


def comment_json(world: World, repo: Repository, comment: IssueComment) -> Json:
    api, web = world.urls.api, world.urls.web
    performed_via = None
    author = world.user(comment.author)
    if author.type == "Bot":
        app = world.app_by_slug(_slug(author))
        performed_via = app_json(world, app) if app is not None else None
    return {
        "id": comment.id,
        "node_id": comment.node_id,
        "url": f"{api}/repos/{repo.full_name}/issues/comments/{comment.id}",
        "html_url": f"{web}/{repo.full_name}/pull/{comment.issue_number}#issuecomment-{comment.id}",
        "body": comment.body,
        "user": user_json(world, comment.author),
        "created_at": iso(comment.created_at),
        "updated_at": iso(comment.updated_at),
        "issue_url": f"{api}/repos/{repo.full_name}/issues/{comment.issue_number}",
        "author_association": author_association(repo, comment.author),
        "performed_via_github_app": performed_via,
        "reactions": reactions_summary(world, repo.full_name, comment),
    }


def reaction_json(world: World, reaction: Reaction) -> Json:
    return {
        "id": reaction.id,
        "node_id": reaction.node_id,
        "user": user_json(world, reaction.user),
        "content": reaction.content,
        "created_at": iso(reaction.created_at),
    }


def collaborator_permission_json(world: World, repo: Repository, login: str, role: str) -> Json:
    # `permission` keeps the legacy four values; `role_name` has the exact role.
    legacy = {"maintain": "write", "triage": "read"}.get(role, role)
    user = user_json(world, login)
    user.update(
        {
            "permissions": {
                "admin": role == "admin",
                "maintain": role in ("admin", "maintain"),
                "push": role in ("admin", "maintain", "write"),
                "triage": role in ("admin", "maintain", "write", "triage"),
                "pull": role != "none",
            },
            "role_name": role,
        }
    )
    return {"permission": legacy, "role_name": role, "user": user}


def issue_json(world: World, pr: PullRequest) -> Json:
    """A pull request seen as an issue (the `issue` of an `issue_comment` event)."""
    repo = pr.repo
    api, web = world.urls.api, world.urls.web
    base = f"{api}/repos/{repo.full_name}/issues/{pr.number}"
    return {
        "url": base,
        "repository_url": f"{api}/repos/{repo.full_name}",
        "labels_url": f"{base}/labels{{/name}}",
        "comments_url": f"{base}/comments",
        "events_url": f"{base}/events",
        "html_url": f"{web}/{repo.full_name}/pull/{pr.number}",
        "id": pr.id,
        "node_id": pr.node_id,
        "number": pr.number,
        "title": pr.title,
        "user": user_json(world, pr.author),
        "labels": [label_json(world, repo, name) for name in pr.labels],
        "state": pr.state,
        "locked": False,
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "comments": 0,
        "created_at": iso(pr.created_at),
        "updated_at": iso(pr.updated_at),
        "closed_at": iso(pr.closed_at),
        "author_association": author_association(repo, pr.author),
        "active_lock_reason": None,
        "draft": pr.draft,
        "pull_request": {
            "url": f"{api}/repos/{repo.full_name}/pulls/{pr.number}",
            "html_url": f"{web}/{repo.full_name}/pull/{pr.number}",
            "diff_url": f"{web}/{repo.full_name}/pull/{pr.number}.diff",
            "patch_url": f"{web}/{repo.full_name}/pull/{pr.number}.patch",
            "merged_at": iso(pr.merged_at),
        },
        "body": pr.body or None,
        "reactions": {
            "url": f"{base}/reactions",
            "total_count": 0,
            "+1": 0,
            "-1": 0,
            "laugh": 0,
            "hooray": 0,
            "confused": 0,
            "heart": 0,
            "rocket": 0,
            "eyes": 0,
        },
        "timeline_url": f"{base}/timeline",
        "performed_via_github_app": None,
        "state_reason": None,
    }


def plain_issue_json(world: World, repo: Repository, issue: Issue) -> Json:
    """An issue (not a pull request): `GET /issues/{n}`, the `issue` of an `issues` event."""
    api, web = world.urls.api, world.urls.web
    base = f"{api}/repos/{repo.full_name}/issues/{issue.number}"
    return {
        "url": base,
        "repository_url": f"{api}/repos/{repo.full_name}",
        "labels_url": f"{base}/labels{{/name}}",
        "comments_url": f"{base}/comments",
        "events_url": f"{base}/events",
        "html_url": f"{web}/{repo.full_name}/issues/{issue.number}",
        "id": issue.id,
        "node_id": issue.node_id,
        "number": issue.number,
        "title": issue.title,
        "user": user_json(world, issue.author),
        "labels": [label_json(world, repo, name) for name in issue.labels],
        "state": issue.state,
        "locked": False,
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "comments": 0,
        "created_at": iso(issue.created_at),
        "updated_at": iso(issue.updated_at),
        "closed_at": iso(issue.closed_at),
        "closed_by": user_json(world, issue.closed_by) if issue.closed_by else None,
        "author_association": author_association(repo, issue.author),
        "active_lock_reason": None,
        "body": issue.body or None,
        "reactions": {
            "url": f"{base}/reactions",
            "total_count": 0,
            "+1": 0,
            "-1": 0,
            "laugh": 0,
            "hooray": 0,
            "confused": 0,
            "heart": 0,
            "rocket": 0,
            "eyes": 0,
        },
        "timeline_url": f"{base}/timeline",
        "performed_via_github_app": None,
        "state_reason": issue.state_reason,
    }


# --- webhook payloads ---------------------------------------------------------------------


def _envelope(world: World, repo: Repository, sender: str) -> Json:
    payload: Json = {"repository": repo_json(world, repo), "sender": user_json(world, sender)}
    inst = installation_ref(world, repo.full_name)
    if inst is not None:
        payload["installation"] = inst
    return payload


def pull_request_event(
    world: World, pr: PullRequest, action: str, sender: str, **extra: Any
) -> Json:
    """`pull_request` with any action (opened, synchronize, closed, enqueued, dequeued...)."""
    payload: Json = {
        "action": action,
        "number": pr.number,
        "pull_request": pull_request_json(world, pr),
    }
    payload.update(extra)
    payload.update(_envelope(world, pr.repo, sender))
    return payload


def issues_event(
    world: World,
    repo: Repository,
    issue: Issue,
    action: str,
    sender: str,
    *,
    changes: Json | None = None,
) -> Json:
    """`issues` with action opened, edited, closed or reopened."""
    payload: Json = {"action": action, "issue": plain_issue_json(world, repo, issue)}
    if changes is not None:
        payload["changes"] = changes
    payload.update(_envelope(world, repo, sender))
    return payload


def merge_group_json(world: World, repo: Repository, group: MergeGroup, author: str) -> Json:
    user = world.user(author)
    who = {"name": user.name or user.login, "email": user.email}
    return {
        "head_sha": group.head_sha,
        "head_ref": group.head_ref,
        "base_sha": group.base_sha,
        "base_ref": group.base_ref,
        "head_commit": {
            "id": group.head_sha,
            "tree_id": hashlib.sha1(group.head_sha.encode()).hexdigest(),
            "message": group.message,
            "timestamp": iso(group.created_at),
            "author": who,
            "committer": {"name": "GitHub", "email": "noreply@github.com"},
        },
    }


def merge_group_event(
    world: World,
    repo: Repository,
    group: MergeGroup,
    action: str,
    *,
    sender: str,
    author: str,
    reason: str | None = None,
) -> Json:
    """`merge_group` `checks_requested`, or `destroyed` with reason merged/invalidated/dequeued."""
    payload: Json = {"action": action}
    if reason is not None:
        payload["reason"] = reason
    payload["merge_group"] = merge_group_json(world, repo, group, author)
    payload.update(_envelope(world, repo, sender))
    return payload


def check_run_event(
    world: World,
    repo: Repository,
    run: CheckRun,
    action: str = "completed",
    sender: str | None = None,
) -> Json:
    """`check_run` created / completed; the sender is whoever acted (the App's bot for its
    own runs, the repository's owner standing in for CI otherwise)."""
    payload: Json = {"action": action, "check_run": check_run_json(world, repo, run)}
    payload.update(_envelope(world, repo, sender or repo.owner))
    return payload


def _push_commit(world: World, repo: Repository, info: git.CommitInfo, changes: Any) -> Json:
    added, removed, modified = changes

    def person(name: str, email: str) -> Json:
        who: Json = {"name": name, "email": email}
        # GitHub adds `username` when the email belongs to an account.
        login = _login_of_email(email)
        if login is not None:
            who["username"] = login
        return who

    return {
        "id": info.sha,
        "tree_id": info.tree,
        "distinct": True,
        "message": info.message,
        "timestamp": info.committer_date,
        "url": f"{world.urls.web}/{repo.full_name}/commit/{info.sha}",
        "author": person(info.author_name, info.author_email),
        "committer": person(info.committer_name, info.committer_email),
        "added": added,
        "removed": removed,
        "modified": modified,
    }


def _login_of_email(email: str) -> str | None:
    # The simulation's users commit as <id>+<login>@users.noreply.github.com.
    local, _, domain = email.partition("@")
    if domain != "users.noreply.github.com" or "+" not in local:
        return None
    return local.split("+", 1)[1] or None


def _push_repository(world: World, repo: Repository) -> Json:
    """The push event's repository: as elsewhere, except (as GitHub sends it) times in
    epoch seconds for created_at and pushed_at, `url` the web URL, `stargazers`,
    `master_branch` and `custom_properties`."""
    data = repo_json(world, repo)
    pushed = repo.pushed_at or repo.created_at
    data.update(
        created_at=int(repo.created_at.timestamp()),
        pushed_at=int(pushed.timestamp()),
        url=f"{world.urls.web}/{repo.full_name}",
        stargazers=0,
        master_branch=repo.default_branch,
        custom_properties={},
    )
    owner = data["owner"]
    user = world.user(repo.owner)
    owner.update(name=user.name or user.login, email=user.email)
    return data


def push_event(
    world: World,
    repo: Repository,
    *,
    ref: str,
    before: str,
    after: str,
    forced: bool,
    commits: list[tuple[git.CommitInfo, Any]],
    head: tuple[git.CommitInfo, Any] | None,
    pusher: str,
) -> Json:
    """`push`: one branch created (before all zeros), moved, or deleted (after all zeros)."""
    zero = "0" * 40
    created, deleted = before == zero, after == zero
    web = f"{world.urls.web}/{repo.full_name}"
    if created:
        compare = f"{web}/commit/{after[:12]}"
    elif deleted:
        compare = f"{web}/compare/{before[:12]}...000000000000"
    else:
        compare = f"{web}/compare/{before[:12]}...{after[:12]}"
    who = world.user(pusher)
    payload: Json = {
        "ref": ref,
        "before": before,
        "after": after,
        "repository": _push_repository(world, repo),
        "pusher": {"name": who.login, "email": who.email},
        "sender": user_json(world, pusher),
        "created": created,
        "deleted": deleted,
        "forced": forced,
        "base_ref": None,
        "compare": compare,
        "commits": [_push_commit(world, repo, c, ch) for c, ch in commits],
        "head_commit": _push_commit(world, repo, *head) if head is not None else None,
    }
    inst = installation_ref(world, repo.full_name)
    if inst is not None:
        payload["installation"] = inst
    return payload


# --- branches and contents ----------------------------------------------------------------


def commit_json(world: World, repo: Repository, info: git.CommitInfo) -> Json:
    """The `commit` of a branch (`GET …/branches/{branch}`), GitHub's Commit object."""
    api, web = world.urls.api, world.urls.web
    base = f"{api}/repos/{repo.full_name}"

    def account(email: str) -> Json | None:
        login = _login_of_email(email)
        return user_json(world, login) if login is not None else None

    return {
        "sha": info.sha,
        "node_id": node_id("commit", info.sha),
        "url": f"{base}/commits/{info.sha}",
        "html_url": f"{web}/{repo.full_name}/commit/{info.sha}",
        "comments_url": f"{base}/commits/{info.sha}/comments",
        "commit": {
            "url": f"{base}/git/commits/{info.sha}",
            "author": {
                "name": info.author_name,
                "email": info.author_email,
                "date": info.author_date,
            },
            "committer": {
                "name": info.committer_name,
                "email": info.committer_email,
                "date": info.committer_date,
            },
            "message": info.message,
            "comment_count": 0,
            "tree": {"sha": info.tree, "url": f"{base}/git/trees/{info.tree}"},
            "verification": {
                "verified": False,
                "reason": "unsigned",
                "signature": None,
                "payload": None,
                "verified_at": None,
            },
        },
        "author": account(info.author_email),
        "committer": account(info.committer_email),
        "parents": [
            {
                "sha": p,
                "url": f"{base}/commits/{p}",
                "html_url": f"{web}/{repo.full_name}/commit/{p}",
            }
            for p in info.parents
        ],
    }


def branch_json(world: World, repo: Repository, name: str, info: git.CommitInfo) -> Json:
    base = f"{world.urls.api}/repos/{repo.full_name}/branches/{name}"
    return {
        "name": name,
        "commit": commit_json(world, repo, info),
        "_links": {"self": base, "html": f"{world.urls.web}/{repo.full_name}/tree/{name}"},
        "protected": name == repo.default_branch,
        "protection": {
            "enabled": name == repo.default_branch,
            "required_status_checks": {
                "enforcement_level": "off",
                "contexts": [],
                "checks": [],
            },
        },
        "protection_url": f"{base}/protection",
    }


def _content_links(
    world: World, repo: Repository, path: str, sha: str, ref: str, kind: str
) -> Json:
    api, web = world.urls.api, world.urls.web
    git_kind = "trees" if kind == "dir" else "blobs"
    view = "tree" if kind == "dir" else "blob"
    self_url = f"{api}/repos/{repo.full_name}/contents/{path}?ref={ref}"
    git_url = f"{api}/repos/{repo.full_name}/git/{git_kind}/{sha}"
    html_url = f"{web}/{repo.full_name}/{view}/{ref}/{path}"
    return {
        "url": self_url,
        "git_url": git_url,
        "html_url": html_url,
        "download_url": (
            f"https://raw.githubusercontent.com/{repo.full_name}/{ref}/{path}"
            if kind == "file"
            else None
        ),
        "_links": {"self": self_url, "git": git_url, "html": html_url},
    }


# GitHub's base64 `content` is wrapped at 60 characters, each line ending in a newline.
CONTENT_LINE = 60


def wrap_base64(data: bytes) -> str:
    text = base64.b64encode(data).decode()
    return "".join(text[i : i + CONTENT_LINE] + "\n" for i in range(0, len(text), CONTENT_LINE))


def content_entry_json(
    world: World, repo: Repository, entry: git.TreeEntry, ref: str, kind: str
) -> Json:
    """A directory listing's item (no content)."""
    data: Json = {
        "type": kind,
        "size": entry.size or 0,
        "name": entry.path.rsplit("/", 1)[-1],
        "path": entry.path,
        "sha": entry.sha,
    }
    data.update(_content_links(world, repo, entry.path, entry.sha, ref, kind))
    return data


def content_file_json(
    world: World, repo: Repository, entry: git.TreeEntry, ref: str, data: bytes | None
) -> Json:
    """A file: `data` None for one over 1 MB (GitHub sends `encoding: none`, no content)."""
    body = content_entry_json(world, repo, entry, ref, "file")
    body["encoding"] = "base64" if data is not None else "none"
    body["content"] = wrap_base64(data) if data is not None else ""
    return body


def workflow_run_event(
    world: World,
    repo: Repository,
    run: WorkflowRun,
    action: str = "completed",
    *,
    message: str = "",
) -> Json:
    payload: Json = {
        "action": action,
        "workflow_run": workflow_run_json(world, repo, run, message=message),
        "workflow": workflow_json(world, repo, run),
    }
    payload.update(_envelope(world, repo, repo.owner))
    return payload


def issue_comment_event(
    world: World,
    pr: PullRequest,
    comment: IssueComment,
    action: str = "created",
    *,
    changes: Json | None = None,
) -> Json:
    payload: Json = {
        "action": action,
        "issue": issue_json(world, pr),
        "comment": comment_json(world, pr.repo, comment),
    }
    if changes is not None:
        payload["changes"] = changes
    payload.update(_envelope(world, pr.repo, comment.author))
    return payload
