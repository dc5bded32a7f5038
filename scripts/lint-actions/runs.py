"""Extracts every shell script of GitHub Actions and GitLab CI files for shellcheck.

    python runs.py OUT_DIR FILE...

A file is read as an action (it has `runs:`), a GitHub workflow (`jobs:` whose jobs have
`steps:`) or a GitLab CI file (jobs with `script:`). Each `run:` block, or a GitLab job's
before_script, script and after_script joined, is written to OUT_DIR as one script with a
shellcheck directive naming its shell. An expression `${{ ... }}` in a `run:` block is refused
(an input or event field spliced into a script is script injection: pass it through `env:`);
it is replaced by a placeholder so that shellcheck still reads the rest. Prints one line per
script and the count; exits 1 when an expression was found or a file could not be read.
"""

import re
import sys
from pathlib import Path

from ruamel.yaml import YAML

EXPRESSION = re.compile(r"\$\{\{.*?\}\}", re.S)
PLACEHOLDER = "HOOKBENCH_LINT_EXPRESSION"
SHELLS = {"bash": "bash", "sh": "sh", None: "bash"}


def github_steps(doc):
    """(where, shell, script) of each run: step of an action or a workflow."""
    if isinstance(doc.get("runs"), dict):
        for i, step in enumerate(doc["runs"].get("steps") or []):
            if isinstance(step, dict) and "run" in step:
                yield f"runs.steps[{i}]", step.get("shell"), step["run"]
        return
    for name, job in (doc.get("jobs") or {}).items():
        if not isinstance(job, dict):
            continue
        default = ((job.get("defaults") or {}).get("run") or {}).get("shell")
        default = default or ((doc.get("defaults") or {}).get("run") or {}).get("shell")
        for i, step in enumerate(job.get("steps") or []):
            if isinstance(step, dict) and "run" in step:
                yield f"jobs.{name}.steps[{i}]", step.get("shell", default), step["run"]


def gitlab_jobs(doc):
    """(where, shell, script) of each GitLab job with a script (the runner's shell is sh)."""
    for name, job in doc.items():
        if not isinstance(job, dict) or "script" not in job:
            continue
        lines = []
        for key in ("before_script", "script", "after_script"):
            value = job.get(key) or []
            lines.extend([value] if isinstance(value, str) else value)
        yield f"{name}.script", "sh", "\n".join(str(line) for line in lines)


def main(out, files):
    out.mkdir(parents=True, exist_ok=True)
    yaml = YAML(typ="safe")
    count, failed = 0, False
    for file in files:
        try:
            doc = yaml.load(Path(file).read_text())
        except Exception as e:  # noqa: BLE001 - any parse error is the file's fault: say which
            print(f"{file}: not YAML: {e}", file=sys.stderr)
            failed = True
            continue
        scripts = github_steps(doc) if "runs" in doc or "jobs" in doc else gitlab_jobs(doc)
        for where, shell, script in scripts:
            if shell not in SHELLS:
                print(f"{file}: {where}: shell {shell} is not linted")
                continue
            for expr in EXPRESSION.findall(script):
                print(f"{file}: {where}: expression {expr} in a script; pass it through env:", file=sys.stderr)
                failed = True
            count += 1
            target = out / f"{count:03d}.sh"
            target.write_text(f"# shellcheck shell={SHELLS[shell]}\n# {file}: {where}\n" + EXPRESSION.sub(PLACEHOLDER, script))
            print(f"{target}\t{file}: {where}")
    print(f"{count} scripts")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: runs.py OUT_DIR FILE...")
    sys.exit(main(Path(sys.argv[1]), sys.argv[2:]))
