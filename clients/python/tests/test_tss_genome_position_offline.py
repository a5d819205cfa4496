"""Expression by interval with the TSS named on the contig (tss_genome_position): the SDK's
request body and the CLI's rules that need no service (each CLI run points at a port nothing
listens on, so a check that was not local would end in exit 4 instead of the usage exit 2)."""

import pytest

from dnaserve_client import Client
from dnaserve_client.cli import EXIT_USAGE, main

NOWHERE = "http://127.0.0.1:9"  # discard port: nothing listens
REGION = "chr20:5,750,001-5,760,000"


def run_cli(argv, capsys):
    code = main(["--url", NOWHERE] + argv)
    return code, capsys.readouterr().err


def test_the_body_carries_tss_genome_position_instead_of_a_centre_tss_index():
    body = Client.predict_body("expression", interval=REGION, options={"description": "liver"},
                               tss_genome_position=5750101)
    assert body["tss_genome_position"] == 5750101
    assert "tss_index" not in body  # not the interval's centre as without it
    assert body["interval"] == {"region": REGION}


def test_tss_genome_position_needs_an_interval_and_expression():
    with pytest.raises(ValueError, match="expression with an interval"):
        Client.predict_body("expression", "ACGT" * 3000, tss_genome_position=100)
    with pytest.raises(ValueError, match="expression with an interval"):
        Client.predict_body("promoter", interval=REGION, tss_genome_position=5750101)
    with pytest.raises(ValueError, match="exactly one of tss_index"):
        Client.predict_body("expression", interval=REGION, tss_index=5000,
                            tss_genome_position=5750101)


def test_the_cli_refuses_tss_genome_position_without_a_region(tmp_path, capsys):
    path = tmp_path / "in.fa"
    path.write_text(">r\n" + "ACGT" * 3000 + "\n")
    code, err = run_cli(["predict", "expression", str(path), "--description", "liver",
                         "--tss-genome-position", "100"], capsys)
    assert code == EXIT_USAGE
    assert "--tss-index" in err


def test_the_cli_refuses_both_tss_options_and_other_tasks(capsys):
    code, err = run_cli(["predict", "expression", "--region", REGION, "--description", "liver",
                         "--tss-index", "5000", "--tss-genome-position", "5750101"], capsys)
    assert code == EXIT_USAGE
    assert "one of --tss-index and --tss-genome-position" in err
    code, err = run_cli(["predict", "promoter", "--region", REGION,
                         "--tss-genome-position", "5750101"], capsys)
    assert code == EXIT_USAGE
    assert "expression only" in err
