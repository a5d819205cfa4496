"""A package directory for the variant background writers' tests (test_variant_background.py,
test_scorer_backgrounds.py): a manifest and a model card with the sections the background's
section goes between, and what the writer left in them."""

import json
import os


def write_package(directory: str, package_id: str, task: str) -> dict:
    manifest = {"id": package_id, "task": task, "model_card": "MODEL_CARD.md"}
    with open(os.path.join(directory, "manifest.json"), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle)
    with open(os.path.join(directory, "MODEL_CARD.md"), "w", encoding="utf-8") as handle:
        handle.write("# card\n\n## Metrics\n\nm\n\n## Figures\n\nf\n")
    return manifest


def written_entry(directory: str) -> dict:
    """The manifest's variant_background entry the writer left."""
    with open(os.path.join(directory, "manifest.json"), encoding="utf-8") as handle:
        return json.load(handle)["variant_background"]


def card_section(test, directory: str, title: str) -> str:
    """The card's text, after checking (with `test`'s assertions) that section `title` stands
    between Metrics and Figures."""
    with open(os.path.join(directory, "MODEL_CARD.md"), encoding="utf-8") as handle:
        card = handle.read()
    section = card.index("## " + title)
    test.assertLess(card.index("## Metrics"), section)
    test.assertLess(section, card.index("## Figures"))
    return card
