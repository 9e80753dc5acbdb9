(define react-ablation-agent
  (:states
    (Thought (:text "Thought:"))
    (Observation (:text "Observation:")) (:flags :env-input))
    (Final-Thought (:text "Final Thought:"))
  )
  (:behavior
    (until
      (next Thought Observation)
      Final-Thought)
    )
  )
)
