"""The HTTP side of `landbot serve`: webhook receiver, /healthz, /metrics and the dashboard.

`landbot.web.app.create_app(settings, store, worker_alive=...)` builds the Starlette app.
"""
