@kernel
Feature: Instrumentation of the turn (003)
  Every step of RunTurn and every hook dispatch nested in it is a mandatory instrumentation
  point. A kernel MUST emit a span (or an equivalent trace event) for the whole turn, for the
  model call (steps 3-4), for tool execution (steps 9, 9b and 12) and for the plan-ready veto
  chain (step 11), so that a turn's execution can be rebuilt from its trace. The adapter reports
  the spans with a kind: turn, model_call, tool, veto_chain (and hook, session, other). Whether
  tool execution has one span per call or one per step is not fixed: the scenarios run one call
  per step, so the tool spans are counted per step that ran calls (a span per call gives more). Names, attributes and nesting are not fixed by the MUST;
  the last scenario checks the advisory "rebuildable from the trace" reading.

  Background: two turns with tools (several calls per step), a bound; each scenario scripts the final answer
    Given the tools:
      | name  | kind        |
      | write | resource    |
      | ask   | interactive |
      | fetch | data_source |
    And max_turns is 2
    And the model calls in one response:
      | id | name  | args       |
      | d1 | fetch | {"q": "1"} |
      | i1 | ask   | {}         |
      | r1 | write | {"p": "1"} |
      | x1 | fetch | {"q": "x"} |
      | r2 | write | {"p": "2"} |
    And the model calls "fetch" with {"q": "2"} as "d2"

  @SPAN-001 @dim:observed_by=count
  Scenario: Each RunTurn has a turn span, the final tool-less turn included
    Given the model answers "final answer"
    When the kernel runs
    Then the trace has one "turn" span per model call

  @SPAN-002 @dim:observed_by=count @dim:model_call_ends=answered
  Scenario: Each model call has a model_call span
    Given the model answers "final answer"
    When the kernel runs
    Then the trace has one "model_call" span per model call

  @SPAN-003 @dim:observed_by=count
  Scenario: Tool execution is traced in every step that runs tools
    Given the model answers "final answer"
    When the kernel runs
    Then the trace has a "tool" span for every tool execution

  @SPAN-004 @dim:observed_by=count @dim:plan=empty_and_items @dim:veto=none
  Scenario: The veto chain is traced in every turn with tool calls, an empty plan included
    Given the model answers "final answer"
    When the kernel runs
    Then the trace has one "veto_chain" span per veto chain run

  @SPAN-005
  Scenario: The trace is one tree with the steps under their turn and every hook dispatch in it
    Given the model answers "final answer"
    When the kernel runs
    Then every span's parent is a span of the trace
    And every model_call, tool and veto_chain span lies under a turn span
    And the trace has a "hook" span for every hook dispatch

  @SPAN-004 @dim:plan=final_turn_with_tool_call
  Scenario: The final limit-reached answer carries a tool call: only the turns that ran the veto chain have its span
    Given the model calls "fetch" with {"q": "3"} as "d3"
    When the kernel runs
    Then the trace has one "veto_chain" span per veto chain run

  @SPAN-001 @cap_live_clock @dim:observed_by=enclosure
  Scenario: Each turn span encloses the model calls of its turn (spans timed with the harness clock)
    Given the clock advances at every event
    And the model answers "final answer"
    When the kernel runs
    Then every model call lies inside a "turn" span

  @SPAN-002 @cap_live_clock @dim:observed_by=enclosure
  Scenario: Each model_call span encloses its request and the whole stream (spans timed with the harness clock)
    Given the clock advances at every event
    And the model answers "final answer"
    When the kernel runs
    Then every model call lies inside a "model_call" span

  @SPAN-003 @cap_live_clock @dim:observed_by=enclosure
  Scenario: Each tool call runs inside a tool span (spans timed with the harness clock)
    Given the clock advances at every event
    And the model answers "final answer"
    When the kernel runs
    Then every tool call lies inside a "tool" span

  @SPAN-004 @cap_live_clock @dim:observed_by=enclosure
  Scenario: Each plan-ready dispatch happens inside a veto_chain span (spans timed with the harness clock)
    Given the clock advances at every event
    And the model answers "final answer"
    When the kernel runs
    Then every plan-ready dispatch lies inside a "veto_chain" span

  # A model call that fails and a veto chain that vetoes are still instrumented (issue 21).
  @SPAN-002 @dim:observed_by=count @dim:model_call_ends=failed
  Scenario: A model call that fails has its model_call span
    Given the model fails with status 500
    When the kernel runs
    Then the trace has one "model_call" span per model call

  @SPAN-004 @dim:observed_by=count @dim:veto=item_vetoed
  Scenario: A veto chain that vetoes an item has its veto_chain span
    Given hook "gate" at "plan-ready" returns {"kind": "veto", "call_ids": ["r1"], "reason": "too risky"}
    And the model answers "final answer"
    When the kernel runs
    Then the trace has one "veto_chain" span per veto chain run
