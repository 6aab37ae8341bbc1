@commonagent
Feature: TurnInfo - who is running and where (001, "TurnInfo")
  Every hook, tool and journal call receives a TurnInfo: the profile_id of the profile running
  the turn, the session_id, the turn_id, the parent_turn_id (set only for a delegated turn), the
  resolved tags and the depth (0 for a top-level turn). Each turn gets a new turn_id; the turns
  of one session share its session_id. Ids are UUID version 7, so they sort by creation time.

  The harness sees the TurnInfo the kernel hands each hook dispatch and each tool call, and the
  ids the kernel stores in its journal.

  @IDENT-001 @dim:turn=first @dim:depth=0
  Scenario: Every hook dispatch receives the running turn's TurnInfo
    Given the scenario's profile id is "household"
    And a tool "weather" returning "Charleston: 18C, light rain"
    And the model calls "weather" with {"city": "Charleston"} as "c1"
    And the model answers "Bring an umbrella."
    When the user sends "Do I need an umbrella?"
    Then every hook dispatch of the run carries the TurnInfo of the turn

  @IDENT-002 @dim:turn=first @dim:calls_per_response=2 @dim:depth=0
  Scenario: Every tool call receives the running turn's TurnInfo
    Given the scenario's profile id is "household"
    And a tool "weather"
    And a tool "calendar"
    And the model calls in one response:
      | id | name     | args                  |
      | c1 | weather  | {"city": "Charleston"} |
      | c2 | calendar | {"day": "today"}      |
    And the model calls "weather" with {"city": "Boston"} as "c3"
    And the model answers "Bring an umbrella."
    When the user sends "Do I need an umbrella?"
    Then 3 tool calls ran
    And every tool call of the run carries the TurnInfo of the turn

  @IDENT-001 @dim:turn=later
  Scenario: The hook dispatches of a later turn carry that turn's TurnInfo, not an earlier one's
    Given a tool "weather"
    And the user message "Do I need an umbrella?"
    And the user message "And tomorrow?" in session "s1"
    And the model calls "weather" with {"city": "Charleston"} as "c1"
    And the model answers "Bring an umbrella."
    And the model calls "weather" with {"city": "Charleston", "day": "tomorrow"} as "c2"
    And the model answers "Sunny tomorrow."
    When the kernel runs
    Then every hook dispatch of each turn carries that turn's own turn id

  @IDENT-002 @dim:turn=later @dim:calls_per_response=1
  Scenario: The tool calls of a later turn carry that turn's TurnInfo, not an earlier one's
    Given a tool "weather"
    And the user message "Do I need an umbrella?"
    And the user message "And tomorrow?" in session "s1"
    And the model calls "weather" with {"city": "Charleston"} as "c1"
    And the model answers "Bring an umbrella."
    And the model calls "weather" with {"city": "Charleston", "day": "tomorrow"} as "c2"
    And the model answers "Sunny tomorrow."
    When the kernel runs
    Then every tool call of each turn carries that turn's own turn id

  @IDENT-003 @dim:turn=first @dim:turn=later
  Scenario: Journal records carry the ids of the turn they belong to
    Given a tool "weather"
    And the model calls "weather" with {"city": "Charleston"} as "c1"
    And the model answers "Bring an umbrella."
    And the model calls "weather" with {"city": "Boston"} as "c2"
    And the model answers "Boston is dry."
    And the model answers "You are welcome."
    And the user message "Do I need an umbrella?"
    And the user message "And in Boston?"
    And the user message "Thanks!"
    When the kernel runs
    Then every journal record carries the ids of its turn

  @IDENT-004
  Scenario: A top-level turn has depth 0 and no parent turn
    Given a tool "weather"
    And the model calls "weather" with {"city": "Charleston"} as "c1"
    And the model answers "Bring an umbrella."
    When the user sends "Do I need an umbrella?"
    Then every hook dispatch and tool call of the run is of a top-level turn: depth 0, no parent

  @IDENT-005
  Scenario: Session ids and turn ids are UUIDs of version 7
    Given a tool "weather"
    And the model calls "weather" with {"city": "Charleston"} as "c1"
    And the model answers "Bring an umbrella."
    And the model answers "Boston is dry."
    And the model answers "You are welcome."
    And the user message "Do I need an umbrella?" in session "s1"
    And the user message "And in Boston?" in session "s2"
    And the user message "Thanks!" in session "s1"
    When the kernel runs
    Then every session id and turn id the run shows is a UUID v7

  @IDENT-006
  # Ids made in one millisecond need not sort (reading uuid7-same-millisecond): the clock
  # advances 2 ms per model call, so each turn and session is made in a later millisecond.
  Scenario: Ids of later turns and sessions sort after the earlier ones
    Given the scenario settings:
      """
      {"clock": {"advance_per_model_call": 0.002}}
      """
    And the model answers "one"
    And the model answers "two"
    And the model answers "three"
    And the model answers "four"
    And the model answers "five"
    And the user message "first" in session "s1"
    And the user message "second" in session "s2"
    And the user message "third" in session "s1"
    And the user message "fourth" in session "s3"
    And the user message "fifth" in session "s2"
    When the kernel runs
    Then the turn ids sort in the order the turns were created
    And the session ids sort in the order the sessions were created

  @IDENT-007
  Scenario: Each turn gets a new turn id, the turns of a session share its session id
    Given the scenario's profile id is "household"
    And a tool "weather"
    And the model calls "weather" with {"city": "Charleston"} as "c1"
    And the model answers "Bring an umbrella."
    And the model answers "You are welcome."
    And the user message "Do I need an umbrella?" in session "s1"
    And the user message "Thanks!" in session "s1"
    When the kernel runs
    Then the 2 turns of the run have distinct turn ids and one session id
    And every TurnInfo of the run names the profile "household"
    And every TurnInfo of the run names a session the kernel stored

  # Issue 21: the version bits are not enough; each id's 48-bit timestamp is decoded and must lie
  # in the run, on the harness clock (a kernel using the injected clock) or the real clock.
  @IDENT-005 @dim:clock=harness-fixed @dim:clock=harness-advancing @dim:id=session @dim:id=turn
  Scenario Outline: Each id's UUID v7 timestamp is its creation time, within the run
    Given the scenario settings:
      """
      {"clock": {"start": <start>, "advance_per_model_call": <advance>}}
      """
    And a tool "weather"
    And the model calls "weather" with {"city": "Charleston"} as "c1"
    And the model answers "Bring an umbrella."
    And the model answers "Boston is dry."
    And the user message "Do I need an umbrella?" in session "s1"
    And the user message "And in Boston?" in session "s2"
    When the kernel runs
    Then every session id and turn id the run shows was made during the run

    Examples: the harness clock stands still
      | start     | advance |
      | 1000000.0 | 0.0     |

    Examples: the harness clock is today's and moves on
      | start        | advance |
      | 1790000000.0 | 0.002   |

  # Issue 21: the harness clock stands still, so every id of the run is made within one
  # millisecond of it; ids must still be distinct (their order within the millisecond is free:
  # reading uuid7-same-millisecond).
  @IDENT-007 @dim:ids_per_millisecond=several
  Scenario: Ids made within one millisecond are still distinct
    Given the model answers "one"
    And the model answers "two"
    And the model answers "three"
    And the model answers "four"
    And the user message "first" in session "s1"
    And the user message "second" in session "s2"
    And the user message "third" in session "s1"
    And the user message "fourth" in session "s2"
    When the kernel runs
    Then the 4 turns of the run have distinct turn ids and 2 session ids

  # Blind round 2: the hooks and tools of a delegated child turn get the child turn's TurnInfo,
  # not the parent's ("Every hook, tool and journal call receives a TurnInfo. It says who is running").
  @IDENT-001 @dim:depth=1
  Scenario: The hook dispatches inside a delegated child turn carry the child's TurnInfo, not the parent's
    Given a subagent tool "delegate"
    And a tool "weather"
    And the model calls "delegate" with {"goal": "Find the Charleston forecast"} as "d1"
    And the model calls "weather" with {"city": "Charleston"} as "k1"
    And the model answers "Rain, 18C."
    And the model answers "Bring an umbrella."
    When the user sends "Do I need an umbrella?"
    Then tool "k1" ran
    And every hook dispatch of the child turn of "d1" carries the child turn's own turn id, not the parent's

  @IDENT-002 @dim:depth=1
  Scenario: The tool calls inside a delegated child turn carry the child's TurnInfo, not the parent's
    Given a subagent tool "delegate"
    And a tool "weather"
    And the model calls "delegate" with {"goal": "Find the Charleston forecast"} as "d1"
    And the model calls "weather" with {"city": "Charleston"} as "k1"
    And the model answers "Rain, 18C."
    And the model answers "Bring an umbrella."
    When the user sends "Do I need an umbrella?"
    Then tool "k1" ran
    And every tool call of the child turn of "d1" carries the child turn's own turn id, not the parent's
