(define react-agent
  (:states
    (Thought (:text "Thought:"))
    (Action (:text "Action:"))
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
