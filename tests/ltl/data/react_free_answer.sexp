; ReAct with a free-text answer (the runtime tests of hostile display need one): the
; shipped domains/agents/react.sexp grounds its answer in the last observation instead.
(define react-agent
  (:states
    (Thought (:text "Thought:"))
    (Action (:text "Action:") (:choices :tools))
    (Action-Input (:text "Action Input:"))
    (Observation (:text "Observation:") (:flags :env-input))
    (Final-Thought (:text "Final Thought:"))
    (Answer (:text "Answer:"))
  )
  (:behavior
    (next
      (until
        (next Thought Action Action-Input Observation)
        Final-Thought)
      Answer)
  )
)
