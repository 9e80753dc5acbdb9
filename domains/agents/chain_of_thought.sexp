; Chain-of-thought (Figure 10 of the spec paper): think once, then answer.
(define chain-of-thought-agent
  (:states
    (Thought (:text "Let's think step by step. "))
    (Answer (:text "Answer:"))
  )
  (:behavior
    (next Thought Answer)
  )
)
