# ruff: noqa: E501  (real log lines are kept whole)
"""RSpec: failed examples, Failure/Error with its values and frame, the summary."""

from __future__ import annotations

from landbot.triage.recognisers import rspec as rec

from .conftest import failures, found, kinds, pasted

# RSpec output pasted in a stored public file (the code index's file id 61858326; it
# names no repository), from `    should support an iframe … (FAILED - 1)` on.
RUN = """    should support an iframe in an iframe on the page (FAILED - 1)

Failures:

  1) IframeForm filling in a form field should support an iframe in an iframe on the page
     Failure/Error: page.find(:css, "#c_field").value.should == "the lazy cat jumped over the brown fox"
       expected: "the lazy cat jumped over the brown fox"
            got: "x" (using ==)
     # ./iframe_form_spec.rb:46:in `block (5 levels) in <top (required)>'
     # ./iframe_form_spec.rb:44:in `block (4 levels) in <top (required)>'
     # ./iframe_form_spec.rb:43:in `block (3 levels) in <top (required)>'

Finished in 3.99 seconds
3 examples, 1 failure

Failed examples:

rspec ./iframe_form_spec.rb:40 # IframeForm filling in a form field should support an iframe in an iframe on the page"""


def test_failed_example_its_error_values_and_frame() -> None:
    got = found(rec.ECOSYSTEM, pasted(RUN))
    assert got == {
        6: ("rspec-error", ""),
        7: ("rspec-value", ""),
        8: ("rspec-value", ""),
        9: ("rspec-location", "./iframe_form_spec.rb:46"),
        14: ("rspec-summary", ""),
        18: (
            "rspec-failed",
            "./iframe_form_spec.rb # IframeForm filling in a form field should support an"
            " iframe in an iframe on the page",
        ),
    }
    assert list(failures(rec.ECOSYSTEM, pasted(RUN))) == [18]


def test_a_passing_run_is_not_marked() -> None:
    # Control: a passing RSpec run pasted in a stored public file (file id 527164397).
    passing = "3 examples found.\n\nFinished in 0.00005 seconds\n3 examples, 0 failures"
    assert kinds(rec.ECOSYSTEM, pasted(passing)) == {}
