@commonagent
Feature: Sessions (001, "Sessions")
  A session is one conversation with one profile. It holds the messages, the frozen prompt
  context, its own tags and, for a child agent, the session it was spawned from. A session is
  created once, by the message that starts it (NewSession: profile_id, source, title, tags,
  parent_session_id); later messages to it continue the same conversation. CommonOS titles a new
  session with the first 60 characters of its first message; a child session is titled with its
  goal, and its source is `subagent`.

  @SESS-001
  Scenario: A session and every turn in it belong to one profile
    Given the scenario's profile id is "household"
    And a tool "weather"
    And the model calls "weather" with {"city": "Charleston"} as "c1"
    And the model answers "Bring an umbrella."
    And the model answers "You are welcome."
    And the user message "Do I need an umbrella?" in session "s1"
    And the user message "Thanks!" in session "s1"
    When the kernel runs
    Then the session of user message 1 and every turn in it belong to the profile "household"

  @SESS-002
  Scenario: A second message to a session continues it instead of creating another
    Given the model answers "Bring an umbrella."
    And the model answers "You are welcome."
    And the user message "Do I need an umbrella?" in session "s1"
    And the user message "Thanks!" in session "s1"
    When the kernel runs
    Then the journal holds exactly 1 session
    And user message 2 continues the session of user message 1
    And the conversation sent in model call 2 includes, in order:
      | role      | text                   |
      | user      | Do I need an umbrella? |
      | assistant | Bring an umbrella.     |
      | user      | Thanks!                |

  @SESS-002
  Scenario: Messages to two sessions create each session once
    Given the model answers "Bring an umbrella."
    And the model answers "Boston is dry."
    And the model answers "You are welcome."
    And the user message "Do I need an umbrella?" in session "s1"
    And the user message "And in Boston?" in session "s2"
    And the user message "Thanks!" in session "s1"
    When the kernel runs
    Then the journal holds exactly 2 sessions
    And user message 3 continues the session of user message 1
    And the conversation sent in model call 3 includes, in order:
      | role      | text                   |
      | user      | Do I need an umbrella? |
      | assistant | Bring an umbrella.     |
      | user      | Thanks!                |

  @SESS-003
  Scenario: A session is stored with its own tags
    Given the profile is configured with the tags "team:core"
    And the session is created with the tags "project:site, area:work"
    And the model answers "ok"
    When the user sends "hello"
    Then the session of user message 1 is stored with the tags "area:work, project:site"

  @SESS-005
  Scenario: A new session is titled with the first 60 characters of its first message
    Given the model answers "Bring an umbrella."
    And the model answers "You are welcome."
    And the user message "Do I need an umbrella in Charleston tomorrow morning, or will it be dry all day?" in session "s1"
    And the user message "Thanks, and what about the weekend in Charleston, any rain expected there?" in session "s1"
    When the kernel runs
    Then the session of user message 1 is titled with the first 60 characters of its first message

  @SESS-004
  Scenario: A child agent's session is stored with source subagent and its parent session
    Given the scenario's profile id is "household"
    And a subagent tool "delegate"
    And a tool "weather"
    And the model calls "delegate" with {"goal": "Find the Charleston forecast"} as "d1"
    And the model calls "weather" with {"city": "Charleston"} as "k1"
    And the model answers "Rain, 18C."
    And the model answers "Bring an umbrella."
    When the user sends "Do I need an umbrella?"
    Then the child session of "d1" is stored with source "subagent" and the parent's session as its parent

  @SESS-006
  Scenario: A child agent's session is titled with its goal
    Given the scenario's profile id is "household"
    And a subagent tool "delegate"
    And the model calls "delegate" with {"goal": "Find the Charleston forecast for Saturday and Sunday, hour by hour, with rain odds"} as "d1"
    And the model answers "Rain, 18C."
    And the model answers "Bring an umbrella."
    When the user sends "Do I need an umbrella?"
    Then the child session of "d1" is titled with its goal

  # Issue 21 (blind round 2): characters, not bytes - a first message with non-ASCII letters.
  @SESS-005 @dim:first_message=non-ascii
  Scenario: A new session's title counts characters, not bytes
    Given the model answers "Oui."
    And the user message "Où est la gare? J'ai oublié où elle se trouve, même après être passé près d'elle hier." in session "s1"
    When the kernel runs
    Then the session of user message 1 is titled with the first 60 characters of its first message
