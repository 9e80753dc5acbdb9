; A chat bot (Figure 12 of the spec paper): the bot and the user take turns for ever; the user's
; turns come from standard input, and end-of-input ends the conversation.
(define chat-bot-agent
  (:states
    (Chat-Bot (:text "Chat Bot:"))
    (User (:text "User:") (:flags :env-input))
  )
  (:behavior
    (always
      (next Chat-Bot User)
    )
  )
)
