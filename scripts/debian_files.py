#!/usr/bin/env python3
"""dnaserve_tools/debian_files.py (entry point `dnaserve-debian-files`) at its old path,
for the callers that run it by file name. Running a file puts its directory, scripts/, first on
sys.path, so the package imports as it is; importing this file gives the module's main()."""
from dnaserve_tools.debian_files import main

if __name__ == "__main__":
    raise SystemExit(main())
