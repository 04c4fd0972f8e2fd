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
state-withdrawn = withdrawn by the agent: nothing was done
state-approved = approved: the agent runs it itself

## Money: $usd and $usd_max come as the language writes the number (its decimal mark and
## grouping: "1,234.50"); each locale puts the currency sign where its language does: "$1,234.50".

## The card. Values ($label, $target, $value, $text …) are shown exactly as asked.

card-urgent = URGENT
card-title = { $label } ({ $class })
card-target = Target: { $target }
card-field = { $name }: { $value }
card-cost = Cost: ${ $usd }
card-attachment = Attachment: { $name }, { $media_type }, { $size }, SHA-256 { $sha }
card-record = Record: { $id }
card-origin = From: { $origin }
card-agent-runs = The agent will run this itself if you approve. consentd runs nothing.
card-deadline = Answer by { $when }
card-text = Text:
card-text-parts = The text is in the { $parts } { $parts ->
        [one] message
       *[other] messages
    } above, SHA-256 { $sha }.
card-outcome = Outcome: { $state }
card-outcome-by = Outcome: { $state }. Decided by { $name }.
card-result = Result: { $result }
card-reason = Reason: { $reason }

## A target, or a one-word field value, that may not be what it seems (UTS #39). Script and code
## point names are Unicode's own, in every language; $position counts characters from 1.

card-warning-scripts = ⚠ Mixed or unusual letters in this target. Scripts: { $scripts }. Not ASCII: { $chars }
card-warning-field-scripts = ⚠ Mixed or unusual letters in this value. Scripts: { $scripts }. Not ASCII: { $chars }
card-warning-lookalike = ⚠ Looks like { $known }, a target you approved, but differs: character { $position } is { $ours } here, { $theirs } there
card-warning-end = the end

## Sizes: $whole and $tenth are the two sides of one decimal number.

size-bytes = { $n } { $n ->
        [one] byte
       *[other] bytes
    }
size-kib = { $whole }.{ $tenth } KiB
size-mib = { $whole }.{ $tenth } MiB
size-gib = { $whole }.{ $tenth } GiB

## Times in the owner's zone: $hm is "14:35"; the date is shown when it is not today.

when-today = { $hm }
when-date = { $hm } on { $day } { $month ->
        [1] January
        [2] February
        [3] March
        [4] April
        [5] May
        [6] June
        [7] July
        [8] August
        [9] September
        [10] October
        [11] November
       *[12] December
    }

## Buttons

button-yes = Yes
button-no = No
button-no-say-why = No, and say why…
button-resume = Resume
button-grant = Grant
button-decline = Decline
button-decline-say-why = Decline, and say why…
button-stop = Stop
button-on = On
button-off = Off

## Notices

silenced = No more “{ $label }” cards until { $until }: you said no { $count ->
        [one] once
       *[other] { $count } times in a row
    }. Press Resume to get them again now.
press-rejected = A button press was not accepted, and nothing was done. Pressed by: { $who }. Why: { $why ->
        [not_owner] it did not come from you
        [wrong_chat] it came from outside this chat
        [bad_signature] the button's signature did not check out
        [not_open] the card was already answered or closed
        [expired] the card's time was up
        [card_altered] the card's message had been changed since it was sent: someone holding the bot's token may be editing its messages
       *[other] { $why }
    }.
altered = A message with your buttons was changed after consentd sent it: someone holding the bot's token may be editing its messages. Your press on it counted only because it takes something back (No, Stop or Off); nothing was run.
expired-at-claim = Your yes to “{ $label }” ({ $id }) came in time, but consentd stopped before it could run it, and by the time it was back the card's time was up. Nothing ran; if it is still wanted, it has to be asked again.
outcome-unknown = consentd restarted while “{ $label }” ({ $id }) was running. It may or may not have run, and it will not be run again by itself: please check what happened.
disk-full = The disk of consentd's state directory { $dir } is nearly full: { $free_mib } MiB free, under the { $floor_mib } MiB it keeps. New asks are refused until there is room; what is already running still ends and is recorded. Please free some space.
reachable-again = { $minutes ->
        [0] consentd was cut off from you for less than a minute
        [one] consentd was cut off from you for { $minutes } minute
       *[other] consentd was cut off from you for { $minutes } minutes
    }: { $cause ->
        [conflict] another program was polling this bot's token
        [webhook] a webhook was set for this bot
        [blocked] the bot was blocked in this chat
        [network] Telegram could not be reached from consentd's machine
        [server_error] Telegram's servers were failing
       *[token_revoked] Telegram refused the bot's token
    }. It is back: asks made meanwhile waited, and their cards follow.
