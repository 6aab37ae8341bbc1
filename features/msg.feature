@commonagent
Feature: Messages (001, "Messages")
  A conversation is a list of messages, each stored as JSON with a role:
    {"role": "user", "text": "Do I need an umbrella?"}
    {"role": "assistant", "tool_calls": [{"id": "c1", "name": "weather", "args": {"city": "Charleston"}}]}
    {"role": "tool_result", "call_id": "c1", "content": "Charleston: 18°C, light rain", "is_error": false}
    {"role": "assistant", "text": "Bring an umbrella: 18°C and light rain."}
  The harness reads what the kernel stored (the journal) and checks each message's shape and the
  order of the conversation: the user message, each assistant message followed by the results of
  its tool calls, and the final answer.

  Background:
    Given a tool "weather" returning "Charleston: 18°C, light rain"
    And a tool "forecast"

  @MSG-001
  Scenario: Every stored message has one of 001's shapes
    Given the model calls in one response:
      | id | name     | args                                      |
      | c1 | weather  | {"city": "Charleston"}                    |
      | c2 | forecast | {"city": "Charleston", "days": [1, 2, 3]} |
    And the call "c2" fails with "forecast service down"
    And the model answers "Bring an umbrella: 18°C and light rain."
    When the user sends "Do I need an umbrella?"
    Then every stored message has one of 001's shapes

  @MSG-002 @dim:user_text=plain @dim:turn=first
  Scenario: A user message is stored with role user and the text the user sent
    Given the model answers "Bring an umbrella: 18°C and light rain."
    When the user sends "Do I need an umbrella? It's 18°C — light rain, they say."
    Then the user message "Do I need an umbrella? It's 18°C — light rain, they say." is stored with role user and its text

  @MSG-003 @dim:calls_per_response=2 @dim:args=nested
  Scenario: An assistant message asking for tools is stored with each call's id, name and args
    Given the model calls in one response:
      | id | name     | args                                                      |
      | c1 | weather  | {"city": "Charleston"}                                    |
      | c2 | forecast | {"city": "Charleston", "days": [1, 2], "opts": {"u": "C"}} |
    And the model answers "Bring an umbrella."
    When the user sends "Do I need an umbrella?"
    Then the assistant message asking for "c1, c2" is stored with each call's id, name and args

  @MSG-004
  Scenario: A tool result is stored with its call_id, content and error flag
    Given the model calls in one response:
      | id | name     | args                   |
      | c1 | weather  | {"city": "Charleston"} |
      | c2 | forecast | {"city": "Charleston"} |
    And the call "c2" fails with "forecast service down"
    And the model answers "Bring an umbrella."
    When the user sends "Do I need an umbrella?"
    Then the result of "c1" is stored with content "Charleston: 18°C, light rain" and no error
    And the result of "c2" is stored as an error

  @MSG-005
  Scenario: A final answer is stored as an assistant message with its whole text
    Given the model calls "weather" with {"city": "Charleston"} as "c1"
    And the model answers "Bring an umbrella: 18°C and light rain." in 4 chunks
    When the user sends "Do I need an umbrella?"
    Then the final answer "Bring an umbrella: 18°C and light rain." is stored as an assistant message with its text

  @MSG-006 @dim:calls_per_response=1 @dim:calls_per_response=2 @dim:finish_order=reversed
  Scenario: A session's conversation is stored in order
    Given the model calls in one response:
      | id | name     | args                   |
      | c1 | weather  | {"city": "Charleston"} |
      | c2 | forecast | {"city": "Charleston"} |
    And the model calls "weather" with {"city": "Boston"} as "c3"
    And the model answers "Bring an umbrella."
    And calls finish in the order "c2, c1"
    When the user sends "Do I need an umbrella?"
    Then the stored conversation of the session of user message 1 is:
      | role        | holds                  |
      | user        | Do I need an umbrella? |
      | assistant   | calls: c1, c2          |
      | tool_result | c1                     |
      | tool_result | c2                     |
      | assistant   | calls: c3              |
      | tool_result | c3                     |
      | assistant   | Bring an umbrella.     |

  # Found by mutation testing (docs/selftest.md, "Mutation testing by machine"): a completed
  # sub-agent's result stored as an error survived. The error flag over what answered the call.
  @MSG-004 @dim:outcome=ok @dim:outcome=fail @dim:outcome=block @dim:outcome=subagent_completed
  Scenario Outline: A tool result's error flag says whether what answered the call failed
    Given a subagent tool "delegate"
    And the call "f1" fails with "forecast service down"
    And hook "guard" at "pre_tool_call" returns {"kind": "block", "reason": "no weather today"} for call "b1"
    And the model calls "<tool>" with <args> as "<call>"
    And the model answers "Rain, 18C."
    And the model answers "Bring an umbrella."
    When the user sends "Do I need an umbrella?"
    Then the result of "<call>" is stored with is_error "<is_error>"

    Examples: a tool that answers
      | tool    | args                   | call | is_error |
      | weather | {"city": "Charleston"} | w1   | false    |

    Examples: a tool that fails
      | tool     | args                   | call | is_error |
      | forecast | {"city": "Charleston"} | f1   | true     |

    Examples: a call blocked by pre_tool_call
      | tool    | args                   | call | is_error |
      | weather | {"city": "Charleston"} | b1   | true     |

    Examples: a sub-agent whose turn completes
      | tool     | args                                     | call | is_error |
      | delegate | {"goal": "Find the Charleston forecast"} | d1   | false    |
