@commonagent
Feature: Tags (001, "Tags" and "Where tags come from")
  A tag is a key:value label. Key: lower-case letters, digits, _ and -. Value: letters of either
  case, digits, _, - and . ; exactly one ':'; no spaces.

    | tag                 | valid? |
    | `area:household`    | yes    |
    | `client:acme`       | yes    |
    | `project:Site-v2.1` | yes    |
    | `Area:x`            | no: upper case in the key |
    | `area:has space`    | no: space |
    | `a:b:c`             | no: two colons |
    | `area`              | no: no value |

  A turn's tags are the profile's tags plus the session's own tags, sorted, without duplicates;
  a message that starts a new session can bring extra tags. Tags carry no meaning in the loop:
  CommonAgent copies them onto every turn (TurnInfo.tags of every hook and tool call).
  What happens to an invalid tag is open (reading invalid-tag): a kernel may refuse the
  configuration (the adapter reports the rejection naming the tags field) or drop the tag, so
  that it never reaches a TurnInfo or a stored session while the valid tags beside it do.

  Background:
    Given a tool "weather"
    And the model calls "weather" with {"city": "Charleston"} as "c1"
    And the model answers "Bring an umbrella."

  @TAG-001
  Scenario: Valid tags are accepted and used unchanged on the profile
    Given the profile is configured with the tags "area:household, client:acme, project:Site-v2.1"
    When the user sends "Do I need an umbrella?"
    Then the kernel accepted the tags
    And the tags "area:household, client:acme, project:Site-v2.1" reach every hook dispatch unchanged

  @TAG-001
  Scenario: Valid tags are accepted and used unchanged on a new session
    Given the session is created with the tags "area:household, client:acme, project:Site-v2.1"
    When the user sends "Do I need an umbrella?"
    Then the kernel accepted the tags
    And the tags "area:household, client:acme, project:Site-v2.1" reach every hook dispatch unchanged

  @TAG-002
  Scenario Outline: A tag whose key is not lower-case letters, digits, _ and - is refused on the profile
    Given the profile is configured with the tags "team:core-2_x.y, <tag>"
    When the user sends "Do I need an umbrella?"
    Then the invalid tag "<tag>" is refused or dropped

    Examples:
      | tag     |
      | Area:x  |
      | ar.ea:x |

  @TAG-002
  Scenario Outline: A tag whose key is not lower-case letters, digits, _ and - is refused on a new session
    Given the session is created with the tags "team:core-2_x.y, <tag>"
    When the user sends "Do I need an umbrella?"
    Then the invalid tag "<tag>" is refused or dropped

    Examples:
      | tag      |
      | Area:x   |
      | area/x:y |

  @TAG-003
  Scenario Outline: A tag whose value holds other characters than letters, digits, _, - and . is refused on the profile
    Given the profile is configured with the tags "team:core-2_x.y, <tag>"
    When the user sends "Do I need an umbrella?"
    Then the invalid tag "<tag>" is refused or dropped

    Examples:
      | tag            |
      | client:acme/eu |

  @TAG-003
  Scenario Outline: A tag whose value holds other characters than letters, digits, _, - and . is refused on a new session
    Given the session is created with the tags "team:core-2_x.y, <tag>"
    When the user sends "Do I need an umbrella?"
    Then the invalid tag "<tag>" is refused or dropped

    Examples:
      | tag            |
      | client:acme@eu |
      | project:v2+1   |

  @TAG-004
  Scenario Outline: A tag without exactly one colon is refused on the profile
    Given the profile is configured with the tags "team:core-2_x.y, <tag>"
    When the user sends "Do I need an umbrella?"
    Then the invalid tag "<tag>" is refused or dropped

    Examples:
      | tag   |
      | a:b:c |
      | area  |

  @TAG-004
  Scenario Outline: A tag without exactly one colon is refused on a new session
    Given the session is created with the tags "team:core-2_x.y, <tag>"
    When the user sends "Do I need an umbrella?"
    Then the invalid tag "<tag>" is refused or dropped

    Examples:
      | tag   |
      | a:b:c |
      | area  |

  @TAG-005
  Scenario Outline: A tag containing a space is refused on the profile
    Given the profile is configured with the tags "team:core-2_x.y, <tag>"
    When the user sends "Do I need an umbrella?"
    Then the invalid tag "<tag>" is refused or dropped

    Examples:
      | tag            |
      | area:has space |

  @TAG-005
  Scenario Outline: A tag containing a space is refused on a new session
    Given the session is created with the tags "team:core-2_x.y, <tag>"
    When the user sends "Do I need an umbrella?"
    Then the invalid tag "<tag>" is refused or dropped

    Examples:
      | tag            |
      | area:has space |

  @TAG-006
  Scenario: The resolved tags are copied onto every hook and tool call of every turn
    Given the profile is configured with the tags "team:core, area:work"
    And the session is created with the tags "project:site"
    And the model calls "weather" with {"city": "Boston"} as "c2"
    And the model answers "You are welcome."
    And the user message "Do I need an umbrella?" in session "s1"
    And the user message "And in Boston?" in session "s1"
    When the kernel runs
    Then every hook and tool call of a session's turns carries one and the same tags

  @TAG-007
  Scenario: Tags carry no meaning in the loop
    Given the profile is configured with the tags "area:work"
    And the session is created with the tags "client:acme"
    When the user sends "Do I need an umbrella?"
    Then running it again with the profile tags "area:household" and the session tags "project:site" makes the same model calls and tool calls

  @TAG-007
  Scenario: Tags carry no meaning over several calls and turns, whatever their characters
    Given the profile is configured with the tags "area:work, team_2:core-v1.0"
    And the session is created with the tags "client:acme, area:work"
    And the model calls in one response:
      | id | name    | args               |
      | c2 | weather | {"city": "Boston"} |
      | c3 | weather | {"city": "Boston"} |
    And the model answers "Also dry."
    And the user message "Do I need an umbrella?" in session "s1"
    And the user message "And in Boston?" in session "s1"
    When the kernel runs
    Then running it again with the profile tags "zone:eu-1, cost_ctr:R.and.D" and the session tags "client:Globex, zone:eu-1" makes the same model calls and tool calls

  @TAG-008
  Scenario Outline: A turn's tags are the profile's and the session's, sorted, without duplicates
    Given the profile is configured with the tags "<profile tags>"
    And the session is created with the tags "<session tags>"
    When the user sends "Do I need an umbrella?"
    Then every hook and tool call of the run carries exactly the tags "<turn tags>"

    Examples:
      | profile tags         | session tags            | turn tags                          |
      | area:work, team:core | project:site, area:work | area:work, project:site, team:core |
      | team:core, area:work | area:work, client:acme  | area:work, client:acme, team:core  |
      | zone:b, zone:a       |                         | zone:a, zone:b                     |
      | a-1:x, a_1:y         | a_1:y                   | a-1:x, a_1:y                       |
      | team:core, team:core | team:core               | team:core                          |
      | k9:V.2-x_y           | k10:v, k9:V.2-x_y       | k10:v, k9:V.2-x_y                  |

  @TAG-009
  Scenario: Extra tags of the message that starts a new session become that session's tags
    Given the profile is configured with the tags "area:work"
    And the session is created with no tags
    And the model answers "Boston is dry."
    And the model answers "You are welcome."
    And the user message "Do I need an umbrella?" in session "s1" brings the tags "client:acme"
    And the user message "And in Boston?" in session "s2"
    And the user message "Thanks!" in session "s1"
    When the kernel runs
    Then the hooks of the session of user message 1 carry exactly the tags "area:work, client:acme"
    And the hooks of the session of user message 2 carry exactly the tags "area:work"
