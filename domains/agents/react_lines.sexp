; ReAct with content languages: every thought and the answer are one line, the Action Input
; follows the chosen tool's input language (the calculator's arithmetic grammar, a search
; query), and the embedded model decodes under those grammars. The few-shot examples
; (prompts/react_examples.txt) are written this way, so they pass check-trace unchanged.
(define react-agent
  (:states
    (Thought (:text "Thought:") (:language line))
    (Action (:text "Action:") (:choices :tools))
    (Action-Input (:text "Action Input:"))
    (Observation (:text "Observation:") (:flags :env-input))
    (Final-Thought (:text "Final Thought:") (:language line))
    (Answer (:text "Answer:") (:language line))
  )
  (:behavior
    (next
      (until
        (next Thought Action Action-Input Observation)
        Final-Thought)
      Answer)
  )
)
