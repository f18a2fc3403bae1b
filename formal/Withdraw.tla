------------------------------ MODULE Withdraw ------------------------------
(***************************************************************************)
(* Withdrawal on drop, racing the take, in one Ferry shard.                *)
(*                                                                         *)
(* With withdraw_on_drop(true), a caller on another thread may drop its    *)
(* submit future at any moment before it is answered. Dropping does no     *)
(* bookkeeping: it only makes the caller's absence visible to the shard    *)
(* (the reply channel's receiver is closed) and tries to push a "withdraw" *)
(* notice for the input's key into the shard's intake. The notice is best  *)
(* effort: it may be lost (the intake is full).                            *)
(*                                                                         *)
(* The shard is one thread, so each of its steps is atomic, and it alone   *)
(* decides every input's fate:                                             *)
(*   - Take: from the front of a lane that is not busy, while a slot is    *)
(*     free, in one step: every input met whose caller is gone is          *)
(*     withdrawn, the others go into the batch (sent), up to BatchMax.     *)
(*   - HandleNotice: take the oldest notice; every input of that key's     *)
(*     lane whose caller is gone is withdrawn.                             *)
(*   - Expire: an input still waiting (never one in a batch) may be        *)
(*     answered Expired at any moment. Time is left out: this covers every *)
(*     max_queue_time, and no expiry at all.                               *)
(*   - Complete: a batch in flight is answered (outputs or an error); an   *)
(*     answer to a gone caller is discarded but still counts as answered.  *)
(* A caller that drops after its input was taken changes nothing.          *)
(*                                                                         *)
(* Submit is one step: the input is admitted into its key's lane, or       *)
(* refused Full when WaitingMax inputs wait on the shard already (the      *)
(* intake on the way in is PerKey.tla's business). Every input weighs 1.   *)
(*                                                                         *)
(* Flaw = "TwoStep" switches on the design that must fail: the caller      *)
(* withdraws its own input when it drops (takes it out of the lane and     *)
(* counts it withdrawn), and the shard takes a batch in two steps, first   *)
(* choosing the inputs, then sending them. A drop between the two lands on *)
(* an input already chosen: it is counted withdrawn and sent anyway.       *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS
    Inputs,      \* one input per caller
    Keys,        \* the keys a caller may pick (naturals), all on this shard
    BatchMax,    \* max_batch_size
    Slots,       \* max_in_flight_batches
    WaitingMax,  \* max_waiting: waiting inputs on the shard
    NoticeMax,   \* room for withdraw notices in the shard's intake
    Scan,        \* how far into a lane a notice looks (WITHDRAW_SCAN)
    Flaw         \* "None" (the design as built) or "TwoStep"

ASSUME
    /\ Inputs # {} /\ IsFiniteSet(Inputs)
    /\ Keys # {} /\ IsFiniteSet(Keys) /\ Keys \subseteq Nat
    /\ BatchMax \in Nat \ {0}
    /\ Slots \in Nat \ {0}
    /\ WaitingMax \in Nat \ {0}
    /\ NoticeMax \in Nat \ {0}
    /\ Scan \in Nat \ {0}
    /\ Flaw \in {"None", "TwoStep"}

NoKey == -1                  \* key of an input not submitted yet

(* An input's status:                                                      *)
(*   idle       its caller has not called submit                           *)
(*   waiting    admitted: in its key's lane                                *)
(*   chosen     Flaw = "TwoStep" only: picked for a batch, not sent yet    *)
(*   sent       in a batch in flight                                       *)
(*   ok/failed  answered with its output / with its batch's error          *)
(*   full       refused at submit (Refused::Full), input handed back       *)
(*   expired    answered Expired, never sent, input handed back            *)
(*   withdrawn  removed from its lane, never sent                          *)
Final    == {"ok", "failed", "full", "expired", "withdrawn"}
Pending  == {"waiting", "chosen", "sent"}
Statuses == {"idle"} \cup Pending \cup Final

VARIABLES
    status,      \* status[i], as above
    key,         \* key[i], picked by the caller at submit
    gone,        \* gone[i]: caller i dropped its future (receiver closed)
    lane,        \* lane[k]: key k's waiting inputs, in admission order
    busy,        \* busy[k]: key k has a batch in flight
    flight,      \* batches in flight, each [key, ins]
    chosen,      \* Flaw = "TwoStep" only: chosen[k], the batch picked, not sent
    notices,     \* withdraw notices in the shard's intake (keys), oldest first
    \* The shard's counters (Stats).
    submitted, answered, refused, expired, withdrawn,
    \* History, for the properties only; the implementation keeps none of it.
    sends,       \* sends[i]: how many times i went into a batch
    fates,       \* fates[i]: every fate i was given, of "sent", "withdrawn",
                 \* "expired", "refused"
    sentGone,    \* sentGone[i]: i was sent while its caller was gone
    roomLeft     \* roomLeft[i]: i was refused Full while fewer than
                 \* WaitingMax inputs were in the lanes

counters == <<submitted, answered, refused, expired, withdrawn>>
history  == <<sends, fates, sentGone, roomLeft>>
vars     == <<status, key, gone, lane, busy, flight, chosen, notices,
              counters, history>>

-----------------------------------------------------------------------------
(* Helpers *)

Min(a, b) == IF a <= b THEN a ELSE b
Range(q) == {q[j] : j \in DOMAIN q}

Live(i) == ~gone[i]
Without(q, i) == SelectSeq(q, LAMBDA j : j # i)

WaitingCount == Cardinality({i \in Inputs : status[i] = "waiting"})
InLanes == Cardinality(UNION {Range(lane[k]) : k \in Keys})
ChosenKeys == {k \in Keys : chosen[k] # <<>>}
SlotsUsed == Cardinality(flight) + Cardinality(ChosenKeys)

\* The shard withdraws the inputs in out (each still in a lane; the caller
\* of this operator takes them out of it).
ShardWithdraws(out) ==
    /\ status' = [i \in Inputs |-> IF i \in out THEN "withdrawn" ELSE status[i]]
    /\ withdrawn' = withdrawn + Cardinality(out)
    /\ fates' = [i \in Inputs |-> IF i \in out THEN fates[i] \cup {"withdrawn"} ELSE fates[i]]

\* The batch ins of key k goes in flight: its inputs are sent.
SendBatch(k, ins) ==
    /\ flight' = flight \cup {[key |-> k, ins |-> ins]}
    /\ sends' = [i \in Inputs |-> IF i \in Range(ins) THEN sends[i] + 1 ELSE sends[i]]
    /\ sentGone' = [i \in Inputs |-> sentGone[i] \/ (i \in Range(ins) /\ gone[i])]

-----------------------------------------------------------------------------
(* Initial state *)

Init ==
    /\ status = [i \in Inputs |-> "idle"]
    /\ key = [i \in Inputs |-> NoKey]
    /\ gone = [i \in Inputs |-> FALSE]
    /\ lane = [k \in Keys |-> <<>>]
    /\ busy = [k \in Keys |-> FALSE]
    /\ flight = {}
    /\ chosen = [k \in Keys |-> <<>>]
    /\ notices = <<>>
    /\ submitted = 0 /\ answered = 0 /\ refused = 0
    /\ expired = 0 /\ withdrawn = 0
    /\ sends = [i \in Inputs |-> 0]
    /\ fates = [i \in Inputs |-> {}]
    /\ sentGone = [i \in Inputs |-> FALSE]
    /\ roomLeft = [i \in Inputs |-> FALSE]

-----------------------------------------------------------------------------
(* Callers *)

\* submit: admitted at the back of its key's lane, or refused Full past
\* WaitingMax. Only inputs still in a lane count against the bound, so a
\* withdrawn or expired input gives its room back.
Submit(i, k) ==
    /\ status[i] = "idle"
    /\ key' = [key EXCEPT ![i] = k]
    /\ submitted' = submitted + 1
    /\ IF WaitingCount < WaitingMax
         THEN /\ lane' = [lane EXCEPT ![k] = Append(@, i)]
              /\ status' = [status EXCEPT ![i] = "waiting"]
              /\ UNCHANGED <<refused, fates, roomLeft>>
         ELSE /\ status' = [status EXCEPT ![i] = "full"]
              /\ refused' = refused + 1
              /\ fates' = [fates EXCEPT ![i] = @ \cup {"refused"}]
              /\ roomLeft' = [roomLeft EXCEPT ![i] = InLanes < WaitingMax]
              /\ UNCHANGED lane
    /\ UNCHANGED <<gone, busy, flight, chosen, notices, answered, expired,
                   withdrawn, sends, sentGone>>

\* The caller drops its future before it is answered.
\* As built: the receiver is closed (gone) and a notice is pushed, best
\* effort: with no room, or for any other reason, it is lost. The caller
\* touches neither the lane nor a counter.
\* TwoStep: the caller withdraws its input itself when it believes it was
\* not sent yet (its input is waiting or chosen: the shard has not told it
\* otherwise): it takes the input out of the lane and counts it withdrawn.
Drop(i) ==
    /\ status[i] \in Pending
    /\ ~gone[i]
    /\ gone' = [gone EXCEPT ![i] = TRUE]
    /\ IF Flaw = "None"
         THEN /\ \/ /\ Len(notices) < NoticeMax
                    /\ notices' = Append(notices, key[i])
                 \/ UNCHANGED notices
              /\ UNCHANGED <<status, lane, withdrawn, fates>>
         ELSE /\ IF status[i] \in {"waiting", "chosen"}
                   THEN /\ lane' = [lane EXCEPT ![key[i]] = Without(@, i)]
                        /\ status' = [status EXCEPT ![i] = "withdrawn"]
                        /\ withdrawn' = withdrawn + 1
                        /\ fates' = [fates EXCEPT ![i] = @ \cup {"withdrawn"}]
                   ELSE UNCHANGED <<lane, status, withdrawn, fates>>
              /\ UNCHANGED notices
    /\ UNCHANGED <<key, busy, flight, chosen, submitted, answered, refused,
                   expired, sends, sentGone, roomLeft>>

-----------------------------------------------------------------------------
(* The shard: one thread, so every step below is atomic *)

\* As built. Take the front of key k's lane, up to BatchMax inputs, and
\* in the same step withdraw those whose caller is gone: the others are the
\* batch, sent. Inputs behind the front stay, gone or not. If every input
\* taken was withdrawn there is no batch and the lane is released at once.
Take(k) ==
    /\ Flaw = "None"
    /\ lane[k] # <<>>
    /\ ~busy[k]
    /\ SlotsUsed < Slots
    /\ LET q     == lane[k]
           p     == Min(BatchMax, Len(q))
           front == SubSeq(q, 1, p)
           batch == SelectSeq(front, Live)
           out   == Range(front) \ Range(batch)
       IN  /\ lane' = [lane EXCEPT ![k] = SubSeq(q, p + 1, Len(q))]
           /\ IF batch = <<>>
                THEN /\ ShardWithdraws(out)
                     /\ UNCHANGED <<busy, flight, sends, sentGone>>
                ELSE /\ status' = [i \in Inputs |->
                                     IF i \in out THEN "withdrawn"
                                     ELSE IF i \in Range(batch) THEN "sent"
                                     ELSE status[i]]
                     /\ withdrawn' = withdrawn + Cardinality(out)
                     /\ fates' = [i \in Inputs |->
                                    IF i \in out THEN fates[i] \cup {"withdrawn"}
                                    ELSE IF i \in Range(batch) THEN fates[i] \cup {"sent"}
                                    ELSE fates[i]]
                     /\ busy' = [busy EXCEPT ![k] = TRUE]
                     /\ SendBatch(k, batch)
    /\ UNCHANGED <<key, gone, chosen, notices, submitted, answered, refused,
                   expired, roomLeft>>

\* TwoStep, first half: choose the batch from the front of the lane and mark
\* the lane busy; the callers are not told.
Choose(k) ==
    /\ Flaw = "TwoStep"
    /\ lane[k] # <<>>
    /\ ~busy[k]
    /\ SlotsUsed < Slots
    /\ LET n == Min(BatchMax, Len(lane[k]))
           batch == SubSeq(lane[k], 1, n)
       IN  /\ chosen' = [chosen EXCEPT ![k] = batch]
           /\ lane' = [lane EXCEPT ![k] = SubSeq(@, n + 1, Len(@))]
           /\ status' = [i \in Inputs |-> IF i \in Range(batch) THEN "chosen" ELSE status[i]]
    /\ busy' = [busy EXCEPT ![k] = TRUE]
    /\ UNCHANGED <<key, gone, flight, notices, counters, history>>

\* TwoStep, second half: send what was chosen.
Send(k) ==
    /\ chosen[k] # <<>>
    /\ chosen' = [chosen EXCEPT ![k] = <<>>]
    /\ status' = [i \in Inputs |-> IF i \in Range(chosen[k]) THEN "sent" ELSE status[i]]
    /\ fates' = [i \in Inputs |->
                   IF i \in Range(chosen[k]) THEN fates[i] \cup {"sent"} ELSE fates[i]]
    /\ SendBatch(k, chosen[k])
    /\ UNCHANGED <<key, gone, lane, busy, notices, counters, roomLeft>>

\* As built: handle the oldest withdraw notice. Among the first Scan inputs
\* of its key's lane, every one whose caller is gone is withdrawn; one
\* further back is left for the take to find. Inputs in a batch are not in
\* the lane, so they are not touched.
HandleNotice ==
    /\ notices # <<>>
    /\ LET k     == Head(notices)
           q     == lane[k]
           front == SubSeq(q, 1, Min(Scan, Len(q)))
           out   == {i \in Range(front) : gone[i]}
       IN  /\ lane' = [lane EXCEPT ![k] =
                         SelectSeq(front, Live) \o SubSeq(q, Len(front) + 1, Len(q))]
           /\ ShardWithdraws(out)
    /\ notices' = Tail(notices)
    /\ UNCHANGED <<key, gone, busy, flight, chosen, submitted, answered,
                   refused, expired, sends, sentGone, roomLeft>>

\* max_queue_time: an input still in its lane is answered Expired. One in a
\* batch (or chosen for one) is not in a lane, so it is never expired.
Expire(i) ==
    /\ status[i] = "waiting"
    /\ lane' = [lane EXCEPT ![key[i]] = Without(@, i)]
    /\ status' = [status EXCEPT ![i] = "expired"]
    /\ expired' = expired + 1
    /\ fates' = [fates EXCEPT ![i] = @ \cup {"expired"}]
    /\ UNCHANGED <<key, gone, busy, flight, chosen, notices, submitted,
                   answered, refused, withdrawn, sends, sentGone, roomLeft>>

\* A batch completes, with its outputs or with an error: each of its callers
\* is answered (discarded if gone), the slot is freed, the lane released.
Complete(b, outcome) ==
    /\ b \in flight
    /\ flight' = flight \ {b}
    /\ busy' = [busy EXCEPT ![b.key] = FALSE]
    /\ status' = [i \in Inputs |-> IF i \in Range(b.ins) THEN outcome ELSE status[i]]
    /\ answered' = answered + Len(b.ins)
    /\ UNCHANGED <<key, gone, lane, chosen, notices, submitted, refused,
                   expired, withdrawn, history>>

ShardStep ==
    \/ \E k \in Keys : Take(k) \/ Choose(k) \/ Send(k)
    \/ HandleNotice
    \/ \E b \in flight, outcome \in {"ok", "failed"} : Complete(b, outcome)

\* At rest: every caller that submitted has its fate and no notice is left.
\* Nothing has to happen any more; this is not a deadlock.
Done ==
    /\ \A i \in Inputs : status[i] \notin Pending
    /\ notices = <<>>
    /\ UNCHANGED vars

Next ==
    \/ \E i \in Inputs : Drop(i) \/ \E k \in Keys : Submit(i, k)
    \/ ShardStep
    \/ \E i \in Inputs : Expire(i)
    \/ Done

\* The shard keeps running and batch functions return. Whether callers
\* submit or drop, and when, is left free; so is expiry, since
\* max_queue_time is off unless configured: every input must reach its fate
\* without it.
Spec == Init /\ [][Next]_vars /\ WF_vars(ShardStep)

-----------------------------------------------------------------------------
(* Properties *)

InFlightInputs == {i \in Inputs : status[i] \in Pending}

\* An input goes into a batch at most once.
TakenOnce ==
    \A i \in Inputs : sends[i] <= 1

\* A withdrawn input is never sent, before or after it was withdrawn.
WithdrawnNeverSent ==
    \A i \in Inputs : "withdrawn" \in fates[i] => "sent" \notin fates[i]

\* Only a caller that dropped its future loses its input to withdrawal.
WithdrawnOnlyIfGone ==
    \A i \in Inputs : status[i] = "withdrawn" => gone[i]

\* An expired input is never sent.
ExpiredNeverSent ==
    \A i \in Inputs : "expired" \in fates[i] => "sent" \notin fates[i]

\* No input is sent whose caller was already gone when the shard sent it.
GoneCallerNotSent ==
    \A i \in Inputs : ~sentGone[i]

\* Stats, always: every submitted input is answered, refused, expired or
\* withdrawn, or still waiting or in flight ...
Accounting ==
    submitted = answered + refused + expired + withdrawn + Cardinality(InFlightInputs)

\* ... so at rest: submitted = answered + refused + expired + withdrawn.
AccountingAtRest ==
    InFlightInputs = {} => submitted = answered + refused + expired + withdrawn

\* G1: withdrawal does not open a second batch for a key.
OneInFlightPerKey ==
    \A b1, b2 \in flight : b1.key = b2.key => b1 = b2

\* G6, and withdrawal's part in it: an input withdrawn or expired no longer
\* counts against the bound, so a submit is refused Full only while the
\* lanes really hold WaitingMax inputs.
RefusedOnlyWhenFull ==
    \A i \in Inputs : ~roomLeft[i]

\* G6: the bounds.
BoundsHold ==
    /\ WaitingCount <= WaitingMax
    /\ SlotsUsed <= Slots
    /\ \A b \in flight : Len(b.ins) \in 1 .. BatchMax
    /\ Len(notices) <= NoticeMax

\* Every caller that submits eventually has its fate: answered, refused,
\* expired or withdrawn. (Each caller submits once and fates are final, so
\* "eventually, from then on, none is pending" says that.)
EveryInputSettles ==
    <>[](\A i \in Inputs : status[i] \notin Pending)

-----------------------------------------------------------------------------
(* Bookkeeping of the design as built, checked by Withdraw.cfg only        *)

TypeOK ==
    /\ status \in [Inputs -> Statuses]
    /\ key \in [Inputs -> Keys \cup {NoKey}]
    /\ gone \in [Inputs -> BOOLEAN]
    /\ lane \in [Keys -> Seq(Inputs)]
    /\ busy \in [Keys -> BOOLEAN]
    /\ \A b \in flight : b.key \in Keys /\ b.ins \in Seq(Inputs)
    /\ chosen \in [Keys -> Seq(Inputs)]
    /\ notices \in Seq(Keys)
    /\ sends \in [Inputs -> 0 .. 2]
    /\ fates \in [Inputs -> SUBSET {"sent", "withdrawn", "expired", "refused"}]
    /\ sentGone \in [Inputs -> BOOLEAN]
    /\ roomLeft \in [Inputs -> BOOLEAN]

\* Every pending input is in exactly one place, the one its status names,
\* and a caller's gone flag only ever matters while its input is pending.
InOnePlace ==
    /\ \A k \in Keys :
         /\ Len(lane[k]) = Cardinality(Range(lane[k]))
         /\ Range(lane[k]) = {i \in Inputs : status[i] = "waiting" /\ key[i] = k}
         /\ chosen[k] = <<>>
    /\ \A b \in flight : Len(b.ins) = Cardinality(Range(b.ins))
    /\ \A b1, b2 \in flight : b1 # b2 => Range(b1.ins) \cap Range(b2.ins) = {}
    /\ {i \in Inputs : status[i] = "sent"} = UNION {Range(b.ins) : b \in flight}
    /\ \A k \in Keys : busy[k] = (\E b \in flight : b.key = k)

\* Each counter counts exactly the inputs with that fate.
CountersMatch ==
    /\ submitted = Cardinality({i \in Inputs : status[i] # "idle"})
    /\ answered = Cardinality({i \in Inputs : status[i] \in {"ok", "failed"}})
    /\ refused = Cardinality({i \in Inputs : status[i] = "full"})
    /\ expired = Cardinality({i \in Inputs : status[i] = "expired"})
    /\ withdrawn = Cardinality({i \in Inputs : status[i] = "withdrawn"})

=============================================================================
