# Shared by the scripts in this directory. Source it; it sets ROOT and BUILD_DIR.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${DNASERVE_BUILD_DIR:-$ROOT/build}"
# Debian's torch for Python lives in the system interpreter, not in a pyenv one on PATH.
SYSTEM_PYTHON=/usr/bin/python3

say() { printf '\033[1m[dnaserve]\033[0m %s\n' "$*" >&2; }

free_port() {
  "$SYSTEM_PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
