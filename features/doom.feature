@kernel
Feature: Doom-loop detection
  003 makes catching a model stuck on a functionally identical call a kernel-owned subsystem (the
  harness's model and tools do nothing to detect repetition). hash_of(call) = hash(tool_name,
  canonicalize(input_json)); at step 16 of every turn the kernel compares the hashes of the most
  recent `threshold` resource/data-source calls, and `threshold` consecutive identical hashes are a
  bound-fired condition: the Limit-reached path (one more turn with tool specs withheld, then the
  end), never a raw exception. The threshold defaults to a value in [3, 5] and is configurable.

  What the seeds leave open, and these scenarios accept: the default threshold anywhere in [3, 5];
  any canonical form (only key order and insignificant whitespace are required not to matter); the
  status subtype, which is the adapter's declared AdapterInfo.doom_loop_subtype; the range a
  configured threshold may take (the scenarios configure thresholds in [3, 5] only: 3 and 5 between
  them catch a kernel that ignores the setting, whatever its default).

  The window holds resource/data-source calls only: an interactive call between identical ones
  is not in it and does not break the run.

  Where the detector should fire at an exact turn, the next scripted response is a plain answer,
  so a kernel that does not fire (or fires a turn late) ends with "success" instead. Checks that
  are not about the firing turn script more identical calls than the threshold needs.

  @DOOM-001 @DOOM-004 @dim:threshold=3 @dim:threshold=5 @dim:identical_calls=threshold @dim:calls_per_response=1 @dim:call_results=success @dim:window=unset
  Scenario Outline: With threshold <t> the detector fires at the <t>-th identical call
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the doom-loop threshold is <t>
    And the model calls "lookup" with {"q": "same"} <t> times
    And the model answers "final answer"
    When the kernel runs
    Then <t> tool calls ran
    And <t> identical calls ran in a row
    And the run ends with a subtype other than "success"

    Examples:
      | t |
      | 3 |
      | 5 |

  @DOOM-004 @dim:threshold=3 @dim:threshold=5 @dim:identical_calls=threshold-1
  Scenario Outline: With threshold <t>, <n> identical calls do not fire the detector
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the doom-loop threshold is <t>
    And the model calls "lookup" with {"q": "same"} <n> times
    And the model answers "done"
    When the kernel runs
    Then <n> tool calls ran
    And <n> identical calls ran in a row
    And the run ends with subtype "success"

    Examples:
      | t | n |
      | 3 | 2 |
      | 5 | 4 |

  @DOOM-003 @dim:identical_calls=2
  Scenario: With the default threshold, two identical calls never fire the detector
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the model calls "lookup" with {"q": "same"} 2 times
    And the model answers "done"
    When the kernel runs
    Then 2 identical calls ran in a row
    And the run ends with subtype "success"

  @DOOM-003 @dim:identical_calls=5
  Scenario: With the default threshold, the detector has fired by the fifth identical call
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the model calls "lookup" with {"q": "same"} 5 times
    And the model answers "final answer"
    When the kernel runs
    Then the run ends with a subtype other than "success"

  @DOOM-005
  Scenario: The turn holding the threshold-th identical call runs it and post-apply before the final turn
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the doom-loop threshold is 3
    And the model calls "lookup" with {"q": "same"} as "k" 3 times
    And the model answers "final answer"
    When the kernel runs
    Then tool "k_r2" ran
    And the hook points of model call 3 include, in order:
      | pre-tool-call  |
      | post-tool-call |
      | post-apply     |

  @DOOM-006 @dim:difference=key_order @dim:difference=whitespace
  Scenario: Key order and whitespace of the arguments do not make calls different
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the doom-loop threshold is 3
    And the model script:
      """
      [{"tool_calls": [{"id": "k1", "name": "lookup", "raw_args": "{\"a\": 1, \"b\": [1, 2], \"c\": {\"x\": \"y\", \"z\": 0}}"}]},
       {"tool_calls": [{"id": "k2", "name": "lookup", "raw_args": "{ \"c\" : {\"z\":0,\"x\":\"y\"},\n  \"b\" : [1,2], \"a\":1 }"}]},
       {"tool_calls": [{"id": "k3", "name": "lookup", "raw_args": "{\"b\":[ 1 , 2 ],\"a\":1,\"c\":{ \"x\" : \"y\" , \"z\" : 0 }}"}]},
       {"tool_calls": [{"id": "k4", "name": "lookup", "raw_args": "{\"c\":{\"x\":\"y\",\"z\":0},\"a\":1,\"b\":[1,2]}"}]},
       {"tool_calls": [{"id": "k5", "name": "lookup", "raw_args": "{\n\"a\": 1,\n\"c\": {\"z\": 0, \"x\": \"y\"},\n\"b\": [1, 2]\n}"}]},
       {"text": "final answer"}]
      """
    When the kernel runs
    Then the run ends with a subtype other than "success"

  @DOOM-007 @dim:breaker=other_args @dim:calls_per_response=1
  Scenario: Other arguments between identical calls break the run
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the doom-loop threshold is 3
    And the model calls "lookup" with {"q": "same"} as "a1"
    And the model calls "lookup" with {"q": "same"} as "a2"
    And the model calls "lookup" with {"q": "other"} as "b1"
    And the model calls "lookup" with {"q": "same"} as "a3"
    And the model calls "lookup" with {"q": "same"} as "a4"
    And the model answers "done"
    When the kernel runs
    Then 5 tool calls ran
    And the run ends with subtype "success"

  @DOOM-007 @dim:breaker=other_tool @dim:calls_per_response=1
  Scenario: Another tool with the same arguments between identical calls breaks the run
    Given the tools:
      | name   | kind        | concurrency |
      | lookup | data_source | safe        |
      | search | data_source | safe        |
    And the doom-loop threshold is 3
    And the model calls "lookup" with {"q": "same"} as "a1"
    And the model calls "lookup" with {"q": "same"} as "a2"
    And the model calls "search" with {"q": "same"} as "s1"
    And the model calls "lookup" with {"q": "same"} as "a3"
    And the model calls "lookup" with {"q": "same"} as "a4"
    And the model answers "done"
    When the kernel runs
    Then 5 tool calls ran
    And the run ends with subtype "success"

  @DOOM-008 @dim:kinds=interactive_only
  Scenario: Repeating the same interactive call never fires the detector
    Given a tool "ask" of kind "interactive"
    And the doom-loop threshold is 3
    And the model calls "ask" with {"question": "same?"} 4 times
    And the model answers "done"
    When the kernel runs
    Then 4 tool calls ran
    And the run ends with subtype "success"

  @DOOM-008 @dim:kinds=resource_only
  Scenario: Repeated resource calls are compared like data-source calls
    Given a tool "write" of kind "resource"
    And the doom-loop threshold is 3
    And the model calls "write" with {"path": "a.txt"} 5 times
    And the model answers "final answer"
    When the kernel runs
    Then the run ends with a subtype other than "success"

  # More identical calls are scripted than the threshold: the checks hold whichever turn fires.
  @DOOM-009
  Scenario: A fired detector takes the limit-reached path and reports the adapter's doom-loop subtype
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the doom-loop threshold is 3
    And the model calls "lookup" with {"q": "same"} 6 times
    And the model answers "nobody should ask for this"
    When the kernel runs
    Then 3 identical calls ran in a row
    And the session took the limit-reached path after its last turn that ran tools
    And the run ends with the adapter's doom-loop subtype

  @DOOM-010
  Scenario: A fired detector ends the session with a status, not an exception
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the doom-loop threshold is 3
    And the model calls "lookup" with {"q": "same"} 3 times
    And the model answers "final answer"
    When the kernel runs
    Then 3 identical calls ran in a row
    And the kernel did not raise
    And the run reports an outcome

  @LOOP-017 @dim:limit=doom_loop
  Scenario: session-end is dispatched once after the doom-loop final turn
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the doom-loop threshold is 3
    And the model calls "lookup" with {"q": "same"} 3 times
    And the model answers "final answer"
    When the kernel runs
    Then "session-end" was dispatched 1 time
    And the hook points of model call 4 include, in order:
      | context-assemble    |
      | post-model-response |
      | session-end         |

  # Several calls in one response (issue 21): the window counts calls, not turns.
  @DOOM-004 @dim:calls_per_response=several @dim:threshold=3 @dim:identical_calls=threshold
  Scenario: Identical calls in one response count one by one towards the threshold
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the doom-loop threshold is 3
    And the model script:
      """
      [{"tool_calls": [{"id": "k1", "name": "lookup", "args": {"q": "same"}},
                       {"id": "k2", "name": "lookup", "args": {"q": "same"}}]},
       {"tool_calls": [{"id": "k3", "name": "lookup", "args": {"q": "same"}}]},
       {"text": "final answer"}]
      """
    When the kernel runs
    Then 3 tool calls ran
    And 3 identical calls ran in a row
    And the run ends with a subtype other than "success"

  @DOOM-007 @dim:calls_per_response=several @dim:breaker=other_args
  Scenario: A different call inside a response breaks the run of identical calls
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the doom-loop threshold is 3
    And the model script:
      """
      [{"tool_calls": [{"id": "a1", "name": "lookup", "args": {"q": "same"}},
                       {"id": "a2", "name": "lookup", "args": {"q": "same"}}]},
       {"tool_calls": [{"id": "b1", "name": "lookup", "args": {"q": "other"}},
                       {"id": "a3", "name": "lookup", "args": {"q": "same"}}]},
       {"tool_calls": [{"id": "a4", "name": "lookup", "args": {"q": "same"}}]},
       {"text": "done"}]
      """
    When the kernel runs
    Then 5 tool calls ran
    And the run ends with subtype "success"

  # The window holds the most recent resource/data-source calls only: interactive calls between
  # identical ones are not in it, so they do not break the run (003, "Doom-loop detection").
  @DOOM-008 @dim:kinds=data_source_between_interactive @dim:calls_per_response=1
  Scenario: Identical data-source calls with interactive calls between them fire the detector
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And a tool "ask" of kind "interactive"
    And the doom-loop threshold is 3
    And the model calls "lookup" with {"q": "same"} as "a1"
    And the model calls "ask" with {"question": "next?"} as "q1"
    And the model calls "lookup" with {"q": "same"} as "a2"
    And the model calls "ask" with {"question": "and then?"} as "q2"
    And the model calls "lookup" with {"q": "same"} as "a3"
    And the model answers "final answer"
    When the kernel runs
    Then 5 tool calls ran
    And the run ends with a subtype other than "success"

  @DOOM-008 @dim:kinds=data_source_between_interactive @dim:calls_per_response=several
  Scenario: Identical data-source calls sharing each response with an interactive call fire the detector
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And a tool "ask" of kind "interactive"
    And the doom-loop threshold is 3
    And the model script:
      """
      [{"tool_calls": [{"id": "a1", "name": "lookup", "args": {"q": "same"}}, {"id": "q1", "name": "ask", "args": {"question": "1?"}}]},
       {"tool_calls": [{"id": "q2", "name": "ask", "args": {"question": "2?"}}, {"id": "a2", "name": "lookup", "args": {"q": "same"}}]},
       {"tool_calls": [{"id": "a3", "name": "lookup", "args": {"q": "same"}}, {"id": "q3", "name": "ask", "args": {"question": "3?"}}]},
       {"text": "final answer"}]
      """
    When the kernel runs
    Then 6 tool calls ran
    And the run ends with a subtype other than "success"

  # Whatever the identical calls returned (issue 21): failing calls count like the others.
  @DOOM-004 @dim:threshold=3 @dim:identical_calls=threshold @dim:call_results=failed
  Scenario: Identical calls that fail count towards the threshold
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the doom-loop threshold is 3
    And the call "k1" fails with "not found"
    And the call "k2" fails with "not found"
    And the call "k3" fails with "not found"
    And the model calls "lookup" with {"q": "same"} as "k1"
    And the model calls "lookup" with {"q": "same"} as "k2"
    And the model calls "lookup" with {"q": "same"} as "k3"
    And the model answers "final answer"
    When the kernel runs
    Then 3 tool calls ran
    And the run ends with a subtype other than "success"

  # window_size only bounds what is kept: with a window wider than the threshold the detector
  # still fires at the threshold-th identical call.
  @DOOM-004 @dim:threshold=3 @dim:identical_calls=threshold @dim:window=wider_than_threshold
  Scenario: A window wider than the threshold still fires at the threshold-th identical call
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the doom-loop threshold is 3
    And the doom-loop window_size is 6
    And the model calls "lookup" with {"q": "same"} 3 times
    And the model answers "final answer"
    When the kernel runs
    Then 3 tool calls ran
    And the run ends with a subtype other than "success"

  # Found by mutation testing (docs/selftest.md, "Mutation testing by machine"): a detector that
  # refused a threshold of 1 survived, as the threshold was tried at 3 and 5 only. The configured
  # threshold below the default range.
  @DOOM-004 @dim:threshold=1 @dim:threshold=2
  Scenario Outline: With threshold <t>, below the default range, the detector fires at the <t>-th identical call
    Given a tool "lookup" of kind "data_source" with concurrency safe
    And the doom-loop threshold is <t>
    And the model calls "lookup" with {"q": "same"} <t> times
    And the model answers "final answer"
    When the kernel runs
    Then <t> tool calls ran
    And <t> identical calls ran in a row
    And the run ends with a subtype other than "success"

    Examples:
      | t |
      | 1 |
      | 2 |
