"""The expression scorer of `dnaserve ism` and Client.ism without a service: the body each sends
(captured where it would leave), and the usage errors caught before anything is sent (the URL
is a port nothing listens on, so a check that was not local would end in exit 4, unreachable,
instead of the usage exit 2)."""

import pytest

from dnaserve_client import Client
from dnaserve_client.cli import EXIT_USAGE, main

NOWHERE = "http://127.0.0.1:9"

ANSWER = {"data": {"task": "ism", "scorer": "expression", "positions": [
    {"position": 5, "ref": "A", "alt": ["C", "G", "T"], "delta": [0.012, -0.5, 0.0]}]},
    "meta": {"task": "ism"}}


@pytest.fixture
def sent(monkeypatch):
    """Every (path, body) Client._post_json would send, answered with ANSWER."""
    bodies = []

    def capture(self, path, body, headers=None):
        bodies.append((path, body))
        return ANSWER, None

    monkeypatch.setattr(Client, "_post_json", capture)
    return bodies


def test_sdk_sends_the_expression_scorer_with_its_context_and_gene(sent):
    client = Client(NOWHERE, "key")
    result = client.ism((5753601, 5753610), interval="chr20:5,748,001-5,759,000",
                        scorer="expression", options={"contexts": ["E066"], "gene": "ADRA1D"})
    assert sent == [("/v1/ism", {
        "window": {"start": 5753601, "end": 5753610},
        "scorers": {"expression": {"contexts": ["E066"], "gene": "ADRA1D"}},
        "interval": {"region": "chr20:5,748,001-5,759,000"}})]
    assert result.data["scorer"] == "expression"


def test_cli_writes_the_expression_table_from_the_body_it_sent(sent, tmp_path, monkeypatch):
    monkeypatch.setenv("DNASERVE_API_KEY", "key")
    out = tmp_path / "ism.tsv"
    code = main(["--url", NOWHERE, "ism", "--region", "chr20:1-20000", "--window", "5-5",
                 "--scorer", "expression", "--context", "lung", "--gene", "ENSG00000171873",
                 "-o", str(out)])
    assert code in (0, None)
    assert sent[0][1]["scorers"] == {"expression": {"contexts": ["lung"],
                                                    "gene": "ENSG00000171873"}}
    assert out.read_text().splitlines() == ["position\tref\tA\tC\tG\tT",
                                            "5\tA\t\t0.012\t-0.5\t0.0"]


def test_cli_expression_by_sequence_sends_no_gene(sent, tmp_path, monkeypatch):
    monkeypatch.setenv("DNASERVE_API_KEY", "key")
    main(["--url", NOWHERE, "ism", "--sequence", "ACGT" * 10, "--window", "5-5",
          "--scorer", "expression", "--context", "E066", "-o", str(tmp_path / "out.tsv")])
    assert sent[0][1]["scorers"] == {"expression": {"contexts": ["E066"]}}


@pytest.mark.parametrize("argv", [
    # expression without its context
    ["ism", "--region", "chr20:1-20000", "--window", "5-5", "--scorer", "expression"],
    # a gene with a sequence (the sequence is the expression window itself)
    ["ism", "--sequence", "ACGT", "--window", "1-4", "--scorer", "expression", "--context",
     "E066", "--gene", "ADRA1D"],
    # expression's options with another scorer
    ["ism", "--sequence", "ACGT", "--window", "1-4", "--scorer", "chromatin", "--context",
     "E066"],
    ["ism", "--sequence", "ACGT", "--window", "1-4", "--gene", "ADRA1D"],
    # another scorer's option with expression
    ["ism", "--region", "chr20:1-20000", "--window", "5-5", "--scorer", "expression",
     "--context", "E066", "--distance", "5"],
])
def test_expression_usage_errors_are_local(argv):
    with pytest.raises(SystemExit) as exit_info:
        code = main(["--url", NOWHERE] + argv)
        raise SystemExit(code)
    assert exit_info.value.code == EXIT_USAGE
