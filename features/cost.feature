@kernel
Feature: Cost accounting
  003 makes the model's pricing the basis of a per-event cost: the kernel computes and persists
  cost_usd for every usage event (the formula is docs/adapter.md's, since model/protocol.md is not
  among the seeds: input, cached input and output tokens times their price per million tokens).
  It keeps a running sum over the session and compares it with max_cost_usd at step 17; the bound
  fires once the remaining budget is at or below zero, so a cost exactly equal to the limit fires it.

  Cost rolls up the session tree: every usage event is subtracted at every session from the one
  that spent it up to the root, so a sub-agent (a tool with ToolDef.subagent; its model calls come
  from the same script, in call order) cannot dodge its ancestors' bound. A child starts with
  min(parent's remaining budget, its own max_cost_usd). Each child's end is observed through its
  own session-end dispatch (TurnInfo depth, payload subtype).

  Pricing is 1000 USD per million input tokens unless a scenario says otherwise: 1000 input tokens
  cost 1 USD, 500 cost 0.5 USD (exact in binary floating point). max_turns is set far away (50)
  wherever a cost bound is, so the cost dimension is judged with another dimension configured. Where the bound should fire, the
  next scripted response is a plain answer, so a kernel that does not fire ends with "success".

  @COST-001 @dim:usage_events_per_call=1 @dim:session=root
  Scenario: Every usage event is costed from the model's pricing when it is received
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"model": {"pricing": {"input_usd_per_mtok": 3.0, "output_usd_per_mtok": 15.0, "cached_input_usd_per_mtok": 0.3}}}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": 1}}],
        "usage": {"input_tokens": 1200, "output_tokens": 350, "cached_input_tokens": 4000}},
       {"tool_calls": [{"id": "c2", "name": "lookup", "args": {"q": 2}}],
        "usage": {"input_tokens": 0, "output_tokens": 7, "cached_input_tokens": 123456}},
       {"text": "done", "usage": {"input_tokens": 800, "output_tokens": 90, "cached_input_tokens": 0}}]
      """
    When the kernel runs
    Then every usage chunk the model streamed is persisted as one usage event with its token counts
    And every persisted usage event's cost_usd is the pricing formula applied to its tokens

  # A provider that reports input usage as the stream opens and output usage at its end: two or
  # three usage events in one model call, each costed and persisted (not only the last, not summed
  # into one with a wrong price).
  @COST-001 @dim:usage_events_per_call=several
  Scenario: Several usage events in one model call are each costed and persisted
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"model": {"pricing": {"input_usd_per_mtok": 3.0, "output_usd_per_mtok": 15.0, "cached_input_usd_per_mtok": 0.3}}}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": 1}}, {"id": "c2", "name": "lookup", "args": {"q": 2}}],
        "usage_events": [{"input_tokens": 1200, "cached_input_tokens": 4000}, {"output_tokens": 350}]},
       {"tool_calls": [{"id": "c3", "name": "lookup", "args": {"q": 3}}],
        "usage_events": [{"input_tokens": 77}, {"output_tokens": 5}, {"output_tokens": 9000, "cached_input_tokens": 1}]},
       {"text": "done", "usage_events": [{"input_tokens": 800}, {"output_tokens": 90}]}]
      """
    When the kernel runs
    Then every usage chunk the model streamed is persisted as one usage event with its token counts
    And every persisted usage event's cost_usd is the pricing formula applied to its tokens

  # 003: cost_usd is computed and persisted "at receipt time". A model call that streams its first
  # usage event and is then cancelled (or fails) never reaches an end of stream: a kernel that
  # costs usage only once the stream is over loses that event. (000's "nothing partial is saved
  # from a cancelled model call" is about the message, STOP-003: spent tokens are not conversation.)
  @COST-002 @dim:cut_short_by=cancel
  Scenario: A usage event received before a cancel is persisted with its cost
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"model": {"pricing": {"input_usd_per_mtok": 3.0, "output_usd_per_mtok": 15.0}}}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": 1}}], "usage": {"input_tokens": 100, "output_tokens": 10}},
       {"text": "never finished", "usage_events": [{"input_tokens": 5000}, {"output_tokens": 700}]}]
      """
    And the turn is cancelled at model call 2
    When the kernel runs
    Then every usage chunk the model streamed is persisted as one usage event with its token counts
    And every persisted usage event's cost_usd is the pricing formula applied to its tokens

  @COST-002 @dim:cut_short_by=model_error
  Scenario: A usage event received before the model call fails is persisted with its cost
    Given the scenario settings:
      """
      {"model": {"pricing": {"input_usd_per_mtok": 3.0, "output_usd_per_mtok": 15.0},
                 "responses": [{"text": "cut short", "usage_events": [{"input_tokens": 5000}, {"output_tokens": 700}],
                                "error": {"status": 500, "after_chunks": 1}}]}}
      """
    When the kernel runs
    Then every usage chunk the model streamed is persisted as one usage event with its token counts
    And every persisted usage event's cost_usd is the pricing formula applied to its tokens

  # Costs 0.5, 1.0, 1.5: the running sum is 0.5, 1.5, 3.0. No single event reaches 2.0, the sum
  # does in turn 3.
  @COST-003 @dim:usage_events_per_call=1 @dim:sum_vs_limit=below @dim:sum_vs_limit=above
  Scenario: The bound fires in the very turn the running sum of cost reaches max_cost_usd
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"bounds": {"max_cost_usd": 2.0, "max_turns": 50}, "model": {"pricing": {"input_usd_per_mtok": 1000}}}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": 1}}], "usage": {"input_tokens": 500}},
       {"tool_calls": [{"id": "c2", "name": "lookup", "args": {"q": 2}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "c3", "name": "lookup", "args": {"q": 3}}], "usage": {"input_tokens": 1500}},
       {"text": "final answer", "usage": {"input_tokens": 0}}]
      """
    When the kernel runs
    Then max_cost_usd stopped the loop after the tools of model call 3
    And the run ends with a subtype other than "success"

  @COST-004
  Scenario: A running sum exactly equal to max_cost_usd fires the bound
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"bounds": {"max_cost_usd": 2.0, "max_turns": 50}, "model": {"pricing": {"input_usd_per_mtok": 1000}}}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": 1}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "c2", "name": "lookup", "args": {"q": 2}}], "usage": {"input_tokens": 1000}},
       {"text": "final answer", "usage": {"input_tokens": 0}}]
      """
    When the kernel runs
    Then max_cost_usd stopped the loop after the tools of model call 2
    And the run ends with a subtype other than "success"

  # Root: 1 USD, then the child spends 2 USD (its turn 1 calls a tool, its turn 2 answers).
  # The root's own calls (1 USD) stay under 2.5; with the child's spend the sum is 3 USD.
  @COST-005
  Scenario: A session's cost bound counts what its sub-agent spent
    Given the scenario settings:
      """
      {"bounds": {"max_cost_usd": 2.5, "max_turns": 50, "max_depth": 3},
       "model": {"pricing": {"input_usd_per_mtok": 1000}},
       "tools": [{"name": "lookup", "kind": "data_source", "concurrency": {"safe": true}},
                 {"name": "delegate", "kind": "data_source", "concurrency": {"safe": true}, "subagent": {}}]}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "d1", "name": "delegate", "args": {"goal": "dig"}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "k1", "name": "lookup", "args": {"q": 1}}], "usage": {"input_tokens": 1000}},
       {"text": "found it", "usage": {"input_tokens": 1000}},
       {"text": "final answer", "usage": {"input_tokens": 0}}]
      """
    When the kernel runs
    Then tool "k1" ran
    And the run ends with a subtype other than "success"

  # Root budget 10 USD, the child's own 1.5 USD: the child fires after its second turn (2 USD).
  @COST-006 @dim:smaller=child_own
  Scenario: A child's budget is its own max_cost_usd when that is below the parent's remaining budget
    Given the scenario settings:
      """
      {"bounds": {"max_cost_usd": 10.0, "max_turns": 50, "max_depth": 3},
       "model": {"pricing": {"input_usd_per_mtok": 1000}},
       "tools": [{"name": "lookup", "kind": "data_source", "concurrency": {"safe": true}},
                 {"name": "delegate", "kind": "data_source", "concurrency": {"safe": true}, "subagent": {"max_cost_usd": 1.5}}]}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "d1", "name": "delegate", "args": {"goal": "dig"}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "k1", "name": "lookup", "args": {"q": 1}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "k2", "name": "lookup", "args": {"q": 2}}], "usage": {"input_tokens": 1000}},
       {"text": "child's final answer", "usage": {"input_tokens": 0}},
       {"text": "root's answer", "usage": {"input_tokens": 0}}]
      """
    When the kernel runs
    Then tool "k2" ran
    And every session at depth 1 ends with a subtype other than "success"
    And the run ends with subtype "success"

  # Root budget 2.5 USD, 1 USD spent before the spawn: the child starts with 1.5 USD although its
  # own limit is 10 USD, and fires after its second turn.
  @COST-006 @dim:smaller=parent_remaining
  Scenario: A child's budget is its parent's remaining budget when that is below the child's own max_cost_usd
    Given the scenario settings:
      """
      {"bounds": {"max_cost_usd": 2.5, "max_turns": 50, "max_depth": 3},
       "model": {"pricing": {"input_usd_per_mtok": 1000}},
       "tools": [{"name": "lookup", "kind": "data_source", "concurrency": {"safe": true}},
                 {"name": "delegate", "kind": "data_source", "concurrency": {"safe": true}, "subagent": {"max_cost_usd": 10.0}}]}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "d1", "name": "delegate", "args": {"goal": "dig"}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "k1", "name": "lookup", "args": {"q": 1}}], "usage": {"input_tokens": 1000}},
       {"tool_calls": [{"id": "k2", "name": "lookup", "args": {"q": 2}}], "usage": {"input_tokens": 1000}},
       {"text": "child's final answer", "usage": {"input_tokens": 0}},
       {"text": "root's final answer", "usage": {"input_tokens": 0}}]
      """
    When the kernel runs
    Then tool "k2" ran
    And every session at depth 1 ends with a subtype other than "success"

  # Only the grandchild spends (2 + 2 USD). The middle session (the child) has its own budget of
  # 3.5 USD, the root none: the middle session's own bound fires only if the grandchild's spend is
  # subtracted at the middle session too, not only at the spender and the root.
  @COST-007 @dim:tripped=middle
  Scenario: A grandchild's spend trips the middle session's own bound
    Given the scenario settings:
      """
      {"bounds": {"max_turns": 50, "max_depth": 3},
       "model": {"pricing": {"input_usd_per_mtok": 1000}},
       "tools": [{"name": "lookup", "kind": "data_source", "concurrency": {"safe": true}},
                 {"name": "delegate", "kind": "data_source", "concurrency": {"safe": true}, "subagent": {}},
                 {"name": "delegate_bounded", "kind": "data_source", "concurrency": {"safe": true}, "subagent": {"max_cost_usd": 3.5}}]}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "d1", "name": "delegate_bounded", "args": {"goal": "child"}}], "usage": {"input_tokens": 0}},
       {"tool_calls": [{"id": "d2", "name": "delegate", "args": {"goal": "grandchild"}}], "usage": {"input_tokens": 0}},
       {"tool_calls": [{"id": "k1", "name": "lookup", "args": {"q": 1}}], "usage": {"input_tokens": 2000}},
       {"text": "grandchild's answer", "usage": {"input_tokens": 2000}},
       {"text": "child's final answer", "usage": {"input_tokens": 0}},
       {"text": "root's answer", "usage": {"input_tokens": 0}}]
      """
    When the kernel runs
    Then tool "k1" ran
    And every session at depth 2 ends with subtype "success"
    And every session at depth 1 ends with a subtype other than "success"
    And the run ends with subtype "success"

  # Only the grandchild spends (2 + 2 USD). The root's budget is 3.5 USD: it fires only if the
  # grandchild's spend reaches it through the child.
  @COST-007 @dim:tripped=root
  Scenario: A grandchild's spend counts against the root's bound
    Given the scenario settings:
      """
      {"bounds": {"max_cost_usd": 3.5, "max_turns": 50, "max_depth": 3},
       "model": {"pricing": {"input_usd_per_mtok": 1000}},
       "tools": [{"name": "lookup", "kind": "data_source", "concurrency": {"safe": true}},
                 {"name": "delegate", "kind": "data_source", "concurrency": {"safe": true}, "subagent": {}}]}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "d1", "name": "delegate", "args": {"goal": "child"}}], "usage": {"input_tokens": 0}},
       {"tool_calls": [{"id": "d2", "name": "delegate", "args": {"goal": "grandchild"}}], "usage": {"input_tokens": 0}},
       {"tool_calls": [{"id": "k1", "name": "lookup", "args": {"q": 1}}], "usage": {"input_tokens": 2000}},
       {"text": "grandchild's answer", "usage": {"input_tokens": 2000}},
       {"text": "child's final answer", "usage": {"input_tokens": 0}},
       {"text": "root's final answer", "usage": {"input_tokens": 0}}]
      """
    When the kernel runs
    Then tool "k1" ran
    And the run ends with a subtype other than "success"

  # Several usage events in one model call (issue 21): the running sum adds every one of them.
  # Each call streams 500 + 500 input tokens (1 USD): the sum is 1 after turn 1, 2 after turn 2.
  @COST-003 @dim:usage_events_per_call=several @dim:sum_vs_limit=below @dim:sum_vs_limit=above
  Scenario: The running sum adds every usage event of a model call, not only its last
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the scenario settings:
      """
      {"bounds": {"max_cost_usd": 1.5, "max_turns": 50}, "model": {"pricing": {"input_usd_per_mtok": 1000}}}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": 1}}], "usage_events": [{"input_tokens": 500}, {"input_tokens": 500}]},
       {"tool_calls": [{"id": "c2", "name": "lookup", "args": {"q": 2}}], "usage_events": [{"input_tokens": 500}, {"input_tokens": 500}]},
       {"tool_calls": [{"id": "c3", "name": "lookup", "args": {"q": 3}}], "usage_events": [{"input_tokens": 500}, {"input_tokens": 500}]},
       {"tool_calls": [{"id": "c4", "name": "lookup", "args": {"q": 4}}], "usage_events": [{"input_tokens": 500}, {"input_tokens": 500}]},
       {"text": "final answer"}]
      """
    When the kernel runs
    Then max_cost_usd stopped the loop after the tools of model call 2
    And the run ends with a subtype other than "success"

  # Blind round 2: a delegated child's usage events are usage events too, persisted with their cost.
  @cap_subagents @COST-001 @dim:session=child
  Scenario: The usage events of a delegated child session are costed and persisted too
    Given the scenario settings:
      """
      {"bounds": {"max_turns": 50, "max_depth": 3},
       "model": {"pricing": {"input_usd_per_mtok": 3.0, "output_usd_per_mtok": 15.0, "cached_input_usd_per_mtok": 0.3}},
       "tools": [{"name": "delegate", "kind": "data_source", "concurrency": {"safe": true}, "subagent": {}}]}
      """
    And the model script:
      """
      [{"tool_calls": [{"id": "d1", "name": "delegate", "args": {"goal": "dig"}}],
        "usage": {"input_tokens": 1200, "output_tokens": 350, "cached_input_tokens": 4000}},
       {"text": "child found it", "usage": {"input_tokens": 77, "output_tokens": 9000, "cached_input_tokens": 1}},
       {"text": "final answer", "usage": {"input_tokens": 800, "output_tokens": 90, "cached_input_tokens": 0}}]
      """
    When the kernel runs
    Then every usage chunk the model streamed is persisted as one usage event with its token counts
    And every persisted usage event's cost_usd is the pricing formula applied to its tokens
