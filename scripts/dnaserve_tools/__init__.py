"""dnaserve's tools beside the training code: model packaging and conversion, reference
tokenizers, Debian data files, the bundled test models, the reliability campaign.

Each command line is an entry point of scripts/pyproject.toml (`dnaserve-make-models`, ...).
"""
