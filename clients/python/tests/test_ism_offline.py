"""`dnaserve ism` and Client.ism without a service: the table written from an answer, and the
usage errors caught before anything is sent (the URL is a port nothing listens on, so a check
that was not local would end in exit 4, unreachable, instead of the usage exit 2)."""

import pytest

from dnaserve_client import Client
from dnaserve_client.cli import EXIT_USAGE, main
from dnaserve_client.ism_cli import matrix_table

NOWHERE = "http://127.0.0.1:9"


def test_table_has_one_row_per_position_and_an_empty_ref_cell():
    data = {"positions": [
        {"position": 10, "ref": "C", "alt": ["A", "G", "T"], "delta": [0.0, -0.0123, 0.5]},
        {"position": 11, "ref": "T", "alt": ["A", "C", "G"], "delta": [1.0, None, 0.25]}]}
    assert matrix_table(data).splitlines() == [
        "position\tref\tA\tC\tG\tT",
        "10\tC\t0.0\t\t-0.0123\t0.5",
        "11\tT\t1.0\t\t0.25\t",
    ]


@pytest.mark.parametrize("argv", [
    ["ism", "--sequence", "ACGT", "--window", "1to4"],
    ["ism", "--sequence", "ACGT", "--window", "1-4", "--scorer", "chromatin", "--distance", "5"],
    ["ism", "--sequence", "ACGT", "--window", "1-4", "--top", "3"],
    ["ism", "--window", "1-4"],
])
def test_usage_errors_are_local(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        code = main(["--url", NOWHERE] + argv)
        raise SystemExit(code)
    assert exit_info.value.code == EXIT_USAGE


def test_sdk_needs_exactly_one_context():
    client = Client(NOWHERE, "key")
    with pytest.raises(ValueError):
        client.ism((1, 4))
    with pytest.raises(ValueError):
        client.ism((1, 4), sequence="ACGT", interval="chr20:1-4")
