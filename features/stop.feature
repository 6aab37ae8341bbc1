Feature: Stopping a turn (000; the cancellation token also for the kernel profile)
  Every turn takes a CancellationToken. Cancelling it stops the turn between steps, and also
  stops a model call that is in flight. Nothing partial is saved from a cancelled model call.
  The turn ends with status interrupted, and agent_loop_stopped fires with reason "cancelled"
  (then, as after every turn, on_session_end). Child agents get a child token, so stopping the
  parent stops its children too. 000 is explicit and 003 silent about cancellation, so the token
  rules hold for the kernel profile as well, where 000's turn is the session run and session-end
  fires once after the loop exits, cancellation included.
  The harness cancels through the canceller the adapter registered (docs/adapter.md).

  # ------------------------------------------------------------------ CommonAgent profile

  @commonagent @STOP-001
  Scenario: CommonAgent - a cancel between steps stops the turn before its tools and next model call
    Given a tool "lookup"
    And the model calls "lookup" with {} as "c1"
    And the model answers "done"
    And the turn is cancelled at hook "post_api_request"
    When the kernel runs
    Then no model call and no tool call started after the cancel
    And tool "c1" did not run
    And the model was called 1 time

  @commonagent @STOP-001
  Scenario: CommonAgent - a cancel at pre_tool_call stops the turn before any tool of the response runs
    Given a tool "lookup"
    And the model calls in one response:
      | id | name   | args     |
      | c1 | lookup | {"n": 1} |
      | c2 | lookup | {"n": 2} |
    And the model answers "done"
    And the turn is cancelled at hook "pre_tool_call"
    When the kernel runs
    Then no model call and no tool call started after the cancel
    And 0 tool calls ran

  @commonagent @STOP-001
  Scenario: CommonAgent - a cancel while a tool runs stops the turn before the next call of the response
    Given the tools:
      | name | kind        |
      | ask  | interactive |
    And the model calls in one response:
      | id | name | args     |
      | q1 | ask  | {"n": 1} |
      | q2 | ask  | {"n": 2} |
    And the model answers "done"
    And the turn is cancelled when the first of the calls "q1, q2" starts
    When the kernel runs
    Then no model call and no tool call started after the cancel
    And only one of the calls "q1, q2" ran

  @commonagent @STOP-002
  Scenario: CommonAgent - a cancel stops a model call in flight
    Given the model answers "never finished" in 2 chunks
    And the turn is cancelled at model call 1
    When the kernel runs
    Then no model call and no tool call started after the cancel

  @commonagent @STOP-003
  Scenario: CommonAgent - nothing of a cancelled model call is stored
    Given a tool "lookup"
    And the model calls "lookup" with {} as "c1"
    And the model answers "PPPPPPQQQQQQRRRRRR" in 3 chunks
    And the turn is cancelled at model call 2
    When the kernel runs
    Then nothing the cancelled model call streamed is stored
    And no assistant message stands for the cancelled model call

  @commonagent @STOP-004 @dim:cancel_at=between-steps
  Scenario: CommonAgent - a turn cancelled between steps ends interrupted, reported and stored
    Given a tool "lookup"
    And the model calls "lookup" with {} as "c1"
    And the model answers "done"
    And the turn is cancelled at hook "post_tool_call"
    When the kernel runs
    Then the run ends with status "interrupted"
    And the stored status of user message 1 is "interrupted"

  @commonagent @STOP-004 @dim:cancel_at=model-call
  Scenario: CommonAgent - a turn cancelled during a model call ends interrupted, reported and stored
    Given the model answers "half an answer" in 2 chunks
    And the turn is cancelled at model call 1
    When the kernel runs
    Then the run ends with status "interrupted"
    And the stored status of user message 1 is "interrupted"

  @commonagent @STOP-005 @dim:cancel_at=between-steps
  Scenario: CommonAgent - after a cancel between steps, agent_loop_stopped fires with reason cancelled, then on_session_end
    Given a tool "lookup"
    And the model calls "lookup" with {} as "c1"
    And the model answers "done"
    And the turn is cancelled at hook "pre_tool_call"
    When the kernel runs
    Then "agent_loop_stopped" was dispatched once, with "reason" "cancelled"
    And "agent_loop_stopped" was dispatched once, after the cancel
    And the last hook points of the run are:
      | agent_loop_stopped |
      | on_session_end     |

  @commonagent @STOP-005 @dim:cancel_at=model-call
  Scenario: CommonAgent - after a cancel during a model call, agent_loop_stopped fires with reason cancelled, then on_session_end
    Given the model answers "half an answer" in 2 chunks
    And the turn is cancelled at model call 1
    When the kernel runs
    Then "agent_loop_stopped" was dispatched once, with "reason" "cancelled"
    And the last hook points of the run are:
      | agent_loop_stopped |
      | on_session_end     |

  # Issue 21: the third place a cancel can land, while a tool runs (000: "stops the turn between
  # steps"; the turn still ends interrupted, with agent_loop_stopped).
  @commonagent @STOP-004 @dim:cancel_at=tool-call
  Scenario: CommonAgent - a turn cancelled while a tool runs ends interrupted, reported and stored
    Given a tool "lookup"
    And the model calls "lookup" with {} as "c1"
    And the model answers "never reached"
    And the turn is cancelled when call "c1" starts
    When the kernel runs
    Then the run ends with status "interrupted"
    And the stored status of user message 1 is "interrupted"

  @commonagent @STOP-005 @dim:cancel_at=tool-call
  Scenario: CommonAgent - after a cancel while a tool runs, agent_loop_stopped fires with reason cancelled, then on_session_end
    Given a tool "lookup"
    And the model calls "lookup" with {} as "c1"
    And the model answers "never reached"
    And the turn is cancelled when call "c1" starts
    When the kernel runs
    Then "agent_loop_stopped" was dispatched once, with "reason" "cancelled"
    And the last hook points of the run are:
      | agent_loop_stopped |
      | on_session_end     |

  @commonagent @TURN-020 @dim:status=interrupted
  Scenario: CommonAgent - on_session_end ends a cancelled turn too, after its status is stored
    Given the model answers "half an answer" in 2 chunks
    And the turn is cancelled at model call 1
    When the kernel runs
    Then on_session_end was the last hook dispatched for user message 1 and carries its stored status

  @commonagent @STOP-006
  Scenario: CommonAgent - cancelling the parent between the child's steps stops the child
    Given a delegation tool "delegate"
    And the model calls "delegate" with {"goal": "sub task"} as "d1"
    And the model answers "child answer"
    And the model answers "parent answer"
    And the turn is cancelled at hook "pre_llm_call" occurrence 2
    When the kernel runs
    Then no model call and no tool call started after the cancel
    And the model was called 1 time

  @commonagent @STOP-006
  Scenario: CommonAgent - cancelling the parent stops the child's model call in flight
    Given a delegation tool "delegate"
    And the model calls "delegate" with {"goal": "sub task"} as "d1"
    And the model answers "child answer" in 2 chunks
    And the model answers "parent answer"
    And the turn is cancelled at model call 2
    When the kernel runs
    Then no model call and no tool call started after the cancel
    And the model was called 2 times

  # ------------------------------------------------------------------ kernel profile

  @kernel @STOP-001 @dim:cancel_while=between_steps
  Scenario: Kernel - a cancel between steps stops the session run before its tools and next model call
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the model calls "lookup" with {} as "c1"
    And the model answers "done"
    And the turn is cancelled at hook "post-model-response"
    When the kernel runs
    Then no model call and no tool call started after the cancel
    And tool "c1" did not run
    And the model was called 1 time
    And the kernel did not raise

  @kernel @STOP-001 @dim:cancel_while=interactive_call
  Scenario: Kernel - a cancel while an interactive tool runs stops the run before the next interactive call
    Given the tools:
      | name | kind        |
      | ask  | interactive |
    And the model calls in one response:
      | id | name | args     |
      | q1 | ask  | {"n": 1} |
      | q2 | ask  | {"n": 2} |
    And the model answers "done"
    And the turn is cancelled when the first of the calls "q1, q2" starts
    When the kernel runs
    Then no model call and no tool call started after the cancel
    And only one of the calls "q1, q2" ran
    And the kernel did not raise

  @kernel @STOP-002
  Scenario: Kernel - a cancel stops a model call in flight
    Given the model answers "never finished" in 2 chunks
    And the turn is cancelled at model call 1
    When the kernel runs
    Then no model call and no tool call started after the cancel
    And the kernel did not raise

  @kernel @STOP-003
  Scenario: Kernel - nothing of a cancelled model call is stored
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the model calls "lookup" with {} as "c1"
    And the model answers "PPPPPPQQQQQQRRRRRR" in 3 chunks
    And the turn is cancelled at model call 2
    When the kernel runs
    Then nothing the cancelled model call streamed is stored
    And no assistant message stands for the cancelled model call

  @kernel @LOOP-018 @dim:cancel_at=between_steps
  Scenario: Kernel - a run cancelled between steps dispatches session-end once, last
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the model calls "lookup" with {} as "c1"
    And the model answers "done"
    And the turn is cancelled at hook "post-tool-call"
    When the kernel runs
    Then "session-end" was dispatched once, after the cancel
    And the last hook points of the run are:
      | session-end |

  @kernel @LOOP-018 @dim:cancel_at=model_call
  Scenario: Kernel - a run cancelled during a model call dispatches session-end once, last
    Given the model answers "never finished" in 2 chunks
    And the turn is cancelled at model call 1
    When the kernel runs
    Then "session-end" was dispatched once, after the cancel
    And the last hook points of the run are:
      | session-end |

  @kernel @STOP-006 @dim:parent_cancelled_while=child_between_steps
  Scenario: Kernel - cancelling the parent between the child's steps stops the child
    Given a delegation tool "delegate"
    And the model calls "delegate" with {"goal": "sub task"} as "d1"
    And the model answers "child answer"
    And the model answers "parent answer"
    And the turn is cancelled at hook "session-start" occurrence 2
    When the kernel runs
    Then no model call and no tool call started after the cancel
    And the model was called 1 time

  @kernel @STOP-006 @dim:parent_cancelled_while=child_model_call
  Scenario: Kernel - cancelling the parent stops the child's model call in flight
    Given a delegation tool "delegate"
    And the model calls "delegate" with {"goal": "sub task"} as "d1"
    And the model answers "child answer" in 2 chunks
    And the model answers "parent answer"
    And the turn is cancelled at model call 2
    When the kernel runs
    Then no model call and no tool call started after the cancel
    And the model was called 2 times

  # Issue 21 (blind round 2): the child token at every depth - cancelled between a grandchild's steps.
  @commonagent @STOP-006 @dim:depth=2
  Scenario: CommonAgent - cancelling the parent between a grandchild's steps stops the grandchild
    Given a delegation tool "delegate"
    And the model calls "delegate" with {"goal": "plan the trip"} as "d1"
    And the model calls "delegate" with {"goal": "check the weather"} as "d2"
    And the model answers "grandchild answer"
    And the model answers "child answer"
    And the model answers "parent answer"
    And the turn is cancelled at hook "pre_llm_call" occurrence 3
    When the kernel runs
    Then no model call and no tool call started after the cancel
    And the model was called 2 times

  # A cancel that arrives while step 9's data-source calls or step 9b's interactive calls run
  # (issue 21): the resource calls of the same response, applied at step 12, must not start.
  @kernel @STOP-001 @dim:cancel_while=data_source_call @dim:cancel_while=interactive_call
  Scenario Outline: Kernel - a cancel while a <kind> call runs stops the run before any resource call is applied
    Given the tools:
      | name  | kind        | concurrency |
      | fetch | data_source | safe        |
      | ask   | interactive |             |
      | write | resource    |             |
    And the model calls in one response:
      | id | name  | args       |
      | w1 | write | {"p": "1"} |
      | d1 | fetch | {"q": "1"} |
      | i1 | ask   | {"n": 1}   |
    And the model answers "done"
    And the turn is cancelled when call "<call>" starts
    When the kernel runs
    Then no model call and no tool call started after the cancel
    And resource call "w1" was not applied
    And the model was called 1 time
    And the kernel did not raise

    Examples:
      | kind        | call |
      | data-source | d1   |
      | interactive | i1   |

  # Blind round 2: the child token reaches every depth - a grandchild (depth 2) stops with the
  # root too. The cancel arrives as the grandchild session starts, before its model call.
  @kernel @STOP-006 @dim:depth=2
  Scenario: Kernel - cancelling the root between a grandchild's steps stops the grandchild
    Given a delegation tool "delegate"
    And max_depth is 3
    And the model calls "delegate" with {"goal": "sub task"} as "d1"
    And the model calls "delegate" with {"goal": "sub sub task"} as "d2"
    And the model answers "grandchild answer"
    And the model answers "child answer"
    And the model answers "parent answer"
    And the turn is cancelled at hook "session-start" occurrence 3
    When the kernel runs
    Then no model call and no tool call started after the cancel
    And the model was called 2 times
