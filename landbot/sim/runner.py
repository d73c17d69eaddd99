"""A small Actions runner inside the simulated GitHub: runs one job's steps in a work folder.

Each `run:` step runs as GitHub's `shell: bash` does (`bash --noprofile --norc -eo pipefail
{0}`) with the job's and the step's `env:`, `$GITHUB_OUTPUT`, `$GITHUB_ENV`, `$GITHUB_PATH`,
`$RUNNER_TEMP`, `if:` and `working-directory:`. A runner is a fresh machine per job; here
each step runs under bubblewrap with the job's own folders mounted on `/tmp` and `/opt`
(the rest of the host's file system as it is), so two jobs that both write `/tmp/landbot-fix`
or `/opt/landbot` do not meet, and nothing is left on the host.

Uses: `actions/checkout` (a clone from the sim's own git at `ref`, `path`, `fetch-depth`,
`persist-credentials`), `actions/upload-artifact` (engine.py zips it as v4+ does),
`actions/setup-*` (nothing: this host's toolchain is the runner's). Any other action fails
the step saying so.

What a simulation cannot do, and does instead (each recorded in the job's log as
`##[sim] skipped: ...`):
- `sudo` is a shim on PATH that runs the command as the current user, except
  `sudo sysctl ...` (skipped: the host's kernel settings are not the job's to change) and
  `sudo apt-get update` / `sudo apt-get install P...` when every P is already present
  (skipped; a missing package fails the step: no network).
- `python3 -m venv DIR` under sudo makes DIR a shim venv whose `python3` and `landbot` are
  this checkout's venv's, and whose `pip` is the pip shim.
- `pip install landbot...` (the shim, also first on PATH): installing landbot itself is
  skipped (this checkout's venv, first on PATH, is landbot); any other requirement goes to
  the venv's real pip (which has no network here).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from landbot.sim.expr import ExpressionError, condition, interpolate, to_text

VENV_BIN = Path(sys.executable).parent  # this checkout's venv: landbot is installed there
JAIL_TMP = "/tmp"
JAIL_OPT = "/opt"
_SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")

_SUDO = r"""#!/bin/bash
# The sim runner's sudo: runs the command as the current user; records what it skips.
while [ $# -gt 0 ]; do
  case "$1" in
    -E|-n|-H|-S|--preserve-env|--preserve-env=*) shift ;;
    -u|-g) shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
skip() { echo "sudo $*" >> "$SIM_RUNNER_RECORD"; echo "##[sim] skipped: sudo $*"; exit 0; }
case "$1" in
  sysctl) skip "$@" ;;
  apt-get|apt)
    sub="$2"
    if [ "$sub" = update ]; then skip "$@"; fi
    if [ "$sub" = install ]; then
      for p in "${@:3}"; do
        case "$p" in -*) continue ;; esac
        dpkg -s "$p" >/dev/null 2>&1 || command -v "$p" >/dev/null 2>&1 || {
          echo "##[error]the sim runner cannot install $p (no network): install it on the host"
          exit 100
        }
      done
      skip "$@"
    fi ;;
  python3|python)
    if [ "$2" = -m ] && [ "$3" = venv ]; then
      dir="${@: -1}"
      mkdir -p "$dir/bin"
      printf '#!/bin/sh\nexec %s "$@"\n' "$SIM_VENV_BIN/python" > "$dir/bin/python3"
      printf '#!/bin/sh\nexec %s "$@"\n' "$SIM_VENV_BIN/landbot" > "$dir/bin/landbot"
      cp "$SIM_SHIMS/pip" "$dir/bin/pip"
      chmod 755 "$dir/bin/python3" "$dir/bin/landbot" "$dir/bin/pip"
      ln -sf python3 "$dir/bin/python"
      echo "python3 -m venv $dir (a shim venv of this checkout's)" >> "$SIM_RUNNER_RECORD"
      echo "##[sim] $dir is a shim venv: its landbot is this checkout's"
      exit 0
    fi ;;
esac
exec "$@"
"""

_PIP = r"""#!/bin/bash
# The sim runner's pip: installing landbot itself is skipped (this checkout is landbot).
if [ "$1" = install ]; then
  rest=()
  for a in "${@:2}"; do
    case "$a" in
      landbot|landbot[=\<\>\ \[@]*|"landbot @"*) echo "pip install $a" >> "$SIM_RUNNER_RECORD";
        echo "##[sim] skipped: pip install $a" ;;
      *) rest+=("$a") ;;
    esac
  done
  only_flags=1
  for a in "${rest[@]}"; do case "$a" in -*) ;; *) only_flags=0 ;; esac; done
  [ "$only_flags" = 1 ] && exit 0
  exec "$SIM_VENV_BIN/pip" install "${rest[@]}"
