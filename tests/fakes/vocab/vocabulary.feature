Feature: Step vocabulary
  Exercises the generic steps against the fake kernel (tests/test_harness.py runs it).

  @kernel @DONE-001
  Scenario: Every building step, then passing checks
    Given the kernel profile
    And a tool "a" of kind "data_source" with concurrency safe on "path" and with risk "high" from provider "fs" returning "A {args}"
    And a tool "b" declared unsafe
    And a tool "t" of kind "resource" that terminates the turn
    And the tools:
      | name | kind     | concurrency    | terminates_turn | risk   |
      | c    | resource | safe:path+mode | no              | medium |
    And the model calls "a" with {"path": "x"} as "a1"
    And the model calls in one response:
      | id | name | args                       |
      | b1 | b    |                            |
      | c1 | c    | {"path": "p", "mode": "w"} |
    And the model script:
      """
      [{"text": "done", "chunks": 2}]
      """
    And every model response uses 10 input and 5 output tokens
    And the call "b1" returns "B!"
    And the call "c1" fails with "nope"
    And max_turns is 10
    And max_cost_usd is 1.5
    And the doom-loop threshold is 4
    And the scenario timeout is 3 seconds
    And calls "b1" and "c1" must meet
    And calls finish in the order "c1, b1"
    And a hook "mine" at "pre-tool-call"
    And hook "h2" at "post-model-response" returns {"kind": "continue"} for tool "a" on occurrence 0
    And the policy denies "zzz" because "no"
    And the approver answers "approved, denied"
    And the scenario settings:
      """
      {"session_tags": ["area:x"], "model": {"pricing": {"input_usd_per_mtok": 1.0}}}
      """
    When the kernel runs
    Then the kernel did not raise
    And the run ends with subtype "success"
    And user message 1 ends with subtype "success"
    And the reply is "done"
    And the model was called 3 times
    And the model script was not exhausted
    And the request of model call 1 has tool specs
    And the tool results sent in model call 2 are in the order "a1"
    And the tool results sent in model call 3 are in the order "a1, b1, c1"
    And the latest tool results sent in model call 3 are in the order "b1, c1"
    And tool "a1" ran
    And tool "b" ran
    And 3 tool calls ran
    And "context-assemble" was dispatched 3 times
    And "session-start" was dispatched 1 time
    And the hook points of model call 1 were dispatched in the order:
      | context-assemble    |
      | pre-model-call      |
      | post-model-response |
      | pre-tool-call       |
      | plan-ready          |
      | post-tool-call      |
      | post-apply          |
    And the hook points of model call 3 include, in order:
      """
      context-assemble
      session-end
      """

  @kernel @LOOP-001
  Scenario: A failing check says expected and observed
    Given the model answers "hi"
    When the kernel runs
    Then the model was called 5 times

  @kernel @LOOP-002
  Scenario: A step with no definition is a harness error
    Given the model answers "hi"
    When the kernel runs
    Then something nobody defined happens

  @commonagent @STOP-004
  Scenario: A cancelled turn
    Given the model script:
      """
      [{"text": "partial answer", "chunks": 2}]
      """
    And the turn is cancelled at model call 1
    When the user sends "go"
    Then the run ends with status "interrupted"
    And the model was called 1 time

  @kernel @CONC-002
  Scenario: Calls run one after the other miss their rendezvous
    Given a tool "s" declared unsafe
    And the model calls "s" with {} as "x1"
    And calls "x1" and "never" must meet
    And the scenario timeout is 1 second
    When the kernel runs
    Then the run ends with subtype "success"
