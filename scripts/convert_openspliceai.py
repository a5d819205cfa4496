#!/usr/bin/env python3
"""dnaserve_tools/convert_openspliceai.py (entry point `dnaserve-convert-openspliceai`)
at its old path, for the callers that run it by file name. Running a file puts its directory,
scripts/, first on sys.path, so the package imports as it is; importing this file gives the
module's main()."""
from dnaserve_tools.convert_openspliceai import main

if __name__ == "__main__":
    raise SystemExit(main())
