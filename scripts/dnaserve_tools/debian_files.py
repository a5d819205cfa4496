"""Single files out of Debian packages, fetched with `apt-get download` into the data cache.

The variant workflow's defaults (catalogue sources, chr20 sequence) and its tests' real VCFs come
from Debian's archive. Nothing fetched here is committed. Layout (shared with
scripts/dnaserve_tools/chr20_fasta.py): <cache>/<package>/<package>_*.deb and <cache>/<package>/unpacked/<path>.
Concurrent callers (ctest -j2) serialise on <cache>/<package>.lock.

Command line: debian_files.py PACKAGE PATH_IN_PACKAGE  -> prints the local path (exit 2 when
the package cannot be downloaded, with the reason on stderr).
"""

import fcntl
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA_CACHE = os.path.normpath(os.environ.get("DNASERVE_DATA_CACHE",
                                             os.path.join(ROOT, "build", "data-cache")))


class FetchError(Exception):
    pass


def _apt_download(package: str, directory: str) -> None:
    subprocess.run(["apt-get", "download", package], cwd=directory, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def package_deb(package: str, cache: str = DATA_CACHE) -> str:
    """Path of the package's .deb in the cache, downloading it first when absent."""
    directory = os.path.join(cache, package)
    os.makedirs(directory, exist_ok=True)
    debs = glob.glob(os.path.join(directory, f"{package}_*.deb"))
    if not debs:
        try:
            _apt_download(package, directory)
        except (OSError, subprocess.CalledProcessError):
            # A machine that never ran `apt-get update` has no package lists yet.
            subprocess.run(["apt-get", "update", "-qq"], check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                _apt_download(package, directory)
            except (OSError, subprocess.CalledProcessError) as e:
                detail = (getattr(e, "stderr", b"") or b"").decode(errors="replace").strip()
                raise FetchError(f"`apt-get download {package}` failed: {detail or e}") from e
        debs = glob.glob(os.path.join(directory, f"{package}_*.deb"))
    if len(debs) != 1:
        raise FetchError(f"expected one {package} .deb in {directory}, found {len(debs)}")
    return debs[0]


def package_version(package: str, cache: str = DATA_CACHE) -> str:
    return subprocess.run(["dpkg-deb", "-f", package_deb(package, cache), "Version"], check=True,
                          capture_output=True, text=True).stdout.strip()


def package_file(package: str, member: str, cache: str = DATA_CACHE) -> str:
    """Local path of `member` (e.g. usr/share/doc/...) from `package`, extracted once."""
    member = member.lstrip("/").removeprefix("./")
    unpacked = os.path.join(cache, package, "unpacked")
    path = os.path.join(unpacked, member)
    if os.path.isfile(path):
        return path
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, f"{package}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isfile(path):
            return path
        deb = package_deb(package, cache)
        os.makedirs(unpacked, exist_ok=True)
        tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb], stdout=subprocess.PIPE)
        extract = subprocess.run(["tar", "-x", "-C", unpacked, "./" + member],
                                 stdin=tar.stdout, stderr=subprocess.PIPE)
        tar.stdout.close()
        tar.wait()
        if extract.returncode != 0 or not os.path.isfile(path):
            raise FetchError(f"{member} is not in {os.path.basename(deb)}: "
                             + extract.stderr.decode(errors="replace").strip())
    return path


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 1
    try:
        print(package_file(sys.argv[1], sys.argv[2]))
    except FetchError as e:
        print(f"debian_files: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
