#!/usr/bin/python3
"""The READMEs' command blocks, run as tests.

The convention (use it for every block you add to README.md, clients/python/README.md or
deploy/README.md): an HTML comment on the line immediately before a fenced block says what the
test does with it:

    <!-- readme-test: run -->            the test executes the block (sh/bash/shell with bash,
                                         python with the session's python3; a console block is a
                                         transcript: its `$ ` lines run, the lines after each are
                                         compared as an output block's are)
    <!-- readme-test: output -->         the block shows what the preceding run block printed;
                                         the test compares it with what the service returns now
    <!-- readme-test: skip: <reason> --> not run, for the reason written

A fenced block in a shell language (sh, bash, console, shell) without a marker fails the test,
naming its file and line; blocks in other languages (python, json, yaml, diagrams) may carry one.

How blocks run (`run` mode): the files in the order given (README.md, clients/python/README.md,
deploy/README.md), as one user's shell session in the checkout would run them. Each block runs in
a fresh temporary directory that holds a link to every top-level entry of the checkout (so
`scripts/...` and `./clients/python` resolve as from the checkout's root) and copies of the files
earlier run blocks wrote; a shell block runs under `bash -e -o pipefail`, with a time limit, and
the variables it exports reach later blocks. The session starts with an empty HOME, Debian's
default PATH (`/usr/local/bin:/usr/bin:/bin`: no pyenv, so `python3` is Debian's until the
README's own venv comes first) and the test service's URL and key in DNASERVE_URL and
DNASERVE_API_KEY, the variables the README tells users to set; a block that assigns either
(`export DNASERVE_URL=http://127.0.0.1:8080 ...`) gets the test service's value instead.

How output is compared: an output block whose lines start with `$ ` is a transcript: each such
command runs in the directory of the preceding run block, and the lines up to the next `$ ` are
what it must print. Any other output block is compared with the run block's stdout. Each line is
split on whitespace (aligned columns in the README match tab-separated output); ids (UUIDs: job
and request ids), `dns_` keys, ISO timestamps and durations (`12 ms`, `6.6 s`) are masked on both sides;
numbers with a decimal point or exponent agree when |actual - quoted| <= 1e-6 + 1e-3 * |quoted|;
everything else (integers, words, the number of lines and of fields) must match exactly. A
section that parses as JSON is compared as JSON: the same keys, the same list lengths, numbers as
above, strings masked; the values (not the presence) of job_id, request_id, version, timings and
keys ending in _at, _ms or _seconds are not compared.

    readme_blocks.py check FILE...                      the markers only (no service needed)
    readme_blocks.py run --url URL --key KEY FILE...    run and compare every block
Exit 0 when every block passes, 1 otherwise (each failure named FILE:LINE, with its stderr).
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHELL_LANGUAGES = {"sh", "bash", "console", "shell"}
RUNNABLE_LANGUAGES = SHELL_LANGUAGES | {"python"}
MARKER = re.compile(r"^\s*<!--\s*readme-test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([A-Za-z0-9_+-]*)")
DEBIAN_PATH = "/usr/local/bin:/usr/bin:/bin"
BLOCK_TIMEOUT_SECONDS = 600
FLOAT_ABSOLUTE = 1e-6
FLOAT_RELATIVE = 1e-3
# Masked on both sides before comparing: what differs from run to run.
MASKS = [
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
     "<id>"),
    (re.compile(r"\bdns_[A-Za-z0-9_-]+"), "<key>"),
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"\b\d+(\.\d+)?\s?(ms|s|min)\b"), "<duration>"),
]
# JSON keys whose values differ from run to run: not compared (their presence is).
UNCOMPARED_KEY = re.compile(r"^(job_id|request_id|version|timings|elapsed|duration)$|_(at|ms|seconds)$")
VOLATILE_ENV = {"PWD", "OLDPWD", "SHLVL", "_", "README_TEST_ENV_OUT"}


class Block:
    def __init__(self, path, line, language, text, marker):
        self.path = path          # as given (relative to the checkout)
        self.line = line          # 1-based line of the opening fence
        self.language = language
        self.text = text
        self.marker = marker      # "run", "output", "skip" or None
        self.reason = ""

    def where(self):
        return f"{self.path}:{self.line}"


def parse(path, text):
    """The fenced blocks of a Markdown text, and the marker problems found (strings)."""
    blocks, problems = [], []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, language = opening.group(2), opening.group(3).lower()
        body = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence[0] * len(fence)):
            body.append(lines[j])
            j += 1
        block = Block(path, i + 1, language, "\n".join(body) + "\n", None)
        previous = lines[i - 1] if i > 0 else ""
        marker = MARKER.match(previous)
        if marker:
            kind = marker.group(1)
            if kind in ("run", "output"):
                block.marker = kind
            elif kind.startswith("skip:") and kind[5:].strip():
                block.marker, block.reason = "skip", kind[5:].strip()
            else:
                problems.append(f"{block.where()}: malformed marker {previous.strip()!r} "
                                "(run, output, or skip: <reason>)")
        elif "readme-test" in previous:
            problems.append(f"{block.where()}: a readme-test comment that is not a marker: "
                            f"{previous.strip()!r}")
        if block.marker is None and language in SHELL_LANGUAGES:
            problems.append(f"{block.where()}: a ```{language} block without a readme-test "
                            "marker on the line before it (run, output, or skip: <reason>)")
        if block.marker == "run" and language not in RUNNABLE_LANGUAGES:
            problems.append(f"{block.where()}: 'run' on a ```{language or 'plain'} block "
                            f"(runnable: {', '.join(sorted(RUNNABLE_LANGUAGES))})")
        blocks.append(block)
        i = j + 1
    runs_seen = False
    for block in blocks:
        if block.marker == "run":
            runs_seen = True
        if block.marker == "output" and not runs_seen:
            problems.append(f"{block.where()}: an output block with no run block before it")
    return blocks, problems


# ---- comparing output ----------------------------------------------------------------------

def mask(text):
    for pattern, placeholder in MASKS:
        text = pattern.sub(placeholder, text)
    return text


def is_float_token(token):
    try:
        float(token)
    except ValueError:
        return False
    return any(c in token for c in ".eE") and not token.lower() in ("inf", "nan")


def floats_agree(actual, quoted):
    return abs(actual - quoted) <= FLOAT_ABSOLUTE + FLOAT_RELATIVE * abs(quoted)


def compare_json(actual, quoted, where="$"):
    """Differences between two parsed JSON values, as strings (empty when they agree)."""
    if isinstance(quoted, dict):
        if not isinstance(actual, dict):
            return [f"{where}: an object is quoted, {type(actual).__name__} returned"]
        problems = []
        if set(actual) != set(quoted):
            problems.append(f"{where}: keys {sorted(actual)} returned, {sorted(quoted)} quoted")
        for key in sorted(set(actual) & set(quoted)):
            if UNCOMPARED_KEY.search(key):
                continue
            problems += compare_json(actual[key], quoted[key], f"{where}.{key}")
        return problems
    if isinstance(quoted, list):
        if not isinstance(actual, list) or len(actual) != len(quoted):
            size = len(actual) if isinstance(actual, list) else type(actual).__name__
            return [f"{where}: {len(quoted)} items quoted, {size} returned"]
        problems = []
        for index, (a, q) in enumerate(zip(actual, quoted)):
            problems += compare_json(a, q, f"{where}[{index}]")
        return problems
    if isinstance(quoted, bool) or quoted is None or isinstance(quoted, str):
        same = (mask(actual) == mask(quoted)) if isinstance(actual, str) and isinstance(quoted, str) \
            else actual == quoted and type(actual) == type(quoted)
        return [] if same else [f"{where}: {actual!r} returned, {quoted!r} quoted"]
    if isinstance(quoted, int) and isinstance(actual, int) and not isinstance(actual, bool):
        return [] if actual == quoted else [f"{where}: {actual} returned, {quoted} quoted"]
    if isinstance(quoted, (int, float)) and isinstance(actual, (int, float)) \
            and not isinstance(actual, bool):
        if floats_agree(float(actual), float(quoted)):
            return []
        return [f"{where}: {actual} returned, {quoted} quoted (tolerance "
                f"{FLOAT_ABSOLUTE} + {FLOAT_RELATIVE} x |quoted|)"]
    return [f"{where}: {actual!r} returned, {quoted!r} quoted"]


def parse_json(text):
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def compare_text(actual, quoted):
    """Differences between printed output and the README's quote of it (empty when they agree)."""
    is_json, quoted_json = parse_json(quoted)
    if is_json and quoted.strip():
        ok, actual_json = parse_json(actual)
        if not ok:
            return ["JSON is quoted, but what was printed is not JSON"]
        return compare_json(actual_json, quoted_json)
    actual_lines = [line for line in actual.rstrip("\n").split("\n")] if actual.strip() else []
    quoted_lines = [line for line in quoted.rstrip("\n").split("\n")] if quoted.strip() else []
    if len(actual_lines) != len(quoted_lines):
        return [f"{len(quoted_lines)} lines quoted, {len(actual_lines)} printed"]
    problems = []
    for number, (a, q) in enumerate(zip(actual_lines, quoted_lines), 1):
        a_tokens, q_tokens = mask(a).split(), mask(q).split()
        if len(a_tokens) != len(q_tokens):
            problems.append(f"line {number}: {len(q_tokens)} fields quoted, {len(a_tokens)} "
                            f"printed: {a!r}")
            continue
        for at, qt in zip(a_tokens, q_tokens):
            if is_float_token(qt) and is_float_token(at):
                if not floats_agree(float(at), float(qt)):
                    problems.append(f"line {number}: {at} printed, {qt} quoted (tolerance "
                                    f"{FLOAT_ABSOLUTE} + {FLOAT_RELATIVE} x |quoted|)")
            elif at != qt:
                problems.append(f"line {number}: {at!r} printed, {qt!r} quoted in {q.strip()!r}")
    return problems


