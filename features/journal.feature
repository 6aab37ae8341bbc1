@commonagent
Feature: The journal (001, "The journal")
  The Journal trait is where the loop records what happens:
    create_session(NewSession)            profile_id, source, title, tags, parent_session_id
    start_turn(TurnInfo)
    append_message(TurnInfo, Message)     every message of the turn, under that turn
    record_tool_call(TurnInfo, ToolCallRecord)
                                          the call's name, arguments, result, error flag, risk,
                                          duration and approval
    finish_turn(TurnInfo, TurnStatus)
  The adapter reports what the kernel stored (RunResult.journal); the harness compares it with
  what it saw: the TurnInfo handed to the hooks, the tool results the model was sent, the status
  each turn ended with.

  Background:
    Given the scenario's profile id is "household"
    And a tool "weather"

  @JOURNAL-001
  Scenario: Each new session is created with its profile id, source, title, tags and parent
    Given the profile is configured with the tags "team:core"
    And the session is created with the tags "area:work"
    And the model answers "Bring an umbrella."
    And the model answers "Boston is dry."
    And the model answers "You are welcome."
    And the user message "Do I need an umbrella?" in session "s1"
    And the user message "And in Boston?" in session "s2" brings the tags "client:acme"
    And the user message "Thanks!" in session "s1"
    When the kernel runs
    Then each session is created in the journal with its profile id, source, title, tags and parent

  @JOURNAL-002
  Scenario: Each turn is started with its TurnInfo
    Given the profile is configured with the tags "team:core"
    And the session is created with the tags "area:work"
    And the model calls "weather" with {"city": "Charleston"} as "c1"
    And the model answers "Bring an umbrella."
    And the model answers "Boston is dry."
    And the model answers "You are welcome."
    And the user message "Do I need an umbrella?" in session "s1"
    And the user message "And in Boston?" in session "s2"
    And the user message "Thanks!" in session "s1"
    When the kernel runs
    Then each turn is started in the journal with its TurnInfo

  @JOURNAL-003
  Scenario: Every message of a turn is appended under that turn
    Given a tool "forecast"
    And the model calls in one response:
      | id | name     | args                   |
      | c1 | weather  | {"city": "Charleston"} |
      | c2 | forecast | {"city": "Charleston"} |
    And the call "c2" fails with "forecast service down"
    And the model answers "Bring an umbrella."
    And the model calls "weather" with {"city": "Boston"} as "c3"
    And the model answers "Boston is dry."
    And the user message "Do I need an umbrella?" in session "s1"
    And the user message "And in Boston?" in session "s1"
    When the kernel runs
    Then every message of each turn is appended to the journal under that turn:
      | turn | role        | holds                  |
      | 1    | user        | Do I need an umbrella? |
      | 1    | assistant   | calls: c1, c2          |
      | 1    | tool_result | c1                     |
      | 1    | tool_result | c2                     |
      | 1    | assistant   | Bring an umbrella.     |
      | 2    | user        | And in Boston?         |
      | 2    | assistant   | calls: c3              |
      | 2    | tool_result | c3                     |
      | 2    | assistant   | Boston is dry.         |

  @JOURNAL-004
  Scenario: Each tool call is recorded with name, arguments, result, error flag, risk, duration and approval
    Given a tool "delete_file" with risk "high"
    And the model calls in one response:
      | id | name        | args                   |
      | c1 | weather     | {"city": "Charleston"} |
      | c2 | delete_file | {"path": "/tmp/a.txt"} |
      | c3 | weather     | {"city": "Boston"}     |
    And the call "c3" fails with "weather service down"
    And the model calls "delete_file" with {"path": "/tmp/b.txt"} as "c4"
    And the model answers "Done."
    And hook "ask" at "pre_tool_call" returns {"kind": "ask_user", "prompt": "Delete it?"} for tool "delete_file"
    And the approver answers "approved, denied"
    When the user sends "Clean up my files"
    Then the journal records these tool calls:
      | call_id | name        | args                   | risk | approval |
      | c1      | weather     | {"city": "Charleston"} | low  |          |
      | c2      | delete_file | {"path": "/tmp/a.txt"} | high | approved |
      | c3      | weather     | {"city": "Boston"}     | low  |          |
      | c4      | delete_file | {"path": "/tmp/b.txt"} | high | denied   |

  @JOURNAL-005 @dim:status=completed
  Scenario: Each turn is finished with its final status: answered
    Given a tool "forecast"
    And the model calls "weather" with {"city": "Charleston"} as "c1"
    And the model answers "Bring an umbrella."
    And the model answers "You are welcome."
    And the user message "Do I need an umbrella?" in session "s1"
    And the user message "Thanks!" in session "s1"
    When the kernel runs
    Then each turn is finished in the journal with the status its run ended with

  @JOURNAL-005 @dim:status=interrupted
  Scenario: Each turn is finished with its final status: cancelled
    Given the turn is cancelled at model call 1
    And the model calls "weather" with {"city": "Charleston"} as "c1"
    And the model answers "Bring an umbrella."
    And the model answers "You are welcome."
    And the user message "Do I need an umbrella?" in session "s1"
    And the user message "Thanks!" in session "s1"
    When the kernel runs
    Then each turn is finished in the journal with the status its run ended with

  @JOURNAL-005 @dim:status=budget_exhausted
  Scenario: Each turn is finished with its final status: out of budget
    Given max_iterations is 1
    And the model calls "weather" with {"city": "Charleston"} as "c1"
    And the model answers "Bring an umbrella."
    And the model answers "You are welcome."
    And the user message "Do I need an umbrella?" in session "s1"
    And the user message "Thanks!" in session "s1"
    When the kernel runs
    Then each turn is finished in the journal with the status its run ended with

  @JOURNAL-005 @dim:status=error
  Scenario: Each turn is finished with its final status: model error
    Given the model fails with status 500
    And the model calls "weather" with {"city": "Charleston"} as "c1"
    And the model answers "Bring an umbrella."
    And the model answers "You are welcome."
    And the user message "Do I need an umbrella?" in session "s1"
    And the user message "Thanks!" in session "s1"
    When the kernel runs
    Then each turn is finished in the journal with the status its run ended with

  @JOURNAL-005
  Scenario: An interrupted turn is finished with the status 000 names
    Given the turn is cancelled at model call 1
    And the model calls "weather" with {"city": "Charleston"} as "c1"
    And the model answers "Bring an umbrella."
    When the user sends "Do I need an umbrella?"
    Then the turn of user message 1 is finished in the journal with status "interrupted"

  @JOURNAL-005
  Scenario: An exhausted turn is finished with the status 000 names
    Given max_iterations is 1
    And the model calls "weather" with {"city": "Charleston"} as "c1"
    And the model answers "Bring an umbrella."
    When the user sends "Do I need an umbrella?"
    Then the turn of user message 1 is finished in the journal with status "budget_exhausted"

  # Issue 21: 000's steps order the journal's writes against the hooks and the model calls: the
  # user message before the first model call, each assistant message after its post_api_request,
  # each tool call after its post_tool_call and transform_tool_result, the final answer before
  # the final status. A first turn and a later one; responses with one call and with two.
  @dim:turn=first @dim:turn=later @dim:calls_per_response=1 @dim:calls_per_response=2
  Scenario Outline: The journal's writes come in the order of 000's steps
    Given a tool "lookup"
    And the model calls "lookup" with {"q": "1"} as "c1"
    And the model calls in one response:
      | id | name   | args       |
      | c2 | lookup | {"q": "2"} |
      | c3 | lookup | {"q": "3"} |
    And the model answers "Found it."
    And the model calls in one response:
      | id | name   | args       |
      | c4 | lookup | {"q": "4"} |
      | c5 | lookup | {"q": "5"} |
    And the model answers "Found that too."
    And the user message "Look it up" in session "s1"
    And the user message "And the other one" in session "s1"
    When the kernel runs
    Then the journal writes of user message <k> <rule>

    @TURN-004
    Examples: the user message before the first model call
      | k | rule                                                |
      | 1 | store the user message before the first model call |
      | 2 | store the user message before the first model call |

    @TURN-015
    Examples: each assistant message after its post_api_request
      | k | rule                                                    |
      | 1 | store each assistant message after its post_api_request |
      | 2 | store each assistant message after its post_api_request |

    @TOOL-016
    Examples: each tool call after its post_tool_call and transform_tool_result
      | k | rule                                                                    |
      | 1 | store each tool call after its post_tool_call and transform_tool_result |
      | 2 | store each tool call after its post_tool_call and transform_tool_result |

    @JOURNAL-005
    Examples: the final answer before the final status
      | k | rule                                           |
      | 1 | store the final answer before the final status |
      | 2 | store the final answer before the final status |
