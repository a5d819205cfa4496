#!/usr/bin/env python3
"""dnaserve_tools/make_models.py (entry point `dnaserve-make-models`) at its old path,
for the callers that run it by file name. Running a file puts its directory, scripts/, first on
sys.path, so the package imports as it is; importing this file gives the module's main()."""
from dnaserve_tools.make_models import main

if __name__ == "__main__":
    raise SystemExit(main())