def transcript(text):
    """(command, quoted output) pairs of an output block written as `$ command` lines, or None
    when the block is plain output."""
    lines = text.rstrip("\n").split("\n")
    if not lines or not lines[0].startswith("$ "):
        return None
    pairs = []
    for line in lines:
        if line.startswith("$ "):
            pairs.append([line[2:], []])
        else:
            pairs[-1][1].append(line)
    return [(command, "\n".join(output) + ("\n" if output else "")) for command, output in pairs]


# ---- running blocks ------------------------------------------------------------------------

def strip_comment(command):
    """A transcript line's command without its trailing `# comment` (quotes respected)."""
    quote = None
    for index, char in enumerate(command):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or command[index - 1].isspace()):
            return command[:index].rstrip()
    return command


class Session:
    """One user's shell session over the READMEs: environment, HOME, files written so far."""

    def __init__(self, url, key, work, extra_env):
        self.url, self.key, self.work = url, key, work
        self.home = os.path.join(work, "home")
        os.makedirs(self.home)
        self.env = {"HOME": self.home, "PATH": DEBIAN_PATH, "LANG": "C.UTF-8",
                    "DNASERVE_URL": url, "DNASERVE_API_KEY": key,
                    "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": os.environ.get("TMPDIR", "/tmp")}
        self.env.update(extra_env)
        self.written = {}   # file name -> path of the copy earlier blocks left
        self.count = 0

    def fresh_directory(self):
        self.count += 1
        directory = os.path.join(self.work, f"block-{self.count}")
        os.makedirs(directory)
        for name in os.listdir(ROOT):
            if name != ".git":
                os.symlink(os.path.join(ROOT, name), os.path.join(directory, name))
        for name, source in self.written.items():
            target = os.path.join(directory, name)
            if os.path.lexists(target):
                os.remove(target)
            if os.path.isdir(source):
                shutil.copytree(source, target, symlinks=True)
            else:
                shutil.copy2(source, target)
        return directory

    def remember_written(self, directory):
        for name in os.listdir(directory):
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                self.written[name] = path

    def with_test_service(self, text):
        """The block with any assignment of DNASERVE_URL / DNASERVE_API_KEY given the test
        service's value (the README's is a placeholder)."""
        for name, value in (("DNASERVE_URL", self.url), ("DNASERVE_API_KEY", self.key)):
            text = re.sub(rf"\b{name}=(\"[^\"]*\"|'[^']*'|\S+)", f"{name}='{value}'", text)
        return text

    def run_shell(self, text, directory, keep_env=True):
        state = os.path.join(self.work, f"env-{self.count}")
        script = ("trap 'env -0 > \"$README_TEST_ENV_OUT\"' EXIT\nset -e -o pipefail\n"
                  + self.with_test_service(text))
        env = dict(self.env, README_TEST_ENV_OUT=state)
        result = subprocess.run(["/bin/bash", "-c", script], cwd=directory, env=env,
                                capture_output=True, text=True, timeout=BLOCK_TIMEOUT_SECONDS)
        if keep_env and os.path.exists(state):
            with open(state, encoding="utf-8", errors="replace") as f:
                pairs = [entry.split("=", 1) for entry in f.read().split("\0") if "=" in entry]
            self.env = {k: v for k, v in pairs if k not in VOLATILE_ENV and
                        not k.startswith("BASH_FUNC_")}
        return result

    def run_python(self, text, directory):
        path = os.path.join(directory, "readme_block.py")
        with open(path, "w") as f:
            f.write(text)
        try:
            return subprocess.run(["python3", path], cwd=directory, env=self.env,
                                  capture_output=True, text=True, timeout=BLOCK_TIMEOUT_SECONDS)
        finally:
            os.remove(path)