resumed = “{ $label }” cards can come again.
not-owner = Sorry, this bot answers only its owner.
not-accepted = Not accepted.
paired = Paired: this chat now gets consentd's cards. Send /help for the commands.
pairing-wrong-code = That pairing code is not right. Run “consentd pair” on the machine for a new one.
pairing-locked = Too many wrong codes: pairing is locked until { $until }.
help-title = Commands:
command-pending = the asks waiting for your answer
command-mandates = the open standing permissions, each with Stop
command-categories = the kinds of action, each with On or Off
command-quiet = quiet hours, like /quiet 23:00-08:00 or /quiet off
command-nightcards = how many cards may come at night, like /nightcards 2
command-summary = when the evening summary comes, like /summary 21:00
command-lang = the language: /lang en, /lang ru or /lang pt
command-anchor = the journal's latest anchor, in full
command-help = this list
command-start = /start CODE — pair this chat with consentd (the code comes from “consentd pair”)
pending-count = { $count ->
        [0] No asks are waiting.
        [one] { $count } ask is waiting:
       *[other] { $count } asks are waiting:
    }
pending-item = { $id } · { $label } · answer by { $until }
pending-item-waiting = { $id } · { $label } · not shown yet

## Mandates: standing permissions. $usd and $usd_max are dollars with two decimals (see Money).

mandate-title = Standing permission: { $label } ({ $class })
mandate-until = Until: { $when }
mandate-limits = At most ${ $usd } and { $actions } { $actions ->
        [one] action
       *[other] actions
    } a day
mandate-limits-actions = At most { $actions } { $actions ->
        [one] action
       *[other] actions
    } a day
mandate-any-use = Any use: every “{ $label }” action (this kind has no target)
mandate-reason = Reason: { $reason }
mandate-explain = Inside these terms, actions run without a card; you get a receipt with Stop for each.
mandate-usage = Today: { $actions } of { $max } { $max ->
        [one] action
       *[other] actions
    }, ${ $usd } of ${ $usd_max }
mandate-usage-actions = Today: { $actions } of { $max } { $max ->
        [one] action
       *[other] actions
    }
receipt-title = Done without a card, under standing permission { $id }:
mandates-count = { $count ->
        [0] No standing permissions are open.
        [one] { $count } standing permission is open:
       *[other] { $count } standing permissions are open:
    }
mandate-stopped = Stopped: “{ $label }” actions need your Yes again.
mandate-ended = Standing permission { $id } for “{ $label }” has ended.

## The owner's settings and commands.

usage-quiet = Usage: /quiet 23:00-08:00 or /quiet off
usage-nightcards = Usage: /nightcards N, with N from 0 to { $max }
usage-summary = Usage: /summary HH:MM, like /summary 21:00
usage-lang = Usage: /lang en, /lang ru or /lang pt
usage-no-argument = This command takes nothing after it. Send /help for the list.
quiet-set = Quiet hours: { $from }–{ $to }.
quiet-off = Quiet hours are off.
nightcards-set = { $count ->
        [0] No card comes during quiet hours; every card waits until morning.
        [one] At most { $count } card comes during quiet hours; later ones wait until morning.
       *[other] At most { $count } cards come during quiet hours; later ones wait until morning.
    }
summary-set = The evening summary comes at { $hm }.
lang-set = Language: English.
anchor = Journal anchor: { $anchor } (short: { $short })
anchor-empty = The journal is empty.
seal-key = Journal verification key, id { $id }: { $key } — keep it off the machine consentd runs on (here, a password manager, paper). `consentd journal verify FILE --key KEY` checks every seal with it; whoever has it can forge seals, so keep it like a password.
categories-title = Kinds of action:
category-item = { $label } ({ $class }): { $on ->
        [yes] on
       *[no] off
    }
category-switched = “{ $label }” is now { $on ->
        [yes] on
       *[no] off
    }.

## The evening summary.

summary-title = Summary of { $date }
summary-counts = Asked: { $asked }. Approved: { $granted }. Declined: { $declined }. Expired: { $expired }.
summary-runs = Done: { $executed }. Failed: { $failed }. Refused before a card: { $refused }.
summary-mandate = { $id } · { $label }: { $actions } { $actions ->
        [one] action
       *[other] actions
    }, ${ $usd }
summary-mandate-actions = { $id } · { $label }: { $actions } { $actions ->
        [one] action
       *[other] actions
    }
