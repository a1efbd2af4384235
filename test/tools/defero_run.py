"""Shared by the test scripts: run a command under libdefero with one
DEFERO_* output file (stats or trace) and report how it went."""
import os
import subprocess


def run_under_defero(lib, variable, path, cmd, timeout=120):
    """Runs cmd with LD_PRELOAD=lib and variable=path (the file removed
    first), prints the command and its output, and returns True if it
    exited 0."""
    if os.path.exists(path):
        os.unlink(path)
    env = dict(os.environ, LD_PRELOAD=lib, **{variable: path})
    p = subprocess.run(cmd, env=env, capture_output=True, text=True,
                       timeout=timeout)
    print(f"command: {' '.join(cmd)}\nexit: {p.returncode}\nstdout:\n"
          f"{p.stdout[-1500:]}\nstderr:\n{p.stderr[-1500:]}")
    if p.returncode != 0:
        print("FAIL: command failed")
        return False
    return True
