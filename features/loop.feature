@kernel
Feature: The RunTurn algorithm (003): the order of a turn's steps and hook chains
  A kernel runs a session as a loop of RunTurns. Every turn runs these steps in this order:
  1 context-assemble {history, budget}; 2 pre-model-call {payload, tool_specs, params};
  3-4 the model call, accumulated into one assistant message; 5 post-model-response (the
  message); 6 no tool_use blocks: done check; 7 pre-tool-call for every block, in declaration
  order; 8 split by kind; 9 data-source calls (policy precheck, then concurrently); 9b
  interactive calls (precheck, then one at a time); 10-11 the plan of resource calls goes
  through the plan-ready veto chain; 12 the approved items are applied; 13 post-tool-call for
  every (call, result); 14 post-apply (the plan); 15 history ++ message ++ tool_results;
  16-17 doom-loop and bounds checks; 18 loop to step 1 unless something fired.
  session-start fires once before the first RunTurn (whether again for a later session run of the
  same session is open: akc readings session-start-frequency), session-end once after the loop
  exits, whichever way. Steps 1-2 and 5-7 are hook chains: hooks run in registration
  order and each receives what the one before it returned; at the other points several hooks all
  run, in an order the seeds leave to a document we do not have (reading hook-order-outside-chains).
  The order in which post-tool-call is dispatched across calls is not fixed (step 13 takes the
  union of the three result sets); these scenarios never depend on it.

  # ------------------------------------------------------------------ steps 1 and 2

  @LOOP-001 @dim:turn=first @dim:turn=later @dim:calls_per_response=1
  Scenario: Every turn begins with context-assemble, carrying the history and the budget
    Given a tool "lookup" of kind "data_source"
    And the model calls "lookup" with {"q": "1"} as "a"
    And the model calls "lookup" with {"q": "2"} as "b"
    And the model answers "done"
    When the kernel runs
    Then every model call starts with "context-assemble" carrying the history and the budget

  @LOOP-001 @dim:turn=later @dim:calls_per_response=several
  Scenario: Every turn begins with context-assemble also after turns with several, repeated and mixed calls
    Given the tools:
      | name  | kind        | concurrency |
      | fetch | data_source | safe        |
      | write | resource    |             |
      | ask   | interactive |             |
    And the model calls, one response per model call:
      | turn | id | name  | args       |
      | 1    | a1 | fetch | {"q": "1"} |
      | 1    | a2 | fetch | {"q": "1"} |
      | 2    | b1 | write | {"p": "2"} |
      | 2    | b2 | fetch | {"q": "2"} |
      | 2    | b3 | ask   | {"n": 2}   |
    And the model answers "done after two turns"
    When the kernel runs
    Then every model call starts with "context-assemble" carrying the history and the budget

  # Tagged with its subject only: whether each turn starts with context-assemble and its budget is
  # LOOP-001's (the scenarios above), so a kernel without a budget does not fail LOOP-012 too.
  @LOOP-012 @dim:blocks=identical
  Scenario: A long session with several, repeated and mixed calls per turn carries the whole history every turn
    Given the tools:
      | name  | kind        | concurrency |
      | fetch | data_source | safe        |
      | write | resource    |             |
      | ask   | interactive |             |
    And the model calls, one response per model call:
      | turn | id | name  | args         |
      | 1    | a1 | fetch | {"q": "1"}   |
      | 1    | a2 | fetch | {"q": "1"}   |
      | 2    | b1 | write | {"p": "2"}   |
      | 2    | b2 | fetch | {"q": "2"}   |
      | 3    | c1 | ask   | {"n": 3}     |
      | 3    | c2 | write | {"p": "3"}   |
      | 3    | c3 | fetch | {"q": "3"}   |
      | 4    | d1 | fetch | {"q": "4"}   |
      | 5    | e1 | write | {"p": "5"}   |
      | 5    | e2 | write | {"p": "5"}   |
      | 6    | f1 | fetch | {"q": "6"}   |
    And the model answers "done after six turns"
    When the kernel runs
    Then every model call's history is the previous one's plus its assistant message and one tool_result per call

  @LOOP-002 @dim:turn=first @dim:tools_in_history=no
  Scenario: pre-model-call gets the context-assemble chain's replaced output, the tool specs and the params
    Given a tool "lookup" of kind "data_source"
    And a tool "write" of kind "resource"
    And hook "trim" at "context-assemble" replaces the payload with:
      """
      {
        "history": [
          {
            "role": "user",
            "text": "rewritten by context-assemble"
          }
        ],
        "budget": {
          "turns_used": 0
        }
      }
      """
    And the model answers "done"
    When the kernel runs
    Then the pre-model-call payload of model call 1 carries the context-assemble output, the tool specs and the params

  @LOOP-002 @dim:turn=later @dim:tools_in_history=yes
  Scenario: pre-model-call of a later turn gets that turn's context-assemble output
    Given a tool "lookup" of kind "data_source"
    And the model calls "lookup" with {"q": "1"} as "a"
    And the model answers "done"
    When the kernel runs
    Then the pre-model-call payload of model call 1 carries the context-assemble output, the tool specs and the params
    And the pre-model-call payload of model call 2 carries the context-assemble output, the tool specs and the params

  # ------------------------------------------------------------------ step 3

  @LOOP-003
  Scenario: The model is sent exactly the request a pre-model-call hook put in place
    Given a tool "lookup" of kind "data_source"
    And a tool "write" of kind "resource"
    And hook "swap" at "pre-model-call" replaces the payload with:
      """
      {
        "payload": {
          "history": [
            {
              "role": "user",
              "text": "asked by pre-model-call"
            }
          ],
          "budget": {}
        },
        "tool_specs": [
          {
            "name": "lookup",
            "description": "only this one",
            "input_schema": {
              "type": "object"
            }
          }
        ],
        "params": {
          "temperature": 0.25
        }
      }
      """
    And the model answers "done"
    When the kernel runs
    Then the request of model call 1 is the one the pre-model-call chain produced

  @LOOP-003
  Scenario: Without a replacement the model gets the request built from the pre-model-call payload
    Given a tool "lookup" of kind "data_source"
    And the model calls "lookup" with {"q": "1"} as "a"
    And the model answers "done"
    When the kernel runs
    Then the request of model call 1 is the one the pre-model-call chain produced
    And the request of model call 2 is the one the pre-model-call chain produced

  @LOOP-003
  Scenario: A history replaced at context-assemble is what the model sees
    Given hook "trim" at "context-assemble" replaces the payload with:
      """
      {
        "history": [
          {
            "role": "user",
            "text": "rewritten by context-assemble"
          }
        ],
        "budget": {}
      }
      """
    And the model answers "done"
    When the kernel runs
    Then the request of model call 1 is the one the pre-model-call chain produced

  # ------------------------------------------------------------------ steps 4 and 5

  @LOOP-004 @dim:turn=first @dim:turn=later
  Scenario: post-model-response gets the whole streamed message once, after the stream ended
    Given a tool "lookup" of kind "data_source"
    And the model script:
      """
      [{"text": "let me look that up", "chunks": 4,
        "tool_calls": [{"id": "a", "name": "lookup", "args": {"q": "x"}},
                       {"id": "b", "name": "lookup", "args": {"q": "y", "n": 2}}]},
       {"text": "all done now", "chunks": 3}]
      """
    When the kernel runs
    Then "post-model-response" of model call 1 carries the whole streamed message, dispatched after the stream ended and before any tool hook
    And "post-model-response" of model call 2 carries the whole streamed message, dispatched after the stream ended and before any tool hook
    And "post-model-response" was dispatched once in every model call

  @LOOP-005 @dim:replacement=other_calls
  Scenario: The tool calls of a post-model-response replacement are the ones executed and kept
    Given a tool "lookup" of kind "data_source"
    And hook "edit" at "post-model-response" on occurrence 0 replaces the payload with:
      """
      {
        "role": "assistant",
        "tool_calls": [
          {
            "id": "r1",
            "name": "lookup",
            "args": {
              "q": "replaced"
            }
          }
        ]
      }
      """
    And the model calls "lookup" with {"q": "original"} as "a"
    And the model answers "done"
    When the kernel runs
    Then call "r1" ran with {"q": "replaced"}
    And tool "a" did not run
    And the request of model call 2 holds an assistant message calling "r1" and none calling "a"
    And the tool results sent in model call 2 are in the order "r1"

  @LOOP-005 @dim:replacement=final_text
  Scenario: A final answer replaced at post-model-response is the one kept in the history
    Given hook "edit" at "post-model-response" returns {"kind": "replace", "payload": {"role": "assistant", "text": "the replaced answer"}} on occurrence 0
    And the user message "first question"
    And the user message "second question" in session "s1"
    And the model answers "the original answer"
    And the model answers "second answer"
    When the kernel runs
    Then the request of model call 2 holds an assistant message saying "the replaced answer" and none saying "the original answer"

  @LOOP-005 @dim:replacement=final_text
  Scenario: The message the post-model-response chain returns is its last hook's replacement
    Given hook "first" at "post-model-response" returns {"kind": "replace", "payload": {"role": "assistant", "text": "from the first hook"}} on occurrence 0
    And hook "second" at "post-model-response" returns {"kind": "replace", "payload": {"role": "assistant", "text": "from the second hook"}} on occurrence 0
    And the user message "first question"
    And the user message "second question" in session "s1"
    And the model answers "from the model"
    And the model answers "second answer"
    When the kernel runs
    Then the request of model call 2 holds an assistant message saying "from the second hook" and none saying "from the model"
    And the request of model call 2 holds an assistant message saying "from the second hook" and none saying "from the first hook"

  @LOOP-005 @dim:replacement=no_calls_key
  Scenario: A replacement without tool calls ends the loop even though the model asked for tools
    Given a tool "lookup" of kind "data_source"
    And hook "edit" at "post-model-response" returns {"kind": "replace", "payload": {"role": "assistant", "text": "no tools after all"}} on occurrence 0
    And the model calls "lookup" with {"q": "original"} as "a"
    And the model answers "should not be asked"
    When the kernel runs
    Then tool "a" did not run

  # ------------------------------------------------------------------ step 6

  @LOOP-006 @dim:turn=later
  Scenario: A turn without tool_use blocks dispatches no tool hook
    Given a tool "lookup" of kind "data_source"
    And a tool "write" of kind "resource"
    And the model calls "lookup" with {"q": "1"} as "a"
    And the model answers "done"
    When the kernel runs
    Then no tool hook was dispatched in model call 2

  @LOOP-006 @dim:turn=first
  Scenario: A plain answer dispatches no tool hook at all
    Given a tool "write" of kind "resource"
    And the model answers "hi"
    When the kernel runs
    Then no tool hook was dispatched in model call 1

  # ------------------------------------------------------------------ step 7

  @LOOP-007 @dim:calls_per_response=3+ @dim:blocks=distinct @dim:kinds=mixed @dim:unknown_tool=no
  Scenario: pre-tool-call runs for every block in declaration order before any tool starts
    Given the tools:
      | name  | kind        | concurrency |
      | write | resource    |             |
      | ask   | interactive |             |
      | fetch | data_source | safe        |
    And the model calls in one response:
      | id | name  | args       |
      | r1 | write | {"p": "1"} |
      | i1 | ask   | {}         |
      | d1 | fetch | {"q": "1"} |
      | r2 | write | {"p": "2"} |
      | d2 | fetch | {"q": "2"} |
    And the model answers "done"
    When the kernel runs
    Then "pre-tool-call" of model call 1 was dispatched for "r1, i1, d1, r2, d2" in this order, before any tool of it started

  @LOOP-007 @dim:calls_per_response=3+ @dim:blocks=identical @dim:kinds=mixed
  Scenario: pre-tool-call runs for every block, identical blocks included
    Given the tools:
      | name  | kind        | concurrency |
      | write | resource    |             |
      | fetch | data_source | safe        |
    And the model calls in one response:
      | id | name  | args       |
      | r1 | write | {"p": "1"} |
      | d1 | fetch | {"q": "1"} |
      | r2 | write | {"p": "1"} |
      | d2 | fetch | {"q": "1"} |
      | d3 | fetch | {"q": "1"} |
    And the model answers "done"
    When the kernel runs
    Then "pre-tool-call" of model call 1 was dispatched for "r1, d1, r2, d2, d3" in this order, before any tool of it started

  @LOOP-007 @dim:calls_per_response=1 @dim:blocks=distinct @dim:kinds=one
  Scenario: pre-tool-call for a single data-source call comes before it runs
    Given a tool "fetch" of kind "data_source"
    And the model calls "fetch" with {"q": "1"} as "d1"
    And the model calls "fetch" with {"q": "2"} as "d2"
    And the model answers "done"
    When the kernel runs
    Then "pre-tool-call" of model call 1 was dispatched for "d1" in this order, before any tool of it started
    And "pre-tool-call" of model call 2 was dispatched for "d2" in this order, before any tool of it started

  # ------------------------------------------------------------------ steps 9 and 9b

  @LOOP-008
  Scenario: Data-source calls finish before the first interactive call starts, whatever the declaration order
    Given the tools:
      | name  | kind        | concurrency |
      | ask   | interactive |             |
      | fetch | data_source | safe        |
    And the model calls in one response:
      | id | name  | args       |
      | i1 | ask   | {}         |
      | d1 | fetch | {"q": "1"} |
      | i2 | ask   | {"n": 2}   |
      | d2 | fetch | {"q": "2"} |
    And the model answers "done"
    When the kernel runs
    Then every data-source call of model call 1 ends before any interactive call of it starts

  # ------------------------------------------------------------------ steps 10 to 12

  @LOOP-009 @dim:plan=resource_calls
  Scenario: plan-ready sits between the data-source and interactive calls and the resource calls
    Given the tools:
      | name  | kind        |
      | write | resource    |
      | ask   | interactive |
      | fetch | data_source |
    And the model calls in one response:
      | id | name  | args       |
      | r1 | write | {"p": "1"} |
      | i1 | ask   | {}         |
      | d1 | fetch | {"q": "1"} |
    And the model answers "done"
    When the kernel runs
    Then "plan-ready" of model call 1 was dispatched after every data-source and interactive call ended and before any resource call started

  @LOOP-009 @dim:plan=empty
  Scenario: plan-ready is dispatched even when the plan is empty
    Given the tools:
      | name  | kind        |
      | ask   | interactive |
      | fetch | data_source |
    And the model calls "fetch" with {"q": "1"} as "d1"
    And the model calls "ask" with {} as "i1"
    And the model answers "done"
    When the kernel runs
    Then "plan-ready" was dispatched 1 time in model call 1
    And "plan-ready" was dispatched 1 time in model call 2

  @LOOP-009 @dim:plan=all_refused
  Scenario: plan-ready is dispatched when every call of the turn was refused by the precheck
    Given a tool "fetch" of kind "data_source"
    And the policy denies "fetch" because "not today"
    And the model calls "fetch" with {"q": "1"} as "d1"
    And the model answers "done"
    When the kernel runs
    Then "plan-ready" was dispatched 1 time in model call 1

  # ------------------------------------------------------------------ step 13

  @LOOP-010 @dim:results=success @dim:blocks=distinct
  Scenario: post-tool-call comes once per call, with the call and its result, after every call ended
    Given the tools:
      | name  | kind        | result         |
      | write | resource    | wrote {args}   |
      | ask   | interactive | asked {args}   |
      | fetch | data_source | fetched {args} |
    And the model calls in one response:
      | id | name  | args       |
      | r1 | write | {"p": "1"} |
      | i1 | ask   | {"n": 1}   |
      | d1 | fetch | {"q": "1"} |
      | d2 | fetch | {"q": "2"} |
    And the model answers "done"
    When the kernel runs
    Then "post-tool-call" of model call 1 was dispatched once per call, with the call and its result, after every call of it ended

  @LOOP-010 @dim:results=refused_vetoed_failed @dim:blocks=distinct
  Scenario: post-tool-call is dispatched for refused, vetoed and failing calls too
    Given the tools:
      | name  | kind        |
      | write | resource    |
      | fetch | data_source |
    And the policy denies "d1" because "not allowed"
    And hook "gate" at "plan-ready" returns {"kind": "veto", "call_ids": ["r1"], "reason": "too risky"}
    And the call "d2" fails with "disk on fire"
    And the model calls in one response:
      | id | name  | args       |
      | r1 | write | {"p": "1"} |
      | d1 | fetch | {"q": "1"} |
      | d2 | fetch | {"q": "2"} |
      | r2 | write | {"p": "2"} |
    And the model answers "done"
    When the kernel runs
    Then "post-tool-call" of model call 1 was dispatched once per call, with the call and its result, after every call of it ended

  # ------------------------------------------------------------------ step 14

  @LOOP-011 @dim:plan=vetoed_item
  Scenario: post-apply comes after every post-tool-call, with the plan as the veto chain left it
    Given the tools:
      | name  | kind        |
      | write | resource    |
      | fetch | data_source |
    And hook "gate" at "plan-ready" returns {"kind": "veto", "call_ids": ["r2"], "reason": "too risky"}
    And the model calls in one response:
      | id | name  | args       |
      | r1 | write | {"p": "1"} |
      | d1 | fetch | {"q": "1"} |
      | r2 | write | {"p": "2"} |
    And the model answers "done"
    When the kernel runs
    Then "post-apply" of model call 1 was dispatched after all its post-tool-call dispatches and carries the plan the veto chain left
    And "post-apply" was dispatched 1 time in model call 1

  @LOOP-011 @dim:plan=replaced_by_hook
  Scenario: post-apply carries a plan a plan-ready hook replaced
    Given a tool "write" of kind "resource"
    And hook "rewrite" at "plan-ready" replaces the payload with:
      """
      {
        "items": [
          {
            "call_id": "r1",
            "name": "write",
            "args": {
              "p": "1"
            },
            "vetoed": false,
            "reason": null
          }
        ]
      }
      """
    And the model calls in one response:
      | id | name  | args       |
      | r1 | write | {"p": "1"} |
    And the model answers "done"
    When the kernel runs
    Then "post-apply" of model call 1 was dispatched after all its post-tool-call dispatches and carries the plan the veto chain left

  @LOOP-011 @dim:plan=empty
  Scenario: post-apply is dispatched once in every turn with tool calls, an empty plan included
    Given a tool "fetch" of kind "data_source"
    And the model calls "fetch" with {"q": "1"} as "d1"
    And the model calls "fetch" with {"q": "2"} as "d2"
    And the model answers "done"
    When the kernel runs
    Then "post-apply" of model call 1 was dispatched after all its post-tool-call dispatches and carries the plan the veto chain left
    And "post-apply" of model call 2 was dispatched after all its post-tool-call dispatches and carries the plan the veto chain left

  # ------------------------------------------------------------------ step 15

  @LOOP-012 @dim:results=success @dim:blocks=distinct
  Scenario: The next turn's history is the last one plus the assistant message and one result per call
    Given the tools:
      | name  | kind        |
      | write | resource    |
      | ask   | interactive |
      | fetch | data_source |
    And the model calls in one response:
      | id | name  | args       |
      | r1 | write | {"p": "1"} |
      | i1 | ask   | {}         |
      | d1 | fetch | {"q": "1"} |
    And the model calls "fetch" with {"q": "2"} as "d2"
    And the model answers "done"
    When the kernel runs
    Then the history sent in model call 2 is that of model call 1 plus its assistant message and one tool_result per call
    And the history sent in model call 3 is that of model call 2 plus its assistant message and one tool_result per call
    And the request of model call 2 holds the assistant message of model call 1 and one tool_result per call
    And the request of model call 3 holds the assistant message of model call 2 and one tool_result per call

  @LOOP-012 @dim:results=refused_vetoed
  Scenario: Refused and vetoed calls still hand on one tool_result each
    Given the tools:
      | name  | kind        |
      | write | resource    |
      | fetch | data_source |
    And the policy denies "d1" because "not allowed"
    And hook "gate" at "plan-ready" returns {"kind": "veto", "call_ids": ["r1"], "reason": "too risky"}
    And the model calls in one response:
      | id | name  | args       |
      | d1 | fetch | {"q": "1"} |
      | r1 | write | {"p": "1"} |
      | d2 | fetch | {"q": "2"} |
    And the model answers "done"
    When the kernel runs
    Then the history sent in model call 2 is that of model call 1 plus its assistant message and one tool_result per call
    And the request of model call 2 holds the assistant message of model call 1 and one tool_result per call

  # ------------------------------------------------------------------ step 18

  @LOOP-013 @dim:calls=run
  Scenario: Each turn with tool calls is followed by another turn, once its own hooks are over
    Given a tool "fetch" of kind "data_source"
    And the model calls "fetch" with {"q": "1"} as "d1"
    And the model calls "fetch" with {"q": "2"} as "d2"
    And the model calls "fetch" with {"q": "3"} as "d3"
    And the model answers "done"
    When the kernel runs
    Then every model call with tool calls is followed by another model call

  @LOOP-013 @dim:calls=all_vetoed_or_refused
  Scenario: A turn whose calls were all vetoed or refused still leads to another turn
    Given the tools:
      | name  | kind        |
      | write | resource    |
      | fetch | data_source |
    And the policy denies "fetch"
    And hook "gate" at "plan-ready" returns {"kind": "veto", "call_ids": ["r1"], "reason": "no"}
    And the model calls in one response:
      | id | name  | args       |
      | r1 | write | {"p": "1"} |
      | d1 | fetch | {"q": "1"} |
    And the model answers "done"
    When the kernel runs
    Then every model call with tool calls is followed by another model call

  # ------------------------------------------------------------------ hook chains

  @LOOP-014
  Scenario Outline: Hooks at <point> run in registration order, each getting the previous one's output
    Given a tool "lookup" of kind "data_source"
    And hook "zeta" at "<point>" returns <replacement> on occurrence 0
    And a hook "alpha" at "<point>"
    And the model calls "lookup" with {"q": "1"} as "a"
    And the model answers "done"
    When the kernel runs
    Then the hooks at "<point>" run in the order "zeta, alpha" at every dispatch
    And hook "alpha" at "<point>" received the replacement of hook "zeta"

    Examples:
      | point               | replacement                                                                                                                                                      |
      | context-assemble    | {"kind": "replace", "payload": {"history": [{"role": "user", "text": "from zeta"}], "budget": {"turns_used": 0}}}                                                 |
      | pre-model-call      | {"kind": "replace", "payload": {"payload": {"history": [{"role": "user", "text": "from zeta"}], "budget": {}}, "tool_specs": [], "params": {"temperature": 0.5}}} |
      | post-model-response | {"kind": "replace", "payload": {"role": "assistant", "tool_calls": [{"id": "z1", "name": "lookup", "args": {"q": "zeta"}}]}}                                      |

  @LOOP-014
  Scenario: Two replacing hooks at post-model-response: the second gets the first one's message
    Given hook "first" at "post-model-response" returns {"kind": "replace", "payload": {"role": "assistant", "text": "from the first hook"}}
    And hook "second" at "post-model-response" returns {"kind": "replace", "payload": {"role": "assistant", "text": "from the second hook"}}
    And the model answers "from the model"
    When the kernel runs
    Then hook "second" at "post-model-response" received the replacement of hook "first"

  @LOOP-014
  Scenario: Hooks at the tool points and the session points all run at every dispatch (order open outside the plain chains)
    Given a tool "write" of kind "resource"
    And a hook "zeta" at "session-start"
    And a hook "alpha" at "session-start"
    And a hook "zeta2" at "pre-tool-call"
    And a hook "alpha2" at "pre-tool-call"
    And a hook "zeta3" at "plan-ready"
    And a hook "alpha3" at "plan-ready"
    And a hook "zeta4" at "post-tool-call"
    And a hook "alpha4" at "post-tool-call"
    And a hook "zeta5" at "session-end"
    And a hook "alpha5" at "session-end"
    And a hook "omega2" at "pre-tool-call"
    And the model calls in one response:
      | id | name  | args       |
      | r1 | write | {"p": "1"} |
      | r2 | write | {"p": "2"} |
    And the model answers "done"
    When the kernel runs
    Then the hooks at "session-start" run in the order "zeta, alpha" at every dispatch
    And the hooks at "pre-tool-call" run in the order "zeta2, alpha2, omega2" at every dispatch
    And the hooks at "plan-ready" run in the order "zeta3, alpha3" at every dispatch
    And the hooks at "post-tool-call" run in the order "zeta4, alpha4" at every dispatch
    And the hooks at "session-end" run in the order "zeta5, alpha5" at every dispatch

  # ------------------------------------------------------------------ session-start

  @LOOP-015 @dim:session_runs=2
  Scenario: session-start opens every session run, a second run of the same session included
    Given a tool "fetch" of kind "data_source"
    And the user message "first question"
    And the user message "second question" in session "s1"
    And the model calls "fetch" with {"q": "1"} as "d1"
    And the model answers "first answer"
    And the model answers "second answer"
    When the kernel runs
    Then "session-start" was dispatched first in each session run, before its first "context-assemble"

  @LOOP-015 @dim:session_runs=3
  Scenario: session-start opens the first of three session runs, and the later ones all alike
    Given a tool "fetch" of kind "data_source"
    And the user message "first question"
    And the user message "second question" in session "s1"
    And the user message "third question" in session "s1"
    And the model answers "first answer"
    And the model calls "fetch" with {"q": "2"} as "d2"
    And the model answers "second answer"
    And the model answers "third answer"
    When the kernel runs
    Then "session-start" was dispatched first in each session run, before its first "context-assemble"

  @LOOP-015 @dim:run_ends_by=max_turns
  Scenario: session-start fires once in a session run ended by max_turns
    Given a tool "fetch" of kind "data_source"
    And max_turns is 2
    And the model calls "fetch" with {"q": "1"} as "d1"
    And the model calls "fetch" with {"q": "2"} as "d2"
    And the model answers "final answer"
    When the kernel runs
    Then "session-start" was dispatched once, before the first "context-assemble"

  @LOOP-015 @dim:run_ends_by=doom_loop
  Scenario: session-start fires once in a session run ended by the doom-loop detector
    Given a tool "fetch" of kind "data_source"
    And the doom-loop threshold is 3
    And the model calls "fetch" with {"q": "same"} 3 times
    And the model answers "final answer"
    When the kernel runs
    Then "session-start" was dispatched once, before the first "context-assemble"

  @LOOP-015 @dim:run_ends_by=cancel
  Scenario: session-start fires once in a cancelled session run
    Given a tool "fetch" of kind "data_source"
    And the turn is cancelled at hook "pre-tool-call"
    And the model calls "fetch" with {"q": "1"} as "d1"
    And the model answers "done"
    When the kernel runs
    Then "session-start" was dispatched once, before the first "context-assemble"

  @LOOP-015 @dim:run_ends_by=model_error
  Scenario: session-start fires once in a session run whose model call fails
    Given a tool "fetch" of kind "data_source"
    And the model calls "fetch" with {"q": "1"} as "d1"
    And the model fails with status 500
    When the kernel runs
    Then "session-start" was dispatched once, before the first "context-assemble"

  @LOOP-015 @dim:run_ends_by=hook_raise
  Scenario: session-start fires once in a session run whose hook raises
    Given a tool "fetch" of kind "data_source"
    And hook "boom" at "post-tool-call" returns {"kind": "raise", "message": "hook broke"}
    And the model calls "fetch" with {"q": "1"} as "d1"
    And the model answers "done"
    When the kernel runs
    Then "session-start" was dispatched once, before the first "context-assemble"

  # ------------------------------------------------------------------ session-end

  @LOOP-020 @dim:error=model_5xx
  Scenario: session-end closes a session run whose model call fails
    Given a tool "fetch" of kind "data_source"
    And the model calls "fetch" with {"q": "1"} as "d1"
    And the model fails with status 500
    When the kernel runs
    Then "session-end" was dispatched last in each session run, after every other hook of it

  @LOOP-020 @dim:error=hook_raised
  Scenario: session-end closes a session run whose hook raises
    Given a tool "fetch" of kind "data_source"
    And hook "boom" at "post-tool-call" returns {"kind": "raise", "message": "hook broke"}
    And the model calls "fetch" with {"q": "1"} as "d1"
    And the model answers "done"
    When the kernel runs
    Then "session-end" was dispatched last in each session run, after every other hook of it


  @LOOP-016 @dim:session_runs=1 @dim:done_by=plain_answer
  Scenario: session-end closes a session run ended by done detection, after every other hook
    Given a tool "fetch" of kind "data_source"
    And the model calls "fetch" with {"q": "1"} as "d1"
    And the model answers "done"
    When the kernel runs
    Then "session-end" was dispatched last in each session run, after every other hook of it

  @LOOP-016 @dim:session_runs=2 @dim:done_by=plain_answer
  Scenario: session-end closes each of two session runs of one session
    Given a tool "fetch" of kind "data_source"
    And the user message "first question"
    And the user message "second question" in session "s1"
    And the model calls "fetch" with {"q": "1"} as "d1"
    And the model answers "first answer"
    And the model answers "second answer"
    When the kernel runs
    Then "session-end" was dispatched last in each session run, after every other hook of it

  @LOOP-016 @dim:done_by=terminal_tool @dim:session_runs=1
  Scenario: session-end closes a session run ended by a terminal tool
    Given a tool "finish" of kind "resource" that terminates the turn
    And the model calls "finish" with {"summary": "ok"} as "f1"
    And the model answers "never asked"
    When the kernel runs
    Then "session-end" was dispatched last in each session run, after every other hook of it

  @LOOP-017 @dim:limit=max_turns
  Scenario: session-end fires once after the final tool-less turn of a max_turns limit
    Given a tool "fetch" of kind "data_source"
    And max_turns is 2
    And the model calls "fetch" with {"q": "1"} as "d1"
    And the model calls "fetch" with {"q": "2"} as "d2"
    And the model answers "final answer"
    When the kernel runs
    Then "session-end" was dispatched once, after the last model call

  @LOOP-017 @dim:limit=doom_loop
  Scenario: session-end fires once after the final tool-less turn of a doom loop
    Given a tool "fetch" of kind "data_source"
    And the doom-loop threshold is 3
    And the model calls "fetch" with {"q": "same"} 3 times
    And the model answers "final answer"
    When the kernel runs
    Then "session-end" was dispatched once, after the last model call

  @LOOP-018 @dim:cancel_at=hook_dispatch
  Scenario Outline: session-end fires once when the session run is cancelled at <point>
    Given the tools:
      | name  | kind        |
      | write | resource    |
      | fetch | data_source |
    And the turn is cancelled at hook "<point>" occurrence <occurrence>
    And the model calls in one response:
      | id | name  | args       |
      | d1 | fetch | {"q": "1"} |
      | r1 | write | {"p": "1"} |
    And the model answers "done"
    When the kernel runs
    Then "session-end" was dispatched once, after the cancellation

    Examples:
      | point               | occurrence |
      | pre-model-call      | 1          |
      | pre-model-call      | 2          |
      | post-model-response | 1          |
      | pre-tool-call       | 2          |
      | plan-ready          | 1          |
      | post-tool-call      | 1          |
      | post-apply          | 1          |

  @LOOP-018 @dim:cancel_at=tool_running
  Scenario: session-end fires once when the session run is cancelled while a tool runs
    Given a tool "fetch" of kind "data_source"
    And the turn is cancelled when call "d1" starts
    And the model calls "fetch" with {"q": "1"} as "d1"
    And the model answers "done"
    When the kernel runs
    Then "session-end" was dispatched once, after the cancellation

  # A hook may hand back the message with `tool_calls: []` (issue 21, "several of a kind"): an
  # empty list is no tool_use block, exactly as a message without the key.
  # LOOP-005's subject (what the chain hands back is what is acted on); that a turn without tool_use
  # dispatches no tool hook is LOOP-006's own scenarios' (a kernel without the point fails LOOP-005
  # here, once).
  @LOOP-005 @dim:replacement=empty_calls_list
  Scenario: A post-model-response replacement with an empty tool_calls list ends the loop without tool hooks
    Given a tool "lookup" of kind "data_source"
    And a tool "write" of kind "resource"
    And hook "edit" at "post-model-response" returns {"kind": "replace", "payload": {"role": "assistant", "text": "no tools after all", "tool_calls": []}} on occurrence 0
    And the model calls "lookup" with {"q": "original"} as "a"
    And the model answers "should not be asked"
    When the kernel runs
    Then tool "a" did not run
    And "post-model-response" was dispatched 1 time
    And "pre-tool-call" was dispatched 0 times
    And "plan-ready" was dispatched 0 times
    And "post-apply" was dispatched 0 times
    And the model was called 1 time
    And the run ends with subtype "success"

  # Error classes (issue 21): a kernel that handles only some failures of its model client (5xx,
  # not a 4xx it blames on its own request, not a stream broken after it began) passes 5xx alone.
  # Whether the run then ends with a status or the kernel raises out of its API is not LOOP-020's
  # subject ("session-end is dispatched once when the run ends with an error"): not checked here.
  @LOOP-020 @dim:error=model_4xx @dim:error=model_5xx @dim:error=model_mid_stream
  Scenario Outline: session-end closes a session run whose model call fails with status <status> after <after> chunks
    Given a tool "fetch" of kind "data_source"
    And the model calls "fetch" with {"q": "1"} as "d1"
    And the model fails with status <status> after <after> chunks
    When the kernel runs
    Then "session-end" was dispatched last in each session run, after every other hook of it

    Examples:
      | status | after |
      | 400    | 0     |
      | 429    | 0     |
      | 503    | 0     |
      | 500    | 1     |

  # Identical calls of one response (issue 21, "repeated or distinct"): one post-tool-call each.
  @LOOP-010 @dim:results=success @dim:blocks=identical
  Scenario: post-tool-call comes once for each of several identical calls
    Given a tool "fetch" of kind "data_source" with concurrency safe
    And a tool "write" of kind "resource"
    And the model calls in one response:
      | id | name  | args       |
      | d1 | fetch | {"q": "1"} |
      | d2 | fetch | {"q": "1"} |
      | r1 | write | {"p": "1"} |
      | r2 | write | {"p": "1"} |
    And the model answers "done"
    When the kernel runs
    Then "post-tool-call" of model call 1 was dispatched once per call, with the call and its result, after every call of it ended

  # The limit-reached turn is a turn (issue 21): steps 1 and 5 run in it too. One scenario per
  # subject (one fault, one verdict): a kernel without post-model-response fails LOOP-004 only.
  @LOOP-001 @dim:turn=limit_reached
  Scenario: The limit-reached turn also begins with context-assemble
    Given a tool "lookup" of kind "data_source"
    And max_turns is 1
    And the model calls "lookup" with {"q": "1"} as "a"
    And the model calls "lookup" with {"q": "2"} as "b"
    And the model answers "final answer"
    When the kernel runs
    Then every model call starts with "context-assemble" carrying the history and the budget

  @LOOP-004 @dim:turn=limit_reached
  Scenario: The limit-reached turn also dispatches post-model-response
    Given a tool "lookup" of kind "data_source"
    And max_turns is 1
    And the model calls "lookup" with {"q": "1"} as "a"
    And the model calls "lookup" with {"q": "2"} as "b"
    And the model answers "final answer"
    When the kernel runs
    Then "post-model-response" was dispatched once in every model call

  # ------------------------------------------------------------------ child sessions and unknown tools (blind round 2)

  # A delegated child runs a session of its own: session-start before its first RunTurn and
  # session-end after its loop exits, as for the root session.
  @cap_subagents @LOOP-015 @dim:depth=0 @dim:depth=1
  Scenario: session-start opens every session, a delegated child's included
    Given a delegation tool "delegate"
    And the model calls "delegate" with {"goal": "sub task"} as "d1"
    And the model answers "child answer"
    And the model answers "parent answer"
    When the kernel runs
    Then "session-start" was dispatched once in every session, a child's included, before its first "context-assemble"

  @cap_subagents @LOOP-016 @dim:depth=0 @dim:depth=1
  Scenario: session-end closes every session, a delegated child's included
    Given a delegation tool "delegate"
    And the model calls "delegate" with {"goal": "sub task"} as "d1"
    And the model answers "child answer"
    And the model answers "parent answer"
    When the kernel runs
    Then "session-end" was dispatched once in every session, a child's included, after every other hook of it

  # Step 7 dispatches pre-tool-call "for each tool_use block": a block naming a tool the kernel
  # does not know is a block too (it is looked up, and fails, only when it runs).
  @LOOP-007 @dim:unknown_tool=yes @dim:calls_per_response=3+ @dim:kinds=one
  Scenario: pre-tool-call runs for a block naming an unknown tool too
    Given a tool "fetch" of kind "data_source"
    And the model calls in one response:
      | id | name    | args       |
      | d1 | fetch   | {"q": "1"} |
      | u1 | nosuch  | {"q": "2"} |
      | d2 | fetch   | {"q": "3"} |
    And the model answers "done"
    When the kernel runs
    Then "pre-tool-call" of model call 1 was dispatched for "d1, u1, d2" in this order, before any tool of it started
