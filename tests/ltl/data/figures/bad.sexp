(define broken-agent
  (:states
    (Thought (:text "Thought:"))
    (Act (:txt "Action:"))
    (Answer (:text "Answer:") (:flags :env-inptu))
  )
  (:behavior
    (nxet Thought Answer)
    (untl Thougth Answer))
)