fi
exec "$SIM_VENV_BIN/pip" "$@"
"""


class StepFailed(Exception):
    pass


@dataclass
class JobPlan:
    """One job, resolved: its steps and the contexts its expressions read."""

    name: str
    steps: list[dict[str, Any]]
    env: Mapping[str, Any]
    timeout_minutes: float
    contexts: dict[str, Any]  # inputs, github, job, secrets, runner


@dataclass
class StepResult:
    name: str
    conclusion: str  # success | failure | skipped | cancelled
    started: datetime
    completed: datetime


@dataclass
class JobOutcome:
    conclusion: str  # success | failure | cancelled | timed_out
    steps: list[StepResult] = field(default_factory=list)
    log: str = ""
    skipped: list[str] = field(default_factory=list)  # what the shims recorded


Checkout = Callable[[Mapping[str, Any], Path], str]  # (with, host dest) -> log text
Upload = Callable[[Mapping[str, Any], Callable[[str], Path]], tuple[str, dict[str, str]]]


def _now() -> datetime:
    return datetime.now(UTC)


def _stamp() -> str:
    return _now().strftime("%Y-%m-%dT%H:%M:%S.%f0Z")


def _read_pairs(path: Path) -> dict[str, str]:
    """`name=value` lines and `name<<DELIM` heredocs, as the runner reads GITHUB_OUTPUT."""
    out: dict[str, str] = {}
    if not path.exists():
        return out
    lines = path.read_text("utf-8", "replace").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            body: list[str] = []
            while i < len(lines) and lines[i] != delim:
                body.append(lines[i])
                i += 1
            i += 1
            out[name] = "\n".join(body)
        elif "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
    return out


class JobRunner:
    """Runs `plan` in `root` (the job's machine); `cancel` set stops it at once."""

    def __init__(
        self,
        plan: JobPlan,
        root: Path,
        *,
        checkout: Checkout,
        upload: Upload,
        cancel: threading.Event,
        deadline: float,
        on_step: Callable[[list[StepResult], str | None], None] = lambda done, current: None,
    ) -> None:
        self.plan = plan
        self.root = root
        self.tmp = root / "tmp"  # the job's /tmp
        self.opt = root / "opt"  # the job's /opt
        self.checkout = checkout
        self.upload = upload
        self.cancel = cancel
        self.deadline = deadline
        self.on_step = on_step
        self.lines: list[str] = []
        self.failed = False
        self.timed_out = False

    # Paths as a step sees them (in the jail) and as the host sees them.
    def host_path(self, path: str) -> Path:
        p = Path(path)
        for jail, host in ((JAIL_TMP, self.tmp), (JAIL_OPT, self.opt)):
            if p == Path(jail) or Path(jail) in p.parents:
                return host / p.relative_to(jail)
        return p

    def log(self, text: str) -> None:
        for line in text.splitlines() or [""]:
            self.lines.append(f"{_stamp()} {line}")

    def status(self, name: str) -> bool:
        if name == "always":
            return True
        if name == "cancelled":
            return self.cancel.is_set()
        if name == "failure":
            return self.failed
        return not self.failed and not self.cancel.is_set()

    def run(self) -> JobOutcome:
        for folder in (self.tmp / "_runner" / "temp", self.tmp / "_runner" / "bin"):
            folder.mkdir(parents=True, exist_ok=True)
        (self.tmp / "_runner" / "home").mkdir(exist_ok=True)
        (self.opt / "hostedtoolcache").mkdir(parents=True, exist_ok=True)
        self.tmp.chmod(0o1777)  # as a runner's /tmp: the sandbox's own uid writes there too
        shims = self.tmp / "_runner" / "bin"
        (shims / "sudo").write_text(_SUDO)
        (shims / "pip").write_text(_PIP)
        for shim in ("sudo", "pip"):
            (shims / shim).chmod(0o755)
        self.record = self.tmp / "_runner" / "record"
        self.record.touch()
        repo = self.plan.contexts["github"]["repository"]
        self.workspace_jail = f"{JAIL_TMP}/_work/{repo.split('/')[-1]}"
        self.host_path(self.workspace_jail).mkdir(parents=True, exist_ok=True)
        self.extra_path: list[str] = []
        self.env_file_values: dict[str, str] = {}
        self.step_outputs: dict[str, dict[str, Any]] = {}
        results: list[StepResult] = []
        outcome = JobOutcome(conclusion="success")
        self.log(f"Job: {self.plan.name} (the simulated runner, {self.root})")
        for index, step in enumerate(self.plan.steps, start=1):
            name = str(step.get("name") or step.get("uses") or f"Run {step.get('run', '')}")
            name = name.splitlines()[0][:80]
            started = _now()
            self.on_step(results, name)
            try:
                ran = self.step(index, step, name)
                conclusion = "success" if ran else "skipped"
            except StepFailed as exc:
                self.log(f"##[error]{exc}")
                self.failed = True
                conclusion = "failure"
            except ExpressionError as exc:
                self.log(f"##[error]{exc}")
                self.failed = True
                conclusion = "failure"
            if self.cancel.is_set() and conclusion == "failure":
                conclusion = "cancelled"
            results.append(StepResult(name, conclusion, started, _now()))
            if self.timed_out:
                break
        self.on_step(results, None)
        if self.timed_out:
            outcome.conclusion = "timed_out"
            self.log(
                f"##[error]The job has exceeded the maximum execution time of "
                f"{to_text(self.plan.timeout_minutes)}m0s"
            )
        elif self.cancel.is_set():
            outcome.conclusion = "cancelled"
            self.log("##[error]The operation was canceled.")
        elif self.failed:
            outcome.conclusion = "failure"
        outcome.steps = results
        outcome.skipped = [x for x in self.record.read_text().splitlines() if x]
        outcome.log = "\n".join(self.lines) + "\n"
        return outcome

    def contexts(self, env: Mapping[str, str]) -> dict[str, Any]:
        ctx = dict(self.plan.contexts)
        ctx["steps"] = self.step_outputs
        ctx["env"] = dict(env)
        ctx["runner"] = {
            "os": "Linux",
            "arch": "X64",
            "temp": f"{JAIL_TMP}/_runner/temp",
            "name": "GitHub Actions 1000000",
            "tool_cache": f"{JAIL_OPT}/hostedtoolcache",
        }
        return ctx

    def step(self, index: int, step: Mapping[str, Any], name: str) -> bool:
        job_env = {k: to_text(interpolate(_raw(v), self.contexts({}), self.status))
                   for k, v in self.plan.env.items()}  # fmt: skip
        env_ctx = {**job_env, **self.env_file_values}
        ctx = self.contexts(env_ctx)
        if self.timed_out:
            return False
        if not condition(step.get("if", "success()"), ctx, self.status):
            return False
        step_env = {k: to_text(interpolate(_raw(v), ctx, self.status))
                    for k, v in (step.get("env") or {}).items()}  # fmt: skip
        env_ctx = {**env_ctx, **step_env}
        ctx = self.contexts(env_ctx)
        step_id = str(step.get("id") or f"__step{index}")
        self.step_outputs[step_id] = {"outputs": {}, "outcome": None, "conclusion": None}
        if "uses" in step:
            self.log(f"##[group]Run {step['uses']}")
            with_ = {k: interpolate(_raw(v), ctx, self.status)
                     for k, v in (step.get("with") or {}).items()}  # fmt: skip
            for k, v in with_.items():
                self.log(f"  {k}: {to_text(v)}")
            self.log("##[endgroup]")
            self.uses(str(step["uses"]), with_, step_id)
        else:
            workdir = step.get("working-directory")
            cwd = (
                to_text(interpolate(_raw(workdir), ctx, self.status))
                if workdir
                else self.workspace_jail
            )
            if not cwd.startswith("/"):
                cwd = f"{self.workspace_jail}/{cwd}"
            script = to_text(interpolate(_raw(step["run"]), ctx, self.status))
            self.bash(script, env_ctx, cwd, step_id)
        self.step_outputs[step_id]["outcome"] = "success"
        self.step_outputs[step_id]["conclusion"] = "success"
        return True

    def uses(self, action: str, with_: Mapping[str, Any], step_id: str) -> None:
        name = action.split("@", 1)[0].lower()
        if name == "actions/checkout":
            dest = to_text(with_.get("path", "")) or "."
            host = self.host_path(f"{self.workspace_jail}/{dest}")
            self.log(self.checkout(with_, host))
        elif name == "actions/upload-artifact":
            text, outputs = self.upload(with_, self.host_path)
            self.log(text)
            self.step_outputs[step_id]["outputs"].update(outputs)
        elif name.startswith("actions/setup-"):
            self.log(f"##[sim] {name}: this host's toolchain is the runner's; nothing to set up")
        else:
            raise StepFailed(f"the sim runner does not run the action {action}")

    def bash(self, script: str, env: Mapping[str, str], cwd: str, step_id: str) -> None:
        self.log(f"##[group]Run {script.splitlines()[0] if script else ''}")
        for line in script.splitlines()[1:]:
            self.log(line)
        self.log("##[endgroup]")
        temp = self.tmp / "_runner" / "temp"
        files = {n: temp / f"{n.lower()}_{step_id}" for n in ("OUTPUT", "ENV", "PATH", "SUMMARY")}
        for f in files.values():
            f.write_text("")
        script_file = temp / f"{step_id}.sh"
        script_file.write_text(script)
        jail = f"{JAIL_TMP}/_runner/temp"
        base_path = ":".join(
            [f"{JAIL_TMP}/_runner/bin", *reversed(self.extra_path), str(VENV_BIN), *_SYSTEM_PATH]
        )
        github = self.plan.contexts["github"]
        full_env = {
            "PATH": base_path,
            "HOME": f"{JAIL_TMP}/_runner/home",
            "LANG": "C.UTF-8",
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "RUNNER_OS": "Linux",
            "RUNNER_TEMP": jail,
            "RUNNER_TOOL_CACHE": f"{JAIL_OPT}/hostedtoolcache",
            "GITHUB_WORKSPACE": self.workspace_jail,
            "GITHUB_OUTPUT": f"{jail}/output_{step_id}",
            "GITHUB_ENV": f"{jail}/env_{step_id}",
            "GITHUB_PATH": f"{jail}/path_{step_id}",
            "GITHUB_STEP_SUMMARY": f"{jail}/summary_{step_id}",
            "GITHUB_REPOSITORY": github["repository"],
            "GITHUB_SHA": github["sha"],
            "GITHUB_REF": github["ref"],
            "GITHUB_RUN_ID": str(github["run_id"]),
            "GITHUB_EVENT_NAME": github["event_name"],
            "GITHUB_SERVER_URL": github["server_url"],
            "GITHUB_API_URL": github["api_url"],
            "SIM_RUNNER_RECORD": f"{JAIL_TMP}/_runner/record",
            "SIM_SHIMS": f"{JAIL_TMP}/_runner/bin",
            "SIM_VENV_BIN": str(VENV_BIN),
            **self.env_file_values,
            **env,
        }
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise StepFailed("the sim runner needs bubblewrap (bwrap) on PATH: install it")
        argv = [
            bwrap, "--dev-bind", "/", "/", "--bind", str(self.tmp), JAIL_TMP,
            "--bind", str(self.opt), JAIL_OPT, *_keep_visible(), "--chdir", cwd,
            "--die-with-parent", "--",
            "bash", "--noprofile", "--norc", "-eo", "pipefail", f"{jail}/{step_id}.sh",
        ]  # fmt: skip
        if not self.host_path(cwd).is_dir():
            raise StepFailed(f"working-directory {cwd} does not exist")
        proc = subprocess.Popen(
            argv,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        assert proc.stdout is not None
        reader = threading.Thread(target=self._drain, args=(proc.stdout,), daemon=True)
        reader.start()
        while proc.poll() is None:
            if self.cancel.is_set() or time.monotonic() > self.deadline:
                self.timed_out = not self.cancel.is_set()
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                reader.join(5)
                raise StepFailed("The operation was canceled.")
            time.sleep(0.05)
        reader.join(5)
        outputs = _read_pairs(files["OUTPUT"])
        self.step_outputs[step_id]["outputs"].update(outputs)
        self.env_file_values.update(_read_pairs(files["ENV"]))
        self.extra_path += [x for x in files["PATH"].read_text().splitlines() if x]
        if proc.returncode != 0:
            raise StepFailed(f"Process completed with exit code {proc.returncode}.")

    def _drain(self, stream: Any) -> None:
        for raw in iter(stream.readline, b""):
            self.log(raw.decode("utf-8", "replace").rstrip("\n"))
        stream.close()


def _raw(value: Any) -> str:
    """A YAML scalar as the workflow's text (`false`, not Python's `False`)."""
    return value if isinstance(value, str) else to_text(value)


def _keep_visible() -> list[str]:
    """Binds that show this checkout's venv and source tree inside the jail at their own
    paths when they live under `/tmp` or `/opt` (a clone in /tmp, as a CI machine may make):
    the job's own folders hide those, and the shim venv's `landbot` runs from there."""
    import landbot

    out: list[str] = []
    # Outer folders first: a venv inside the source tree is bound after it.
    paths = {Path(sys.prefix).resolve(), Path(landbot.__file__).resolve().parents[1]}
    for path in sorted(paths, key=lambda p: len(p.parts)):
        if any(path == Path(j) or Path(j) in path.parents for j in (JAIL_TMP, JAIL_OPT)):
            out += ["--ro-bind", str(path), str(path)]
    return out
