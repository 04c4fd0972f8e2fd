# What the owner reads in the chat, in English. Every locale has every message with the same
# variables. Placeables are rendered without Unicode isolation marks (consentd refuses those).

class-external = external
class-spend = spend
class-destructive = destructive

state-pending = waiting for your answer
state-card_shown = waiting for your answer
state-granted = approved
state-declined = declined
state-expired = expired: nobody answered in time
state-refused = refused
state-running = running
state-executed = done
state-failed = failed
state-outcome_unknown = outcome unknown: it may or may not have run