def failure(block, what, result=None):
    lines = [f"FAIL {block.where()}: {what}"]
    if result is not None:
        lines.append(f"  exit status {result.returncode}")
        if result.stdout.strip():
            lines.append("  stdout (last 2000 characters):\n" + indent(result.stdout[-2000:]))
        lines.append("  stderr (last 3000 characters):\n" + indent(result.stderr[-3000:] or "(empty)"))
    return "\n".join(lines)


def indent(text):
    return "\n".join("    " + line for line in text.rstrip("\n").split("\n"))


def run_blocks(blocks, session, report):
    """Runs every run block and compares every output block; failures as strings."""
    failures = []
    last_run = None   # (block, directory, result) of the file's latest run block
    for block in blocks:
        if block.marker == "skip":
            report(f"skip {block.where()}: {block.reason}")
            continue
        if block.marker == "run":
            directory = session.fresh_directory()
            if block.language == "console":
                # A terminal transcript: its `$ ` commands run, the lines after each compared.
                failures += run_console(block, directory, session, report)
                session.remember_written(directory)
                last_run = (block, directory, None)
                continue
            try:
                if block.language == "python":
                    result = session.run_python(block.text, directory)
                else:
                    result = session.run_shell(block.text, directory)
            except subprocess.TimeoutExpired as timeout:
                failures.append(f"FAIL {block.where()}: still running after "
                                f"{BLOCK_TIMEOUT_SECONDS} s\n  stderr:\n"
                                + indent(str(timeout.stderr or "")[-3000:]))
                last_run = None
                continue
            session.remember_written(directory)
            last_run = (block, directory, result)
            if result.returncode != 0:
                failures.append(failure(block, "the block failed", result))
                last_run = None
            else:
                report(f"ran  {block.where()}")
            continue
        if block.marker == "output":
            if last_run is None:
                failures.append(f"FAIL {block.where()}: its run block did not run or failed")
                continue
            failures += compare_output(block, last_run, session, report)
    return failures


