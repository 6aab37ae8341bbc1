Feature: Each tool call (000, CommonAgent; result order also for the kernel profile)
  The tool calls of one model response run in parallel, unless one of them is interactive: then
  they all run one at a time. Results go back to the model in the order the model asked for them
  (explicit in 000, silent in 003, so it holds for both profiles).
  For each call: look the tool up by name; fire pre_tool_call with the tool name, arguments, risk
  and call id; act on its result — Block(reason): the tool does not run and the model gets
  "Blocked: <reason>" as an error result; AskUser(prompt): ask the approver, and anything but
  approval gives the model "Not approved (denied)" or "Not approved (timed_out)"; Modify(args):
  the new arguments are merged in before the tool runs. Then run the tool, fire post_tool_call
  (for blocked and failed calls too), fire transform_tool_result (which may replace the result
  text), and store the tool call with its approval if there was one.

  @commonagent @TOOL-001 @dim:tools=same @dim:calls_per_response=3
  Scenario: Calls of one response to the same tool run in parallel
    Given a tool "probe"
    And the model calls in one response:
      | id | name  | args     |
      | a1 | probe | {"n": 1} |
      | a2 | probe | {"n": 2} |
      | a3 | probe | {"n": 3} |
    And the model answers "done"
    And calls "a1" and "a2" and "a3" must meet
    When the kernel runs
    Then 3 tool calls ran

  @commonagent @TOOL-001 @dim:tools=different @dim:calls_per_response=3
  Scenario: Calls of one response to different non-interactive tools run in parallel
    Given the tools:
      | name  | kind        | concurrency |
      | read  | data_source | unsafe      |
      | write | resource    | unsafe      |
    And the model calls in one response:
      | id | name  | args       |
      | r1 | read  | {"p": "x"} |
      | w1 | write | {"p": "x"} |
      | w2 | write | {"p": "y"} |
    And the model answers "done"
    And calls "r1" and "w1" and "w2" must meet
    When the kernel runs
    Then 3 tool calls ran

  @commonagent @TOOL-003
  Scenario: CommonAgent profile - results go back in the order asked although the calls finish in reverse
    Given a tool "probe" returning "probe {call_id}"
    And the model calls in one response:
      | id | name  | args     |
      | a1 | probe | {"n": 1} |
      | a2 | probe | {"n": 2} |
      | a3 | probe | {"n": 3} |
    And the model answers "done"
    And calls finish in the order "a3, a2, a1"
    When the kernel runs
    Then the tool results sent in model call 2 are in the order "a1, a2, a3"
    And the request of model call 2 has the tool result "a2" with content "probe a2"

  @kernel @TOOL-003 @dim:kernel_kinds=one
  Scenario: Kernel profile - results go back in the order asked although the calls finish in reverse
    Given a tool "probe" of kind "data_source" with concurrency safe returning "probe {call_id}"
    And the model calls in one response:
      | id | name  | args     |
      | a1 | probe | {"n": 1} |
      | a2 | probe | {"n": 2} |
      | a3 | probe | {"n": 3} |
    And the model answers "done"
    And calls finish in the order "a3, a2, a1"
    When the kernel runs
    Then the tool results sent in model call 2 are in the order "a1, a2, a3"

  @kernel @TOOL-003 @dim:kernel_kinds=mixed
  Scenario: Kernel profile - results of mixed kinds go back in the order asked or grouped by kind, never in the order they finished
    Given the tools:
      | name  | kind        | concurrency |
      | read  | data_source | safe        |
      | write | resource    | unsafe      |
      | ask   | interactive |             |
    And the model calls in one response:
      | id | name  | args       |
      | w1 | write | {"p": "x"} |
      | r1 | read  | {"p": "x"} |
      | q1 | ask   | {}         |
      | r2 | read  | {"p": "y"} |
    And the model answers "done"
    And calls finish in the order "r2, r1"
    When the kernel runs
    Then the latest tool results sent in model call 2 are in an order the profile allows for "w1, r1, q1, r2"

  @commonagent @TOOL-003
  Scenario: CommonAgent profile - results of an interactive response go back in the order asked
    Given the tools:
      | name  | kind        |
      | probe | data_source |
      | ask   | interactive |
    And the model calls in one response:
      | id | name  | args     |
      | q1 | ask   | {}       |
      | a1 | probe | {"n": 1} |
      | q2 | ask   | {"n": 2} |
    And the model answers "done"
    When the kernel runs
    Then the tool results sent in model call 2 are in the order "q1, a1, q2"

  @commonagent @TOOL-004
  Scenario: Each call runs the tool registered under the name the model called
    Given a tool "alpha" returning "alpha says {args}"
    And a tool "beta" returning "beta says {args}"
    And the model calls in one response:
      | id | name  | args     |
      | c1 | beta  | {"n": 1} |
      | c2 | alpha | {"n": 2} |
    And the model answers "done"
    When the kernel runs
    Then call "c1" ran the tool "beta"
    And call "c2" ran the tool "alpha"
    And the request of model call 2 has the tool result "c1" with content "beta says {"n":1}"
    And the request of model call 2 has the tool result "c2" with content "alpha says {"n":2}"

  @commonagent @TOOL-004
  Scenario: Identical calls of one response each run the tool
    Given a tool "alpha" returning "alpha says {args}"
    And the model calls in one response:
      | id | name  | args     |
      | c1 | alpha | {"n": 1} |
      | c2 | alpha | {"n": 1} |
    And the model answers "done"
    When the kernel runs
    Then call "c1" ran the tool "alpha"
    And call "c2" ran the tool "alpha"

  @commonagent @TOOL-005 @dim:calls_per_response=2
  Scenario: pre_tool_call gets the tool name, arguments, risk and call id, once per call, before the tool runs
    Given a tool "deploy" with risk "high"
    And a tool "lookup" with risk "low"
    And the model calls in one response:
      | id | name   | args            |
      | d1 | deploy | {"env": "prod"} |
      | l1 | lookup | {"q": "x"}      |
    And the model answers "done"
    When the kernel runs
    Then "pre_tool_call" was dispatched 2 times
    And "pre_tool_call" was dispatched 1 time for call "d1"
    And "pre_tool_call" was dispatched 1 time for call "l1"
    And the "pre_tool_call" payload for call "d1" includes {"name": "deploy", "args": {"env": "prod"}, "risk": "high", "call_id": "d1"}
    And the "pre_tool_call" payload for call "l1" includes {"name": "lookup", "args": {"q": "x"}, "risk": "low", "call_id": "l1"}
    And "pre_tool_call" for call "d1" was dispatched before tool "d1" started
    And "pre_tool_call" for call "l1" was dispatched before tool "l1" started

  @commonagent @TOOL-006
  Scenario: A call that pre_tool_call blocks does not run
    Given a tool "deploy"
    And a tool "lookup"
    And hook "guard" at "pre_tool_call" returns {"kind": "block", "reason": "no prod"} for call "d1"
    And the model calls in one response:
      | id | name   | args            |
      | d1 | deploy | {"env": "prod"} |
      | l1 | lookup | {}              |
    And the model answers "done"
    When the kernel runs
    Then tool "d1" did not run
    And tool "l1" ran

  @commonagent @TOOL-007
  Scenario: A blocked call gives the model exactly "Blocked: <reason>" as an error result
    Given a tool "deploy"
    And hook "guard" at "pre_tool_call" returns {"kind": "block", "reason": "no prod today"} for call "d1"
    And the model calls "deploy" with {"env": "prod"} as "d1"
    And the model answers "done"
    When the kernel runs
    Then the request of model call 2 has the error tool result "d1" with content "Blocked: no prod today"

  @commonagent @TOOL-008
  Scenario: AskUser asks the approver with its prompt before the tool runs, and approval runs the tool
    Given a tool "deploy" with risk "high"
    And hook "gate" at "pre_tool_call" returns {"kind": "ask_user", "prompt": "Deploy to prod?"} for call "d1"
    And the approver answers "approved"
    And the model calls "deploy" with {"env": "prod"} as "d1"
    And the model answers "done"
    When the kernel runs
    Then the approver was asked about call "d1" with the prompt "Deploy to prod?" before the tool ran
    And tool "d1" ran

  @commonagent @TOOL-009
  Scenario: A denied call does not run and the model gets "Not approved (denied)"
    Given a tool "deploy"
    And hook "gate" at "pre_tool_call" returns {"kind": "ask_user", "prompt": "Deploy?"} for call "d1"
    And the approver answers "denied"
    And the model calls "deploy" with {"env": "prod"} as "d1"
    And the model answers "done"
    When the kernel runs
    Then tool "d1" did not run
    And the request of model call 2 has the tool result "d1" with content "Not approved (denied)"

  @commonagent @TOOL-010
  Scenario: A call whose approval timed out does not run and the model gets "Not approved (timed_out)"
    Given a tool "deploy"
    And hook "gate" at "pre_tool_call" returns {"kind": "ask_user", "prompt": "Deploy?"} for call "d1"
    And the approver answers "timed_out"
    And the model calls "deploy" with {"env": "prod"} as "d1"
    And the model answers "done"
    When the kernel runs
    Then tool "d1" did not run
    And the request of model call 2 has the tool result "d1" with content "Not approved (timed_out)"

  @commonagent @TOOL-011
  Scenario: Modify merges its arguments over the model's before the tool runs
    Given a tool "deploy" returning "deployed {args}"
    And hook "fix" at "pre_tool_call" returns {"kind": "modify", "args": {"env": "staging", "force": true}} for call "d1"
    And the model calls "deploy" with {"env": "prod", "dry": false} as "d1"
    And the model answers "done"
    When the kernel runs
    Then tool "d1" received the args {"env": "staging", "dry": false, "force": true}

  # d2 differs from d1: a kernel may drop identical calls of one response (TOOL-012's subject).
  @commonagent @TOOL-011
  Scenario: Two Modify hooks at pre_tool_call: both merges reach the tool
    Given a tool "deploy" returning "deployed {args}"
    And hook "fix" at "pre_tool_call" returns {"kind": "modify", "args": {"env": "staging"}} for call "d1"
    And hook "region" at "pre_tool_call" returns {"kind": "modify", "args": {"region": "eu-west-1"}} for call "d1"
    And the model calls in one response:
      | id | name   | args                          |
      | d1 | deploy | {"env": "prod", "dry": false} |
      | d2 | deploy | {"env": "prod", "dry": true}  |
    And the model answers "done"
    When the kernel runs
    Then tool "d1" received the args {"env": "staging", "dry": false, "region": "eu-west-1"}
    And tool "d2" received the args {"env": "prod", "dry": true}

  # 000 gives post_tool_call no payload (reading post-tool-call-payload): only that it fires
  # once per call, after the call's tool, is checked.
  @commonagent @TOOL-012 @dim:calls_per_response=2
  Scenario: post_tool_call fires once per call, after its tool ran
    Given a tool "lookup" returning "got {args}"
    And the model calls in one response:
      | id | name   | args       |
      | c1 | lookup | {"q": "x"} |
      | c2 | lookup | {"q": "y"} |
    And the model answers "done"
    When the kernel runs
    Then "post_tool_call" was dispatched once per call, after the call's tool ended or was refused

  @commonagent @TOOL-012
  Scenario: post_tool_call fires once per call for identical calls, over several responses
    Given a tool "lookup" returning "got {args}"
    And the model calls in one response:
      | id | name   | args       |
      | c1 | lookup | {"q": "x"} |
      | c2 | lookup | {"q": "x"} |
      | c3 | lookup | {"q": "x"} |
    And the model calls in one response:
      | id | name   | args       |
      | c4 | lookup | {"q": "x"} |
      | c5 | lookup | {"q": "y"} |
    And calls finish in the order "c3, c2, c1"
    And the model answers "done"
    When the kernel runs
    Then "post_tool_call" was dispatched once per call, after the call's tool ended or was refused

  @commonagent @TOOL-013
  Scenario: post_tool_call fires for a blocked call too
    Given a tool "deploy"
    And hook "guard" at "pre_tool_call" returns {"kind": "block", "reason": "no"} for call "d1"
    And the model calls "deploy" with {} as "d1"
    And the model answers "done"
    When the kernel runs
    Then "post_tool_call" was dispatched once per call, after the call's tool ended or was refused

  @commonagent @TOOL-013
  Scenario: post_tool_call fires for a blocked call among calls that run
    Given a tool "deploy"
    And hook "guard" at "pre_tool_call" returns {"kind": "block", "reason": "no"} for call "d2"
    And the model calls in one response:
      | id | name   | args       |
      | d1 | deploy | {"n": 1}   |
      | d2 | deploy | {"n": 2}   |
      | d3 | deploy | {"n": 3}   |
    And the model answers "done"
    When the kernel runs
    Then tool "d2" did not run
    And "post_tool_call" was dispatched once per call, after the call's tool ended or was refused

  @commonagent @TOOL-014
  Scenario: post_tool_call fires for a failed call too, and the turn goes on
    Given a tool "flaky"
    And the call "f1" fails with "disk on fire"
    And the model calls "flaky" with {} as "f1"
    And the model answers "recovered"
    When the kernel runs
    Then "post_tool_call" was dispatched once per call, after the call's tool ended or was refused
    And the reply is "recovered"

  @commonagent @TOOL-015
  Scenario: transform_tool_result fires after post_tool_call and its text replaces what the model gets
    Given a tool "lookup" returning "secret {args}"
    And hook "redact" at "transform_tool_result" returns {"kind": "replace", "payload": {"name": "lookup", "call_id": "c1", "result": "REDACTED"}} for call "c1"
    And the model calls in one response:
      | id | name   | args       |
      | c1 | lookup | {"q": "1"} |
      | c2 | lookup | {"q": "2"} |
      | c3 | lookup | {"q": "3"} |
    And the model answers "done"
    When the kernel runs
    Then every "transform_tool_result" dispatch comes after one more "post_tool_call" dispatch
    And the request of model call 2 has the tool result "c1" with content "REDACTED"
    And the request of model call 2 has the tool result "c2" with content "secret {"q":"2"}"
    And the request of model call 2 has the tool result "c3" with content "secret {"q":"3"}"

  @commonagent @TOOL-016
  Scenario: Every tool call is stored once, blocked and failed ones included
    Given a tool "lookup"
    And hook "guard" at "pre_tool_call" returns {"kind": "block", "reason": "no"} for call "b1"
    And the call "f1" fails with "boom"
    And the model calls in one response:
      | id | name   | args       |
      | k1 | lookup | {"q": "1"} |
      | b1 | lookup | {"q": "2"} |
      | f1 | lookup | {"q": "3"} |
    And the model calls "lookup" with {"q": "4"} as "k2"
    And the model answers "done"
    When the kernel runs
    Then the journal stores each of the tool calls "k1, b1, f1, k2" once

  @commonagent @TOOL-017
  Scenario: A call that went to the approver is stored with the approver's decision
    Given a tool "deploy"
    And hook "gate" at "pre_tool_call" returns {"kind": "ask_user", "prompt": "OK?"} for tool "deploy"
    And the approver answers "approved, denied"
    And the model calls "deploy" with {"n": 1} as "d1"
    And the model calls "deploy" with {"n": 2} as "d2"
    And the model answers "done"
    When the kernel runs
    Then the journal stores call "d1" with the approval "approved"
    And the journal stores call "d2" with the approval "denied"

  Rule: With an interactive call in the response, its calls run one at a time (000)

    Background:
      Given whichever call of a response starts first is held until another starts

    @commonagent @TOOL-002
    Scenario: With an interactive call in the response, all its calls run one at a time
      Given the tools:
        | name  | kind        |
        | probe | data_source |
        | ask   | interactive |
      And the model calls in one response:
        | id | name  | args     |
        | a1 | probe | {"n": 1} |
        | q1 | ask   | {}       |
        | a2 | probe | {"n": 2} |
      And the model answers "done"
      And the scenario timeout is 3 seconds
      When the kernel runs
      Then 3 tool calls ran
      And the tool calls ran one at a time

    # Distinct arguments (as TURN-015/TOOL-015): a kernel that de-duplicates identical calls in one
    # response (hermes) would fail "4 tool calls ran" on de-duplication, not on TOOL-002's subject.
    @commonagent @TOOL-002
    Scenario: With an interactive call among several calls to one tool, all run one at a time
      Given the tools:
        | name  | kind        |
        | probe | data_source |
        | ask   | interactive |
      And the model calls in one response:
        | id | name  | args     |
        | a1 | probe | {"n": 1} |
        | a2 | probe | {"n": 2} |
        | q1 | ask   | {}       |
        | a3 | probe | {"n": 3} |
      And the model answers "done"
      And the scenario timeout is 3 seconds
      When the kernel runs
      Then 4 tool calls ran
      And the tool calls ran one at a time

  Rule: Several calls of a kind in one response, and results of every outcome (issue 21)

  # Issue 21: several calls of one response go to the approver; each is stored with its own
  # decision (the approver's log says which call got which answer, whatever order it was asked).
  @commonagent @TOOL-017 @dim:approvals_per_response=2 @dim:approvals_per_response=3 @dim:decision=approved @dim:decision=denied @dim:decision=timed_out
  Scenario Outline: Several calls of one response that go to the approver are each stored with their own decision
    Given a tool "deploy" with risk "high"
    And hook "gate" at "pre_tool_call" returns {"kind": "ask_user", "prompt": "OK?"} for tool "deploy"
    And the approver answers "<answers>"
    And the model calls in one response:
      | id | name   | args     |
      | d1 | deploy | {"n": 1} |
      | d2 | deploy | {"n": 2} |
      | d3 | deploy | {"n": 3} |
    And the model answers "done"
    When the kernel runs
    Then every call that went to the approver is stored with the decision the approver gave for it

    Examples:
      | answers                      |
      | approved, denied, approved   |
      | denied, timed_out, approved  |
      | approved, approved, denied   |

  # Issue 21 (blind round 2): transform_tool_result also replaces an error result (a failed call,
  # a blocked one), and the approver is asked about each call of one tool in one response; a
  # Modify before an approved AskUser still reaches the tool.
  @commonagent @TOOL-015 @dim:result=failed @dim:result=blocked
  Scenario: transform_tool_result replaces the text of failed and blocked results too
    Given a tool "lookup" returning "secret {args}"
    And the call "f1" fails with "lookup broke"
    And hook "guard" at "pre_tool_call" returns {"kind": "block", "reason": "no"} for call "b1"
    And hook "redact" at "transform_tool_result" returns {"kind": "replace", "payload": {"name": "lookup", "call_id": "f1", "result": "REDACTED-F"}} for call "f1"
    And hook "redact" at "transform_tool_result" returns {"kind": "replace", "payload": {"name": "lookup", "call_id": "b1", "result": "REDACTED-B"}} for call "b1"
    And the model calls in one response:
      | id | name   | args       |
      | f1 | lookup | {"q": "1"} |
      | b1 | lookup | {"q": "2"} |
    And the model answers "done"
    When the kernel runs
    Then the request of model call 2 has the tool result "f1" with content "REDACTED-F"
    And the request of model call 2 has the blocked call "b1" with content "REDACTED-B", or "Blocked: no" where blocked results are not transformed

  @commonagent @TOOL-008 @dim:approvals_per_response=3 @dim:tools=same
  Scenario: The approver is asked about every call of one tool in one response
    Given a tool "deploy" with risk "high"
    And hook "gate" at "pre_tool_call" returns {"kind": "ask_user", "prompt": "OK?"} for tool "deploy"
    And the approver answers "approved, approved, approved"
    And the model calls in one response:
      | id | name   | args     |
      | d1 | deploy | {"n": 1} |
      | d2 | deploy | {"n": 2} |
      | d3 | deploy | {"n": 3} |
    And the model answers "done"
    When the kernel runs
    Then the approver was asked about call "d1" with the prompt "OK?" before the tool ran
    And the approver was asked about call "d2" with the prompt "OK?" before the tool ran
    And the approver was asked about call "d3" with the prompt "OK?" before the tool ran

  @commonagent @TOOL-011 @dim:chain=modify-then-approved-ask
  Scenario: Modify before an approved AskUser still reaches the tool
    Given a tool "deploy" returning "deployed {args}"
    And hook "fix" at "pre_tool_call" returns {"kind": "modify", "args": {"env": "staging"}} for call "d1"
    And hook "gate" at "pre_tool_call" returns {"kind": "ask_user", "prompt": "OK?"} for call "d1"
    And the approver answers "approved"
    And the model calls "deploy" with {"env": "prod", "dry": false} as "d1"
    And the model answers "done"
    When the kernel runs
    Then tool "d1" received the args {"env": "staging", "dry": false}
