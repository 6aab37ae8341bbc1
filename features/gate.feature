@kernel
Feature: The policy precheck and the plan/apply gate (003, steps 8 to 12)
  Every call the model makes passes through policy in some form. Data-source calls (step 9)
  and interactive calls (step 9b) run a lightweight policy precheck before they execute: a call
  the precheck denies does not run, and the model does not get its output (what it gets instead is
  defined in a document we do not have: akc readings precheck-denial-result).
  Resource calls never run directly: step 10 builds a plan with one item per resource call (and
  nothing else), step 11 runs the plan-ready veto chain over it, and step 12 applies only the
  items the chain left standing. A vetoed item is not applied, and the model does not get its
  output (the wording of its result is open: akc readings veto-result). The harness's precheck is Doubles.policy_precheck and a
  hook vetoes with {"kind": "veto", "call_ids": [...], "reason": ...} (docs/adapter.md).

  # ------------------------------------------------------------------ the precheck

  @GATE-001 @dim:turn=first @dim:turn=later @dim:calls_per_response=1 @dim:calls_per_response=several @dim:calls=distinct
  Scenario: Every data-source call is prechecked before it runs, in every turn
    Given the tools:
      | name  | kind        | concurrency |
      | fetch | data_source | safe        |
      | write | resource    |             |
    And the model calls in one response:
      | id | name  | args       |
      | d1 | fetch | {"q": "1"} |
      | r1 | write | {"p": "1"} |
      | d2 | fetch | {"q": "2"} |
    And the model calls "fetch" with {"q": "3"} as "d3"
    And the model answers "done"
    When the kernel runs
    Then the policy precheck is consulted for calls "d1, d2, d3", each before it starts

  @GATE-002 @dim:turn=first @dim:turn=later @dim:calls_per_response=1 @dim:calls_per_response=several
  Scenario: Every interactive call is prechecked before it runs, in every turn
    Given the tools:
      | name  | kind        |
      | ask   | interactive |
      | fetch | data_source |
    And the model calls in one response:
      | id | name  | args     |
      | i1 | ask   | {"n": 1} |
      | d1 | fetch | {}       |
      | i2 | ask   | {"n": 2} |
    And the model calls "ask" with {"n": 3} as "i3"
    And the model answers "done"
    When the kernel runs
    Then the policy precheck is consulted for calls "i1, i2, i3", each before it starts

  @GATE-003 @dim:kind=data_source
  Scenario: A data-source call the precheck denies does not run and its result names the reason
    Given the tools:
      | name  | kind        | concurrency | result         |
      | fetch | data_source | safe        | fetched {args} |
    And the policy denies "d1" because "secret area"
    And the model calls in one response:
      | id | name  | args       |
      | d1 | fetch | {"q": "1"} |
      | d2 | fetch | {"q": "2"} |
    And the model answers "done"
    When the kernel runs
    Then call "d1", denied by the precheck because "secret area", did not run and the request of model call 2 holds no output of its tool
    And tool "d2" ran

  @GATE-003 @dim:kind=interactive
  Scenario: An interactive call the precheck denies does not run and its result names the reason
    Given the tools:
      | name | kind        | result       |
      | ask  | interactive | asked {args} |
    And the policy denies "i2" because "do not disturb"
    And the model calls in one response:
      | id | name | args     |
      | i1 | ask  | {"n": 1} |
      | i2 | ask  | {"n": 2} |
    And the model answers "done"
    When the kernel runs
    Then call "i2", denied by the precheck because "do not disturb", did not run and the request of model call 2 holds no output of its tool
    And tool "i1" ran

  # ------------------------------------------------------------------ the plan

  @GATE-004 @dim:plan=resource_calls @dim:resource_calls=distinct
  Scenario: The plan holds exactly the resource calls of the turn
    Given the tools:
      | name  | kind        |
      | write | resource    |
      | ask   | interactive |
      | fetch | data_source |
    And the model calls in one response:
      | id | name  | args       |
      | d1 | fetch | {"q": "1"} |
      | r1 | write | {"p": "1"} |
      | i1 | ask   | {}         |
      | r2 | write | {"p": "2"} |
    And the model answers "done"
    When the kernel runs
    Then the plan of model call 1 holds exactly the calls "r1, r2"

  @GATE-004 @dim:plan=no_resource_calls
  Scenario: A turn without resource calls hands plan-ready an empty plan
    Given the tools:
      | name  | kind        |
      | ask   | interactive |
      | fetch | data_source |
    And the model calls in one response:
      | id | name  | args       |
      | d1 | fetch | {"q": "1"} |
      | i1 | ask   | {}         |
    And the model answers "done"
    When the kernel runs
    Then the plan of model call 1 holds no item

  @GATE-005
  Scenario: No resource call runs before the whole plan-ready chain has run over it
    Given the tools:
      | name  | kind     | concurrency |
      | write | resource | safe:p      |
      | move  | resource |             |
    And a hook "first" at "plan-ready"
    And a hook "last" at "plan-ready"
    And the model calls in one response:
      | id | name  | args       |
      | r1 | write | {"p": "1"} |
      | r2 | write | {"p": "2"} |
      | m1 | move  | {}         |
    And the model calls "move" with {"to": "x"} as "m2"
    And the model answers "done"
    When the kernel runs
    Then the plan-ready chain ran before the resource calls of every model call

  # ------------------------------------------------------------------ the veto

  @GATE-006 @dim:vetoes=one_hook
  Scenario: A vetoed plan item is not applied, the others are, and the model does not get its output
    Given a tool "write" of kind "resource" returning "wrote {args}"
    And hook "gate" at "plan-ready" returns {"kind": "veto", "call_ids": ["r2"], "reason": "too risky"}
    And the model calls in one response:
      | id | name  | args       |
      | r1 | write | {"p": "1"} |
      | r2 | write | {"p": "2"} |
      | r3 | write | {"p": "3"} |
    And the model answers "done"
    When the kernel runs
    Then tool "r2" did not run
    And tool "r1" ran
    And tool "r3" ran
    And call "r2", vetoed because "too risky", did not run and the request of model call 2 holds no output of its tool

  @GATE-006 @dim:vetoes=two_hooks
  Scenario: Vetoes from two hooks of the chain both hold
    Given a tool "write" of kind "resource" returning "wrote {args}"
    And hook "gate1" at "plan-ready" returns {"kind": "veto", "call_ids": ["r1"], "reason": "first says no"}
    And hook "gate2" at "plan-ready" returns {"kind": "veto", "call_ids": ["r3"], "reason": "second says no"}
    And the model calls in one response:
      | id | name  | args       |
      | r1 | write | {"p": "1"} |
      | r2 | write | {"p": "2"} |
      | r3 | write | {"p": "3"} |
    And the model answers "done"
    When the kernel runs
    Then tool "r1" did not run
    And tool "r3" did not run
    And tool "r2" ran
    And call "r1", vetoed because "first says no", did not run and the request of model call 2 holds no output of its tool
    And call "r3", vetoed because "second says no", did not run and the request of model call 2 holds no output of its tool

  @GATE-006 @dim:vetoes=earlier_turn
  Scenario: A veto in one turn does not carry over to the next
    Given a tool "write" of kind "resource"
    And hook "gate" at "plan-ready" returns {"kind": "veto", "call_ids": ["r1"], "reason": "not now"} on occurrence 0
    And the model calls in one response:
      | id | name  | args       |
      | r0 | write | {"p": "0"} |
      | r1 | write | {"p": "1"} |
    And the model calls "write" with {"p": "1"} as "r2"
    And the model answers "done"
    When the kernel runs
    Then tool "r1" did not run
    And tool "r0" ran
    And tool "r2" ran

  # Identical calls of one response (issue 21, "repeated or distinct"): each is a call of its own,
  # prechecked on its own.
  @GATE-001 @dim:calls=identical
  Scenario: Identical data-source calls of one response are each prechecked
    Given a tool "fetch" of kind "data_source" with concurrency safe
    And the model calls in one response:
      | id | name  | args       |
      | d1 | fetch | {"q": "1"} |
      | d2 | fetch | {"q": "1"} |
      | d3 | fetch | {"q": "1"} |
    And the model answers "done"
    When the kernel runs
    Then the policy precheck is consulted for calls "d1, d2, d3", each before it starts

  @GATE-004 @dim:plan=resource_calls @dim:resource_calls=identical
  Scenario: Identical resource calls of one response are each an item of the plan
    Given a tool "write" of kind "resource"
    And the model calls in one response:
      | id | name  | args       |
      | r1 | write | {"p": "1"} |
      | r2 | write | {"p": "1"} |
    And the model answers "done"
    When the kernel runs
    Then the plan of model call 1 holds exactly the calls "r1, r2"

  # One veto naming several items vetoes every one of them (issue 21, several of a kind).
  @GATE-006 @dim:vetoes=several_ids_in_one_veto
  Scenario: A veto naming several plan items vetoes each of them
    Given a tool "write" of kind "resource"
    And hook "gate" at "plan-ready" returns {"kind": "veto", "call_ids": ["r1", "r3"], "reason": "too risky"}
    And the model calls in one response:
      | id | name  | args       |
      | r1 | write | {"p": "1"} |
      | r2 | write | {"p": "2"} |
      | r3 | write | {"p": "3"} |
    And the model answers "done"
    When the kernel runs
    Then tool "r1" did not run
    And tool "r3" did not run
    And tool "r2" ran