def run_console(block, directory, session, report):
    pairs = transcript(block.text)
    if pairs is None:
        return [f"FAIL {block.where()}: a console block to run must show its commands as `$ ` lines"]
    failures = []
    for command, quoted in pairs:
        try:
            ran = session.run_shell(strip_comment(command), directory)
        except subprocess.TimeoutExpired:
            failures.append(f"FAIL {block.where()}: `{command}` still running after "
                            f"{BLOCK_TIMEOUT_SECONDS} s")
            break
        if ran.returncode != 0:
            failures.append(failure(block, f"`{command}` failed", ran))
            break
        problems = compare_text(ran.stdout, quoted)
        if problems:
            failures.append(f"FAIL {block.where()}: `{command}` printed other than shown:\n"
                            + indent("\n".join(problems)) + "\n  printed:\n" + indent(ran.stdout))
    if not failures:
        report(f"ran  {block.where()} ({len(pairs)} commands, output compared)")
    return failures


def compare_output(block, last_run, session, report):
    run_block, directory, result = last_run
    pairs = transcript(block.text)
    if pairs is None and result is None:
        return [f"FAIL {block.where()}: plain output after a console block (which shows its own)"]
    if pairs is None:
        problems = compare_text(result.stdout, block.text)
        if problems:
            return [f"FAIL {block.where()}: the output of {run_block.where()} differs:\n"
                    + indent("\n".join(problems))]
        report(f"same {block.where()}")
        return []
    failures = []
    for command, quoted in pairs:
        ran = session.run_shell(strip_comment(command), directory, keep_env=False)
        if ran.returncode != 0:
            failures.append(failure(block, f"`{command}` failed", ran))
            continue
        problems = compare_text(ran.stdout, quoted)
        if problems:
            failures.append(f"FAIL {block.where()}: `{command}` printed other than quoted:\n"
                            + indent("\n".join(problems)) + "\n  printed:\n" + indent(ran.stdout))
    if not failures:
        report(f"same {block.where()} ({len(pairs)} commands)")
    return failures


def load(paths):
    every, problems = [], []
    for path in paths:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            blocks, found = parse(path, f.read())
        every.append(blocks)
        problems += found
    return every, problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["check", "run"])
    parser.add_argument("files", nargs="+", help="Markdown files, relative to the checkout")
    parser.add_argument("--url", help="the test service (run)")
    parser.add_argument("--key", help="an API key of the test service (run)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="one more variable for every block (e.g. DNASERVE_DATA_CACHE)")
    args = parser.parse_args(argv)
    files, problems = load(args.files)
    for problem in problems:
        print(f"FAIL {problem}")
    if problems:
        return 1
    if args.mode == "check":
        counts = {}
        for blocks in files:
            for block in blocks:
                counts[block.marker or "unmarked"] = counts.get(block.marker or "unmarked", 0) + 1
        print("markers: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        return 0
    if not args.url or not args.key:
        parser.error("run needs --url and --key")
    extra = dict(entry.split("=", 1) for entry in args.env)
    work = tempfile.mkdtemp(prefix="dnaserve-readme-")
    failures = []
    try:
        session = Session(args.url, args.key, work, extra)
        for blocks in files:
            failures += run_blocks(blocks, session, lambda line: print(line, flush=True))
    finally:
        if not os.environ.get("DNASERVE_KEEP_TEST_DIRS"):
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}")
    for entry in failures:
        print(entry)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
