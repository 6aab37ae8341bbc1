@kernel
Feature: Loop termination and bounds
  003 gives every session three independent bound dimensions, checked at step 17 of every turn:
  max_turns (MUST), max_cost_usd and max_wall_clock_s (SHOULD; capabilities max_cost_usd and
  max_wall_clock_s). Any one of them reaching its limit fires on its own, and all three take the
  same graceful path ("Limit-reached behavior"): the kernel does not raise; it runs exactly one more
  turn whose request withholds every tool spec and carries a synthetic instruction (any wording)
  telling the model the limit was reached; the session then ends with the subtype of the bound
  that fired: error_max_turns, error_max_budget_usd or error_max_wall_clock. A soft mode (pause,
  let the user continue) MAY be offered, but the default stays hard.

  Readings (akc readings): final-turn-counts — with max_turns = N a kernel runs tools in N turns
  and then the final turn, or counts the final turn among the N (N-1 tool turns, at least 1); both
  are accepted, and every model script asks for more tools than either needs. limit-instruction-form
  — any wording, in a user or system message or the system text, but new (words no earlier request
  of the session held, more than the earlier requests' churn), outside the history, never stored. The wall clock is measured from the start of the session run, on the harness clock
  (Scenario.clock) for kernels that accept one (capability injectable_clock). The model scripts
  put a plain answer where the final turn is expected, so a kernel that does not fire, or fires a
  turn late, ends with "success" instead. Every tool call has its own arguments, so the doom-loop
  detector never fires here. Pricing is 1000 USD per million input tokens: 1000 tokens cost 1 USD.

  # The model always asks for tools (3 more calls than max_turns allows): N = 1, 2, 3 and 5.
  @BOUND-002 @BOUND-003 @BOUND-006 @dim:calls_per_response=1 @dim:max_turns=1 @dim:max_turns=2+ @dim:tool_kind=data_source @dim:firing=max_turns @dim:others=unset
  Scenario Outline: max_turns alone stops tool execution after the N-th turn
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And max_turns is <n>
    And the model calls "lookup" with distinct arguments <calls> times
    When the kernel runs
    Then tools ran only in the model calls max_turns <n> allows
    And the run ends with a subtype other than "success"

    Examples:
      | n | calls |
      | 1 | 4     |
      | 2 | 5     |
      | 3 | 6     |
      | 5 | 8     |

  # The bound counts every turn whatever its calls' kinds: resource calls pass the plan gate and
  # interactive ones the approver, where a kernel may pause its loop and resume it; the count of
  # turns must survive that (a count kept per resumed run starts again at each pause).
  @BOUND-002 @dim:calls_per_response=1 @dim:max_turns=2+ @dim:tool_kind=resource @dim:tool_kind=interactive
  # N = 2 and 3: a kernel that spends a turn on resuming a paused one still fails one of them. The
  # approver approves every call (a kernel may ask it for these calls): the calls run, whichever.
  Scenario Outline: max_turns counts the turns whose calls are <kind>
    Given a tool "act" of kind "<kind>"
    And the approver answers "approved, approved, approved, approved, approved, approved"
    And max_turns is <n>
    And the model calls "act" with distinct arguments <calls> times
    When the kernel runs
    Then tools ran only in the model calls max_turns <n> allows
    And the run ends with a subtype other than "success"

    Examples:
      | kind        | n | calls |
      | resource    | 2 | 5     |
      | interactive | 2 | 5     |
      | resource    | 3 | 6     |
      | interactive | 3 | 6     |

  @BOUND-006 @cap_max_cost_usd @cap_max_wall_clock_s @dim:firing=max_turns @dim:others=far
  Scenario: max_turns fires while cost and wall clock are far from their limits
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"bounds": {"max_turns": 2, "max_cost_usd": 1000.0, "max_wall_clock_s": 100000},
       "model": {"pricing": {"input_usd_per_mtok": 1000}},
       "clock": {"advance_per_model_call": 1}}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": 1}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "c2", "name": "lookup", "args": {"q": 2}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "c3", "name": "lookup", "args": {"q": 3}}], "usage": {"input_tokens": 1000}},
       {"text": "final answer", "usage": {"input_tokens": 1000}}]
      """
    When the kernel runs
    Then tools ran only in the model calls max_turns 2 allows
    And the run ends with a subtype other than "success"

  @BOUND-004 @BOUND-006 @dim:firing=max_cost_usd @dim:others=unset
  Scenario: max_cost_usd alone stops the loop once the session's cost reaches it
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"bounds": {"max_cost_usd": 2.5}, "model": {"pricing": {"input_usd_per_mtok": 1000}}}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": 1}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "c2", "name": "lookup", "args": {"q": 2}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "c3", "name": "lookup", "args": {"q": 3}}], "usage": {"input_tokens": 1000}},
       {"text": "final answer", "usage": {"input_tokens": 1000}}]
      """
    When the kernel runs
    Then max_cost_usd stopped the loop after the tools of model call 3
    And the run ends with a subtype other than "success"

  @BOUND-006 @cap_max_cost_usd @cap_max_wall_clock_s @dim:firing=max_cost_usd @dim:others=far
  Scenario: max_cost_usd fires while turns and wall clock are far from their limits
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"bounds": {"max_turns": 50, "max_cost_usd": 1.5, "max_wall_clock_s": 100000},
       "model": {"pricing": {"input_usd_per_mtok": 1000}},
       "clock": {"advance_per_model_call": 1}}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": 1}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "c2", "name": "lookup", "args": {"q": 2}}], "usage": {"input_tokens": 1000}},
       {"text": "final answer", "usage": {"input_tokens": 1000}}]
      """
    When the kernel runs
    Then max_cost_usd stopped the loop after the tools of model call 2
    And the run ends with a subtype other than "success"

  # The harness clock advances 10 s per model call: 10 s at step 17 of turn 1, 20 s after turn 2,
  # 30 s after turn 3. A limit of exactly 20 s is hit at step 17 of turn 2 ("hitting any one of the
  # three MUST terminate"; cost fires at <= 0 too); 25 s is crossed in turn 3; 1000 s never.
  @BOUND-005 @BOUND-006 @cap_injectable_clock @dim:firing=max_wall_clock_s @dim:others=unset @dim:wall_clock_limit=reached_at_a_step @dim:wall_clock_limit=crossed_between_steps
  Scenario Outline: max_wall_clock_s alone stops the loop once the session run has lasted that long
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"bounds": {"max_wall_clock_s": <limit>}, "clock": {"advance_per_model_call": 10}}
      """
    And the model calls "lookup" with distinct arguments 4 times
    And the model answers "final answer"
    When the kernel runs
    Then max_wall_clock_s stopped the loop after the tools of model call <ran>
    And the run ends with a subtype other than "success"

    Examples:
      | limit | ran |
      | 15    | 2   |
      | 20    | 2   |
      | 25    | 3   |

  @BOUND-005 @BOUND-006 @cap_injectable_clock @dim:wall_clock_limit=never_reached
  Scenario: max_wall_clock_s far above the session run's length does not stop the loop
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"bounds": {"max_wall_clock_s": 1000}, "clock": {"advance_per_model_call": 10}}
      """
    And the model calls "lookup" with distinct arguments 4 times
    And the model answers "final answer"
    When the kernel runs
    Then 4 tool calls ran
    And the run ends with subtype "success"

  @BOUND-006 @cap_max_cost_usd @cap_max_wall_clock_s @cap_injectable_clock @dim:firing=max_wall_clock_s @dim:others=far
  Scenario: max_wall_clock_s fires while turns and cost are far from their limits
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"bounds": {"max_turns": 50, "max_cost_usd": 1000.0, "max_wall_clock_s": 15},
       "model": {"pricing": {"input_usd_per_mtok": 1000}},
       "clock": {"advance_per_model_call": 10}}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": 1}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "c2", "name": "lookup", "args": {"q": 2}}], "usage": {"input_tokens": 1000}},
       {"text": "final answer", "usage": {"input_tokens": 1000}}]
      """
    When the kernel runs
    Then max_wall_clock_s stopped the loop after the tools of model call 2
    And the run ends with a subtype other than "success"

  @BOUND-001
  Scenario: The turn that reaches the bound still runs its tools and post-apply first
    Given the tools:
      | name   | kind        | concurrency |
      | lookup | data_source | safe        |
      | write  | resource    |             |
    And max_turns is 1
    And the model calls in one response:
      | id | name   | args              |
      | c1 | lookup | {"q": 1}          |
      | w1 | write  | {"path": "a.txt"} |
    And the model answers "final answer"
    When the kernel runs
    Then tool "c1" ran
    And tool "w1" ran
    And the hook points of model call 1 include, in order:
      | pre-tool-call  |
      | post-tool-call |
    # plan-ready and post-apply are LOOP-009/011's subject: a kernel without them (declared absent)
    # is blocked by LOOP-009 here, once BOUND-001's own subject above has been judged.
    And the hook points of model call 1 include, in order:
      | pre-tool-call  |
      | plan-ready     |
      | post-tool-call |
      | post-apply     |

  # BOUND-001 holds for every bound: the turn in which max_cost_usd or max_wall_clock_s is reached
  # runs its tools too (BOUND-006's scenarios are blocked by BOUND-001 where it does not).
  @BOUND-001 @cap_max_cost_usd
  Scenario: The turn that reaches max_cost_usd still runs its tools
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"bounds": {"max_cost_usd": 2.5}, "model": {"pricing": {"input_usd_per_mtok": 1000}}}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": 1}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "c2", "name": "lookup", "args": {"q": 2}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "c3", "name": "lookup", "args": {"q": 3}}], "usage": {"input_tokens": 1000}},
       {"text": "final answer", "usage": {"input_tokens": 1000}}]
      """
    When the kernel runs
    Then max_cost_usd stopped the loop after the tools of model call 3

  @BOUND-001 @cap_max_wall_clock_s @cap_injectable_clock
  Scenario: The turn that reaches max_wall_clock_s still runs its tools
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"bounds": {"max_wall_clock_s": 20}, "clock": {"advance_per_model_call": 10}}
      """
    And the model calls "lookup" with distinct arguments 4 times
    And the model answers "final answer"
    When the kernel runs
    Then max_wall_clock_s stopped the loop after the tools of model call 2

  @BOUND-008
  Scenario: A fired bound ends the session with a status, not an exception
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And max_turns is 1
    And the model calls "lookup" with distinct arguments 3 times
    When the kernel runs
    Then the kernel did not raise
    And the run reports an outcome

  @BOUND-009
  Scenario: After a bound fires, exactly one more model request is made
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And max_turns is 1
    And the model calls "lookup" with {"q": 1} as "c1"
    And the model answers "final answer"
    And the model answers "a second final answer nobody should ask for"
    When the kernel runs
    Then the model was called 2 times

  @BOUND-010
  Scenario: The limit-reached request withholds every tool spec
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And max_turns is 1
    And the model calls "lookup" with {"q": 1} as "c1"
    And the model calls "lookup" with {"q": 2} as "c2"
    And the model answers "final answer"
    When the kernel runs
    Then the request of model call 1 has tool specs
    And the request of the last model call offers no tool specs

  # max_turns 3: at least three requests, so the churn of the earlier requests (a volatile prompt
  # tier changes the system text on every request) is measured before the final one is judged.
  @BOUND-011
  Scenario: The limit-reached request carries a synthetic instruction that was not in the history
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And max_turns is 3
    And the model calls "lookup" with distinct arguments 6 times
    When the kernel runs
    Then the limit-reached request carries a synthetic instruction that is not in the history

  # A later message to the same session: the instruction of the first run must not come back in
  # the history of the second (it is never stored).
  @BOUND-011
  Scenario: The limit-reached instruction never reaches the history of a later message
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And max_turns is 1
    And the user message "first task" in session "s1"
    And the user message "second task" in session "s1"
    And the model calls "lookup" with distinct arguments 2 times
    And the model answers "second reply"
    When the kernel runs
    Then the limit-reached instruction of user message 1 is in no request of user message 2

  # Every scripted response asks for a tool: whichever turn the kernel takes as the final one,
  # the calls in its answer must not run, and the session must end there.
  @BOUND-012
  Scenario: Tool calls in the limit-reached answer are not executed and the session ends
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And max_turns is 1
    And the model calls "lookup" with {"q": 1} as "c1"
    And the model calls "lookup" with {"q": 2} as "late"
    And the model calls "lookup" with {"q": 3} as "later"
    And the model calls "lookup" with {"q": 4} as "latest"
    When the kernel runs
    Then the model script was not exhausted
    And no tool call the last model call asked for ran

  # More tool calls are scripted than the bound allows: whichever turn the kernel fires in, the
  # subtype is what is checked here.
  @BOUND-013
  Scenario: A session ended by max_turns reports error_max_turns
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And max_turns is 1
    And the model calls "lookup" with {"q": 1} as "c1"
    And the model calls "lookup" with {"q": 2} as "c2"
    And the model calls "lookup" with {"q": 3} as "c3"
    And the model answers "final answer"
    When the kernel runs
    Then the run ends with subtype "error_max_turns"
  @BOUND-014
  Scenario: A session ended by max_cost_usd reports error_max_budget_usd
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"bounds": {"max_cost_usd": 1.5, "max_turns": 50}, "model": {"pricing": {"input_usd_per_mtok": 1000}}}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": 1}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "c2", "name": "lookup", "args": {"q": 2}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "c3", "name": "lookup", "args": {"q": 3}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "c4", "name": "lookup", "args": {"q": 4}}], "usage": {"input_tokens": 1000}},
       {"text": "final answer", "usage": {"input_tokens": 1000}}]
      """
    When the kernel runs
    Then the run ends with subtype "error_max_budget_usd"
  @BOUND-015 @cap_injectable_clock
  Scenario: A session ended by max_wall_clock_s reports error_max_wall_clock
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"bounds": {"max_wall_clock_s": 15, "max_turns": 50}, "clock": {"advance_per_model_call": 10}}
      """
    And the model calls "lookup" with {"q": 1} as "c1"
    And the model calls "lookup" with {"q": 2} as "c2"
    And the model calls "lookup" with {"q": 3} as "c3"
    And the model calls "lookup" with {"q": 4} as "c4"
    And the model answers "final answer"
    When the kernel runs
    Then the run ends with subtype "error_max_wall_clock"
  @BOUND-007 @dim:bound=max_turns
  Scenario: max_turns takes the limit-reached path
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And max_turns is 3
    And the model calls "lookup" with distinct arguments 6 times
    When the kernel runs
    Then the session took the limit-reached path after its last turn that ran tools

  @BOUND-007 @cap_max_cost_usd @dim:bound=max_cost_usd
  Scenario: max_cost_usd takes the same limit-reached path
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"bounds": {"max_cost_usd": 1.5}, "model": {"pricing": {"input_usd_per_mtok": 1000}}}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": 1}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "c2", "name": "lookup", "args": {"q": 2}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "late", "name": "lookup", "args": {"q": 3}}], "usage": {"input_tokens": 1000}},
       {"text": "nobody should ask for this", "usage": {"input_tokens": 1000}}]
      """
    When the kernel runs
    Then the session took the limit-reached path after model call 2

  @BOUND-007 @cap_max_wall_clock_s @cap_injectable_clock @dim:bound=max_wall_clock_s
  Scenario: max_wall_clock_s takes the same limit-reached path
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"bounds": {"max_wall_clock_s": 15}, "clock": {"advance_per_model_call": 10}}
      """
    And the model calls "lookup" with {"q": 1} as "c1"
    And the model calls "lookup" with {"q": 2} as "c2"
    And the model calls "lookup" with {"q": 3} as "late"
    And the model answers "nobody should ask for this"
    When the kernel runs
    Then the session took the limit-reached path after model call 2

  @LOOP-017 @dim:limit=max_turns
  Scenario: session-end is dispatched once, after the limit-reached turn
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And max_turns is 1
    And the model calls "lookup" with {"q": 1} as "c1"
    And the model answers "final answer"
    When the kernel runs
    Then "session-end" was dispatched 1 time
    And the hook points of model call 2 include, in order:
      | context-assemble    |
      | pre-model-call      |
      | post-model-response |
      | session-end         |

  @BOUND-016 @dim:bound=max_turns
  Scenario: In soft mode the session pauses at the bound and a further message continues it
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"bounds": {"max_turns": 1, "soft": true}}
      """
    And the model calls "lookup" with {"q": 1} as "c1"
    And the model answers "paused here"
    And the model answers "continued"
    And the user message "hello"
    And the user message "go on"
    When the kernel runs
    Then the kernel did not raise
    And user message 1 ends with a subtype that does not start with "error_max_"
    And user message 2 ends with subtype "success"
    And the request of the last model call holds the result of call "c1"

  @BOUND-017 @dim:bound=max_turns
  Scenario: Without asking for soft mode, a session still ends hard at the bound
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And max_turns is 1
    And the model calls "lookup" with {"q": 1} as "c1"
    And the model calls "lookup" with {"q": 2} as "c2"
    And the model calls "lookup" with {"q": 3} as "c3"
    And the model answers "final answer"
    When the kernel runs
    Then the run ends with a subtype that starts with "error_max_"

  # Several calls in one response (issue 21): max_turns counts turns, not tool calls. With
  # max_turns = 4 and three calls a turn, a kernel counting calls fires after 2 tool turns, which
  # neither reading of final-turn-counts allows (4, or 3).
  @BOUND-002 @dim:calls_per_response=3+
  Scenario: max_turns counts turns, not the tool calls in them
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And max_turns is 4
    And the model script:
      """
      [{"tool_calls": [{"id": "t1c1", "name": "lookup", "args": {"q": 11}}, {"id": "t1c2", "name": "lookup", "args": {"q": 12}}, {"id": "t1c3", "name": "lookup", "args": {"q": 13}}]},
       {"tool_calls": [{"id": "t2c1", "name": "lookup", "args": {"q": 21}}, {"id": "t2c2", "name": "lookup", "args": {"q": 22}}, {"id": "t2c3", "name": "lookup", "args": {"q": 23}}]},
       {"tool_calls": [{"id": "t3c1", "name": "lookup", "args": {"q": 31}}, {"id": "t3c2", "name": "lookup", "args": {"q": 32}}, {"id": "t3c3", "name": "lookup", "args": {"q": 33}}]},
       {"tool_calls": [{"id": "t4c1", "name": "lookup", "args": {"q": 41}}, {"id": "t4c2", "name": "lookup", "args": {"q": 42}}, {"id": "t4c3", "name": "lookup", "args": {"q": 43}}]},
       {"tool_calls": [{"id": "t5c1", "name": "lookup", "args": {"q": 51}}, {"id": "t5c2", "name": "lookup", "args": {"q": 52}}, {"id": "t5c3", "name": "lookup", "args": {"q": 53}}]},
       {"tool_calls": [{"id": "t6c1", "name": "lookup", "args": {"q": 61}}, {"id": "t6c2", "name": "lookup", "args": {"q": 62}}, {"id": "t6c3", "name": "lookup", "args": {"q": 63}}]},
       {"tool_calls": [{"id": "t7c1", "name": "lookup", "args": {"q": 71}}, {"id": "t7c2", "name": "lookup", "args": {"q": 72}}, {"id": "t7c3", "name": "lookup", "args": {"q": 73}}]},
       {"text": "final answer"}]
      """
    When the kernel runs
    Then tools ran only in the model calls max_turns 4 allows
    And the run ends with a subtype other than "success"

  # Soft mode is 003's for max_turns *and* max_cost_usd (issue 21: offered for one bound
  # dimension but not the other). 1000 input tokens cost 1 USD.
  @BOUND-016 @cap_max_cost_usd @dim:bound=max_cost_usd
  Scenario: In soft mode the session pauses at the cost bound and a further message continues it
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"bounds": {"max_cost_usd": 1.0, "soft": true}, "model": {"pricing": {"input_usd_per_mtok": 1000}}}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": 1}}], "usage": {"input_tokens": 1000}},
       {"text": "paused here"},
       {"text": "continued"}]
      """
    And the user message "hello"
    And the user message "go on"
    When the kernel runs
    Then the kernel did not raise
    And user message 1 ends with a subtype that does not start with "error_max_"
    And user message 2 ends with subtype "success"
    And the request of the last model call holds the result of call "c1"

  @BOUND-017 @cap_max_cost_usd @dim:bound=max_cost_usd
  Scenario: Without asking for soft mode, a session still ends hard at the cost bound
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"bounds": {"max_cost_usd": 1.0}, "model": {"pricing": {"input_usd_per_mtok": 1000}}}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": 1}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "c2", "name": "lookup", "args": {"q": 2}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "c3", "name": "lookup", "args": {"q": 3}}], "usage": {"input_tokens": 1000}},
       {"text": "final answer"}]
      """
    When the kernel runs
    Then the run ends with a subtype that starts with "error_max_"
