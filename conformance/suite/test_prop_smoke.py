"""Smoke property: whatever the answer text, a no-tool answer ends the session (kernel) or the
turn (commonagent) with that text as the reply. Texts run from empty (an answer with no text
is still an answer) to a few hundred characters."""

from hypothesis import given
from hypothesis import strategies as st

from conformance.errors import expect_equal
from conformance.suite.properties import PROPERTY_SETTINGS, context, requirement
from conformance.boundary.scenario import ModelResponse


@requirement("DONE-001", profile="kernel")
@PROPERTY_SETTINGS
@given(text=st.text(alphabet="abcxyz ", min_size=0, max_size=300), chunks=st.integers(1, 4))
def test_prop_any_answer_ends_the_session(text: str, chunks: int) -> None:
    ctx = context("kernel", "any answer ends the session")
    ctx.add_response(ModelResponse(text=text, chunks=chunks))
    ctx.add_response(ModelResponse(text="nobody should ask for this"))
    ctx.run()
    expect_equal("subtype", "success", ctx.outcome().subtype)
    expect_equal("model calls", 1, len(ctx.model_requests()))
    ctx.evidence.saw(f"an answer of {len(text)} characters in {chunks} chunks ended the session after 1 model call")
