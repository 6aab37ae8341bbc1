@commonagent
Feature: The turn loop, step by step (000, CommonAgent)
  A turn starts with one user message and ends with a reply or a stop. It takes the session lock
  (one turn per session at a time; a second message to the same session waits), loads the
  session's messages oldest first and stores the new user message, builds the system prompt
  (its stable tier is the profile's prompt), fires on_session_start if the session is new and
  pre_llm_call once per turn (context it returns goes in front of the user message, for the
  model only, and is never stored), then loops: pre_api_request → model call → post_api_request
  (on failure api_request_error, then transform_api_error_classification), stores the assistant
  message, and either runs the tool calls and loops again or, with no tool calls, runs
  transform_llm_output and post_llm_call and finishes. At the end the final status is stored and
  on_session_end fires, at the end of every turn.

  @TURN-001
  Scenario: A turn with a tool call ends with the model's final text as its reply
    Given a tool "lookup" returning "looked up {args}"
    And the model calls "lookup" with {"q": "x"} as "c1"
    And the model answers "the answer"
    When the user sends "question"
    Then the run ends with status "completed"
    And the reply is "the answer"

  @TURN-018
  Scenario: The model asks for a tool, the kernel runs it and calls the model again with its result
    Given a tool "lookup" returning "looked up {args}"
    And the model calls "lookup" with {"q": "x"} as "c1"
    And the model answers "done"
    When the kernel runs
    Then tool "c1" ran
    And the request of model call 2 has the tool result "c1" with content "looked up {"q":"x"}"

  @TURN-002 @dim:waiting_messages=1
  Scenario: A second message to the same session waits until the first turn has finished
    Given a tool "probe" returning "probed"
    And the user message "first" in session "s1"
    And the user message "second" in session "s1" sent concurrently
    And the model calls in one response:
      | id | name  | args       |
      | a1 | probe | {"n": 1}   |
      | a2 | probe | {"n": 2}   |
    And the call "a1" is held until user message 2 is submitted
    And the model answers "one done"
    And the model answers "two done"
    And calls finish in the order "a1, a2"
    When the kernel runs
    Then the turns of the user messages did not overlap
    And user message 1 ends with status "completed"
    And user message 2 ends with status "completed"

  @TURN-002 @dim:waiting_messages=2
  Scenario: Two more messages arrive while a long turn runs; each waits for the one before
    Given a tool "probe" returning "probed"
    And the user message "first" in session "s1"
    And the user message "second" in session "s1" sent concurrently
    And the user message "third" in session "s1" sent concurrently
    And the model calls "probe" with {"n": 1} as "a1"
    And the call "a1" is held until user message 3 is submitted
    And the model calls "probe" with {"n": 1} as "a2"
    And the model answers "one done"
    And the model answers "two done"
    And the model answers "three done"
    When the kernel runs
    Then the turns of the user messages did not overlap

  @TURN-001
  Scenario: Two messages that arrive while a long turn runs each start a turn of their own
    Given a tool "probe" returning "probed"
    And the user message "first" in session "s1"
    And the user message "second" in session "s1" sent concurrently
    And the user message "third" in session "s1" sent concurrently
    And the model calls "probe" with {"n": 1} as "a1"
    And the call "a1" is held until user message 3 is submitted
    And the model answers "one done"
    And the model answers "two done"
    And the model answers "three done"
    When the kernel runs
    Then each user message started a turn of its own

  # Turns of *different* sessions are not checked: 000 says one turn per session at a time and
  # leaves open whether turns of different sessions may overlap (docs/spec-gaps.md), so a kernel
  # with one lock for all sessions is not wrong by the seed.

  @TURN-003
  Scenario: A later turn sends the session's earlier messages oldest first, then the new message
    Given the user message "first" in session "s1"
    And the user message "second" in session "s1"
    And the user message "third" in session "s1"
    And the model answers "one"
    And the model answers "two"
    And the model answers "three"
    When the kernel runs
    Then the conversation sent in model call 3 is:
      | user: first       |
      | assistant: one    |
      | user: second      |
      | assistant: two    |
      | user: third       |

  @TURN-004
  Scenario: The user message is stored first and is in the model request
    Given a tool "lookup"
    And the model calls "lookup" with {} as "c1"
    And the model answers "done"
    When the user sends "store me"
    Then the stored messages of user message 1 start with the user message "store me"
    And the request of model call 1 ends with the user message "store me"

  @TURN-004
  Scenario: The user message is stored before the model call, even when that call fails
    Given the model fails with status 500
    When the user sends "keep me"
    Then the user message "keep me" is stored
    And the stored messages of user message 1 start with the user message "keep me"

  @TURN-005
  Scenario: Every model request carries the stable tier of the system prompt
    Given the system prompt is "You are Zeta, the careful tester."
    And a tool "lookup"
    And the model calls "lookup" with {} as "c1"
    And the model calls "lookup" with {} as "c2"
    And the model answers "done"
    When the kernel runs
    Then the request of every model call carries the system prompt "You are Zeta, the careful tester." ahead of the conversation

  @TURN-005
  Scenario: The stable tier is in the requests of a later turn of the session too
    Given the system prompt is "You are Zeta, the careful tester."
    And the user message "first" in session "s1"
    And the user message "second" in session "s1"
    And the model answers "one"
    And the model answers "two"
    When the kernel runs
    Then the request of every model call carries the system prompt "You are Zeta, the careful tester." ahead of the conversation

  @TURN-009 @dim:session=new @dim:session=continued @dim:depth=0
  Scenario: on_session_start fires in the first turn of a new session only
    Given the user message "first" in session "s1"
    And the user message "second" in session "s1"
    And the model answers "one"
    And the model answers "two"
    When the kernel runs
    Then "on_session_start" was dispatched 1 time for user message 1
    And "on_session_start" was dispatched 0 times for user message 2

  @TURN-009 @dim:session=new @dim:depth=0
  Scenario: Each new session gets its own on_session_start
    Given the user message "first" in session "s1"
    And the user message "other" in session "s2"
    And the model answers "one"
    And the model answers "two"
    When the kernel runs
    Then "on_session_start" was dispatched 1 time for user message 1
    And "on_session_start" was dispatched 1 time for user message 2

  @TURN-010 @dim:model_calls=several
  Scenario: pre_llm_call fires once per turn, before the first model call, however many calls follow
    Given a tool "lookup"
    And the user message "first" in session "s1"
    And the user message "second" in session "s1"
    And the model calls "lookup" with {} as "c1"
    And the model calls "lookup" with {} as "c2"
    And the model answers "one"
    And the model answers "two"
    When the kernel runs
    Then "pre_llm_call" was dispatched 1 time for user message 1
    And "pre_llm_call" was dispatched 1 time for user message 2
    And for user message 1, "pre_llm_call" was dispatched before the first model call
    And for user message 2, "pre_llm_call" was dispatched before the first model call

  @TURN-011 @dim:model_call=first_of_turn
  Scenario: Context from pre_llm_call reaches the model in front of the user message
    Given the user message "first" in session "s1"
    And the user message "second" in session "s1"
    And hook "ctx" at "pre_llm_call" returns {"kind": "context", "text": "CTX-FRONT-42"} on occurrence 1
    And the model answers "one"
    And the model answers "two"
    When the kernel runs
    Then in the request of model call 2, "CTX-FRONT-42" comes in front of the user message "second"

  @TURN-012
  Scenario: Context from pre_llm_call is never stored and later turns do not see it
    Given the user message "first" in session "s1"
    And the user message "second" in session "s1"
    And hook "ctx" at "pre_llm_call" returns {"kind": "context", "text": "CTX-SECRET-7"} on occurrence 0
    And the model answers "one"
    And the model answers "two"
    When the kernel runs
    Then no stored message contains "CTX-SECRET-7"
    And the request of model call 2 does not contain "CTX-SECRET-7"

  @TURN-013 @dim:model_calls=several
  Scenario: pre_api_request and post_api_request surround every model call
    Given a tool "lookup"
    And the model calls "lookup" with {} as "c1"
    And the model calls "lookup" with {} as "c2"
    And the model answers "done"
    When the kernel runs
    Then the model was called 3 times
    And every model call comes between a pre_api_request and a post_api_request
    And "pre_api_request" was dispatched 3 times
    And "post_api_request" was dispatched 3 times

  @TURN-014
  Scenario: A failing model call fires api_request_error, then transform_api_error_classification, and no post_api_request
    Given a tool "lookup"
    And the model calls "lookup" with {} as "c1"
    And the model fails with status 503
    When the kernel runs
    Then the failed model call is followed by api_request_error, then transform_api_error_classification, and no post_api_request

  @TURN-015
  Scenario: Every assistant message is stored, those asking for tools included
    Given a tool "lookup"
    And the model calls "lookup" with {} as "c1"
    And the model calls in one response:
      | id | name   | args       |
      | c2 | lookup | {"q": "2"} |
      | c3 | lookup | {"q": "3"} |
    And the model answers "all done"
    When the kernel runs
    Then the assistant messages stored for user message 1 are:
      | assistant: calls c1     |
      | assistant: calls c2, c3 |
      | assistant: all done     |

  @TURN-016
  Scenario: An answer without tool calls runs transform_llm_output, then post_llm_call, and ends the turn
    Given a tool "lookup"
    And the model calls "lookup" with {} as "c1"
    And the model answers "done"
    And the model answers "never asked for"
    When the kernel runs
    Then the model was called 2 times
    And "transform_llm_output" was dispatched 1 time
    And "post_llm_call" was dispatched 1 time
    And the hook points of model call 2 include, in order:
      | pre_api_request      |
      | post_api_request     |
      | transform_llm_output |
      | post_llm_call        |

  @TURN-017
  Scenario: The reply is the final text as transform_llm_output left it, and post_llm_call sees that text
    Given hook "tx" at "transform_llm_output" returns {"kind": "replace", "payload": {"text": "TRANSFORMED"}}
    And the model answers "original"
    When the kernel runs
    Then the reply is "TRANSFORMED"
    And the "post_llm_call" payload has "text" equal to "TRANSFORMED"

  @TURN-019
  Scenario: on_session_start and pre_llm_call fire, in that order, before the first pre_api_request
    Given the user message "first" in session "s1"
    And the user message "second" in session "s1"
    And the model answers "one"
    And the model answers "two"
    When the kernel runs
    Then for user message 1, the hook points were first dispatched in the order:
      | on_session_start |
      | pre_llm_call     |
      | pre_api_request  |
    And for user message 2, the hook points were first dispatched in the order:
      | pre_llm_call    |
      | pre_api_request |

  @TURN-020 @dim:status=completed @dim:depth=0
  Scenario: on_session_end ends every turn of a session, after its status is stored
    Given the user message "first" in session "s1"
    And the user message "second" in session "s1"
    And a tool "lookup"
    And the model calls "lookup" with {} as "c1"
    And the model answers "one"
    And the model answers "two"
    When the kernel runs
    Then on_session_end was the last hook dispatched for user message 1
    And the final status of user message 1 was stored before on_session_end was dispatched
    And on_session_end was the last hook dispatched for user message 2
    And the final status of user message 2 was stored before on_session_end was dispatched

  @TURN-020 @dim:status=error
  Scenario: on_session_end ends a turn whose model call failed
    Given the model fails with status 500
    When the kernel runs
    Then on_session_end was the last hook dispatched for user message 1
    And the final status of user message 1 was stored before on_session_end was dispatched

  @TURN-020 @dim:status=budget_exhausted
  Scenario: on_session_end ends a turn that ran out of iterations
    Given a tool "lookup"
    And max_iterations is 1
    And the model calls "lookup" with {} as "c1"
    When the kernel runs
    Then on_session_end was the last hook dispatched for user message 1
    And the final status of user message 1 was stored before on_session_end was dispatched

  # Issue 21: every class of model failure (an HTTP error status of either family, no answer in
  # time, a stream that breaks off), on the turn's first model call and on a later one.
  @TURN-014 @dim:error_class=http-400 @dim:error_class=http-401 @dim:error_class=http-429 @dim:error_class=http-500 @dim:error_class=timeout @dim:error_class=broken_stream @dim:failing_call=first
  Scenario Outline: Every class of model failure on the first model call fires api_request_error, then transform_api_error_classification
    Given the model fails with <failure>
    When the kernel runs
    Then the failed model call is followed by api_request_error, then transform_api_error_classification, and no post_api_request

    Examples:
      | failure                        |
      | status 400                     |
      | status 401                     |
      | status 429                     |
      | status 500                     |
      | a timeout                      |
      | a broken stream after 1 chunk  |

  @TURN-014 @dim:error_class=http-400 @dim:error_class=http-401 @dim:error_class=http-429 @dim:error_class=http-500 @dim:error_class=timeout @dim:error_class=broken_stream @dim:failing_call=later
  Scenario Outline: Every class of model failure on a later model call fires api_request_error, then transform_api_error_classification
    Given a tool "lookup"
    And the model calls "lookup" with {} as "c1"
    And the model fails with <failure>
    When the kernel runs
    Then the failed model call is followed by api_request_error, then transform_api_error_classification, and no post_api_request

    Examples:
      | failure                        |
      | status 400                     |
      | status 401                     |
      | status 429                     |
      | status 500                     |
      | a timeout                      |
      | a broken stream after 1 chunk  |

  # Issue 21: a message to a session whose previous turn was cancelled in a model call. Its turn
  # runs, and never sees what the cancelled call streamed. Which of the cancelled turn's stored
  # messages stay "active" (000 step 2) is not said, so their presence is not required.
  @TURN-003 @dim:previous_turn=cancelled-in-model-call
  Scenario: A message after a turn cancelled in a model call runs without the cancelled call's text
    Given a tool "lookup"
    And the user message "first question" in session "s1"
    And the user message "second question" in session "s1"
    And the model calls "lookup" with {"q": "1"} as "c1"
    And the model answers "PPPPQQQQRRRR" in 3 chunks
    And the turn is cancelled at model call 2
    And the model answers "second answer"
    When the kernel runs
    Then user message 1 ends with status "interrupted"
    And the request of model call 3 ends with the user message "second question"
    And the request of model call 3 does not contain "PPPP"
    And user message 2 ends with status "completed"

  # Issue 21: the lock is the whole turn's, on_session_end included (000 step 1, step 6).
  @TURN-002 @dim:lock_released=after-on_session_end
  Scenario: A message waiting on the session lock starts nothing until on_session_end has returned
    Given a tool "lookup"
    And the model calls "lookup" with {} as "c1"
    And the call "c1" is held until user message 2 is submitted
    And the model answers "one"
    And the model answers "two"
    And the user message "first" in session "s1"
    And the user message "second" in session "s1" sent concurrently
    And on_session_end of user message 1 is still running when user message 2 could start
    When the kernel runs
    Then no hook, model call or tool call of user message 2 came while the on_session_end of user message 1 ran

  # Issue 21 (blind round 2): the session's first turn did not complete; the session is not new
  # any more, so its second turn dispatches no on_session_start.
  @TURN-009 @dim:session=continued @dim:previous_turn=error
  Scenario: on_session_start does not fire again after a first turn whose model call failed
    Given the user message "first" in session "s1"
    And the user message "second" in session "s1"
    And the model fails with status 500
    And the model answers "two"
    When the kernel runs
    Then "on_session_start" was dispatched 1 time for user message 1
    And "on_session_start" was dispatched 0 times for user message 2

  @TURN-009 @dim:session=continued @dim:previous_turn=budget_exhausted
  Scenario: on_session_start does not fire again after a first turn that ran out of iterations
    Given a tool "lookup"
    And max_iterations is 1
    And the user message "first" in session "s1"
    And the user message "second" in session "s1"
    And the model calls "lookup" with {} as "a"
    And the model answers "two"
    When the kernel runs
    Then "on_session_start" was dispatched 1 time for user message 1
    And "on_session_start" was dispatched 0 times for user message 2

  # Blind round 2: pre_llm_call fires once per turn, and its context goes in front of the user
  # message for the model - on every model call of the turn, not only the first.
  @TURN-011 @dim:model_call=later_of_turn
  Scenario: Context from pre_llm_call reaches every model call of the turn
    Given a tool "lookup" returning "looked up {args}"
    And hook "ctx" at "pre_llm_call" returns {"kind": "context", "text": "CTX-EVERY-CALL-9"}
    And the model calls "lookup" with {"q": "1"} as "c1"
    And the model answers "done"
    When the kernel runs
    Then in the request of model call 1, "CTX-EVERY-CALL-9" comes in front of the user message "hello"
    And in the request of model call 2, "CTX-EVERY-CALL-9" comes in front of the user message "hello"
