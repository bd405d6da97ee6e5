"""bench/.venv: the peers the bench scripts compare against, installed with pip beside kforge,
never into it. A script calls ensure(module, requirement) first; it re-executes itself under the
venv with the requirement installed."""
import os
import subprocess
import sys

VENV = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".venv")


def ensure(module, requirement):
    """Re-executes the calling script under bench/.venv, with `requirement` pip-installed unless
    `module` already imports there."""
    if os.path.realpath(sys.prefix) == os.path.realpath(VENV):
        return
    py = os.path.join(VENV, "bin", "python")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", VENV])
    if subprocess.run([py, "-c", f"import {module}"], capture_output=True).returncode != 0:
        subprocess.check_call([py, "-m", "pip", "install", "-q", requirement])
    os.execv(py, [py] + sys.argv)
