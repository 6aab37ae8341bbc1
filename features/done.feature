@kernel
Feature: Done detection (003)
  Implicit done detection is the floor every kernel MUST support: a model response with no
  tool_use blocks ends the turn loop successfully, with no further model request. A kernel MUST
  also support the explicit terminal tool as an opt-in: a resource tool may carry the
  terminates_turn annotation, and when the model calls it the kernel treats it as DoneCheck
  success right after that call's post-tool-call hook, whether or not the same message held
  other tool_use blocks. What happens to those other calls is not fixed, so it is not checked.

  # ------------------------------------------------------------------ implicit

  @DONE-001 @dim:answer_text=non_empty @dim:terminal_tool_registered=no @dim:turn=later
  Scenario: A response without tool_use blocks ends the session successfully
    Given a tool "fetch" of kind "data_source"
    And the model calls "fetch" with {"q": "1"} as "d1"
    And the model answers "here is the answer"
    And the model answers "a third answer nobody should ask for"
    When the kernel runs
    Then the kernel did not raise
    And no model call follows the first answer without tool calls
    And the run ends with subtype "success"

  @DONE-001 @dim:answer_text=empty @dim:terminal_tool_registered=no @dim:turn=later
  Scenario: A response without tool_use blocks and with empty text ends the session successfully
    Given a tool "fetch" of kind "data_source"
    And the model calls in one response:
      | id | name  | args       |
      | d1 | fetch | {"q": "1"} |
      | d2 | fetch | {"q": "1"} |
    And the model answers ""
    And the model answers "a third answer nobody should ask for"
    When the kernel runs
    Then the kernel did not raise
    And no model call follows the first answer without tool calls
    And the run ends with subtype "success"

  @DONE-001 @dim:answer_text=non_empty @dim:terminal_tool_registered=yes @dim:turn=first
  Scenario: A response without tool_use blocks ends the session even when a terminal tool is registered
    Given a tool "finish" of kind "resource" that terminates the turn
    And a tool "fetch" of kind "data_source"
    And the model answers "answered without finishing"
    And the model answers "a second answer nobody should ask for"
    When the kernel runs
    Then the kernel did not raise
    And no model call follows the first answer without tool calls
    And the run ends with subtype "success"

  # ------------------------------------------------------------------ explicit

  @DONE-002
  Scenario: Calling a terminal tool ends the session successfully without another model request
    Given a tool "finish" of kind "resource" that terminates the turn
    And a tool "fetch" of kind "data_source"
    And the model calls "finish" with {"summary": "all done"} as "f1"
    And the model answers "nobody should ask for this"
    When the kernel runs
    Then tool "f1" ran
    And the kernel did not raise
    And the model was called 1 time
    And the run ends with subtype "success"

  @DONE-003 @dim:calls_in_message=1
  Scenario: The terminal call's post-tool-call is dispatched, then the loop ends
    Given a tool "finish" of kind "resource" that terminates the turn
    And the model calls "finish" with {"summary": "all done"} as "f1"
    And the model answers "nobody should ask for this"
    When the kernel runs
    Then the post-tool-call of call "f1" was dispatched before the loop ended

  @DONE-003 @dim:calls_in_message=several
  Scenario: The terminal call's post-tool-call is dispatched when it shares the message with other calls
    Given a tool "finish" of kind "resource" that terminates the turn
    And a tool "fetch" of kind "data_source"
    And the model calls in one response:
      | id | name   | args       |
      | d1 | fetch  | {"q": "1"} |
      | f1 | finish | {}         |
    And the model answers "nobody should ask for this"
    When the kernel runs
    Then the post-tool-call of call "f1" was dispatched before the loop ended

  @DONE-004 @dim:terminal_position=first @dim:terminal_position=middle @dim:terminal_position=last
  Scenario Outline: A terminal tool ends the loop even with other tool_use blocks in the message (<where>)
    Given a tool "finish" of kind "resource" that terminates the turn
    And a tool "fetch" of kind "data_source"
    And a tool "write" of kind "resource"
    And the model calls in one response:
      | id   | name   | args       |
      | <c1> | <t1>   | {"n": 1}   |
      | <c2> | <t2>   | {"n": 2}   |
      | <c3> | <t3>   | {"n": 3}   |
    And the model answers "nobody should ask for this"
    When the kernel runs
    Then the kernel did not raise
    And the model was called 1 time
    And the run ends with subtype "success"

    Examples:
      | where  | c1 | t1     | c2 | t2     | c3 | t3     |
      | first  | f1 | finish | d1 | fetch  | r1 | write  |
      | middle | d1 | fetch  | f1 | finish | r1 | write  |
      | last   | r1 | write  | d1 | fetch  | f1 | finish |
