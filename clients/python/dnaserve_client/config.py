"""Where the command line finds the service URL and the API key.

`DNASERVE_URL` / `DNASERVE_API_KEY` win; otherwise the JSON config file
`$DNASERVE_CONFIG` (default `~/.config/dnaserve/config.json`): `{"url": ..., "api_key": ...}`.
A config file holding a key must not be readable by group or others (mode 600), as ssh insists
for its keys: a key readable by other users is refused rather than used.
"""

import json
import os
import stat
from dataclasses import dataclass
from typing import Optional


class ConfigError(Exception):
    pass


@dataclass
class Settings:
    url: str
    api_key: Optional[str]
    source: str  # where they came from, for messages (never the key itself)


def default_config_path() -> str:
    explicit = os.environ.get("DNASERVE_CONFIG")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "dnaserve", "config.json")


def load_settings(url_flag: Optional[str] = None) -> Settings:
    path = default_config_path()
    file_values = {}
    if os.path.exists(path):
        file_values = _read_config(path)
    url = url_flag or os.environ.get("DNASERVE_URL") or file_values.get("url")
    key = os.environ.get("DNASERVE_API_KEY") or file_values.get("api_key")
    if not url:
        raise ConfigError("no service URL: set DNASERVE_URL (e.g. http://127.0.0.1:8080), pass "
                          f"--url, or put \"url\" in {path}")
    source = "environment" if os.environ.get("DNASERVE_API_KEY") else path
    return Settings(url=url, api_key=key or None, source=source)


def _read_config(path: str) -> dict:
    try:
        info = os.stat(path)
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}")
    try:
        with open(path, encoding="utf-8") as handle:
            values = json.load(handle)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path} is not a readable JSON object: {e}")
    if not isinstance(values, dict):
        raise ConfigError(f"{path} must hold a JSON object {{\"url\": ..., \"api_key\": ...}}")
    if values.get("api_key") and info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"{path} holds an API key but other users can read it "
                          f"(mode {stat.S_IMODE(info.st_mode):03o}); run: chmod 600 {path}")
    return values
