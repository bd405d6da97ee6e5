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


def install_here(name):
    """pip-installs `name` into the running interpreter (bench/.venv's, after ensure) unless it
    imports already: ensure re-executes the script once, so a second peer must be installed from
    inside. A source package whose setup.py imports numpy (iisignature) needs the venv's numpy:
    second try without build isolation. Returns whether `name` imports now."""
    if subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True).returncode == 0:
        return True
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    r = subprocess.run(pip + [name], capture_output=True, text=True)
    if r.returncode != 0:
        subprocess.run(pip + ["setuptools", "wheel", "numpy"], capture_output=True)
        r = subprocess.run(pip + ["--no-build-isolation", name], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"# {name}: pip install failed: {r.stderr[-300:].strip()}")
    return r.returncode == 0
