#!/usr/bin/env python3
"""dnaserve_tools/openspliceai_reference.py (entry point `dnaserve-openspliceai-reference`)
at its old path, for the callers that run it by file name. Running a file puts its directory,
scripts/, first on sys.path, so the package imports as it is; importing this file gives the
module's main()."""
from dnaserve_tools.openspliceai_reference import main

if __name__ == "__main__":
    raise SystemExit(main())
