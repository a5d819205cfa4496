"""Python helpers behind the dnaserve model scripts (exporters, converters, benchmarks).

Run the scripts with Debian's interpreter, /usr/bin/python3, which has python3-torch.
"""
