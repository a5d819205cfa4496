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


# ---- placing records on their contigs ------------------------------------------------------
from dnaserve_client.tracks import Placement, mark_cut_transcripts, parse_region, place  # noqa: E402


def test_region_labels_in_every_form():
    expected = Placement("chr20", 5_750_001, 5_760_000)
    for label in ("chr20:5,750,001-5,760,000", "chr20:5750001-5760000", "chr20_5750001-5760000"):
        assert parse_region(label) == expected, label
    assert parse_region("chrUn_gl000220:1-100") == Placement("chrUn_gl000220", 1, 100)
    for not_a_region in ("record1", "chr1:0-5", "chr1:5-4", "chr1:1-", "p1", ":1-5"):
        assert parse_region(not_a_region) is None, not_a_region
    assert expected.offset == 5_750_000 and expected.length == 10_000
    assert expected.label == "chr20:5750001-5760000"


def test_place_bed_bedgraph_and_bed12():
    where = Placement("chr20", 1001, 2000)
    assert place("bed", "r\t0\t5\tpromoter\t685\t.\n", where) == "chr20\t1000\t1005\tpromoter\t685\t.\n"
    bedgraph = 'track type=bedGraph name="p"\nr\t0\t10\t0.5\n'
    assert place("bedgraph", bedgraph, where) == 'track type=bedGraph name="p"\nchr20\t1000\t1010\t0.5\n'
    bed12 = "r\t10\t90\ttx_1\t500\t+\t20\t80\t0\t2\t10,20,\t0,60,\n"
    assert place("bed", bed12, where) == \
        "chr20\t1010\t1090\ttx_1\t500\t+\t1020\t1080\t0\t2\t10,20,\t0,60,\n"


SITE = ("##gff-version 3\n##sequence-region {name} 1 1000\n"
        "{name}\tm\tfive_prime_cis_splice_site\t{pos}\t{pos}\t0.9\t+\t.\tID=site_1;Name=donor\n")


def test_records_of_one_contig_merge_into_one_sequence_region():
    # Two records cut from chr20 and named by their regions (the colon form with commas and the
    # viewer's underscore form): one ##sequence-region chr20 spanning both, features shifted,
    # and the second record's IDs prefixed with its record name, not the shared contig.
    names = ["chr20:5,750,001-5,751,000", "chr20_5760001-5761000"]
    texts = [SITE.format(name="chr20%3A5%2C750%2C001-5%2C751%2C000", pos=10),
             SITE.format(name=names[1], pos=20)]
    placed = [place("gff3", text, parse_region(name)) for text, name in zip(texts, names)]
    merged = merge("gff3", placed, names=names).splitlines()
    assert [l for l in merged if l.startswith("##sequence-region")] == \
        ["##sequence-region chr20 5750001 5761000"]
    rows = [l.split("\t") for l in merged if l and not l.startswith("#")]
    assert [(r[0], r[3], r[4]) for r in rows] == [("chr20", "5750010", "5750010"),
                                                   ("chr20", "5760020", "5760020")]
    assert [r[8].split(";")[0] for r in rows] == ["ID=site_1", "ID=chr20_5760001-5761000.site_1"]


def test_records_of_different_contigs_keep_one_region_each():
    a = place("gff3", SITE.format(name="a", pos=5), Placement("chr1", 101, 1100))
    b = place("gff3", SITE.format(name="b", pos=5), Placement("chr2", 1, 1000))
    c = place("gff3", SITE.format(name="c", pos=5), Placement("chr1", 5001, 6000))
    merged = merge("gff3", [a, b, c], names=["a", "b", "c"]).splitlines()
    assert [l for l in merged if l.startswith("##sequence-region")] == \
        ["##sequence-region chr1 101 6000", "##sequence-region chr2 1 1000"]


ANNOTATION = (
    "##gff-version 3\n##sequence-region r 1 40000\n"
    "r\tm\tgene\t1\t34499\t0.5\t+\t.\tID=gene_1\n"
    "r\tm\tmRNA\t1\t34499\t0.5\t+\t.\tID=tx_1;Parent=gene_1;tss_position=0;polya_position=34498\n"
    "r\tm\texon\t1\t300\t.\t+\t.\tID=tx_1.exon_1;Parent=tx_1\n"
    "r\tm\tgene\t35001\t40000\t0.5\t-\t.\tID=gene_2\n"
    "r\tm\tlnc_RNA\t35001\t40000\t0.5\t-\t.\tID=tx_2;Parent=gene_2;tss_position=39999;polya_position=35000\n"
    "r\tm\tgene\t2001\t3000\t0.5\t+\t.\tID=gene_3\n"
    "r\tm\tmRNA\t2001\t3000\t0.5\t+\t.\tID=tx_3;Parent=gene_3;tss_position=2000;polya_position=2999\n")


def test_transcripts_cut_at_a_record_edge_are_marked_partial():
    rows = [l.split("\t") for l in mark_cut_transcripts(ANNOTATION).splitlines()
            if l and not l.startswith("#")]
    attributes = {r[8].split(";")[0]: r[8] for r in rows}
    assert attributes["ID=gene_1"].endswith(";start_range=.,1;partial=true")
    assert attributes["ID=tx_1"].endswith(";start_range=.,1;partial=true")
    assert "partial" not in attributes["ID=tx_1.exon_1"]  # the model is marked, not its parts
    assert attributes["ID=tx_2"].endswith(";end_range=40000,.;partial=true")
    assert "partial" not in attributes["ID=tx_3"] and "partial" not in attributes["ID=gene_3"]
    # Shifted records are judged by their own (shifted) sequence-region.
    shifted = place("gff3", ANNOTATION, Placement("chr20", 31_000_001, 31_040_000))
    assert mark_cut_transcripts(shifted).count("partial=true") == 4
