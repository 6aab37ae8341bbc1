@commonagent
Feature: Child turns (001, "Child turns")
  TurnInfo::child makes the identity for a delegated turn: same profile, same tags, a new
  session, parent_turn_id set to the parent's turn and depth + 1. Because tags are copied,
  anything keyed on tags rolls up through delegation: a helper agent working for client:acme is
  billed to client:acme.

  A delegation tool runs a child turn of the same profile (the tool's `goal` argument is the
  child's first message). The child's hook dispatches and tool calls are those the harness sees
  while the delegation call runs, between the parent's pre_tool_call and post_tool_call for it.

  Background:
    Given the scenario's profile id is "household"
    And the profile is configured with the tags "team:core, area:work"
    And the session is created with the tags "client:acme"
    And a subagent tool "delegate"
    And a tool "weather"

  @dim:depth=1 @dim:definition_profile=same
  Scenario Outline: A child turn's identity is derived from its parent turn
    Given the model calls "delegate" with {"goal": "Find the Charleston forecast"} as "d1"
    And the model calls "weather" with {"city": "Charleston"} as "k1"
    And the model answers "Rain, 18C."
    And the model answers "Bring an umbrella."
    When the user sends "Do I need an umbrella?"
    Then tool "k1" ran
    And the child turn of "d1" <rule>

    @CHILD-001
    Examples: same profile
      | rule                                |
      | runs with the parent's profile id   |

    @CHILD-002
    Examples: same tags
      | rule                                        |
      | carries exactly the tags of the parent turn |

    @CHILD-003
    Examples: a new session
      | rule                                                         |
      | runs in a new session, not in the session of the parent turn |

    @CHILD-004
    Examples: parent_turn_id
      | rule                              |
      | has the parent turn as its parent |

    @CHILD-005
    Examples: depth + 1
      | rule                                    |
      | is one level deeper than the parent turn |
      | has depth 1                             |

  @dim:depth=2 @dim:definition_profile=same
  Scenario Outline: A grandchild turn's identity is derived from the child turn
    Given the model calls "delegate" with {"goal": "Plan the trip"} as "d1"
    And the model calls "delegate" with {"goal": "Check the weather"} as "d2"
    And the model calls "weather" with {"city": "Charleston"} as "k1"
    And the model answers "Rain."
    And the model answers "Take an umbrella."
    And the model answers "Trip planned."
    When the user sends "Plan my trip to Charleston"
    Then tool "k1" ran
    And the child turn of "d2" <rule>

    @CHILD-001
    Examples: same profile
      | rule                              |
      | runs with the parent's profile id |

    @CHILD-002
    Examples: same tags
      | rule                                               |
      | carries exactly the tags of the child turn of "d1" |

    @CHILD-003
    Examples: a new session
      | rule                                                                |
      | runs in a new session, not in the session of the child turn of "d1" |

    @CHILD-004
    Examples: parent_turn_id
      | rule                                     |
      | has the child turn of "d1" as its parent |

    @CHILD-005
    Examples: depth + 1
      | rule                                            |
      | is one level deeper than the child turn of "d1" |
      | has depth 2                                     |

  # Issue 21: a child turn is a turn of its own. The sub-agent definition names another profile
  # (001: same profile as the parent); the child's session is new (empty history, session hooks).
  @cap_subagents @dim:definition_profile=other @dim:depth=1 @dim:session=new
  Scenario Outline: A child turn is a turn of a new session, with the parent's profile whatever its definition names
    Given the definition of the subagent tool "delegate" names the profile "researcher"
    And the model calls "delegate" with {"goal": "Find the Charleston forecast"} as "d1"
    And the model calls "weather" with {"city": "Charleston"} as "k1"
    And the model answers "Rain, 18C."
    And the model answers "Bring an umbrella."
    When the user sends "Do I need an umbrella?"
    Then tool "k1" ran
    And the child turn of "d1" <rule>

    @CHILD-001
    Examples: same profile as the parent, not the definition's
      | rule                              |
      | runs with the parent's profile id |

    @CHILD-003
    Examples: a new session has no history
      | rule                          |
      | starts from an empty history |

    @IDENT-007
    Examples: a turn id of its own
      | rule                     |
      | has a turn id of its own |

    @JOURNAL-002
    Examples: started in the journal with its own TurnInfo
      | rule                                            |
      | is started in the journal with its TurnInfo |

    @TURN-009 @TURN-020
    Examples: the session hooks of a new session
      | rule                                                               |
      | dispatched on_session_start first and on_session_end as its last hook |

  @cap_subagents @IDENT-005 @dim:id=child-session @dim:id=child-turn @dim:depth=1 @dim:depth=2
  Scenario: The ids of child and grandchild turns are UUID v7 made during the run
    Given the model calls "delegate" with {"goal": "Plan the trip"} as "d1"
    And the model calls "delegate" with {"goal": "Check the weather"} as "d2"
    And the model calls "weather" with {"city": "Charleston"} as "k1"
    And the model answers "Rain."
    And the model answers "Take an umbrella."
    And the model answers "Trip planned."
    When the user sends "Plan my trip to Charleston"
    Then tool "k1" ran
    And every session id and turn id the run shows was made during the run
