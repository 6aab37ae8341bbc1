@smoke
Feature: Smoke
  Trivial scenarios. When one of these fails, suspect the adapter before the kernel.

  @kernel @DONE-001
  Scenario: Kernel profile - a plain answer ends the session successfully
    Given the model answers "hi there"
    When the user sends "hello"
    Then the kernel did not raise
    And the run ends with subtype "success"
    And the model was called 1 time

  # LOOP-013's subject is the second turn; how the run then ends is DONE-001's (above).
  @kernel @LOOP-013
  Scenario: Kernel profile - one tool call, then an answer
    Given a tool "lookup" of kind "data_source"
    And the model calls "lookup" with {"q": "x"} as "c1"
    And the model answers "done"
    When the kernel runs
    Then tool "c1" ran
    And the model was called 2 times
    And the tool results sent in model call 2 are in the order "c1"

  # Each scenario tags only the requirement whose subject it judges (one fault, one verdict): the
  # calls meeting is CONC-001's; the result order is TOOL-003's, and a kernel that runs the calls
  # one at a time is blocked there by CONC-001, not failed twice.
  @kernel @CONC-001
  Scenario: Kernel profile - two safe data-source calls run at once
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the model calls in one response:
      | id | name   | args       |
      | a1 | lookup | {"q": "1"} |
      | a2 | lookup | {"q": "2"} |
    And the model answers "done"
    And calls "a1" and "a2" must meet
    When the kernel runs
    Then calls "a1" and "a2" ran at the same time

  @kernel @TOOL-003
  Scenario: Kernel profile - results go back in the order the model asked
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the model calls in one response:
      | id | name   | args       |
      | a1 | lookup | {"q": "1"} |
      | a2 | lookup | {"q": "2"} |
    And the model answers "done"
    And calls "a1" and "a2" must meet
    And calls finish in the order "a2, a1"
    When the kernel runs
    Then the tool results sent in model call 2 are in the order "a1, a2"

  @commonagent @TURN-001
  Scenario: CommonAgent profile - a plain answer completes the turn
    Given the model answers "hi there"
    When the user sends "hello"
    Then the kernel did not raise
    And the run ends with status "completed"
    And the reply is "hi there"
