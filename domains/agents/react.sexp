; ReAct (Yao et al.), as in Figures 3 and 9 of the spec paper, plus two content constraints:
; Action must name one of the available tools, and the Answer is grounded: words copied from
; the last Observation (a number the calculator returned, a span of a page), so an answer the
; observations do not support is never written.
(define react-agent
  (:states
    (Thought (:text "Thought:") (:max-tokens 64))
    (Action (:text "Action:") (:choices :tools))
    (Action-Input (:text "Action Input:"))
    (Observation (:text "Observation:") (:flags :env-input))
    (Final-Thought (:text "Final Thought:") (:max-tokens 64))
    (Answer (:text "Answer:") (:language observed-span))
  )
  (:behavior
    (next
      (until
        (next Thought Action Action-Input Observation)
        Final-Thought)
      Answer)
  )
)
