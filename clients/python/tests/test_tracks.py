"""Merging of many records' text tracks (no service needed)."""

from dnaserve_client.fasta import read_fasta
from dnaserve_client.tracks import merge

GFF_A = ("##gff-version 3\n##sequence-region a 1 100\n"
         "a\tm\tgene\t1\t50\t.\t+\t.\tID=gene1\na\tm\tmRNA\t1\t50\t.\t+\t.\tID=tx1;Parent=gene1\n")
GFF_B = ("##gff-version 3\n##sequence-region b 1 80\n"
         "b\tm\tgene\t5\t60\t.\t-\t.\tID=gene1\nb\tm\tmRNA\t5\t60\t.\t-\t.\tID=tx1;Parent=gene1\n")


def test_gff3_one_header_regions_first_and_unique_ids():
    merged = merge("gff3", [GFF_A, GFF_B]).splitlines()
    assert merged[0] == "##gff-version 3"
    assert merged[1:3] == ["##sequence-region a 1 100", "##sequence-region b 1 80"]
    assert sum(1 for line in merged if line.startswith("##gff-version")) == 1
    ids = [line.split("\t")[8] for line in merged if not line.startswith("#")]
    assert ids == ["ID=gene1", "ID=tx1;Parent=gene1", "ID=b.gene1", "ID=b.tx1;Parent=b.gene1"]


def test_bedgraph_one_track_line_per_track():
    a = "track type=bedGraph name=\"dev\"\na\t0\t10\t1.0\ntrack type=bedGraph name=\"hk\"\na\t0\t10\t2.0\n"
    b = "track type=bedGraph name=\"dev\"\nb\t0\t10\t3.0\ntrack type=bedGraph name=\"hk\"\nb\t0\t10\t4.0\n"
    merged = merge("bedgraph", [a, b]).splitlines()
    assert merged == ["track type=bedGraph name=\"dev\"", "a\t0\t10\t1.0", "b\t0\t10\t3.0",
                      "track type=bedGraph name=\"hk\"", "a\t0\t10\t2.0", "b\t0\t10\t4.0"]


def test_bed_rows_concatenated_in_order():
    assert merge("bed", ["a\t0\t5\tx\n", "", "b\t1\t2\ty\n"]) == "a\t0\t5\tx\nb\t1\t2\ty\n"


def test_fasta_gzip_and_names(tmp_path):
    import gzip
    path = tmp_path / "x.fa.gz"
    with gzip.open(path, "wt") as handle:
        handle.write(">chr20:1-8 first record\nACGT\nACGT\n>second\nNNNN\n")
    records = list(read_fasta(str(path)))
    assert [(r.name, r.description, r.sequence) for r in records] == [
        ("chr20:1-8", "first record", "ACGTACGT"), ("second", "", "NNNN")]
