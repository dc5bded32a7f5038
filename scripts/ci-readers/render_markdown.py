"""Renders a Markdown file as GitHub renders a job's step summary, with cmark-gfm (cmarkgfm, the
C library GitHub uses) and its GitHub extensions (tables, autolinks, strikethrough, tag filter),
raw HTML let through so that any which reached the file shows. Prints the HTML. Used by
harness/tests/it/ci_outputs.rs; install.sh installs cmarkgfm."""

import sys

import cmarkgfm
from cmarkgfm.cmark import Options


def main(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    sys.stdout.write(cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE))


if __name__ == "__main__":
    main(sys.argv[1])
