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
graphql_* (the API), auth, faults (counts, failure injection), server, control.
Imports here are lazy so `import landbot.sim.fixtures` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from landbot.sim.merge_queue import QueueStep
    from landbot.sim.model import FakeGitHub, FakeGitHubError, NotFound, Unprocessable
    from landbot.sim.scenarios import CheckScenario, CheckSpec, JobSpec, StepSpec, WorkflowSpec
    from landbot.sim.server import FakeGitHubServer
    from landbot.sim.webhooks import Delivery

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
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'landbot.sim' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
