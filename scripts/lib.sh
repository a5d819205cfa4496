# Shared by the scripts in this directory. Source it; it sets ROOT and BUILD_DIR.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${DNASERVE_BUILD_DIR:-$ROOT/build}"
# Debian's torch for Python lives in the system interpreter, not in a pyenv one on PATH.
SYSTEM_PYTHON=/usr/bin/python3

say() { printf '\033[1m[dnaserve]\033[0m %s\n' "$*" >&2; }

# scripts/ is one Python distribution (scripts/pyproject.toml: training, dnaserve_models,
# dnaserve_tools and their entry points), installed editable into a venv over Debian's python3
# (which has torch), offline: Debian's setuptools builds it and pip fetches nothing. Editable, so
# edits to the sources take effect at once; the venv is remade when pyproject.toml changes.
PYTHON_ENV="${DNASERVE_PYTHON_ENV:-$BUILD_DIR/python-env}"
python_env() {
  local want stamp="$PYTHON_ENV/.dnaserve-scripts"
  want="$(sha256sum "$ROOT/scripts/pyproject.toml" | cut -d' ' -f1) $ROOT"
  [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && return 0
  mkdir -p "$(dirname "$PYTHON_ENV")"
  (
    flock 9  # ctest -j2 may ask twice at once
    [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && exit 0
    say "installing scripts/ (pyproject.toml) into $PYTHON_ENV"
    rm -rf "$PYTHON_ENV"
    "$SYSTEM_PYTHON" -m venv --system-site-packages "$PYTHON_ENV"
    "$PYTHON_ENV/bin/pip" install -q --no-build-isolation --no-index -e "$ROOT/scripts" >&2
    echo "$want" > "$stamp"
  ) 9>"$PYTHON_ENV.lock"
}

free_port() {
  "$SYSTEM_PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
