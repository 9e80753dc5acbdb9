; The ablated ReAct agent of Figure 4b of the spec paper: Action, Action Input and Answer are not
; states, so nothing forces them; the Observation is still filled by running the tool named in
; the Thought text. (The figure as printed closes the Observation state one parenthesis early
; and has stray closing parentheses; fllm reads it with warnings. This copy is balanced.)
(define react-ablation-agent
  (:states
    (Thought (:text "Thought:"))
    (Observation (:text "Observation:") (:flags :env-input))
    (Final-Thought (:text "Final Thought:"))
  )
  (:behavior
    (until
      (next Thought Observation)
      Final-Thought)
  )
  (:prompt "agent/react-agent.j2")
)
