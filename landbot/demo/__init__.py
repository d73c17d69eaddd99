"""`landbot demo`: the whole pipeline on a simulated GitHub, real git and the real sandbox.

A real git repository (a small Python package with tests and a quest tree, project.py) is
served by the simulated GitHub of landbot.sim; its CI runs for real (ci.py); landbot is
installed on it as a GitHub App and runs as in production (world.py: the webhook endpoint,
the store, the worker, triage, the fixer in the sandbox, publishing); the loop (drive.py)
steps the merge queue until every pull request merged or was handed back; outcome.py reads
back what happened and checks it against each story; render.py shows it.
"""
