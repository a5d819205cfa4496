"""The README block runner (readme_blocks.py) on small Markdown texts of its own: that it fails
where it must (an unmarked shell block, a malformed marker, a quoted output that no longer
matches) and passes what it should. No service: the blocks only echo."""

import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import readme_blocks  # noqa: E402

FENCE = "```"


def run(markdown):
    """(exit status, printed text) of `readme_blocks.py run` over one Markdown text."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "README.md")
        with open(path, "w") as f:
            f.write(markdown)
        out = io.StringIO()
        with redirect_stdout(out):
            status = readme_blocks.main(["run", path, "--url", "http://127.0.0.1:9",
                                         "--key", "dns_test"])
        return status, out.getvalue()


class Markers(unittest.TestCase):
    def test_an_unmarked_shell_block_fails_naming_file_and_line(self):
        for language in ("sh", "bash", "console", "shell"):
            blocks, problems = readme_blocks.parse(
                "X.md", f"intro\n\n{FENCE}{language}\necho hi\n{FENCE}\n")
            self.assertEqual(len(problems), 1, language)
            self.assertIn("X.md:3:", problems[0])

    def test_marked_blocks_and_other_languages_pass(self):
        text = (f"<!-- readme-test: run -->\n{FENCE}sh\necho hi\n{FENCE}\n"
                f"<!-- readme-test: output -->\n{FENCE}\nhi\n{FENCE}\n"
                f"<!-- readme-test: skip: needs Kubernetes -->\n{FENCE}bash\nkubectl apply\n{FENCE}\n"
                f"{FENCE}json\n{{}}\n{FENCE}\n{FENCE}\ndiagram\n{FENCE}\n")
        blocks, problems = readme_blocks.parse("X.md", text)
        self.assertEqual(problems, [])
        self.assertEqual([b.marker for b in blocks], ["run", "output", "skip", None, None])
        self.assertEqual(blocks[2].reason, "needs Kubernetes")

    def test_a_marker_must_be_on_the_line_immediately_before(self):
        _, problems = readme_blocks.parse("X.md", f"<!-- readme-test: run -->\n\n{FENCE}sh\nls\n{FENCE}\n")
        self.assertEqual(len(problems), 1)

    def test_a_skip_without_reason_and_an_unknown_marker_fail(self):
        for marker in ("skip", "skip:", "skip:   ", "runn", "output please"):
            _, problems = readme_blocks.parse(
                "X.md", f"<!-- readme-test: {marker} -->\n{FENCE}python\npass\n{FENCE}\n")
            self.assertTrue(problems, marker)

    def test_output_needs_a_run_block_before_it(self):
        _, problems = readme_blocks.parse("X.md", f"<!-- readme-test: output -->\n{FENCE}\nhi\n{FENCE}\n")
        self.assertEqual(len(problems), 1)

    def test_run_only_on_runnable_languages(self):
        _, problems = readme_blocks.parse("X.md", f"<!-- readme-test: run -->\n{FENCE}yaml\na: 1\n{FENCE}\n")
        self.assertEqual(len(problems), 1)


class Comparing(unittest.TestCase):
    def test_columns_are_split_on_whitespace_and_integers_compared_exactly(self):
        self.assertEqual(readme_blocks.compare_text("chr20\t1\t34499\t+\n", "chr20  1   34499  +\n"), [])
        self.assertTrue(readme_blocks.compare_text("chr20\t1\t34498\t+\n", "chr20  1   34499  +\n"))
        self.assertTrue(readme_blocks.compare_text("chr20\t1\n", "chr20 1 +\n"))  # field count

    def test_line_counts_must_match(self):
        self.assertTrue(readme_blocks.compare_text("a\nb\n", "a\n"))
        self.assertTrue(readme_blocks.compare_text("", "a\n"))

    def test_floats_within_the_stated_tolerance(self):
        self.assertEqual(readme_blocks.compare_text("0.0033377\n", "0.00333735\n"), [])
        self.assertTrue(readme_blocks.compare_text("0.0034\n", "0.00333735\n"))
        self.assertEqual(readme_blocks.compare_text("1.0005\n", "1.0\n"), [])
        self.assertTrue(readme_blocks.compare_text("1.002\n", "1.0\n"))

    def test_ids_times_and_durations_are_masked(self):
        self.assertEqual(readme_blocks.compare_text(
            "job 0f8fad5b-d9cb-469f-a165-70867728950e done at 2026-11-28T17:01:02Z in 7.1 s\n",
            "job 9b2c1e8a-1111-4222-8333-444455556666 done at 2026-11-27T09:00:00Z in 6.6 s\n"), [])
        self.assertTrue(readme_blocks.compare_text("done in 7.1 s\n", "done in 7.1 min extra\n"))

    def test_json_is_compared_by_structure(self):
        quoted = '{"status": "ok", "items": [1, 2.5], "job_id": "a", "meta": {"took_ms": 3}}'
        self.assertEqual(readme_blocks.compare_text(
            '{"items": [1, 2.5001], "status": "ok", "job_id": "b", "meta": {"took_ms": 9}}', quoted), [])
        self.assertTrue(readme_blocks.compare_text(
            '{"items": [1, 2.5, 3], "status": "ok", "job_id": "b", "meta": {"took_ms": 9}}', quoted))
        self.assertTrue(readme_blocks.compare_text(
            '{"items": [1, 2.5], "status": "ok", "job_id": "b", "meta": {}}', quoted))
        self.assertTrue(readme_blocks.compare_text(
            '{"items": [1, 2.5], "status": "failed", "job_id": "b", "meta": {"took_ms": 9}}', quoted))
        self.assertTrue(readme_blocks.compare_text("not json", quoted))


class Running(unittest.TestCase):
    def test_a_run_block_and_its_matching_output_pass(self):
        status, out = run(f"<!-- readme-test: run -->\n{FENCE}sh\nprintf 'a\\t1\\n'\n{FENCE}\n"
                          f"<!-- readme-test: output -->\n{FENCE}\na  1\n{FENCE}\n")
        self.assertEqual(status, 0, out)

    def test_a_changed_quote_fails(self):
        status, out = run(f"<!-- readme-test: run -->\n{FENCE}sh\nprintf 'a\\t1\\n'\n{FENCE}\n"
                          f"<!-- readme-test: output -->\n{FENCE}\na  2\n{FENCE}\n")
        self.assertEqual(status, 1)
        self.assertIn("README.md:6", out)  # the output block's fence

    def test_an_unmarked_block_fails_the_run(self):
        status, out = run(f"{FENCE}bash\ntrue\n{FENCE}\n")
        self.assertEqual(status, 1)
        self.assertIn("README.md:1", out)

    def test_a_failing_command_fails_with_its_stderr(self):
        status, out = run(f"<!-- readme-test: run -->\n{FENCE}sh\necho why >&2\nfalse\necho never\n{FENCE}\n")
        self.assertEqual(status, 1)
        self.assertIn("why", out)
        self.assertNotIn("never", out)

    def test_a_transcript_runs_each_command_where_the_run_block_ran(self):
        status, out = run(
            f"<!-- readme-test: run -->\n{FENCE}sh\nprintf 'x\\ny\\n' > f.txt\n{FENCE}\n"
            f"<!-- readme-test: output -->\n{FENCE}\n$ cat f.txt   # both\nx\ny\n$ wc -l < f.txt\n2\n{FENCE}\n")
        self.assertEqual(status, 0, out)
        status, out = run(
            f"<!-- readme-test: run -->\n{FENCE}sh\nprintf 'x\\ny\\n' > f.txt\n{FENCE}\n"
            f"<!-- readme-test: output -->\n{FENCE}\n$ wc -l < f.txt\n3\n{FENCE}\n")
        self.assertEqual(status, 1, out)

    def test_the_service_variables_exports_files_and_a_fresh_directory(self):
        status, out = run(
            f"<!-- readme-test: run -->\n{FENCE}sh\n"
            "export DNASERVE_URL=http://127.0.0.1:8080 DNASERVE_API_KEY=dns_...\n"
            "export GREETING=hello\necho kept > kept.txt\ntouch only-here\n"
            f"{FENCE}\n<!-- readme-test: run -->\n{FENCE}bash\n"
            '[ "$DNASERVE_URL" = http://127.0.0.1:9 ] && [ "$DNASERVE_API_KEY" = dns_test ]\n'
            '[ "$GREETING" = hello ] && [ "$(cat kept.txt)" = kept ] && [ -d scripts ]\n'
            'case "$PATH" in *pyenv*) exit 1;; esac\n'
            '[ "$(python3 -c "import sys; print(sys.executable)")" = /usr/bin/python3 ]\n'
            f"{FENCE}\n")
        self.assertEqual(status, 0, out)

    def test_a_console_block_runs_as_a_transcript(self):
        status, out = run(f"<!-- readme-test: run -->\n{FENCE}console\n$ echo one\none\n"
                          f"$ export N=2\n$ echo $N\n2\n{FENCE}\n")
        self.assertEqual(status, 0, out)
        status, out = run(f"<!-- readme-test: run -->\n{FENCE}console\n$ echo one\ntwo\n{FENCE}\n")
        self.assertEqual(status, 1, out)
        self.assertIn("README.md:2", out)

    def test_skipped_blocks_are_reported_and_not_run(self):
        status, out = run(f"<!-- readme-test: skip: needs S3 -->\n{FENCE}sh\nfalse\n{FENCE}\n")
        self.assertEqual(status, 0, out)
        self.assertIn("needs S3", out)


if __name__ == "__main__":
    unittest.main()
