"""The previous release's gateway and runner for the drill's rolling updates (issue 26).

Either an existing build directory of an older commit (--previous-build DIR), or a commit
(--previous-commit REV): a detached `git worktree` at REV under <build>/drill/previous-<rev>, with
only the gateway and runner targets built into its own build directory. ccache's base_dir is
/work and the worktree keeps the repository's layout, so files unchanged since REV compile from
the cache. The worktree is kept for the next drill (remove it with `git worktree remove`).
"""
import os
import subprocess
import sys

TARGETS = ("dnaserve-gateway", "dnaserve-runner")


def binaries(build_dir):
    """The gateway and runner of a build directory; an error naming what is missing."""
    found = {"gateway": os.path.join(build_dir, "gateway", "dnaserve-gateway"),
             "runner": os.path.join(build_dir, "runner", "dnaserve-runner")}
    missing = [path for path in found.values() if not os.access(path, os.X_OK)]
    if missing:
        raise RuntimeError(f"no previous build in {build_dir}: missing {', '.join(missing)}")
    return found


def commit_of(build_dir):
    """The commit the build directory was configured from (its CMakeCache's source dir)."""
    source = None
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    source = line.split("=", 1)[1].strip()
    except OSError:
        return None
    if not source:
        return None
    out = subprocess.run(["git", "-C", source, "rev-parse", "HEAD"], capture_output=True,
                         text=True)
    return out.stdout.strip() or None


def from_build_dir(build_dir):
    build_dir = os.path.abspath(build_dir)
    result = binaries(build_dir)
    result.update({"build_dir": build_dir, "commit": commit_of(build_dir)})
    return result


def from_commit(root, build, rev):
    """Builds the gateway and runner of `rev` (a worktree and build dir of their own)."""
    out = subprocess.run(["git", "-C", root, "rev-parse", "--verify", rev + "^{commit}"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"--previous-commit {rev}: not a commit ({out.stderr.strip()})")
    commit = out.stdout.strip()
    worktree = os.path.join(build, "drill", "previous-" + commit[:7])
    if not os.path.isdir(worktree):
        os.makedirs(os.path.dirname(worktree), exist_ok=True)
        subprocess.run(["git", "-C", root, "worktree", "add", "--detach", worktree, commit],
                       check=True, stdout=sys.stderr)
    build_dir = os.path.join(worktree, "build")
    if not os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
        subprocess.run(["cmake", "-S", worktree, "-B", build_dir,
                        "-DCMAKE_BUILD_TYPE=RelWithDebInfo"], check=True, stdout=subprocess.DEVNULL)
    jobs = os.environ.get("DNASERVE_JOBS", "2")
    subprocess.run(["cmake", "--build", build_dir, "-j" + jobs, "--target", *TARGETS],
                   check=True, stdout=sys.stderr)
    result = binaries(build_dir)
    result.update({"build_dir": build_dir, "commit": commit})
    return result
