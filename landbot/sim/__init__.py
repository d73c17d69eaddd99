"""The simulated GitHub landbot's tests and `landbot demo` run on.

Only GitHub is simulated: repositories are real bare git repositories under a root folder,
reached by landbot through `file:///ROOT/{owner}/{repo}.git`.

    from landbot.sim import FakeGitHub, FakeGitHubServer, CheckScenario

    gh = FakeGitHub(tmp_path / "github")
    repo = gh.create_repo("acme/widgets", files={"app.py": "print(1)\\n"})
    pr = gh.open_pull_request(repo, head="feature", files={"app.py": "print(2)\\n"})
    gh.set_checks(repo, CheckScenario.failing(), pr=pr, event="merge_group")
    with FakeGitHubServer(gh) as server:
        ...  # point landbot at server.url and gh.git_url

Modules: model (FakeGitHub), state (data), git (git plumbing), scenarios (CI), merge_queue
(queue simulation), payloads / fixtures / webhooks (JSON and deliveries), rest /
graphql_* (the API), auth, faults (counts, failure injection), server, control, actions /
runner / expr (Actions: workflow_dispatch, a small runner, artifacts).
Imports here are lazy so `import landbot.sim.fixtures` stays light. The simulator needs the
`sim` extra (pip install 'landbot[sim]'); the product itself runs without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from landbot.sim.merge_queue import QueueStep
    from landbot.sim.model import FakeGitHub, FakeGitHubError, NotFound, Unprocessable
    from landbot.sim.scenarios import CheckScenario, CheckSpec, JobSpec, StepSpec, WorkflowSpec
    from landbot.sim.server import FakeGitHubServer
    from landbot.sim.webhooks import Delivery

# The top-level modules of the `sim` extra in pyproject.toml. Outside landbot.sim and the demo
# only the tests import them (landbot/github/documents.py's load_schema, lazily).
EXTRA_MODULES = ("graphql",)

_EXPORTS = {
    "FakeGitHub": "landbot.sim.model",
    "FakeGitHubError": "landbot.sim.model",
    "NotFound": "landbot.sim.model",
    "Unprocessable": "landbot.sim.model",
    "FakeGitHubServer": "landbot.sim.server",
    "CheckScenario": "landbot.sim.scenarios",
    "CheckSpec": "landbot.sim.scenarios",
    "JobSpec": "landbot.sim.scenarios",
    "StepSpec": "landbot.sim.scenarios",
    "WorkflowSpec": "landbot.sim.scenarios",
    "QueueStep": "landbot.sim.merge_queue",
    "Delivery": "landbot.sim.webhooks",
}

__all__ = [
    "EXTRA_MODULES",
    "CheckScenario",
    "CheckSpec",
    "Delivery",
    "FakeGitHub",
    "FakeGitHubError",
    "FakeGitHubServer",
    "JobSpec",
    "NotFound",
    "QueueStep",
    "StepSpec",
    "Unprocessable",
    "WorkflowSpec",
    "missing_extra",
]


def missing_extra() -> str | None:
    """The first module of the `sim` extra that cannot be imported, or None when all can."""
    import importlib

    for name in EXTRA_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            return name
    return None


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'landbot.sim' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
