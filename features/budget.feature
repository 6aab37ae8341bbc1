@commonagent
Feature: The iteration budget (000, CommonAgent)
  max_iterations caps the number of model calls in one turn. The default is 500, as in Hermes;
  it is set per profile (config.toml: max_iterations = 50). The loop stops at its top when the
  budget is spent — without another model call — and a turn that runs out ends with status
  budget_exhausted. The budget belongs to the turn: every turn of a session starts afresh.

  @BUDGET-001
  Scenario: A turn that keeps asking for tools makes exactly max_iterations model calls and runs the last one's tools
    Given a tool "lookup"
    And max_iterations is 3
    And the model calls "lookup" with {} as "t" 5 times
    When the kernel runs
    Then the model was called 3 times
    And tool "t_r2" ran
    And 3 tool calls ran

  @BUDGET-001
  Scenario: A turn whose final answer is its max_iterations-th model call completes
    Given a tool "lookup"
    And max_iterations is 3
    And the model calls "lookup" with {} as "t" 2 times
    And the model answers "just in time"
    When the kernel runs
    Then the model was called 3 times
    And the reply is "just in time"

  @BUDGET-002
  Scenario: A turn that runs out of iterations ends with status budget_exhausted
    Given a tool "lookup"
    And max_iterations is 2
    And the model calls "lookup" with {} as "t" 4 times
    When the kernel runs
    Then the run ends with status "budget_exhausted"

  @BUDGET-003 @slow
  Scenario: Without configuration, max_iterations is 500
    # SLOW (about 1-2 s, tagged @slow): 501 scripted tool-call responses; the 500th model call
    # is made, its tool runs, and no 501st call follows. No recording hooks, to keep it fast.
    Given no recording hooks
    And the scenario timeout is 20 seconds
    And a tool "lookup"
    And the model calls "lookup" with {} as "t" 501 times
    When the kernel runs
    Then the model was called 500 times
    And tool "t_r499" ran
    And the run ends with status "budget_exhausted"

  @BUDGET-004
  Scenario: A configured max_iterations replaces the default
    Given a tool "lookup"
    And max_iterations is 1
    And the model calls "lookup" with {} as "t" 3 times
    When the kernel runs
    Then 1 tool call ran

  @BUDGET-005 @dim:previous_turn=completed-at-bound
  Scenario: Every turn of a session starts with the full iteration budget
    Given a tool "lookup"
    And max_iterations is 2
    And the user message "first" in session "s1"
    And the user message "second" in session "s1"
    And the model calls "lookup" with {} as "a"
    And the model answers "one"
    And the model calls "lookup" with {} as "b"
    And the model answers "two"
    When the kernel runs
    Then user message 2 made 2 model calls
    And user message 2 ends with status "completed"
    And the reply is "two"

  # Issue 21: the budget counts model calls, however many tool calls each response asks for.
  @BUDGET-001 @dim:calls_per_response=2 @dim:model_calls=above-bound
  Scenario: max_iterations counts model calls, not the two tool calls of each response
    Given a tool "lookup"
    And max_iterations is 2
    And the model calls in one response:
      | id | name   | args       |
      | a1 | lookup | {"q": "1"} |
      | a2 | lookup | {"q": "2"} |
    And the model calls in one response:
      | id | name   | args       |
      | b1 | lookup | {"q": "3"} |
      | b2 | lookup | {"q": "4"} |
    And the model calls in one response:
      | id | name   | args       |
      | c1 | lookup | {"q": "5"} |
      | c2 | lookup | {"q": "6"} |
    When the kernel runs
    Then the model was called 2 times
    And 4 tool calls ran

  @BUDGET-001 @dim:calls_per_response=3 @dim:model_calls=at-bound
  Scenario: A turn whose answer is its max_iterations-th model call completes, whatever the calls before it asked
    Given a tool "lookup"
    And max_iterations is 2
    And the model calls in one response:
      | id | name   | args       |
      | a1 | lookup | {"q": "1"} |
      | a2 | lookup | {"q": "2"} |
      | a3 | lookup | {"q": "3"} |
    And the model answers "just in time"
    When the kernel runs
    Then the model was called 2 times
    And the reply is "just in time"

  # Issue 21: the turn before ran out of iterations (not only used them up with an answer).
  @BUDGET-005 @dim:previous_turn=budget_exhausted
  Scenario: A turn after one that ran out of iterations starts with the full budget
    Given a tool "lookup"
    And max_iterations is 2
    And the user message "first" in session "s1"
    And the user message "second" in session "s1"
    And the model calls "lookup" with {} as "a" 2 times
    And the model calls "lookup" with {} as "b"
    And the model answers "two"
    When the kernel runs
    Then user message 1 ends with status "budget_exhausted"
    And user message 1 made no model call past max_iterations
    And user message 2 made 2 model calls
    And user message 2 ends with status "completed"
