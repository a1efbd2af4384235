"""Shared pieces of the test drivers (corpus, stl-patch): one-line errors,
bad usage as exit 2, a failed check as exit 1, commands that must succeed."""
import argparse
import subprocess
import sys


class Failure(Exception):
    """A check that failed: its message is the one line to print."""


def parser_class(prog, suffix=""):
    """An ArgumentParser whose errors are one line, `prog: message`, exit 2."""
    class OneLineParser(argparse.ArgumentParser):
        def error(self, message):
            sys.stderr.write(f"{prog}: {message}{suffix}\n")
            sys.exit(2)
    return OneLineParser


def usage_error(prog, msg):
    sys.stderr.write(f"{prog}: {msg}\n")
    sys.exit(2)


def fail(prog, msg):
    sys.stderr.write(f"{prog}: {msg}\n")
    sys.exit(1)


def clip(s, limit=160):
    """s on one line, at most `limit` characters."""
    s = s.replace("\n", "\\n")
    return s if len(s) <= limit else s[:limit] + "..."


def run(prog, cmd, env=None, what=""):
    """Runs cmd; on a non-zero exit, fails with its first line of output."""
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        first = (r.stderr.strip().splitlines() or r.stdout.strip().splitlines()
                 or ["(no output)"])[0]
        fail(prog, f"{what} failed (exit {r.returncode}): {first}")
    return r


def first_difference(a, b):
    """Where two outputs part, as `line N: 'x' vs 'y'`."""
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb), 1):
        if x != y:
            return f"line {i}: '{x[:200]}' vs '{y[:200]}'"
    return f"line {min(len(la), len(lb)) + 1}: one output is longer"