summary-anchor = Journal anchor: { $anchor } (short: { $short })

## The owner's chat: a No's reason, the settings as they are, a stray message, stale buttons.
## A toast ($label …) is at most 200 characters.

card-reply-invite = Reply to this message by { $when } to tell the agent why, or what to do instead.
decline-reason-sent = Sent to the agent with your No.
decline-reason-late = Too late for this card: the agent has already been told no, without a reason.
decline-reason-not-asked = This No reached the agent at once, without a reason. To send one with a No, press “No, and say why…” instead.
decline-reason-already = The agent already has your reason for this no.
decline-reason-hidden = Not sent: your reply holds { $char } at character { $position }, which does not show on screen. Please write it again without it.
decline-reason-not-nfc = Not sent: from character { $position } your reply is not in Unicode's usual composed form (NFC). Please type it rather than paste it.
text-not-an-answer = A message never answers a card: press Yes or No on it.
help-pointer = I only understand commands and buttons. Send /help for the list.
quiet-current = Quiet hours: { $from }–{ $to }. To change them: /quiet 23:00-08:00 or /quiet off
quiet-current-off = Quiet hours are off. To set them: /quiet 23:00-08:00
nightcards-current = { $count ->
        [0] No card comes during quiet hours.
        [one] At most { $count } card comes during quiet hours.
       *[other] At most { $count } cards come during quiet hours.
    } To change it: /nightcards N, with N from 0 to { $max }
stale-card-answered = This card was already answered.
stale-card-withdrawn = The agent withdrew this ask; nothing was done.
stale-card-expired = This card's time is up.
stale-origin = { $toast } (from { $origin })
stale-mandate-stopped = This standing permission was already stopped.
stale-mandate-ended = This standing permission has already ended.
stale-resumed = These cards were already resumed.
stale-silenced-again = These cards were silenced again later: press Resume on the newest notice.
stale-category = “{ $label }” is already { $on ->
        [yes] on
       *[no] off
    }.
category-cannot-run = “{ $label }” cannot be turned on: fix { $key } first (consentd check-config says what is wrong).

# A suggested standing permission: the owner keeps saying yes to the same thing.
suggest-title = You said yes to “{ $label }” { $approvals } { $approvals ->
        [one] time
       *[other] times
    } in the last 7 days.
suggest-would-cover = A standing permission with these terms would have covered them:
suggest-days = For { $days } { $days ->
        [one] day
       *[other] days
    }
suggest-explain = “Review terms” shows them on a standing-permission card. Nothing changes until you press Grant there; ignore this and it is not suggested again for 7 days.
suggest-card = Suggested by consentd after you said yes { $approvals } { $approvals ->
        [one] time
       *[other] times
    } in 7 days; the agent did not ask for it.
button-suggest = Review terms
stale-suggestion = This suggestion was already opened, or is over.
suggest-based-on = You approved up to { $busiest } a day; this allows { $allows }.
suggest-based-on-money = You approved up to ${ $usd_busiest } a day; this allows ${ $usd_allows }.
button-raise = Raise today
receipt-raise = That used up today's limit. “Raise today” lifts it, for the rest of today, to:
mandate-raised-today = Raised by you for today only; tomorrow it is as granted.
raise-done = “{ $label }”: raised for the rest of today. Tomorrow it is as granted.
stale-raise = This was already raised today, or can no longer be.

# Exact rules ("Always here"): a hook's gate card, /rules, the evening summary.
card-hook = Call: { $agent } · { $tool } · in { $cwd }
button-always = Always here
card-rule-saved = Saved as a rule: this exact call by this agent in this directory will pass without a card. /rules lists and removes rules.
button-remove = Remove
command-rules = saved exact rules (Always here), each with Remove
rules-count = { $count ->
        [0] No saved rules. A gate card from an agent's hook offers Always here to save one.
        [one] { $count } saved rule:
       *[other] { $count } saved rules:
    }
rule-item = { $agent } · { $tool } · in { $cwd }
    Saved { $saved }; { $uses ->
        [0] not used yet
        [one] used once
       *[other] used { $uses } times
    }. Rule { $id }, command SHA-256 { $sha }:
rule-removed = Removed: this call needs your Yes again.
stale-rule-removed = This rule was already removed.
stale-from-before-upgrade = This button was drawn before consentd was upgraded or its key was changed, and no longer answers. Ask again.
summary-rules = Passed by saved rules: { $count }.
summary-origins = Asked through labelled sockets: { $origins }.
silenced-session = For one session only: { $session }. Cards from other sessions still come.
